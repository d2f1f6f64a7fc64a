#!/usr/bin/env python3
"""Writes small models of ops that real models use beside the usual CNN and
transformer ones, for an end-to-end check against ONNX Runtime (tests/e2e,
compare.py):

  lrn_alexnet.onnx (opset 13), input x [1, 3, 67, 67]: the first layers of
    an AlexNet-style network with random weights: Conv 11x11 stride 4
    (3 -> 16) -> Relu -> LRN (size 5, alpha 1e-4, beta 0.75, bias 2) ->
    MaxPool 3x3 stride 2 -> Conv 5x5 pad 2 (16 -> 24) -> Relu -> LRN (size 3,
    alpha 1e-3, beta 0.5, bias 1: a window that is cut at both channel
    ends) -> MaxPool 3x3 stride 2 -> Flatten -> Gemm (-> 10).

  split_onehot.onnx (opset 18; also Compress), inputs x [2, 24, 3] and ids [3, 5] (int64):
    Split of x into 12 outputs along axis 1 (more outputs than a fixed
    table of 8 would hold), and OneHot of ids with a constant depth 7 and
    values (-1, 3) on axis 1 (indices from -9 to 8: negative ones count from
    the end; those outside [-7, 7) match no class); Compress of x along
    axis 1 by a constant condition of 20 entries (shorter than the axis:
    the rest is dropped) keeping 9 slices, and of x flattened by a
    condition of 50 entries keeping 17 elements.

  spatial_transformer.onnx (opset 20), inputs x [2, 3, 9, 11] and theta
    [2, 2, 3]: AffineGrid (size [2, 3, 7, 8], align_corners 0) -> GridSample
    of x three ways: linear with border padding, cubic with reflection,
    nearest with zeros and align_corners 1; theta scales past the image so
    that every padding mode is exercised.

  tfidf.onnx (opset 9), input ids [3, 16] (int64): two TfIdfVectorizers over
    one pool of uni-, bi- and trigrams, TFIDF with weights, skips up to 2 and
    permuted columns, and IDF of the 2- and 3-grams alone (a row with no
    match at all).

  empty_outputs.onnx (opset 18), input x [2, 5]: Split into [2, 0], [2, 5]
    and [2, 0]; the empty parts are outputs, one through a Sigmoid (a node
    with nothing to write: no kernel) and one through a Concat with the
    non-empty part.

  fixed_outputs.onnx (opset 18), input x [2, 3]: outputs whose values are
    known when compiling beside a computed one: a Constant node's value, an
    initializer w that a MatMul also reads, x itself, and MatMul(x, w).

  only_empty.onnx (opset 18), input x [2, 5]: the one output is a Slice of x
    past its end ([2, 0]): a bundle with no step at all.

  stft.onnx (opset 17), inputs x [2, 64, 2] (complex), w [16] and r [2, 50, 1]:
    STFT of x with window w, frame_step 8, onesided 0, and STFT of r without a
    window, frame_length 10, frame_step 7, onesided 1.

  nonzero.onnx (opset 18), input x [3, 4, 5]: outputs whose size a run
    computes: NonZero(x) and NonZero(x == 0) (bool), beside
    Transpose(NonZero(m)) of a constant mask m (folded when compiling, so its
    size is fixed). nonzero_x.npy has zeros, NaN and negative values.
    nonzero_refused.onnx: NonZero(x) read by a Transpose (refused: such a
    tensor can only be a graph output for now).

  unique.onnx (opset 11), inputs x float [4, 6], s float [2, 5, 3], k int64
    [6, 4]: Unique with all four outputs as graph outputs: of x flattened,
    sorted and in order of first occurrence; of s along axis 1 (3-D slices,
    sorted) and axis -1 (not sorted); of k along axis 0 (rows, sorted) and
    flattened (not sorted); and Neg of Unique(m) of a constant m along axis 1
    (folded when compiling, so its size is fixed and another node may read
    it). unique_x.npy repeats values (-0 and 0 among them), unique_s.npy and
    unique_k.npy repeat slices. unique_refused.onnx: Unique's Y read by an
    Unsqueeze (refused: a size a run computes, read by an op that does not work
    element by element); unique_bad_axis.onnx: axis 2 of a 2-D input (refused).

  runtime_rows.onnx (opset 13), inputs boxes [1, 20, 4], scores [1, 2, 20] and
    u [12]: tensors whose size a run computes read by elementwise ops (the run
    decides only their first dimension): NonMaxSuppression's rows cast to
    float, scaled per column and shifted (a fused chain), the boxes they pick
    (Gather along axis 1, then Gather of the boxes at those indices), their
    MatMul by a constant with a Softmax and an ArgMax along axis 1, a Concat
    of two of them along axis 1, Unsqueeze, Transpose keeping axis 0,
    ReduceMax along axis 2 and Flatten; Unique's Y through Neg, Relu and a
    Where; runtime_rows_*.npy the inputs.

  compress.onnx (opset 18), inputs x [3, 5, 2] float and the bool
    conditions c_mid [4], c_last [3], c_flat [30], all known only at run time
    (outputs whose size a run computes): Compress(x, c_mid, axis=1) (shorter
    than the axis: the rest count as false), Compress(x, c_last, axis=-1)
    (longer than the axis: ONNX Runtime ignores the entry past it),
    Compress(x, c_flat) (flattened), and Compress(w, c_mid, axis=1) of a
    constant w. compress_{some,none,all}_{mid,last,flat}.npy: conditions with
    some, no and only true entries.

  nms.onnx (opset 11), inputs boxes and boxes_c [2, 40, 4], scores [2, 3, 40],
    iou (a scalar), score_threshold [1], max_per_class [1] (int64): three
    NonMaxSuppression nodes, each a graph output whose row count a run
    computes: `sel` (corner boxes, max_output_boxes_per_class a constant 10,
    iou and score thresholds), `sel_center` (center_point_box 1, boxes_c, at
    most max_per_class (7) a class, the iou threshold), `sel_all` (corner
    boxes, at most max_per_class, no thresholds: IoU > 0 suppresses). The
    nms_*.npy inputs: 8 clusters of strongly overlapping boxes with corners
    in either order, coordinates and sizes on a grid of 1/4 (so IoU is the
    only rounded step, as in ONNX Runtime), scores in steps of 1/16 (equal
    scores, some equal to the score threshold 0.5), and in batch 0 two
    boxes of equal score whose IoU is exactly the threshold 0.5.
    nms_mismatched.onnx: boxes [1, 5, 4] and scores [1, 2, 6] (refused:
    spatial_dimension differs, one error naming the node).

  rnn_activations.onnx (opset 14), input x [5, 2, 4] (time, batch, input):
    recurrent layers with the activations attribute: a bidirectional LSTM
    (forward HardSigmoid, Elu, Softsign with alpha/beta; backward Sigmoid,
    ScaledTanh, ThresholdedRelu), a GRU (Softsign, Softplus) and an RNN
    (LeakyRelu), random weights and biases.

  half_cnn.onnx (opset 17), input x float16 [1, 3, 16, 16]: a float16 model
    as a float16 conversion leaves it: Conv 3x3 (float16 weights) -> Relu ->
    MaxPool -> Conv 1x1 -> Add (residual) -> GlobalAveragePool -> Flatten ->
    Gemm -> Softmax, float16 outputs `prob` and `logits` (bfloat16 is
    covered by the node tests: ONNX Runtime's Python API cannot return it).

  convtranspose_phases.onnx (opset 17), inputs a [1, 6, 5, 7], b [2, 4, 6,
    5], c [1, 3, 9], d [1, 2, 4, 3, 5]: ConvTransposes whose strides skip
    taps (lower_convtranspose.c walks only the taps that divide): 2x2
    stride 2 with bias (an upsampling: one tap per output), 3x3 stride 2
    pads 1 output_padding 1 in 2 groups (a kernel not a multiple of the
    stride), 2x2 stride 3 output_padding 1 (a kernel shorter than the
    stride: some outputs get no tap), 4x4 stride 2 pad 1, stride (2, 1) with
    dilation (1, 2) (one axis each way), 1-D kernel 5 stride 2 pads (2, 1),
    3-D strides (2, 2, 1), 3x3 stride 2 output_padding 1 (no pads: the
    output loops split into phase and position, two taps each).

  rnn_chains.onnx (opset 14), inputs x [6, 2, 19] (time, batch, input), h0
    [2, 2, 20], c0 [2, 2, 20]: recurrent layers wide enough that their dot
    products keep partial sums (lower_rnn.c's rnn_dot: 19 and 20 are two
    blocks of 8 and a tail): a bidirectional LSTM with initial_h, initial_c,
    peepholes and sequence_lens [6, 4]; a reverse GRU without initial_h
    (linear_before_reset 0: its first step has no R·hprev loop); a GRU with
    linear_before_reset 1 and initial_h; an RNN.

  python models/make_op_cases.py --out build/models
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def lrn_alexnet(rng):
    def w(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [w("w1", (16, 3, 11, 11), 0.05), w("b1", (16,), 0.1), w("w2", (24, 16, 5, 5), 0.05),
             w("b2", (24,), 0.1), w("w3", (10, 24 * 3 * 3), 0.05), w("b3", (10,), 0.1)]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], strides=[4, 4]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("LRN", ["r1"], ["n1"], size=5, alpha=1e-4, beta=0.75, bias=2.0),
        helper.make_node("MaxPool", ["n1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[2, 2, 2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("LRN", ["r2"], ["n2"], size=3, alpha=1e-3, beta=0.5, bias=1.0),
        helper.make_node("MaxPool", ["n2"], ["p2"], kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("Flatten", ["p2"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
    ]
    g = helper.make_graph(nodes, "lrn_alexnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 67, 67])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def split_onehot():
    outs = [f"s{i}" for i in range(12)]
    nodes = [
        helper.make_node("Split", ["x"], outs, axis=1, num_outputs=12),
        helper.make_node("OneHot", ["ids", "depth", "values"], ["hot"], axis=1),
        helper.make_node("Compress", ["x", "keep"], ["picked"], axis=1),
        helper.make_node("Compress", ["x", "keep_flat"], ["picked_flat"]),
    ]
    keep = np.zeros(20, dtype=bool)
    keep[[0, 1, 2, 5, 8, 11, 12, 18, 19]] = True
    keep_flat = np.zeros(50, dtype=bool)
    keep_flat[[0, 3, 4, 7, 9, 10, 13, 21, 22, 23, 30, 31, 38, 40, 44, 47, 49]] = True
    inits = [numpy_helper.from_array(np.array(7, dtype=np.int64), "depth"),
             numpy_helper.from_array(np.array([-1.0, 3.0], dtype=np.float32), "values"),
             numpy_helper.from_array(keep, "keep"), numpy_helper.from_array(keep_flat, "keep_flat")]
    g = helper.make_graph(nodes, "split_onehot",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 24, 3]),
                           helper.make_tensor_value_info("ids", TensorProto.INT64, [3, 5])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, 2, 3]) for o in outs] +
                          [helper.make_tensor_value_info("hot", TensorProto.FLOAT, [3, 7, 5]),
                           helper.make_tensor_value_info("picked", TensorProto.FLOAT, [2, 9, 3]),
                           helper.make_tensor_value_info("picked_flat", TensorProto.FLOAT, [17])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def spatial_transformer():
    nodes = [
        helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=0),
        helper.make_node("GridSample", ["x", "grid"], ["y_linear"], mode="linear", padding_mode="border"),
        helper.make_node("GridSample", ["x", "grid"], ["y_cubic"], mode="cubic", padding_mode="reflection"),
        helper.make_node("GridSample", ["x", "grid"], ["y_nearest"], mode="nearest", padding_mode="zeros",
                         align_corners=1),
    ]
    inits = [numpy_helper.from_array(np.array([2, 3, 7, 8], dtype=np.int64), "size")]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3, 7, 8]) for n in ("y_linear", "y_cubic", "y_nearest")]
    g = helper.make_graph(nodes, "spatial_transformer",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 9, 11]),
                           helper.make_tensor_value_info("theta", TensorProto.FLOAT, [2, 2, 3])], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def empty_outputs():
    nodes = [
        helper.make_node("Split", ["x", "sizes"], ["a", "b", "c"], axis=1),
        helper.make_node("Relu", ["b"], ["rb"]),
        helper.make_node("Sigmoid", ["a"], ["sa"]),
        helper.make_node("Concat", ["c", "b"], ["cb"], axis=1),
    ]
    inits = [numpy_helper.from_array(np.array([0, 5, 0], dtype=np.int64), "sizes")]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
            for n, shape in (("a", [2, 0]), ("rb", [2, 5]), ("sa", [2, 0]), ("cb", [2, 5]))]
    g = helper.make_graph(nodes, "empty_outputs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])], outs,
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def fixed_outputs():
    c = np.arange(6, dtype=np.float32).reshape(3, 2) - 2.5
    w = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]], dtype=np.float32)
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(c)),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    outs = [helper.make_tensor_value_info("c", TensorProto.FLOAT, [3, 2]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 2]),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])]
    g = helper.make_graph(nodes, "fixed_outputs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])], outs,
                          [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def nonzero():
    m = np.array([[0, 1, 0], [2, 0, 3]], dtype=np.int32)
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]),
             helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.float32))),
             helper.make_node("Equal", ["x", "zero"], ["eq"]), helper.make_node("NonZero", ["eq"], ["nz_eq"]),
             helper.make_node("NonZero", ["m"], ["nz_m"]), helper.make_node("Transpose", ["nz_m"], ["nz_m_t"])]
    outs = [helper.make_tensor_value_info("nz", TensorProto.INT64, [3, None]),
            helper.make_tensor_value_info("nz_eq", TensorProto.INT64, [3, None]),
            helper.make_tensor_value_info("nz_m_t", TensorProto.INT64, [None, 2])]
    g = helper.make_graph(nodes, "nonzero", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])], outs,
                          [numpy_helper.from_array(m, "m")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def nonzero_refused():
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Transpose", ["nz"], ["t"])]
    g = helper.make_graph(nodes, "nonzero_refused", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("t", TensorProto.INT64, [None, 2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def unique():
    outs, nodes = [], []

    def add(tag, x, dtype, y_rank, **attrs):
        names = [f"{tag}_{k}" for k in ("y", "indices", "inverse", "counts")]
        nodes.append(helper.make_node("Unique", [x], names, name=tag, **attrs))
        outs.append(helper.make_tensor_value_info(names[0], dtype, [None] * y_rank))
        outs.extend(helper.make_tensor_value_info(n, TensorProto.INT64, [None]) for n in names[1:])

    add("flat_sorted", "x", TensorProto.FLOAT, 1)
    add("flat_first", "x", TensorProto.FLOAT, 1, sorted=0)
    add("slices_sorted", "s", TensorProto.FLOAT, 3, axis=1)
    add("slices_first", "s", TensorProto.FLOAT, 3, axis=-1, sorted=0)
    add("rows_sorted", "k", TensorProto.INT64, 2, axis=0)
    add("k_first", "k", TensorProto.INT64, 1, sorted=0)
    m = np.array([[3, 1, 3, 2, 1], [0, 5, 0, 4, 5]], dtype=np.float32)
    nodes += [helper.make_node("Unique", ["m"], ["m_y"], axis=1), helper.make_node("Neg", ["m_y"], ["m_neg"])]
    outs.append(helper.make_tensor_value_info("m_neg", TensorProto.FLOAT, [2, None]))
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6]),
           helper.make_tensor_value_info("s", TensorProto.FLOAT, [2, 5, 3]),
           helper.make_tensor_value_info("k", TensorProto.INT64, [6, 4])]
    g = helper.make_graph(nodes, "unique", ins, outs, [numpy_helper.from_array(m, "m")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])


def unique_refused(read_y):
    nodes = [helper.make_node("Unique", ["x"], ["y"], name="u", **({} if read_y else {"axis": 2}))]
    out, shape = "y", [None]
    if read_y:  # a reader that does not work element by element
        nodes.append(helper.make_node("Unsqueeze", ["y"], ["z"], name="unsq", axes=[0]))
        out, shape = "z", [1, None]
    g = helper.make_graph(nodes, "unique_refused", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])


def runtime_rows():
    f = TensorProto.FLOAT
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_boxes", "iou", "score_min"], ["sel"]),
             helper.make_node("Cast", ["sel"], ["sel_f"], to=f),
             helper.make_node("Mul", ["sel_f", "scale"], ["scaled"]),
             helper.make_node("Add", ["scaled", "shift"], ["sel_out"]),
             helper.make_node("Unique", ["u"], ["uy"]),
             helper.make_node("Neg", ["uy"], ["u_neg"]),
             helper.make_node("Relu", ["u_neg"], ["u_relu"]),
             helper.make_node("Where", ["pick", "u_relu", "uy"], ["u_where"]),
             helper.make_node("Gather", ["sel", "two"], ["box_index"], axis=1),
             helper.make_node("Reshape", ["boxes", "flat_shape"], ["boxes_flat"]),
             helper.make_node("Gather", ["boxes_flat", "box_index"], ["picked"], axis=0),
             helper.make_node("MatMul", ["sel_f", "mix"], ["mixed"]),
             helper.make_node("Softmax", ["mixed"], ["mixed_softmax"], axis=1),
             helper.make_node("ArgMax", ["mixed"], ["mixed_argmax"], axis=1, keepdims=0),
             helper.make_node("Concat", ["sel_f", "scaled"], ["both"], axis=1),
             helper.make_node("Unsqueeze", ["both", "axes2"], ["both3"]),
             helper.make_node("Transpose", ["both3"], ["both_t"], perm=[0, 2, 1]),
             helper.make_node("ReduceMax", ["both_t"], ["row_max"], axes=[2], keepdims=0),
             helper.make_node("Flatten", ["row_max"], ["row_max_flat"], axis=1)]
    inits = [numpy_helper.from_array(np.array([5], np.int64), "max_boxes"),
             numpy_helper.from_array(np.array([0.5], np.float32), "iou"),
             numpy_helper.from_array(np.array([0.1], np.float32), "score_min"),
             numpy_helper.from_array(np.array([1, 10, 100], np.float32), "scale"),
             numpy_helper.from_array(np.array(0.5, np.float32), "shift"),
             numpy_helper.from_array(np.array(True), "pick"),
             numpy_helper.from_array(np.array(2, np.int64), "two"),
             numpy_helper.from_array(np.array([20, 4], np.int64), "flat_shape"),
             numpy_helper.from_array(np.array([2], np.int64), "axes2"),
             numpy_helper.from_array(np.array([[0.5, -1.0], [0.25, 0.0], [-0.125, 2.0]], np.float32), "mix")]
    ins = [helper.make_tensor_value_info("boxes", f, [1, 20, 4]), helper.make_tensor_value_info("scores", f, [1, 2, 20]),
           helper.make_tensor_value_info("u", f, [12])]
    outs = [helper.make_tensor_value_info("sel_out", f, [None, 3]), helper.make_tensor_value_info("u_where", f, [None]),
            helper.make_tensor_value_info("u_relu", f, [None]), helper.make_tensor_value_info("picked", f, [None, 4]),
            helper.make_tensor_value_info("mixed_softmax", f, [None, 2]),
            helper.make_tensor_value_info("mixed_argmax", TensorProto.INT64, [None]),
            helper.make_tensor_value_info("both_t", f, [None, 1, 6]),
            helper.make_tensor_value_info("row_max_flat", f, [None, 1])]
    return helper.make_model(helper.make_graph(nodes, "runtime_rows", ins, outs, inits),
                             opset_imports=[helper.make_opsetid("", 13)])


def compress():
    w = np.arange(30, dtype=np.float32).reshape(3, 5, 2) - 7.5
    nodes = [helper.make_node("Compress", ["x", "c_mid"], ["mid"], axis=1),
             helper.make_node("Compress", ["x", "c_last"], ["last"], axis=-1),
             helper.make_node("Compress", ["x", "c_flat"], ["flat"]),
             helper.make_node("Compress", ["w", "c_mid"], ["mid_w"], axis=1)]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5, 2]),
           helper.make_tensor_value_info("c_mid", TensorProto.BOOL, [4]),
           helper.make_tensor_value_info("c_last", TensorProto.BOOL, [3]),
           helper.make_tensor_value_info("c_flat", TensorProto.BOOL, [30])]
    outs = [helper.make_tensor_value_info("mid", TensorProto.FLOAT, [3, None, 2]),
            helper.make_tensor_value_info("last", TensorProto.FLOAT, [3, 5, None]),
            helper.make_tensor_value_info("flat", TensorProto.FLOAT, [None]),
            helper.make_tensor_value_info("mid_w", TensorProto.FLOAT, [3, None, 2])]
    g = helper.make_graph(nodes, "compress", ins, outs, [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def nms():
    def info(name, t, shape):
        return helper.make_tensor_value_info(name, t, shape)
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max10", "iou", "score_threshold"], ["sel"]),
             helper.make_node("NonMaxSuppression", ["boxes_c", "scores", "max_per_class", "iou"], ["sel_center"],
                              center_point_box=1),
             helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_per_class"], ["sel_all"])]
    ins = [info("boxes", TensorProto.FLOAT, [2, 40, 4]), info("boxes_c", TensorProto.FLOAT, [2, 40, 4]),
           info("scores", TensorProto.FLOAT, [2, 3, 40]), info("iou", TensorProto.FLOAT, []),
           info("score_threshold", TensorProto.FLOAT, [1]), info("max_per_class", TensorProto.INT64, [1])]
    outs = [info(name, TensorProto.INT64, [None, 3]) for name in ("sel", "sel_center", "sel_all")]
    g = helper.make_graph(nodes, "nms", ins, outs, [numpy_helper.from_array(np.array([10], dtype=np.int64), "max10")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])


def nms_mismatched():
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"], name="nms")
    g = helper.make_graph([node], "nms_mismatched", [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 5, 4]),
                                                     helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, 6])],
                          [helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])


def nms_inputs():
    """The inputs of nms.onnx (see the module comment), by input name."""
    rng = np.random.default_rng(11)
    centers = rng.integers(0, 40, (8, 2)) / 2.0
    pick = rng.integers(0, 8, (2, 40))
    yx = centers[pick] + rng.integers(-4, 5, (2, 40, 2)) / 4.0
    hw = rng.integers(8, 25, (2, 40, 2)) / 4.0
    y1, x1, y2, x2 = yx[..., 0], yx[..., 1], yx[..., 0] + hw[..., 0], yx[..., 1] + hw[..., 1]
    flip = rng.random((2, 40)) < 0.3  # the other diagonal's corners, or the same ones swapped
    boxes = np.stack([np.where(flip, y2, y1), x1, np.where(flip, y1, y2), x2], axis=-1)
    swap = rng.random((2, 40)) < 0.2
    boxes[swap] = boxes[swap][:, [2, 3, 0, 1]]
    boxes_c = np.concatenate([yx[..., ::-1] + hw[..., ::-1] / 2, hw[..., ::-1]], axis=-1)
    scores = rng.integers(0, 16, (2, 3, 40)) / 16.0
    # batch 0, boxes 38 and 39: IoU exactly 0.5 (areas 2 and 1, one in the other), equal top scores
    boxes[0, 38], boxes[0, 39] = [100, 100, 102, 101], [100, 100, 101, 101]
    boxes_c[0, 38], boxes_c[0, 39] = [100.5, 101, 1, 2], [100.5, 100.5, 1, 1]
    scores[0, :, 38] = scores[0, :, 39] = 0.9375
    return {"boxes": boxes.astype(np.float32), "boxes_c": boxes_c.astype(np.float32),
            "scores": scores.astype(np.float32), "iou": np.array(0.5, dtype=np.float32),
            "score_threshold": np.array([0.5], dtype=np.float32),
            "max_per_class": np.array([7], dtype=np.int64)}


def only_empty():
    inits = [numpy_helper.from_array(np.array([v], dtype=np.int64), n) for n, v in (("s", 7), ("e", 9), ("a", 1))]
    g = helper.make_graph([helper.make_node("Slice", ["x", "s", "e", "a"], ["y"])], "only_empty",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 0])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def stft():
    inits = [numpy_helper.from_array(np.array(v, dtype=np.int64), n) for n, v in (("s8", 8), ("s7", 7), ("l10", 10))]
    nodes = [helper.make_node("STFT", ["x", "s8", "w"], ["spec"], onesided=0),
             helper.make_node("STFT", ["r", "s7", "", "l10"], ["spec_r"], onesided=1)]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64, 2]),
           helper.make_tensor_value_info("w", TensorProto.FLOAT, [16]),
           helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 50, 1])]
    outs = [helper.make_tensor_value_info("spec", TensorProto.FLOAT, [2, 7, 16, 2]),
            helper.make_tensor_value_info("spec_r", TensorProto.FLOAT, [2, 6, 6, 2])]
    return helper.make_model(helper.make_graph(nodes, "stft", ins, outs, inits),
                             opset_imports=[helper.make_opsetid("", 17)])


def rnn_activations(rng):
    hidden, inp = 3, 4

    def w(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.5).astype(np.float32), name)

    inits = [w("lw", (2, 4 * hidden, inp)), w("lr", (2, 4 * hidden, hidden)), w("lb", (2, 8 * hidden)),
             w("gw", (1, 3 * hidden, inp)), w("gr", (1, 3 * hidden, hidden)), w("gb", (1, 6 * hidden)),
             w("rw", (1, hidden, inp)), w("rr", (1, hidden, hidden)), w("rb", (1, 2 * hidden))]
    nodes = [
        helper.make_node("LSTM", ["x", "lw", "lr", "lb"], ["ly", "lh", "lc"], hidden_size=hidden,
                         direction="bidirectional",
                         activations=["HardSigmoid", "Elu", "Softsign", "Sigmoid", "ScaledTanh", "ThresholdedRelu"],
                         activation_alpha=[0.3, 0.8, 1.2, 0.1], activation_beta=[0.4, 0.9]),
        helper.make_node("GRU", ["x", "gw", "gr", "gb"], ["gy", "gh"], hidden_size=hidden,
                         activations=["Softsign", "Softplus"]),
        helper.make_node("RNN", ["x", "rw", "rr", "rb"], ["ry", "rh"], hidden_size=hidden,
                         activations=["LeakyRelu"], activation_alpha=[0.2]),
    ]
    shapes = {"ly": [5, 2, 2, hidden], "lh": [2, 2, hidden], "lc": [2, 2, hidden], "gy": [5, 1, 2, hidden],
              "gh": [1, 2, hidden], "ry": [5, 1, 2, hidden], "rh": [1, 2, hidden]}
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in shapes.items()]
    g = helper.make_graph(nodes, "rnn_activations", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 2, inp])],
                          outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])


def rnn_chains(rng):
    hidden, inp = 20, 19

    def w(name, shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [w("lw", (2, 4 * hidden, inp)), w("lr", (2, 4 * hidden, hidden)), w("lb", (2, 8 * hidden)),
             w("lp", (2, 3 * hidden)), numpy_helper.from_array(np.array([6, 4], np.int32), "lens"),
             w("gw", (1, 3 * hidden, inp)), w("gr", (1, 3 * hidden, hidden)), w("gb", (1, 6 * hidden)),
             w("hw", (1, 3 * hidden, inp)), w("hr", (1, 3 * hidden, hidden)), w("hb", (1, 6 * hidden)),
             w("rw", (1, hidden, inp)), w("rr", (1, hidden, hidden)), w("rb", (1, 2 * hidden))]
    nodes = [
        helper.make_node("LSTM", ["x", "lw", "lr", "lb", "lens", "h0", "c0", "lp"], ["ly", "lh", "lc"],
                         hidden_size=hidden, direction="bidirectional"),
        helper.make_node("GRU", ["x", "gw", "gr", "gb"], ["gy", "gh"], hidden_size=hidden, direction="reverse"),
        helper.make_node("Slice", ["h0", "one_start", "one_end"], ["h0f"]),
        helper.make_node("GRU", ["x", "hw", "hr", "hb", "", "h0f"], ["hy", "hh"], hidden_size=hidden,
                         linear_before_reset=1),
        helper.make_node("RNN", ["x", "rw", "rr", "rb"], ["ry", "rh"], hidden_size=hidden),
    ]
    inits += [numpy_helper.from_array(np.array([0], np.int64), "one_start"),
              numpy_helper.from_array(np.array([1], np.int64), "one_end")]
    shapes = {"ly": [6, 2, 2, hidden], "lh": [2, 2, hidden], "lc": [2, 2, hidden], "gy": [6, 1, 2, hidden],
              "gh": [1, 2, hidden], "hy": [6, 1, 2, hidden], "hh": [1, 2, hidden], "ry": [6, 1, 2, hidden],
              "rh": [1, 2, hidden]}
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in shapes.items()]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 2, inp]),
           helper.make_tensor_value_info("h0", TensorProto.FLOAT, [2, 2, hidden]),
           helper.make_tensor_value_info("c0", TensorProto.FLOAT, [2, 2, hidden])]
    g = helper.make_graph(nodes, "rnn_chains", ins, outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])


def half_cnn(rng):
    def w(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float16), name)

    inits = [w("w1", (8, 3, 3, 3), 0.3), w("b1", (8,), 0.1), w("w2", (8, 8, 1, 1), 0.3), w("b2", (8,), 0.1),
             w("w3", (5, 8), 0.5), w("b3", (5,), 0.1)]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"]),
        helper.make_node("Add", ["c2", "p1"], ["a2"]),
        helper.make_node("GlobalAveragePool", ["a2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], axis=1),
    ]
    g = helper.make_graph(nodes, "half_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("prob", TensorProto.FLOAT16, [1, 5]),
                           helper.make_tensor_value_info("logits", TensorProto.FLOAT16, [1, 5])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def convtranspose_phases(rng):
    def w(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.5).astype(np.float32), name)

    inits = [w("w1", (6, 5, 2, 2)), w("b1", (5,)), w("w2", (4, 3, 3, 3)), w("w3", (6, 2, 2, 2)),
             w("w4", (6, 3, 4, 4)), w("b4", (3,)), w("w5", (6, 2, 3, 2)), w("w6", (3, 4, 5)),
             w("w7", (2, 3, 3, 2, 2)), w("w8", (6, 2, 3, 3))]
    ct = helper.make_node
    nodes = [ct("ConvTranspose", ["a", "w1", "b1"], ["y1"], kernel_shape=[2, 2], strides=[2, 2]),
             ct("ConvTranspose", ["b", "w2"], ["y2"], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1],
                group=2),
             ct("ConvTranspose", ["a", "w3"], ["y3"], strides=[3, 3], output_padding=[1, 1]),
             ct("ConvTranspose", ["a", "w4", "b4"], ["y4"], strides=[2, 2], pads=[1, 1, 1, 1]),
             ct("ConvTranspose", ["a", "w5"], ["y5"], strides=[2, 1], dilations=[1, 2], pads=[0, 1, 1, 0]),
             ct("ConvTranspose", ["c", "w6"], ["y6"], strides=[2], pads=[2, 1]),
             ct("ConvTranspose", ["d", "w7"], ["y7"], strides=[2, 2, 1], pads=[1, 0, 0, 0, 1, 1]),
             ct("ConvTranspose", ["a", "w8"], ["y8"], strides=[2, 2], output_padding=[1, 1])]
    f = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info(n, f, s) for n, s in
           (("a", [1, 6, 5, 7]), ("b", [2, 4, 6, 5]), ("c", [1, 3, 9]), ("d", [1, 2, 4, 3, 5]))]
    shapes = ([1, 5, 10, 14], [2, 6, 12, 10], [1, 2, 15, 21], [1, 3, 10, 14], [1, 2, 10, 8], [1, 4, 18],
              [1, 3, 8, 5, 5], [1, 2, 12, 16])
    outs = [helper.make_tensor_value_info(f"y{i}", f, sh) for i, sh in enumerate(shapes, 1)]
    g = helper.make_graph(nodes, "convtranspose_phases", ins, outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def tfidf():
    # ids [3, 16] in 0..9: unigrams 2, 3, 7; bigrams (2, 3), (7, 7), (3, 2); trigram (1, 2, 3);
    # two vectorizers over the same ids: TFIDF with weights, up to 2 skips, 1- to 3-grams,
    # columns permuted (one unused); IDF of 2- and 3-grams only, no skips.
    pool = [2, 3, 7, 2, 3, 7, 7, 3, 2, 1, 2, 3]
    counts = [0, 3, 9]
    a = helper.make_node("TfIdfVectorizer", ["ids"], ["tfidf"], mode="TFIDF", min_gram_length=1,
                         max_gram_length=3, max_skip_count=2, ngram_counts=counts,
                         ngram_indexes=[6, 0, 2, 1, 4, 3, 5], pool_int64s=pool,
                         weights=[0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 4.0])
    b = helper.make_node("TfIdfVectorizer", ["ids"], ["idf"], mode="IDF", min_gram_length=2,
                         max_gram_length=3, max_skip_count=0, ngram_counts=counts,
                         ngram_indexes=[0, 1, 2, 3, 4, 5, 6], pool_int64s=pool,
                         weights=[1.0, 1.0, 1.0, 2.5, 0.5, 1.5, 7.0])
    g = helper.make_graph([a, b], "tfidf", [helper.make_tensor_value_info("ids", TensorProto.INT64, [3, 16])],
                          [helper.make_tensor_value_info("tfidf", TensorProto.FLOAT, [3, 7]),
                           helper.make_tensor_value_info("idf", TensorProto.FLOAT, [3, 7])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the models and their inputs")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(15)
    for name, model in (("lrn_alexnet", lrn_alexnet(rng)), ("split_onehot", split_onehot()),
                        ("spatial_transformer", spatial_transformer()), ("empty_outputs", empty_outputs()),
                        ("rnn_activations", rnn_activations(rng)), ("half_cnn", half_cnn(rng)),
                        ("tfidf", tfidf()), ("fixed_outputs", fixed_outputs()), ("only_empty", only_empty()),
                        ("stft", stft()), ("nonzero", nonzero()), ("nonzero_refused", nonzero_refused()),
                        ("unique", unique()), ("unique_refused", unique_refused(True)),
                        ("unique_bad_axis", unique_refused(False)), ("compress", compress()), ("runtime_rows", runtime_rows()),
                        ("nms", nms()), ("nms_mismatched", nms_mismatched()),
                        ("convtranspose_phases", convtranspose_phases(rng)), ("rnn_chains", rnn_chains(rng))):
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(args.out, name + ".onnx"))
    # ids: every index from -9 to 8 at least once (15 of them), in a fixed order
    ids = np.array([-9, -8, -7, -6, -1, 0, 1, 3, 5, 6, 7, 8, 2, -3, 4], dtype=np.int64).reshape(3, 5)
    np.save(os.path.join(args.out, "split_onehot_ids.npy"), ids)
    # token ids with the pool's n-grams at skips 0, 1 and 2 (and 8, 9 that match nothing)
    tokens = np.array([[2, 3, 2, 3, 7, 7, 1, 2, 3, 9, 2, 8, 3, 7, 0, 7],
                       [1, 2, 3, 2, 1, 9, 2, 3, 3, 2, 7, 9, 7, 9, 9, 7],
                       [8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8]], dtype=np.int64)
    np.save(os.path.join(args.out, "tfidf_ids.npy"), tokens)
    # theta: a rotation with a scale past the image (1.4), and a shear with a shift
    theta = np.array([[[1.2, -0.7, 0.1], [0.7, 1.2, -0.2]], [[1.4, 0.3, -0.45], [0.0, -1.3, 0.33]]], dtype=np.float32)
    np.save(os.path.join(args.out, "spatial_transformer_theta.npy"), theta)
    # x: a third zeros, NaN (nonzero for NonZero, not equal to 0), the rest normal
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x[rng.random((3, 4, 5)) < 0.33] = 0.0
    x[0, 1, 2] = x[2, 3, 4] = np.nan
    np.save(os.path.join(args.out, "nonzero_x.npy"), x)
    # Unique's inputs: few distinct values (-0 and 0 both there), repeated slices
    x = rng.integers(-2, 3, (4, 6)).astype(np.float32)
    x[0, 1], x[2, 3] = -0.0, 0.0
    np.save(os.path.join(args.out, "unique_x.npy"), x)
    s = rng.integers(0, 2, (2, 5, 3)).astype(np.float32)
    s[:, 3] = s[:, 0]
    s[:, :, 2] = s[:, :, 0]
    np.save(os.path.join(args.out, "unique_s.npy"), s)
    k = rng.integers(-3, 3, (6, 4)).astype(np.int64)
    k[4] = k[1]
    k[5] = k[1]
    np.save(os.path.join(args.out, "unique_k.npy"), k)
    # Compress's run-time conditions: some entries true (c_last's third, past
    # the axis, too), none, all
    flat = np.zeros(30, dtype=bool)
    flat[[0, 3, 4, 9, 10, 17, 22, 23, 29]] = True
    some = {"mid": np.array([1, 0, 1, 1], bool), "last": np.array([0, 1, 1], bool), "flat": flat}
    for kind, conds in (("some", some), ("none", {k: np.zeros_like(v) for k, v in some.items()}),
                        ("all", {k: np.ones_like(v) for k, v in some.items()})):
        for k, v in conds.items():
            np.save(os.path.join(args.out, f"compress_{kind}_{k}.npy"), v)
    boxes = rng.random((1, 20, 4)).astype(np.float32)
    boxes[..., 2:] = boxes[..., :2] + 0.3 * rng.random((1, 20, 2)).astype(np.float32)
    np.save(os.path.join(args.out, "runtime_rows_boxes.npy"), boxes)
    np.save(os.path.join(args.out, "runtime_rows_scores.npy"), rng.random((1, 2, 20)).astype(np.float32))
    np.save(os.path.join(args.out, "runtime_rows_u.npy"), rng.integers(-3, 4, 12).astype(np.float32))
    for name, value in nms_inputs().items():
        np.save(os.path.join(args.out, "nms_" + name + ".npy"), value)


if __name__ == "__main__":
    main()
