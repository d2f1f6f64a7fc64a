#!/usr/bin/env bash
# Tunes one model on a Slurm cluster: the shards of `ingot tune` as one array
# job (task I runs `ingot tune MODEL -o WORK/shard-I.jsonl --shard I/N`), then
# `ingot log merge` of the shards' logs into one. Run with --help for usage.
#
# Each task writes its exit status to WORK/shard-I.status when `ingot tune`
# returns; a shard that has none after the job left the queue was killed
# (time limit, node failure, scancel) or never ran. Either way the script
# names the shard, shows the end of its output and exits 1 without merging.
# Running it again with the same work folder resumes every shard from its log
# (`ingot tune` continues what a log holds) and submits a new job.
set -uo pipefail

prog=${0##*/}

usage() {
  cat <<EOF
usage: $prog MODEL.onnx -o OUT.jsonl [options] [-- TUNE_FLAGS...]

Tunes MODEL on a Slurm cluster: submits N shards of 'ingot tune' as one array
job (sbatch --array=0-(N-1)), waits until it has left the queue (squeue), checks
that every shard succeeded and merges their logs with 'ingot log merge'.

options:
  -o, --output PATH     the merged tuning log to write (required)
  -n, --shards N        number of shards, one array task each (1-256, default 2)
  -p, --partition NAME  the Slurm partition to run in (default: the cluster's)
  -w, --work DIR        folder for the job script, shard logs and task output;
                        it must be at the same path on every node (a shared file
                        system) (default: OUT without .jsonl, plus .shards)
  --ingot PATH          the ingot binary, at a path valid on the nodes too
                        (default: 'ingot' on PATH, else build/ingot of this tree)
  --job-name NAME       the array job's name (default: ingot-tune)
  --sbatch-arg ARG      one more argument for sbatch (repeat for several), e.g.
                        --sbatch-arg=--time=04:00:00 --sbatch-arg=--cpus-per-task=8
  --poll SECONDS        how often to ask squeue about the job (default 5)
  --timeout SECONDS     cancel the job and fail after this long (default: wait)
  -q, --quiet           print nothing but errors
  -h, --help            this text

Everything after '--' is passed to every shard's 'ingot tune' unchanged, e.g.
  $prog model.onnx -o model.jsonl -n 8 -- --trials 2000 --time-limit 3600
(--trials stays the whole model's budget: each shard takes the share of its
tasks; --time-limit holds for each shard). The script adds -o and --shard
itself; a shard's output (its progress lines) goes to WORK/shard-I.out.
Interrupting the script (Ctrl-C) cancels the job; running it again with the
same work folder resumes each shard from its log.
The same on Kubernetes: scripts/k8s/tune-indexed-job.yaml.

exit status: 0 merged; 1 a shard failed, the job could not be submitted or
followed, or the merge failed; 2 a wrong command line.
EOF
}

die_usage() {
  echo "$prog: $*" >&2
  echo "usage: $prog MODEL.onnx -o OUT.jsonl [options] [-- TUNE_FLAGS...] (see --help)" >&2
  exit 2
}

die() {
  echo "$prog: $*" >&2
  exit 1
}

say() {
  [ "$quiet" = 1 ] || echo "$prog: $*"
}

is_uint() {
  [[ $1 =~ ^[0-9]+$ ]]
}

# abs_path PATH: PATH from the root, its folder (which must exist) resolved.
abs_path() {
  local dir
  dir=$(cd "$(dirname "$1")" 2>/dev/null && pwd) || return 1
  printf '%s\n' "${dir%/}/${1##*/}"
}

model="" output="" shards=2 partition="" work="" ingot="" job_name=ingot-tune
poll=5 timeout="" quiet=0
sbatch_args=() tune_args=()

# An option's value comes as "--opt VALUE" or "--opt=VALUE".
while [ $# -gt 0 ]; do
  arg=$1
  case "$arg" in
    --*=*) opt=${arg%%=*} val=${arg#*=} has_val=1 ;;
    *) opt=$arg val="" has_val=0 ;;
  esac
  case "$opt" in
    -o | --output | -n | --shards | -p | --partition | -w | --work | --ingot | --job-name | --sbatch-arg | \
      --poll | --timeout)
      if [ "$has_val" = 0 ]; then
        [ $# -ge 2 ] || die_usage "option '$opt' needs a value"
        val=$2
        shift
      fi
      ;;
    *) [ "$has_val" = 0 ] || die_usage "option '$opt' takes no value" ;;
  esac
  case "$opt" in
    -h | --help) usage; exit 0 ;;
    -q | --quiet) quiet=1 ;;
    -o | --output) output=$val ;;
    -n | --shards) shards=$val ;;
    -p | --partition) partition=$val ;;
    -w | --work) work=$val ;;
    --ingot) ingot=$val ;;
    --job-name) job_name=$val ;;
    --sbatch-arg) sbatch_args+=("$val") ;;
    --poll) poll=$val ;;
    --timeout) timeout=$val ;;
    --)
      shift
      tune_args=("$@")
      break
      ;;
    -*) die_usage "unknown option '$arg' (flags for 'ingot tune' go after '--')" ;;
    *)
      [ -z "$model" ] || die_usage "one model at a time ('$arg' is a second)"
      model=$arg
      ;;
  esac
  shift
