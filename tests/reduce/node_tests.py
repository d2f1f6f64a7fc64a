#!/usr/bin/env python3
"""Runs ONNX backend node tests of slice B's ops through `ingot compile` and
`ingot run` and compares with the expected outputs (rtol 1e-3, atol 1e-5).

  node_tests.py --ingot BUILD/ingot [--filter REGEX]... [--list FILE] [--jobs N]
                [--write-list FILE]

Graph inputs that feed an input slot which must be constant (Reduce* axes,
TopK K, CumSum axis, ...) are baked into the model as initializers (their data
comes from the test's input_N.pb), as a real export has them. Prints one line
per test: PASS, FAIL (wrong result), REFUSED (compile error, with the reason)
or CRASH. Exit 0 when every test in --list passes. The official runner
(tests/conformance/run.py) feeds such inputs at run time, so it refuses these
tests; this script guards the ops themselves. --write-list FILE writes the
names of the passing tests. NODE_TESTS_TARGET=TARGET in the environment
passes --target TARGET to `ingot compile`.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")

# op -> input slots that must be compile-time constants
CONST_SLOTS = {
    "ReduceSum": [1], "ReduceMean": [1], "ReduceMax": [1], "ReduceMin": [1], "ReduceProd": [1],
    "ReduceL1": [1], "ReduceL2": [1], "ReduceLogSum": [1], "ReduceLogSumExp": [1],
    "ReduceSumSquare": [1], "TopK": [1], "CumSum": [1], "CumProd": [1], "DFT": [1, 2], "Col2Im": [1, 2], "MaxUnpool": [2], "LSTM": [4], "GRU": [4], "RNN": [4],
    "Unsqueeze": [1], "Squeeze": [1], "Reshape": [1], "ConvTranspose": [], "Expand": [1],
    "ConstantOfShape": [0], "Slice": [1, 2, 3, 4], "Tile": [1], "Pad": [1, 2, 3], "Range": [0, 1, 2],
}


def bake(model, feeds):
    """Turns graph inputs used in constant slots into initializers."""
    const = set()
    for node in model.graph.node:
        for slot in CONST_SLOTS.get(node.op_type, []):
            if slot < len(node.input) and node.input[slot]:
                const.add(node.input[slot])
    kept = []
    for inp in model.graph.input:
        if inp.name in const and inp.name in feeds:
            model.graph.initializer.append(numpy_helper.from_array(feeds[inp.name], inp.name))
            del feeds[inp.name]
        else:
            kept.append(inp)
    del model.graph.input[:]
    model.graph.input.extend(kept)


def run_one(ingot, test_dir, work):
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    ds = os.path.join(test_dir, "test_data_set_0")
    names = [i.name for i in model.graph.input if i.name not in {x.name for x in model.graph.initializer}]
    feeds = {}
    for k, name in enumerate(names):
        p = os.path.join(ds, f"input_{k}.pb")
        if os.path.exists(p):
            t = onnx.TensorProto()
            t.ParseFromString(open(p, "rb").read())
            feeds[name] = numpy_helper.to_array(t)
    expected = []
    for k in range(len(model.graph.output)):
        t = onnx.TensorProto()
        t.ParseFromString(open(os.path.join(ds, f"output_{k}.pb"), "rb").read())
        expected.append(numpy_helper.to_array(t))
    bake(model, feeds)
    mpath = os.path.join(work, "model.onnx")
    onnx.save(model, mpath)
    bpath = os.path.join(work, "model.ingot")
    try:
        p = subprocess.run([ingot, "compile", mpath, "-o", bpath] + (["--target", os.environ["NODE_TESTS_TARGET"]] if os.environ.get("NODE_TESTS_TARGET") else []), capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "CRASH", "compile hung"
    if p.returncode != 0:
        msg = (p.stderr.strip().splitlines() or ["?"])[-1]
        return ("REFUSED" if p.returncode == 1 else "CRASH"), msg
    cmd = [ingot, "run", bpath, "--threads", "2", "--output", os.path.join(work, "out.npz")]
    for name, arr in feeds.items():
        f = os.path.join(work, re.sub(r"[^A-Za-z0-9_]", "_", name) + ".npy")
        np.save(f, arr)
        cmd += ["--input", f"{name}={f}"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "CRASH", "run hung"
    if p.returncode != 0:
        msg = (p.stderr.strip().splitlines() or ["?"])[-1]
        return ("REFUSED" if p.returncode == 1 else "CRASH"), "run: " + msg
    out = np.load(os.path.join(work, "out.npz"))
    for k, o in enumerate(model.graph.output):
        member = "".join("_" if c in "/\\" else c for c in o.name)
        got = out[member]
        want = expected[k]
        if got.shape != want.shape:
            return "FAIL", f"output {o.name}: shape {got.shape} != {want.shape}"
        if want.dtype.kind in "fc":
            w = want.astype(np.float64)
            g = got.astype(np.float64)
            with np.errstate(invalid="ignore"):
                bad = ~((np.abs(g - w) <= 1e-5 + 1e-3 * np.abs(w)) | (np.isnan(w) & np.isnan(g)) | (g == w))
            if bad.any():
                i = np.argwhere(bad)[0]
                return "FAIL", f"output {o.name}: {bad.sum()} mismatches, first at {tuple(i)}: {g[tuple(i)]} vs {w[tuple(i)]}"
        else:
            if got.dtype != want.dtype and not (got.dtype.kind == want.dtype.kind):
                return "FAIL", f"output {o.name}: dtype {got.dtype} != {want.dtype}"
            if not np.array_equal(got, want):
                return "FAIL", f"output {o.name}: values differ"
    return "PASS", ""


def run_named(ingot, t):
    d = next((os.path.join(DATA, f, t) for f in ("node", "pytorch-converted", "pytorch-operator")
              if os.path.isdir(os.path.join(DATA, f, t))), None)
    if d is None:
        return "MISSING", ""
    with tempfile.TemporaryDirectory() as work:
        try:
            return run_one(ingot, d, work)
        except Exception as e:  # noqa: BLE001
            return "CRASH", f"runner: {e}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--filter", action="append", default=[])
    ap.add_argument("--list", help="file of test names that must pass")
    ap.add_argument("--write-list", help="write the names of the passing tests here")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    tests = []
    if a.list:
        tests = [l.strip() for l in open(a.list) if l.strip() and not l.startswith("#")]
    for pat in a.filter:
        for folder in ("node", "pytorch-converted", "pytorch-operator"):
            for t in sorted(os.listdir(os.path.join(DATA, folder))):
                if re.search(pat, t):
                    tests.append(t)
    counts = {}
    failed = 0
    passing = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for t, (status, why) in zip(tests, pool.map(lambda t: run_named(a.ingot, t), tests)):
            counts[status] = counts.get(status, 0) + 1
            if status == "PASS":
                passing.append(t)
            else:
                failed += 1
            print(f"{status:8s} {t}  {why}", flush=True)
    print("totals: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if a.write_list:
        with open(a.write_list, "w") as f:
            f.write("# slice B node tests that pass with constant-slot inputs baked in (node_tests.py)\n")
            f.write("".join(t + "\n" for t in sorted(set(passing))))
    return 1 if (a.list and failed) else 0


if __name__ == "__main__":
    sys.exit(main())
