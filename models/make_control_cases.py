#!/usr/bin/env python3
"""Writes small models with control flow (If, Loop, Scan) for an end-to-end
check against ONNX Runtime (tests/e2e, compare.py), with the inputs that the
tests bind at compile time (`--const`):

  if_branch.onnx (opset 18), inputs x [2, 3] and fast (bool scalar): If on
    `fast`, the way a voice model picks its path: the then branch computes
    Relu(x) * 2 + b, the else branch Sigmoid(x) - b, both reading x and the
    initializer b of the main graph by name; the then branch holds a Constant
    of its own. if_true.npy / if_false.npy bind `fast` either way (or feed
    it at run time: both branches compiled).

  if_shapes.onnx (opset 18), inputs x [2, 3] and flip (bool scalar): If on
    `flip` whose then branch gives Transpose(x) [3, 2], the else branch x
    [2, 3]: compiled with the condition bound only (one static plan cannot
    hold both shapes).

  loop_counter.onnx (opset 13), inputs x [4] and n (int64 scalar, the trip
    count; loop_n.npy binds it to 6): a Loop whose body carries acc (acc * 0.5
    + x * i, i the iteration number) and counts in cnt, stops by its own
    condition i < 3 (so after 4 of the 6 iterations), and inside it an If on
    i < 2 (known per iteration) adds or subtracts x; the scan output stacks
    acc per iteration.

  loop_while.onnx (opset 13), inputs x [3] and limit (float scalar): a
    Loop of at most 8 iterations (a constant trip count) that carries
    acc (acc * 1.5 + x) and a count, and goes on while sum(acc) < limit: a
    condition known only at run time, so each iteration runs under a guard.
    while_x.npy, limit_small.npy (stops after 3 iterations for while_x) and
    limit_big.npy (runs all 8).

  loop_trips.onnx (opset 13), inputs x [3], n (int64 scalar, the trip count,
    known only at run time) and limit (float scalar): loop_while's body with
    n as the trip count and a scan output (1.5 acc per iteration, its length
    the number of iterations run), compiled with --max-trips 8. trips_N.npy: n = 0, 3,
    8 and 12; with limit_big, n = 12 asks for more iterations than compiled
    in (the run fails), with limit_small the condition ends it after 3.

  scan_rnn.onnx (opset 16), inputs h0 [2, 4], xs [5, 2, 3] and ys [2, 5, 3]:
    an RNN-like Scan: h = Tanh(x_t W + h U + y_t V), W, U, V initializers of
    the main graph, plus a running sum; xs scanned along axis 0 forwards, ys
    along axis 1 backwards; scan outputs h per step (axis 0) and 2h per step
    stacked along axis 1 in reverse.

  python models/make_control_cases.py --out build/models
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def if_branch():
    then_g = helper.make_graph(
        [helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.array(2.0, np.float32))),
         helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Mul", ["r", "two"], ["r2"]),
         helper.make_node("Add", ["r2", "b"], ["t_out"])],
        "then", [], [helper.make_tensor_value_info("t_out", F, [2, 3])])
    else_g = helper.make_graph(
        [helper.make_node("Sigmoid", ["x"], ["s"]),
         helper.make_node("Sub", ["s", "b"], ["e_out"])],
        "else", [], [helper.make_tensor_value_info("e_out", F, [2, 3])])
    nodes = [helper.make_node("If", ["fast"], ["y"], then_branch=then_g, else_branch=else_g)]
    inits = [numpy_helper.from_array(np.array([0.5, -1.0, 0.25], np.float32), "b")]
    g = helper.make_graph(nodes, "if_branch",
                          [helper.make_tensor_value_info("x", F, [2, 3]),
                           helper.make_tensor_value_info("fast", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("y", F, [2, 3])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def if_shapes():
    then_g = helper.make_graph([helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0])], "then", [],
                               [helper.make_tensor_value_info("t", F, [3, 2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", F, [2, 3])])
    g = helper.make_graph([helper.make_node("If", ["flip"], ["y"], then_branch=then_g, else_branch=else_g)],
                          "if_shapes",
                          [helper.make_tensor_value_info("x", F, [2, 3]),
                           helper.make_tensor_value_info("flip", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("y", F, [None, None])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def loop_counter():
    add_g = helper.make_graph([helper.make_node("Add", ["acc_s", "x"], ["a_out"])], "plus", [],
                              [helper.make_tensor_value_info("a_out", F, [4])])
    sub_g = helper.make_graph([helper.make_node("Sub", ["acc_s", "x"], ["s_out"])], "minus", [],
                              [helper.make_tensor_value_info("s_out", F, [4])])
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["acc_in", "half"], ["acc_h"]),
         helper.make_node("Mul", ["x", "fi"], ["xi"]),
         helper.make_node("Add", ["acc_h", "xi"], ["acc_s"]),
         helper.make_node("Less", ["i", "two"], ["early"]),
         helper.make_node("If", ["early"], ["acc_out"], then_branch=add_g, else_branch=sub_g),
         helper.make_node("Add", ["cnt_in", "one"], ["cnt_out"]),
         helper.make_node("Less", ["i", "three"], ["cond_out"]),
         helper.make_node("Identity", ["acc_out"], ["acc_scan"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", F, [4]),
         helper.make_tensor_value_info("cnt_in", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", F, [4]),
         helper.make_tensor_value_info("cnt_out", TensorProto.INT64, []),
         helper.make_tensor_value_info("acc_scan", F, [4])])
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array(2, np.int64), "two"),
             numpy_helper.from_array(np.array(3, np.int64), "three"),
             numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array(True), "go"),
             numpy_helper.from_array(np.zeros(4, np.float32), "acc0"),
             numpy_helper.from_array(np.array(0, np.int64), "cnt0")]
    nodes = [helper.make_node("Loop", ["n", "go", "acc0", "cnt0"], ["acc", "cnt", "accs"], body=body)]
    g = helper.make_graph(nodes, "loop_counter",
                          [helper.make_tensor_value_info("x", F, [4]),
                           helper.make_tensor_value_info("n", TensorProto.INT64, [])],
                          [helper.make_tensor_value_info("acc", F, [4]),
                           helper.make_tensor_value_info("cnt", TensorProto.INT64, []),
                           helper.make_tensor_value_info("accs", F, [None, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def loop_while():
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc_in", "k"], ["acc_k"]),
         helper.make_node("Add", ["acc_k", "x"], ["acc_out"]),
         helper.make_node("Add", ["cnt_in", "one"], ["cnt_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", F, [3]),
         helper.make_tensor_value_info("cnt_in", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", F, [3]),
         helper.make_tensor_value_info("cnt_out", TensorProto.INT64, [])])
    inits = [numpy_helper.from_array(np.array(1.5, np.float32), "k"),
             numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array(8, np.int64), "max_trips"),
             numpy_helper.from_array(np.array(True), "go"),
             numpy_helper.from_array(np.zeros(3, np.float32), "acc0"),
             numpy_helper.from_array(np.array(0, np.int64), "cnt0")]
    nodes = [helper.make_node("Loop", ["max_trips", "go", "acc0", "cnt0"], ["acc", "cnt"], body=body)]
    g = helper.make_graph(nodes, "loop_while",
                          [helper.make_tensor_value_info("x", F, [3]),
                           helper.make_tensor_value_info("limit", F, [])],
                          [helper.make_tensor_value_info("acc", F, [3]),
                           helper.make_tensor_value_info("cnt", TensorProto.INT64, [])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def scan_rnn(rng):
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_t", "W"], ["xw"]),
         helper.make_node("MatMul", ["h_in", "U"], ["hu"]),
         helper.make_node("MatMul", ["y_t", "V"], ["yv"]),
         helper.make_node("Add", ["xw", "hu"], ["s1"]),
         helper.make_node("Add", ["s1", "yv"], ["s2"]),
         helper.make_node("Tanh", ["s2"], ["h_out"]),
         helper.make_node("Add", ["sum_in", "h_out"], ["sum_out"]),
         helper.make_node("Add", ["h_out", "h_out"], ["h2"]),
         helper.make_node("Identity", ["h_out"], ["h_seq"])],
        "rnn",
        [helper.make_tensor_value_info("h_in", F, [2, 4]),
         helper.make_tensor_value_info("sum_in", F, [2, 4]),
         helper.make_tensor_value_info("x_t", F, [2, 3]),
         helper.make_tensor_value_info("y_t", F, [2, 3])],
        [helper.make_tensor_value_info("h_out", F, [2, 4]),
         helper.make_tensor_value_info("sum_out", F, [2, 4]),
         helper.make_tensor_value_info("h_seq", F, [2, 4]),
         helper.make_tensor_value_info("h2", F, [2, 4])])
    inits = [numpy_helper.from_array((rng.standard_normal((3, 4)) * 0.5).astype(np.float32), "W"),
             numpy_helper.from_array((rng.standard_normal((4, 4)) * 0.5).astype(np.float32), "U"),
             numpy_helper.from_array((rng.standard_normal((3, 4)) * 0.5).astype(np.float32), "V"),
             numpy_helper.from_array(np.zeros((2, 4), np.float32), "sum0")]
    nodes = [helper.make_node("Scan", ["h0", "sum0", "xs", "ys"], ["h", "sum", "hs", "h2s"], body=body,
                              num_scan_inputs=2, scan_input_axes=[0, 1], scan_input_directions=[0, 1],
                              scan_output_axes=[0, 1], scan_output_directions=[0, 1])]
    g = helper.make_graph(nodes, "scan_rnn",
                          [helper.make_tensor_value_info("h0", F, [2, 4]),
                           helper.make_tensor_value_info("xs", F, [5, 2, 3]),
                           helper.make_tensor_value_info("ys", F, [2, 5, 3])],
                          [helper.make_tensor_value_info("h", F, [2, 4]),
                           helper.make_tensor_value_info("sum", F, [2, 4]),
                           helper.make_tensor_value_info("hs", F, [5, 2, 4]),
                           helper.make_tensor_value_info("h2s", F, [2, 5, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])


def loop_trips():
    model = loop_while()
    g = model.graph
    loop = g.node[0]
    loop.input[0] = "n"
    body = [a for a in loop.attribute if a.name == "body"][0].g
    body.node.append(helper.make_node("Mul", ["acc_out", "k"], ["acc_scan"]))
    body.output.append(helper.make_tensor_value_info("acc_scan", F, [3]))
    loop.output.append("accs")
    g.output.append(helper.make_tensor_value_info("accs", F, [None, 3]))
    keep = [init for init in g.initializer if init.name != "max_trips"]
    del g.initializer[:]
    g.initializer.extend(keep)
    g.input.insert(1, helper.make_tensor_value_info("n", TensorProto.INT64, []))
    g.name = "loop_trips"
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the models and their inputs")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(16)
    for name, model in (("if_branch", if_branch()), ("if_shapes", if_shapes()), ("loop_counter", loop_counter()),
                        ("loop_while", loop_while()), ("loop_trips", loop_trips()), ("scan_rnn", scan_rnn(rng))):
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(args.out, name + ".onnx"))
    np.save(os.path.join(args.out, "if_true.npy"), np.array(True))
    np.save(os.path.join(args.out, "if_false.npy"), np.array(False))
    np.save(os.path.join(args.out, "loop_n.npy"), np.array(6, np.int64))
    # sums of acc for x = [1, 2, 3]: 6, 15, 28.5, ...: below 20 twice, so 3 iterations run
    np.save(os.path.join(args.out, "while_x.npy"), np.array([1.0, 2.0, 3.0], np.float32))
    np.save(os.path.join(args.out, "limit_small.npy"), np.array(20.0, np.float32))
    np.save(os.path.join(args.out, "limit_big.npy"), np.array(1e9, np.float32))
    for n in (0, 3, 8, 12):
        np.save(os.path.join(args.out, f"trips_{n}.npy"), np.array(n, np.int64))


if __name__ == "__main__":
    main()
