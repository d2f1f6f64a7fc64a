#!/usr/bin/env python3
"""The elementwise family against ONNX Runtime on inputs chosen for the edge
cases the node suite does not reach: integer Div and Mod with negative
operands (truncation vs floor), fmod, Cast float -> int (truncation, negative)
and -> bool (NaN), Round ties, Sign of 0 and NaN, IsInf flags, Pow with mixed
types, integer Min/Max/Relu/Clip/Abs/Neg, int8/uint8 arithmetic, comparisons
of int64, Where on int32, activations with non-default attributes, float64
unary math; and the window functions (HannWindow, HammingWindow,
BlackmanWindow: their size a weight) in the output dtypes besides float32.

  ops_vs_ort.py --ingot BUILD/ingot --work DIR
"""
import argparse
import math
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

NP_TO_ONNX = {np.float32: onnx.TensorProto.FLOAT, np.float64: onnx.TensorProto.DOUBLE, np.float16: onnx.TensorProto.FLOAT16,
              np.uint16: onnx.TensorProto.UINT16, np.int16: onnx.TensorProto.INT16,
              np.int64: onnx.TensorProto.INT64, np.int32: onnx.TensorProto.INT32,
              np.int8: onnx.TensorProto.INT8, np.uint8: onnx.TensorProto.UINT8, np.bool_: onnx.TensorProto.BOOL}


def model_for(op, inputs, out_dtype, attrs, opset, weights=()):
    """inputs are graph inputs in0, in1, ...; weights (after them) initializers w0, w1, ..."""
    names = [f"in{i}" for i in range(len(inputs))]
    vis = [helper.make_tensor_value_info(n, NP_TO_ONNX[a.dtype.type], list(a.shape)) for n, a in zip(names, inputs)]
    inits = [numpy_helper.from_array(w, f"w{i}") for i, w in enumerate(weights)]
    out = helper.make_tensor_value_info("out", NP_TO_ONNX[out_dtype], None)
    node = helper.make_node(op, names + [t.name for t in inits], ["out"], name=f"{op.lower()}_node", **attrs)
    return helper.make_model(helper.make_graph([node], op, vis, [out], initializer=inits),
                             opset_imports=[helper.make_opsetid("", opset)])


F = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -3.7, 3.7, 0.0, -0.0, 1e-3, 42.25], dtype=np.float32)
I = np.array([-7, -6, -5, -1, 0, 1, 5, 6, 7, 100, -100, 3], dtype=np.int64)
J = np.array([2, -2, 3, -3, 5, 4, -4, 3, -2, 7, 7, -5], dtype=np.int64)

