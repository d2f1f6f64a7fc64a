#!/usr/bin/env python3
"""Writes ResNet-18, ResNet-50, MobileNetV2 and SqueezeNet 1.1 (the torchvision
architectures) as ONNX with deterministic random weights, for end-to-end tests
and benchmarks.

  input   float32 [1,3,224,224]   (--size small: [1,3,32,32], fewer channels;
                                   SqueezeNet 1.1 small: [1,3,64,64])
  logits  float32 [1,1000]        (--size small: [1,100])

ResNet-18: conv7x7/2, BN, relu, maxpool3x3/2, 4 stages of 2 basic blocks
(conv3x3, BN, relu, conv3x3, BN, residual add with a 1x1/2 conv + BN where the
shape changes, relu), global average pool, flatten, Gemm.
MobileNetV2: conv3x3/2, BN, ReLU6, 17 inverted residual blocks (1x1 expand,
BN, ReLU6, 3x3 depthwise conv with group=C, BN, ReLU6, 1x1 project, BN,
residual add when stride 1 and the channel count stays), 1x1 conv to 1280,
BN, ReLU6, global average pool, flatten, Gemm. ReLU6 is Clip(0, 6).
ResNet-50 (v1.5, as torchvision): the ResNet-18 stem, then 4 stages of 3, 4,
6, 3 bottleneck blocks (conv1x1, BN, relu, conv3x3 with the stage's stride,
BN, relu, conv1x1 to 4x the width, BN, residual add with a 1x1 conv + BN
where the shape changes, relu), global average pool, flatten, Gemm.
SqueezeNet 1.1: conv3x3/2 (no padding, with bias), relu, maxpool3x3/2
(ceil_mode), 8 Fire modules (1x1 squeeze + relu, then 1x1 and 3x3 expand,
each + relu, concatenated on channels) with ceil_mode maxpools after the
2nd and 4th, then a 1x1 conv to the classes + relu, global average pool,
flatten. Its convs have biases and no BN.

Weights: numpy with a fixed seed, He-style normal init for convs (so
activations keep a sane scale through the depth), BN with gamma near 1 (0.3x on the last BN of a residual branch), small
beta, small random running means and positive running variances. The same
arguments always write the same bytes. Only numpy and onnx are needed.

  python models/make_cnn_zoo.py --out build/models --model all [--size small|all]
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.count = {}

    def name(self, prefix):
        n = self.count.get(prefix, 0)
        self.count[prefix] = n + 1
        return f"{prefix}{n}"

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def conv(self, x, cin, cout, k, stride=1, group=1, bias=False, pad=None):
        n = self.name("conv")
        fan_in = (cin // group) * k * k
        w = self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in)
        inputs = [x, self.init(f"{n}.weight", w.astype(np.float32))]
        if bias:
            inputs.append(self.init(f"{n}.bias",
                                    (self.rng.standard_normal(cout) * 0.01).astype(np.float32)))
        if pad is None:
            pad = k // 2
        self.nodes.append(helper.make_node(
            "Conv", inputs, [n], name=n, kernel_shape=[k, k], strides=[stride, stride],
            pads=[pad, pad, pad, pad], group=group, dilations=[1, 1]))
        return n

    def bn(self, x, c, gamma_scale=1.0):
        n = self.name("bn")
        r = self.rng
        gamma = (r.uniform(0.8, 1.2, c) * gamma_scale).astype(np.float32)
        beta = (r.standard_normal(c) * 0.05).astype(np.float32)
        mean = (r.standard_normal(c) * 0.05).astype(np.float32)
        var = r.uniform(0.8, 1.2, c).astype(np.float32)  # positive
        names = [self.init(f"{n}.{k}", v) for k, v in
                 [("scale", gamma), ("bias", beta), ("mean", mean), ("var", var)]]
        self.nodes.append(helper.make_node("BatchNormalization", [x, *names], [n], name=n,
                                           epsilon=1e-5, momentum=0.9))
        return n

    def relu(self, x):
        n = self.name("relu")
        self.nodes.append(helper.make_node("Relu", [x], [n], name=n))
        return n

    def relu6(self, x):
        if "relu6.min" not in self.count:
            self.count["relu6.min"] = 1
            self.init("relu6.min", np.array(0.0, dtype=np.float32))
            self.init("relu6.max", np.array(6.0, dtype=np.float32))
        n = self.name("relu6_")
        self.nodes.append(helper.make_node("Clip", [x, "relu6.min", "relu6.max"], [n], name=n))
        return n

    def add(self, a, b):
        n = self.name("add")
        self.nodes.append(helper.make_node("Add", [a, b], [n], name=n))
        return n

    def maxpool(self, x, k, stride, pad, ceil_mode=False):
        n = self.name("maxpool")
        extra = {"ceil_mode": 1} if ceil_mode else {}
        self.nodes.append(helper.make_node("MaxPool", [x], [n], name=n, kernel_shape=[k, k],
                                           strides=[stride, stride], pads=[pad] * 4, **extra))
        return n

    def concat(self, xs, axis):
        n = self.name("concat")
        self.nodes.append(helper.make_node("Concat", xs, [n], name=n, axis=axis))
        return n

    def head(self, x, cin, classes, out_name):
        gap = self.name("gap")
        self.nodes.append(helper.make_node("GlobalAveragePool", [x], [gap], name=gap))
        flat = self.name("flatten")
        self.nodes.append(helper.make_node("Flatten", [gap], [flat], name=flat, axis=1))
        w = (self.rng.standard_normal((classes, cin)) * np.sqrt(1.0 / cin)).astype(np.float32)
        b = (self.rng.standard_normal(classes) * 0.01).astype(np.float32)
        self.nodes.append(helper.make_node(
            "Gemm", [flat, self.init("fc.weight", w), self.init("fc.bias", b)], [out_name],
            name="fc", transB=1))
        return out_name

    def model(self, name, resolution, classes):
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, resolution, resolution])],
            [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])],
            initializer=self.inits)
        m = helper.make_model(graph, producer_name="ingot-make_cnn_zoo",
                              opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def resnet18(small):
    b = Builder(seed=18)
    widths = [16, 32, 64, 128] if small else [64, 128, 256, 512]
    classes = 100 if small else 1000
    res = 32 if small else 224
    x = b.conv("input", 3, widths[0], 7, stride=2)
    x = b.relu(b.bn(x, widths[0]))
    x = b.maxpool(x, 3, 2, 1)
    cin = widths[0]
    for stage, cout in enumerate(widths):
        for block in range(2):
            stride = 2 if (stage > 0 and block == 0) else 1
            y = b.relu(b.bn(b.conv(x, cin, cout, 3, stride), cout))
            # A smaller gamma on the residual branch keeps the sum's scale
            # from doubling at every block (as zero-init residual BN does).
            y = b.bn(b.conv(y, cout, cout, 3, 1), cout, gamma_scale=0.3)
            if stride != 1 or cin != cout:
                shortcut = b.bn(b.conv(x, cin, cout, 1, stride), cout)
            else:
                shortcut = x
            x = b.relu(b.add(y, shortcut))
            cin = cout
    b.head(x, cin, classes, "logits")
    return b.model("resnet18" + ("_small" if small else ""), res, classes)


def make_divisible(v, divisor=8):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def mobilenetv2(small):
    b = Builder(seed=2)
    width = 0.25 if small else 1.0
    classes = 100 if small else 1000
    res = 32 if small else 224
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    cin = make_divisible(32 * width)
    last = make_divisible(1280 * max(1.0, width))
    x = b.relu6(b.bn(b.conv("input", 3, cin, 3, stride=2), cin))
    for t, c, n, s in settings:
        cout = make_divisible(c * width)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = int(round(cin * t))
            y = x
            if t != 1:
                y = b.relu6(b.bn(b.conv(y, cin, hidden, 1), hidden))
            y = b.relu6(b.bn(b.conv(y, hidden, hidden, 3, stride, group=hidden), hidden))
            y = b.bn(b.conv(y, hidden, cout, 1), cout)
            if stride == 1 and cin == cout:
                y = b.add(x, y)
            x = y
            cin = cout
    x = b.relu6(b.bn(b.conv(x, cin, last, 1), last))
    b.head(x, last, classes, "logits")
    return b.model("mobilenetv2" + ("_small" if small else ""), res, classes)


def resnet50(small):
    b = Builder(seed=50)
    widths = [16, 32, 64, 128] if small else [64, 128, 256, 512]
    blocks = [3, 4, 6, 3]
    expansion = 4
    classes = 100 if small else 1000
    res = 32 if small else 224
    x = b.conv("input", 3, widths[0], 7, stride=2)
    x = b.relu(b.bn(x, widths[0]))
    x = b.maxpool(x, 3, 2, 1)
    cin = widths[0]
    for stage, (width, count) in enumerate(zip(widths, blocks)):
        cout = width * expansion
        for block in range(count):
            stride = 2 if (stage > 0 and block == 0) else 1
            y = b.relu(b.bn(b.conv(x, cin, width, 1), width))
            y = b.relu(b.bn(b.conv(y, width, width, 3, stride), width))  # v1.5: stride on the 3x3
            y = b.bn(b.conv(y, width, cout, 1), cout, gamma_scale=0.3)
            if stride != 1 or cin != cout:
                shortcut = b.bn(b.conv(x, cin, cout, 1, stride), cout)
            else:
                shortcut = x
            x = b.relu(b.add(y, shortcut))
            cin = cout
    b.head(x, cin, classes, "logits")
    return b.model("resnet50" + ("_small" if small else ""), res, classes)


def squeezenet11(small):
    b = Builder(seed=11)
    div = 4 if small else 1
    classes = 100 if small else 1000
    res = 64 if small else 224

    def fire(x, cin, squeeze, e1, e3):
        s = b.relu(b.conv(x, cin, squeeze // div, 1, bias=True))
        a = b.relu(b.conv(s, squeeze // div, e1 // div, 1, bias=True))
        c = b.relu(b.conv(s, squeeze // div, e3 // div, 3, bias=True))
        return b.concat([a, c], axis=1), (e1 + e3) // div

    x = b.relu(b.conv("input", 3, 64 // div, 3, stride=2, bias=True, pad=0))
    x = b.maxpool(x, 3, 2, 0, ceil_mode=True)
    c = 64 // div
    x, c = fire(x, c, 16, 64, 64)
    x, c = fire(x, c, 16, 64, 64)
    x = b.maxpool(x, 3, 2, 0, ceil_mode=True)
    x, c = fire(x, c, 32, 128, 128)
    x, c = fire(x, c, 32, 128, 128)
    x = b.maxpool(x, 3, 2, 0, ceil_mode=True)
    x, c = fire(x, c, 48, 192, 192)
    x, c = fire(x, c, 48, 192, 192)
    x, c = fire(x, c, 64, 256, 256)
    x, c = fire(x, c, 64, 256, 256)
    # Classifier: (dropout), 1x1 conv to the classes, relu, global average pool.
    x = b.relu(b.conv(x, c, classes, 1, bias=True))
    gap = b.name("gap")
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], [gap], name=gap))
    b.nodes.append(helper.make_node("Flatten", [gap], ["logits"], name="flatten", axis=1))
    return b.model("squeezenet1_1" + ("_small" if small else ""), res, classes)


MODELS = {"resnet18": resnet18, "mobilenetv2": mobilenetv2,
          "resnet50": resnet50, "squeezenet1_1": squeezenet11}


def main():
    ap = argparse.ArgumentParser(description="Write ResNet-18 / ResNet-50 / MobileNetV2 / SqueezeNet 1.1 ONNX models "
                                             "with deterministic random weights.")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--model", choices=[*MODELS, "all"], default="all")
    ap.add_argument("--size", choices=["full", "small", "all"], default="full",
                    help="small: fewer channels, 32x32 input, 100 classes (quick tests), "
                         "written as NAME_small.onnx; all: both sizes")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    names = list(MODELS) if args.model == "all" else [args.model]
    sizes = [False, True] if args.size == "all" else [args.size == "small"]
    for name, small in [(n, s) for s in sizes for n in names]:
        model = MODELS[name](small)
        path = os.path.join(args.out, f"{name}{'_small' if small else ''}.onnx")
        tmp = path + ".tmp"
        onnx.save(model, tmp)
        os.replace(tmp, path)
        params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
        print(f"wrote {path} ({len(model.graph.node)} nodes, {params / 1e6:.2f}M parameters)")


if __name__ == "__main__":
    main()
