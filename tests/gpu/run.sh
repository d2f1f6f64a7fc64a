#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one script (well under 5 minutes on
# a 16-core machine with an H100/H200-class GPU):
#
#   tests/gpu/run.sh [--ingot PATH] [--work DIR] [--python PY] [--skip-large]
#                    [--dry-run-cpu]
#   tests/gpu/run.sh --make-kit DIR
#
# --skip-large leaves out ResNet-50, BERT-base and the roofline probes;
# --dry-run-cpu is the script's own test on a machine without a GPU: the c
# target and --device cpu stand in for cuda (CTest gpu.script_dry_run).
#
# 1. Exits 77 (CTest's "skipped") with one line when `nvidia-smi -L` lists no
#    GPU.
# 2. Finds `ingot`: --ingot PATH (or $INGOT_BIN), else builds one into
#    $INGOT_GPU_BUILD (default build-gpu) with cmake directly, -j of the CPUs:
#    with the system's libraries where pkg-config finds them all, else with a
#    kit of Debian 12 packages unpacked under the work folder (no root, no
#    network: $INGOT_GPU_KIT, default build/gpu-kit; `--make-kit DIR` fills one
#    with `apt-get download` on a Debian 12 machine; INGOT_GPU_USE_KIT=1 takes
#    the kit even where the system has the libraries). LLVM is not in the kit:
#    a build without it uses the c target for the CPU variant.
# 3. Runs tests/gpu/gpu_check.py: the end-to-end models compiled with
#    `--target cuda -arch=sm_XX --target llvm` (or c), run with
#    `ingot run --device cuda` against ONNX Runtime's CPU outputs; latencies
#    of ResNet-50 and BERT-base; the fraction of peak memory bandwidth of a
#    large elementwise Add and of fp32 peak of a 4096^3 MatMul.
#
# Exit status: 0 all matched, 1 a mismatch or a failed step, 2 bad usage,
# 77 no NVIDIA GPU here. The Python it runs needs numpy, onnx and onnxruntime:
# --python, else $INGOT_PYTHON, else build/venv/bin/python, else python3.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
START=$(date +%s)
say() { printf '[%4ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }
die() { echo "tests/gpu/run.sh: $*" >&2; exit 1; }

# Debian 12 packages that the build needs beyond a C compiler, cmake and
# Python (runtime libraries with their -dev packages; protoc-c with its
# protobuf libraries). About 5 MB.
KIT_PACKAGES="pkgconf pkgconf-bin libpkgconf3 libzstd-dev libzstd1 protobuf-c-compiler libprotoc32
libprotobuf32 libprotobuf-c-dev libprotobuf-c1 libonnx-dev libjansson-dev libjansson4 libsodium-dev
libsodium23 libxgboost-dev libxgboost0 libdmlc0"

INGOT="${INGOT_BIN:-}"
DRY=0
KIT_LIB=""
WORK=""
PY=""
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ingot) INGOT="${2:?--ingot needs a path}"; shift 2 ;;
    --work) WORK="${2:?--work needs a folder}"; shift 2 ;;
    --python) PY="${2:?--python needs a program}"; shift 2 ;;
    --skip-large) EXTRA+=(--skip-large); shift ;;
    --dry-run-cpu) DRY=1; EXTRA+=(--dry-run-cpu); shift ;;
    --make-kit)
      DIR="${2:?--make-kit needs a folder}"
      mkdir -p "$DIR" && cd "$DIR" || exit 1
      # shellcheck disable=SC2086
      apt-get download $KIT_PACKAGES || die "apt-get download failed (a Debian 12 machine with its archive?)"
      echo "kit: $(ls ./*.deb | wc -l) packages in $DIR ($(du -sh . | cut -f1))"
      exit 0 ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "tests/gpu/run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# ---- 1. A GPU?
if [ "$DRY" = 1 ]; then
  say "dry run on the CPU (--dry-run-cpu): the script's own test, no GPU used"
elif ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "tests/gpu/run.sh: skipped: no NVIDIA GPU here (nvidia-smi not found)"
  exit 77
else
  GPUS="$(nvidia-smi -L 2>/dev/null | grep '^GPU ' || true)"
  if [ -z "$GPUS" ]; then
    echo "tests/gpu/run.sh: skipped: no NVIDIA GPU here (nvidia-smi -L lists none)"
    exit 77
  fi
  say "$(echo "$GPUS" | head -1)"
fi

BUILD="${INGOT_GPU_BUILD:-$ROOT/build-gpu}"
WORK="${WORK:-$BUILD/gpu-work}"
mkdir -p "$WORK" || die "cannot make $WORK"

# ---- 2. Python with numpy, onnx and onnxruntime.
has_py_deps() { "$1" -c 'import numpy, onnx, onnxruntime' >/dev/null 2>&1; }
if [ -z "$PY" ]; then
  for cand in "${INGOT_PYTHON:-}" "$ROOT/build/venv/bin/python" python3; do
    if [ -n "$cand" ] && has_py_deps "$cand"; then PY="$cand"; break; fi
  done
fi
[ -n "$PY" ] && has_py_deps "$PY" || die "no Python with numpy, onnx and onnxruntime (give --python)"

