#!/usr/bin/env bash
# layering.runtime_only SOURCE WORK: the runtime builds on its own. pkg-config
# is pointed at a folder holding only zstd's and libsodium's .pc files, and
# PATH holds no llvm-config or protoc-c, so nothing else can be found; then
# libingot.so must need nothing but libc, libm, libdl (dlopen of GPU drivers),
# zstd and libsodium (and so must
# ingot-measure, the run-only measuring program).
set -euo pipefail
src=$1 work=$2
rm -rf "$work" && mkdir -p "$work/pc" "$work/bin"
for pc in libzstd libsodium; do
  f=$(pkg-config --variable=pcfiledir "$pc")/$pc.pc
  cp "$f" "$work/pc/"
done
for tool in cmake cc gcc make pkg-config ld as ar ranlib bash sh sed grep cat rm mkdir readelf; do
  p=$(command -v "$tool" || true)
  [ -n "$p" ] && ln -s "$p" "$work/bin/$tool"
done
env -i HOME="$HOME" PATH="$work/bin" PKG_CONFIG_LIBDIR="$work/pc" PKG_CONFIG_PATH= \
  cmake -S "$src" -B "$work/build" -DINGOT_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release >"$work/configure.log"
env -i HOME="$HOME" PATH="$work/bin" cmake --build "$work/build" -j2 >"$work/build.log"
if grep -Eiq 'llvm|protobuf|jansson' "$work/build/CMakeCache.txt"; then
  echo "runtime-only configure looked for a compiler-side dependency:" >&2
  grep -Ei 'llvm|protobuf|jansson' "$work/build/CMakeCache.txt" >&2
  exit 1
fi
lib=$work/build/runtime/libingot.so
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
echo "libingot.so needs: $needed"
for n in $needed; do
  case "$n" in
    libc.so.*|libm.so.*|libdl.so.*|ld-linux-*.so.*|libzstd.so.*|libsodium.so.*|libpthread.so.*) ;;
    *) echo "libingot.so needs $n" >&2; exit 1 ;;
  esac
done
test -f "$work/build/runtime/libingot.a"
# ingot-measure, the program the ssh runner copies to a board, is built from
# the runtime alone and needs nothing more than libingot does.
prog=$work/build/ingot-measure
test -x "$prog" || { echo "the runtime-only build made no ingot-measure" >&2; exit 1; }
for n in $(readelf -d "$prog" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
  case "$n" in
    libc.so.*|libm.so.*|libdl.so.*|ld-linux-*.so.*|libzstd.so.*|libsodium.so.*|libpthread.so.*) ;;
    *) echo "ingot-measure needs $n" >&2; exit 1 ;;
  esac
done
"$prog" --help | grep CANDIDATE >/dev/null
echo "runtime-only build: ok ($(stat -c %s "$lib") bytes)"
