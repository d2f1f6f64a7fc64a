#!/usr/bin/env bash
# package_test.sh CASE SOURCE BUILD WORK VERSION INGOT: Ingot as another
# project uses it. Every case builds tests/package/consumer/main.c against
# the runtime and runs it on the digits model compiled by INGOT (this build's
# ingot), unsigned and signed with the test key (tests/fuzz/keys/test_key),
# checking the version it reports against VERSION (the CMake project's).
#   install       `cmake --install BUILD` (this full build) into a temporary
#                 prefix: the files, the SONAME; the consumer through
#                 find_package(ingot CONFIG) (static) and pkg-config (shared)
#   runtime_only  a -DINGOT_RUNTIME_ONLY=ON build that can see nothing but a
#                 C compiler, zstd and libsodium, installed; both consumers
#   no_signatures the same with -DINGOT_SIGNATURES=OFF -DINGOT_GPU_LOADERS=OFF
#                 (the smallest libingot), seeing only zstd: libsodium is not
#                 linked, not required by ingot.pc, a public key is answered
#                 with "unsupported", and no GPU driver is named in it
#   subproject    add_subdirectory of SOURCE from the consumer's project, the
#                 whole tree (tests on, to check their paths) and runtime-only
set -euo pipefail
case_=$1 src=$2 build=$3 work=$4 version=$5 ingot=$6
rm -rf "$work" && mkdir -p "$work"
log=$work/log
fail() { echo "FAIL ($case_): $*" >&2; exit 1; }

"$ingot" compile "$src/models/digits/model.onnx" -o "$work/digits.ingot" -q --input-shape input=1x1x8x8
cp "$work/digits.ingot" "$work/digits_signed.ingot"
"$ingot" sign "$work/digits_signed.ingot" --key "$src/tests/fuzz/keys/test_key" >/dev/null
pub=$src/tests/fuzz/keys/test_key.pub

# run_consumer PROGRAM SIGNATURES(on|off): unsigned, then signed with its key.
run_consumer() {
  local prog=$1 sig=$2 out
  out=$("$prog" "$work/digits.ingot") || fail "$prog: $out"
  echo "$out"
  case "$out" in "ok: ingot $version ran"*) ;; *) fail "$prog reports '$out', not version $version" ;; esac
  if [ "$sig" = on ]; then
    out=$("$prog" "$work/digits_signed.ingot" "$pub") || fail "$prog with the key: $out"
  else
    out=$("$prog" "$work/digits_signed.ingot" "$pub") && fail "$prog checked a signature without libsodium"
    case "$out" in "failed: unsupported: "*INGOT_SIGNATURES=OFF*) ;; *) fail "$prog with a key: '$out'" ;; esac
  fi
  echo "  with the key: $out"
}

# consumers PREFIX SIGNATURES: the consumer through find_package and through
# pkg-config, built against PREFIX, both run.
consumers() {
  local prefix=$1 sig=$2 soname flags libs
  for f in include/ingot.h lib/libingot.a lib/pkgconfig/ingot.pc lib/cmake/ingot/ingotConfig.cmake \
           lib/cmake/ingot/ingotConfigVersion.cmake; do
    test -e "$prefix/$f" || fail "not installed: $f"
  done
  soname=$(readelf -d "$prefix/lib/libingot.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = "libingot.so.${version%%.*}" ] || fail "libingot.so has SONAME '$soname'"
  test -f "$prefix/lib/libingot.so.$version" || fail "no lib/libingot.so.$version"
  echo "installed under $prefix: $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"

  cmake -S "$src/tests/package/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_BUILD_TYPE=Release >>"$log" || fail "find_package consumer: configure (see $log)"
  cmake --build "$work/cmake" >>"$log" || fail "find_package consumer: build (see $log)"
  run_consumer "$work/cmake/consumer" "$sig"

  flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs ingot)
  ${CC:-cc} -std=c11 "$src/tests/package/consumer/main.c" -o "$work/consumer_pc" $flags -Wl,-rpath,"$prefix/lib"
  libs=$(ldd "$work/consumer_pc")
  case "$libs" in *"$prefix/lib/$soname"*) ;; *) fail "consumer_pc does not use $prefix/lib/$soname: $libs" ;; esac
  run_consumer "$work/consumer_pc" "$sig"
}

