#!/usr/bin/env bash
# tune_slurm_cluster SOURCE INGOT WORK: a real single-node Slurm cluster on
# this machine (munged, slurmctld, slurmd started here, no systemd; config,
# state and logs under WORK; ports of its own), a 2-shard tuning of a small
# model through scripts/tune-slurm.sh, and checks of the merged log:
#   - every line is JSON with a "workload"; each shard's log has records;
#   - the shards' workloads are disjoint and together those an unsharded
#     `ingot tune` covers, which are the kernels of `ingot compile
#     --dump-space` with more than one point to choose from;
#   - the merged log is exactly the union of the shards' records, and
#     `ingot compile --tuning-log` with it tunes every kernel;
# then, with the same ingot behind a wrapper that fails one shard of 3 and
# kills another, the script fails naming both and merges nothing; run again
# on that work folder it resumes and merges; a job past --timeout is cancelled.
# Every daemon's pid is recorded and only those pids are stopped, on success
# and on failure alike. Exits 77 (skipped) without the Debian packages munge,
# slurmctld, slurmd and slurm-client, or when not root (munged must run as the
# munge user, slurmd as root).
set -euo pipefail
src=$1 ingot=$2 work=$3
script=$src/scripts/tune-slurm.sh
model=$src/models/digits/model.onnx
model_flags=(--input-shape input=1x1x8x8)
tune_flags=(--trials 8 --time-limit 60)

skip() {
  echo "SKIP: $*"
  exit 77
}
for tool in munged mungekey slurmctld slurmd sbatch squeue sinfo scancel setpriv python3; do
  command -v "$tool" >/dev/null 2>&1 ||
    skip "'$tool' not found (Debian packages: munge slurmctld slurmd slurm-client)"
done
[ "$(id -u)" = 0 ] || skip "not root: munged runs as the munge user and slurmd as root"
id munge >/dev/null 2>&1 || skip "no 'munge' user (the Debian munge package makes it)"

rm -rf "$work" && mkdir -p "$work"
work=$(cd "$work" && pwd)
export SLURM_CONF=$work/slurm.conf
pids=()

stop_cluster() {
  local rc=$? pid i
  trap - EXIT INT TERM
  if [ "${#pids[@]}" -ge 2 ] && kill -0 "${pids[1]}" 2>/dev/null; then
    scancel --full --signal=KILL --user="$(id -un)" >/dev/null 2>&1 || true
  fi
  # Stop in the reverse order of starting: slurmd, slurmctld, munged.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid=${pids[i]}
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
    for log in slurmctld.log slurmd.log munge/munged.log; do
      [ -s "$work/$log" ] || continue
      echo "--- end of $work/$log" >&2
      tail -n 15 "$work/$log" >&2
    done
  fi
  exit "$rc"
}
trap stop_cluster EXIT
trap 'exit 130' INT TERM

# --- munged, as the munge user, with its own key and socket.
mkdir -p "$work/munge"
mungekey --create --keyfile="$work/munge/munge.key" --force >/dev/null
chown -R munge:munge "$work/munge"
chmod 0755 "$work/munge"  # munged wants its socket folder open to all (x)
chmod 0400 "$work/munge/munge.key"
setpriv --reuid=munge --regid=munge --init-groups \
  munged --foreground --socket="$work/munge/munge.sock" --key-file="$work/munge/munge.key" \
  --log-file="$work/munge/munged.log" --pid-file="$work/munge/munged.pid" \
  --seed-file="$work/munge/munged.seed" >"$work/munge/stdout" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$work/munge/munge.sock" ] && break; sleep 0.05; done
[ -S "$work/munge/munge.sock" ] || { echo "munged did not make its socket" >&2; cat "$work/munge/stdout" >&2; exit 1; }

