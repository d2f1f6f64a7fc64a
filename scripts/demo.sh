#!/usr/bin/env bash
# Command 1: install, build, then compile and run the default digits model on
# its held-out test set: accuracy beside the expected one, latency, inspect.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

DIGITS=models/digits
BUILD="${INGOT_BUILD_DIR#"$INGOT_ROOT"/}"   # relative when inside the repo (we run from its root)
BUNDLE="$BUILD/digits.ingot"
OUT="$BUILD/digits_out.npz"
M="$("$INGOT_PY" -c "import json; print(json.load(open('$DIGITS/expected.json'))['count'])")"

ingot_say "ingot compile $DIGITS/model.onnx -o $BUNDLE --input-shape input=${M}x1x8x8"
"$INGOT" compile "$DIGITS/model.onnx" -o "$BUNDLE" --input-shape "input=${M}x1x8x8"

ingot_say "ingot run $BUNDLE --input input=$DIGITS/test_x.npy --output $OUT --bench 20"
RUN_LOG="$("$INGOT" run "$BUNDLE" --input "input=$DIGITS/test_x.npy" --output "$OUT" --bench 20)"
echo "$RUN_LOG"

ingot_say "ingot inspect $BUNDLE"
"$INGOT" inspect "$BUNDLE"

ingot_say "result"
echo "model:    $DIGITS/model.onnx (MLP 64-64-10, batch of $M test images)"
status=0
"$INGOT_PY" scripts/accuracy.py "$OUT" "$DIGITS/test_y.npy" "$DIGITS/expected.json" || status=$?
echo "$RUN_LOG" | grep '^latency:' || true
exit "$status"
