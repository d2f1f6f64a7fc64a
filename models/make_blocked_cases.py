#!/usr/bin/env python3
"""Writes one small ONNX model whose convolution regions exercise the blocked
activation layout (graph/passes_layout.c, ingot_graph_block_activations;
lower/lower_conv.c, lower_conv_blocked), for an end-to-end check against
ONNX Runtime:

  stem      Conv 3x3 pad 1 from the 3-channel image to 32 channels (an NCHW
            input, blocked output: a region's entry), bias, Relu: a
  dw        depthwise Conv 3x3 pad 1 on a (group 32), Clip(0, 6): b
  expand    Conv 1x1 32 -> 24: c24 (24 is no multiple of 16: its blocks of
            16 carry 8 padding lanes), Conv 1x1 24 -> 32: c (reads them with
            zero weights); MaxPool 3x3 stride 2 pad 1: d
  body      Conv 3x3 pad 1 32 -> 32 plus d (a residual Add fused into the
            conv), then Sigmoid (a lane-wise op of its own): g
  cat       Concat(g, d) on channels (32 + 32): h; AveragePool 2x2 stride 2: i
  square    Mul(i, i): j;  head: Conv 1x1 64 -> 20 (graph output "head": a
            region's edge at a graph output, 20 channels in two blocks)
  b_mean    ReduceMean of b over H, W (an NCHW consumer in the region's
            middle: one FromBlocked)
  cc        Concat(c24, c24): 48 channels from parts of 24 (not a multiple of
            16: NCHW with blocks of 16, blocked with blocks of 8), then
            GlobalAveragePool
  xdw       a depthwise Conv on the NCHW image (stays NCHW), GlobalAveragePool
  up        from h: squeeze-and-excitation (GlobalAveragePool, Conv 1x1,
            HardSigmoid, Mul broadcasting [1, 64, 1, 1] over h), a HardSwish
            spelled out with scalar constants (Add 3, Clip 0..6, Mul, Div 6),
            a Mul and an Add of constants per channel ([1, 64, 1, 1] and
            [64, 1, 1]), Resize nearest x2, Conv 3x3 64 -> 16: all blocked

Input: x [1, 3, 20, 20]. Weights from a fixed seed; the same arguments write
the same bytes.

  python models/make_blocked_cases.py --out build/models
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for blocked_cases.onnx")
    args = ap.parse_args()
    rng = np.random.default_rng(11)
    inits = []
    nodes = []

    def w(name, shape, scale=0.3):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out + "_node", **attrs))
        return out

    p1 = dict(pads=[1, 1, 1, 1])
    a = node("Relu", [node("Conv", ["x", w("w_stem", [32, 3, 3, 3]), w("b_stem", [32])], "stem", **p1)], "a")
    b = node("Clip", [node("Conv", [a, w("w_dw", [32, 1, 3, 3]), w("b_dw", [32])], "dw", group=32, **p1),
                      "clip_lo", "clip_hi"], "b")
    inits.append(numpy_helper.from_array(np.array(0.0, np.float32), "clip_lo"))
    inits.append(numpy_helper.from_array(np.array(6.0, np.float32), "clip_hi"))
    c24 = node("Conv", [b, w("w_expand", [24, 32, 1, 1]), w("b_expand", [24])], "c24")
    c = node("Conv", [c24, w("w_c", [32, 24, 1, 1])], "c")
    d = node("MaxPool", [c], "d", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    e = node("Conv", [d, w("w_body", [32, 32, 3, 3], 0.1), w("b_body", [32])], "e", **p1)
    g = node("Sigmoid", [node("Add", [e, d], "f")], "g")
    h = node("Concat", [g, d], "h", axis=1)
    i = node("AveragePool", [h], "i", kernel_shape=[2, 2], strides=[2, 2])
    j = node("Mul", [i, i], "j")
    node("Conv", [j, w("w_head", [20, 64, 1, 1]), w("b_head", [20])], "head")
    node("ReduceMean", [b], "b_mean", axes=[2, 3], keepdims=0)
    node("GlobalAveragePool", [node("Concat", [c24, c24], "cc_cat", axis=1)], "cc")
    node("GlobalAveragePool", [node("Conv", ["x", w("w_xdw", [3, 1, 3, 3])], "xdw_conv", group=3, **p1)], "xdw")
    se = node("HardSigmoid", [node("Conv", [node("GlobalAveragePool", [h], "se_pool"), w("w_se", [64, 64, 1, 1]),
                                            w("b_se", [64])], "se_conv")], "se_gate")
    h2 = node("Mul", [h, se], "h2")
    for name, value in (("three", 3.0), ("six", 6.0), ("zero", 0.0)):
        inits.append(numpy_helper.from_array(np.array(value, np.float32), name))
    hs = node("Div", [node("Mul", [h2, node("Clip", [node("Add", [h2, "three"], "hs_add"), "zero", "six"], "hs_clip")],
                           "hs_mul"), "six"], "hs")
    inits.append(numpy_helper.from_array(rng.standard_normal((1, 64, 1, 1)).astype(np.float32), "pc_scale"))
    inits.append(numpy_helper.from_array(rng.standard_normal((64, 1, 1)).astype(np.float32), "pc_shift"))
    pc = node("Add", [node("Mul", ["pc_scale", hs], "pc_mul"), "pc_shift"], "pc")
    inits.append(numpy_helper.from_array(np.array([], np.float32), "roi"))
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "up_scales"))
    upx = node("Resize", [pc, "roi", "up_scales"], "up_x", mode="nearest", coordinate_transformation_mode="asymmetric",
               nearest_mode="floor")
    node("Conv", [upx, w("w_up", [16, 64, 3, 3], 0.1)], "up", **p1)

    graph = helper.make_graph(
        nodes, "blocked_cases",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 20, 20])],
        [helper.make_tensor_value_info("head", TensorProto.FLOAT, [1, 20, 5, 5]),
         helper.make_tensor_value_info("b_mean", TensorProto.FLOAT, [1, 32]),
         helper.make_tensor_value_info("cc", TensorProto.FLOAT, [1, 48, 1, 1]),
         helper.make_tensor_value_info("xdw", TensorProto.FLOAT, [1, 3, 1, 1]),
         helper.make_tensor_value_info("up", TensorProto.FLOAT, [1, 16, 20, 20])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ingot-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "blocked_cases.onnx")
    onnx.save(model, path)
    print(path)


if __name__ == "__main__":
    main()
