#!/usr/bin/env python3
"""Writes one small ONNX model whose branches exercise the compile-time
weight packing and the fusions that go with it (graph/passes_layout.c,
lower/lower_conv.c, lower/lower_gemm.c), for an end-to-end check against
ONNX Runtime:

  conv3x3_res   Conv 3x3 pad 1, 24 -> 40 channels (one whole panel of 32 and
                a partial one of 8), bias, then Add with a skip tensor and
                Relu (both fused into the conv)
  conv1x1       Conv 1x1 on 8x8 positions (a matrix product along positions),
                40 -> 48 channels (panel 32 + 16), bias, Clip(0, 6)
  conv3x3_s2    Conv 3x3 stride 2, 40 -> 24 channels (panels of 8)
  conv1x1_few   Conv 1x1 from 8 channels (too short a reduction to pack)
  matmul        MatMul [2, 5, 37] x [37, 70] (panels 32 + 32 + 6)
  gemm_tb       Gemm transB=1, [3, 50] x [45, 50]^T + bias (panels 32 + 13)
  gemm_wide     Gemm [4, 37] x [37, 64], alpha 0.5, Relu (two whole panels)
  padded_chain  Conv 1x1 24 -> 32 + Relu, then a depthwise 3x3 pad 1 (group
                32) and a dense 3x3 pad (1, 2, 0, 1): each Pad in front of the
                3x3 convs is absorbed by the conv that feeds it, which writes
                into the padded tensor and zeroes its border

Inputs: x [1, 24, 8, 8], skip [1, 40, 8, 8], a [2, 5, 37], g [3, 50],
h [4, 37]. Weights from a fixed seed; the same arguments write the same bytes.

  python models/make_packed_cases.py --out build/models
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for packed_cases.onnx")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    inits = []

    def w(name, *shape, scale=0.2):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def f32(name, value):
        inits.append(numpy_helper.from_array(np.array(value, dtype=np.float32), name))
        return name

    nodes = [
        helper.make_node("Conv", ["x", w("c1.w", 40, 24, 3, 3), w("c1.b", 40)], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c1", "skip"], ["c1_add"]),
        helper.make_node("Relu", ["c1_add"], ["conv3x3_res"]),
        helper.make_node("Conv", ["conv3x3_res", w("c2.w", 48, 40, 1, 1), w("c2.b", 48)], ["c2"]),
        helper.make_node("Clip", ["c2", f32("zero", 0.0), f32("six", 6.0)], ["conv1x1"]),
        helper.make_node("Conv", ["conv3x3_res", w("c3.w", 24, 40, 3, 3)], ["conv3x3_s2"], pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node("Slice", ["x", "s_start", "s_end", "s_axes"], ["x8"]),
        helper.make_node("Conv", ["x8", w("c4.w", 20, 8, 1, 1), w("c4.b", 20)], ["conv1x1_few"]),
        helper.make_node("MatMul", ["a", w("m.w", 37, 70)], ["matmul"]),
        helper.make_node("Gemm", ["g", w("g.w", 45, 50), w("g.b", 45)], ["gemm_tb"], transB=1),
        helper.make_node("Gemm", ["h", w("h.w", 37, 64)], ["gemm_pre"], alpha=0.5),
        helper.make_node("Relu", ["gemm_pre"], ["gemm_wide"]),
        helper.make_node("Conv", ["x", w("p1.w", 32, 24, 1, 1), w("p1.b", 32)], ["p1"]),
        helper.make_node("Relu", ["p1"], ["p1r"]),
        helper.make_node("Conv", ["p1r", w("p2.w", 32, 1, 3, 3), w("p2.b", 32)], ["p2"], pads=[1, 1, 1, 1], group=32),
        helper.make_node("Conv", ["p2", w("p3.w", 16, 32, 3, 3)], ["padded_chain"], pads=[1, 2, 0, 1]),
    ]
    for name, v in (("s_start", [0]), ("s_end", [8]), ("s_axes", [1])):
        inits.append(numpy_helper.from_array(np.array(v, dtype=np.int64), name))
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 24, 8, 8]),
        helper.make_tensor_value_info("skip", TensorProto.FLOAT, [1, 40, 8, 8]),
        helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 5, 37]),
        helper.make_tensor_value_info("g", TensorProto.FLOAT, [3, 50]),
        helper.make_tensor_value_info("h", TensorProto.FLOAT, [4, 37]),
    ]
    outputs = [
        helper.make_tensor_value_info("conv3x3_res", TensorProto.FLOAT, [1, 40, 8, 8]),
        helper.make_tensor_value_info("conv1x1", TensorProto.FLOAT, [1, 48, 8, 8]),
        helper.make_tensor_value_info("conv3x3_s2", TensorProto.FLOAT, [1, 24, 4, 4]),
        helper.make_tensor_value_info("conv1x1_few", TensorProto.FLOAT, [1, 20, 8, 8]),
        helper.make_tensor_value_info("matmul", TensorProto.FLOAT, [2, 5, 70]),
        helper.make_tensor_value_info("gemm_tb", TensorProto.FLOAT, [3, 45]),
        helper.make_tensor_value_info("gemm_wide", TensorProto.FLOAT, [4, 64]),
        helper.make_tensor_value_info("padded_chain", TensorProto.FLOAT, [1, 16, 7, 9]),
    ]
    graph = helper.make_graph(nodes, "packed_cases", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="ingot-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "packed_cases.onnx")
    onnx.save(model, path)
    print(path)


if __name__ == "__main__":
    main()
