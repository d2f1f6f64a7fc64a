#!/usr/bin/env python3
"""Shape and data-movement cases the ONNX node tests do not cover, compiled by
Ingot and compared with ONNX Runtime (with the ONNX reference evaluator for
integer Resize, which ONNX Runtime refuses (int32) or computes differently
(uint8)): Resize-10 and Upsample (legacy nearest
and linear), Resize on uint8/int32 data, Pad reflect/edge at the limits,
Slice with extreme bounds and negative steps, GatherND with batch_dims,
Split with num_outputs, Tile/Expand on bool and int8, a Shape -> Gather ->
Unsqueeze -> Concat -> Reshape chain, ScatterElements with a reduction,
DepthToSpace CRD, SpaceToDepth on int64.

  ort_compare.py --ingot BUILD/ingot [--work DIR] [--filter REGEX]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

T = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64, np.int32: TensorProto.INT32,
     np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.bool_: TensorProto.BOOL,
     np.float64: TensorProto.DOUBLE}


def model(nodes, inputs, outputs, inits, opset):
    """inputs: {name: array} (graph inputs); outputs: [name]; inits: {name: array}."""
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(k, T[v.dtype.type], list(v.shape)) for k, v in inputs.items()],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7 if opset < 15 else 8
    # Output types from ONNX shape inference (ONNX Runtime wants them typed).
    inferred = onnx.shape_inference.infer_shapes(m, data_prop=True)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for i, o in enumerate(outputs):
        v = known.get(o)
        if v is not None and v.type.tensor_type.elem_type:
            t = onnx.ValueInfoProto()
            t.name = o
            t.type.tensor_type.elem_type = v.type.tensor_type.elem_type
            m.graph.output[i].CopyFrom(t)
    return m


def cases():
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    i64 = lambda *v: np.array(v, dtype=np.int64)
    f32 = lambda *v: np.array(v, dtype=np.float32)
    img = rng.integers(0, 256, (1, 2, 5, 7)).astype(np.uint8)
    x4 = f(1, 2, 5, 7)
    out = []
    for sc in ([1, 1, 2, 3], [1, 1, 0.5, 0.6], [1, 1, 1.7, 0.8]):
        for mode in ("nearest", "linear"):
            out.append((f"resize10_{mode}_{sc[2]}_{sc[3]}", model(
                [helper.make_node("Resize", ["x", "s"], ["y"], mode=mode)], {"x": x4}, ["y"],
                {"s": f32(*sc)}, 10), {"x": x4}))
    for mode in ("nearest", "linear"):
        out.append((f"upsample7_{mode}", model(
            [helper.make_node("Upsample", ["x"], ["y"], mode=mode, scales=[1.0, 1.0, 2.0, 1.5])], {"x": x4},
            ["y"], {}, 7), {"x": x4}))
        out.append((f"upsample9_{mode}", model(
            [helper.make_node("Upsample", ["x", "s"], ["y"], mode=mode)], {"x": x4}, ["y"],
            {"s": f32(1, 1, 3, 2)}, 9), {"x": x4}))
    for dt, data in (("u8", img), ("i32", img.astype(np.int32))):
        for mode, ctm in (("nearest", "half_pixel"), ("linear", "half_pixel"), ("linear", "align_corners"),
                          ("cubic", "asymmetric")):
            out.append((f"resize_{dt}_{mode}_{ctm}", model(
                [helper.make_node("Resize", ["x", "", "s"], ["y"], mode=mode,
                                  coordinate_transformation_mode=ctm)], {"x": data}, ["y"],
                {"s": f32(1, 1, 1.6, 0.7)}, 13), {"x": data}))
    out.append(("resize_sizes_pytorch_half_pixel_to1", model(
        [helper.make_node("Resize", ["x", "", "", "z"], ["y"], mode="linear",
                          coordinate_transformation_mode="pytorch_half_pixel")], {"x": x4}, ["y"],
        {"z": i64(1, 2, 1, 9)}, 13), {"x": x4}))
    out.append(("resize_tf_half_pixel_for_nn", model(
        [helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest",
                          coordinate_transformation_mode="tf_half_pixel_for_nn")], {"x": x4}, ["y"],
        {"s": f32(1, 1, 2.5, 0.5)}, 13), {"x": x4}))
    x3 = f(3, 4, 5)
    for mode in ("reflect", "edge", "constant"):
        out.append((f"pad_{mode}_limits", model(
            [helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)], {"x": x3}, ["y"],
            {"p": i64(2, 3, 4, 0, 1, 2)}, 13), {"x": x3}))
    out.append(("pad_constant_negative", model(
        [helper.make_node("Pad", ["x", "p", "v"], ["y"], mode="constant")], {"x": x3}, ["y"],
        {"p": i64(-1, 2, -2, 1, -1, 0), "v": f32(1.5).reshape(())}, 13), {"x": x3}))
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    for name, st, en, ax, sp in (("neg_steps", [big, -1], [small, 0], [1, 2], [-1, -2]),
                                 ("clamp", [-100, 2], [100, big], [0, 2], [1, 2]),
                                 ("step3", [1], [big], [-1], [3])):
        out.append((f"slice_{name}", model(
            [helper.make_node("Slice", ["x", "b", "e", "a", "s"], ["y"])], {"x": x3}, ["y"],
            {"b": i64(*st), "e": i64(*en), "a": i64(*ax), "s": i64(*sp)}, 13), {"x": x3}))
    data = f(2, 3, 4)
    idx = np.array([[[1, 2]], [[0, 3]]], dtype=np.int64)
    out.append(("gathernd_batch1", model(
        [helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)], {"x": data, "i": idx}, ["y"], {}, 13),
        {"x": data, "i": idx}))
    x7 = f(7, 3)
    out.append(("split_num_outputs", model(
        [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=0, num_outputs=3)], {"x": x7}, ["a", "b", "c"],
        {}, 18), {"x": x7}))
    bx = rng.integers(0, 2, (2, 1, 3)).astype(np.bool_)
    out.append(("tile_bool", model(
        [helper.make_node("Tile", ["x", "r"], ["y"])], {"x": bx}, ["y"], {"r": i64(2, 3, 1)}, 13), {"x": bx}))
    i8 = rng.integers(-128, 128, (3, 1)).astype(np.int8)
    out.append(("expand_int8", model(
        [helper.make_node("Expand", ["x", "s"], ["y"])], {"x": i8}, ["y"], {"s": i64(2, 1, 4)}, 13), {"x": i8}))
    xr = f(2, 6, 4)
    out.append(("shape_chain_reshape", model([
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax"], ["bu"]),
        helper.make_node("Concat", ["bu", "m1", "four"], ["t"], axis=0),
        helper.make_node("Reshape", ["x", "t"], ["y"]),
        helper.make_node("Shape", ["y"], ["ys"], start=-2),
    ], {"x": xr}, ["y", "ys"], {"zero": np.array(0, np.int64), "ax": i64(0), "m1": i64(-1), "four": i64(4)}, 17),
        {"x": xr}))
    d = f(3, 5)
    ii = np.array([[0, 4, 0], [2, 2, 1]], dtype=np.int64)
    u = f(2, 3)
    for red in ("add", "mul", "max"):
        out.append((f"scatter_elements_{red}", model(
            [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction=red)],
            {"x": d, "i": ii, "u": u}, ["y"], {}, 18), {"x": d, "i": ii, "u": u}))
    xd = f(1, 8, 2, 3)
    out.append(("depth_to_space_crd", model(
        [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], {"x": xd}, ["y"], {}, 13),
        {"x": xd}))
    xs = rng.integers(-5, 5, (1, 2, 4, 6)).astype(np.int64)
    out.append(("space_to_depth_i64", model(
        [helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2)], {"x": xs}, ["y"], {}, 13), {"x": xs}))
    xg = f(4, 3)
    gi = np.array([[-1, 0], [3, -4]], dtype=np.int64)
    out.append(("gather_axis1_neg", model(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=0)], {"x": xg, "i": gi}, ["y"], {}, 13),
        {"x": xg, "i": gi}))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work")
    ap.add_argument("--filter", default="")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="shapeops_ort_")
    os.makedirs(work, exist_ok=True)
    bad = 0
    for name, m, feeds in cases():
        if not re.search(a.filter, name):
            continue
        path = os.path.join(work, name + ".onnx")
        onnx.save(m, path)
        if name.startswith("resize_u8") or name.startswith("resize_i32"):
            # ONNX Runtime refuses int32 Resize and resizes uint8 its own way;
            # the ONNX reference evaluator is the oracle here.
            from onnx.reference import ReferenceEvaluator
            want = ReferenceEvaluator(m).run(None, feeds)
        else:
            try:
                sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                want = sess.run(None, feeds)
            except Exception:  # a dtype ONNX Runtime lacks a kernel for
                from onnx.reference import ReferenceEvaluator
                want = ReferenceEvaluator(m).run(None, feeds)
        bundle = os.path.join(work, name + ".ingot")
        r = subprocess.run([a.ingot, "compile", path, "-o", bundle], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {name}: compile: {r.stderr.strip()}")
            bad += 1
            continue
        args = [a.ingot, "run", bundle, "--output", os.path.join(work, name + ".npz"), "--threads", "2"]
        for k, v in feeds.items():
            p = os.path.join(work, f"{name}_{k}.npy")
            np.save(p, v)
            args += ["--input", f"{k}={p}"]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {name}: run: {r.stderr.strip()}")
            bad += 1
            continue
        got = np.load(os.path.join(work, name + ".npz"))
        for o, w in zip([o.name for o in m.graph.output], want):
            g = got[o]
            if g.shape != w.shape or g.dtype != w.dtype:
                print(f"FAIL {name}: {o}: got {g.dtype}{g.shape}, ORT {w.dtype}{w.shape}")
                bad += 1
                break
            tol = 1e-4 if w.dtype.kind == "f" else 0
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            if np.any(diff > tol * (1 + np.abs(w.astype(np.float64)))):
                at = np.unravel_index(np.argmax(diff), diff.shape)
                print(f"FAIL {name}: {o}: max diff {diff.max()} at {at}: got {g[at]} ORT {w[at]}")
                bad += 1
                break
        else:
            print(f"ok   {name}")
    print(f"{bad} failure(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
