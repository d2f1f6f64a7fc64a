#!/usr/bin/env python3
"""Command-line behaviour of `ingot` that scripts rely on.

  cli_test.py --ingot BUILD/ingot --model models/digits/model.onnx --work DIR CASE

CASE is one of:
  flags     bad command lines: exit 2, exactly one 'ingot: error:' line
  inspect   `ingot inspect` (text and --json): JSON parses, has every key,
            arena_bytes >= arena_lower_bound_bytes > 0, inputs/outputs right
  corrupt   a corrupted bundle (any byte of the header and section table
            flipped, bytes flipped in the middle of every section, truncations,
            a byte appended) is refused by run and inspect: non-zero exit, one
            error line, no output file
  npy       bad inputs: a garbage .npy, a Fortran-order one, a shape or dtype
            mismatch, an unknown input name: one error line that says what
  run       run with and without --output, random inputs, --bench, threads
  targets   --target with its options unquoted (--target cuda -arch=sm_90
            --target llvm -mcpu=x86-64-v3) as with them quoted, in compile and
            tune; unknown GPU architectures refused with what is accepted
  optforms  every subcommand takes --opt=value as well as --opt value (and
            -oVALUE): same results, same bundles
  badvalues a wrong option value is a usage error (exit 2, one line naming
            the option) in every subcommand; --threads: the limit in --help,
            the parser's and the runtime's are one number
  foreign   inspect shows bundles whose only variant is for another machine
            (aarch64 code; cuda code, skipped with exit 77 where this build
            cannot compile CUDA), and the signer's key id
  indices   out-of-range run-time indices of Gather and ScatterElements are
            clamped, as the README says
  killed    a compile stopped by SIGTERM, SIGINT or SIGHUP (in the C compiler,
            and at random moments) leaves no temporary bundle or folder in
            the output folder or in $TMPDIR, and dies of that signal
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def ingot(*args, timeout=300):
    return subprocess.run([ARGS.ingot, *args], capture_output=True, text=True, timeout=timeout)


def expect_error(p, what, code=None, contains=()):
    lines = p.stderr.splitlines()
    ok = check(p.returncode != 0 and p.returncode < 128 and p.returncode > 0,
               f"{what}: exit {p.returncode} (want a failure exit, not a crash)")
    if code is not None:
        ok = check(p.returncode == code, f"{what}: exit {p.returncode}, want {code}") and ok
    ok = check(len(lines) == 1 and lines[0].startswith("ingot: error: "),
               f"{what}: stderr is not exactly one 'ingot: error:' line: {p.stderr!r}") and ok
    for c in contains:
        ok = check(c in p.stderr, f"{what}: the message lacks {c!r}: {p.stderr!r}") and ok
    return ok


def compile_digits(batch=1):
    bundle = os.path.join(ARGS.work, f"digits_b{batch}.ingot")
    if not os.path.exists(bundle):
        p = ingot("compile", ARGS.model, "-o", bundle, "--input-shape", f"input=1x1x8x8"
                  if batch == 1 else f"input={batch}x1x8x8")
        if not check(p.returncode == 0, f"compile digits: {p.stderr.strip()}"):
            raise SystemExit(finish())
    return bundle


def case_flags():
    expect_error(ingot(), "no command", 2)
    expect_error(ingot("frobnicate"), "unknown command", 2, ["frobnicate"])
    expect_error(ingot("--frobnicate"), "unknown top-level option", 2)
    for sub in ["compile", "run", "inspect"]:
        expect_error(ingot(sub, "--no-such-flag", "x"), f"{sub} unknown flag", 2,
                     ["--no-such-flag"])
        p = ingot(sub, "--help")
        check(p.returncode == 0 and "usage: ingot " + sub in p.stdout and not p.stderr,
              f"{sub} --help")
    p = ingot("--help")
    check(p.returncode == 0 and "compile" in p.stdout and "inspect" in p.stdout, "ingot --help")
    p = ingot("--version")
    check(p.returncode == 0 and p.stdout.startswith("ingot "), "ingot --version")
    expect_error(ingot("run"), "run without a bundle", 2)
    expect_error(ingot("inspect"), "inspect without a bundle", 2)
    expect_error(ingot("run", "a.ingot", "b.ingot"), "run with two bundles", 2)
    for flag, value in [("--threads", "0"), ("--threads", "two"), ("--bench", "-1"),
                        ("--bench", "1x"), ("--seed", "-5"), ("--threads", "")]:
        expect_error(ingot("run", "a.ingot", flag, value), f"run {flag} {value!r}", 2, [flag])
    expect_error(ingot("run", "a.ingot", "--threads"), "run --threads without a value", 2)
    expect_error(ingot("run", "a.ingot", "--output"), "run --output without a value", 2)
    missing = os.path.join(ARGS.work, "missing.ingot")
    expect_error(ingot("run", missing), "run on a missing bundle", 1, ["missing.ingot"])
    expect_error(ingot("inspect", missing), "inspect on a missing bundle", 1, ["missing.ingot"])
    expect_error(ingot("compile", os.path.join(ARGS.work, "missing.onnx"), "-o",
                       os.path.join(ARGS.work, "x.ingot")), "compile a missing model", 1)
    check(not os.path.exists(os.path.join(ARGS.work, "x.ingot")), "compile failure left a file")


def case_inspect():
    bundle = compile_digits(1)
    p = ingot("inspect", bundle, "--json")
    if not check(p.returncode == 0, f"inspect --json: {p.stderr}"):
        return
    try:
        info = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        check(False, f"inspect --json output does not parse: {e}")
        return
    for key in ["arena_bytes", "arena_lower_bound_bytes", "inputs", "outputs", "targets",
                "sections", "format_version"]:
        check(key in info, f"inspect --json lacks '{key}'")
    if failures:
        return
    check(info["arena_bytes"] >= info["arena_lower_bound_bytes"] > 0,
          f"arena {info['arena_bytes']} vs lower bound {info['arena_lower_bound_bytes']}")
    check(info["inputs"] == [{"name": "input", "dtype": "float32", "shape": [1, 1, 8, 8]}],
          f"inputs: {info['inputs']}")
    check(info["outputs"] == [{"name": "probabilities", "dtype": "float32", "shape": [1, 10]}],
          f"outputs: {info['outputs']}")
    check(len(info["targets"]) >= 1, "no targets")
    check(len(info.get("variants", [])) == len(info["targets"]), f"variants: {info.get('variants')}")
    for v in info.get("variants", []):
        check(v["loader"] == "cpu-elf" and v["target"] in info["targets"] and v["launch"] == "kernel only"
              and info["sections"][v["weights_section"]]["kind"] == "weights"
              and info["sections"][v["code_section"]]["kind"] == "code", f"variant {v}")
    kinds = [s["kind"] for s in info["sections"]]
    for kind in ["manifest", "weights", "plan", "code"]:
        check(kind in kinds, f"no {kind} section in {kinds}")
    size = os.path.getsize(bundle)
    for s in info["sections"]:
        check(s["offset"] + s["stored_bytes"] <= size and s["offset"] % 64 == 0,
              f"section {s} out of the file")
    p = ingot("inspect", bundle)
    check(p.returncode == 0 and "probabilities" in p.stdout and "arena" in p.stdout,
          f"inspect text: {p.stdout} {p.stderr}")
    # Metadata (API 0.4): what the bundle was made from, in both forms.
    md = info.get("metadata")
    if check(isinstance(md, dict), f"inspect --json metadata: {md!r}"):
        with open(ARGS.model, "rb") as f:
            want_hash = hashlib.sha256(f.read()).hexdigest()
        check(md.get("source_sha256") == want_hash, f"source_sha256 {md.get('source_sha256')} != {want_hash}")
        check(md.get("source") == os.path.basename(ARGS.model), f"source {md.get('source')}")
        check(md.get("name") == "digits_mlp" and md.get("producer") == "ingot-make_digits"
              and md.get("model_version") == "0", f"name, producer, version: {md}")
        flags = md.get("compile_flags", "")
        check("--input-shape input=1x1x8x8" in flags and "--target" in flags and "--weights auto" in flags
              and ARGS.work not in flags, f"compile_flags {flags!r}")
        check(md.get("compiler", "").startswith("ingot 0."), f"compiler {md.get('compiler')}")
        check(list(md) == sorted(md), f"metadata keys not sorted: {list(md)}")
    check("\nmetadata:\n" in p.stdout and "source_sha256" in p.stdout and "digits_mlp" in p.stdout,
          f"inspect text shows no metadata: {p.stdout}")
    # A bundle written before 0.4 (the fuzz corpus keeps some): no metadata, shown as such.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(ARGS.model))))
    old = os.path.join(root, "tests", "fuzz", "corpus", "bundle", "digits.ingot")
    if os.path.exists(old):
        p_old = ingot("inspect", old, "--json")
        check(p_old.returncode == 0 and json.loads(p_old.stdout).get("metadata") == {},
              f"inspect --json of a bundle without metadata: {p_old.stderr}")
        p_old = ingot("inspect", old)
        check(p_old.returncode == 0 and "metadata: none" in p_old.stdout, f"inspect text without metadata: {p_old.stdout}")
    # Byte-reproducible with metadata: the same compile again gives the same bytes.
    again = os.path.join(ARGS.work, "digits_b1_again.ingot")
    q = ingot("compile", ARGS.model, "-o", again, "--input-shape", "input=1x1x8x8")
    if check(q.returncode == 0, f"second compile: {q.stderr}"):
        with open(bundle, "rb") as f1, open(again, "rb") as f2:
            check(f1.read() == f2.read(), "two compiles of the same model differ")


def case_corrupt():
    bundle = compile_digits(1)
    p = ingot("inspect", bundle, "--json")
    if not check(p.returncode == 0, f"inspect of the good bundle: {p.stderr}"):
        return
    info = json.loads(p.stdout)
    blob = open(bundle, "rb").read()
    positions = {"magic": 0, "version": 8, "file_size": 16, "section_count": 24,
                 "table_crc": 32, "table": 64 + 8}
    for i, s in enumerate(info["sections"]):
        if s["stored_bytes"] > 0:
            positions[f"section{i}_{s['kind']}_middle"] = s["offset"] + s["stored_bytes"] // 2
            positions[f"section{i}_{s['kind']}_first"] = s["offset"]
    variants = {}
    for name, pos in positions.items():
        b = bytearray(blob)
        b[pos] ^= 0x5A
        variants["flip_" + name] = bytes(b)
    mid = len(blob) // 2
    if any(s["offset"] <= mid < s["offset"] + s["stored_bytes"] for s in info["sections"]):
        b = bytearray(blob)  # (alignment padding between sections carries no data)
        b[mid] ^= 0xFF
        variants["flip_file_middle"] = bytes(b)
    for frac in [0.0, 0.01, 0.5, 0.99]:
        variants[f"truncate_{frac}"] = blob[:int(len(blob) * frac)]
    variants["truncate_last_byte"] = blob[:-1]
    variants["appended_byte"] = blob + b"\0"
    # Every byte of the header and the section table is covered by a checksum.
    table_end = 64 + 72 * len(info["sections"])  # sizeof(ingot_section_entry_t) == 72
    for pos in range(table_end):
        b = bytearray(blob)
        b[pos] ^= 0x01
        path = os.path.join(ARGS.work, "corrupt_header_byte.ingot")
        with open(path, "wb") as f:
            f.write(b)
        p = ingot("inspect", path)
        if p.returncode == 0 or len(p.stderr.splitlines()) != 1 or p.returncode >= 128:
            check(False, f"header/table byte {pos} flipped: exit {p.returncode}, {p.stderr!r}")
    for name, data in variants.items():
        path = os.path.join(ARGS.work, f"corrupt_{name}.ingot")
        with open(path, "wb") as f:
            f.write(data)
        out = os.path.join(ARGS.work, f"corrupt_{name}.npz")
        expect_error(ingot("run", path, "--output", out), f"run on {name}", 1, [path])
        check(not os.path.exists(out), f"run on {name} left an output file")
        expect_error(ingot("inspect", path), f"inspect on {name}", 1, [path])


def case_npy():
    bundle = compile_digits(1)
    w = ARGS.work
    garbage = os.path.join(w, "garbage.npy")
    with open(garbage, "wb") as f:
        f.write(b"this is not a numpy file at all")
    out = os.path.join(w, "npy_out.npz")
    expect_error(ingot("run", bundle, "--input", f"input={garbage}", "--output", out),
                 "garbage .npy", 1, ["garbage.npy", "input"])
    fortran = os.path.join(w, "fortran.npy")
    np.save(fortran, np.asfortranarray(np.zeros((1, 1, 8, 8), np.float32).transpose(3, 2, 1, 0)))
    expect_error(ingot("run", bundle, "--input", f"input={fortran}", "--output", out),
                 "Fortran-order .npy", 1, ["fortran.npy", "Fortran"])
    wrong_shape = os.path.join(w, "wrong_shape.npy")
    np.save(wrong_shape, np.zeros((2, 1, 8, 8), np.float32))
    expect_error(ingot("run", bundle, "--input", f"input={wrong_shape}", "--output", out),
                 "shape mismatch", 1, ["input", "[1,1,8,8]", "[2,1,8,8]"])
    wrong_dtype = os.path.join(w, "wrong_dtype.npy")
    np.save(wrong_dtype, np.zeros((1, 1, 8, 8), np.int64))
    expect_error(ingot("run", bundle, "--input", f"input={wrong_dtype}", "--output", out),
                 "dtype mismatch", 1, ["float32", "int64"])
    good = os.path.join(w, "good.npy")
    np.save(good, np.zeros((1, 1, 8, 8), np.float32))
    expect_error(ingot("run", bundle, "--input", f"image={good}", "--output", out),
                 "unknown input name", 1, ["'image'", "'input'"])
    expect_error(ingot("run", bundle, "--input", good, "--input", good, "--output", out),
                 "too many positional inputs", 2)
    expect_error(ingot("run", bundle, "--input", f"input={w}/nope.npy", "--output", out),
                 "missing .npy", 1, ["nope.npy"])
    check(not os.path.exists(out), "a failed run left an output file")
    # A float64 file converts to the float32 input.
    f64 = os.path.join(w, "f64.npy")
    np.save(f64, np.full((1, 1, 8, 8), 0.5))
    p = ingot("run", bundle, "--input", f"input={f64}", "--output", out)
    check(p.returncode == 0 and os.path.exists(out), f"float64 input: {p.stderr}")


def case_run():
    bundle = compile_digits(1)
    w = ARGS.work
    x = np.load(os.path.join(os.path.dirname(ARGS.model), "test_x.npy"))[:1]
    one = os.path.join(w, "one.npy")
    np.save(one, x)
    out = os.path.join(w, "run_out.npz")
    for form in [["--input", f"input={one}"], ["--input", one], [f"--input={one}"]]:
        if os.path.exists(out):
            os.remove(out)
        p = ingot("run", bundle, *form, "--output", out, "--threads", "2")
        if check(p.returncode == 0 and not p.stderr, f"run {form}: {p.stderr}"):
            with np.load(out) as z:
                check(z.files == ["probabilities"], f"npz members {z.files}")
                y = z["probabilities"]
                check(y.shape == (1, 10) and y.dtype == np.float32, f"output {y.shape} {y.dtype}")
                check(abs(float(y.sum()) - 1.0) < 1e-4, f"softmax sums to {y.sum()}")
    p = ingot("run", bundle, "--input", f"input={one}")
    check(p.returncode == 0 and "probabilities: float32 [1,10]" in p.stdout and
          "argmax" in p.stdout, f"summary: {p.stdout!r} {p.stderr!r}")
    p1 = ingot("run", bundle, "--seed", "7")
    p2 = ingot("run", bundle, "--seed", "7")
    check(p1.returncode == 0 and p1.stdout == p2.stdout, "random inputs are deterministic")
    check("random" in p1.stderr and "ingot: note:" in p1.stderr, f"random note: {p1.stderr!r}")
    p = ingot("run", bundle, "--input", one, "--bench", "5", "--threads", "1")
    check(p.returncode == 0 and "latency: min " in p.stdout and "(5 runs, 1 threads)" in p.stdout,
          f"bench: {p.stdout!r} {p.stderr!r}")


def record(workload, target, knobs, time_ms=None, cpu=None, **extra):
    r = {"version": 1, "workload": workload, "target": target, "template": "contraction.direct", "knobs": knobs}
    if time_ms is not None:
        r["time_ms"] = time_ms
    if cpu is not None:
        r["fingerprint"] = {"target": target, "cpu": cpu, "cpu_features": "", "ingot": "0.1.0", "log_version": 1}
    r.update(extra)
    return json.dumps(r)


def write_log(name, lines):
    path = os.path.join(ARGS.work, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def dump_schedules(*extra):
    """Compiles digits with --dump-schedule: {(node): (workload, target, 'unroll=N')}, stdout."""
    bundle = os.path.join(ARGS.work, "tuned.ingot")
    p = ingot("compile", ARGS.model, "-o", bundle, "--input-shape", "input=1x1x8x8", "--dump-schedule", *extra)
    if not check(p.returncode == 0, f"compile {extra}: {p.stderr.strip()}"):
        raise SystemExit(finish())
    kernels = {}
    for line in p.stdout.splitlines():
        m = re.match(r"kernel \S+ \(node '([^']*)', target '([^']*)', workload '([^']*)'\): schedule '([^']*)' "
                     r"\(([^)]*)\)", line)
        if m:
            knobs = dict(kv.split("=") for kv in m.group(5).split())
            kernels[m.group(1)] = (m.group(3), m.group(2), m.group(4), knobs)
    return kernels, p.stdout


def case_tuning():
    kernels, out = dump_schedules()
    check("tuning log:" not in out, "no tuning-log line without --tuning-log")
    workload, target, template, knobs = kernels["fc1"]
    check(template == "contraction.direct" and knobs["unroll"] == "2", f"fc1's default schedule: {kernels['fc1']}")
    n = len(kernels)
    # Line 1 applies (no CPU named); lines 2-5 are faster but never apply:
    # another CPU model, another target (field and fingerprint), an error.
    log = write_log("tune.jsonl", [
        record(workload, target, {"unroll": 1}, 0.5, cpu=""),
        record(workload, target, {"unroll": 4}, 0.1, cpu="Some Other CPU Model (test)"),
        record(workload, "c -mcpu=x86-64", {"unroll": 4}, 0.1),
        json.dumps({**json.loads(record(workload, target, {"unroll": 4}, 0.1, cpu="")),
                    "fingerprint": {"target": "c", "cpu": ""}}),
        record(workload, target, {"unroll": 4}, error="crashed"),
        record(workload, target, {"no_such_knob": 4}, 0.05),
        record("a workload not in the model", target, {"unroll": 4}, 0.1),
    ])
    kernels, out = dump_schedules("--tuning-log", log)
    check(kernels["fc1"][3]["unroll"] == "1", f"the record for this target and any CPU applies: {kernels['fc1']}")
    check(f"tuning log: 1 of {n} kernels tuned, {n - 1} use defaults" in out, f"K of M line: {out}")
    check("record at line" not in out, "skipped records only with --verbose")
    lines = out.splitlines()
    check(lines.index(f"tuning log: 1 of {n} kernels tuned, {n - 1} use defaults") > lines.index(
        next(l for l in lines if l.startswith("  bundle:"))), "the K of M line follows the summary")
    kernels, out = dump_schedules("--tuning-log", log, "--verbose")
    for line, why in [(2, "other CPU 'Some Other CPU Model (test)'"), (3, "other target 'c -mcpu=x86-64'"),
                      (4, "other target 'c'"), (5, "an error record (crashed)"), (6, "knobs not in the kernel's space")]:
        check(any(l.startswith(f"  record at line {line} not applied") and why in l for l in out.splitlines()),
              f"--verbose says why line {line} was skipped ({why}): {out}")
    check("line 1 not applied" not in out and "line 7" not in out, f"--verbose lists only skipped records: {out}")
    # Only records for another CPU: nothing tuned.
    log2 = write_log("other_cpu.jsonl", [record(workload, target, {"unroll": 1}, 0.5, cpu="Some Other CPU Model")])
    kernels, out = dump_schedules("--tuning-log", log2)
    check(kernels["fc1"][3]["unroll"] == "2" and f"tuning log: 0 of {n} kernels tuned, {n} use defaults" in out,
          f"a record made on another CPU is never applied: {kernels['fc1']} {out}")
    p = ingot("compile", ARGS.model, "-o", os.path.join(ARGS.work, "q.ingot"), "--input-shape", "input=1x1x8x8",
              "--tuning-log", log, "-q")
    check(p.returncode == 0 and p.stdout == "", f"-q prints nothing: {p.stdout!r}")
    # A malformed line: one error naming the file and line.
    bad = write_log("bad.jsonl", [record(workload, target, {"unroll": 1}, 0.5), "", "{not json"])
    p = ingot("compile", ARGS.model, "-o", os.path.join(ARGS.work, "bad.ingot"), "--input-shape", "input=1x1x8x8",
              "--tuning-log", bad)
    expect_error(p, "compile with a malformed tuning log", 1, ["bad.jsonl", "line 3"])
    check(not os.path.exists(os.path.join(ARGS.work, "bad.ingot")), "no bundle from a malformed log")


def read_lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f.read().splitlines() if l.strip()]


def case_log():
    w1, w2, t1, t2 = "gemm f32 m1 n4 k4", "copy float32 n64", "llvm x86-64-v3", "c -mcpu=x86-64"
    a = write_log("a.jsonl", [
        record(w1, t1, {"unroll": 2}, 0.9, cpu="X", default=True),
        record(w1, t1, {"unroll": 4}, 0.3, cpu="X"),
        record(w1, t1, {"unroll": 8}, error="timed out"),
        record(w1, t2, {"unroll": 1}, 1.5),
        "",
        record(w2, t1, {"unroll": 1}, 0.2),
    ])
    b = write_log("b.jsonl", [
        record(w1, t1, {"unroll": 4}, 0.3, cpu="X"),      # a duplicate of a's line 2
        record(w1, t2, {"unroll": 4}, 1.1),
        json.dumps({"workload": w2, "knobs": {"unroll": 1}, "version": 1, "target": t1,  # a's last, keys reordered
                    "template": "contraction.direct", "time_ms": 0.2}),
    ])
    p = ingot("log", "stats", a)
    check(p.returncode == 0 and "6 records" not in p.stdout and "5 records, 3 workload/target pairs" in p.stdout,
          f"stats header: {p.stdout!r} {p.stderr!r}")
    check(f"  {w1} | {t1}: 3 records, best 0.3 ms (line 2), default 0.9 ms (3.00x), 1 error" in p.stdout,
          f"stats line: {p.stdout!r}")
    p = ingot("log", "stats", a, "--json")
    st = json.loads(p.stdout) if p.returncode == 0 else {}
    rows = {(r["workload"], r["target"]): r for r in st.get("workloads", [])}
    check(st.get("records") == 5 and len(rows) == 3, f"stats --json: {p.stdout!r}")
    r = rows.get((w1, t1), {})
    check(r.get("records") == 3 and r.get("errors") == 1 and r.get("best_ms") == 0.3 and r.get("default_ms") == 0.9,
          f"stats --json row: {r}")
    check(rows.get((w1, t2), {}).get("default_ms", 0) is None, "no default record: default_ms null")

    out = os.path.join(ARGS.work, "best.jsonl")
    p = ingot("log", "best", a, "-o", out)
    check(p.returncode == 0, f"best: {p.stderr}")
    best = read_lines(out)
    check([(r["workload"], r["target"], r.get("time_ms")) for r in best] ==
          sorted([(w1, t1, 0.3), (w1, t2, 1.5), (w2, t1, 0.2)]), f"best: one fastest record per key: {best}")
    check(all("fingerprint" in r for r in best if r["target"] == t1 and r["workload"] == w1),
          "best keeps every field")

    out = os.path.join(ARGS.work, "merged.jsonl")
    p = ingot("log", "merge", a, b, "-o", out)
    check(p.returncode == 0, f"merge: {p.stderr}")
    merged = read_lines(out)
    check(len(merged) == 6, f"merge drops exact duplicates (key order aside): {len(merged)} records")
    keys = [(r["workload"], r["target"]) for r in merged]
    check(keys == sorted(keys), "merge is sorted by workload and target")
    out2 = os.path.join(ARGS.work, "merged2.jsonl")
    p = ingot("log", "merge", b, a, a, "-o", out2)
    with open(out) as f1, open(out2) as f2:
        check(p.returncode == 0 and f1.read() == f2.read(), "merge is deterministic, whatever the order of inputs")
    # A merged log still compiles records in.
    p = ingot("log", "stats", out)
    check(p.returncode == 0 and f"  {w1} | {t2}: 2 records, best 1.1 ms" in p.stdout, f"stats of merge: {p.stdout}")

    # bad input: one error naming file and line, exit 1; nothing written
    bad = write_log("bad.jsonl", [record(w1, t1, {"unroll": 2}, 0.9), record(w1, t1, {"unroll": 2})])
    expect_error(ingot("log", "stats", bad), "stats of a log with a bad record", 1, ["bad.jsonl", "line 2", "time_ms"])
    garbage = write_log("garbage.jsonl", ["", "", "[1,"])
    gone = os.path.join(ARGS.work, "never.jsonl")
    expect_error(ingot("log", "merge", a, garbage, "-o", gone), "merge with a malformed line", 1,
                 ["garbage.jsonl", "line 3"])
    check(not os.path.exists(gone), "a failed merge writes nothing")
    expect_error(ingot("log", "best", os.path.join(ARGS.work, "missing.jsonl"), "-o", gone), "best of a missing log", 1,
                 ["missing.jsonl"])
    # bad command lines: exit 2
    expect_error(ingot("log"), "log without a subcommand", 2)
    expect_error(ingot("log", "frob", a), "log frob", 2, ["frob"])
    expect_error(ingot("log", "stats"), "stats without a log", 2)
    expect_error(ingot("log", "stats", a, "--frob"), "stats --frob", 2, ["--frob"])
    expect_error(ingot("log", "best", a), "best without -o", 2)
    expect_error(ingot("log", "merge", a, b, "-o"), "merge -o without a value", 2)
    expect_error(ingot("log", "best", a, b, "-o", gone), "best with two logs", 2)
    p = ingot("log", "--help")
    check(p.returncode == 0 and "usage: ingot log" in p.stdout, "log --help")


def inspect_targets(bundle):
    p = ingot("inspect", "--json", bundle)
    if not check(p.returncode == 0, f"inspect {bundle}: {p.stderr.strip()}"):
        return []
    return [v["target"] for v in json.loads(p.stdout)["variants"]]


def case_targets():
    shape = ["--input-shape", "input=1x1x8x8"]
    # The default target is the host's level: above the architecture's
    # baseline the summary names the CPUs it refuses and two --target options
    # that add a variant for them, which compile to a two-variant bundle.
    dflt = os.path.join(ARGS.work, "default.ingot")
    p = ingot("compile", ARGS.model, "-o", dflt, *shape)
    check(p.returncode == 0, f"default target: {p.stderr.strip()}")
    level = re.search(r"target: +llvm (\S+)", p.stdout)
    if level and level.group(1) not in ("x86-64", "aarch64"):
        m = re.search(r"--target '([^']+)' --target '([^']+)' adds a variant", p.stdout)
        check("runs on:" in p.stdout and m is not None, f"default {level.group(1)}: no runs-on note: {p.stdout}")
        if m:
            both = os.path.join(ARGS.work, "default_both.ingot")
            p = ingot("compile", ARGS.model, "-o", both, *shape, "--target", m.group(1), "--target", m.group(2))
            check(p.returncode == 0 and "runs on:" not in p.stdout and len(inspect_targets(both)) == 2,
                  f"the suggested targets: {p.stdout} {p.stderr.strip()}")
    elif level:
        check("runs on:" not in p.stdout, f"baseline default target noted: {p.stdout}")
    quoted = os.path.join(ARGS.work, "quoted.ingot")
    unquoted = os.path.join(ARGS.work, "unquoted.ingot")
    p = ingot("compile", ARGS.model, "-o", quoted, *shape, "--target", "llvm -mcpu=x86-64-v3 -mattr=+avx2",
              "--target", "c -mcpu=x86-64-v2")
    check(p.returncode == 0, f"quoted targets: {p.stderr.strip()}")
    p = ingot("compile", ARGS.model, "-o", unquoted, *shape, "--target", "llvm", "-mcpu=x86-64-v3",
              "-mattr=+avx2", "--target", "c", "-mcpu=x86-64-v2")
    check(p.returncode == 0, f"unquoted targets: {p.stderr.strip()}")
    if os.path.exists(quoted) and os.path.exists(unquoted):
        want = ["llvm x86-64-v3 -mattr=+avx2", "c -mcpu=x86-64-v2"]
        check(inspect_targets(unquoted) == want, f"unquoted: variants {inspect_targets(unquoted)}, want {want}")
        with open(quoted, "rb") as a, open(unquoted, "rb") as b:
            check(a.read() == b.read(), "quoted and unquoted targets give different bundles")
        # inspect --extract-code takes a target the same two ways.
        for i, form in enumerate((["c -mcpu=x86-64-v2"], ["c", "-mcpu=x86-64-v2"])):
            code = os.path.join(ARGS.work, f"code{i}.so")
            p = ingot("inspect", unquoted, "--extract-code", *form, "-o", code)
            check(p.returncode == 0 and os.path.getsize(code) > 0, f"extract-code {form}: {p.stderr.strip()}")
    # Named CPUs newer than the LLVM in use compile without its warnings on
    # stderr (znver4 is unknown to LLVM 14 and 15: tuned as znver3 there).
    named = os.path.join(ARGS.work, "named.ingot")
    p = ingot("compile", ARGS.model, "-o", named, *shape, "-q", "--target", "llvm -mcpu=znver4",
              "--target", "llvm -mcpu=sapphirerapids", "--target", "llvm -mcpu=neoverse-n2")
    check(p.returncode == 0 and p.stderr == "", f"named CPUs: exit {p.returncode}, stderr {p.stderr!r}")
    # A GPU target joined with its option: a three-variant bundle once the GPU
    # back ends are in this build, else one error line that names the whole
    # target (never "unknown option '-arch=sm_90'").
    gpu = os.path.join(ARGS.work, "gpu.ingot")
    p = ingot("compile", ARGS.model, "-o", gpu, *shape, "--target", "cuda", "-arch=sm_90", "--target", "rocm",
              "-mcpu=gfx90a", "--target", "llvm")
    if p.returncode == 0:
        got = inspect_targets(gpu)
        check(got[:2] == ["cuda -arch=sm_90", "rocm -mcpu=gfx90a"] and len(got) == 3, f"gpu variants {got}")
        os.remove(gpu)  # the failed compiles below must not leave one
    else:
        expect_error(p, "compile cuda+rocm+llvm", 1, ["cuda -arch=sm_90"])
        check("unknown option" not in p.stderr, f"-arch= not joined: {p.stderr.strip()}")
        check(not os.path.exists(gpu), "a failed GPU compile left a file")
    expect_error(ingot("compile", ARGS.model, "-o", gpu, *shape, "--target", "cuda", "-arch=sm_75"),
                 "cuda sm_75", 2, ["sm_75", "sm_80 sm_86 sm_89 sm_90"])
    expect_error(ingot("compile", ARGS.model, "-o", gpu, *shape, "--target", "rocm", "-mcpu=gfx1100"),
                 "rocm gfx1100", 2, ["gfx1100", "gfx90a gfx942"])
    # Only right after a --target value (or another target option).
    expect_error(ingot("compile", ARGS.model, "-o", gpu, "-arch=sm_90"), "a stray -arch=", 2,
                 ["unknown option '-arch=sm_90'"])
    expect_error(ingot("compile", ARGS.model, "-o", gpu, "--target", "llvm", "-mcpu=x86-64-v3", "-mcpu=x86-64-v2"),
                 "llvm with two cpus", 2, ["llvm -mcpu=x86-64-v3 -mcpu=x86-64-v2"])
    # tune takes the same form (both spellings of --target).
    log = os.path.join(ARGS.work, "tune.log")
    for flag in (["--target", "llvm"], ["--target=llvm"]):
        expect_error(ingot("tune", ARGS.model, "-o", log, *shape, *flag, "-mcpu=pentium", "--trials", "1"),
                     f"tune {flag} -mcpu=pentium", None, ["llvm -mcpu=pentium", "pentium"])
    check(not os.path.exists(gpu), "a failed compile left a file")


def same_file(a, b):
    if not (os.path.exists(a) and os.path.exists(b)):
        return False
    with open(a, "rb") as f, open(b, "rb") as g:
        return f.read() == g.read()


def case_optforms():
    w = ARGS.work
    shape = "input=1x1x8x8"
    spaced, equals, short = (os.path.join(w, n + ".ingot") for n in ("spaced", "equals", "short"))
    p = ingot("compile", ARGS.model, "-o", spaced, "--input-shape", shape, "--target", "llvm -mcpu=x86-64-v3",
              "--tuning-log", "none", "-q")
    check(p.returncode == 0, f"compile, spaced options: {p.stderr.strip()}")
    # --opt=value everywhere, the target's own options still joining it.
    p = ingot("compile", f"--input-shape={shape}", ARGS.model, f"--output={equals}", "--target=llvm",
              "-mcpu=x86-64-v3", "--tuning-log=none", "-q")
    check(p.returncode == 0, f"compile, --opt=value: {p.stderr.strip()}")
    check(same_file(spaced, equals), "compile: --opt=value gives another bundle than --opt value")
    p = ingot("compile", ARGS.model, f"-o{short}", f"--input-shape={shape}", "--target=llvm -mcpu=x86-64-v3",
              "--tuning-log=none", "-q")
    check(p.returncode == 0 and same_file(spaced, short), f"compile -oPATH: {p.stderr.strip()}")
    dump = os.path.join(w, "space.json")
    p = ingot("compile", ARGS.model, "-qo", os.path.join(w, "q.ingot"), f"--input-shape={shape}",
              f"--dump-space={dump}")
    check(p.returncode == 0 and not p.stdout and os.path.exists(dump), f"compile -qo, --dump-space=: {p.stderr}")

    # run: the same outputs from both forms.
    x = os.path.join(w, "x.npy")
    np.save(x, np.load(os.path.join(os.path.dirname(ARGS.model), "test_x.npy"))[:1])
    y1, y2 = os.path.join(w, "y1.npz"), os.path.join(w, "y2.npz")
    p = ingot("run", spaced, "--input", f"input={x}", "--output", y1, "--threads", "1", "--seed", "3")
    check(p.returncode == 0, f"run, spaced: {p.stderr.strip()}")
    p = ingot("run", spaced, f"--input=input={x}", f"--output={y2}", "--threads=1", "--seed=3", "--device=cpu")
    check(p.returncode == 0, f"run, --opt=value: {p.stderr.strip()}")
    if os.path.exists(y1) and os.path.exists(y2):
        with np.load(y1) as a, np.load(y2) as b:
            check(np.array_equal(a["probabilities"], b["probabilities"]), "run: the two forms disagree")
    p = ingot("run", spaced, "--bench=2", "--threads=1", "--profile")
    check(p.returncode == 0 and "(2 runs, 1 threads)" in p.stdout, f"run --bench=2: {p.stdout} {p.stderr}")

    # inspect, check, keygen, sign, verify, log.
    p = ingot("inspect", spaced, "--json")
    q = ingot("inspect", "--json", spaced)
    check(p.returncode == 0 and p.stdout == q.stdout, f"inspect: option order matters: {p.stderr}")
    code1, code2 = os.path.join(w, "c1.so"), os.path.join(w, "c2.so")
    p = ingot("inspect", spaced, "--extract-code", "llvm x86-64-v3", "-o", code1)
    q = ingot("inspect", spaced, "--extract-code=llvm x86-64-v3", f"--output={code2}")
    check(p.returncode == 0 and q.returncode == 0 and same_file(code1, code2),
          f"inspect --extract-code=: {p.stderr} {q.stderr}")
    p = ingot("check", ARGS.model, f"--input-shape={shape}", "--json")
    check(p.returncode == 0 and json.loads(p.stdout or "{}").get("ok") is True, f"check --input-shape=: {p.stderr}")
    key = os.path.join(w, "k")
    p = ingot("keygen", f"--output={key}")
    check(p.returncode == 0 and os.path.exists(key + ".pub"), f"keygen --output=: {p.stderr}")
    p = ingot("sign", equals, f"--key={key}")
    check(p.returncode == 0, f"sign --key=: {p.stderr}")
    p = ingot("verify", equals, f"--require-signature={key}.pub")
    check(p.returncode == 0, f"verify --require-signature=: {p.stderr}")
    log = write_log("opt.jsonl", [record("gemm f32 m1 n4 k4", "llvm x86-64-v3", {"unroll": 2}, 0.5)])
    best = os.path.join(w, "best.jsonl")
    p = ingot("log", "best", log, f"--output={best}")
    check(p.returncode == 0 and os.path.exists(best), f"log best --output=: {p.stderr}")
    # tune: a value after '=' is read as the value (and checked).
    p = ingot("tune", ARGS.model, f"--output={os.path.join(w, 't.jsonl')}", "--trials=many")
    expect_error(p, "tune --trials=many", 2, ["--trials needs", "many"])
    # Flags take no value; ambiguous prefixes are named.
    expect_error(ingot("inspect", spaced, "--json=yes"), "inspect --json=yes", 2, ["'--json' takes no value"])
    expect_error(ingot("compile", ARGS.model, "-o", os.path.join(w, "z.ingot"), "--dump", "x"),
                 "compile --dump (ambiguous)", 2, ["ambiguous", "--dump-space", "--dump-ir"])
    check(not os.path.exists(os.path.join(w, "z.ingot")), "a refused command line wrote a bundle")


def help_threads_max(command):
    p = ingot(command, "--help")
    m = re.search(r"--threads N\s+[^\n]*?1 to (\d+)", p.stdout)
    check(m is not None, f"{command} --help states no --threads limit: {p.stdout!r}")
    return int(m.group(1)) if m else None


def case_badvalues():
    w = ARGS.work
    bundle = compile_digits(1)
    out = os.path.join(w, "never.ingot")
    shape = ["--input-shape", "input=1x1x8x8"]
    tlog = os.path.join(w, "t.jsonl")
    cases = [
        (["compile", ARGS.model, "-o", out, "--input-shape", "input=1xfour"], "--input-shape"),
        (["compile", ARGS.model, "-o", out, "--input-shape=input"], "--input-shape"),
        (["compile", ARGS.model, "-o", out, *shape, "--target", "llvm", "-mcpu=pentium"], "pentium"),
        (["compile", ARGS.model, "-o", out, *shape, "--target=vulkan"], "vulkan"),
        (["compile", ARGS.model, "-o", out, *shape, "--const", "noequals"], "--const"),
        (["compile", ARGS.model, "-o", out, *shape, "--output="], "--output"),
        (["compile", ARGS.model, "-o", out, *shape, "--weights=lz4"], "--weights"),
        (["run", bundle, "--threads=0"], "--threads"),
        (["run", bundle, "--threads", "x"], "--threads"),
        (["run", bundle, "--bench=0"], "--bench"),
        (["run", bundle, "--seed=-1"], "--seed"),
        (["run", bundle, "--device=gpu"], "--device"),
        (["run", bundle, "--input="], "--input"),
        (["check", ARGS.model, "--input-shape=1x1x8x8"], "--input-shape"),
        (["tune", ARGS.model, "-o", tlog, "--jobs=0"], "--jobs"),
        (["tune", ARGS.model, "-o", tlog, "--batch", "65"], "--batch"),
        (["tune", ARGS.model, "-o", tlog, "--shard=2/2"], "--shard"),
        (["tune", ARGS.model, "-o", tlog, "--search=best"], "--search"),
        (["tune", ARGS.model, "-o", tlog, "--timeout=-3"], "--timeout"),
        (["tune", ARGS.model, "-o", tlog, "--input-shape", "input=1x1xeight"], "--input-shape"),
        (["tune", ARGS.model, "-o", tlog, "--target", "cuda", "-arch=sm_75"], "sm_75"),
        (["verify", bundle, "--require-signature="], "--require-signature"),
        (["inspect", bundle, "--extract-code", "c"], "-o"),
    ]
    for argv, named in cases:
        expect_error(ingot(*argv), " ".join(argv[:1] + argv[2:]), 2, [named])
    check(not os.path.exists(out) and not os.path.exists(tlog), "a refused command line wrote a file")

    # --threads: the number in the help is the one the parser and the runtime take.
    limit = help_threads_max("run")
    check(help_threads_max("tune") == limit, "run and tune --help state different --threads limits")
    if limit:
        p = ingot("run", bundle, f"--threads={limit}", "--bench=1")
        check(p.returncode == 0 and f"(1 runs, {limit} threads)" in p.stdout,
              f"run --threads={limit} (the stated limit): {p.returncode} {p.stderr.strip()}")
        expect_error(ingot("run", bundle, f"--threads={limit + 1}"), "run --threads above the limit", 2,
                     ["--threads", f"1 to {limit}"])
        expect_error(ingot("tune", ARGS.model, "-o", tlog, f"--threads={limit + 1}"),
                     "tune --threads above the limit", 2, ["--threads", f"1 to {limit}"])


def inspect_json(bundle, what):
    p = ingot("inspect", bundle, "--json")
    if not check(p.returncode == 0, f"inspect {what}: {p.stderr.strip()}"):
        return None
    return json.loads(p.stdout)


def check_foreign(bundle, target, what):
    """`bundle` holds one variant, for `target`, that does not run here."""
    info = inspect_json(bundle, what)
    if info is None:
        return
    check([v["target"] for v in info["variants"]] == [target], f"{what}: variants {info['variants']}")
    check(info["loaded_target"] == "" and target in info["target_reason"],
          f"{what}: loaded '{info['loaded_target']}', reason '{info['target_reason']}'")
    check(info["inputs"][0]["shape"] == [1, 1, 8, 8], f"{what}: inputs {info['inputs']}")
    check(info["signature"] == {"signed": False}, f"{what}: signature {info['signature']}")
    p = ingot("inspect", bundle)
    check(p.returncode == 0 and target in p.stdout and "signature: none" in p.stdout, f"{what} (text): {p.stderr}")
    p = ingot("verify", bundle)
    check(p.returncode == 0 and re.search(rf"variant {re.escape(target)}\s+not load-checked here: \S", p.stdout),
          f"verify {what}: {p.stdout} {p.stderr}")
    # Signed: inspect names the signer by the key id that sign printed.
    key = os.path.join(ARGS.work, "k_" + what.replace(" ", "_"))
    p = ingot("keygen", "-o", key)
    check(p.returncode == 0, f"keygen: {p.stderr}")
    p = ingot("sign", bundle, "--key", key)
    m = re.search(r"key id ([0-9a-f]{8})", p.stdout)
    if not check(p.returncode == 0 and m, f"sign {what}: {p.stdout} {p.stderr}"):
        return
    with open(key + ".pub") as f:
        public = f.read().split()[1]
    info = inspect_json(bundle, what + ", signed")
    if info is not None:
        check(info["signature"] == {"signed": True, "key_id": m.group(1), "public_key": public},
              f"{what}, signed: signature {info['signature']}, signed by {m.group(1)}")
    p = ingot("inspect", bundle)
    check(p.returncode == 0 and f"signed by key id {m.group(1)}" in p.stdout, f"{what}, signed (text): {p.stdout}")


def case_foreign():
    shape = ["--input-shape", "input=1x1x8x8"]
    bundle = os.path.join(ARGS.work, "aarch64.ingot")
    p = ingot("compile", ARGS.model, "-o", bundle, *shape, "--target", "aarch64", "-q")
    if check(p.returncode == 0, f"compile --target aarch64: {p.stderr.strip()}"):
        check_foreign(bundle, "llvm aarch64", "aarch64 bundle")


def case_foreign_cuda():
    shape = ["--input-shape", "input=1x1x8x8"]
    bundle = os.path.join(ARGS.work, "cuda.ingot")
    p = ingot("compile", ARGS.model, "-o", bundle, *shape, "--target", "cuda -arch=sm_90", "-q")
    if p.returncode != 0:
        print(f"SKIP: this build cannot compile for cuda here: {p.stderr.strip()}")
        sys.exit(77)
    probe = inspect_json(bundle, "cuda bundle")
    if probe is not None and probe["cuda_device"]["usable"]:
        # A GPU is here: the variant loads, inspect and verify say so.
        check(probe["loaded_target"] == "cuda -arch=sm_90" or "sm_90" in probe["target_reason"],
              f"cuda bundle with a GPU: {probe['loaded_target']} {probe['target_reason']}")
        p = ingot("verify", bundle)
        check(p.returncode == 0, f"verify cuda bundle with a GPU: {p.stdout} {p.stderr}")
        return
    check_foreign(bundle, "cuda -arch=sm_90", "cuda bundle")


def leftovers(*dirs):
    found = []
    for d in dirs:
        for root, subdirs, files in os.walk(d):
            found += [os.path.join(root, n) for n in subdirs + files]
    return found


def case_killed():
    import signal
    import time
    w = ARGS.work
    tmp, out = os.path.join(w, "tmp"), os.path.join(w, "out")
    started = os.path.join(w, "cc_started")
    # A C compiler that says it started, then waits: the compile is then
    # surely in code generation, with its temporary folder under $TMPDIR.
    slow_cc = os.path.join(w, "slow_cc")
    with open(slow_cc, "w") as f:
        f.write(f"#!{sys.executable}\n"
                "import os, sys, time\n"
                "if '--version' not in sys.argv:\n"
                f"    open({started!r}, 'w').close()\n"
                "    time.sleep(120)\n"
                "os.execvp('cc', ['cc'] + sys.argv[1:])\n")
    os.chmod(slow_cc, 0o755)
    env = dict(os.environ, TMPDIR=tmp)
    base = [ARGS.ingot, "compile", ARGS.model, "-o", os.path.join(out, "m.ingot"), "--input-shape",
            "input=1x1x8x8", "-q"]
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        for d in (tmp, out):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
        if os.path.exists(started):
            os.remove(started)
        p = subprocess.Popen(base + ["--target", "c", "--cc", slow_cc], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while not os.path.exists(started) and p.poll() is None and time.time() < deadline:
            time.sleep(0.02)
        during = leftovers(tmp)
        check(any(os.path.basename(n).startswith("ingot-cc-") for n in during),
              f"{sig.name}: no compiler folder in $TMPDIR while the compiler ran: {during}")
        p.send_signal(sig)
        try:
            p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            check(False, f"{sig.name}: ingot did not end within 60 s")
        check(p.returncode == -sig, f"{sig.name}: exit {p.returncode}, want death by the signal")
        check(leftovers(tmp, out) == [], f"{sig.name}: left behind: {leftovers(tmp, out)}")
    # Killed at moments spread over a whole llvm compile: nothing left, and
    # the bundle is there whole or not at all.
    for d in (tmp, out):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    t0 = time.time()
    p = subprocess.run(base, env=env, capture_output=True)
    took = time.time() - t0
    check(p.returncode == 0, f"compile: {p.stderr}")
    with open(os.path.join(out, "m.ingot"), "rb") as f:
        good = f.read()
    for k in range(12):
        os.remove(os.path.join(out, "m.ingot")) if os.path.exists(os.path.join(out, "m.ingot")) else None
        p = subprocess.Popen(base, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(took * k / 12)
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=120)
        left = [n for n in leftovers(tmp, out) if n != os.path.join(out, "m.ingot")]
        check(left == [], f"SIGTERM after {took * k / 12:.2f} s: left behind: {left}")
        if os.path.exists(os.path.join(out, "m.ingot")):
            with open(os.path.join(out, "m.ingot"), "rb") as f:
                check(f.read() == good, f"SIGTERM after {took * k / 12:.2f} s: a partial bundle")


def case_indices():
    """Out-of-range run-time indices are clamped (README, Limits): Gather and
    ScatterElements with indices past either end."""
    import onnx
    from onnx import TensorProto, helper
    w = ARGS.work
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    i = helper.make_tensor_value_info("i", TensorProto.INT64, [3])
    u = helper.make_tensor_value_info("u", TensorProto.FLOAT, [3])
    g = helper.make_tensor_value_info("g", TensorProto.FLOAT, [3])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [3])
    graph = helper.make_graph([helper.make_node("Gather", ["x", "i"], ["g"], axis=0),
                               helper.make_node("ScatterElements", ["x", "i", "u"], ["s"], axis=0)],
                              "indices", [x, i, u], [g, s])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(w, "indices.onnx")
    onnx.save(model, path)
    bundle = os.path.join(w, "indices.ingot")
    p = ingot("compile", path, "-o", bundle, "-q")
    if not check(p.returncode == 0, f"compile: {p.stderr.strip()}"):
        return
    np.save(os.path.join(w, "x.npy"), np.array([10, 20, 30], np.float32))
    np.save(os.path.join(w, "i.npy"), np.array([1, 7, -9], np.int64))
    np.save(os.path.join(w, "u.npy"), np.array([1, 2, 3], np.float32))
    out = os.path.join(w, "out.npz")
    p = ingot("run", bundle, *[f"--input={n}={os.path.join(w, n)}.npy" for n in "xiu"], f"--output={out}")
    if not check(p.returncode == 0, f"run: {p.stderr.strip()}"):
        return
    with np.load(out) as z:
        check(z["g"].tolist() == [20, 30, 10], f"Gather at [1, 7, -9]: {z['g'].tolist()}, want [20, 30, 10]")
        # Writes in order: index 1 gets 1, 7 -> 2 gets 2, -9 -> 0 gets 3.
        check(z["s"].tolist() == [3, 1, 2], f"ScatterElements at [1, 7, -9]: {z['s'].tolist()}, want [3, 1, 2]")


CASES = {"flags": case_flags, "inspect": case_inspect, "corrupt": case_corrupt,
         "npy": case_npy, "run": case_run, "tuning": case_tuning, "log": case_log,
         "targets": case_targets, "optforms": case_optforms, "badvalues": case_badvalues,
         "foreign": case_foreign, "foreign_cuda": case_foreign_cuda, "killed": case_killed,
         "indices": case_indices}


def finish():
    print(f"cli_test {ARGS.case}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    ARGS = ap.parse_args()
    shutil.rmtree(ARGS.work, ignore_errors=True)
    os.makedirs(ARGS.work)
    CASES[ARGS.case]()
    sys.exit(finish())
