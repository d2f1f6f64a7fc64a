#!/usr/bin/env python3
"""The float ops of a QDQ graph fused with their QuantizeLinear /
DequantizeLinear into one loop from bytes to bytes.

  qdq_fused_test.py --ingot BUILD/ingot --work DIR [--target T]

graph/passes_fuse_elementwise.c takes per-tensor QuantizeLinear and
DequantizeLinear (uint8, int8, constant scales) into elementwise trees, so
that DequantizeLinear -> Mul -> QuantizeLinear -> DequantizeLinear -> Div
-> QuantizeLinear (a HardSwish as ONNX Runtime's quantizer leaves it) runs
as one kernel. Each step computes what the node computes; a QuantizeLinear
step multiplies by 1 / scale instead of dividing only where a check over
every value it can get (its operand computed from at most two bytes) finds
the same rounding. The model, inputs a and b uint8 [256, 256] (every pair
of values once):
  y_div    DQ(a) * DQ(b) -> Q, scales chosen (offline, float32 emulation) so
           that x * (1/scale) rounds 16 of the 65,536 products to another
           output: the kernel must divide;
  y_mul    the same with scales where the multiply is exact: it multiplies;
  y_chain  DQ(a) * 0.5 -> Q int8 -> DQ -> Div 6 -> Q int8 (an int8 chain);
  y_clip   Clip(DQ(b), 0, 6) * DQ(a) -> Q (both divide: the multiply would
           move 8, 6 and 434 values by a step);
  y_float  Relu(DQ(a) * DQ(b)), a float32 output;
  y_add    Q(DQ(a) * 0.25 + DQ(b) * 0.75): in a tree that quantizes no
           product is fused into an Add (one rounding fewer with FMA), so
           the products are kernels of their own.
The reference is onnx.reference (the ONNX definition in numpy float32);
every output must be equal. The schedule dump must show y_div's
QuantizeLinear step dividing and y_mul's multiplying."""
import argparse
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qdq_ort  # noqa: E402

# (a_scale, a_zero, b_scale, b_zero, y_scale, y_zero)
PRODUCTS = {
    "y_div": (0.04134567, 51, 0.032341477, 33, 0.4667974, 128),
    "y_mul": (0.011656492, 17, 0.041883204, 174, 0.05, 100),
}


def make_model(path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes, outputs = [], [], []

    def const(name, value, dtype):
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def dq(x, name, scale, zero, dtype=np.uint8):
        nodes.append(helper.make_node("DequantizeLinear", [x, const(name + "_s", scale, np.float32),
                                                           const(name + "_z", zero, dtype)], [name]))
        return name

    def q(x, name, scale, zero, dtype=np.uint8):
        nodes.append(helper.make_node("QuantizeLinear", [x, const(name + "_s", scale, np.float32),
                                                         const(name + "_z", zero, dtype)], [name]))
        return name

    def op(kind, ins, name, **attrs):
        nodes.append(helper.make_node(kind, ins, [name], **attrs))
        return name

    u8, i8, f32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT
    for name, (sa, za, sb, zb, sy, zy) in PRODUCTS.items():
        p = op("Mul", [dq("a", name + "_da", sa, za), dq("b", name + "_db", sb, zb)], name + "_p")
        q(p, name, sy, zy)
        outputs.append((name, u8))
    half = op("Mul", [dq("a", "c_da", 0.03, 120), const("c_half", 0.5, np.float32)], "c_half_x")
    t = dq(q(half, "c_q1", 0.02, -3, np.int8), "c_dq1", 0.02, -3, np.int8)
    q(op("Div", [t, const("c_six", 6.0, np.float32)], "c_div"), "y_chain", 0.004, 5, np.int8)
    outputs.append(("y_chain", i8))
    clip = op("Clip", [dq("b", "k_db", 0.05, 60), const("k_lo", 0.0, np.float32), const("k_hi", 6.0, np.float32)],
              "k_clip")
    q(op("Mul", [clip, dq("a", "k_da", 0.02, 130)], "k_mul"), "y_clip", 0.03, 90)
    outputs.append(("y_clip", u8))
    op("Relu", [op("Mul", [dq("a", "f_da", 0.01, 100), dq("b", "f_db", 0.02, 140)], "f_mul")], "y_float")
    outputs.append(("y_float", f32))
    pa = op("Mul", [dq("a", "s_da", 0.013, 128), const("s_qa", 0.25, np.float32)], "s_pa")
    pb = op("Mul", [dq("b", "s_db", 0.017, 90), const("s_qb", 0.75, np.float32)], "s_pb")
    q(op("Add", [pa, pb], "s_sum"), "y_add", 0.007, 110)
    outputs.append(("y_add", u8))
    graph = helper.make_graph(nodes, "qdq_fused",
                              [helper.make_tensor_value_info(n, u8, [256, 256]) for n in ("a", "b")],
                              [helper.make_tensor_value_info(n, t, [256, 256]) for n, t in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return model, [n for n, _ in outputs]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--target", default="llvm")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    path = os.path.join(args.work, "qdq_fused.onnx")
    model, names = make_model(path)
    a, b, ref = qdq_ort.byte_pairs_reference(model, names, args.work)

    bundle = os.path.join(args.work, "qdq_fused.ingot")
    r = subprocess.run([args.ingot, "compile", path, "-o", bundle, "--target", args.target, "-q", "--dump-schedule"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"compile failed: {r.stderr.strip()}")
    fused = re.findall(r"workload '(fused [^']*)'", r.stdout)
    failures = []

    def step(scale):
        """The QuantizeLinear step of that scale in a fused kernel's workload."""
        for w in fused:
            m = re.search(r"QuantizeLinear\(\d+,-?\d+;%s,[^)]*\)" % re.escape(scale), w)
            if m:
                return m.group(0)
        return None

    for name, scale, want in (("y_div", "0.466797411", False), ("y_mul", "0.0500000007", True)):
        s = step(scale)
        if s is None:
            failures.append(f"{name}: no fused QuantizeLinear step of scale {scale} in {fused}")
        elif ("1/s" in s) != want:
            failures.append(f"{name}: {s} {'divides' if want else 'multiplies'}")
        else:
            print(f"{name}: {s} ({'multiplies by 1/scale' if want else 'divides'})")
    if not any("QuantizeLinear" in w and "Div(" in w and "int8" in w for w in fused):
        failures.append("y_chain: no fused kernel with int8 QuantizeLinear steps and the Div")
    if any("Add(" in w and ("Mul(" in w or "DequantizeLinear(" in w) for w in fused if "QuantizeLinear(" in w):
        failures.append("y_add: a quantizing kernel adds a product it computes")

    out = os.path.join(args.work, "out.npz")
    r = subprocess.run([args.ingot, "run", bundle, "--input", f"a={args.work}/a.npy", "--input",
                        f"b={args.work}/b.npy", "--output", out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"run failed: {r.stderr.strip()}")
    got = np.load(out)
    for name in names:
        g = got[name]
        if g.dtype != ref[name].dtype:
            failures.append(f"{name}: dtype {g.dtype}, want {ref[name].dtype}")
            continue
        d = g.astype(np.float64) - ref[name].astype(np.float64)
        n = int(np.count_nonzero(d))
        print(f"{name}: {n} of {d.size} outputs differ from onnx.reference")
        if n:
            failures.append(f"{name}: {n} outputs differ (max {float(np.abs(d).max()):g})")
    print(f"{len(fused)} fused kernels")
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print("ok")


if __name__ == "__main__":
    main()