# restricted_build BUILD_DIR PC_MODULES CMAKE_ARGS...: configure, build and
# install (to BUILD_DIR/prefix) this tree where PATH holds only a C compiler,
# binutils, cmake, make and pkg-config, and pkg-config sees only PC_MODULES.
restricted_build() {
  local dir=$1 modules=$2
  shift 2
  mkdir -p "$dir/pc" "$dir/bin"
  for pc in $modules; do cp "$(pkg-config --variable=pcfiledir "$pc")/$pc.pc" "$dir/pc/"; done
  for tool in cmake cc gcc make pkg-config ld as ar ranlib bash sh sed grep cat rm mkdir ln readelf; do
    p=$(command -v "$tool" || true)
    [ -n "$p" ] && ln -s "$p" "$dir/bin/$tool"
  done
  local env_=(env -i HOME="$HOME" PATH="$dir/bin" PKG_CONFIG_LIBDIR="$dir/pc" PKG_CONFIG_PATH=)
  "${env_[@]}" cmake -S "$src" -B "$dir/build" -DINGOT_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release "$@" \
    >>"$log" 2>&1 || fail "runtime-only configure with only $modules (see $log)"
  "${env_[@]}" cmake --build "$dir/build" -j2 >>"$log" 2>&1 || fail "runtime-only build (see $log)"
  "${env_[@]}" cmake --install "$dir/build" --prefix "$dir/prefix" >>"$log" 2>&1 || fail "runtime-only install"
  test ! -e "$dir/prefix/bin/ingot" || fail "a runtime-only install has bin/ingot"
  test -x "$dir/prefix/bin/ingot-measure" || fail "a runtime-only install lacks bin/ingot-measure"
}

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '; }

case "$case_" in
  install)
    prefix=$work/prefix
    cmake --install "$build" --prefix "$prefix" >>"$log" || fail "cmake --install $build"
    for f in bin/ingot bin/ingot-measure; do test -x "$prefix/$f" || fail "not installed: $f"; done
    # The installed tool works from its new home.
    "$prefix/bin/ingot" inspect "$work/digits.ingot" >/dev/null || fail "the installed ingot cannot inspect"
    consumers "$prefix" on
    ;;
  runtime_only)
    restricted_build "$work/rt" "libzstd libsodium"
    case "$(needed "$work/rt/prefix/lib/libingot.so")" in *libsodium*) ;; *) fail "libingot.so does not link libsodium" ;; esac
    consumers "$work/rt/prefix" on
    ;;
  no_signatures)
    restricted_build "$work/rt" "libzstd" -DINGOT_SIGNATURES=OFF -DINGOT_GPU_LOADERS=OFF
    needs=$(needed "$work/rt/prefix/lib/libingot.so")
    if grep -q -a -e 'libcuda.so' -e 'libamdhip64' "$work/rt/prefix/lib/libingot.so"; then
      fail "libingot.so built with INGOT_GPU_LOADERS=OFF still names a GPU driver"
    fi
    case "$needs" in *sodium*) fail "libingot.so built with INGOT_SIGNATURES=OFF needs: $needs" ;; esac
    requires=$(PKG_CONFIG_PATH="$work/rt/prefix/lib/pkgconfig" pkg-config --print-requires-private ingot)
    case "$requires" in *sodium*) fail "ingot.pc requires $requires" ;; esac
    consumers "$work/rt/prefix" off
    case "$(needed "$work/cmake/consumer")" in *sodium*) fail "the find_package consumer links libsodium" ;; esac
    ;;
  subproject)
    # The whole tree under another project, its tests included (they must
    # find their files from Ingot's folders, not the outer project's); only
    # the consumer and what it needs are built.
    cmake -S "$src/tests/package/consumer" -B "$work/sub_full" -DINGOT_SOURCE="$src" -DINGOT_BUILD_TESTS=ON \
          -DCMAKE_BUILD_TYPE=Release >>"$log" 2>&1 || fail "add_subdirectory of the whole tree: configure (see $log)"
    grep -q '^INGOT_BUILD_TESTS:BOOL=ON' "$work/sub_full/CMakeCache.txt" || fail "INGOT_BUILD_TESTS not set"
    test -f "$work/sub_full/ingot/tests/CTestTestfile.cmake" || fail "the tests were not added under the subproject"
    cmake --build "$work/sub_full" -j2 --target consumer >>"$log" 2>&1 || fail "add_subdirectory: build (see $log)"
    run_consumer "$work/sub_full/consumer" on
    # By default a subproject adds no tests.
    cmake -S "$src/tests/package/consumer" -B "$work/sub_rt" -DINGOT_SOURCE="$src" -DINGOT_RUNTIME_ONLY=ON \
          -DCMAKE_BUILD_TYPE=Release >>"$log" 2>&1 || fail "add_subdirectory, runtime only: configure (see $log)"
    grep -q '^INGOT_BUILD_TESTS:BOOL=OFF' "$work/sub_rt/CMakeCache.txt" || fail "a subproject builds Ingot's tests"
    cmake --build "$work/sub_rt" -j2 >>"$log" 2>&1 || fail "add_subdirectory, runtime only: build (see $log)"
    run_consumer "$work/sub_rt/consumer" on
    ;;
  *) fail "unknown case" ;;
esac
echo "package.$case_: ok"
