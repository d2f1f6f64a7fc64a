#!/usr/bin/env python3
"""Latency of one ranged bundle beside bundles compiled for each exact size
and beside ONNX Runtime: the BERT-style encoder (models/make_bert.py) over
1..128 tokens, or ResNet-18 (models/make_cnn_zoo.py, its image dims made
symbolic) over images of 224..640 by 224..640.

  python bench/ranged.py [--model bert|resnet18] [--size small|base]
                         [--tokens 7 64 128] [--images 224x224 320x480 640x640]
                         [--threads 1] [--rounds 9] [--runs 20] [--work DIR]
                         [--target T]

Compiles the model once with its range (input_ids=1x1..128, or
input=1x3x224..640x224..640) and once per exact size, then in each round,
for each size, times `runs` runs of the ranged bundle, the exact bundle and
ONNX Runtime (same inputs, same thread count, all in this process,
interleaved), keeping each one's median. Prints per size the median over
rounds of those medians (ms), the ratios ranged/exact and ranged/ONNX
Runtime with their spread over rounds (min-max), and checks that the outputs
agree. Needs the ingot Python package (scripts/setup.sh installs it into
build/venv), numpy, onnx and onnxruntime.
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


def bert_case(a):
    """The model, a tag, its ranged shapes, and per size: label, exact shapes, feeds."""
    model = os.path.join(a.work, f"bert_{a.size}.onnx")
    if not os.path.exists(model):
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "make_bert.py"), "--out", a.work, "--size",
                        a.size], check=True, stdout=subprocess.DEVNULL)
    hi = max(128, max(a.tokens))
    rng = np.random.default_rng(1)
    sizes = [(str(n), {"input_ids": (1, n)}, inputs_for(n, rng)) for n in a.tokens]
    return model, f"bert_{a.size}", {"input_ids": (1, (1, hi))}, sizes


def resnet_case(a):
    import onnx
    model = os.path.join(a.work, "resnet18_hw.onnx")
    if not os.path.exists(model):
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "make_cnn_zoo.py"), "--out", a.work, "--model",
                        "resnet18", "--size", "full"], check=True, stdout=subprocess.DEVNULL)
        m = onnx.load(os.path.join(a.work, "resnet18.onnx"))
        dims = m.graph.input[0].type.tensor_type.shape.dim
        dims[2].dim_param, dims[3].dim_param = "H", "W"
        onnx.save(m, model)
    rng = np.random.default_rng(1)
    sizes = []
    for img in a.images:
        h, w = (int(x) for x in img.split("x"))
        sizes.append((img, {"input": (1, 3, h, w)},
                      {"input": rng.standard_normal((1, 3, h, w)).astype(np.float32)}))
    return model, "resnet18", {"input": (1, 3, (224, 640), (224, 640))}, sizes


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
    ap.add_argument("--model", default="bert", choices=["bert", "resnet18"])
    ap.add_argument("--size", default="small", choices=["small", "base"], help="BERT's size")
    ap.add_argument("--tokens", type=int, nargs="+", default=[7, 64, 128])
    ap.add_argument("--images", nargs="+", default=["224x224", "320x480", "640x640"], help="ResNet-18's, HxW")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench_ranged"))
    ap.add_argument("--target", default=None)
    a = ap.parse_args()
    import ingot
    import onnxruntime as ort
    os.makedirs(a.work, exist_ok=True)
    model, tag, ranges, sizes = (bert_case if a.model == "bert" else resnet_case)(a)
    targets = [a.target] if a.target else None
    ranged = os.path.join(a.work, f"{tag}_ranged.ingot")
    ingot.compile(model, ranged, input_shapes=ranges, targets=targets)
    exact = {}
    for label, shapes, _ in sizes:
        exact[label] = os.path.join(a.work, f"{tag}_{label}.ingot")
        ingot.compile(model, exact[label], input_shapes=shapes, targets=targets)
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    ref = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    rs = ingot.Session(ranged, threads=a.threads)
    es = {label: ingot.Session(exact[label], threads=a.threads) for label, _, _ in sizes}
    first = ref.get_outputs()[0].name
    for label, _, f in sizes:  # warm up, and the outputs agree
        want = ref.run(None, f)[0]
        got_r = rs.run(f)[first]
        got_e = es[label].run(f)[first]
        err = max(float(np.abs(got_r - want).max()), float(np.abs(got_e - want).max()))
        print(f"{label}: outputs {list(got_r.shape)}, max error against ONNX Runtime {err:.2g}")
    res = {label: {"ranged": [], "exact": [], "ort": []} for label, _, _ in sizes}
    for _ in range(a.rounds):
        for label, _, f in sizes:
            res[label]["ranged"].append(timed(lambda: rs.run(f), a.runs))
            res[label]["exact"].append(timed(lambda: es[label].run(f), a.runs))
            res[label]["ort"].append(timed(lambda: ref.run(None, f), a.runs))
    cpu = "?"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    name = f"BERT {a.size}" if a.model == "bert" else "ResNet-18"
    print(f"\n{name}, {a.threads} thread(s), {a.rounds} rounds x {a.runs} runs, CPU: {cpu}")
    print(f"{'size':>8} {'ranged ms':>10} {'exact ms':>9} {'ORT ms':>8}  {'ranged/exact':>18}  {'ranged/ORT':>18}")
    for label, _, _ in sizes:
        r = res[label]
        q1 = [x / y for x, y in zip(r["ranged"], r["exact"])]
        q2 = [x / y for x, y in zip(r["ranged"], r["ort"])]
        print(f"{label:>8} {statistics.median(r['ranged']):>10.3f} {statistics.median(r['exact']):>9.3f} "
              f"{statistics.median(r['ort']):>8.3f}  {statistics.median(q1):>5.2f} ({min(q1):.2f}-{max(q1):.2f})"
              f"  {statistics.median(q2):>5.2f} ({min(q2):.2f}-{max(q2):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
