# Cross-compiling for 64-bit Arm Linux with Debian's cross toolchain:
#   apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
#   dpkg --add-architecture arm64 && apt-get update &&
#   apt-get install libzstd-dev:arm64 libjansson-dev:arm64 libsodium-dev:arm64
#   cmake -S . -B build-aarch64 -DINGOT_RUNTIME_ONLY=ON -DINGOT_RUN_TOOL=ON \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# The target's libraries come from Debian multiarch (/usr/lib/aarch64-linux-gnu,
# which the cross gcc searches), and so do their pkg-config files unless
# PKG_CONFIG_LIBDIR is set already; binaries run on x86-64 under
#   qemu-aarch64 -L /usr/aarch64-linux-gnu BINARY
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(INGOT_CROSS_PREFIX aarch64-linux-gnu- CACHE STRING "cross toolchain prefix")
set(CMAKE_C_COMPILER ${INGOT_CROSS_PREFIX}gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
# pkg-config must describe the arm64 libraries, not the build machine's.
if(NOT DEFINED ENV{PKG_CONFIG_LIBDIR})
  set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
endif()
