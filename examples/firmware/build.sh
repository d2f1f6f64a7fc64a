#!/usr/bin/env bash
# Builds and runs the firmware example on this machine (what its README
# shows, in one script; the tests run it):
#   build.sh INGOT WORK_DIR
# INGOT: the ingot binary; WORK_DIR: where the generated files and the
# program go. Uses $CC (default cc). Prints the class of an all-zero image.
set -euo pipefail
ingot=${1:?usage: build.sh INGOT WORK_DIR}
work=${2:?usage: build.sh INGOT WORK_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cc=${CC:-cc}
rm -rf "$work"
mkdir -p "$work"
"$ingot" compile "$root/models/digits/model.onnx" --input-shape input=1x1x8x8 --target c \
  --emit-firmware "$work/model"
"$cc" -std=c99 -O2 -I "$work/model" -o "$work/digits" "$here/main.c" \
  "$work/model/ingot_model.c" "$work/model/ingot_model_kernels.c" "$work/model/ingot_model_weights.c"
"$work/digits"
