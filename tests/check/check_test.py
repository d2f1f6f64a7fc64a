#!/usr/bin/env python3
"""`ingot check`: one pass lists every unsupported op, attribute, dtype and
unresolved dimension, with node names; nodes downstream of a problem are
skipped; `ingot compile` refuses the model with the same list.

  check_test.py --ingot BUILD/ingot --work DIR
"""
import argparse
import json
import os
import subprocess
import sys

import onnx
from onnx import TensorProto, helper

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def bad_model(path):
    """x[N,4] -> Foo (unknown) -> Relu (downstream: skipped)
       x -> Bar (other domain) -> Add(., Relu out) (downstream: skipped)
       x -> Gelu(approximate='bogus')       attribute
       x -> Cast(to=STRING)                  dtype
       x -> Sigmoid -> y_ok                  fine
    """
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y_add", "y_gelu", "y_ok")]
    outs.append(helper.make_tensor_value_info("y_cast", TensorProto.STRING, None))
    nodes = [
        helper.make_node("Foo", ["x"], ["foo_out"], name="foo_node"),
        helper.make_node("Relu", ["foo_out"], ["relu_out"], name="relu_after_foo"),
        helper.make_node("Bar", ["x"], ["bar_out"], name="bar_node", domain="com.example"),
        helper.make_node("Add", ["bar_out", "relu_out"], ["y_add"], name="add_after_both"),
        helper.make_node("Gelu", ["x"], ["y_gelu"], name="gelu_node", approximate="bogus"),
        helper.make_node("Cast", ["x"], ["y_cast"], name="cast_node", to=TensorProto.STRING),
        helper.make_node("Sigmoid", ["x"], ["y_ok"], name="sigmoid_node"),
    ]
    graph = helper.make_graph(nodes, "bad", [x], outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("com.example", 1)])
    onnx.save(model, path)


def good_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("Elu", ["x"], ["t"], name="elu"), helper.make_node("Mish", ["t"], ["y"], name="mish")]
    onnx.save(helper.make_model(helper.make_graph(nodes, "good", [x], [y]),
                                opset_imports=[helper.make_opsetid("", 20)]), path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    bad = os.path.join(a.work, "bad.onnx")
    good = os.path.join(a.work, "good.onnx")
    bad_model(bad)
    good_model(good)

    # The good model: exit 0 and the ok line, in text and JSON.
    rc, out, err = run([a.ingot, "check", good])
    check(rc == 0 and out.strip() == "ok: 2 nodes, all supported", f"good model: rc {rc}, out {out!r} err {err!r}")
    rc, out, _ = run([a.ingot, "check", good, "--json"])
    j = json.loads(out)
    check(rc == 0 and j["ok"] is True and j["problems"] == [], f"good model --json: {out}")

    # The bad model: every problem at once.
    rc, out, err = run([a.ingot, "check", bad, "--json"])
    check(rc == 1, f"bad model: exit {rc} (want 1); stderr {err!r}")
    j = json.loads(out)
    check(j["ok"] is False, "bad model: ok is false")
    got = {(p["node"], p["kind"]) for p in j["problems"]}
    want = {("foo_node", "op"), ("bar_node", "op"), ("gelu_node", "attribute"), ("cast_node", "dtype"),
            (None, "shape")}
    check(got == want, f"bad model problems: {sorted(got, key=str)} (want {sorted(want, key=str)})")
    for p in j["problems"]:
        check(set(p) == {"node", "op", "kind", "message"} and p["message"], f"problem fields: {p}")
        check(p["node"] not in ("relu_after_foo", "add_after_both"), f"downstream node reported: {p}")
    shape = [p for p in j["problems"] if p["kind"] == "shape"]
    check(shape and "'x'" in shape[0]["message"] and "--input-shape" in shape[0]["message"],
          f"the symbolic dimension names the input and the fix: {shape}")
    check(j["skipped"] == 2, f"skipped downstream nodes: {j['skipped']} (want 2)")

    # Text form: one line per problem with node names.
    rc, out, _ = run([a.ingot, "check", bad])
    check(rc == 1, "bad model text: exit 1")
    for name in ("foo_node", "bar_node", "gelu_node", "cast_node"):
        check(f"node '{name}'" in out, f"text output names {name}: {out}")
    check("5 problems" in out, f"text output counts the problems: {out}")

    # --input-shape resolves the dimension: that problem goes away.
    rc, out, _ = run([a.ingot, "check", bad, "--json", "--input-shape", "x=2x4"])
    kinds = [p["kind"] for p in json.loads(out)["problems"]]
    check(rc == 1 and "shape" not in kinds and len(kinds) == 4, f"with --input-shape: {kinds}")

    # compile refuses with the same list, on one error line.
    rc, out, err = run([a.ingot, "compile", bad, "-o", os.path.join(a.work, "bad.ingot"), "--input-shape", "x=2x4"])
    lines = err.strip().splitlines()
    check(rc == 1 and len(lines) == 1 and lines[0].startswith("ingot: error: 4 problems: "),
          f"compile: rc {rc}, stderr {err!r}")
    for name in ("foo_node", "bar_node", "gelu_node", "cast_node"):
        check(f"node '{name}'" in err, f"compile error names {name}")
    check(not os.path.exists(os.path.join(a.work, "bad.ingot")), "compile left no output")

    # Bad command lines and unreadable files.
    rc, _, err = run([a.ingot, "check"])
    check(rc == 2 and err.startswith("ingot: error: "), f"no model: rc {rc} {err!r}")
    rc, _, err = run([a.ingot, "check", good, "--bogus"])
    check(rc == 2, f"unknown flag: rc {rc}")
    rc, _, err = run([a.ingot, "check", os.path.join(a.work, "missing.onnx")])
    check(rc == 1 and err.startswith("ingot: error: "), f"missing file: rc {rc} {err!r}")
    notonnx = os.path.join(a.work, "not.onnx")
    with open(notonnx, "wb") as f:
        f.write(b"\xff\xff\xff garbage")
    rc, _, err = run([a.ingot, "check", notonnx])
    check(rc == 1 and err.startswith("ingot: error: "), f"garbage file: rc {rc} {err!r}")

    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
