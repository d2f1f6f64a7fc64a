#!/usr/bin/env python3
"""Random points of the schedule space, compiled and run against ONNX Runtime.

  space_points.py --ingot BUILD/ingot --work DIR [--trials 3] [--seed 1]

For a small CNN (models/make_cnn_zoo.py resnet18 --size small) and a small
BERT-style encoder (models/make_bert.py --size small), generated into DIR:
`ingot compile --dump-space` lists every unique kernel's space (one object
per workload, target and template); each trial then picks, for every
kernel, a template of its class and a seeded random value of every knob,
writes them as tuning-log records (one log per trial, so that each point
is really used), compiles with --tuning-log and --dump-schedule, checks
that every kernel took exactly the record's template and knobs, runs the
bundle and compares each output with ONNX Runtime
(|ingot - ort| <= atol + rtol * |ort|). Exit 0 when all trials match.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "..", "models")

SCHEDULE_LINE = re.compile(r"^kernel (\S+) \(node '(.*)', target '(.*)', workload '(.*)'\): "
                           r"schedule '([^']*)'(?: \((.*)\))?:$")


def run(cmd, what):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stdout.write(p.stdout[-3000:] + p.stderr[-3000:])
        raise SystemExit(f"FAIL: {what} exited {p.returncode}: {' '.join(cmd)}")
    return p, time.monotonic() - t0


def make_models(work):
    gen = os.path.join(work, "models")
    os.makedirs(gen, exist_ok=True)
    cnn = os.path.join(gen, "resnet18_small.onnx")
    bert = os.path.join(gen, "bert_small.onnx")
    if not os.path.exists(cnn):
        run([sys.executable, os.path.join(MODELS, "make_cnn_zoo.py"), "--out", gen, "--model", "resnet18",
             "--size", "small"], "make_cnn_zoo.py")
    if not os.path.exists(bert):
        run([sys.executable, os.path.join(MODELS, "make_bert.py"), "--out", gen, "--size", "small"], "make_bert.py")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    bin_ = os.path.join(gen, "bert_small_inputs")
    bert_in = {n: np.load(os.path.join(bin_, n + ".npy")) for n in ("input_ids", "attention_mask", "token_type_ids")}
    return [("resnet18_small", cnn, {"input": x}), ("bert_small", bert, bert_in)]


def parse_schedules(text):
    """{(workload, target): (template, {knob: value})} from --dump-schedule."""
    got = {}
    for line in text.splitlines():
        m = SCHEDULE_LINE.match(line)
        if not m:
            continue
        knobs = {}
        for item in (m.group(6) or "").split():
            k, _, v = item.partition("=")
            knobs[k] = int(v)
        got[(m.group(4), m.group(3))] = (m.group(5), knobs)
    return got


def compare(name, outputs, got_path, ref, rtol, atol):
    ok = True
    with np.load(got_path) as got_all:
        for out_name, want in zip(outputs, ref):
            got = got_all[out_name]
            if got.shape != want.shape:
                print(f"FAIL: {name}: output '{out_name}' shape {got.shape}, onnxruntime {want.shape}")
                ok = False
                continue
            g, w = got.astype(np.float64), want.astype(np.float64)
            bad = np.abs(g - w) > atol + rtol * np.abs(w)
            if bad.any() or not np.isfinite(g).all():
                print(f"FAIL: {name}: output '{out_name}' max abs error {np.abs(g - w).max():.3g} "
                      f"({int(bad.sum())} of {bad.size} outside tolerance)")
                ok = False
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--trials", type=int, default=3, help="random points per kernel (one log a trial)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    args = ap.parse_args()
    import onnxruntime as ort

    os.makedirs(args.work, exist_ok=True)
    rng = random.Random(args.seed)
    failures = 0
    for name, model, feeds in make_models(args.work):
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        ref = sess.run(None, feeds)
        outputs = [o.name for o in sess.get_outputs()]
        shape_flags, input_flags = [], []
        for i, (n, a) in enumerate(feeds.items()):
            shape_flags += ["--input-shape", f"{n}={'x'.join(str(d) for d in a.shape)}"]
            path = os.path.join(args.work, f"{name}_input{i}.npy")
            np.save(path, a)
            input_flags += ["--input", f"{n}={path}"]

        space_path = os.path.join(args.work, f"{name}_space.json")
        bundle = os.path.join(args.work, f"{name}.ingot")
        run([args.ingot, "compile", model, "-o", bundle, "-q", "--dump-space", space_path, *shape_flags],
            "ingot compile --dump-space")
        with open(space_path) as f:
            space = json.load(f)
        kernels = {}
        for obj in space:
            assert set(obj) == {"workload", "target", "template", "log_version", "knobs", "space"}, obj.keys()
            for knob, default in obj["knobs"].items():
                assert default in obj["space"][knob], (obj["workload"], knob)
            kernels.setdefault((obj["workload"], obj["target"]), []).append(obj)
        print(f"{name}: {len(kernels)} unique kernels, {len(space)} (kernel, template) spaces")

        for trial in range(args.trials):
            records, want = [], {}
            for key in sorted(kernels):
                obj = rng.choice(kernels[key])
                knobs = {k: rng.choice(v) for k, v in sorted(obj["space"].items())}
                records.append({"version": obj["log_version"], "workload": obj["workload"], "target": obj["target"],
                                "template": obj["template"], "knobs": knobs, "time_ms": 1.0})
                want[key] = (obj["template"], knobs)
            log = os.path.join(args.work, f"{name}_trial{trial}.jsonl")
            with open(log, "w") as f:
                for r in records:
                    f.write(json.dumps(r) + "\n")
            p, compile_s = run([args.ingot, "compile", model, "-o", bundle, "--tuning-log", log, "--dump-schedule",
                                *shape_flags], f"ingot compile --tuning-log {log}")
            got = parse_schedules(p.stdout)
            taken = 0
            for key, (template, knobs) in want.items():
                g = got.get(key)
                if g is None:
                    continue  # a workload whose kernels were all deduplicated under another name does not occur
                if g != (template, knobs):
                    print(f"FAIL: {name} trial {trial}: kernel '{key[0]}' took {g}, the log says {(template, knobs)}")
                    failures += 1
                taken += 1
            if taken != len(want):
                print(f"FAIL: {name} trial {trial}: {len(want) - taken} kernels missing from --dump-schedule")
                failures += 1
            out = os.path.join(args.work, f"{name}_trial{trial}.npz")
            _, run_s = run([args.ingot, "run", bundle, *input_flags, "--output", out], "ingot run")
            ok = compare(f"{name} trial {trial} ({log})", outputs, out, ref, args.rtol, args.atol)
            failures += not ok
            print(f"{name} trial {trial}: {taken} kernels at random points, compile {compile_s:.1f}s, "
                  f"run {run_s:.1f}s: {'ok' if ok else 'MISMATCH'}")
    if failures:
        print(f"{failures} failure(s)")
        return 1
    print("all random points match onnxruntime")
    return 0


if __name__ == "__main__":
    sys.exit(main())
