#!/usr/bin/env python3
"""Writes quantized models in QOperator form (QLinearConv, QLinearMatMul and
ONNX Runtime's com.microsoft QLinear ops) for an end-to-end check against
ONNX Runtime (tests/e2e/CMakeLists.txt says which must be equal and which
may be a step apart, and why):

  qop_linear.onnx (opset 21), built by hand, integer inputs over their whole
  range (qop_linear_<input>.npy, and qop_linear_inputs/ for
  tests/gpu_emu/run_gpu_emu.py): QLinearConv and QLinearMatMul, int32 sums
  requantized as y = saturate(round_half_even(float32(acc) * m) + zy),
  m = float32(sx * sw / sy):
    conv_u8s8_pc   uint8 x (zero point 118), int8 w per output channel, int32
                   bias, 3x3 pad 1 -> uint8 (large enough to be split into
                   ConvInteger + Requantize)
    conv_u8u8_g    uint8 w per tensor (zero point 131), group 2, stride 2, no
                   bias; power-of-two scales, so that acc * m can land on a
                   half (round half to even)
    conv_s8s8_dw   int8 x, depthwise int8 w per channel, dilation 2, pad 2 ->
                   int8
    mm_u8s8_pc     uint8 a [2, 5, 37] x int8 b [37, 11] per column -> uint8
    mm_u8u8_pt     uint8 b per tensor (zero point 120), power-of-two scales
    mm_s8s8        int8 a [5, 37] x int8 b -> int8
    conv_u8u8_wide uint8 x [1, 32, 12, 12], uint8 w (zero point 128) with
                   scales per channel, 32 -> 40 channels: split, its
                   ConvInteger's weights packed in panels (32 and 8)
    conv_s8s8_wide int8 x [1, 18, 10, 10] (zero point -5), int8 w per
                   channel, 18 -> 36, pad 1 -> int8: split and packed (dot4
                   words on llvm x86-64: 18 channels are 4.5 groups of 4)
    pool_u8, pool_s8  MaxPool 3x3, stride 2, pads 1 over the uint8 / int8
                   inputs, which reads a Pad of the dtype's lowest value
                   (0, -128: int8 rows of negatives at the border tell a
                   wrong pad value)

  qop_contrib_exact.onnx, qop_contrib_float.onnx (com.microsoft opset 1),
  inputs qop_contrib_<input>.npy (and qop_contrib_<group>_inputs/):
    exact: QLinearGlobalAveragePool (uint8, int8), QLinearConcat (3 inputs,
           one at y's scale; int8 on the last axis), QGemm (u8 x s8 per
           column with C and transB, u8 x u8 transA, s8 x s8 with alpha 0.75;
           and two of 131,072 multiply-adds, u8 x s8 per column with C and
           transB, s8 x s8 with zero points, which ingot_graph_split_qlinear
           splits into MatMulInteger + Requantize)
    float: QLinearAdd and QLinearMul (same shape, and broadcast [8, 1, 1]),
           QLinearSigmoid; uint8 and int8

  qop_net_qop_pt.onnx, qop_net_qop_pc.onnx, qop_net_qdq_pt.onnx,
  qop_net_qdq_pc.onnx, qop_net_qdq_s8.onnx: a float conv net
  (qop_net_float.onnx: Conv+Relu twice, Add residual, x*sigmoid(x),
  GlobalAveragePool, Flatten, Gemm and MatMul, Concat) quantized here with
  onnxruntime.quantization.quantize_static (QOperator per tensor / per
  channel, QDQ per tensor / per channel; QUInt8 activations, QInt8 weights;
  qdq_s8: QDQ per channel with QInt8 activations too; a
  CalibrationDataReader of 16 standard normal inputs), its graph outputs
  made the quantized tensors (the last DequantizeLinear dropped).

  qdq_fire.onnx, qdq_refuse.onnx (opset 13), built by hand in QDQ form, a
  float input x [1, 8, 16, 16] and a [4, 16] (standard normal, as compare.py
  draws), for ingot_graph_fuse_qdq:
    fire:   DQ -> Conv (int8 w per channel, int32 bias) -> Relu -> Q with
            uint8 zero point 0 (the Relu a no-op after Q: fused; large
            enough to be split), and int8 a x int8 b per tensor MatMul ->
            Clip(-6, 6) -> Q with int8 zero point 3 (the Clip outside
            Q's range: fused); every Conv and MatMul becomes integer
            then DQ -> MaxPool (3x3, stride 2, pads 1) -> Q and DQ ->
            Transpose -> Q of y_relu's scale and zero point: run on the
            bytes (output y_perm), as does DQ -> Resize (nearest, x2) -> Q
            of those parameters (output y_up)
    refuse: the same Conv -> Relu -> Q with zero point 100 (the Relu would
            clamp inside Q's range: kept in float), and a Conv -> Q whose
            float output is also a graph output: both stay float Convs;
            DQ -> MaxPool -> Q to another scale: a float MaxPool; DQ ->
            Resize (linear, x2) -> Q of one scale: a float Resize

  qop_dyn.onnx: quantize_dynamic of a MatMul + Add + Relu + MatMul model.

  python models/make_qop_cases.py --out build/models
"""
import argparse
import os
import platform
import re

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tensor_type(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def full_range(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def ort_u8s8_saturates():
    """True where ONNX Runtime, the reference, multiplies uint8 by int8 with
    pmaddubsw: an x86-64 CPU without VNNI (avx512_vnni, avx_vnni). Its 16-bit
    pair sums then saturate for large weights (255 * 127 * 2 > 32767) and its
    results are not the exact ones Ingot computes, so the models made here
    keep int8 weights that meet uint8 data within [-64, 64] there (ONNX
    Runtime's quantizer calls that reduce_range): every pair sum fits."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            cpuinfo = f.read()
    except OSError:
        return False
    return re.search(r"\b(avx512_vnni|avx_vnni)\b", cpuinfo) is None


def u8s8_weight(rng, shape):
    """int8 weights for uint8 data: the whole range, or [-64, 64] where
    ort_u8s8_saturates()."""
    if ort_u8s8_saturates():
        return rng.integers(-64, 65, size=shape).astype(np.int8)
    return full_range(rng, np.int8, shape)


def save_inputs(out, model, inputs, flat=True):
    """MODEL_NAME.npy (compare.py --input, when flat) and MODEL_inputs/NAME.npy
    (where tests/gpu_emu/run_gpu_emu.py looks for given inputs)."""
    os.makedirs(os.path.join(out, model + "_inputs"), exist_ok=True)
    for k, v in inputs.items():
        if flat:
            np.save(os.path.join(out, "%s_%s.npy" % (model, k)), v)
        np.save(os.path.join(out, model + "_inputs", k + ".npy"), v)


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
    inputs_wide = {"xw": full_range(rng, np.uint8, (1, 32, 12, 12))}

    def y_scale(acc_std, sx, sw):
        # spread y over about +-40 steps around its zero point
        return np.float32(acc_std * sx * float(np.max(sw)) / 40.0)

    def add(op, name, ins, ydtype, shape, **attrs):
        nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
        outputs.append(helper.make_tensor_value_info(name, tensor_type(ydtype), shape))

    # conv_u8s8_pc
    w = u8s8_weight(rng, (16, 8, 3, 3))
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
    b = u8s8_weight(rng, (37, 11))
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

    # conv_u8u8_wide: 32 -> 40 channels, 3x3: its ConvInteger gets packed
    # weights (a whole panel of 32 and a partial one of 8)
    w = full_range(rng, np.uint8, (40, 32, 3, 3))
    sw = rng.uniform(0.002, 0.02, 40).astype(np.float32)
    add("QLinearConv", "conv_u8u8_wide",
        ["xw", t("c4_xs", 0.02, np.float32), t("c4_xz", 125, np.uint8), t("c4_w", w, np.uint8),
         t("c4_ws", sw, np.float32), t("c4_wz", 128, np.uint8), t("c4_ys", y_scale(20000, 0.02, sw), np.float32),
         t("c4_yz", 120, np.uint8), t("c4_b", rng.integers(-20000, 20000, 40), np.int32)],
        np.uint8, [1, 40, 12, 12], pads=[1, 1, 1, 1])
    inputs.update(inputs_wide)
    # conv_s8s8_wide: int8 x (zero point -5) of 18 channels (not a multiple
    # of 4) -> 36, int8 w per channel: split, packed, and on llvm x86-64 as
    # dot4 words (x + 128 as unsigned bytes, the last group of 4 channels
    # half empty); its own generator, so the cases above keep their data
    r2 = np.random.default_rng(31)
    inputs["xs18"] = full_range(r2, np.int8, (1, 18, 10, 10))
    w = full_range(r2, np.int8, (36, 18, 3, 3))
    sw = r2.uniform(0.002, 0.02, 36).astype(np.float32)
    add("QLinearConv", "conv_s8s8_wide",
        ["xs18", t("c5_xs", 0.02, np.float32), t("c5_xz", -5, np.int8), t("c5_w", w, np.int8),
         t("c5_ws", sw, np.float32), t("c5_wz", np.zeros(36), np.int8),
         t("c5_ys", y_scale(20000, 0.02, sw), np.float32), t("c5_yz", 7, np.int8),
         t("c5_b", r2.integers(-20000, 20000, 36), np.int32)],
        np.int8, [1, 36, 10, 10], pads=[1, 1, 1, 1])
    # pool_u8, pool_s8: MaxPool over the bytes, padded
    for src, name in (("xu8", "pool_u8"), ("xs8", "pool_s8")):
        add("MaxPool", name, [src], inputs[src].dtype.type, [1, 8, 5, 5], kernel_shape=[3, 3], strides=[2, 2],
            pads=[1, 1, 1, 1])

    graph = helper.make_graph(
        nodes, "qop_linear",
        [helper.make_tensor_value_info(k, tensor_type(v.dtype), list(v.shape)) for k, v in inputs.items()],
        outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], producer_name="make_qop_cases")
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(out, "qop_linear.onnx"))
    save_inputs(out, "qop_linear", inputs)


def contrib(out):
    """ONNX Runtime's com.microsoft QLinear ops over integer inputs: the
    integer and exact ones into qop_contrib_exact.onnx, the float-inside
    ones into qop_contrib_float.onnx."""
    rng = np.random.default_rng(22)
    inits = []
    groups = {"exact": ([], []), "float": ([], [])}

    def t(name, value, dtype):
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    inputs = {
        "xu8": full_range(rng, np.uint8, (2, 8, 9, 9)),
        "yu8": full_range(rng, np.uint8, (2, 8, 9, 9)),
        "xs8": full_range(rng, np.int8, (2, 8, 9, 9)),
        "cu8": full_range(rng, np.uint8, (8, 1, 1)),
        "cs8": full_range(rng, np.int8, (8, 1, 1)),
        "au8": full_range(rng, np.uint8, (5, 37)),
        "atu8": full_range(rng, np.uint8, (37, 5)),
        "as8": full_range(rng, np.int8, (5, 37)),
        "awu8": full_range(rng, np.uint8, (4, 512)),
        "aws8": full_range(rng, np.int8, (4, 512)),
    }

    def add(op, name, ins, ydtype, shape, **attrs):
        nodes, outputs = groups["float" if op in ("QLinearAdd", "QLinearMul", "QLinearSigmoid") else "exact"]
        nodes.append(helper.make_node(op, ins, [name], name=name, domain="com.microsoft", **attrs))
        outputs.append(helper.make_tensor_value_info(name, tensor_type(ydtype), shape))

    u8, s8, f32 = np.uint8, np.int8, np.float32
    full = [2, 8, 9, 9]
    add("QLinearAdd", "add_u8", ["xu8", t("a1_s", 0.031, f32), t("a1_z", 120, u8), "yu8", t("a1_bs", 0.017, f32),
                                 t("a1_bz", 135, u8), t("a1_ys", 0.043, f32), t("a1_yz", 128, u8)], u8, full)
    add("QLinearAdd", "add_bcast_u8", ["xu8", "a1_s", "a1_z", "cu8", t("a2_bs", 0.2, f32), t("a2_bz", 90, u8),
                                       t("a2_ys", 0.25, f32), t("a2_yz", 60, u8)], u8, full)
    add("QLinearAdd", "add_s8", ["xs8", t("a3_s", 0.05, f32), t("a3_z", -3, s8), "cs8", t("a3_bs", 0.021, f32),
                                 t("a3_bz", 4, s8), t("a3_ys", 0.06, f32), t("a3_yz", 1, s8)], s8, full)
    add("QLinearMul", "mul_u8", ["xu8", "a1_s", "a1_z", "yu8", "a1_bs", "a1_bz", t("m1_ys", 0.9, f32),
                                 t("m1_yz", 100, u8)], u8, full)
    add("QLinearMul", "mul_bcast_s8", ["xs8", "a3_s", "a3_z", "cs8", "a3_bs", "a3_bz", t("m2_ys", 0.1, f32),
                                       t("m2_yz", -2, s8)], s8, full)
    add("QLinearSigmoid", "sigmoid_u8", ["xu8", t("s1_s", 0.05, f32), t("s1_z", 128, u8), t("s1_ys", 1.0 / 256, f32),
                                         t("s1_yz", 0, u8)], u8, full)
    add("QLinearSigmoid", "sigmoid_s8", ["xs8", t("s2_s", 0.03, f32), t("s2_z", 0, s8), t("s2_ys", 1.0 / 255, f32),
                                         t("s2_yz", -128, s8)], s8, full)
    add("QLinearGlobalAveragePool", "gap_u8", ["xu8", t("g1_s", 0.02, f32), t("g1_z", 110, u8),
                                               t("g1_ys", 0.003, f32), t("g1_yz", 20, u8)], u8, [2, 8, 1, 1],
        channels_last=0)
    add("QLinearGlobalAveragePool", "gap_s8", ["xs8", t("g2_s", 0.02, f32), t("g2_z", 3, s8),
                                               t("g2_ys", 0.0021, f32), t("g2_yz", -5, s8)], s8, [2, 8, 1, 1])
    # the third input of concat_u8 has y's scale and zero point: a copy
    add("QLinearConcat", "concat_u8", [t("c_ys", 0.043, f32), t("c_yz", 128, u8), "xu8", "a1_s", "a1_z",
                                       "yu8", "a1_bs", "a1_bz", "yu8", "c_ys", "c_yz"], u8, [2, 24, 9, 9], axis=1)
    add("QLinearConcat", "concat_s8", [t("c2_ys", 0.07, f32), t("c2_yz", -1, s8), "xs8", "a3_s", "a3_z",
                                       "xs8", "a3_ys", "a3_yz"], s8, [2, 8, 9, 18], axis=-1)
    wb = u8s8_weight(rng, (11, 37))
    sb = rng.uniform(0.002, 0.02, 11).astype(f32)
    add("QGemm", "gemm_u8s8_pc", ["au8", t("q1_as", 0.017, f32), t("q1_az", 121, u8), t("q1_b", wb, s8),
                                  t("q1_bs", sb, f32), t("q1_bz", np.zeros(11), s8),
                                  t("q1_c", rng.integers(-30000, 30000, 11), np.int32),
                                  t("q1_ys", 4500 * 0.017 * 0.02 / 40, f32), t("q1_yz", 131, u8)], u8, [5, 11],
        transB=1)
    wb = full_range(rng, u8, (37, 11))
    add("QGemm", "gemm_u8u8_ta", ["atu8", t("q2_as", 2.0 ** -3, f32), t("q2_az", 128, u8), t("q2_b", wb, u8),
                                  t("q2_bs", 2.0 ** -4, f32), t("q2_bz", 120, u8), t("q2_c", np.zeros(11), np.int32),
                                  t("q2_ys", 2.0 ** 4, f32), t("q2_yz", 128, u8)], u8, [5, 11], transA=1)
    wb = full_range(rng, s8, (37, 11))
    add("QGemm", "gemm_s8s8_alpha", ["as8", t("q3_as", 0.011, f32), t("q3_az", 3, s8), t("q3_b", wb, s8),
                                     t("q3_bs", 0.004, f32), t("q3_bz", 0, s8), "",
                                     t("q3_ys", 0.03, f32), t("q3_yz", -7, s8)], s8, [5, 11], alpha=0.75)

    # large enough to be split into MatMulInteger + Requantize (B transposed when transB)
    wb = u8s8_weight(rng, (64, 512))
    sb = rng.uniform(0.002, 0.02, 64).astype(f32)
    add("QGemm", "gemm_u8s8_split", ["awu8", t("q4_as", 0.017, f32), t("q4_az", 121, u8), t("q4_b", wb, s8),
                                     t("q4_bs", sb, f32), t("q4_bz", np.zeros(64), s8),
                                     t("q4_c", rng.integers(-30000, 30000, 64), np.int32),
                                     t("q4_ys", 124000 * 0.017 * 0.01 / 40, f32), t("q4_yz", 125, u8)], u8, [4, 64],
        transB=1)
    wb = full_range(rng, s8, (512, 64))
    add("QGemm", "gemm_s8s8_split", ["aws8", t("q5_as", 0.011, f32), t("q5_az", -3, s8), t("q5_b", wb, s8),
                                     t("q5_bs", 0.004, f32), t("q5_bz", 2, s8), "",
                                     t("q5_ys", 124000 * 0.011 * 0.004 / 40, f32), t("q5_yz", 5, s8)], s8, [4, 64])

    for group, (nodes, outputs) in groups.items():
        used = {i for n in nodes for i in n.input}
        graph = helper.make_graph(
            nodes, "qop_contrib_" + group,
            [helper.make_tensor_value_info(k, tensor_type(v.dtype), list(v.shape)) for k, v in inputs.items()
             if k in used],
            outputs, [i for i in inits if i.name in used])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                        helper.make_opsetid("com.microsoft", 1)],
                                  producer_name="make_qop_cases")
        model.ir_version = 10
        onnx.save(model, os.path.join(out, "qop_contrib_%s.onnx" % group))
        save_inputs(out, "qop_contrib_" + group, {k: v for k, v in inputs.items() if k in used}, flat=False)
    for k, v in inputs.items():
        np.save(os.path.join(out, "qop_contrib_%s.npy" % k), v)


def float_net(rng):
    """A small float conv net: Conv+Relu twice, an Add residual, x*sigmoid(x),
    GlobalAveragePool, Flatten, Gemm and MatMul side by side, Concat. Graph
    outputs: the concat and three intermediates."""
    def w(name, shape, s=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name)

    inits = [w("w1", [8, 3, 3, 3]), w("b1", [8], 0.1), w("w2", [8, 8, 3, 3], 0.15), w("b2", [8], 0.1),
             w("wg", [10, 8]), w("bg", [10], 0.1), w("wm", [8, 6])]
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), n("Relu", ["c1"], ["r1"]),
             n("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]), n("Relu", ["c2"], ["r2"]),
             n("Add", ["r1", "r2"], ["add"]), n("Sigmoid", ["add"], ["sig"]), n("Mul", ["add", "sig"], ["mul"]),
             n("GlobalAveragePool", ["mul"], ["gap"]), n("Flatten", ["gap"], ["flat"]),
             n("Gemm", ["flat", "wg", "bg"], ["gemm"], transB=1), n("MatMul", ["flat", "wm"], ["mm"]),
             n("Concat", ["gemm", "mm"], ["cat"], axis=1)]
    graph = helper.make_graph(nodes, "qop_net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                               for o in ("cat", "r2", "mul", "gap")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_qop_cases")
    model.ir_version = 8
    return model


def quantized_outputs(model):
    """Makes each graph output that a DequantizeLinear writes the quantized
    tensor it reads (and drops that DequantizeLinear when nothing else reads
    it): the comparison is then of integers, step for step."""
    g = model.graph
    producer = {o: node for node in g.node for o in node.output}
    readers = {i for node in g.node for i in node.input}
    zps = {i.name: i.data_type for i in g.initializer}
    outs, drop = [], []
    for o in g.output:
        node = producer.get(o.name)
        if node is not None and node.op_type == "DequantizeLinear" and len(node.input) > 2 and node.input[2] in zps:
            outs.append(helper.make_tensor_value_info(node.input[0], zps[node.input[2]], None))
            if o.name not in readers:
                drop.append(node)
        else:
            outs.append(o)
    for node in drop:
        g.node.remove(node)
    del g.output[:]
    g.output.extend(outs)
    return model


def quantized_nets(out):
    """The float net quantized by ONNX Runtime's quantizer (static: QOperator
    per tensor and per channel, QDQ per channel; uint8 activations, int8
    weights; calibrated on standard normal inputs, as compare.py draws), and a
    MatMul model through quantize_dynamic."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)

    rng = np.random.default_rng(23)
    float_path = os.path.join(out, "qop_net_float.onnx")
    onnx.save(float_net(rng), float_path)

    class Reader(CalibrationDataReader):
        def __init__(self):
            r = np.random.default_rng(24)
            self.data = iter([{"x": r.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(16)])

        def get_next(self):
            return next(self.data, None)

    for name, fmt, per_channel, act in (("qop_net_qop_pt", QuantFormat.QOperator, False, QuantType.QUInt8),
                                        ("qop_net_qop_pc", QuantFormat.QOperator, True, QuantType.QUInt8),
                                        ("qop_net_qdq_pt", QuantFormat.QDQ, False, QuantType.QUInt8),
                                        ("qop_net_qdq_pc", QuantFormat.QDQ, True, QuantType.QUInt8),
                                        ("qop_net_qdq_s8", QuantFormat.QDQ, True, QuantType.QInt8)):
        path = os.path.join(out, name + ".onnx")
        quantize_static(float_path, path, Reader(), quant_format=fmt, per_channel=per_channel,
                        activation_type=act, weight_type=QuantType.QInt8,
                        reduce_range=act == QuantType.QUInt8 and ort_u8s8_saturates())
        onnx.save(quantized_outputs(onnx.load(path)), path)

    # quantize_dynamic: MatMul -> DynamicQuantizeLinear, MatMulInteger and the float scaling
    def w(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)

    n = helper.make_node
    graph = helper.make_graph(
        [n("MatMul", ["x", "w1"], ["h"]), n("Add", ["h", "b1"], ["hb"]), n("Relu", ["hb"], ["hr"]),
         n("MatMul", ["hr", "w2"], ["y"])], "qop_dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
        [w("w1", [32, 24]), w("b1", [24]), w("w2", [24, 16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_qop_cases")
    model.ir_version = 8
    dyn_float = os.path.join(out, "qop_dyn_float.onnx")
    onnx.save(model, dyn_float)
    quantize_dynamic(dyn_float, os.path.join(out, "qop_dyn.onnx"), weight_type=QuantType.QInt8)


def qdq_cases(out):
    """qdq_fire.onnx and qdq_refuse.onnx (see the module's docstring)."""
    rng = np.random.default_rng(31)
    n = helper.make_node

    def init(name, value, dtype):
        return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)

    def conv_branch(tag, zy):
        """DQ(x) -> Conv(DQ(w), DQ(b)) -> c_<tag>; the weights' initializers."""
        ws = (rng.uniform(0.002, 0.01, 16)).astype(np.float32)
        xs = np.float32(0.02)
        lim = 64 if ort_u8s8_saturates() else 127  # uint8 x: see ort_u8s8_saturates
        inits = [init("w_" + tag, rng.integers(-lim, lim + 1, (16, 8, 3, 3)), np.int8), init("ws_" + tag, ws, np.float32),
                 init("wz_" + tag, np.zeros(16), np.int8), init("b_" + tag, rng.integers(-3000, 3000, 16), np.int32),
                 init("bs_" + tag, xs * ws, np.float32), init("bz_" + tag, np.zeros(16), np.int32),
                 init("ys_" + tag, 0.05, np.float32), init("yz_" + tag, zy, np.uint8)]
        nodes = [n("DequantizeLinear", ["w_" + tag, "ws_" + tag, "wz_" + tag], ["wd_" + tag], axis=0),
                 n("DequantizeLinear", ["b_" + tag, "bs_" + tag, "bz_" + tag], ["bd_" + tag], axis=0),
                 n("Conv", ["xd", "wd_" + tag, "bd_" + tag], ["c_" + tag], pads=[1, 1, 1, 1])]
        return nodes, inits

    def model(name, nodes, inits, outputs, inputs):
        graph = helper.make_graph(nodes, name, inputs, outputs, inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_qop_cases")
        m.ir_version = 8
        onnx.save(m, os.path.join(out, name + ".onnx"))

    x_in = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])
    x_nodes = [n("QuantizeLinear", ["x", "xs", "xz"], ["xq"]), n("DequantizeLinear", ["xq", "xs", "xz"], ["xd"])]
    x_inits = [init("xs", 0.02, np.float32), init("xz", 128, np.uint8)]
    u8 = lambda name: helper.make_tensor_value_info(name, TensorProto.UINT8, None)  # noqa: E731

    # fire: Conv -> Relu -> Q (zero point 0), MatMul s8 x s8 -> Clip -> Q
    nodes, inits = conv_branch("relu", 0)
    nodes += [n("Relu", ["c_relu"], ["r_relu"]), n("QuantizeLinear", ["r_relu", "ys_relu", "yz_relu"], ["y_relu"])]
    inits += [init("as", 0.03, np.float32), init("az", 0, np.int8), init("bq", rng.integers(-127, 128, (16, 12)), np.int8),
              init("bsc", 0.01, np.float32), init("bzp", 0, np.int8), init("ms", 0.02, np.float32),
              init("mz", 3, np.int8), init("lo", -6.0, np.float32), init("hi", 6.0, np.float32)]
    nodes += [n("QuantizeLinear", ["a", "as", "az"], ["aq"]), n("DequantizeLinear", ["aq", "as", "az"], ["ad"]),
              n("DequantizeLinear", ["bq", "bsc", "bzp"], ["bd"]), n("MatMul", ["ad", "bd"], ["m"]),
              n("Clip", ["m", "lo", "hi"], ["mc"]), n("QuantizeLinear", ["mc", "ms", "mz"], ["y_mm"])]
    # ... then MaxPool and Transpose between a DQ and a Q of y_relu's parameters: on the bytes
    for src, op, dst, attrs in (("y_relu", "MaxPool", "y_pool", dict(kernel_shape=[3, 3], strides=[2, 2],
                                                                        pads=[1, 1, 1, 1])),
                                ("y_pool", "Transpose", "y_perm", dict(perm=[0, 2, 3, 1]))):
        nodes += [n("DequantizeLinear", [src, "ys_relu", "yz_relu"], [src + "_d"]),
                  n(op, [src + "_d"], [dst + "_f"], **attrs),
                  n("QuantizeLinear", [dst + "_f", "ys_relu", "yz_relu"], [dst])]
    # ... and a nearest Resize (x2, asymmetric) between them: on the bytes too
    nodes += [n("DequantizeLinear", ["y_relu", "ys_relu", "yz_relu"], ["y_relu_du"]),
              n("Resize", ["y_relu_du", "", "up_scales"], ["y_up_f"], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
              n("QuantizeLinear", ["y_up_f", "ys_relu", "yz_relu"], ["y_up"])]
    inits.append(init("up_scales", [1.0, 1.0, 2.0, 2.0], np.float32))
    a_in = helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 16])
    model("qdq_fire", x_nodes + nodes, x_inits + inits,
          [u8("y_relu"), helper.make_tensor_value_info("y_mm", TensorProto.INT8, None), u8("y_perm"), u8("y_up")],
          [x_in, a_in])

    # refuse: Conv -> Relu -> Q (zero point 100), Conv -> Q with the float conv output also a graph output
    nodes, inits = conv_branch("relu100", 100)
    nodes += [n("Relu", ["c_relu100"], ["r_relu100"]),
              n("QuantizeLinear", ["r_relu100", "ys_relu100", "yz_relu100"], ["y_relu100"])]
    more_nodes, more_inits = conv_branch("shared", 128)
    nodes += more_nodes + [n("QuantizeLinear", ["c_shared", "ys_shared", "yz_shared"], ["y_shared"])]
    # ... and a MaxPool between a DQ and a Q of another scale: stays float
    nodes += [n("DequantizeLinear", ["y_shared", "ys_shared", "yz_shared"], ["y_shared_d"]),
              n("MaxPool", ["y_shared_d"], ["p_f"], kernel_shape=[2, 2], strides=[2, 2]),
              n("QuantizeLinear", ["p_f", "ys_pool", "yz_shared"], ["y_pool"])]
    more_inits.append(init("ys_pool", 0.04, np.float32))
    # ... and a linear Resize between a DQ and a Q of one scale: it computes, stays float
    nodes += [n("DequantizeLinear", ["y_shared", "ys_shared", "yz_shared"], ["y_shared_du"]),
              n("Resize", ["y_shared_du", "", "up_scales"], ["y_lin_f"], mode="linear"),
              n("QuantizeLinear", ["y_lin_f", "ys_shared", "yz_shared"], ["y_lin"])]
    more_inits.append(init("up_scales", [1.0, 1.0, 2.0, 2.0], np.float32))
    model("qdq_refuse", x_nodes + nodes, x_inits + inits + more_inits,
          [u8("y_relu100"), u8("y_shared"), helper.make_tensor_value_info("c_shared", TensorProto.FLOAT, None),
           u8("y_pool"), u8("y_lin")], [x_in])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the models and their inputs")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    linear(args.out)
    contrib(args.out)
    quantized_nets(args.out)
    qdq_cases(args.out)


if __name__ == "__main__":
    main()
