#!/usr/bin/env python3
"""`ingot tune` and the logs it writes, as a user meets them.

  tune_test.py --ingot BUILD/ingot --model resnet18_small.onnx --work DIR CASE

CASE is one of:
  faults   candidates that crash, hang, compute a wrong value or fail to
           build (planted with INGOT_TUNE_INJECT) are error records of their
           kind; the run goes on and ends with exit 0
  resume   a run killed with SIGKILL, run again with the same command,
           continues: the budget counts what the log holds, nothing is
           measured twice, the first run's lines stay as they were; a line
           cut off by the kill is dropped with a note
  badlog   a malformed line in the log: one error naming the file and the
           line, exit 1, the log untouched
  apply    compile with the tuned log: 'tuning log: K of M kernels tuned'
           with K > 0; the same records with another CPU in their
           fingerprint, or compiled for another target, are never applied
  shards   --shard 0/2 and 1/2 tune disjoint sets of workloads whose union
           is what an unsharded run tunes; 'ingot log merge' joins them
  flags    bad command lines: exit 2, one 'ingot: error:' line
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def ingot(*args, env=None, timeout=600):
    e = dict(os.environ)
    e.pop("INGOT_TUNE_INJECT", None)
    if env:
        e.update(env)
    return subprocess.run([ARGS.ingot, *args], capture_output=True, text=True, timeout=timeout, env=e)


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def tune(log, *extra, env=None):
    # the limit of one measurement: what the planted hang costs; generous
    # enough that a good candidate on a loaded machine stays inside it
    return ingot("tune", ARGS.model, "-o", log, "--timeout", "10", *extra, env=env)


def knob_key(r):
    return (r["workload"], r["template"], json.dumps(r["knobs"], sort_keys=True))


def case_faults():
    log = os.path.join(ARGS.work, "faults.jsonl")
    # 26 tasks: the defaults first, then the candidates; the first four
    # candidates built get the faults
    p = tune(log, "--trials", "40", "--jobs", "2", env={"INGOT_TUNE_INJECT": "crash=1,hang=2,wrong=3,compile=4"})
    if not check(p.returncode == 0, f"tune with faults: exit {p.returncode}: {p.stderr[-600:]}"):
        return
    rs = records(log)
    check(len(rs) == 40, f"40 records, got {len(rs)}")
    errors = [r["error"] for r in rs if "error" in r]
    for kind, text in [("crash", "signal 11"), ("timeout", "timed out"), ("wrong", "differs from the reference"),
                       ("compile", "planted")]:
        hit = [e for e in errors if e.startswith(kind + ":") and text in e]
        check(len(hit) == 1, f"one '{kind}' error record mentioning {text!r}: {errors}")
    # a loaded machine may time out a good candidate too; nothing else fails
    check(all(e.startswith(("crash:", "wrong:", "compile:", "timeout:")) for e in errors) and
          sum(e.startswith(("crash:", "wrong:", "compile:")) for e in errors) == 3,
          f"only the planted failures (and time-outs): {errors}")
    ok_after = [r for r in rs[26:] if "error" not in r]
    check(len(ok_after) >= 4, f"the run went on after the failures: {len(ok_after)} good candidate records")
    check(f"{len(errors)} failed" in p.stdout, f"the summary counts the failures: {p.stdout[:300]}")
    for r in rs:
        fp = r.get("fingerprint", {})
        check(fp.get("target") == r["target"] and fp.get("log_version") == 1 and fp.get("ingot") and
              "cpu" in fp and "cpu_features" in fp, f"every record has a full fingerprint: {fp}")
        if "error" not in r:
            check(r["time_ms"] > 0 and len(r["ratio"]) == 3, f"a measured record has a time and a ratio: {r}")
    stats = ingot("log", "stats", log, "--json")
    check(stats.returncode == 0 and json.loads(stats.stdout)["workloads"], f"log stats: {stats.stderr}")
    bundle = os.path.join(ARGS.work, "faults.ingot")
    c = ingot("compile", ARGS.model, "-o", bundle, "--tuning-log", log)
    check(c.returncode == 0, f"compile with a log holding error records: {c.stderr}")


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def case_resume():
    log = os.path.join(ARGS.work, "resume.jsonl")
    args = [ARGS.ingot, "tune", ARGS.model, "-o", log, "--trials", "60", "-q"]
    env = dict(os.environ)
    env.pop("INGOT_TUNE_INJECT", None)
    first = subprocess.Popen(args, env=env)
    deadline = time.time() + 300
    while count_lines(log) < 34 and first.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    killed = first.poll() is None
    first.send_signal(signal.SIGKILL)
    first.wait()
    check(killed, "the first run was still running when killed")
    with open(log, "rb") as f:
        before = f.read()
    # as if the kill had come in the middle of a line
    with open(log, "ab") as f:
        f.write(b'{"version":1,"workload":"cut off')
    n_before = before.count(b"\n")
    p = ingot("tune", ARGS.model, "-o", log, "--trials", "60")
    if not check(p.returncode == 0, f"resumed run: exit {p.returncode}: {p.stderr[-600:]}"):
        return
    check(f"dropped the incomplete line {n_before + 1}" in p.stderr, f"the cut-off line is dropped with a note: "
          f"{p.stderr[-400:]!r}")
    m = re.search(r"(\d+) trials \((\d+) from the log\)", p.stdout)
    check(m and int(m.group(1)) == 60 and int(m.group(2)) == n_before,
          f"the budget counts the {n_before} records of the first run: {p.stdout[:300]}")
    with open(log, "rb") as f:
        after = f.read()
    check(after.startswith(before), "the first run's lines are kept as they were")
    rs = records(log)
    check(len(rs) == 60, f"60 records in all, got {len(rs)}")
    keys = [knob_key(r) for r in rs]
    check(len(set(keys)) == len(keys), "nothing was measured twice")
    defaults = [r["workload"] for r in rs if r.get("default")]
    check(len(defaults) == len(set(defaults)) and set(defaults) == {r["workload"] for r in rs},
          f"each workload's default was measured once ({len(defaults)} defaults, "
          f"{len({r['workload'] for r in rs})} workloads)")
    model = os.path.splitext(log)[0] + ".costmodel.ubj"
    check(os.path.exists(model), f"the cost model is saved beside the log: {model}")
    # a third run with the budget spent measures nothing and says so
    again = ingot("tune", ARGS.model, "-o", log, "--trials", "60")
    check(again.returncode == 0 and count_lines(log) == 60 and "60 trials (60 from the log)" in again.stdout,
          f"a run with the budget spent adds nothing: {again.stdout[:200]} {again.stderr[-200:]}")


def case_badlog():
    log = os.path.join(ARGS.work, "bad.jsonl")
    good = ('{"version":1,"workload":"w","target":"llvm x86-64-v4","template":"injective","knobs":{},'
            '"time_ms":1.0}\n')
    text = good + '{"version":1,"workload": oops}\n'
    with open(log, "w") as f:
        f.write(text)
    p = tune(log, "--trials", "30")
    lines = p.stderr.splitlines()
    check(p.returncode == 1 and len(lines) == 1 and lines[0].startswith("ingot: error: ") and
          f"'{log}' line 2" in lines[0], f"a malformed line: exit {p.returncode}, {p.stderr!r}")
    with open(log) as f:
        check(f.read() == text, "the log is left as it was")
    # the same for compile and for log stats
    c = ingot("compile", ARGS.model, "-o", os.path.join(ARGS.work, "bad.ingot"), "--tuning-log", log)
    check(c.returncode == 1 and "line 2" in c.stderr and not os.path.exists(os.path.join(ARGS.work, "bad.ingot")),
          f"compile with the malformed log: {c.stderr!r}")
    s = ingot("log", "stats", log)
    check(s.returncode == 1 and "line 2" in s.stderr, f"log stats of the malformed log: {s.stderr!r}")


def tuned_count(out):
    m = re.search(r"tuning log: (\d+) of (\d+) kernels tuned", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def case_apply():
    log = os.path.join(ARGS.work, "apply.jsonl")
    p = tune(log, "--trials", "50", "-q")
    if not check(p.returncode == 0, f"tune: {p.stderr[-400:]}"):
        return
    bundle = os.path.join(ARGS.work, "apply.ingot")
    c = ingot("compile", ARGS.model, "-o", bundle, "--tuning-log", log)
    k = tuned_count(c.stdout + c.stderr)
    check(c.returncode == 0 and k and k[0] > 0, f"compile with the log tunes kernels: {c.stdout[-300:]}")
    # a candidate the tuner did not confirm is logged at its best's time: the
    # tie goes to the record marked best, in `log best` and in compile
    rs = records(log)
    best = (next((r for r in rs if r.get("best") and not r.get("default")), None) or
            next(r for r in rs if r.get("best") and any(o["workload"] == r["workload"] and not o.get("best")
                                                       and "error" not in o for o in rs)))
    other = next((r for r in rs if r["workload"] == best["workload"] and "error" not in r and not r.get("best")
                  and r["knobs"] != best["knobs"]), None)
    if check(other is not None, f"a non-best record of {best['workload']}"):
        tie = dict(other, time_ms=best["time_ms"])
        tied = os.path.join(ARGS.work, "tied.jsonl")
        with open(tied, "w") as f:
            f.write(json.dumps(tie) + "\n" + json.dumps(best) + "\n")
        out = os.path.join(ARGS.work, "tied_best.jsonl")
        b = ingot("log", "best", tied, "-o", out)
        picked = records(out) if b.returncode == 0 else []
        check(len(picked) == 1 and picked[0].get("best") and picked[0]["knobs"] == best["knobs"],
              f"log best takes the record marked best on a tie: {picked}")
    # the same records from another CPU: none applies
    other = os.path.join(ARGS.work, "apply_other_cpu.jsonl")
    with open(other, "w") as f:
        for r in records(log):
            r["fingerprint"]["cpu"] = "Some Other CPU (test)"
            f.write(json.dumps(r) + "\n")
    c = ingot("compile", ARGS.model, "-o", bundle, "--tuning-log", other, "-v")
    k = tuned_count(c.stdout + c.stderr)
    check(c.returncode == 0 and k and k[0] == 0 and "other CPU 'Some Other CPU (test)'" in c.stdout + c.stderr,
          f"records of another CPU are never applied: {(c.stdout + c.stderr)[-300:]}")
    # compiled for another target: none applies
    target = records(log)[0]["target"]
    other_target = "x86-64-v3" if "v4" in target else "x86-64"
    c = ingot("compile", ARGS.model, "-o", bundle, "--tuning-log", log, "--target", other_target)
    k = tuned_count(c.stdout + c.stderr)
    check(c.returncode == 0 and k and k[0] == 0, f"records of target {target} are not applied to {other_target}: "
          f"{(c.stdout + c.stderr)[-300:]}")
    # and tuning for that other target does not resume from them
    t = tune(log, "--trials", "30", "--target", other_target, "-q")
    check(t.returncode == 0, f"tune another target into the same log: {t.stderr[-300:]}")
    rs = records(log)
    check(sum(1 for r in rs if r["target"] != target) == 30, "the other target's run measured its own 30 records")


def case_shards():
    logs = []
    for i in range(2):
        log = os.path.join(ARGS.work, f"shard{i}.jsonl")
        p = tune(log, "--trials", "30", "--shard", f"{i}/2", "-q")
        if not check(p.returncode == 0, f"shard {i}/2: {p.stderr[-300:]}"):
            return
        logs.append(log)
    sets = [set(r["workload"] for r in records(l)) for l in logs]
    check(sets[0] and sets[1] and not (sets[0] & sets[1]), "the shards' workloads are disjoint")
    spaces = os.path.join(ARGS.work, "spaces.json")
    c = ingot("compile", ARGS.model, "-o", os.path.join(ARGS.work, "s.ingot"), "--dump-space", spaces)
    check(c.returncode == 0, f"dump-space: {c.stderr}")
    with open(spaces) as f:
        text = f.read()
    dumped = json.loads(text) if text.lstrip().startswith("[") else [json.loads(l) for l in text.splitlines() if l.strip()]
    everything = set(d["workload"] for d in dumped)
    check((sets[0] | sets[1]) <= everything and len(sets[0] | sets[1]) >= 20,
          f"the shards cover the model's workloads: {len(sets[0] | sets[1])} of {len(everything)}")
    merged = os.path.join(ARGS.work, "merged.jsonl")
    m = ingot("log", "merge", *logs, "-o", merged)
    check(m.returncode == 0 and len(records(merged)) == sum(len(records(l)) for l in logs),
          f"merge keeps every record: {m.stderr}")


def case_flags():
    log = os.path.join(ARGS.work, "flags.jsonl")
    for args, text in [(["--shard", "2/2"], "--shard"), (["--shard", "x"], "--shard"),
                       (["--search", "genetic"], "--search"), (["--trials", "0"], "--trials"),
                       (["--jobs", "100"], "--jobs"), (["--bogus"], "unknown option"),
                       (["--target", "x86-64", "--target", "x86-64-v3"], "one --target")]:
        p = ingot("tune", ARGS.model, "-o", log, *args)
        lines = p.stderr.splitlines()
        check(p.returncode == 2 and len(lines) == 1 and lines[0].startswith("ingot: error: ") and text in lines[0],
              f"{args}: exit {p.returncode}, {p.stderr!r}")
    p = ingot("tune", ARGS.model)
    check(p.returncode == 2 and "-o LOG" in p.stderr, f"no log: {p.stderr!r}")
    p = ingot("tune", os.path.join(ARGS.work, "missing.onnx"), "-o", log)
    check(p.returncode == 1 and len(p.stderr.splitlines()) == 1 and "missing.onnx" in p.stderr,
          f"a missing model: {p.stderr!r}")
    check(not os.path.exists(log), "failed runs leave no log behind")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("case", choices=["faults", "resume", "badlog", "apply", "shards", "flags"])
    ARGS = ap.parse_args()
    ARGS.work = os.path.join(ARGS.work, ARGS.case)
    shutil.rmtree(ARGS.work, ignore_errors=True)
    os.makedirs(ARGS.work)
    globals()["case_" + ARGS.case]()
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