done

[ -n "$model" ] || die_usage "no model given"
[ -n "$output" ] || die_usage "no output given: add -o OUT.jsonl"
# 256: the most logs one `ingot log merge` takes.
is_uint "$shards" && [ "${#shards}" -le 3 ] && [ "$shards" -ge 1 ] && [ "$shards" -le 256 ] ||
  die_usage "--shards must be a whole number from 1 to 256, not '$shards'"
is_uint "$poll" && [ "$poll" -ge 1 ] || die_usage "--poll must be a whole number of seconds >= 1, not '$poll'"
[ -z "$timeout" ] || { is_uint "$timeout" && [ "$timeout" -ge 1 ]; } ||
  die_usage "--timeout must be a whole number of seconds >= 1, not '$timeout'"
[[ $job_name =~ ^[A-Za-z0-9._-]+$ ]] || die_usage "--job-name may hold only letters, digits, '.', '_' and '-', not '$job_name'"
for a in "${tune_args[@]}"; do
  case "$a" in
    -o | --output | --output=* | --shard | --shard=*)
      die_usage "'$a' after '--': the script sets the shard's -o and --shard itself" ;;
  esac
done

[ -f "$model" ] || die "model '$model' is not a file"
model=$(abs_path "$model")
case "$output" in
  */ | . | ..) die_usage "output '$output' is a folder; give a file name" ;;
esac
out_abs=$(abs_path "$output") || die "output folder '$(dirname "$output")' does not exist"
output=$out_abs
[ -n "$work" ] || work=${output%.jsonl}.shards

if [ -z "$ingot" ]; then
  if command -v ingot >/dev/null 2>&1; then
    ingot=$(command -v ingot)
  else
    ingot=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/ingot
  fi
fi
case "$ingot" in
  */*) ingot=$(abs_path "$ingot") || die "ingot binary '$ingot' is not an executable file (give one with --ingot)" ;;
  *) ingot=$(command -v "$ingot") || die "ingot binary '$ingot' is not on PATH" ;;
esac
[ -f "$ingot" ] && [ -x "$ingot" ] || die "ingot binary '$ingot' is not an executable file (give one with --ingot)"

for tool in sbatch squeue scancel; do
  command -v "$tool" >/dev/null 2>&1 ||
    die "'$tool' not found: this script needs the Slurm client commands (Debian: slurm-client)"
done

mkdir -p "$work" || die "cannot make the work folder '$work'"
work=$(cd "$work" && pwd)
# Logs of a run with more shards would be merged by nobody: refuse rather
# than leave part of a tuning behind.
for f in "$work"/shard-*.jsonl; do
  [ -e "$f" ] || continue
  i=${f##*/shard-}
  i=${i%.jsonl}
  if ! is_uint "$i" || [ "$i" -ge "$shards" ]; then
    die "work folder '$work' holds '$f', which is not one of $shards shards; use another --work or remove it"
  fi
done