CASES = [
    # (name, op, inputs, out dtype, attrs)
    ("div_i64", "Div", [I, J], np.int64, {}),
    ("div_i32", "Div", [I.astype(np.int32), J.astype(np.int32)], np.int32, {}),
    ("div_i8", "Div", [I.astype(np.int8), J.astype(np.int8)], np.int8, {}),
    ("div_u8", "Div", [np.abs(I).astype(np.uint8), np.abs(J).astype(np.uint8)], np.uint8, {}),
    ("mod_i64", "Mod", [I, J], np.int64, {}),
    ("mod_i64_fmod", "Mod", [I, J], np.int64, {"fmod": 1}),
    ("mod_i32_fmod", "Mod", [I.astype(np.int32), J.astype(np.int32)], np.int32, {"fmod": 1}),
    ("mod_f32_fmod", "Mod", [F * 3, np.full(12, -1.25, np.float32)], np.float32, {"fmod": 1}),
    ("add_i8", "Add", [I.astype(np.int8), J.astype(np.int8)], np.int8, {}),
    ("mul_u8", "Mul", [np.abs(I).astype(np.uint8) % 16, np.abs(J).astype(np.uint8)], np.uint8, {}),
    ("sub_i32", "Sub", [I.astype(np.int32), J.astype(np.int32)], np.int32, {}),
    ("add_f64", "Add", [F.astype(np.float64), F.astype(np.float64)[::-1].copy()], np.float64, {}),
    ("cast_f32_i32", "Cast", [F * 3], np.int32, {"to": onnx.TensorProto.INT32}),
    ("cast_f32_i64", "Cast", [F * 3], np.int64, {"to": onnx.TensorProto.INT64}),
    ("cast_f32_u8", "Cast", [np.abs(F) * 3], np.uint8, {"to": onnx.TensorProto.UINT8}),
    ("cast_f32_bool", "Cast", [np.array([0, -0.0, 1, np.nan, -2, 1e-30], np.float32)], np.bool_,
     {"to": onnx.TensorProto.BOOL}),
    ("cast_i64_f64", "Cast", [I], np.float64, {"to": onnx.TensorProto.DOUBLE}),
    ("cast_bool_f32", "Cast", [I > 0], np.float32, {"to": onnx.TensorProto.FLOAT}),
    ("cast_f64_f32", "Cast", [F.astype(np.float64) / 3], np.float32, {"to": onnx.TensorProto.FLOAT}),
    ("round", "Round", [F], np.float32, {}),
    ("round_f64", "Round", [F.astype(np.float64) * 3], np.float64, {}),
    ("sign_f32", "Sign", [np.array([-2, 0, -0.0, 3, np.inf, -np.inf], np.float32)], np.float32, {}),
    ("sign_i64", "Sign", [I], np.int64, {}),
    ("abs_i8", "Abs", [I.astype(np.int8)], np.int8, {}),
    ("neg_i32", "Neg", [I.astype(np.int32)], np.int32, {}),
    ("relu_i64", "Relu", [I], np.int64, {}),
    ("relu_f64", "Relu", [F.astype(np.float64)], np.float64, {}),
    ("isinf_pos", "IsInf", [np.array([np.inf, -np.inf, 0, np.nan], np.float32)], np.bool_, {"detect_negative": 0}),
    ("isinf_neg", "IsInf", [np.array([np.inf, -np.inf, 0, np.nan], np.float32)], np.bool_, {"detect_positive": 0}),
    ("isnan", "IsNaN", [np.array([np.inf, np.nan, 0, -np.nan], np.float32)], np.bool_, {}),
    ("pow_i64_i64", "Pow", [I % 5, np.abs(J) % 4], np.int64, {}),
    ("pow_f32_i64", "Pow", [F, np.abs(J) % 4], np.float32, {}),
    ("pow_i32_f32", "Pow", [(np.abs(I) % 7).astype(np.int32), np.full(12, 0.5, np.float32)], np.int32, {}),
    ("min_i32", "Min", [I.astype(np.int32), J.astype(np.int32), np.full(12, 3, np.int32)], np.int32, {}),
    ("max_u8", "Max", [np.abs(I).astype(np.uint8), np.abs(J).astype(np.uint8)], np.uint8, {}),
    ("mean3", "Mean", [F, F * 2, np.float32(1.5) * np.ones((3, 1), np.float32)], np.float32, {}),
    ("less_i64", "Less", [I, J], np.bool_, {}),
    ("gte_i32", "GreaterOrEqual", [I.astype(np.int32), J.astype(np.int32)], np.bool_, {}),
    ("equal_bool", "Equal", [I > 0, J > 0], np.bool_, {}),
    ("xor", "Xor", [I > 0, J > 0], np.bool_, {}),
    ("where_i32", "Where", [I > J, I.astype(np.int32), J.astype(np.int32)], np.int32, {}),
    ("leakyrelu", "LeakyRelu", [F], np.float32, {"alpha": 0.3}),
    ("elu", "Elu", [F], np.float32, {"alpha": 0.7}),
    ("selu", "Selu", [F], np.float32, {"alpha": 1.5, "gamma": 2.0}),
    ("celu", "Celu", [F], np.float32, {"alpha": 2.0}),
    ("hardsigmoid", "HardSigmoid", [F * 4], np.float32, {"alpha": 0.3, "beta": 0.4}),
    ("thresholdedrelu", "ThresholdedRelu", [F], np.float32, {"alpha": 0.5}),
    ("gelu_tanh", "Gelu", [F], np.float32, {"approximate": "tanh"}),
    ("softplus_big", "Softplus", [np.array([-100, -20, 0, 20, 80, 100], np.float32)], np.float32, {}),
    ("prelu_bcast", "PRelu", [np.arange(-12, 12, dtype=np.float32).reshape(2, 3, 4), np.array([[0.1], [0.2], [0.3]], np.float32)],
     np.float32, {}),
    ("clip_i32", "Clip", [I.astype(np.int32), np.array(-5, np.int32), np.array(6, np.int32)], np.int32, {}),
    ("exp_f64", "Exp", [F.astype(np.float64)], np.float64, {}),
    ("tanh_f64", "Tanh", [F.astype(np.float64)], np.float64, {}),
    ("sigmoid_f64", "Sigmoid", [F.astype(np.float64)], np.float64, {}),
    ("erf_f64", "Erf", [F.astype(np.float64)], np.float64, {}),
    ("atan_f64", "Atan", [F.astype(np.float64) * 10], np.float64, {}),
    ("swish_alpha", "Swish", [F * 4], np.float32, {"alpha": 0.5}),
    ("swish_f64", "Swish", [F.astype(np.float64) * 30], np.float64, {"alpha": -1.5}),
]

