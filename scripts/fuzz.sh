#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for SECONDS (default 600).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     TARGET: importer, bundle (default both)
#
# Environment:
#   INGOT_FUZZ_DIR   build and work folder (default: build-fuzz)
#   INGOT_FUZZ_JOBS  fuzzers run at once, one core each (default: 2, or 1 on one core)
#
# The fuzzers are built with clang (-fsanitize=fuzzer,address,undefined) in
# their own build folder, every library with -DINGOT_RT_FUZZING=1 so that no
# code from a fuzzed bundle is ever called (runtime/runtime_internal.h).
# Each target starts from its seed corpus (tests/fuzz/corpus/<target>) and its
# regression inputs (tests/fuzz/regressions/<target>); new corpus entries go to
# $INGOT_FUZZ_DIR/corpus/<target>, which git ignores. A crash, leak, timeout or
# out-of-memory leaves its input in $INGOT_FUZZ_DIR/artifacts/<target>/; the
# script minimizes each one into tests/fuzz/regressions/<target>/ (the only
# files it adds to the source tree) and exits 1. The CTest replay
# (fuzz.replay_<target>) runs the corpus and regressions under ASan and UBSan.
#
# At the end it prints, per target, the executions, their rate and the corpus
# size, and writes them to $INGOT_FUZZ_DIR/summary.txt.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SECONDS_EACH="${1:-600}"
shift || true
TARGETS=("$@")
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=(importer bundle)
FUZZ_DIR="${INGOT_FUZZ_DIR:-build-fuzz}"
case "$FUZZ_DIR" in /*) ;; *) FUZZ_DIR="$ROOT/$FUZZ_DIR" ;; esac
CORES="$(nproc)"
JOBS="${INGOT_FUZZ_JOBS:-$([ "$CORES" -ge 2 ] && echo 2 || echo 1)}"

say() { printf '==> %s\n' "$*"; }

command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (apt-get install clang)" >&2; exit 1; }
FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -gline-tables-only -DINGOT_RT_FUZZING=1"
say "configuring the fuzz build in $FUZZ_DIR (clang, $FLAGS)"
cmake -S . -B "$FUZZ_DIR" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release \
      -DINGOT_FUZZ=ON -DCMAKE_C_FLAGS="$FLAGS" >/dev/null
say "building ${TARGETS[*]/#/fuzz_}"
cmake --build "$FUZZ_DIR" -j"$CORES" --target "${TARGETS[@]/#/fuzz_}" >/dev/null

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fuzzer_bin() { # the build puts executables at the top of the build folder
  if [ -x "$FUZZ_DIR/fuzz_$1" ]; then echo "$FUZZ_DIR/fuzz_$1"; else echo "$FUZZ_DIR/tests/fuzz/fuzz_$1"; fi
}
run_target() {
  local t="$1" bin
  bin="$(fuzzer_bin "$1")"
  local work="$FUZZ_DIR/corpus/$t" art="$FUZZ_DIR/artifacts/$t/"
  rm -rf "$art"  # findings of an earlier run were dealt with (or are in regressions/)
  mkdir -p "$work" "$art" "tests/fuzz/regressions/$t"
  # -fork style isolation is not needed: a finding stops the run (it is fixed first).
  "$bin" "$work" "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" \
      -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
      -max_len=262144 -print_final_stats=1 -artifact_prefix="$art" \
      >"$FUZZ_DIR/fuzz_$t.log" 2>&1 || true
}

say "fuzzing ${TARGETS[*]} for $SECONDS_EACH s each, $JOBS at a time"
pids=()
for t in "${TARGETS[@]}"; do
  run_target "$t" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$JOBS" ]; then
    wait "${pids[0]}"
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p"; done

status=0
: >"$FUZZ_DIR/summary.txt"
for t in "${TARGETS[@]}"; do
  log="$FUZZ_DIR/fuzz_$t.log"
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
  rate="$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
  corpus="$(ls "$FUZZ_DIR/corpus/$t" | wc -l)"
  secs="$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*' || true)"
  [ -n "$secs" ] || secs="$([ "$rate" != "?" ] && [ "$rate" -gt 0 ] && echo $((execs / rate)) || echo '?')"
  line="$t: $execs executions in about $secs s ($rate/s), working corpus $corpus entries"
  echo "$line" | tee -a "$FUZZ_DIR/summary.txt"
  bin="$(fuzzer_bin "$t")"
  for a in "$FUZZ_DIR/artifacts/$t/"*; do
    [ -f "$a" ] || continue
    status=1
    name="$(basename "$a")"
    out="tests/fuzz/regressions/$t/$name"
    say "$t: finding $name; minimizing into $out"
    "$bin" -minimize_crash=1 -max_total_time=60 -exact_artifact_path="$out" "$a" \
        >"$FUZZ_DIR/minimize_${t}_${name}.log" 2>&1 || true
    [ -f "$out" ] || cp "$a" "$out"
    grep -m1 -E 'ERROR: |runtime error:|SUMMARY' "$log" || true
  done
done
if [ "$status" -ne 0 ]; then
  echo "fuzz.sh: findings above (logs in $FUZZ_DIR); fix them, keep the reproducers, rerun" >&2
fi
exit "$status"
