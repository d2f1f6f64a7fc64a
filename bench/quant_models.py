#!/usr/bin/env python3
"""Latency of the quantized and float16 test models (models/make_quant_zoo.py)
beside ONNX Runtime running the same file and Ingot running the float model
it came from, for the closing figures of issue 14. Not a test.

  python bench/quant_models.py --zoo build/models/quant_zoo --ingot build/ingot \\
      [--target 'llvm -mcpu=znver4'] [--threads 1 2] [--rounds 5] [--runs 10] NAME...

Each NAME (e.g. resnet18_qdq_pc) and its float model (the .json beside it
names it) are compiled once with --target; then for each thread count, in
ROUNDS interleaved rounds: Ingot on the quantized bundle (`ingot run --bench
RUNS`, its median), ONNX Runtime on the same quantized file (RUNS runs after
a warm one, median), Ingot on the float bundle. Printed: the median over
rounds of each, and ingot / ort as the median of the per-round ratios with
the lowest and highest round. Inputs are random (seed 0) of the model's
shape, or --input-shape NAME=DIMS for symbolic dimensions; the same arrays
go to both engines.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16}


def inputs_of(path, shapes):
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(0)
    out = {}
    for i in m.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        dims = shapes.get(i.name) or [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
        dt = DTYPES[t.elem_type]
        if dt in (np.int64, np.int32):
            out[i.name] = rng.integers(0, 2, size=dims).astype(dt)
        else:
            out[i.name] = rng.standard_normal(dims).astype(dt)
    return out


def ingot_median(ingot, bundle, npys, threads, runs):
    cmd = [ingot, "run", bundle, "--bench", str(runs), "--threads", str(threads)]
    for name, path in npys.items():
        cmd += ["--input", f"{name}={path}"]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return float(re.search(r"median ([0-9.]+) ms", p.stdout + p.stderr).group(1))


def ort_median(session, feeds, runs):
    session.run(None, feeds)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        session.run(None, feeds)
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zoo", required=True)
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--target", default="llvm")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--input-shape", action="append", default=[])
    ap.add_argument("names", nargs="+")
    a = ap.parse_args()
    shapes = {}
    for s in a.input_shape:
        k, v = s.split("=")
        shapes[k] = [int(d) for d in v.split("x")]
    work = tempfile.mkdtemp(prefix="ingot-qlat-")
    print(f"{'model':28} {'thr':>3} {'ingot int8':>10} {'ort int8':>9} {'ingot fp':>9} {'ingot/ort (lo-hi)':>20} "
          f"{'ingot q/fp':>10}")
    for name in a.names:
        qpath = os.path.join(a.zoo, name + ".onnx")
        fpath = os.path.join(a.zoo, json.load(open(os.path.join(a.zoo, name + ".json")))["float"])
        feeds = inputs_of(qpath, shapes)
        npys = {}
        for k, v in feeds.items():
            npys[k] = os.path.join(work, f"{name}_{k}.npy")
            np.save(npys[k], v)
        shape_flags = []
        for k, v in feeds.items():
            shape_flags += ["--input-shape", f"{k}={'x'.join(str(d) for d in v.shape)}"]
        qb, fb = os.path.join(work, name + ".q.ingot"), os.path.join(work, name + ".f.ingot")
        for src, dst in ((qpath, qb), (fpath, fb)):
            subprocess.run([a.ingot, "compile", src, "-o", dst, "--target", a.target, "-q", *shape_flags],
                           check=True, capture_output=True)
        for t in a.threads:
            so = ort.SessionOptions()
            so.intra_op_num_threads = t
            sess = ort.InferenceSession(qpath, so, providers=["CPUExecutionProvider"])
            qi, qo, fi, ratios = [], [], [], []
            for _ in range(a.rounds):
                x = ingot_median(a.ingot, qb, npys, t, a.runs)
                y = ort_median(sess, feeds, a.runs)
                z = ingot_median(a.ingot, fb, npys, t, a.runs)
                qi.append(x)
                qo.append(y)
                fi.append(z)
                ratios.append(x / y)
            med = statistics.median
            print(f"{name:28} {t:>3} {med(qi):>10.2f} {med(qo):>9.2f} {med(fi):>9.2f} "
                  f"{med(ratios):>6.2f} ({min(ratios):.2f}-{max(ratios):.2f}) {med(qi) / med(fi):>10.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
