#!/usr/bin/env python3
"""Bundles with several CPU variants, end to end through the `ingot` driver.

  variants.py --ingot BUILD/ingot --model models/digits/model.onnx --work DIR

Compiles the digits model for x86-64, x86-64-v3, x86-64-v4, aarch64 and c in
one bundle and checks that: inspect lists them in order; the runtime loads the
best one this CPU runs (the expectation comes from /proc/cpuinfo) and says why
(inspect, inspect --json, run --verbose); every variant runnable here gives
the same outputs as every other; a bundle with only foreign code is refused
with a clear message; the default target is llvm for this machine; a target
given twice is refused; two compiles give the same bytes.
Exit 0 when all hold.
"""
import argparse
import json
import os
import platform
import subprocess
import sys

import numpy as np

LEVEL_FLAGS = {
    "x86-64-v2": ["pni", "ssse3", "sse4_1", "sse4_2", "popcnt", "cx16", "lahf_lm"],
    "x86-64-v3": ["avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "abm", "movbe"],
    "x86-64-v4": ["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"],
}

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL: {what}")
    else:
        print(f"ok: {what}")


def run(cmd, expect=0):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if expect is not None and p.returncode != expect:
        print(f"command exited {p.returncode} (expected {expect}): {' '.join(cmd)}")
        print(p.stdout[-3000:], p.stderr[-3000:])
        sys.exit(1)
    return p


def host_level():
    if platform.machine() != "x86_64":
        return "aarch64"
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    level = "x86-64"
    for name in ("x86-64-v2", "x86-64-v3", "x86-64-v4"):
        if all(fl in flags for fl in LEVEL_FLAGS[name]):
            level = name
        else:
            break
    return level


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    ingot, model, work = a.ingot, a.model, a.work
    shape = ["--input-shape", "input=4x1x8x8"]
    x = np.random.default_rng(1).standard_normal((4, 1, 8, 8)).astype(np.float32)
    xin = os.path.join(work, "x.npy")
    np.save(xin, x)

    targets = ["x86-64", "x86-64-v3", "x86-64-v4", "aarch64", "c"]
    canon = ["llvm x86-64", "llvm x86-64-v3", "llvm x86-64-v4", "llvm aarch64", "c"]
    multi = os.path.join(work, "multi.ingot")
    cmd = [ingot, "compile", model, "-o", multi, "-q", *shape]
    for t in targets:
        cmd += ["--target", t]
    run(cmd)
    info = json.loads(run([ingot, "inspect", multi, "--json"]).stdout)
    check(info["targets"] == canon, f"inspect lists the variants in order: {info['targets']}")
    level = host_level()
    want = "llvm " + level
    check(info["loaded_target"] == want, f"loads the best variant for this CPU ({level}): {info['loaded_target']}")
    reason = info.get("target_reason", "")
    check(reason.startswith("picked " + want), f"says why: {reason}")
    if level == "x86-64-v4":
        check("avx512f" in reason and "avx512vl" in reason, "names the AVX-512 features")
    check("llvm aarch64 (built for AArch64" in reason or platform.machine() != "x86_64",
          "says why aarch64 is skipped")
    text = run([ingot, "inspect", multi]).stdout
    check("variant: picked " + want in text, "inspect's text says it too")
    p = run([ingot, "run", multi, "--input", xin, "--verbose"])
    check("code variant: picked " + want in p.stderr, f"run --verbose says it: {p.stderr.strip()[:200]}")

    # Every variant that runs here computes the same.
    outs = {}
    for t, c in zip(targets, canon):
        b = os.path.join(work, t + ".ingot")
        run([ingot, "compile", model, "-o", b, "-q", "--target", t, *shape])
        o = os.path.join(work, t + ".npz")
        p = run([ingot, "run", b, "--input", xin, "--output", o], expect=None)
        if p.returncode == 0:
            with np.load(o) as z:
                outs[c] = z["probabilities"]
        else:
            check("no code variant runs on this machine" in p.stderr and c in p.stderr,
                  f"{c}: refused with a clear message: {p.stderr.strip()[:160]}")
    o = os.path.join(work, "multi.npz")
    run([ingot, "run", multi, "--input", xin, "--output", o])
    with np.load(o) as z:
        ref = z["probabilities"]
    for c, y in outs.items():
        check(np.allclose(y, ref, rtol=1e-5, atol=1e-6), f"{c} gives the same outputs (max diff "
              f"{float(np.abs(y - ref).max()):.3g})")
    check(len(outs) >= 2, f"{len(outs)} variants ran here")

    # The default target is llvm for this machine.
    d = os.path.join(work, "default.ingot")
    run([ingot, "compile", model, "-o", d, "-q", *shape])
    info = json.loads(run([ingot, "inspect", d, "--json"]).stdout)
    check(info["targets"] == [want], f"default target: {info['targets']}")

    p = run([ingot, "compile", model, "-o", d, "-q", *shape, "--target", "x86-64-v3", "--target",
             "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3"], expect=1)
    check("given twice" in p.stderr, f"a target given twice: {p.stderr.strip()}")

    again = os.path.join(work, "multi2.ingot")
    cmd[cmd.index(multi)] = again
    run(cmd)
    with open(multi, "rb") as f1, open(again, "rb") as f2:
        check(f1.read() == f2.read(), "the same inputs give the same bundle bytes")

    print("OK" if failures == 0 else f"FAIL ({failures})")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