# --- slurm.conf: this host as controller and only node, free ports.
host=$(hostname -s)
getent hosts "$host" >/dev/null || skip "this host's short name '$host' does not resolve"
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("", 0))
print(*(x.getsockname()[1] for x in s))')
node=$(slurmd -C | head -n 1)
case "$node" in NodeName=*) ;; *) echo "slurmd -C printed '$node'" >&2; exit 1 ;; esac
node=$(printf '%s\n' "$node" | sed "s/^NodeName=[^ ]*/NodeName=$host/")
mkdir -p "$work/state" "$work/spool"
cat >"$SLURM_CONF" <<EOF
ClusterName=ingottest
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/munge.sock
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
JobCompType=jobcomp/filetxt
JobCompLoc=$work/jobcomp.txt
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
$node State=UNKNOWN
PartitionName=tune Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

slurmctld -D -f "$SLURM_CONF" >"$work/slurmctld.stdout" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$work/slurmd.stdout" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 200); do
  state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
  [ "$state" = idle ] && break
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || { echo "a daemon (pid $pid) exited while starting" >&2; exit 1; }
  done
  sleep 0.1
done
[ "$state" = idle ] || { echo "node $host is '$state', not idle, 20 s after start" >&2; exit 1; }
echo "cluster up: munged ${pids[0]}, slurmctld ${pids[1]} (port $ctld_port), slurmd ${pids[2]} (port $slurmd_port)"

# --- the 2-shard tuning.
t0=$SECONDS
bash "$script" "$model" -o "$work/merged.jsonl" --shards 2 --ingot "$ingot" --poll 1 --timeout 150 \
  --work "$work/shards" -- "${model_flags[@]}" "${tune_flags[@]}"
echo "tuned in $((SECONDS - t0)) s"

# --- what an unsharded run covers (run here, not through Slurm), and the
# kernels that have a space to search (the tuner's tasks: workloads of more
# than one point over their templates).
"$ingot" tune "$model" "${model_flags[@]}" -o "$work/whole.jsonl" -q "${tune_flags[@]}"
"$ingot" compile "$model" "${model_flags[@]}" -o "$work/model.ingot" -q --dump-space "$work/space.json"
python3 - "$work" <<'EOF'
import json, math, sys
work = sys.argv[1]

def read_log(path):
    records = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except ValueError as e:
                sys.exit(f"{path}:{n}: not JSON ({e}): {line[:80]!r}")
            if not isinstance(r, dict) or not isinstance(r.get("workload"), str):
                sys.exit(f"{path}:{n}: a record without a \"workload\": {line[:80]!r}")
            records.append(r)
    return records

def canon(r):
    return json.dumps(r, sort_keys=True)

shards = [read_log(f"{work}/shards/shard-{i}.jsonl") for i in range(2)]
merged = read_log(f"{work}/merged.jsonl")
sets = [{r["workload"] for r in s} for s in shards]
for i, s in enumerate(sets):
    if not s:
        sys.exit(f"shard {i} recorded nothing")
    print(f"shard {i}: {len(shards[i])} records, {len(s)} workloads")
if sets[0] & sets[1]:
    sys.exit(f"both shards tuned {sorted(sets[0] & sets[1])}")
whole = {r["workload"] for r in read_log(f"{work}/whole.jsonl")}
if sets[0] | sets[1] != whole:
    sys.exit(f"the shards tuned {sorted(sets[0] | sets[1])}, an unsharded run {sorted(whole)}")
points = {}
for k in json.load(open(f"{work}/space.json")):
    points[k["workload"]] = points.get(k["workload"], 0) + math.prod(len(v) for v in k["space"].values())
searchable = {w for w, p in points.items() if p >= 2}
if whole != searchable:
    sys.exit(f"an unsharded run tuned {sorted(whole)}, the kernels with a space are {sorted(searchable)}")
if {canon(r) for r in merged} != {canon(r) for s in shards for r in s} or len(merged) != sum(map(len, shards)):
    sys.exit("the merged log is not the union of the shards' records")
print(f"merged: {len(merged)} records; the shards' workloads are disjoint and together "
      f"the {len(whole)} of an unsharded run")
EOF
"$ingot" compile "$model" "${model_flags[@]}" -o "$work/tuned.ingot" --tuning-log "$work/merged.jsonl" >"$work/tuned.txt"
grep -E "^tuning log: ([0-9]+) of \1 kernels tuned" "$work/tuned.txt" ||
  { echo "the merged log does not tune every kernel:" >&2; cat "$work/tuned.txt" >&2; exit 1; }

