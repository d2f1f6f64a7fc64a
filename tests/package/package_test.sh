#!/usr/bin/env bash
# package.install SOURCE BUILD WORK: `cmake --install` of this build into a
# temporary prefix, then a program outside the tree built against it three
# ways, each of which must run a bundle compiled by the installed `ingot`:
#   1. find_package(ingot CONFIG) -> ingot::runtime (static libingot.a)
#   2. pkg-config ingot (shared libingot.so.MAJOR)
#   3. add_subdirectory of the source tree (runtime only, ingot::runtime)
set -euo pipefail
src=$1 build=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in include/ingot.h lib/libingot.a lib/pkgconfig/ingot.pc lib/cmake/ingot/ingotConfig.cmake bin/ingot \
         bin/ingot-measure; do
  test -e "$prefix/$f" || { echo "not installed: $f" >&2; exit 1; }
done
soname=$(readelf -d "$prefix/lib/libingot.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
case "$soname" in libingot.so.[0-9]*) ;; *) echo "libingot.so has SONAME '$soname'" >&2; exit 1 ;; esac
echo "installed: $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"
echo "SONAME $soname"

"$prefix/bin/ingot" compile "$src/models/digits/model.onnx" -o "$work/digits.ingot" -q --input-shape input=1x1x8x8

cmake -S "$src/tests/package/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log"
cmake --build "$work/cmake" >>"$work/cmake.log"
"$work/cmake/consumer" "$work/digits.ingot"

cc_=${CC:-cc}
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs ingot)
$cc_ -std=c11 "$src/tests/package/consumer/main.c" -o "$work/consumer_pc" $flags -Wl,-rpath,"$prefix/lib"
libs=$(ldd "$work/consumer_pc")
case "$libs" in *"$prefix/lib/$soname"*) ;; *) echo "consumer_pc does not use $soname: $libs" >&2; exit 1 ;; esac
"$work/consumer_pc" "$work/digits.ingot"

cmake -S "$src/tests/package/consumer" -B "$work/sub" -DINGOT_SOURCE="$src" >"$work/sub.log"
cmake --build "$work/sub" -j2 >>"$work/sub.log"
"$work/sub/consumer" "$work/digits.ingot"
echo "package: 3 of 3 consumers ran"
