#!/usr/bin/env bash
# Command 2: install, build, run every test.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ingot_say "ctest in $INGOT_BUILD_DIR"
cd "$INGOT_BUILD_DIR"
ctest --output-on-failure -j"$(nproc)"
