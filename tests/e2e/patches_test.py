#!/usr/bin/env python3
"""int8 convs from under 4 input channels, run over their patches.

  patches_test.py --ingot BUILD/ingot --work DIR

Where every target has dot4 words (here 'llvm -mcpu=x86-64-v3'), a
windowed QDQ conv from under 4 channels (an image stem) becomes an ai.ingot
Im2Col, which writes the dot4 words of its patches (channels (c, kh, kw)),
and a 1x1 conv over them (graph/passes_layout.c im2col_narrow_convs). The
model covers:
  y1  7x7/2 conv 3 -> 24, pad 3 (ResNet's stem, at 32x32: 16 outputs a
      row, where a 1x1 conv's words would be laid out position by position;
      the patches' stay planar)
  y2  3x3 conv 1 -> 32, dilation 2, pad 2
  y3  5x5/3 conv 2 -> 32, no pad
  y4  3x3/2 conv 3 -> 32, pad 1, int8 activations (the words' +128 shift)
  y5  1x1 conv 3 -> 8 (one tap: stays)
  y6  3x3 conv 8 -> 8, pad 1 (8 channels: stays)
  z1  1-D conv 1 -> 32, kernel 16, stride 8 (Silero VAD's feature
      extractor, smaller: the patches of the 2-D conv with H = 1, reshaped
      around the Im2Col)
  z2  1-D conv 2 -> 32, kernel 5, dilation 2, pad 2
(each large enough to be split into ConvInteger + Requantize, which is what
the rewrite takes)
against ONNX Runtime's QLinearConv on the same file (an output may differ
by one step where the requantization's float32 product is within an ulp of
a half: allowed in at most 0.1 % of outputs, none by more). --dump-schedule
must show six Im2Col kernels writing words and y1-y4, z1, z2 as 1x1
convs from C*KH*KW channels; for the c target (no dot4 words) no Im2Col at all."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qdq_ort  # noqa: E402

TARGET = "llvm -mcpu=x86-64-v3"
# name, input, C, K, kernel, stride, dilation, pad, int8 activations, rewritten
CONVS = [("y1", "x1", 3, 24, 7, 2, 1, 3, False, True),
         ("y2", "x2", 1, 32, 3, 1, 2, 2, False, True),
         ("y3", "x3", 2, 32, 5, 3, 1, 0, False, True),
         ("y4", "x4", 3, 32, 3, 2, 1, 1, True, True),
         ("y5", "x1", 3, 8, 1, 1, 1, 0, False, False),
         ("y6", "x5", 8, 8, 3, 1, 1, 1, False, False),
         ("z1", "x6", 1, 32, 16, 8, 1, 0, False, True),
         ("z2", "x7", 2, 32, 5, 1, 2, 2, False, True)]
# name: channels, size, int8 activations; x6, x7 are 1-D ([1, C, size])
INPUTS = {"x1": (3, 32, False), "x2": (1, 40, False), "x3": (2, 47, False), "x4": (3, 33, True), "x5": (8, 12, False),
          "x6": (1, 1200, False), "x7": (2, 300, False)}
ONE_D = ("x6", "x7")


def shape(name):
    c, h, _ = INPUTS[name]
    return (1, c, h) if name in ONE_D else (1, c, h, h)


def make_model(path):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)
    inits, nodes, outputs, inputs = [], [], [], []

    def add(name, v):
        inits.append(numpy_helper.from_array(v, name))

    for name, (c, h, signed) in INPUTS.items():
        add(f"{name}_s", np.array(0.03, np.float32))
        add(f"{name}_z", np.array(-5, np.int8) if signed else np.array(17, np.uint8))
        nodes.append(helper.make_node("QuantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_d"]))
        inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape(name))))
    for out, x, c, k, r, stride, dil, pad, _, _ in CONVS:
        sp = 1 if x in ONE_D else 2
        # 7-bit weights (ONNX Runtime's reduce_range): pmaddubsw cannot saturate
        w = rng.integers(-63, 64, size=(k, c) + (r,) * sp).astype(np.int8)
        ws = (rng.random(k) * 0.02 + 0.005).astype(np.float32)
        add(f"{out}_w", w), add(f"{out}_ws", ws), add(f"{out}_wz", np.zeros(k, np.int8))
        add(f"{out}_b", rng.integers(-3000, 3000, size=k).astype(np.int32))
        add(f"{out}_bs", (ws * np.float32(0.03)).astype(np.float32)), add(f"{out}_bz", np.zeros(k, np.int32))
        add(f"{out}_ys", np.array(0.05, np.float32)), add(f"{out}_yz", np.array(128, np.uint8))
        nodes.extend([
            helper.make_node("DequantizeLinear", [f"{out}_w", f"{out}_ws", f"{out}_wz"], [f"{out}_wd"], axis=0),
            helper.make_node("DequantizeLinear", [f"{out}_b", f"{out}_bs", f"{out}_bz"], [f"{out}_bd"], axis=0),
            helper.make_node("Conv", [f"{x}_d", f"{out}_wd", f"{out}_bd"], [f"{out}_f"], name=out,
                             strides=[stride] * sp, dilations=[dil] * sp, pads=[pad] * 2 * sp),
            helper.make_node("QuantizeLinear", [f"{out}_f", f"{out}_ys", f"{out}_yz"], [out]),
        ])
        outputs.append(helper.make_tensor_value_info(out, TensorProto.UINT8, [1, k] + [None] * sp))
    qdq_ort.save_model(nodes, "patches", inputs, outputs, inits, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    path = os.path.join(args.work, "patches.onnx")
    make_model(path)
    failures = []

    bundle = os.path.join(args.work, "patches.ingot")
    kernels = qdq_ort.compile_kernels(args.ingot, path, bundle, TARGET)
    im2col = [w for _, w in kernels if w.startswith("im2col")]
    want = sum(1 for conv in CONVS if conv[-1])
    if len(im2col) != want or not all(w.endswith("_words") for w in im2col):
        failures.append(f"Im2Col kernels: {im2col} (want {want} writing words)")
    convs = {node: w for node, w in kernels if w.startswith("conv")}
    for out, x, c, k, r, _, _, _, _, rewritten in CONVS:
        w = convs.get(out, "")
        want = f" c{c * r ** (1 if x in ONE_D else 2)} " if rewritten else f" c{c} "
        one = " s1 stride1 " if x in ONE_D else " r1 s1 stride1x1 "
        if want not in w or (rewritten and one not in w):
            failures.append(f"{out}: workload '{w}' (want{want.rstrip()}{' as a 1x1 conv' if rewritten else ''})")
    plain = qdq_ort.compile_kernels(args.ingot, path, os.path.join(args.work, "patches_c.ingot"), "c")
    if any(w.startswith("im2col") for _, w in plain):
        failures.append("the c target (no dot4 words) has an Im2Col")

    rng = np.random.default_rng(1)
    feeds = {name: rng.random(shape(name), dtype=np.float32) * 6 - (3 if signed else 0.4)
             for name, (c, h, signed) in INPUTS.items()}
    failures += qdq_ort.check(args.ingot, bundle, path, feeds, args.work)
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print("ok")


if __name__ == "__main__":
    main()
