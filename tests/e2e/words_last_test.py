#!/usr/bin/env python3
"""int8 1x1 convs that read their input's words position by position.

  words_last_test.py --ingot BUILD/ingot --work DIR

On a target without VNNI (here 'llvm -mcpu=x86-64-v3': AVX2, the int8 convs
compute the loop IR's dot4s), a QDQ 1x1 conv whose output row is narrower
than the row form needs runs in the channel form, and its input's dot4
words are laid out [N, H, W, C/4] (node.words_last) instead of
[N, C/4, H, W]: an ai.ingot Dot4Words writes each position's words
together (8, 4 or 2 at a time, transposed by the code generator, or one by
one), and the conv reads them. The model covers:
  y1  1x1 conv 64 -> 96 at 14x14 (words in runs of 8)
  y2  1x1 conv 64 -> 32, stride 2, same input (shares y1's words)
  y3  3x3 conv 64 -> 16, pad 1, same input (its own, planar words)
  y4  1x1 conv 48 -> 40 at 7x7 (runs of 4)
  y5  1x1 conv 36 -> 24 at 9x9 (9 words a position: one at a time)
against ONNX Runtime's QLinearConv on the same file (uint8 outputs; the
requantization rounds a float32 product, so an output may differ by one
step where the product is within an ulp of a half: allowed in at most
0.1 % of outputs, none by more), and --dump-schedule must show the words'
layouts: y1, y2, y4, y5 'xwords_last', y3 'xwords', three Dot4Words
'... last' and one planar."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qdq_ort  # noqa: E402

TARGET = "llvm -mcpu=x86-64-v3"


def make_model(path):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    inits, nodes, outputs = [], [], []

    def add(name, v):
        inits.append(numpy_helper.from_array(v, name))
        return name

    def qinput(name, c, h):
        add(f"{name}_s", np.array(0.03, np.float32))
        add(f"{name}_z", np.array(17, np.uint8))
        nodes.append(helper.make_node("QuantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_d"]))
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, c, h, h])

    def conv(out, x, c, k, r, stride, relu):
        # 7-bit weights (ONNX Runtime's reduce_range): pmaddubsw cannot saturate
        w = rng.integers(-63, 64, size=(k, c, r, r)).astype(np.int8)
        ws = (rng.random(k) * 0.004 + 0.001).astype(np.float32)
        add(f"{out}_w", w), add(f"{out}_ws", ws), add(f"{out}_wz", np.zeros(k, np.int8))
        add(f"{out}_b", rng.integers(-3000, 3000, size=k).astype(np.int32))
        add(f"{out}_bs", (ws * np.float32(0.03)).astype(np.float32)), add(f"{out}_bz", np.zeros(k, np.int32))
        add(f"{out}_ys", np.array(0.05, np.float32)), add(f"{out}_yz", np.array(0 if relu else 128, np.uint8))
        nodes.extend([
            helper.make_node("DequantizeLinear", [f"{out}_w", f"{out}_ws", f"{out}_wz"], [f"{out}_wd"], axis=0),
            helper.make_node("DequantizeLinear", [f"{out}_b", f"{out}_bs", f"{out}_bz"], [f"{out}_bd"], axis=0),
            helper.make_node("Conv", [f"{x}_d", f"{out}_wd", f"{out}_bd"], [f"{out}_f"], name=out,
                             strides=[stride, stride], pads=[r // 2] * 4),
        ])
        y = f"{out}_f"
        if relu:
            nodes.append(helper.make_node("Relu", [y], [f"{out}_r"]))
            y = f"{out}_r"
        nodes.append(helper.make_node("QuantizeLinear", [y, f"{out}_ys", f"{out}_yz"], [out]))
        outputs.append(helper.make_tensor_value_info(out, TensorProto.UINT8, [1, k, None, None]))

    inputs = [qinput("x", 64, 14), qinput("x2", 48, 7), qinput("x3", 36, 9)]
    conv("y1", "x", 64, 96, 1, 1, True)
    conv("y2", "x", 64, 32, 1, 2, False)
    conv("y3", "x", 64, 16, 3, 1, True)
    conv("y4", "x2", 48, 40, 1, 1, True)
    conv("y5", "x3", 36, 24, 1, 1, False)
    qdq_ort.save_model(nodes, "words_last", inputs, outputs, inits, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    path = os.path.join(args.work, "words_last.onnx")
    make_model(path)

    bundle = os.path.join(args.work, "words_last.ingot")
    kernels = qdq_ort.compile_kernels(args.ingot, path, bundle, TARGET)
    failures = []
    words = {}
    for node, work in kernels:
        if work.startswith("conv2d"):
            words[node] = "xwords_last" if " xwords_last" in work else "xwords" if " xwords" in work else "bytes"
    last = sum(w.startswith("dot4_words") and w.endswith(" last") for _, w in kernels)
    planar = sum(w.startswith("dot4_words") and not w.endswith(" last") for _, w in kernels)
    got_layouts = sorted(words.values())
    want_layouts = sorted(["xwords_last"] * 4 + ["xwords"])
    if got_layouts != want_layouts or (last, planar) != (3, 1):
        failures.append(f"layouts: convs {got_layouts} (want {want_layouts}), Dot4Words {last} last and "
                        f"{planar} planar (want 3 and 1)")

    rng = np.random.default_rng(1)
    feeds = {"x": rng.random((1, 64, 14, 14), dtype=np.float32) * 6 - 0.4,
             "x2": rng.random((1, 48, 7, 7), dtype=np.float32) * 6 - 0.4,
             "x3": rng.random((1, 36, 9, 9), dtype=np.float32) * 6 - 0.4}
    failures += qdq_ort.check(args.ingot, bundle, path, feeds, args.work,
                              lambda name: f" {words.get(name, '?')}")
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print("ok")


if __name__ == "__main__":
    main()
