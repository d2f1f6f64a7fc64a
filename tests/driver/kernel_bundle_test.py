#!/usr/bin/env python3
"""One kernel, one schedule, one target -> a bundle (ingot_driver_build_kernel_bundle),
checked against ONNX Runtime running the same node alone.

Writes a small model (conv 3x3 + fused Relu, conv 1x1 on an intermediate,
MatMul and Gemm with packed weights, Sigmoid, a Relu reading a Flatten view), loads and
optimizes it once in kernel_bundle_tool, builds one-kernel bundles for several
nodes with default and non-default schedules on llvm (if built) and c, runs
each through the runtime API on random inputs, and compares with ONNX Runtime
running a model made of the same node(s) (the ONNX nodes that the optimized
node computes: a conv and the Relu fused into it). Bad node indices, unknown
knobs, out-of-range knob values, a template of the wrong op class and a node
without a kernel of its own must fail with a clear message. One bundle is
also timed with `ingot run --bench`.

  kernel_bundle_test.py --tool kernel_bundle_tool --ingot ingot --work DIR
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def make_model(path):
    rng = np.random.default_rng(3)
    inits = {}

    def w(name, *shape):
        inits[name] = (rng.standard_normal(shape) * 0.3).astype(np.float32)
        return name

    nodes = [
        helper.make_node("Conv", ["x", w("ca.w", 20, 8, 3, 3), w("ca.b", 20)], ["ca"], name="conv_a"),
        helper.make_node("Relu", ["ca"], ["ya"], name="relu_a"),
        # 20 outputs, a multiple of neither 8 nor 16: the conv's output stays
        # in NCHW whatever block this machine's lanes give (24 was blocked
        # as yb_nchw8c on an AVX2 host)
        helper.make_node("Conv", ["ya", w("cb.w", 20, 20, 1, 1)], ["yb"], name="conv_b"),
        helper.make_node("Sigmoid", ["ya"], ["ys"], name="sig"),
        helper.make_node("Sigmoid", ["yb"], ["s2"], name="sig2"),
        helper.make_node("Flatten", ["s2"], ["f2"], name="flat", axis=1),  # a view: no kernel
        helper.make_node("Relu", ["f2"], ["yf"], name="relu_f"),
        helper.make_node("MatMul", ["a", w("m.w", 37, 70)], ["ym"], name="mm"),
        helper.make_node("Gemm", ["g", w("gm.w", 45, 50), w("gm.b", 45)], ["yg"], name="gm", transB=1),
    ]
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", f, [1, 8, 10, 10]),
              helper.make_tensor_value_info("a", f, [2, 5, 37]),
              helper.make_tensor_value_info("g", f, [3, 50])]
    shapes = {"ya": [1, 20, 8, 8], "yb": [1, 20, 8, 8], "ys": [1, 20, 8, 8], "yf": [1, 1280], "ym": [2, 5, 70],
              "yg": [3, 45]}
    outputs = [helper.make_tensor_value_info(n, f, shape) for n, shape in shapes.items()]
    graph = helper.make_graph(nodes, "kernels", inputs, outputs,
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return model


# The ONNX nodes each optimized node computes (Relu is fused into conv_a).
SUBGRAPHS = {"conv_a": ["conv_a", "relu_a"], "conv_b": ["conv_b"], "mm": ["mm"], "gm": ["gm"], "sig": ["sig"],
             "relu_f": ["relu_f"]}


def reference(model, node_names, feeds):
    """ONNX Runtime on a model holding only `node_names` of `model`."""
    nodes = [n for n in model.graph.node if n.name in node_names]
    produced = {o for n in nodes for o in n.output}
    inits = {i.name: i for i in model.graph.initializer}
    used = [i for n in nodes for i in n.input if i not in produced]
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info(i, f, list(feeds[i].shape)) for i in dict.fromkeys(used) if i not in inits]
    out = nodes[-1].output[0]
    out_info = [o for o in model.graph.output if o.name == out]
    g = helper.make_graph(nodes, "one", inputs, out_info,
                          initializer=[inits[i] for i in dict.fromkeys(used) if i in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return out, sess.run(None, {i.name: feeds[i.name] for i in inputs})[0]


def build(tool, model_path, target, work, specs):
    r = subprocess.run([tool, "build", model_path, target, work] + specs, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"kernel_bundle_tool build failed ({r.returncode}): {r.stderr}")
    sys.stderr.write(r.stderr)
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(lines) == len(specs), r.stdout
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--llvm", action="store_true", help="the build has the llvm target")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model_path = os.path.join(args.work, "kernels.onnx")
    model = make_model(model_path)
    failures = []

    good = ["conv_a", "conv_a@contraction.direct:max_rows=2,unroll=1,order=1,threads=1", "conv_b",
            "mm", "mm:unroll=2,order=1", "gm", "gm:max_rows=4", "gm@contraction.plain", "sig", "sig@injective:threads=1", "relu_f"]
    bad = {"#99999": "node 99999: the graph has",
           "conv_a:bogus=3": "has no knob 'bogus'",
           "conv_a:max_rows=99": "max_rows=99",
           "conv_a@pool": "does not fit its op class",
           "conv_a@no.such.template": "unknown schedule template 'no.such.template'",
           "flat": "has no kernel of its own"}
    plans = [("c", good[:3] + ["mm", "sig"] + list(bad))]
    if args.llvm:
        plans.insert(0, ("llvm", good + list(bad)))
    checked = 0
    rng = np.random.default_rng(11)
    timed = None
    for target, specs in plans:
        work = os.path.join(args.work, target)
        os.makedirs(work, exist_ok=True)
        for spec, res in zip(specs, build(args.tool, model_path, target, work, specs)):
            what = f"[{target}] {spec}"
            if spec in bad:
                if res["ok"] or bad[spec] not in res["error"]:
                    failures.append(f"{what}: expected an error with {bad[spec]!r}, got {res}")
                else:
                    print(f"ok   {what}: refused: {res['error']}")
                continue
            if not res["ok"]:
                failures.append(f"{what}: {res['error']}")
                continue
            if res["steps"] != 1:
                failures.append(f"{what}: {res['steps']} steps, want 1")
            feeds, in_files = {}, []
            for i, t in enumerate(res["inputs"]):
                assert t["dtype"] == "float32", t
                feeds[t["name"]] = rng.standard_normal(t["dims"]).astype(np.float32)
                in_files.append(os.path.join(work, f"k{res['spec']}.in{i}.bin"))
                feeds[t["name"]].tofile(in_files[-1])
            out_files = [os.path.join(work, f"k{res['spec']}.out{i}.bin") for i in range(len(res["outputs"]))]
            r = subprocess.run([args.tool, "run", res["bundle"]] + in_files + ["--"] + out_files,
                               capture_output=True, text=True)
            if r.returncode != 0:
                failures.append(f"{what}: run failed: {r.stderr.strip()}")
                continue
            name, want = reference(model, SUBGRAPHS[res["node"]], feeds)
            if [t["name"] for t in res["outputs"]] != [name]:
                failures.append(f"{what}: outputs {res['outputs']}, want [{name}]")
                continue
            got = np.fromfile(out_files[0], dtype=np.float32).reshape(res["outputs"][0]["dims"])
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-4):
                err = np.max(np.abs(got - want)) if got.shape == want.shape else f"shape {got.shape} vs {want.shape}"
                failures.append(f"{what}: differs from onnxruntime (max abs error {err})")
                continue
            checked += 1
            timed = timed or res
            print(f"ok   {what}: node {res['node']} ({res['op']}), inputs "
                  f"{[(t['name'], t['dims']) for t in res['inputs']]}, built in {res['build_ms']} ms, "
                  f"max abs error {np.max(np.abs(got - want)):.2e}")

    # The existing runtime times it.
    if timed:
        r = subprocess.run([args.ingot, "run", timed["bundle"], "--bench", "3", "--threads", "1"],
                           capture_output=True, text=True)
        if r.returncode != 0 or "ms" not in r.stdout:
            failures.append(f"ingot run --bench on {timed['bundle']}: rc {r.returncode}: {r.stdout} {r.stderr}")
        else:
            print("ok   ingot run --bench:", " ".join(r.stdout.split()))
    if checked == 0:
        failures.append("no bundle was checked")
    for f in failures:
        print("FAIL", f)
    print(f"{checked} one-kernel bundles match onnxruntime, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
