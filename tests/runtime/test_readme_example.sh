#!/bin/bash
# The complete program of README.md's "As a library" (the C block that
# includes <ingot.h> and calls ingot_threads_create) compiles against
# runtime/ingot.h, links libingot and runs on the digits model: metadata
# printed, its bound output written.
# usage: test_readme_example.sh CC SOURCE BUILD INGOT WORK
set -eu
cc=$1 src=$2 build=$3 ingot=$4 work=$5
mkdir -p "$work"
awk '/^```c$/ {inblock=1; text=""; next}
     /^```$/ && inblock {inblock=0; if (text ~ /#include <ingot.h>/ && text ~ /ingot_threads_create/) {printf "%s", text; exit}; next}
     inblock {text = text $0 "\n"}' "$src/README.md" > "$work/app.c"
grep -q ingot_session_bind_output "$work/app.c" || { echo "FAIL: no example program found in README.md"; exit 1; }
"$cc" -std=c11 -Wall -Werror "$work/app.c" -I"$src/runtime" -L"$build/runtime" -lingot -o "$work/app"
"$ingot" compile "$src/models/digits/model.onnx" --input-shape input=1x1x8x8 -o "$work/digits.ingot" >/dev/null
LD_LIBRARY_PATH="$build/runtime" "$work/app" "$work/digits.ingot" > "$work/out.txt"
want=$(sha256sum "$src/models/digits/model.onnx" | cut -d' ' -f1)
grep -q "made from sha256 $want" "$work/out.txt" || { echo "FAIL: no source hash"; cat "$work/out.txt"; exit 1; }
grep -q "name: digits_mlp" "$work/out.txt" || { echo "FAIL: no name"; cat "$work/out.txt"; exit 1; }
grep -Eq "^y\[0\] = [0-9.e-]+$" "$work/out.txt" || { echo "FAIL: no output"; cat "$work/out.txt"; exit 1; }
grep -q "^y\[0\] = 0$" "$work/out.txt" && { echo "FAIL: the bound output was not written"; exit 1; }
echo "README example: ok"
