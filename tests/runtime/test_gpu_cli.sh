#!/usr/bin/env bash
# runtime.gpu_cli INGOT WORK: `ingot run --device` and `ingot inspect` on the
# bundles runtime.gpu_loader_missing wrote (a CUDA variant beside a CPU one,
# and a CUDA-only one), with the CUDA driver hidden (INGOT_CUDA_DRIVER names
# a missing file), so the results are the same on a machine with a GPU.
set -uo pipefail
ingot=$1 work=$2
export INGOT_CUDA_DRIVER=/nonexistent/libcuda.so.1 INGOT_HIP_RUNTIME=/nonexistent/libamdhip64.so
mixed=$work/gpu_mixed.ingot only=$work/gpu_only.ingot
fail=0
check() { # check WHAT WANT_RC WANT_TEXT -- command...
  local what=$1 want_rc=$2 want_text=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" != "$want_rc" ]; then
    echo "FAILED $what: exit $rc, want $want_rc; output:" >&2
    echo "$out" >&2
    fail=1
  elif [ -n "$want_text" ] && ! grep -qF -- "$want_text" <<<"$out"; then
    echo "FAILED $what: output lacks '$want_text':" >&2
    echo "$out" >&2
    fail=1
  else
    echo "ok: $what"
  fi
}
[ -f "$mixed" ] && [ -f "$only" ] || { echo "bundles missing in $work" >&2; exit 1; }
check "default runs the CPU variant" 0 "device: cpu" -- "$ingot" run "$mixed" --verbose
check "verbose says why not cuda" 0 "cuda: none: /nonexistent/libcuda.so.1 not found" -- "$ingot" run "$mixed" -v
check "--device cpu" 0 "device cpu asked for" -- "$ingot" run "$mixed" --device cpu --verbose
check "--device auto" 0 "" -- "$ingot" run "$mixed" --device auto
check "--device cuda here" 1 "no cuda variant runs on this machine" -- "$ingot" run "$mixed" --device cuda
check "--device rocm here" 1 "no rocm variant runs on this machine" -- "$ingot" run "$mixed" --device rocm
check "--device bogus" 2 "--device needs cpu, cuda, rocm or auto" -- "$ingot" run "$mixed" --device bogus
check "CUDA-only bundle" 1 "no code variant runs on this machine: cuda -arch=sm_90 (/nonexistent/libcuda.so.1 not found" \
  -- "$ingot" run "$only"
check "inspect names the CUDA probe" 0 "cuda: none: /nonexistent/libcuda.so.1 not found" -- "$ingot" inspect "$mixed"
check "inspect --json" 0 '"loaded_device": "cpu"' -- "$ingot" inspect "$mixed" --json
check "inspect names the ROCm probe" 0 "rocm: none: /nonexistent/libamdhip64.so not found" -- "$ingot" inspect "$mixed"
# The machine's own drivers, whatever they are (here: none, or ROCm's runtime
# without a GPU): probed for real, a line each, no crash.
check "real probes" 0 "rocm: " -- env -u INGOT_CUDA_DRIVER -u INGOT_HIP_RUNTIME "$ingot" inspect "$mixed"
env -u INGOT_CUDA_DRIVER -u INGOT_HIP_RUNTIME "$ingot" inspect "$mixed" | grep -E '^(cuda|rocm):'
exit $fail