# The job script. Every value is quoted here with printf %q, so that a path
# with spaces reaches the node intact.
job_script=$work/tune-job.sh
{
  echo '#!/usr/bin/env bash'
  echo "# Written by $prog: task I of the array tunes shard I of $shards."
  echo 'i=${SLURM_ARRAY_TASK_ID:?not run as a Slurm array task}'
  printf 'work=%q\n' "$work"
  echo 'rm -f "$work/shard-$i.status"'
  printf '%q tune %q -o "$work/shard-$i.jsonl" --shard "$i/%d"' "$ingot" "$model" "$shards"
  for a in "${tune_args[@]}"; do printf ' %q' "$a"; done
  echo
  echo 'rc=$?'
  echo 'echo "$rc" >"$work/shard-$i.status.tmp" && mv "$work/shard-$i.status.tmp" "$work/shard-$i.status"'
  echo 'exit "$rc"'
} >"$job_script" || die "cannot write '$job_script'"
chmod +x "$job_script"
for ((i = 0; i < shards; i++)); do
  rm -f "$work/shard-$i.status" "$work/shard-$i.out"
done

submit=(sbatch --parsable --array="0-$((shards - 1))" --job-name="$job_name"
        --output="$work/shard-%a.out" --chdir="$work")
[ -z "$partition" ] || submit+=(--partition="$partition")
submit+=("${sbatch_args[@]}" "$job_script")
if ! sub_out=$("${submit[@]}" 2>&1); then
  die "sbatch failed: $sub_out"
fi
job=${sub_out%%;*}
job=$(printf '%s' "$job" | tail -n 1)
is_uint "$job" || die "sbatch did not print a job id: '$sub_out'"
say "submitted array job $job: $shards shards of $(basename "$model"), work folder $work"

cancel_job() {
  scancel "$job" >/dev/null 2>&1
  echo "$prog: $1: cancelled job $job (run again with --work '$work' to resume the shards)" >&2
  exit 1
}
trap 'cancel_job interrupted' INT TERM HUP

# Wait for the job to leave the queue. sbatch --wait reports late (tens of
# seconds after the tasks ended), squeue as soon as they are done. A job that
# the controller no longer knows ("Invalid job id") has ended too.
start=$SECONDS
last="" failures=0
while :; do
  if q=$(squeue -h -j "$job" -o '%T' 2>&1); then
    failures=0
    [ -n "$q" ] || break
    now=$(printf '%s\n' "$q" | sort | uniq -c | awk '{printf "%s%d %s", sep, $1, tolower($2); sep=", "}')
    if [ "$now" != "$last" ]; then
      say "job $job: $now"
      last=$now
    fi
  else
    case "$q" in
      *"Invalid job id"*) break ;;
    esac
    failures=$((failures + 1))
    [ "$failures" -lt 5 ] || die "squeue failed 5 times in a row following job $job: $q"
  fi
  if [ -n "$timeout" ] && [ $((SECONDS - start)) -ge "$timeout" ]; then
    cancel_job "timed out after $timeout s"
  fi
  sleep "$poll"
done
trap - INT TERM HUP

failed=0
for ((i = 0; i < shards; i++)); do
  status_file=$work/shard-$i.status
  why=""
  if [ ! -f "$status_file" ]; then
    why="did not finish (no exit status: killed, out of time, or never started)"
  else
    rc=$(cat "$status_file")
    [ "$rc" = 0 ] || why="failed: 'ingot tune' exited with status $rc"
  fi
  [ -n "$why" ] || [ -f "$work/shard-$i.jsonl" ] || why="wrote no log ($work/shard-$i.jsonl)"
  if [ -n "$why" ]; then
    failed=$((failed + 1))
    echo "$prog: shard $i of $shards (job ${job}_$i) $why; its output, $work/shard-$i.out, ends:" >&2
    if [ -s "$work/shard-$i.out" ]; then
      tail -n 5 "$work/shard-$i.out" | sed 's/^/    /' >&2
    else
      echo "    (nothing)" >&2
    fi
  fi
done
[ "$failed" = 0 ] || die "$failed of $shards shards failed; nothing merged"

logs=()
for ((i = 0; i < shards; i++)); do logs+=("$work/shard-$i.jsonl"); done
"$ingot" log merge "${logs[@]}" -o "$output" || die "merging the shards' logs into '$output' failed"
say "merged $shards shard logs into $output ($(wc -l <"$output") records) in $((SECONDS - start)) s"