# Ops whose one input is a weight (a window's size): (name, op, weight,
# output dtype, attributes).
WEIGHT_CASES = [
    ("hann_f64_symmetric", "HannWindow", np.array(9, np.int64), np.float64, {"periodic": 0, "output_datatype": 11}),
    ("hann_f16", "HannWindow", np.array(12, np.int32), np.float16, {"output_datatype": 10}),
    ("hamming_f64", "HammingWindow", np.array(33, np.int64), np.float64, {"output_datatype": 11}),
    ("hamming_i32_symmetric", "HammingWindow", np.array(9, np.int64), np.int32, {"periodic": 0, "output_datatype": 6}),
    ("blackman_u8", "BlackmanWindow", np.array(11, np.int32), np.uint8, {"output_datatype": 2}),
    ("blackman_f64_symmetric", "BlackmanWindow", np.array(20, np.int64), np.float64, {"periodic": 0, "output_datatype": 11}),
]


# References where onnxruntime has no kernel for the dtype.
NUMPY_REFS = {
    "relu_i64": lambda x: np.maximum(x, 0),
    "abs_i8": np.abs,
    "neg_i32": np.negative,
    "sign_i64": np.sign,
    "clip_i32": lambda x, lo, hi: np.clip(x, lo, hi),
    "max_u8": np.maximum,
    "min_i32": lambda a, b, c: np.minimum(np.minimum(a, b), c),
    "erf_f64": np.vectorize(math.erf),
    "atan_f64": np.arctan,
}

OPSETS = {"Swish": 24, "HannWindow": 17, "HammingWindow": 17, "BlackmanWindow": 17}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--target", help="passed to ingot compile")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    failures = 0
    cases = [c + ((),) for c in CASES] + [(n, op, [], t, attrs, (w,)) for n, op, w, t, attrs in WEIGHT_CASES]
    for name, op, inputs, out_dtype, attrs, weights in cases:
        m = model_for(op, inputs, out_dtype, attrs, OPSETS.get(op, 20), weights)
        path = os.path.join(a.work, name + ".onnx")
        onnx.save(m, path)
        try:
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            want = sess.run(None, {f"in{i}": x for i, x in enumerate(inputs)})[0]
        except Exception as e:  # no kernel for this dtype in onnxruntime
            if name not in NUMPY_REFS:
                print(f"FAIL {name}: onnxruntime: {str(e)[:200]}")
                failures += 1
                continue
            want = NUMPY_REFS[name](*inputs).astype(out_dtype)
        bundle = os.path.join(a.work, name + ".ingot")
        cmd = [a.ingot, "compile", path, "-o", bundle, "-q"]
        if a.target:
            cmd += ["--target", a.target]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"FAIL {name}: compile: {p.stderr.strip()}")
            failures += 1
            continue
        run = [a.ingot, "run", bundle, "--output", os.path.join(a.work, name + ".npz")]
        for i, x in enumerate(inputs):
            f = os.path.join(a.work, f"{name}_in{i}.npy")
            np.save(f, x)
            run += ["--input", f"in{i}={f}"]
        p = subprocess.run(run, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"FAIL {name}: run: {p.stderr.strip()}")
            failures += 1
            continue
        got = np.load(os.path.join(a.work, name + ".npz"))["out"]
        if got.dtype != want.dtype or got.shape != want.shape:
            print(f"FAIL {name}: {got.dtype}{got.shape} vs onnxruntime {want.dtype}{want.shape}")
            failures += 1
            continue
        if want.dtype.kind in "biu":
            ok = np.array_equal(got, want)
        else:
            rtol = {np.float64: 1e-5, np.float16: 1e-3}.get(want.dtype.type, 1e-4)
            ok = np.allclose(got, want, rtol=rtol, atol=1e-6, equal_nan=True)
        if not ok:
            print(f"FAIL {name}: got {got.ravel()[:12]} want {want.ravel()[:12]}")
            failures += 1
        else:
            print(f"ok   {name}")
    if failures:
        print(f"{failures} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
