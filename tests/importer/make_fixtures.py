#!/usr/bin/env python3
"""Writes the small ONNX fixtures the importer tests read (committed beside
this script; rerun it only to change them). Needs the `onnx` package:

    python3 tests/importer/make_fixtures.py tests/importer/fixtures
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fixtures")
os.makedirs(OUT, exist_ok=True)
rng = np.random.default_rng(7)


def save(model, name):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    print(path, os.path.getsize(path), "bytes")


def model_of(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="ingot-tests")
    m.ir_version = 8
    return m


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# 1. conv -> bn -> relu -> maxpool -> flatten -> dropout -> gemm -> identity
w = numpy_helper.from_array(f32(4, 3, 3, 3), "w")
b = helper.make_tensor("b", TensorProto.FLOAT, [4], f32(4).tolist())  # float_data
bn = [numpy_helper.from_array(a, n) for a, n in [
    (np.abs(f32(4)) + 0.5, "bn_scale"), (f32(4), "bn_bias"), (f32(4), "bn_mean"), (np.abs(f32(4)) + 0.1, "bn_var")]]
w2 = numpy_helper.from_array(f32(10, 64), "w2")
b2 = numpy_helper.from_array(f32(10), "b2")
nodes = [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["n"], name="bn",
                     epsilon=1e-3),
    helper.make_node("Relu", ["n"], ["r"], name="relu"),
    helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
    helper.make_node("Dropout", ["f"], ["d"], name="dropout"),
    helper.make_node("Gemm", ["d", "w2", "b2"], ["g"], name="fc", transB=1),
    helper.make_node("Identity", ["g"], ["y"], name="out"),
]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])
# The weight "w" is also listed as a graph input (older exporters do that).
wi = helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 3, 3, 3])
save(model_of(nodes, [x, wi], [y], [w, b, *bn, w2, b2]), "conv_bn_relu.onnx")

# 2. constants and every typed data field
i32 = helper.make_tensor("i32", TensorProto.INT32, [3], [1, -2, 3])
i64 = helper.make_tensor("i64", TensorProto.INT64, [2], [5, -6])
f64 = helper.make_tensor("f64", TensorProto.DOUBLE, [2], [0.5, -1.25])
i8 = helper.make_tensor("i8", TensorProto.INT8, [2], [-128, 127])
u8 = helper.make_tensor("u8", TensorProto.UINT8, [3], bytes([0, 7, 255]), raw=True)
bo = helper.make_tensor("bo", TensorProto.BOOL, [2], [True, False])
scalar = helper.make_tensor("scalar", TensorProto.FLOAT, [], [2.5])
nodes = [
    helper.make_node("Constant", [], ["s0"], name="c0", value_ints=[2]),
    helper.make_node("Constant", [], ["s1"], name="c1",
                     value=helper.make_tensor("t", TensorProto.INT64, [1], [-1])),
    helper.make_node("Constant", [], ["k"], name="c2", value_float=3.0),
    helper.make_node("Concat", ["s0", "s1"], ["shape"], name="cat", axis=0),
    helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
    helper.make_node("Mul", ["r", "k"], ["m"], name="mul"),
    helper.make_node("Add", ["m", "scalar"], ["y"], name="add"),
]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12])
save(model_of(nodes, [x], [y], [i32, i64, f64, i8, u8, bo, scalar]), "constants.onnx")

# 3. external data: 4 floats at offset 8 of external.bin
with open(os.path.join(OUT, "external.bin"), "wb") as f:
    f.write(b"\xff" * 8 + np.array([1, 2, 3, 4], np.float32).tobytes() + b"\xee" * 4)


def external_model(location, offset="8", length="16"):
    t = TensorProto()
    t.name = "e"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in [("location", location), ("offset", offset), ("length", length)]:
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, v
    nodes = [helper.make_node("Add", ["x", "e"], ["y"], name="add")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    return model_of(nodes, [x], [y], [t])


save(external_model("external.bin"), "external.onnx")
save(external_model("../fixtures/external.bin"), "external_dotdot.onnx")
save(external_model("/etc/hostname"), "external_absolute.onnx")
save(external_model("external.bin", offset="16"), "external_short.onnx")
save(external_model("link.bin"), "external_link.onnx")

# 4. refused models
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
save(model_of([helper.make_node("Relu", ["x"], ["y"], name="odd", domain="com.example")], [x], [y]),
     "custom_domain.onnx")
# an ONNX Runtime contrib op that Ingot does not implement (the domain is accepted for those it does)
save(model_of([helper.make_node("QLinearLeakyRelu", ["x"], ["y"], name="leaky", domain="com.microsoft")], [x], [y]),
     "ms_unknown_op.onnx")
save(model_of([helper.make_node("FancyOp", ["x"], ["y"], name="fancy")], [x], [y]), "unknown_op.onnx")
bad = TensorProto()
bad.name, bad.data_type = "bad", TensorProto.FLOAT
bad.dims.extend([4])
bad.raw_data = b"\0" * 12  # 3 floats for a 4-float shape
save(model_of([helper.make_node("Add", ["x", "bad"], ["y"], name="add")], [x], [y], [bad]), "bad_raw.onnx")
c64 = helper.make_tensor("c64", TensorProto.COMPLEX64, [4], [1 + 0j, 2 + 0j, 3 + 0j, 4 + 0j])
save(model_of([helper.make_node("Add", ["x", "c64"], ["y"], name="add")], [x], [y], [c64]), "bad_dtype.onnx")
huge = TensorProto()
huge.name, huge.data_type = "huge", TensorProto.FLOAT
huge.dims.extend([1 << 40, 1 << 40])
huge.raw_data = b"\0" * 4
save(model_of([helper.make_node("Add", ["x", "huge"], ["y"], name="add")], [x], [y], [huge]), "bad_overflow.onnx")
save(model_of([helper.make_node("Relu", ["nowhere"], ["y"], name="lost")], [x], [y]), "bad_input.onnx")