# ---- 3. ingot.
CPU_TARGET=llvm
if [ -z "$INGOT" ]; then
  JOBS="$(nproc 2>/dev/null || echo 4)"
  CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release "-DINGOT_PYTHON=$PY")
  if [ "${INGOT_GPU_USE_KIT:-0}" != 1 ] &&
     pkg-config --exists libzstd libprotobuf-c jansson libsodium 2>/dev/null &&
     command -v protoc-c >/dev/null 2>&1; then
    say "building with the system's libraries in $BUILD ($JOBS jobs)"
  else
    KIT="${INGOT_GPU_KIT:-$ROOT/build/gpu-kit}"
    ls "$KIT"/*.deb >/dev/null 2>&1 ||
      die "the build needs zstd, protobuf-c (protoc-c), onnx.proto, jansson, libsodium and xgboost: install them (scripts/setup.sh), or make a kit with 'tests/gpu/run.sh --make-kit DIR' on Debian 12 and point INGOT_GPU_KIT at it"
    K="$WORK/kit-root"
    rm -rf "$K" && mkdir -p "$K"
    for deb in "$KIT"/*.deb; do
      if command -v dpkg-deb >/dev/null 2>&1; then
        dpkg-deb -x "$deb" "$K" || die "cannot unpack $deb"
      else  # a .deb is an ar archive holding data.tar.*
        T="$(mktemp -d)"
        (cd "$T" && ar x "$deb" && tar -xf data.tar.* -C "$K") || die "cannot unpack $deb"
        rm -rf "$T"
      fi
    done
    LIB="$K/usr/lib/x86_64-linux-gnu"
    KIT_LIB="$LIB"
    SAVED_LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
    export LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PKG_CONFIG_LIBDIR="$LIB/pkgconfig:$K/usr/share/pkgconfig"
    export PKG_CONFIG_SYSROOT_DIR="$K"
    # The Debian .pc files name /usr: the sysroot maps them into the kit.
    CMAKE_ARGS+=("-DPKG_CONFIG_EXECUTABLE=$K/usr/bin/pkgconf" "-DPROTOC_C_EXECUTABLE=$K/usr/bin/protoc-c"
                 "-DINGOT_ONNX_PROTO=$K/usr/include/onnx/onnx.proto" "-DCMAKE_PREFIX_PATH=$K/usr"
                 "-DCMAKE_LIBRARY_PATH=$LIB" "-DCMAKE_INCLUDE_PATH=$K/usr/include")
    say "building with the kit in $KIT ($(ls "$KIT"/*.deb | wc -l) packages) in $BUILD ($JOBS jobs)"
  fi
  cmake -S "$ROOT" -B "$BUILD" "${CMAKE_ARGS[@]}" >"$WORK/cmake.log" 2>&1 ||
    { tail -20 "$WORK/cmake.log"; die "cmake failed (log: $WORK/cmake.log)"; }
  cmake --build "$BUILD" -j "$JOBS" --target ingot >"$WORK/build.log" 2>&1 ||
    { tail -30 "$WORK/build.log"; die "the build failed (log: $WORK/build.log)"; }
  INGOT="$BUILD/ingot"
  if [ -n "${KIT_LIB:-}" ]; then
    # The kit's libraries for ingot alone (not for Python and its packages).
    export LD_LIBRARY_PATH="$SAVED_LD_LIBRARY_PATH"
    [ -n "$LD_LIBRARY_PATH" ] || unset LD_LIBRARY_PATH
    printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' \
      "$KIT_LIB" "$BUILD/ingot" >"$WORK/ingot"
    chmod +x "$WORK/ingot"
    INGOT="$WORK/ingot"
  fi
  say "built $INGOT"
fi
[ -x "$INGOT" ] || die "no ingot at '$INGOT'"
case "$INGOT" in /*) ;; *) INGOT="$(cd "$(dirname "$INGOT")" && pwd)/$(basename "$INGOT")" ;; esac
"$INGOT" --version >/dev/null 2>&1 || die "'$INGOT --version' failed (missing libraries? LD_LIBRARY_PATH)"
# Without LLVM in this build, the CPU variant is C.
if "$INGOT" compile --help 2>/dev/null | grep -q . &&
   ! "$INGOT" compile "$ROOT/models/digits/model.onnx" -o "$WORK/llvm_probe.ingot" --target llvm -q \
     >/dev/null 2>"$WORK/llvm_probe.txt"; then
  if grep -qi "llvm" "$WORK/llvm_probe.txt"; then
    CPU_TARGET=c
    say "this build has no LLVM: the CPU variant is 'c' ($(head -c 160 "$WORK/llvm_probe.txt"))"
  fi
fi

# ---- 4. The checks.
say "python: $PY; ingot: $INGOT; CPU target: $CPU_TARGET; work: $WORK"
PYTHONUNBUFFERED=1 "$PY" "$ROOT/tests/gpu/gpu_check.py" --ingot "$INGOT" --work "$WORK" --python "$PY" \
  --cpu-target "$CPU_TARGET" ${EXTRA[@]+"${EXTRA[@]}"}
rc=$?
say "done (exit $rc)"
exit $rc
