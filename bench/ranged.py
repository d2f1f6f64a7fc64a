#!/usr/bin/env python3
"""Latency of one ranged bundle beside bundles compiled for each exact size
and beside ONNX Runtime, on the BERT-style encoder (models/make_bert.py).

  python bench/ranged.py [--size small|base] [--tokens 7 64 128] [--threads 1]
                         [--rounds 9] [--runs 20] [--work DIR] [--target T]

Compiles the encoder once with --input-shape input_ids=1x1..128 and once per
exact size (input_ids=1xN), then in each round, for each size, times `runs`
runs of the ranged bundle, the exact bundle and ONNX Runtime (same inputs,
same thread count, all in this process, interleaved), keeping each one's
median. Prints per size the median over rounds of those medians (ms), the
ratios ranged/exact and ranged/ONNX Runtime with their spread over rounds
(min-max), and checks that the outputs agree. Needs the ingot Python package
(scripts/setup.sh installs it into build/venv), numpy and onnxruntime.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")


def inputs_for(n, rng):
    ids = rng.integers(1000, 8000, size=(1, n), dtype=np.int64)
    ids[0, 0] = 101
    return {"input_ids": ids, "attention_mask": np.ones((1, n), np.int64),
            "token_type_ids": np.zeros((1, n), np.int64)}


def timed(fn, runs):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="small", choices=["small", "base"])
    ap.add_argument("--tokens", type=int, nargs="+", default=[7, 64, 128])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench_ranged"))
    ap.add_argument("--target", default=None)
    a = ap.parse_args()
    import ingot
    import onnxruntime as ort
    os.makedirs(a.work, exist_ok=True)
    model = os.path.join(a.work, f"bert_{a.size}.onnx")
    if not os.path.exists(model):
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "make_bert.py"), "--out", a.work, "--size",
                        a.size], check=True, stdout=subprocess.DEVNULL)
    targets = [a.target] if a.target else None
    hi = max(128, max(a.tokens))
    ranged = os.path.join(a.work, f"bert_{a.size}_1_{hi}.ingot")
    ingot.compile(model, ranged, input_shapes={"input_ids": (1, (1, hi))}, targets=targets)
    exact = {}
    for n in a.tokens:
        exact[n] = os.path.join(a.work, f"bert_{a.size}_{n}.ingot")
        ingot.compile(model, exact[n], input_shapes={"input_ids": (1, n)}, targets=targets)
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    ref = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    rs = ingot.Session(ranged, threads=a.threads)
    es = {n: ingot.Session(exact[n], threads=a.threads) for n in a.tokens}
    rng = np.random.default_rng(1)
    feeds = {n: inputs_for(n, rng) for n in a.tokens}
    for n in a.tokens:  # warm up, and the outputs agree
        want = ref.run(None, feeds[n])[0]
        got_r = rs.run(feeds[n])["last_hidden_state"]
        got_e = es[n].run(feeds[n])["last_hidden_state"]
        err = max(float(np.abs(got_r - want).max()), float(np.abs(got_e - want).max()))
        print(f"{n} tokens: outputs {list(got_r.shape)}, max error against ONNX Runtime {err:.2g}")
    res = {n: {"ranged": [], "exact": [], "ort": []} for n in a.tokens}
    for _ in range(a.rounds):
        for n in a.tokens:
            f = feeds[n]
            res[n]["ranged"].append(timed(lambda: rs.run(f), a.runs))
            res[n]["exact"].append(timed(lambda: es[n].run(f), a.runs))
            res[n]["ort"].append(timed(lambda: ref.run(None, f), a.runs))
    cpu = "?"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    print(f"\nBERT {a.size}, {a.threads} thread(s), {a.rounds} rounds x {a.runs} runs, CPU: {cpu}")
    print(f"{'tokens':>6} {'ranged ms':>10} {'exact ms':>9} {'ORT ms':>8}  {'ranged/exact':>18}  {'ranged/ORT':>18}")
    for n in a.tokens:
        r = res[n]
        q1 = [x / y for x, y in zip(r["ranged"], r["exact"])]
        q2 = [x / y for x, y in zip(r["ranged"], r["ort"])]
        print(f"{n:>6} {statistics.median(r['ranged']):>10.3f} {statistics.median(r['exact']):>9.3f} "
              f"{statistics.median(r['ort']):>8.3f}  {statistics.median(q1):>5.2f} ({min(q1):.2f}-{max(q1):.2f})"
              f"  {statistics.median(q2):>5.2f} ({min(q2):.2f}-{max(q2):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
