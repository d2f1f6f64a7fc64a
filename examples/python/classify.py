#!/usr/bin/env python3
"""Which digit an 8x8 image shows: the digits model (models/digits/model.onnx)
compiled and run with the `ingot` Python package (python/ingot).

  build/venv/bin/python examples/python/classify.py examples/data/digit_7.pgm
  class 7 (probability 0.9708)

  classify.py IMAGE.pgm [--bundle DIGITS.ingot] [--model MODEL.onnx]

--bundle: use this bundle, compiling the model into it first when it does not
exist; without it the model is compiled into a temporary folder. The image is
a PGM (P2 or P5) of 8x8 pixels, scaled to [0, 1] by its maximum value as the
model was trained (scikit-learn's digits: 0..16). Prints "class N (probability
P)" and then every class's probability, as examples/c_classify does.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import ingot
except ImportError:  # not installed (pip install ./python): this tree's package
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
    import ingot

MODEL = os.path.join(HERE, "..", "..", "models", "digits", "model.onnx")


def read_pgm(path):
    """An 8x8 PGM as float32 [1, 1, 8, 8] in [0, 1]."""
    data = open(path, "rb").read()
    if data[:2] not in (b"P2", b"P5"):
        raise ValueError(f"'{path}' is not a PGM (P2 or P5)")
    fields, pos = [], 2
    while len(fields) < 3:  # width, height, maxval; '#' starts a comment
        while pos < len(data) and data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.find(b"\n", pos) + 1 or len(data)
            continue
        end = pos
        while end < len(data) and data[end:end + 1].isdigit():
            end += 1
        if end == pos:
            raise ValueError(f"'{path}': bad PGM header")
        fields.append(int(data[pos:end]))
        pos = end
    width, height, maxval = fields
    if (width, height) != (8, 8) or not 1 <= maxval <= 255:
        raise ValueError(f"'{path}' is not an 8x8 PGM with maxval 1..255")
    if data[:2] == b"P2":
        pixels = np.array(data[pos:].split()[:64], dtype=np.float32)
    else:
        pixels = np.frombuffer(data[pos + 1:pos + 65], dtype=np.uint8).astype(np.float32)
    if pixels.size != 64 or pixels.max() > maxval:
        raise ValueError(f"'{path}': missing or bad pixel values")
    return (pixels / maxval).reshape(1, 1, 8, 8)


def classify(bundle, image):
    with ingot.Session(bundle) as session:
        probabilities = session.run({"input": image})["probabilities"][0]
    best = int(np.argmax(probabilities))
    print(f"class {best} (probability {probabilities[best]:.4f})")
    for c, p in enumerate(probabilities):
        print(f"  {c}: {p:.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("image")
    ap.add_argument("--bundle", help="the bundle (compiled from --model when missing)")
    ap.add_argument("--model", default=MODEL, help="the ONNX model (default: models/digits/model.onnx)")
    args = ap.parse_args()
    try:
        image = read_pgm(args.image)
    except (OSError, ValueError) as e:
        print(f"classify: {e}", file=sys.stderr)
        return 1
    shapes = {"input": (1, 1, 8, 8)}
    try:
        if args.bundle:
            if not os.path.exists(args.bundle):
                ingot.compile(args.model, args.bundle, input_shapes=shapes)
            classify(args.bundle, image)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                bundle = os.path.join(tmp, "digits.ingot")
                ingot.compile(args.model, bundle, input_shapes=shapes)
                classify(bundle, image)
    except (ingot.IngotError, ingot.NotFoundError, OSError) as e:
        print(f"classify: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
