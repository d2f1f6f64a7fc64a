#!/usr/bin/env python3
"""Runs the ONNX node tests of the shape and data-movement ops through Ingot.

  node_tests.py --ingot BUILD/ingot [--filter REGEX] [--work DIR] [-v]

For each test whose model uses one of OPS: `ingot compile`, then `ingot run`
on the test's inputs, then a comparison with the expected outputs (rtol 1e-3,
atol 1e-5). The node tests feed shape-deciding inputs (Reshape's shape, Slice
bounds, pads, scales, ...) as graph inputs; Ingot needs those at compile time,
so when compile says an input "must be known at compile time" this script
makes that input an initializer holding the test's data (what a user does
with such a model) and compiles again. Prints one line per test and totals.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

OPS = {"Shape", "Size", "Gather", "GatherElements", "GatherND", "ScatterND", "ScatterElements", "Scatter",
       "Slice", "Split", "Pad", "Expand", "Tile", "Range", "ConstantOfShape", "Squeeze", "Unsqueeze",
       "Resize", "Upsample", "DepthToSpace", "SpaceToDepth", "Concat", "Transpose", "Reshape", "Flatten",
       "Identity", "Trilu", "Dropout"}


# Refusals that are expected (documented limits), for --strict.
KNOWN_REFUSALS = (
    "has an empty dimension",          # zero-size graph outputs/inputs
    "antialias=1 is not supported",
    "training_mode must be a constant false",
    "float16 is not supported", "BFLOAT16", "FLOAT16",
    "test data not tensors",           # sequence / optional inputs
)


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def run_one(ingot, test_dir, work, verbose):
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    data_dir = os.path.join(test_dir, "test_data_set_0")
    inputs = {}
    n = 0
    while os.path.exists(os.path.join(data_dir, f"input_{n}.pb")):
        t = load_pb(os.path.join(data_dir, f"input_{n}.pb"))
        inputs[t.name or model.graph.input[n].name] = numpy_helper.to_array(t)
        n += 1
    outputs = []
    n = 0
    while os.path.exists(os.path.join(data_dir, f"output_{n}.pb")):
        t = load_pb(os.path.join(data_dir, f"output_{n}.pb"))
        outputs.append((t.name or model.graph.output[n].name, numpy_helper.to_array(t)))
        n += 1
    bound = set()
    for _ in range(8):
        mpath = os.path.join(work, "model.onnx")
        onnx.save(model, mpath)
        bundle = os.path.join(work, "m.ingot")
        r = subprocess.run([ingot, "compile", mpath, "-o", bundle], capture_output=True, text=True, timeout=300)
        if r.returncode == 0:
            break
        m = re.search(r"input '[^']*' \('([^']+)'\) decides the output shape and must be known at compile time, but "
                      r"it is a graph input", r.stderr)
        if not m or m.group(1) not in inputs or m.group(1) in bound:
            return "refused", r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"rc {r.returncode}"
        name = m.group(1)
        bound.add(name)
        model.graph.initializer.append(numpy_helper.from_array(inputs[name], name))
        keep = [i for i in model.graph.input if i.name != name]
        del model.graph.input[:]
        model.graph.input.extend(keep)
    else:
        return "refused", "too many inputs to bind"
    args = [ingot, "run", bundle, "--output", os.path.join(work, "out.npz"), "--threads", "1"]
    for name, arr in inputs.items():
        if name in bound:
            continue
        p = os.path.join(work, f"in_{len(args)}.npy")
        np.save(p, arr)
        args += ["--input", f"{name}={p}"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return ("crashed" if r.returncode < 0 else "error"), (r.stderr.strip().splitlines() or ["?"])[-1]
    got = np.load(os.path.join(work, "out.npz"))
    for name, want in outputs:
        key = name.replace("/", "_")
        if key not in got:
            return "wrong", f"output {name} missing"
        g = got[key]
        if g.dtype != want.dtype or g.shape != want.shape:
            return "wrong", f"{name}: got {g.dtype}{list(g.shape)}, want {want.dtype}{list(want.shape)}"
        if want.dtype.kind in "fc":
            ok = np.isclose(g, want, rtol=1e-3, atol=1e-5, equal_nan=True)
        else:
            ok = g == want
        if not np.all(ok):
            bad = np.argwhere(~ok)[0]
            return "wrong", f"{name}: at {tuple(bad)} got {g[tuple(bad)]} want {want[tuple(bad)]}"
    return "passed", ("bound " + ",".join(sorted(bound))) if bound else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--filter", default="")
    ap.add_argument("--work", default=None)
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 unless every test passes or is refused for a KNOWN_REFUSALS reason")
    a = ap.parse_args()
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    counts = {}
    unexpected = []
    work = a.work or tempfile.mkdtemp(prefix="shapeops_")
    os.makedirs(work, exist_ok=True)
    for suite in ("node", "pytorch-converted", "pytorch-operator"):
        d = os.path.join(root, suite)
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if not os.path.exists(os.path.join(path, "model.onnx")) or not re.search(a.filter, name):
                continue
            model = onnx.load(os.path.join(path, "model.onnx"), load_external_data=False)
            ops = [n.op_type for n in model.graph.node]
            if not ops or not all(o in OPS for o in ops):
                continue
            try:
                cat, why = run_one(a.ingot, path, work, a.v)
            except subprocess.TimeoutExpired:
                cat, why = "hung", ""
            except (ValueError, TypeError, onnx.onnx_cpp2py_export.checker.ValidationError) as e:
                cat, why = "refused", f"test data not tensors: {str(e)[:60]}"
            counts[cat] = counts.get(cat, 0) + 1
            print(f"{cat:8s} {suite}/{name} {why}")
            if cat != "passed" and not (cat == "refused" and any(k in why for k in KNOWN_REFUSALS)):
                unexpected.append(f"{suite}/{name}")
    print("totals:", counts)
    if unexpected:
        print("unexpected:", " ".join(unexpected))
    return 1 if a.strict and (unexpected or not counts.get("passed")) else 0


if __name__ == "__main__":
    sys.exit(main())
