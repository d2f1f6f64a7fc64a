#!/bin/sh
# `ingot` for tools that run ingot themselves (tests/conformance/run.py):
# `compile` also writes the printed CUDA C beside the bundle (--emit-c) and
# builds its kernel library (run_gpu_emu.py --build-kernels); `run` runs the
# bundle with --device cuda on the emulated GPU with that library. Anything
# else goes to ingot unchanged.
#   INGOT_EMU_REAL_INGOT  the ingot binary
#   INGOT_EMU_PYTHON      a Python with numpy (the project's venv)
#   INGOT_CUDA_DRIVER     the emulated driver (libingot_emu_cuda.so)
# e.g. run.py --ingot tests/gpu_emu/emu_ingot.sh --target cuda -arch=sm_90 ...
here=$(dirname "$0")
case "$1" in
  compile)
    out= prev=
    for a in "$@"; do
      [ "$prev" = -o ] && out=$a
      prev=$a
    done
    dir=$(dirname "${out:-.}")
    "$INGOT_EMU_REAL_INGOT" "$@" --emit-c "$dir/k.cu" || exit $?
    exec "$INGOT_EMU_PYTHON" "$here/run_gpu_emu.py" --build-kernels "$dir/k.cu" "$dir/k.so" ;;
  run)
    INGOT_EMU_KERNELS="$(dirname "$2")/k.so"
    export INGOT_EMU_KERNELS
    exec "$INGOT_EMU_REAL_INGOT" "$@" --device cuda ;;
esac
exec "$INGOT_EMU_REAL_INGOT" "$@"
