#!/usr/bin/env python3
"""Writes small models of the quantization ops for an end-to-end check
against ONNX Runtime (tests/e2e, compare.py), whose integer outputs must be
equal bit for bit:

  quant_roundtrip.onnx (opset 21), input x [2, 3, 4, 5]:
    q_u8, dq_u8        QuantizeLinear / DequantizeLinear per tensor, scale
                       0.25, uint8 zero point 128 (every x/scale that is a
                       half lands on a tie: round half to even)
    q_i8, dq_i8        per axis (axis 1), int8, scales 0.0173, 0.031, 0.5
                       and zero points -3, 0, 7
    q_blk, dq_blk      blocked along the last axis (block_size 2: 3 blocks of
                       5), uint8, a scale and zero point per block
    q_nozp             no zero point: uint8 with zero point 0
    dq_i32             DequantizeLinear of int32 data (round(1000 x)), scale 2^-10
    dq_bias            DequantizeLinear of an int32 weight (a bias: folded at
                       compile time), scale 2^-10
    dyn_y, dyn_scale, dyn_zp    DynamicQuantizeLinear of x
    dyn2_y, dyn2_scale, dyn2_zp DynamicQuantizeLinear of a second input x2
                       [7, 143] (random: 1001 elements, a partial block of
                       the chained min/max)
  quant_roundtrip_x.npy (and quant_roundtrip_inputs/x.npy, for
    tests/gpu_emu/run_gpu_emu.py): x with ties (k / 8), values past both ends
    of every range, signed zeros and random normals.

  quant_conv.onnx (opset 13), input x [1, 8, 7, 7]: a QDQ convolution as
    ONNX Runtime's quantizer writes it: x -> Q (uint8, scale 2^-2, zero point
    128) -> DQ; weights int8 per output channel (DQ axis 0, scales 2^-1 and
    2^-2); bias int32 (DQ, scale = x scale * weight scale); Conv 3x3 pad 1
    -> Relu -> Q (uint8, scale 2^-1, zero point 3) -> conv_q; and a second
    conv (1x1 from the first's dequantized output, weight scale 2^-2) -> Q
    (int8, scale 1, zero point -2) -> conv2_q. The scales are powers of two
    and the values small, so every product and sum is exact in float32 and
    the result cannot depend on the order of the additions (ONNX Runtime may
    fuse the chain into QLinearConv); about one output in eight lands on a
    tie, so the rounding (half to even) is tested too: outputs must be
    identical.

  python models/make_quant_cases.py --out build/models
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def roundtrip(out):
    rng = np.random.default_rng(14)
    inits = []

    def t(name, value, dtype):
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    scale_b = (rng.uniform(0.01, 0.1, size=(2, 3, 4, 3))).astype(np.float32)
    zp_b = rng.integers(0, 256, size=(2, 3, 4, 3)).astype(np.uint8)
    bias = rng.integers(-5000, 5000, size=(3, 4)).astype(np.int32)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", t("s_u8", 0.25, np.float32), t("z_u8", 128, np.uint8)], ["q_u8"]),
        helper.make_node("DequantizeLinear", ["q_u8", "s_u8", "z_u8"], ["dq_u8"]),
        helper.make_node("QuantizeLinear", ["x", t("s_i8", [0.0173, 0.031, 0.5], np.float32),
                                            t("z_i8", [-3, 0, 7], np.int8)], ["q_i8"], axis=1),
        helper.make_node("DequantizeLinear", ["q_i8", "s_i8", "z_i8"], ["dq_i8"], axis=1),
        helper.make_node("QuantizeLinear", ["x", t("s_blk", scale_b, np.float32), t("z_blk", zp_b, np.uint8)],
                         ["q_blk"], axis=-1, block_size=2),
        helper.make_node("DequantizeLinear", ["q_blk", "s_blk", "z_blk"], ["dq_blk"], axis=-1, block_size=2),
        helper.make_node("QuantizeLinear", ["x", t("s_nozp", 0.05, np.float32)], ["q_nozp"]),
        helper.make_node("Clip", ["x", t("lo", -1e6, np.float32), t("hi", 1e6, np.float32)], ["xc"]),
        helper.make_node("Mul", ["xc", t("k1000", 1000.0, np.float32)], ["xk"]),
        helper.make_node("Round", ["xk"], ["xkr"]),
        helper.make_node("Cast", ["xkr"], ["xk_i32"], to=TensorProto.INT32),
        helper.make_node("DequantizeLinear", ["xk_i32", t("s_k", 2.0 ** -10, np.float32)], ["dq_i32"]),
        helper.make_node("DequantizeLinear", [t("bias", bias, np.int32), t("s_bias", 2.0 ** -10, np.float32)],
                         ["dq_bias_w"]),
        helper.make_node("Add", ["dq_bias_w", t("zero34", np.zeros((3, 4)), np.float32)], ["dq_bias"]),
        helper.make_node("DynamicQuantizeLinear", ["x"], ["dyn_y", "dyn_scale", "dyn_zp"]),
        helper.make_node("DynamicQuantizeLinear", ["x2"], ["dyn2_y", "dyn2_scale", "dyn2_zp"]),
    ]
    shape = [2, 3, 4, 5]
    f = TensorProto.FLOAT
    outputs = [helper.make_tensor_value_info(n, ty, s) for n, ty, s in (
        ("q_u8", TensorProto.UINT8, shape), ("dq_u8", f, shape), ("q_i8", TensorProto.INT8, shape),
        ("dq_i8", f, shape), ("q_blk", TensorProto.UINT8, shape), ("dq_blk", f, shape),
        ("q_nozp", TensorProto.UINT8, shape), ("dq_i32", f, shape),
        ("dq_bias", f, [3, 4]),
        ("dyn_y", TensorProto.UINT8, shape), ("dyn_scale", f, []), ("dyn_zp", TensorProto.UINT8, []),
        ("dyn2_y", TensorProto.UINT8, [7, 143]), ("dyn2_scale", f, []), ("dyn2_zp", TensorProto.UINT8, []))]
    graph = helper.make_graph(nodes, "quant_roundtrip", [helper.make_tensor_value_info("x", f, shape),
                                                         helper.make_tensor_value_info("x2", f, [7, 143])],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], producer_name="make_quant_cases")
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(out, "quant_roundtrip.onnx"))

    x = np.concatenate([
        np.arange(-24, 24) / 8.0,                   # ties for scale 0.25 (and 0.5)
        [1e3, -1e3, 40.0, -40.0, 70.0, -70.0, 0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30],
        rng.standard_normal(60) * 2.0,
    ]).astype(np.float32)
    np.save(os.path.join(out, "quant_roundtrip_x.npy"), x.reshape(shape))
    # The same input where tests/gpu_emu/run_gpu_emu.py looks for given inputs.
    os.makedirs(os.path.join(out, "quant_roundtrip_inputs"), exist_ok=True)
    np.save(os.path.join(out, "quant_roundtrip_inputs", "x.npy"), x.reshape(shape))


def conv(out):
    rng = np.random.default_rng(15)
    inits = []

    def t(name, value, dtype):
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    w1 = rng.integers(-3, 4, size=(6, 8, 3, 3)).astype(np.int8)
    w_scale = np.array([2.0 ** -1, 2.0 ** -2] * 3, np.float32)
    b1 = rng.integers(-30, 31, size=(6,)).astype(np.int32)
    w2 = rng.integers(-3, 4, size=(5, 6, 1, 1)).astype(np.int8)
    x_s, y_s = 2.0 ** -2, 2.0 ** -1
    nodes = [
        helper.make_node("QuantizeLinear", ["x", t("x_s", x_s, np.float32), t("x_z", 128, np.uint8)], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xdq"]),
        helper.make_node("DequantizeLinear", [t("w1", w1, np.int8), t("w1_s", w_scale, np.float32),
                                              t("w1_z", np.zeros(6), np.int8)], ["w1f"], axis=0),
        helper.make_node("DequantizeLinear", [t("b1", b1, np.int32), t("b1_s", w_scale * x_s, np.float32),
                                              t("b1_z", np.zeros(6), np.int32)], ["b1f"], axis=0),
        helper.make_node("Conv", ["xdq", "w1f", "b1f"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["c1r"]),
        helper.make_node("QuantizeLinear", ["c1r", t("y_s", y_s, np.float32), t("y_z", 3, np.uint8)], ["conv_q"]),
        helper.make_node("DequantizeLinear", ["conv_q", "y_s", "y_z"], ["c1dq"]),
        helper.make_node("DequantizeLinear", [t("w2", w2, np.int8), t("w2_s", 2.0 ** -2, np.float32)], ["w2f"]),
        helper.make_node("Conv", ["c1dq", "w2f"], ["c2"]),
        helper.make_node("QuantizeLinear", ["c2", t("y2_s", 1.0, np.float32), t("y2_z", -2, np.int8)],
                         ["conv2_q"]),
    ]
    graph = helper.make_graph(
        nodes, "quant_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 7, 7])],
        [helper.make_tensor_value_info("conv_q", TensorProto.UINT8, [1, 6, 7, 7]),
         helper.make_tensor_value_info("conv2_q", TensorProto.INT8, [1, 5, 7, 7])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_quant_cases")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(out, "quant_conv.onnx"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the models and quant_roundtrip_x.npy")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    roundtrip(args.out)
    conv(args.out)


if __name__ == "__main__":
    main()
