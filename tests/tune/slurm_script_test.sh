#!/usr/bin/env bash
# tune_slurm_script SOURCE INGOT WORK: scripts/tune-slurm.sh's command line,
# without a cluster: --help, each wrong argument gets one error naming it and
# exit 2, a missing model or ingot exit 1, and an sbatch that refuses the job
# (a stand-in on PATH) is reported with sbatch's own message. The real
# submission is tune_slurm_cluster's.
set -uo pipefail
src=$1 ingot=$2 work=$3
script=$src/scripts/tune-slurm.sh
model=$src/models/digits/model.onnx
rm -rf "$work" && mkdir -p "$work/bin"
fails=0 checks=0

# expect RC PATTERN ARGS...: the script exits RC and its stdout+stderr match PATTERN.
expect() {
  local want=$1 pattern=$2 out rc
  shift 2
  out=$(bash "$script" "$@" 2>&1)
  rc=$?
  checks=$((checks + 1))
  if [ "$rc" != "$want" ] || ! grep -Eq -- "$pattern" <<<"$out"; then
    echo "FAIL: tune-slurm.sh $* -> exit $rc (want $want), output:" >&2
    sed 's/^/    /' <<<"$out" >&2
    echo "    (wanted a line matching: $pattern)" >&2
    fails=$((fails + 1))
  fi
}

expect 0 '^usage: tune-slurm.sh MODEL.onnx -o OUT.jsonl' --help
expect 0 'JOB_COMPLETION_INDEX|--array' -h
expect 2 'no model given' -o "$work/out.jsonl"
expect 2 'no output given: add -o OUT.jsonl' "$model"
expect 2 "option '-o' needs a value" "$model" -o
expect 2 "unknown option '--trials'" "$model" -o "$work/out.jsonl" --trials 8
expect 2 "one model at a time \('b.onnx' is a second\)" a.onnx b.onnx -o x.jsonl
expect 2 "--shards must be a whole number from 1 to 256, not '0'" "$model" -o x.jsonl --shards 0
expect 2 "--shards must be a whole number from 1 to 256, not '257'" "$model" -o x.jsonl -n 257
expect 2 "--shards must be a whole number from 1 to 256, not 'two'" "$model" -o x.jsonl --shards=two
expect 2 "--shards must be a whole number from 1 to 256, not '99999999999999999999'" "$model" -o x.jsonl \
  -n 99999999999999999999
expect 2 "--poll must be a whole number of seconds >= 1, not '0.5'" "$model" -o x.jsonl --poll 0.5
expect 2 "--timeout must be a whole number of seconds >= 1, not '-3'" "$model" -o x.jsonl --timeout=-3
expect 2 "--job-name may hold only" "$model" -o x.jsonl --job-name 'a b'
expect 2 "option '--quiet' takes no value" "$model" -o x.jsonl --quiet=1
expect 2 "'--shard' after '--': the script sets" "$model" -o x.jsonl -- --shard 1/2
expect 2 "'-o' after '--': the script sets" "$model" -o x.jsonl -- --trials 8 -o y.jsonl
expect 1 "model '$work/none.onnx' is not a file" "$work/none.onnx" -o "$work/out.jsonl"
expect 1 "output folder '$work/nowhere' does not exist" "$model" -o "$work/nowhere/out.jsonl"
expect 1 "ingot binary '$work/no-ingot' is not an executable file" "$model" -o "$work/out.jsonl" \
  --ingot "$work/no-ingot"

# Slurm's client commands as stand-ins: sbatch refuses the partition.
cat >"$work/bin/sbatch" <<'EOF'
#!/bin/sh
echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2
exit 1
EOF
printf '#!/bin/sh\nexit 0\n' >"$work/bin/squeue"
cp "$work/bin/squeue" "$work/bin/scancel"
chmod +x "$work/bin/"*
PATH=$work/bin:$PATH expect 1 "sbatch failed: sbatch: error: Batch job submission failed: Invalid partition name" \
  "$model" -o "$work/out.jsonl" --ingot "$ingot" -p nosuch -w "$work/shards" -n 3
test -x "$work/shards/tune-job.sh" || { echo "FAIL: no job script in the work folder" >&2; fails=$((fails + 1)); }
grep -q -- '--shard "$i/3"' "$work/shards/tune-job.sh" ||
  { echo "FAIL: the job script does not run shard i of 3" >&2; fails=$((fails + 1)); }

# A work folder that holds a shard beyond N is refused, not half merged.
touch "$work/shards/shard-5.jsonl"
PATH=$work/bin:$PATH expect 1 "holds '$work/shards/shard-5.jsonl', which is not one of 3 shards" \
  "$model" -o "$work/out.jsonl" --ingot "$ingot" -w "$work/shards" -n 3


# The Kubernetes manifests (scripts/k8s) cannot run here: check that they
# parse and agree with each other, and run their shell lines with an `ingot`
# that prints its arguments.
if python3 -c 'import yaml' 2>/dev/null; then
  checks=$((checks + 1))
  printf '#!/bin/sh\necho "ingot $*"\n' >"$work/bin/ingot"
  chmod +x "$work/bin/ingot"
  if ! PATH=$work/bin:$PATH python3 - "$src/scripts/k8s" <<'PY'
import os, subprocess, sys, yaml
folder = sys.argv[1]

def job(name):
    docs = list(yaml.safe_load_all(open(os.path.join(folder, name))))
    assert len(docs) == 1 and docs[0]["kind"] == "Job", f"{name}: not one Job"
    spec = docs[0]["spec"]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never", f"{name}: restartPolicy"
    (c,) = pod["containers"]
    env = {e["name"]: e["value"] for e in c["env"]}
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
    assert mounts == {"shards": "/shards"}, f"{name}: mounts {mounts}"
    return spec, c, env, claims

def run(c, env):
    out = subprocess.run(c["command"] + c["args"], env=dict(os.environ, **env),
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()

tune, tc, tenv, tclaims = job("tune-indexed-job.yaml")
merge, mc, menv, mclaims = job("tune-merge-job.yaml")
n = int(tenv["SHARDS"])
assert tune["completionMode"] == "Indexed", "not an Indexed Job"
assert tune["completions"] == tune["parallelism"] == n, "completions, parallelism and SHARDS differ"
assert int(menv["SHARDS"]) == n, "the merge Job's SHARDS differs"
assert tclaims == mclaims, f"the Jobs share no volume: {tclaims} {mclaims}"
for i in (0, n - 1):
    line = run(tc, dict(tenv, JOB_COMPLETION_INDEX=str(i)))
    want = f"ingot tune /shards/model.onnx -o /shards/shard-{i}.jsonl --shard {i}/{n}"
    assert line.startswith(want), f"index {i} runs '{line}', not '{want} ...'"
line = run(mc, menv)
want = "ingot log merge " + " ".join(f"/shards/shard-{i}.jsonl" for i in range(n)) + " -o /shards/merged.jsonl"
assert line == want, f"the merge Job runs '{line}', not '{want}'"
print(f"k8s: an Indexed Job of {n} shards and its merge agree")
PY
  then
    echo "FAIL: scripts/k8s manifests" >&2
    fails=$((fails + 1))
  fi
else
  echo "python3 has no yaml module: the Kubernetes manifests are not checked"
fi

echo "tune-slurm.sh: $((checks - fails)) of $checks checks passed"
[ "$fails" = 0 ]
