#!/usr/bin/env python3
"""Accuracy of `ingot run` outputs against labels, beside the expected figure.

  accuracy.py OUTPUTS.npz LABELS.npy EXPECTED.json [--output NAME]

Takes the argmax over the last axis of the output (default: the one named in
EXPECTED.json's "output", else the first member). Exit 0 when the number of
correct predictions equals the expected one, 1 when it differs.
"""
import argparse
import json
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outputs")
    ap.add_argument("labels")
    ap.add_argument("expected")
    ap.add_argument("--output", help="output name (default: from EXPECTED.json)")
    args = ap.parse_args()
    with open(args.expected) as f:
        expected = json.load(f)
    labels = np.load(args.labels)
    with np.load(args.outputs) as z:
        name = args.output or expected.get("output") or z.files[0]
        if name not in z.files:
            print(f"accuracy.py: '{args.outputs}' has no output '{name}' (has {z.files})")
            return 1
        y = z[name]
    if y.shape[0] != len(labels):
        print(f"accuracy.py: {y.shape[0]} predictions for {len(labels)} labels")
        return 1
    correct = int((y.reshape(len(labels), -1).argmax(axis=1) == labels).sum())
    same = correct == expected["correct"] and len(labels) == expected["count"]
    print(f"accuracy: {correct / len(labels):.4f} ({correct}/{len(labels)})   "
          f"expected: {expected['accuracy']:.4f} ({expected['correct']}/{expected['count']}, "
          f"{expected.get('measured_with', 'reference')})   -> {'match' if same else 'DIFFERS'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
