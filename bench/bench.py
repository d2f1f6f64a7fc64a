#!/usr/bin/env python3
"""Side-by-side latency: Ingot vs ONNX Runtime on the same machine, same inputs.

Not a test: CI runs no timed assertions. For each model and thread count it
alternates rounds of Ingot (`ingot run --bench`) and ONNX Runtime, and reports
the median of the rounds' medians and the ratio ingot / onnxruntime.

  python bench/bench.py --ingot build/ingot --models resnet18 mobilenetv2 --threads 1 2
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))


def make_model(name, out_dir):
    path = os.path.join(out_dir, name + ".onnx")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "make_cnn_zoo.py"),
                        "--out", out_dir, "--model", name], check=True)
    return path


def ort_median(sess, feeds, runs):
    sess.run(None, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times)


def ingot_median(ingot, bundle, input_args, threads, runs):
    out = subprocess.run([ingot, "run", bundle, *input_args, "--threads", str(threads),
                          "--bench", str(runs)], check=True, capture_output=True, text=True)
    m = re.search(r"min ([0-9.]+) ms, median ([0-9.]+) ms", out.stdout + out.stderr)
    if not m:
        raise RuntimeError("no latency line in ingot output:\n" + out.stdout + out.stderr)
    return float(m.group(2)), float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ingot", default=os.path.join(ROOT, "build", "ingot"))
    ap.add_argument("--models", nargs="+", default=["resnet18", "mobilenetv2"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10, help="timed runs per round")
    ap.add_argument("--target", default="c")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)

    rows = []
    for name in args.models:
        model = make_model(name, args.work)
        bundle = os.path.join(args.work, name + ".ingot")
        subprocess.run([args.ingot, "compile", model, "-o", bundle, "--target", args.target, "-q"], check=True)
        sess0 = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        feeds, input_args = {}, []
        for i in sess0.get_inputs():
            x = rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
            feeds[i.name] = x
            p = os.path.join(args.work, f"{name}_{i.name}.npy")
            np.save(p, x)
            input_args += ["--input", f"{i.name}={p}"]
        for t in args.threads:
            so = ort.SessionOptions()
            so.intra_op_num_threads = t
            so.inter_op_num_threads = 1
            sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
            ing, onx = [], []
            for _ in range(args.rounds):  # interleaved rounds
                ing.append(ingot_median(args.ingot, bundle, input_args, t, args.runs)[0])
                onx.append(ort_median(sess, feeds, args.runs)[0])
            mi, mo = statistics.median(ing), statistics.median(onx)
            rows.append((name, t, mi, mo, mi / mo))
            print(f"{name:14s} threads={t}  ingot {mi:8.2f} ms   onnxruntime {mo:8.2f} ms   ratio {mi/mo:5.2f}",
                  flush=True)

    print("\n| model | threads | ingot median ms | onnxruntime median ms | ingot / ort |")
    print("|---|---|---|---|---|")
    for name, t, mi, mo, r in rows:
        print(f"| {name} | {t} | {mi:.2f} | {mo:.2f} | {r:.2f} |")
    print(f"\nonnxruntime {ort.__version__}, target '{args.target}', {args.rounds} rounds x {args.runs} runs")


if __name__ == "__main__":
    main()
