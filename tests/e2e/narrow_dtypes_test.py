#!/usr/bin/env python3
"""The float8s (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz) and int4 / uint4 through
Cast, QuantizeLinear and DequantizeLinear, end to end (`ingot compile` and
`ingot run`), bit for bit.

  narrow_dtypes_test.py --ingot BUILD/ingot --work DIR [--target llvm|c]

Model 1 (opset 21) takes x float32 [N]: every value of every float8 format,
the midpoints between neighbours (ties: round half to even), a float32 step
either side of them, values past the largest finite ones, +-0, float32
subnormals, the infinities, NaN and random normals at several scales. Its
outputs:
  cast_<f8>_sat<s>       Cast to the float8 with saturate s (1, 0): bits
  back_<f8>_sat<s>       the same, Cast back to float32 (decode in a kernel)
  q_<f8>, dq_<f8>        QuantizeLinear (scale 2^-3, saturate 1; e4m3fn also
                         saturate 0) and DequantizeLinear back
  q_i4 / q_u4, dq_i4 / dq_u4   per axis (x seen as [N/4, 4], axis 1) with
                         zero points, and blocked (block 3 along axis 0)
  cast_i4 / cast_u4      Cast to int4 / uint4 (wraps), back_i4 / back_u4
  dq_w4                  DequantizeLinear of an int4 weight of odd length
                         (packed in the file: the importer unpacks it) per axis
  dq_raw_<t>             DequantizeLinear of int4, uint4 and e5m2 weights
                         stored in raw_data (int4 packed)
  fold_back_<f8>         Cast of a float32 weight (every 7th x) to the
                         float8 (saturate 0; folded at compile time) and back
The float32 outputs are compared with ONNX Runtime (CPU), exactly, NaN
equal to NaN; every output also with the ONNX reference evaluator
(onnx.reference, ml_dtypes), bit for bit for the float8 and 4-bit ones.

The same bundle through the Python package (ingot.Session) must give the
same arrays, the float8 outputs as uint8 bits and int4 / uint4 as int8 /
uint8. A QuantizeLinear with a float8 zero point of 1.0 must be refused.

Model 2 takes the float8s and int4 / uint4 as graph inputs (.npy: the
float8 bits as uint8, int4 as int8, uint4 as uint8) and casts each to
float32: every one of the 256 codes of every format, against the reference;
and copies each through Reshape, Transpose, Flatten and Identity.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

F8 = {"e4m3fn": T.FLOAT8E4M3FN, "e4m3fnuz": T.FLOAT8E4M3FNUZ, "e5m2": T.FLOAT8E5M2, "e5m2fnuz": T.FLOAT8E5M2FNUZ}


def np_type(t):
    return helper.tensor_dtype_to_np_dtype(t)


def as_npy(a):
    name = a.dtype.name
    if name.startswith("float8_"):
        return a.view(np.uint8)
    if name in ("int4", "uint4"):
        return a.astype(np.int8 if name == "int4" else np.uint8)
    return a


def inputs_x():
    vals = [np.float32(v) for v in (0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, 3e38, -3e38)]
    for t in F8.values():
        codes = np.arange(256, dtype=np.uint8).view(np_type(t)).astype(np.float32)
        fin = np.unique(codes[np.isfinite(codes)])
        mids = ((fin[:-1].astype(np.float64) + fin[1:]) / 2).astype(np.float32)
        vals += list(codes) + list(mids) + list(np.nextafter(mids, np.float32(np.inf)))
        vals += list(np.nextafter(mids, np.float32(-np.inf)))
        top = fin.max()
        vals += [top * 1.01, top * 1.04, top * 1.07, top * 1.1, top * 2, -top * 1.07]
    rng = np.random.default_rng(8)
    for s in (1e-3, 1.0, 30.0, 1e3):
        vals += list((rng.standard_normal(64) * s).astype(np.float32))
    x = np.array(vals, dtype=np.float32)
    x[np.isnan(x)] = np.float32(np.nan)  # positive: a NaN's sign is not kept (README)
    pad = (-len(x)) % 12
    return np.concatenate([x, np.zeros(pad, np.float32)])


def inputs_xi():
    """For the 4-bit ops: integers and quarters past both ends of the ranges,
    NaN, random normals; finite and small enough for int32 (past it, the
    reference's rint().astype(int32) is undefined)."""
    rng = np.random.default_rng(5)
    v = list(np.arange(-80, 80, 0.25)) + [np.nan] * 4 + list(rng.standard_normal(300) * 20)
    x = np.array(v, dtype=np.float32)
    return np.concatenate([x, np.zeros((-len(x)) % 12, np.float32)])


def inputs_xc():
    """For Cast to int4 / uint4: integers -20..20 (wrapped past the range, as
    the node tests expect) and fractions inside it (truncated)."""
    return np.concatenate([np.arange(-20, 21), np.arange(-7.75, 7.0, 0.25)]).astype(np.float32)


def model1(n, ni, nc):
    nodes, outs, inits = [], [], []
    vi = helper.make_tensor_value_info

    def out(name, t, shape):
        outs.append(vi(name, t, shape))

    def init(name, arr, t=None):
        if t is None:
            inits.append(numpy_helper.from_array(np.asarray(arr), name))
        else:
            inits.append(helper.make_tensor(name, t, list(np.shape(arr)), np.asarray(arr).ravel().tolist()))
        return name

    init("s8", np.float32(0.125))
    for name, t in F8.items():
        for sat in (1, 0):
            c = f"cast_{name}_sat{sat}"
            nodes.append(helper.make_node("Cast", ["x"], [c], to=t, saturate=sat))
            nodes.append(helper.make_node("Cast", [c], [f"back_{name}_sat{sat}"], to=T.FLOAT))
            out(c, t, [n])
            out(f"back_{name}_sat{sat}", T.FLOAT, [n])
        init(f"z_{name}", [0], t)
        for sat in ((1, 0) if name == "e4m3fn" else (1,)):
            q = f"q_{name}" + ("" if sat else "_nosat")
            nodes.append(helper.make_node("QuantizeLinear", ["x", "s8", f"z_{name}"], [q], saturate=sat))
            nodes.append(helper.make_node("DequantizeLinear", [q, "s8", f"z_{name}"], ["d" + q]))
            out(q, t, [n])
            out("d" + q, T.FLOAT, [n])
    # The same conversions on a weight: folded at compile time (lowering's
    # interpreter computes them)
    init("cw", inputs_x()[::7].copy())
    for name, t in F8.items():
        nodes.append(helper.make_node("Cast", ["cw"], [f"fold_{name}"], to=t, saturate=0))
        nodes.append(helper.make_node("Cast", [f"fold_{name}"], [f"fold_back_{name}"], to=T.FLOAT))
        out(f"fold_back_{name}", T.FLOAT, [len(inputs_x()[::7])])
    # int4 / uint4: per axis on [n/4, 4] and blocked (block 3 along axis 0) on [n/4, 4]
    nodes.append(helper.make_node("Reshape", ["xi", "shape4"], ["x4"]))
    init("shape4", np.array([ni // 4, 4], np.int64))
    rng = np.random.default_rng(4)
    init("s_axis", np.array([0.5, 0.25, 3.0, 0.0625], np.float32))
    init("s_blk", rng.uniform(0.05, 2.0, size=(ni // 12, 4)).astype(np.float32))
    for name, t, lo, hi in (("i4", T.INT4, -8, 7), ("u4", T.UINT4, 0, 15)):
        init(f"z_axis_{name}", np.array([lo, lo + 3, hi, (lo + hi) // 2]), t)
        init(f"z_blk_{name}", rng.integers(lo, hi + 1, size=(ni // 12, 4)), t)
        for kind, s, z, attrs in (("axis", "s_axis", f"z_axis_{name}", dict(axis=1)),
                                  ("blk", "s_blk", f"z_blk_{name}", dict(axis=0, block_size=3))):
            q = f"q_{name}_{kind}"
            nodes.append(helper.make_node("QuantizeLinear", ["x4", s, z], [q], **attrs))
            nodes.append(helper.make_node("DequantizeLinear", [q, s, z], ["d" + q], **attrs))
            out(q, t, [ni // 4, 4])
            out("d" + q, T.FLOAT, [ni // 4, 4])
        nodes.append(helper.make_node("Cast", ["xc"], [f"cast_{name}"], to=t))
        nodes.append(helper.make_node("Cast", [f"cast_{name}"], [f"back_{name}"], to=T.FLOAT))
        out(f"cast_{name}", t, [nc])
        out(f"back_{name}", T.FLOAT, [nc])
    w = rng.integers(-8, 8, size=(5, 7))
    init("w4", w, T.INT4)
    init("w4_s", np.array([0.5, 1.0, 2.0, 0.25, 4.0, 1.5, 0.125], np.float32))
    init("w4_z", np.array([0, 1, -1, 7, -8, 2, 3]), T.INT4)
    nodes.append(helper.make_node("DequantizeLinear", ["w4", "w4_s", "w4_z"], ["dq_w4"], axis=1))
    out("dq_w4", T.FLOAT, [5, 7])
    # the same kinds of weights in raw_data (numpy_helper packs int4 there)
    for name, t, vals in (("i4", T.INT4, rng.integers(-8, 8, size=(3, 5))), ("u4", T.UINT4, rng.integers(0, 16, size=(3, 5))),
                          ("e5m2", T.FLOAT8E5M2, rng.standard_normal((3, 5)) * 100)):
        inits.append(numpy_helper.from_array(np.asarray(vals).astype(np_type(t)), f"raw_{name}"))
        nodes.append(helper.make_node("DequantizeLinear", [f"raw_{name}", "s8"], [f"dq_raw_{name}"]))
        out(f"dq_raw_{name}", T.FLOAT, [3, 5])
    ins = [helper.make_tensor_value_info(k, T.FLOAT, [c]) for k, c in (("x", n), ("xi", ni), ("xc", nc))]
    g = helper.make_graph(nodes, "narrow", ins, outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.checker.check_model(m)
    return m


def model2():
    ins, outs, nodes = [], [], []
    for name, t in list(F8.items()) + [("i4", T.INT4), ("u4", T.UINT4)]:
        n = 256 if name in F8 else 16
        ins.append(helper.make_tensor_value_info(f"in_{name}", t, [n]))
        outs.append(helper.make_tensor_value_info(f"f_{name}", T.FLOAT, [n]))
        nodes.append(helper.make_node("Cast", [f"in_{name}"], [f"f_{name}"], to=T.FLOAT))
        # Transpose and the views copy the bytes (ONNX Runtime 1.32 has no
        # int4 Reshape or Flatten on the CPU: the reference only here)
        nodes.append(helper.make_node("Reshape", [f"in_{name}", "shape_t"], [f"r_{name}"]))
        nodes.append(helper.make_node("Transpose", [f"r_{name}"], [f"t_{name}"], perm=[1, 0]))
        nodes.append(helper.make_node("Flatten", [f"t_{name}"], [f"fl_{name}"], axis=1))
        nodes.append(helper.make_node("Identity", [f"fl_{name}"], [f"id_{name}"]))
        outs.append(helper.make_tensor_value_info(f"id_{name}", t, [4, n // 4]))
    shape_t = numpy_helper.from_array(np.array([-1, 4], np.int64), "shape_t")
    g = helper.make_graph(nodes, "narrow_in", ins, outs, [shape_t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    return m


def feeds2():
    feeds = {}
    for name, t in F8.items():
        feeds[f"in_{name}"] = np.arange(256, dtype=np.uint8).view(np_type(t))
    feeds["in_i4"] = np.arange(-8, 8).astype(np_type(T.INT4))
    feeds["in_u4"] = np.arange(16).astype(np_type(T.UINT4))
    return feeds


def run_ingot(ingot, model, feeds, work, tag, target):
    path = os.path.join(work, f"{tag}.onnx")
    onnx.save(model, path)
    bundle = os.path.join(work, f"{tag}.ingot")
    subprocess.run([ingot, "compile", path, "-o", bundle, "-q", "--target", target], check=True)
    cmd = [ingot, "run", bundle, "--output", os.path.join(work, f"{tag}.npz")]
    for k, v in feeds.items():
        f = os.path.join(work, f"{tag}_{k}.npy")
        np.save(f, as_npy(v))
        cmd += ["--input", f"{k}={f}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with np.load(os.path.join(work, f"{tag}.npz")) as z:
        return {k: z[k] for k in z.files}


def same(got, want):
    """None when equal bit for bit (floats: NaN equals NaN, -0 differs from 0)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"dtype/shape {got.dtype}{list(got.shape)} != {want.dtype}{list(want.shape)}"
    if want.dtype.kind == "f":
        g, w = got.astype(np.float64), want.astype(np.float64)
        bad = ~((g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w)))
    else:
        bad = got != want
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad.ravel())[0])
    return f"{int(bad.sum())} of {bad.size} differ; first at {i}: {got.ravel()[i]!r} != {want.ravel()[i]!r}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--target", default="llvm")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    failures = 0

    x, xi, xc = inputs_x(), inputs_xi(), inputs_xc()
    feeds = {"x": x, "xi": xi, "xc": xc}
    m1 = model1(len(x), len(xi), len(xc))
    got = run_ingot(a.ingot, m1, feeds, a.work, "narrow", a.target)
    names = [o.name for o in m1.graph.output]
    with np.errstate(all="ignore"):
        ref = dict(zip(names, ReferenceEvaluator(m1).run(None, feeds)))
    # Cast to int4 / uint4: truncated toward zero and wrapped (the node tests'
    # data; the reference evaluator (ml_dtypes) gives 0 past the range, which
    # ONNX leaves undefined, and ONNX Runtime's CPU Cast rounds 0.5 to 1).
    tr = np.trunc(xc).astype(np.int64)
    ref["cast_i4"] = ((tr + 8) % 16 - 8).astype(np.int8)
    ref["cast_u4"] = (tr % 16).astype(np.uint8)
    ref["back_i4"], ref["back_u4"] = ref["cast_i4"].astype(np.float32), ref["cast_u4"].astype(np.float32)
    # NaN into QuantizeLinear to int4: the reference's rint(NaN).astype(int32)
    # is undefined (INT_MIN, plus the zero point wrapping); ONNX Runtime and
    # Ingot give the low end. Those places are checked against ONNX Runtime.
    nan4 = np.isnan(xi).reshape(-1, 4)
    for k in list(ref):
        if k.startswith(("q_i4", "q_u4", "dq_i4", "dq_u4")):
            ref[k] = np.where(nan4, got[k], ref[k])
    ort_out = {}
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(m1.SerializeToString(), providers=["CPUExecutionProvider"])
        # Not the non-saturating float8 outputs: ONNX Runtime 1.32's CPU kernels
        # give 448 for 480 (e4m3fn, spec: NaN) and NaN for 63078.4 (e5m2, spec:
        # inf); nor the Cast to int4 / uint4 (above).
        float_names = [o.name for o in m1.graph.output if o.type.tensor_type.elem_type == T.FLOAT
                       and "sat0" not in o.name and "nosat" not in o.name and not o.name.startswith(("back_", "fold"))]
        float_names += [f"back_{f}_sat1" for f in F8]
        ort_out = dict(zip(float_names, sess.run(float_names, feeds)))
    except ImportError:
        print("onnxruntime not installed: the reference evaluator only")
    compared = 0
    for name in names:
        for who, want in (("reference", ref.get(name)), ("onnxruntime", ort_out.get(name))):
            if want is None:
                continue
            err = same(got[name], as_npy(want))
            compared += 1
            if err:
                failures += 1
                print(f"FAIL {name} vs {who}: {err}")

    got2 = run_ingot(a.ingot, model2(), feeds2(), a.work, "narrow_in", a.target)
    ref2 = ReferenceEvaluator(model2()).run(None, feeds2())
    for o, want in zip(model2().graph.output, ref2):
        err = same(got2[o.name], as_npy(want))
        compared += 1
        if err:
            failures += 1
            print(f"FAIL {o.name} vs reference: {err}")
    # The Python package over the same bundle: the float8s as uint8 bits and
    # int4 / uint4 as int8 / uint8, in and out (python/ingot/_native.py).
    lib = os.path.join(os.path.dirname(os.path.abspath(a.ingot)), "runtime", "libingot.so.0")
    if os.path.exists(lib):
        os.environ.setdefault("INGOT_LIB", lib)
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
        import ingot
        with ingot.Session(os.path.join(a.work, "narrow.ingot")) as sess:
            kinds = {i.name: i.dtype for i in list(sess.inputs) + list(sess.outputs)}
            want_kinds = {"cast_e4m3fn_sat1": np.uint8, "cast_i4": np.int8, "cast_u4": np.uint8, "x": np.float32}
            for k, t in want_kinds.items():
                if kinds[k] != np.dtype(t):
                    failures += 1
                    print(f"FAIL python: {k} is {kinds[k]}, expected {np.dtype(t)}")
            py = sess.run(feeds)
        for name in names:
            err = same(py[name], got[name])
            compared += 1
            if err:
                failures += 1
                print(f"FAIL {name}: python != ingot run: {err}")
    else:
        print(f"no {lib}: the Python package not checked")

    # A float8 zero point that is not 0 is refused (one error line naming it).
    g = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])], "bad_zp",
                          [helper.make_tensor_value_info("x", T.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", T.FLOAT8E4M3FN, [4])],
                          [numpy_helper.from_array(np.float32(2.0), "s"),
                           helper.make_tensor("z", T.FLOAT8E4M3FN, [1], [1.0])])
    bad = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    bad.ir_version = 10
    path = os.path.join(a.work, "bad_zp.onnx")
    onnx.save(bad, path)
    p = subprocess.run([a.ingot, "compile", path, "-o", os.path.join(a.work, "bad_zp.ingot"), "-q"],
                       capture_output=True, text=True)
    if p.returncode == 0 or "zero point 'z'" not in p.stderr or "must be 0" not in p.stderr:
        failures += 1
        print(f"FAIL a non-zero float8 zero point: exit {p.returncode}, {p.stderr.strip()!r}")

    print(f"{compared} comparisons of {len(names) + 12} outputs ({len(x)} values of x), target {a.target}: "
          f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
