#!/usr/bin/env python3
"""Trains the default demo model: a digit classifier on scikit-learn's bundled
8x8 digits data (no download), written by hand as ONNX.

  input          float32 [N,1,8,8], pixels scaled to [0, 1] (raw value / 16)
  Flatten -> Gemm(64->64) -> Relu -> Gemm(64->10) -> Softmax(axis=1)
  probabilities  float32 [N,10]

Writes into models/digits/ (or --out DIR):
  model.onnx       the model (opset 13)
  test_x.npy       held-out images, float32 [M,1,8,8], scaled as above
  test_y.npy       their labels, int64 [M]
  expected.json    accuracy on the test set measured with onnxruntime, and M

The split and training are fixed (seeds), and the outputs are committed, so
this script only needs to run again to change the model. Needs numpy, onnx,
onnxruntime and scikit-learn.
"""
import argparse
import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 0
TEST_FRACTION = 0.25
HIDDEN = 64
OPSET = 13


def build_model(w1, b1, w2, b2):
    inits = [
        numpy_helper.from_array(w1.astype(np.float32), "fc1.weight"),
        numpy_helper.from_array(b1.astype(np.float32), "fc1.bias"),
        numpy_helper.from_array(w2.astype(np.float32), "fc2.weight"),
        numpy_helper.from_array(b2.astype(np.float32), "fc2.bias"),
    ]
    nodes = [
        helper.make_node("Flatten", ["input"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc1.weight", "fc1.bias"], ["fc1"], name="fc1"),
        helper.make_node("Relu", ["fc1"], ["relu1"], name="relu1"),
        helper.make_node("Gemm", ["relu1", "fc2.weight", "fc2.bias"], ["logits"], name="fc2"),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "digits_mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 10])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="ingot-make_digits",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(here, "digits"), help="output folder")
    args = ap.parse_args()

    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)  # [n, 64] in [0, 1]
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=TEST_FRACTION, random_state=SEED, stratify=y)

    clf = MLPClassifier(hidden_layer_sizes=(HIDDEN,), activation="relu", solver="adam",
                        alpha=1e-4, max_iter=400, random_state=SEED)
    clf.fit(x_train, y_train)
    sk_accuracy = float(clf.score(x_test, y_test))

    # sklearn computes relu(x @ W1 + b1) @ W2 + b2: Gemm with transB=0.
    model = build_model(clf.coefs_[0], clf.intercepts_[0], clf.coefs_[1], clf.intercepts_[1])

    os.makedirs(args.out, exist_ok=True)
    model_path = os.path.join(args.out, "model.onnx")
    onnx.save(model, model_path)
    test_x = x_test.reshape(-1, 1, 8, 8).astype(np.float32)
    np.save(os.path.join(args.out, "test_x.npy"), test_x)
    np.save(os.path.join(args.out, "test_y.npy"), y_test)

    import onnxruntime as ort
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    probs = sess.run(["probabilities"], {"input": test_x})[0]
    assert probs.shape == (len(y_test), 10)
    one = sess.run(["probabilities"], {"input": test_x[:1]})[0]
    assert one.shape == (1, 10) and np.allclose(one[0], probs[0], atol=1e-6)
    correct = int((probs.argmax(axis=1) == y_test).sum())
    accuracy = correct / len(y_test)
    expected = {
        "accuracy": accuracy,
        "correct": correct,
        "count": int(len(y_test)),
        "measured_with": f"onnxruntime {ort.__version__}",
        "sklearn_accuracy": sk_accuracy,
        "input": "input",
        "output": "probabilities",
        "input_shape": [int(len(y_test)), 1, 8, 8],
    }
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    print(f"wrote {model_path}: test accuracy {accuracy:.4f} ({correct}/{len(y_test)}) "
          f"with onnxruntime, {sk_accuracy:.4f} with scikit-learn")


if __name__ == "__main__":
    main()
