#!/usr/bin/env python3
"""Writes quantized models in QOperator form (QLinearConv, QLinearMatMul and
ONNX Runtime's com.microsoft QLinear ops) for an end-to-end check against
ONNX Runtime (tests/e2e, compare.py):

  qop_linear.onnx (opset 21), built by hand, integer inputs over their whole
  range (qop_linear_<input>.npy): QLinearConv and QLinearMatMul, whose
  outputs must equal ONNX Runtime's bit for bit (int32 accumulation, then
  y = saturate(round_half_even(float32(acc) * float32(sx * sw / sy)) + zy)):
    conv_u8s8_pc   uint8 x (zero point 118), int8 w per output channel, int32
                   bias, 3x3 pad 1 -> uint8
    conv_u8u8_g    uint8 w per tensor (zero point 131), group 2, stride 2, no
                   bias; power-of-two scales, so that acc * m often lands on a
                   half (round half to even is tested)
    conv_s8s8_dw   int8 x, depthwise int8 w per channel, dilation 2, pad 2 ->
                   int8
    mm_u8s8_pc     uint8 a [2, 5, 37] x int8 b [37, 11] per column -> uint8
    mm_u8u8_pt     uint8 b per tensor (zero point 120), power-of-two scales
    mm_s8s8        int8 a [5, 37] x int8 b -> int8

  python models/make_qop_cases.py --out build/models
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tensor_type(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def full_range(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def linear(out):
    """QLinearConv and QLinearMatMul over integer inputs."""
    rng = np.random.default_rng(21)
    inits, nodes, outputs = [], [], []

    def t(name, value, dtype):
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    inputs = {
        "xu8": full_range(rng, np.uint8, (1, 8, 9, 9)),
        "xs8": full_range(rng, np.int8, (1, 8, 9, 9)),
        "au8": full_range(rng, np.uint8, (2, 5, 37)),
        "as8": full_range(rng, np.int8, (5, 37)),
    }

    def y_scale(acc_std, sx, sw):
        # spread y over about +-40 steps around its zero point
        return np.float32(acc_std * sx * float(np.max(sw)) / 40.0)

    def add(op, name, ins, ydtype, shape, **attrs):
        nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
        outputs.append(helper.make_tensor_value_info(name, tensor_type(ydtype), shape))

    # conv_u8s8_pc
    w = full_range(rng, np.int8, (16, 8, 3, 3))
    sw = rng.uniform(0.002, 0.02, 16).astype(np.float32)
    add("QLinearConv", "conv_u8s8_pc",
        ["xu8", t("c1_xs", 0.021, np.float32), t("c1_xz", 118, np.uint8), t("c1_w", w, np.int8),
         t("c1_ws", sw, np.float32), t("c1_wz", np.zeros(16), np.int8), t("c1_ys", y_scale(3000 * 8.5, 0.021, sw),
                                                                                np.float32),
         t("c1_yz", 100, np.uint8), t("c1_b", rng.integers(-20000, 20000, 16), np.int32)],
        np.uint8, [1, 16, 9, 9], pads=[1, 1, 1, 1])
    # conv_u8u8_g: power-of-two scales, acc * 2^-6
    w = full_range(rng, np.uint8, (8, 4, 3, 3))
    add("QLinearConv", "conv_u8u8_g",
        ["xu8", t("c2_xs", 2.0 ** -4, np.float32), t("c2_xz", 128, np.uint8), t("c2_w", w, np.uint8),
         t("c2_ws", 2.0 ** -3, np.float32), t("c2_wz", 131, np.uint8), t("c2_ys", 2.0 ** 5, np.float32),
         t("c2_yz", 128, np.uint8)],
        np.uint8, [1, 8, 4, 4], group=2, strides=[2, 2])
    # conv_s8s8_dw
    w = full_range(rng, np.int8, (8, 1, 3, 3))
    sw = rng.uniform(0.005, 0.05, 8).astype(np.float32)
    add("QLinearConv", "conv_s8s8_dw",
        ["xs8", t("c3_xs", 0.03, np.float32), t("c3_xz", -5, np.int8), t("c3_w", w, np.int8),
         t("c3_ws", sw, np.float32), t("c3_wz", np.zeros(8), np.int8),
         t("c3_ys", y_scale(3000, 0.03, sw), np.float32), t("c3_yz", 3, np.int8)],
        np.int8, [1, 8, 9, 9], group=8, dilations=[2, 2], pads=[2, 2, 2, 2])
    # mm_u8s8_pc
    b = full_range(rng, np.int8, (37, 11))
    sw = rng.uniform(0.002, 0.02, 11).astype(np.float32)
    add("QLinearMatMul", "mm_u8s8_pc",
        ["au8", t("m1_as", 0.017, np.float32), t("m1_az", 121, np.uint8), t("m1_b", b, np.int8),
         t("m1_bs", sw, np.float32), t("m1_bz", np.zeros(11), np.int8),
         t("m1_ys", y_scale(4500, 0.017, sw), np.float32), t("m1_yz", 131, np.uint8)],
        np.uint8, [2, 5, 11])
    # mm_u8u8_pt: power-of-two scales
    b = full_range(rng, np.uint8, (37, 11))
    add("QLinearMatMul", "mm_u8u8_pt",
        ["au8", t("m2_as", 2.0 ** -3, np.float32), t("m2_az", 128, np.uint8), t("m2_b", b, np.uint8),
         t("m2_bs", 2.0 ** -4, np.float32), t("m2_bz", 120, np.uint8), t("m2_ys", 2.0 ** 4, np.float32),
         t("m2_yz", 128, np.uint8)],
        np.uint8, [2, 5, 11])
    # mm_s8s8
    b = full_range(rng, np.int8, (37, 11))
    add("QLinearMatMul", "mm_s8s8",
        ["as8", t("m3_as", 0.011, np.float32), t("m3_az", 3, np.int8), t("m3_b", b, np.int8),
         t("m3_bs", 0.004, np.float32), t("m3_bz", 0, np.int8),
         t("m3_ys", y_scale(4500, 0.011, 0.004), np.float32), t("m3_yz", -7, np.int8)],
        np.int8, [5, 11])

    graph = helper.make_graph(
        nodes, "qop_linear",
        [helper.make_tensor_value_info(k, tensor_type(v.dtype), list(v.shape)) for k, v in inputs.items()],
        outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], producer_name="make_qop_cases")
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(out, "qop_linear.onnx"))
    for k, v in inputs.items():
        np.save(os.path.join(out, "qop_linear_%s.npy" % k), v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the models and their inputs")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    linear(args.out)


if __name__ == "__main__":
    main()
