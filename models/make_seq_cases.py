#!/usr/bin/env python3
"""Writes small models with the Sequence ops for an end-to-end check against
ONNX Runtime (tests/e2e, compare.py), and models that Ingot refuses:

  seq_loop.onnx (opset 13), input x [2, 3]: a Loop of 4 iterations (a
    constant trip count) whose body appends x * i + x to a loop-carried
    sequence (SequenceInsert, the way PyTorch exports list.append), started
    from SequenceEmpty; after it ConcatFromSequence along axis 0 ([8, 3]),
    the same with new_axis=1 along axis 1 ([2, 4, 3]), and SequenceLength.

  seq_split.onnx (opset 13), input x [6, 4]: SplitToSequence without split
    (keepdims=0: six rows of [4]), SequenceAt(-1), SequenceLength,
    SequenceErase(1) then ConcatFromSequence (axis 0, [20]); and
    SplitToSequence of Relu(x) along axis 1 in chunks of 3 ([6, 3], [6, 1]),
    SequenceErase with its default position (the last), SequenceAt(0).

  seq_construct.onnx (opset 13), inputs a, b [2, 3]: SequenceConstruct(a,
    a + b), SequenceInsert of 2b at position 0, SequenceAt(1) (a),
    ConcatFromSequence along axis -1 ([2, 9]) and SequenceLength.

  seq_if.onnx (opset 16), inputs x [3] and c (bool scalar, fed at run
    time): an If whose branches build lists of two members, [x, Relu(x)]
    and [-x, x] (joined member by member with Where), read through an
    Identity and stacked (ConcatFromSequence new_axis=1, [2, 3]).
    seq_if_true.npy / seq_if_false.npy.

  seq_output.onnx (opset 13): a graph output of sequence type (refused: a
    bundle's inputs and outputs are tensors).

  seq_while.onnx (opset 13), inputs x [3] and limit: a Loop whose condition
    is known only at run time appends to a sequence (refused: the list's
    length would depend on the run).

  python models/make_seq_cases.py --out build/models
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
OPSET = [helper.make_opsetid("", 13)]


def const(name, value):
    return numpy_helper.from_array(np.array(value), name)


def seq_loop():
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["x", "fi"], ["xi"]),
         helper.make_node("Add", ["xi", "x"], ["t"]),
         helper.make_node("SequenceInsert", ["seq_in", "t"], ["seq_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "append",
        [helper.make_tensor_value_info("i", I64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("seq_in", F, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("seq_out", F, None)])
    nodes = [helper.make_node("SequenceEmpty", [], ["seq0"], dtype=F),
             helper.make_node("Loop", ["trips", "go", "seq0"], ["seq"], body=body),
             helper.make_node("ConcatFromSequence", ["seq"], ["rows"], axis=0),
             helper.make_node("ConcatFromSequence", ["seq"], ["stacked"], axis=1, new_axis=1),
             helper.make_node("SequenceLength", ["seq"], ["count"])]
    g = helper.make_graph(nodes, "seq_loop", [helper.make_tensor_value_info("x", F, [2, 3])],
                          [helper.make_tensor_value_info("rows", F, [8, 3]),
                           helper.make_tensor_value_info("stacked", F, [2, 4, 3]),
                           helper.make_tensor_value_info("count", I64, [])],
                          [const("trips", np.int64(4)), const("go", True)])
    return helper.make_model(g, opset_imports=OPSET)


def seq_split():
    nodes = [helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
             helper.make_node("SequenceAt", ["rows", "minus_one"], ["last"]),
             helper.make_node("SequenceLength", ["rows"], ["count"]),
             helper.make_node("SequenceErase", ["rows", "one"], ["fewer"]),
             helper.make_node("ConcatFromSequence", ["fewer"], ["joined"], axis=0),
             helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("SplitToSequence", ["r", "three"], ["chunks"], axis=1),
             helper.make_node("SequenceErase", ["chunks"], ["front"]),
             helper.make_node("SequenceAt", ["front", "zero"], ["first"])]
    g = helper.make_graph(nodes, "seq_split", [helper.make_tensor_value_info("x", F, [6, 4])],
                          [helper.make_tensor_value_info("last", F, [4]),
                           helper.make_tensor_value_info("count", I64, []),
                           helper.make_tensor_value_info("joined", F, [20]),
                           helper.make_tensor_value_info("first", F, [6, 3])],
                          [const("minus_one", np.int64(-1)), const("one", np.int64(1)),
                           const("three", np.int64(3)), const("zero", np.int32(0))])
    return helper.make_model(g, opset_imports=OPSET)


def seq_construct():
    nodes = [helper.make_node("Add", ["a", "b"], ["ab"]),
             helper.make_node("SequenceConstruct", ["a", "ab"], ["pair"]),
             helper.make_node("Mul", ["b", "two"], ["b2"]),
             helper.make_node("SequenceInsert", ["pair", "b2", "zero"], ["three"]),
             helper.make_node("SequenceAt", ["three", "one"], ["second"]),
             helper.make_node("ConcatFromSequence", ["three"], ["wide"], axis=-1),
             helper.make_node("SequenceLength", ["three"], ["count"])]
    g = helper.make_graph(nodes, "seq_construct",
                          [helper.make_tensor_value_info("a", F, [2, 3]),
                           helper.make_tensor_value_info("b", F, [2, 3])],
                          [helper.make_tensor_value_info("second", F, [2, 3]),
                           helper.make_tensor_value_info("wide", F, [2, 9]),
                           helper.make_tensor_value_info("count", I64, [])],
                          [const("two", np.float32(2.0)), const("zero", np.int64(0)), const("one", np.int64(1))])
    return helper.make_model(g, opset_imports=OPSET)


def seq_if():
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("SequenceConstruct", ["x", "r"], ["s1"])], "then",
        [], [helper.make_tensor_sequence_value_info("s1", F, None)])
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("SequenceConstruct", ["n", "x"], ["s2"])], "else",
        [], [helper.make_tensor_sequence_value_info("s2", F, None)])
    nodes = [helper.make_node("If", ["c"], ["pair"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Identity", ["pair"], ["same"]),
             helper.make_node("ConcatFromSequence", ["same"], ["y"], axis=0, new_axis=1)]
    g = helper.make_graph(nodes, "seq_if",
                          [helper.make_tensor_value_info("x", F, [3]),
                           helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("y", F, [2, 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])


def seq_output():
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("SequenceConstruct", ["x", "r"], ["pair"])]
    g = helper.make_graph(nodes, "seq_output", [helper.make_tensor_value_info("x", F, [2])],
                          [helper.make_tensor_sequence_value_info("pair", F, [2])])
    return helper.make_model(g, opset_imports=OPSET)


def seq_while():
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc_in", "k"], ["acc_k"]),
         helper.make_node("Add", ["acc_k", "x"], ["acc_out"]),
         helper.make_node("SequenceInsert", ["seq_in", "acc_out"], ["seq_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", I64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", F, [3]),
         helper.make_tensor_sequence_value_info("seq_in", F, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", F, [3]),
         helper.make_tensor_sequence_value_info("seq_out", F, None)])
    nodes = [helper.make_node("SequenceEmpty", [], ["seq0"], dtype=F),
             helper.make_node("Loop", ["trips", "go", "acc0", "seq0"], ["acc", "seq"], body=body),
             helper.make_node("ConcatFromSequence", ["seq"], ["rows"], axis=0)]
    g = helper.make_graph(nodes, "seq_while",
                          [helper.make_tensor_value_info("x", F, [3]), helper.make_tensor_value_info("limit", F, [])],
                          [helper.make_tensor_value_info("acc", F, [3]),
                           helper.make_tensor_value_info("rows", F, ["n"])],
                          [const("trips", np.int64(8)), const("go", True), const("k", np.float32(1.5)),
                           numpy_helper.from_array(np.zeros(3, np.float32), "acc0")])
    return helper.make_model(g, opset_imports=OPSET)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the models")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, model in (("seq_loop", seq_loop()), ("seq_split", seq_split()), ("seq_construct", seq_construct()),
                        ("seq_if", seq_if()), ("seq_output", seq_output()), ("seq_while", seq_while())):
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, os.path.join(args.out, name + ".onnx"))
    np.save(os.path.join(args.out, "seq_if_true.npy"), np.array(True))
    np.save(os.path.join(args.out, "seq_if_false.npy"), np.array(False))


if __name__ == "__main__":
    main()
