# Sourced by scripts/demo.sh and scripts/test.sh (not run on its own):
# installs what the build needs, makes the Python venv, configures and builds.
#
#   INGOT_BUILD_DIR   build folder (default: build)
#   INGOT_BUILD_TYPE  CMake build type (default: Release)
#
# On Debian (12) as root, missing system packages are installed with apt-get
# (checked with dpkg-query first; apt is skipped when all are present). The
# venv is $INGOT_BUILD_DIR/venv, made with whatever `python3` is on PATH; pip
# runs only when onnx, onnxruntime or numpy cannot be imported from it, or when
# the ingot package (python/) is not installed into it.

INGOT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$INGOT_ROOT"
INGOT_BUILD_DIR="${INGOT_BUILD_DIR:-build}"
case "$INGOT_BUILD_DIR" in
  /*) ;;
  *) INGOT_BUILD_DIR="$INGOT_ROOT/$INGOT_BUILD_DIR" ;;
esac
INGOT_BUILD_TYPE="${INGOT_BUILD_TYPE:-Release}"
INGOT_PY="$INGOT_BUILD_DIR/venv/bin/python"

ingot_say() {
  if [ -t 1 ]; then printf '\033[1m==> %s\033[0m\n' "$*"; else printf '==> %s\n' "$*"; fi
}

ingot_install_system_packages() {
  local packages=(cmake pkg-config gcc clang lld llvm-dev protobuf-c-compiler libprotobuf-c-dev
                  libonnx-dev libzstd-dev libsodium-dev libjansson-dev libxgboost-dev python3-venv python3
                  openssh-server)
  # openssh-server: driver.ssh_runner starts its own sshd on 127.0.0.1 (a port,
  # keys and config of its own) to test measuring through ssh. The package's
  # service is not needed (where apt starts it, it listens on port 22).
  # The AArch64 path (tests/aarch64): a cross compiler, qemu-user and the
  # runtime's libraries for arm64 (Debian multiarch). INGOT_CROSS_AARCH64=0
  # leaves them out (those tests are then skipped).
  if [ "${INGOT_CROSS_AARCH64:-1}" = 1 ] && command -v dpkg >/dev/null 2>&1 &&
     [ "$(dpkg --print-architecture)" = amd64 ]; then
    packages+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libzstd-dev:arm64
               libjansson-dev:arm64 libsodium-dev:arm64)
  fi
  # A single-node Slurm cluster for tests/tune (tune_slurm_cluster starts the
  # daemons itself, no systemd) and YAML to check the Kubernetes manifests.
  # INGOT_SLURM=0 leaves them out (those checks are then skipped).
  if [ "${INGOT_SLURM:-1}" = 1 ]; then
    packages+=(munge slurmctld slurmd slurm-client python3-yaml)
  fi
  # hiprtc (inside ROCm 5.2's libamdhip64) for the rocm target: compiles HIP
  # to AMDGPU code objects at `ingot compile` time, no GPU needed (its
  # compiler, comgr, carries the device libraries). INGOT_ROCM=0 leaves it out
  # (the rocm target then says hiprtc is missing; its tests are skipped).
  # NVRTC comes with NVIDIA's CUDA toolkit, which Debian's main archive lacks:
  # found in /usr/local/cuda when present, else the cuda tests are skipped.
  if [ "${INGOT_ROCM:-1}" = 1 ] && command -v dpkg >/dev/null 2>&1 &&
     [ "$(dpkg --print-architecture)" = amd64 ]; then
    packages+=(libamdhip64-dev)
  fi
  if ! command -v dpkg-query >/dev/null 2>&1; then
    ingot_say "no dpkg-query: not a Debian system; assuming the packages are installed"
    return 0
  fi
  # A name without ":arch" means the native (or arch-independent) package;
  # with arm64 added, dpkg-query lists both architectures of a library.
  local native missing=() p
  native="$(dpkg --print-architecture)"
  for p in "${packages[@]}"; do
    local want="$native|all"
    case "$p" in *:*) want="${p##*:}" ;; esac
    if ! dpkg-query -W -f='${Architecture} ${Status}\n' "${p%%:*}" 2>/dev/null |
         grep -Eq "^($want) install ok installed$"; then
      missing+=("$p")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    ingot_say "system packages: all present"
    return 0
  fi
  ingot_say "installing: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "error: missing packages (${missing[*]}) and not root; install them and rerun" >&2
      return 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  if [[ " ${missing[*]}" == *":arm64"* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    "${sudo[@]}" dpkg --add-architecture arm64
  fi
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
}

ingot_make_venv() {
  mkdir -p "$INGOT_BUILD_DIR"
  # A venv whose interpreter is gone (python moved, pyenv changed) is remade.
  if [ -d "$INGOT_BUILD_DIR/venv" ] && ! "$INGOT_PY" -c 'import sys' >/dev/null 2>&1; then
    ingot_say "removing a broken venv at $INGOT_BUILD_DIR/venv"
    rm -rf "$INGOT_BUILD_DIR/venv"
  fi
  if [ ! -x "$INGOT_PY" ]; then
    ingot_say "creating the venv $INGOT_BUILD_DIR/venv with $(command -v python3) ($(python3 --version 2>&1))"
    python3 -m venv "$INGOT_BUILD_DIR/venv"
  fi
  if "$INGOT_PY" -c 'import onnx, onnxruntime, numpy' >/dev/null 2>&1; then
    ingot_say "python packages: all importable"
  else
    ingot_say "pip installing onnx==1.22.0 onnxruntime numpy"
    "$INGOT_PY" -m pip install -q --disable-pip-version-check 'onnx==1.22.0' onnxruntime numpy
  fi
  # The Python package (python/), installed editable: the venv imports this
  # tree's python/ingot, and finds the tool and libingot of this build through
  # the venv's place ($INGOT_BUILD_DIR/venv; see python/ingot/_locate.py).
  # pip runs only when `import ingot` does not already give this tree's.
  if "$INGOT_PY" -c 'import os, sys, ingot; sys.exit(os.path.dirname(os.path.realpath(ingot.__file__)) != sys.argv[1])' \
       "$(realpath "$INGOT_ROOT/python/ingot")" >/dev/null 2>&1; then
    ingot_say "python package ingot: installed (editable, python/)"
  else
    ingot_say "pip installing the ingot package (editable, python/)"
    "$INGOT_PY" -m pip install -q --disable-pip-version-check --no-deps -e "$INGOT_ROOT/python"
  fi
}

ingot_build() {
  ingot_say "configuring ($INGOT_BUILD_TYPE) in $INGOT_BUILD_DIR"
  cmake -S . -B "$INGOT_BUILD_DIR" -DCMAKE_BUILD_TYPE="$INGOT_BUILD_TYPE" \
        -DINGOT_PYTHON="$INGOT_PY" >/dev/null
  ingot_say "building with $(nproc) jobs"
  cmake --build "$INGOT_BUILD_DIR" -j"$(nproc)"
}

ingot_install_system_packages
ingot_make_venv
ingot_build
INGOT="$INGOT_BUILD_DIR/ingot"
