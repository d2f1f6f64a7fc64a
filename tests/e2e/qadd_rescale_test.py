#!/usr/bin/env python3
"""QDQ residual sums rescaled by a multiply only where it is the division's result.

  qadd_rescale_test.py --ingot BUILD/ingot --work DIR [--target T]

ONNX defines DequantizeLinear x2 -> Add -> QuantizeLinear as
round((sa (a - za) + sb (b - zb)) / sc) + zc. Ingot runs it as one
QLinearAdd kernel (ingot_graph_fuse_qdq) and multiplies by 1 / sc instead
of dividing where a check at compile time over all 65,536 input byte pairs
shows every output the same (lower_quant.c, choose_rescale); where the
zero point may also be added before rounding (one fused multiply-add), it
does that too; and where it may, it folds the scales and zero points into
round(a * A + (b * B + C)) on the bytes. The model holds four such sums
over the same inputs, the scales and zero points chosen (offline, by
emulating the float32 arithmetic) so that one takes each path:
  y_div   the multiply rounds some pair to another output, in each form of the sum:
          the kernel must divide (multiplying makes outputs differ);
  y_mul   the multiply is exact, adding the zero point first is not, fused
          or not, in each form (doing it makes outputs differ);
  y_fma   both are exact, the folded sum is not, in each of its forms (two
          products rounded, either or both fused: two outputs differ);
  y_fold  all three are exact.
For each, the sum's three float32 forms (two rounded products, or either
one fused into the addition) give the same outputs, so the comparison
holds whether or not the code generator fuses.

Inputs: a and b uint8 [256, 256], every pair of values once. The reference
is onnx.reference (the ONNX definition in numpy float32); outputs must be
equal, and the kernels' loop IR (--dump-ir) must show one division by
c_scale, one multiply rounded before the zero point, one after, and one
sum of the bytes that reads no zero point."""
import argparse
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qdq_ort  # noqa: E402

# (a_scale, a_zero, b_scale, b_zero, c_scale, c_zero), float32 values
CASES = {
    "y_div": (0.04208139330148697, 120, 0.02960541471838951, 103, 0.040660299360752106, 212),
    "y_mul": (0.016772545874118805, 115, 0.018432101234793663, 23, 0.041640158742666245, 85),
    "y_fma": (0.038773797452449799, 175, 0.029147513210773468, 226, 0.029096793383359909, 240),
    "y_fold": (0.03778522461652756, 153, 0.013455548323690891, 142, 0.007481598295271397, 70),
}


def make_model(path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes, outputs = [], [], []
    for name, (sa, za, sb, zb, sc, zc) in CASES.items():
        for tag, v, dt in (("sa", sa, np.float32), ("za", za, np.uint8), ("sb", sb, np.float32),
                           ("zb", zb, np.uint8), ("sc", sc, np.float32), ("zc", zc, np.uint8)):
            inits.append(numpy_helper.from_array(np.array(v, dtype=dt), f"{name}_{tag}"))
        nodes += [
            helper.make_node("DequantizeLinear", ["a", f"{name}_sa", f"{name}_za"], [f"{name}_da"]),
            helper.make_node("DequantizeLinear", ["b", f"{name}_sb", f"{name}_zb"], [f"{name}_db"]),
            helper.make_node("Add", [f"{name}_da", f"{name}_db"], [f"{name}_sum"]),
            helper.make_node("QuantizeLinear", [f"{name}_sum", f"{name}_sc", f"{name}_zc"], [name]),
        ]
        outputs.append(helper.make_tensor_value_info(name, TensorProto.UINT8, [256, 256]))
    graph = helper.make_graph(nodes, "qadd_rescale",
                              [helper.make_tensor_value_info(n, TensorProto.UINT8, [256, 256]) for n in ("a", "b")],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--target", default="llvm")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    path = os.path.join(args.work, "qadd_rescale.onnx")
    model = make_model(path)
    a, b, ref = qdq_ort.byte_pairs_reference(model, CASES, args.work)

    bundle = os.path.join(args.work, "qadd_rescale.ingot")
    r = subprocess.run([args.ingot, "compile", path, "-o", bundle, "--target", args.target, "-q", "--dump-ir"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"compile failed: {r.stderr.strip()}")
    kernels = re.findall(r"^func (qlinearadd_\w+)\(.*?^}", r.stdout, re.S | re.M)
    bodies = re.findall(r"^func qlinearadd_\w+\(.*?^}", r.stdout, re.S | re.M)
    failures = []
    if len(bodies) != 4:
        failures.append(f"{len(bodies)} distinct qlinearadd kernels, not 4 (fused QDQ sums, one a path)")
    divide = sum("/ c_scale[0]" in k for k in bodies)
    # round(x * r) + zero, printed "round(.. * R) + float32(c_zero[0]), lo)",
    # against round((x * r) + zero), "round((.. * R) + float32(c_zero[0])), lo)"
    after = sum(bool(re.search(r"\* [0-9.e+-]+f\) \+ float32\(c_zero\[0\]\), ", k)) for k in bodies)
    before = sum(bool(re.search(r"\* [0-9.e+-]+f\) \+ float32\(c_zero\[0\]\)\), ", k)) for k in bodies)
    # round((float32(a[i]) * A) + ((float32(b[i]) * B) + C)): no zero point read
    folded = sum("zero[0]" not in k.split("{", 1)[1] and "float32(a[" in k for k in bodies)
    if (divide, after, before, folded) != (1, 1, 1, 1):
        failures.append(f"kernels: {divide} divide, {after} multiply then round, {before} multiply-add, "
                        f"{folded} folded (want one each)")

    out = os.path.join(args.work, "out.npz")
    r = subprocess.run([args.ingot, "run", bundle, "--input", f"a={args.work}/a.npy", "--input",
                        f"b={args.work}/b.npy", "--output", out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"run failed: {r.stderr.strip()}")
    got = np.load(out)
    for name in CASES:
        d = got[f"{name}.npy" if f"{name}.npy" in got.files else name].astype(int) - ref[name].astype(int)
        n = int(np.count_nonzero(d))
        print(f"{name}: {n} of {d.size} outputs differ from onnx.reference")
        if n:
            failures.append(f"{name}: {n} outputs differ (max {int(np.abs(d).max())} steps)")
    print(f"kernels: {len(kernels)} qlinearadd ({divide} divide, {after} multiply, {before} multiply-add, "
          f"{folded} folded)")
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print("ok")


if __name__ == "__main__":
    main()