# --- shards that fail, behind a wrapper around the same ingot: of 3 shards,
# 0 runs the real tuner, 1 exits 3, 2 is killed with its job script (as a
# node failure or a time limit would), so it leaves no exit status.
cat >"$work/flaky-ingot" <<EOF
#!/usr/bin/env bash
for a in "\$@"; do
  [ "\$a" = 1/3 ] && { echo "flaky-ingot: shard 1 fails on purpose" >&2; exit 3; }
  [ "\$a" = 2/3 ] && { echo "flaky-ingot: shard 2 is killed" >&2; kill -KILL \$PPID; sleep 5; exit 0; }
done
exec $(printf '%q' "$ingot") "\$@"
EOF
chmod +x "$work/flaky-ingot"
set +e
bash "$script" "$model" -o "$work/flaky.jsonl" --shards 3 --ingot "$work/flaky-ingot" --poll 1 --timeout 150 \
  --work "$work/flaky" -- "${model_flags[@]}" "${tune_flags[@]}" 2>"$work/flaky.err"
rc=$?
set -e
cat "$work/flaky.err"
failed() {
  echo "with failing shards: $*" >&2
  exit 1
}
[ "$rc" = 1 ] || failed "tune-slurm.sh exited $rc, not 1"
grep -q "shard 1 of 3 .* exited with status 3" "$work/flaky.err" || failed "shard 1 and its status not named"
grep -q "shard 1 fails on purpose" "$work/flaky.err" || failed "shard 1's output not shown"
grep -q "shard 2 of 3 .* did not finish" "$work/flaky.err" || failed "shard 2 not named as unfinished"
grep -q "2 of 3 shards failed; nothing merged" "$work/flaky.err" || failed "no summary line"
! grep -q "shard 0 of 3" "$work/flaky.err" || failed "shard 0, which succeeded, was blamed"
[ -s "$work/flaky/shard-0.jsonl" ] || failed "shard 0 left no log to resume from"
[ ! -e "$work/flaky.jsonl" ] || failed "a merged log was written"

# Run again on the same work folder with the real ingot: shard 0 resumes
# (its log already holds its share of the trials, so it adds nothing), 1 and
# 2 tune, and the merge covers what the 2-shard run did.
before=$(wc -l <"$work/flaky/shard-0.jsonl")
bash "$script" "$model" -o "$work/flaky.jsonl" --shards 3 --ingot "$ingot" --poll 1 --timeout 150 \
  --work "$work/flaky" -q -- "${model_flags[@]}" "${tune_flags[@]}"
[ "$(wc -l <"$work/flaky/shard-0.jsonl")" = "$before" ] || failed "shard 0 did not resume from its log"
grep -q "(${before} from the log)" "$work/flaky/shard-0.out" || failed "shard 0 does not say it resumed"
python3 -c '
import json, sys
a, b = ({json.loads(l)["workload"] for l in open(f)} for f in sys.argv[1:])
sys.exit(0 if a == b else f"3 shards after a resume: {sorted(a)}, 2 shards: {sorted(b)}")' \
  "$work/flaky.jsonl" "$work/merged.jsonl"

# --- a job that outlives --timeout is cancelled.
printf '#!/bin/sh\nsleep 120\n' >"$work/slow-ingot"
chmod +x "$work/slow-ingot"
set +e
bash "$script" "$model" -o "$work/slow.jsonl" -n 2 --ingot "$work/slow-ingot" --poll 1 --timeout 2 \
  --work "$work/slow" -q 2>"$work/slow.err"
rc=$?
set -e
cat "$work/slow.err"
[ "$rc" = 1 ] && grep -q "timed out after 2 s: cancelled job" "$work/slow.err" ||
  { echo "a job past --timeout: exit $rc, not cancelled" >&2; exit 1; }
for _ in $(seq 50); do [ -z "$(squeue -h)" ] && break; sleep 0.2; done
[ -z "$(squeue -h)" ] || { echo "jobs left after the time-out: $(squeue -h)" >&2; exit 1; }
echo "slurm: 2-shard tuning merged and checked; failing and killed shards named, then resumed; time-out cancels"
