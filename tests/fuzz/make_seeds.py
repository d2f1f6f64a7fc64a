#!/usr/bin/env python3
"""Writes the fuzz seed corpus (committed; rerun only to change it):

  corpus/importer/*.onnx   small models, one or a few ops each, covering
                           every op family, initializers in raw_data and in
                           typed fields, Constant nodes, symbolic dims,
                           several dtypes, plus the digits model
  corpus/bundle/*.ingot    those that compile, compiled with `ingot compile`;
                           a few also signed with tests/fuzz/keys/test_key;
                           digits also with two code variants (c and llvm),
                           so that variant, launch and weight records of
                           more than one variant are fuzzed

    python3 tests/fuzz/make_seeds.py --ingot build/ingot

Needs numpy and onnx. Models are tiny (the whole corpus stays well under a
megabyte) so that the fuzzers spend their time on structure, not bulk data.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
rng = np.random.default_rng(5)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "seed", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="ingot-fuzz-seeds")
    m.ir_version = 8
    return m


def seeds():
    """(name, model, input-shape flags for ingot compile)."""
    out = []
    x4 = vi("x", [1, 3, 6, 6])
    # Conv + BN + Relu + MaxPool + Flatten + Gemm + Softmax.
    w = numpy_helper.from_array(f32(4, 3, 3, 3), "w")
    b = helper.make_tensor("b", TensorProto.FLOAT, [4], f32(4).tolist())  # float_data
    bn = [numpy_helper.from_array(a, n) for a, n in [
        (np.abs(f32(4)) + 0.5, "s"), (f32(4), "bb"), (f32(4), "m"), (np.abs(f32(4)) + 0.1, "v")]]
    w2 = numpy_helper.from_array(f32(5, 36), "w2")
    out.append(("conv_bn_pool_gemm", model([
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], epsilon=1e-3),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "w2"], ["g"], transB=1),
        helper.make_node("Softmax", ["g"], ["y"], axis=1),
    ], [x4], [vi("y", [1, 5])], [w, b, w2] + bn), []))
    # Strided, dilated, grouped conv with auto_pad, then pools.
    wg = numpy_helper.from_array(f32(6, 1, 3, 3), "wg")
    out.append(("conv_group_pools", model([
        helper.make_node("Conv", ["x", "wg"], ["c"], group=3, strides=[2, 2], auto_pad="SAME_UPPER"),
        helper.make_node("AveragePool", ["c"], ["a"], kernel_shape=[2, 2], pads=[1, 1, 0, 0],
                         count_include_pad=1),
        helper.make_node("GlobalAveragePool", ["a"], ["y"]),
    ], [x4], [vi("y", [1, 6, 1, 1])], [wg]), []))
    # Elementwise with broadcasting, Clip with constant bounds, Sigmoid, Tanh.
    lo = numpy_helper.from_array(np.array(-0.5, np.float32), "lo")
    hi = numpy_helper.from_array(np.array(0.5, np.float32), "hi")
    k = numpy_helper.from_array(f32(1, 3, 1, 1), "k")
    out.append(("elementwise", model([
        helper.make_node("Add", ["x", "k"], ["a"]),
        helper.make_node("Mul", ["a", "x"], ["m"]),
        helper.make_node("Sub", ["m", "k"], ["s"]),
        helper.make_node("Div", ["s", "k"], ["d"]),
        helper.make_node("Clip", ["d", "lo", "hi"], ["c"]),
        helper.make_node("Sigmoid", ["c"], ["g"]),
        helper.make_node("Tanh", ["g"], ["y"]),
    ], [x4], [vi("y", [1, 3, 6, 6])], [k, lo, hi]), []))
    # Shape ops: Reshape from a Constant, Transpose, Concat, Identity, Dropout.
    out.append(("shape_ops", model([
        helper.make_node("Constant", [], ["shape"], value=helper.make_tensor(
            "shape", TensorProto.INT64, [3], [1, 3, -1])),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
        helper.make_node("Identity", ["t"], ["i"]),
        helper.make_node("Dropout", ["i"], ["d"]),
        helper.make_node("Concat", ["d", "t"], ["y"], axis=1),
    ], [x4], [vi("y", [1, 72, 3])]), []))
    # MatMul with a symbolic batch, Constant value_floats / value_ints.
    wm = numpy_helper.from_array(f32(4, 3), "wm")
    out.append(("matmul_symbolic", model([
        helper.make_node("MatMul", ["x", "wm"], ["mm"]),
        helper.make_node("Constant", [], ["cf"], value_floats=[1.0, 2.0, 3.0]),
        helper.make_node("Add", ["mm", "cf"], ["y"]),
    ], [vi("x", ["N", 2, 4])], [vi("y", ["N", 2, 3])], [wm]), ["--input-shape", "x=2x2x4"]))
    # Gemm with alpha/beta/transA and a typed-field bias; Softmax on axis -1.
    wa = numpy_helper.from_array(f32(4, 6), "wa")
    ba = helper.make_tensor("ba", TensorProto.FLOAT, [6], f32(6).tolist())
    out.append(("gemm_attrs", model([
        helper.make_node("Gemm", ["x", "wa", "ba"], ["g"], alpha=0.5, beta=2.0, transA=1),
        helper.make_node("Softmax", ["g"], ["y"], axis=-1),
    ], [vi("x", [4, 3])], [vi("y", [3, 6])], [wa, ba]), []))
    # Integer and other dtypes in initializers (int32_data, int64_data, raw).
    out.append(("dtypes", model([
        helper.make_node("Constant", [], ["ci"], value=helper.make_tensor("ci", TensorProto.INT32, [2], [1, 2])),
        helper.make_node("Constant", [], ["cb"], value=helper.make_tensor("cb", TensorProto.BOOL, [2], [1, 0])),
        helper.make_node("Constant", [], ["c8"], value=helper.make_tensor("c8", TensorProto.INT8, [2], [-3, 4])),
        helper.make_node("Constant", [], ["ch"], value=helper.make_tensor("ch", TensorProto.FLOAT16, [1], [15360])),
        helper.make_node("Constant", [], ["cd"], value=numpy_helper.from_array(np.array([1.5, 2.5]), "cd")),
        helper.make_node("Relu", ["x"], ["y"]),
    ], [vi("x", [2])], [vi("y", [2])]), []))
    # An opset-11 model (Clip with attributes), Softmax default axis.
    out.append(("opset11", model([
        helper.make_node("Clip", ["x"], ["c"], min=-1.0, max=1.0),
        helper.make_node("Softmax", ["c"], ["y"]),
    ], [vi("x", [2, 5])], [vi("y", [2, 5])], opset=11), []))
    return out


def ranged_attention():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "S", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "S", 8])
    g = helper.make_graph([
        helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["x", "xt"], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "x"], ["y"]),
    ], "ranged", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ingot", required=True, help="the ingot driver, for the bundle seeds")
    p.add_argument("--out", default=os.path.join(HERE, "corpus"))
    a = p.parse_args()
    imp = os.path.join(a.out, "importer")
    bun = os.path.join(a.out, "bundle")
    for d in (imp, bun):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    key = os.path.join(HERE, "keys", "test_key")
    items = seeds()
    items.append(("digits", onnx.load(os.path.join(ROOT, "models", "digits", "model.onnx")),
                  ["--input-shape", "input=1x1x8x8"]))
    # Control flow (models/make_control_cases.py): subgraphs with captured
    # values; a run-time If and a guarded Loop give bundles with step guards,
    # a run-time trip count one with a check and a run-sized output.
    sys.path.insert(0, os.path.join(ROOT, "models"))
    import make_control_cases as cc  # noqa: E402
    items += [("control_if", cc.if_branch(), []), ("control_loop", cc.loop_counter(), []),
              ("control_while", cc.loop_while(), []), ("control_scan", cc.scan_rnn(np.random.default_rng(16)), []),
              # format 4: a run-time trip count (a check) and a scan output whose length a run decides
              ("control_trips", cc.loop_trips(), ["--max-trips", "4"])]
    # format 5: a ranged input dim (self-attention over 1..6 rows: masks, a
    # run-shape tensor the runtime fills, a padded output)
    items.append(("ranged", ranged_attention(), ["--input-shape", "x=1x1..6x8"]))
    for name, m, flags in items:
        path = os.path.join(imp, name + ".onnx")
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
        bundle = os.path.join(bun, name + ".ingot")
        r = subprocess.run([a.ingot, "compile", path, "-o", bundle, "-q"] + flags,
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name}: does not compile ({r.stderr.strip()}); importer seed only", file=sys.stderr)
            continue
        if name in ("digits", "conv_bn_pool_gemm", "elementwise"):
            signed = os.path.join(bun, name + "_signed.ingot")
            shutil.copy(bundle, signed)
            subprocess.run([a.ingot, "sign", signed, "--key", key], check=True, capture_output=True)
    # Two code variants sharing one WEIGHTS section.
    digits = os.path.join(imp, "digits.onnx")
    subprocess.run([a.ingot, "compile", digits, "-o", os.path.join(bun, "digits_two_variants.ingot"), "-q",
                    "--input-shape", "input=1x1x8x8", "--target", "c", "--target", "llvm x86-64-v2"],
                   check=True, capture_output=True)
    # A few of the importer's own fixtures: external data (refused from
    # memory), overflowing shapes, bad raw data.
    fixtures = os.path.join(ROOT, "tests", "importer", "fixtures")
    for name in ("bad_overflow.onnx", "bad_raw.onnx", "external.onnx", "custom_domain.onnx"):
        if os.path.exists(os.path.join(fixtures, name)):
            shutil.copy(os.path.join(fixtures, name), os.path.join(imp, "fixture_" + name))
    total = sum(os.path.getsize(os.path.join(d, f)) for d in (imp, bun) for f in os.listdir(d))
    print(f"{len(os.listdir(imp))} importer seeds, {len(os.listdir(bun))} bundle seeds, {total} bytes")


if __name__ == "__main__":
    main()
