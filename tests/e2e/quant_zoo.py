#!/usr/bin/env python3
"""Quantized and float16 models as users export them (models/make_quant_zoo.py)
compiled with Ingot and compared with ONNX Runtime running the same model.

  quant_zoo.py compare NAME --zoo DIR --ingot BUILD/ingot [--work W]
                            [--target T] [--input NAME=FILE.npy]...
                            [--input-shape NAME=DIMS]...
                            [--min-integer N] [--max-float M]
      runs tests/e2e/compare.py on DIR/NAME.onnx with the tolerance below;
      with --min-integer N / --max-float M also checks what the bundle's
      steps compute (`ingot inspect --plan --json`): at least N integer
      conv/matmul/gemm kernels (QLinearConv, ConvInteger, QLinearMatMul,
      MatMulInteger, QGemm) and at most M float ones (Conv, ConvBlocked,
      ConvTranspose, MatMul, Gemm).

  quant_zoo.py refused NAME --expect MESSAGE --zoo DIR --ingot BUILD/ingot
      `ingot compile DIR/NAME.onnx` must fail with MESSAGE in its output
      (a model Ingot does not support yet is refused cleanly; the test fails
      once it compiles, so that it gets compared instead).

  quant_zoo.py table NAME... --zoo DIR --ingot BUILD/ingot [--work W]
      for each model: max abs error against ONNX Runtime and the tolerance,
      bundle size against the bundle of the float model it came from, and
      the bundle's integer and float conv/matmul/gemm steps (from
      `ingot inspect --plan --json`), as a Markdown table.

Tolerances (rtol 0 in every case; an error beyond them fails the test):
  int8, every float output written by a per-tensor DequantizeLinear:
      atol = max(STEPS_INT8 x that output's scale, DYN_NOISE_FACTOR x
      ORT's own optimized-vs-unoptimized difference (below)),
      STEPS_INT8 = 1: one quantization step. Ingot's integer kernels and
      requantization are exact where ONNX defines the rounding, and so are
      ONNX Runtime's, but ONNX Runtime computes QDQ Add (and the QOperator
      QLinearAdd) and its fused kernels in its own float arithmetic, so a
      value next to a half may round the other way, and the step moves on
      through the layers after it. Measured: 0 on every zoo CNN (equal), and
      ORT's self-difference 0 there too, so their tolerance is the one step.
      Where ORT's self-difference is large (PP-OCR det: its map is a steep
      sigmoid, one step upstream can move a pixel by 100 steps; ORT against
      itself: 531 of 51,200 pixels more than a step apart, the largest by
      0.565), the max says little, so the count of elements more than a
      step apart must also stay within COUNT_FACTOR = 1.5 x ORT's own count
      (0 where ORT agrees with itself: then every element within a step).
  int8, float outputs through float ops (quantize_dynamic's MatMulInteger
      and the float scaling, then LayerNorm, Softmax, GELU... and the next
      DynamicQuantizeLinear): each DynamicQuantizeLinear is exact in both,
      but its input comes from float32 ops whose summation order differs,
      so a value next to a half rounds to the other step, and later layers
      carry that on. ONNX Runtime differs from itself the same way: its
      optimized graph (MatMulIntegerToFloat, fused LayerNorm...) against
      the plain ops (ORT_DISABLE_ALL) differs by 0.053 on bert_small_dyn's
      last_hidden_state (values up to 3.9), Ingot against either by 0.053
      to 0.056. So that self-difference is measured on the same inputs:
      atol = DYN_NOISE_FACTOR x noise + DYN_REL x max |output|,
      DYN_NOISE_FACTOR = 2, DYN_REL = 1e-4; and each output's mean
      absolute error at most MEAN_FACTOR x ORT's own mean self-difference
      (+ the DYN_REL term), MEAN_FACTOR = 1.25. A wrong kernel moves outputs
      by their own size (max |output| ~ 4), far beyond. Subtler bugs sit
      near this noise floor: DynamicQuantizeLinear's zero point floored
      instead of rounded moves bert_small_dyn by 0.069 at most (inside
      atol) but its mean error from 0.0096 to 0.0119, past the mean limit
      0.0117 (ORT's own: 0.0090), a thin margin; such a bug is caught for
      sure where DynamicQuantizeLinear is tested exactly, by
      e2e_quant_roundtrip_* (atol 0), which fails on it.
      A model with com.microsoft DynamicQuantizeLSTM (Silero VAD's LSTM):
      ONNX Runtime's kernel rounds X and the hidden state to uint8 at every
      step, where Ingot computes in float32 on the same dequantized int8
      weights (lower/lower_rnn.c). That rounding is measured with ONNX
      Runtime alone, on the same inputs: lstm = max |ORT(model) - ORT(the
      model with each DynamicQuantizeLSTM an LSTM of the dequantized
      weights, dqlstm_ref.py)| (and its mean), added to the noise above:
      atol = DYN_NOISE_FACTOR x (noise + lstm) + DYN_REL x max |output|, the
      mean limit likewise. On Silero VAD that gap is 0.044 on the cell
      state (values up to 16.5), 0.0073 on the speech probabilities, ORT's
      self-difference 0, and Ingot's error against ORT equals the gap. As
      that leaves room for a small error of Ingot's own, Ingot's outputs
      must also be within DYN_NOISE_FACTOR x noise + DYN_REL x max |output|
      of ORT running that dequantized model, which is what Ingot computes
      (measured: 5.7e-6 on the cell state, 6e-8 on the probabilities).
  float16: ONNX Runtime rounds every op's result to float16 where Ingot
      computes in float32 and rounds at the outputs (README, "float16 and
      bfloat16 models"), so the two differ by the float16 rounding noise of
      the whole network. That noise is measured on the same inputs, with
      ONNX Runtime alone: noise = max |ORT(float16 model) - ORT(the same
      model upcast to float32, see upcast())|, outputs rounded to float16,
      and atol = FP16_NOISE_FACTOR x noise + one float16 ulp of max
      |output|, FP16_NOISE_FACTOR = 1.5. (Against the original float model
      instead the noise is useless on PP-OCR det: its float16 conversion
      itself changes the model, so that on its test page 3,951 of 51,200
      pixels of the probability map land on the other side of RapidOCR's
      0.3 threshold, from 0 to 1 at worst, in ONNX Runtime and in Ingot
      alike.) A wrong op moves outputs by their
      own size, which is many times that noise on these models.

Exit 0 pass, 1 fail, 77 skipped (the model is not in DIR: its generator
was skipped).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COMPARE = os.path.join(HERE, "compare.py")
SKIP = 77
STEPS_INT8 = 1
DYN_REL = 1e-4
DYN_NOISE_FACTOR = 2.0
COUNT_FACTOR = 1.5
MEAN_FACTOR = 1.25
FP16_NOISE_FACTOR = 1.5

INTEGER_KERNEL = re.compile(r"^(qlinearconv|convinteger|qlinearmatmul|matmulinteger|qgemm)_")
# kernel symbols are op_dtype_...: graph/ops.def's float Conv, ConvBlocked
# (the NCHWc layout), ConvTranspose, MatMul and Gemm
FLOAT_KERNEL = re.compile(r"^(conv|convblocked|convtranspose|matmul|gemm)_(f32|f16|float16|bf16|bfloat16)_")


def load_meta(zoo, name):
    path = os.path.join(zoo, name + ".onnx")
    if not os.path.exists(path):
        return None, None
    with open(os.path.join(zoo, name + ".json")) as f:
        return path, json.load(f)


def make_feeds(sess, given, fixed, seed=0):
    """The inputs compare.py would draw (same seed, same order), so that the
    tolerance is measured on the inputs the comparison uses."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from ingot.compare import ORT_TO_NUMPY, make_input
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in sess.get_inputs():
        dtype = ORT_TO_NUMPY[inp.type]
        if inp.name in given:
            feeds[inp.name] = np.load(given[inp.name]).astype(dtype, copy=False)
            continue
        shape = fixed.get(inp.name) or [d if isinstance(d, int) and d >= 0 else 1 for d in inp.shape]
        feeds[inp.name] = make_input(rng, dtype, shape)
    return feeds


def ort_run(path, feeds, optimize=True):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess, {o.name: v for o, v in zip(sess.get_outputs(), sess.run(None, feeds))}


def upcast(path, out):
    """The float16 model at `path` computed in float32: every float16
    initializer, Constant and value made float32, Casts to float16 made
    Casts to float32; the inputs and outputs float32 as well (fed the
    float16 inputs exactly, its outputs rounded to float16 to compare). That
    is what Ingot computes (README, "float16 and bfloat16 models"); ONNX
    Runtime running it sizes the float16 rounding noise of the network."""
    import onnx
    from onnx import TensorProto, numpy_helper
    m = onnx.load(path)
    F16, F32 = TensorProto.FLOAT16, TensorProto.FLOAT

    def fix_tensor(t):
        if t.data_type == F16:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))

    def fix_graph(g):
        for t in g.initializer:
            fix_tensor(t)
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if vi.type.tensor_type.elem_type == F16:
                vi.type.tensor_type.elem_type = F32
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    fix_tensor(a.t)
                elif a.type == onnx.AttributeProto.GRAPH:
                    fix_graph(a.g)
                elif a.name in ("to", "dtype") and a.type == onnx.AttributeProto.INT and a.i == F16:
                    a.i = F32
    fix_graph(m.graph)
    onnx.save(m, out)
    return out


def tolerance(path, meta, zoo, given, fixed):
    """(atol, why) for the model, as the module's docstring says."""
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = make_feeds(sess, given, fixed)
    _, want = ort_run(path, feeds)
    floats = {k: v for k, v in want.items() if v.dtype.kind == "f"}
    peak = max((float(np.abs(v).max()) for v in floats.values() if v.size), default=0.0)
    how = meta["how"]
    if "float16" in how:
        up = upcast(path, os.path.join(tempfile.mkdtemp(prefix="ingot-upcast-"), "upcast.onnx"))
        usess = ort.InferenceSession(up, providers=["CPUExecutionProvider"])
        u_feeds = {i.name: feeds[i.name].astype(np.float32) if feeds[i.name].dtype == np.float16
                   else feeds[i.name] for i in usess.get_inputs()}
        _, ref32 = ort_run(up, u_feeds)
        noise = max(float(np.abs(want[k].astype(np.float64)
                                 - ref32[k].astype(want[k].dtype).astype(np.float64)).max()) for k in floats)
        ulp = float(np.spacing(np.float16(min(peak, 65504.0))))
        atol = FP16_NOISE_FACTOR * noise + ulp
        return atol, (f"float16: {FP16_NOISE_FACTOR} x ORT's float16-vs-upcast noise {noise:.3g} "
                      f"+ 1 ulp ({ulp:.3g}); max |output| {peak:.3g}"), None
    scales = meta.get("output_scales", {})
    _, plain = ort_run(path, feeds, optimize=False)
    noise = max(float(np.abs(want[k].astype(np.float64) - plain[k].astype(np.float64)).max()) for k in floats)
    if floats and all(k in scales for k in floats):
        step = STEPS_INT8 * max(scales[k] for k in floats)
        atol = max(step, DYN_NOISE_FACTOR * noise)
        beyond = sum(int((np.abs(want[k].astype(np.float64) - plain[k]) > step * 1.5).sum()) for k in floats)
        limit = int(COUNT_FACTOR * beyond)
        why = (f"int8: max({STEPS_INT8} step of the output scale {step:.3g}, {DYN_NOISE_FACTOR} x ORT's own "
               f"optimized-vs-unoptimized difference {noise:.3g}); at most {limit} elements more than a step "
               f"apart ({COUNT_FACTOR} x ORT's own {beyond})")
        return atol, why, ("count", step, limit, want)
    mean_noise = max(float(np.abs(want[k].astype(np.float64) - plain[k]).mean()) for k in floats)
    lstm, lstm_mean, ref = dqlstm_gap(path, feeds, want, floats)
    atol = DYN_NOISE_FACTOR * (noise + lstm) + DYN_REL * peak
    mean_limit = MEAN_FACTOR * (mean_noise + lstm_mean) + DYN_REL * peak
    why = (f"int8 through float ops: {DYN_NOISE_FACTOR} x (ORT's own optimized-vs-unoptimized difference "
           f"{noise:.3g}" + (f" + its DynamicQuantizeLSTM activation rounding {lstm:.3g}" if ref else "") +
           f") + {DYN_REL:g} x max |output| {peak:.3g}; mean abs error at most {mean_limit:.3g} ({MEAN_FACTOR} x "
           f"ORT's own {mean_noise:.3g}" + (f" + {lstm_mean:.3g}" if ref else "") + " + the same)")
    ref_check = None
    if ref:
        ref_atol = DYN_NOISE_FACTOR * noise + DYN_REL * peak
        ref_check = (ref, ref_atol)
        why += (f"; and within {ref_atol:.3g} ({DYN_NOISE_FACTOR} x {noise:.3g} + {DYN_REL:g} x max |output|) of "
                "ORT running its LSTMs on the dequantized weights, what Ingot computes")
    return atol, why, ("mean", mean_limit, ref_check, want)


def dqlstm_gap(path, feeds, want, floats):
    """For a model with com.microsoft DynamicQuantizeLSTM nodes: (max, mean
    of |ORT(model) - ORT(its LSTMs over the dequantized weights)|, the
    latter's outputs) on these inputs (dqlstm_ref.py); (0, 0, None) for
    other models."""
    import onnx
    m = onnx.load(path)
    if not any(n.op_type == "DynamicQuantizeLSTM" for n in m.graph.node):
        return 0.0, 0.0, None
    import dqlstm_ref
    ref = dqlstm_ref.ort_outputs(dqlstm_ref.dequantized(m), feeds)
    d = {k: np.abs(want[k].astype(np.float64) - ref[k].astype(np.float64)) for k in floats}
    return max(float(v.max()) for v in d.values()), max(float(v.mean()) for v in d.values()), \
        {k: ref[k] for k in floats}


def extra_check(work, check):
    """The check beyond atol on Ingot's float outputs (work/outputs.npz):
    ("count", step, limit, ORT's outputs): at most `limit` elements more
    than a step from ONNX Runtime's; ("mean", limit, ref_check, ORT's
    outputs): each output's mean absolute error at most `limit`, and with
    ref_check = (reference outputs, atol), not None, every element within
    atol of those."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from ingot.compare import npz_member_name
    want = check[-1]
    with np.load(os.path.join(work, "outputs.npz")) as npz:
        got = {k: npz[npz_member_name(k)].astype(np.float64) for k, v in want.items() if v.dtype.kind == "f"}
    if check[0] == "count":
        _, step, limit, _ = check
        beyond = sum(int((np.abs(got[k] - want[k]) > step * 1.5).sum()) for k in got)
        total = sum(v.size for v in got.values())
        ok = beyond <= limit
        print(f"elements more than a step apart: {beyond} of {total} (at most {limit}) -> "
              f"{'ok' if ok else 'MISMATCH'}")
        return ok
    _, limit, ref_check, _ = check
    ok = True
    for k in got:
        mean = float(np.abs(got[k] - want[k]).mean())
        good = mean <= limit
        ok &= good
        print(f"  {k}: mean abs err {mean:.4g} (at most {limit:.4g}) -> {'ok' if good else 'MISMATCH'}")
    if ref_check is not None:
        ref, ref_atol = ref_check
        for k in got:
            err = float(np.abs(got[k] - ref[k]).max())
            good = err <= ref_atol
            ok &= good
            print(f"  {k}: max abs err {err:.4g} against ORT's LSTM of the dequantized weights "
                  f"(atol {ref_atol:.4g}) -> {'ok' if good else 'MISMATCH'}")
    return ok


def kernels(tool, bundle):
    p = subprocess.run([tool, "inspect", bundle, "--plan", "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: ingot inspect --plan --json {bundle}: {p.stderr}")
    steps = json.loads(p.stdout)["steps"]
    names = [s["kernel"] for s in steps]
    integer = sum(1 for k in names if INTEGER_KERNEL.match(k))
    flt = sum(1 for k in names if FLOAT_KERNEL.match(k))
    return integer, flt, len(names)


def run_compare(args, path, atol, work):
    cmd = [sys.executable, COMPARE, path, "--ingot", args.ingot, "--rtol", "0", "--atol", repr(atol),
           "--work", work]
    for t in args.target or []:
        cmd += ["--target", t]
    for i in args.input:
        cmd += ["--input", i]
    for i in args.input_shape:
        cmd += ["--input-shape", i]
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = p.stdout + p.stderr
    errs = [float(m) for m in re.findall(r"max abs err ([0-9.eE+-]+|nan|inf)", out)]
    return p.returncode, out, max(errs) if errs else None


def parse_io(args):
    given = dict(i.split("=", 1) for i in args.input)
    fixed = {}
    for item in args.input_shape:
        name, _, dims = item.partition("=")
        fixed[name] = [int(d) for d in dims.split("x")]
    return given, fixed


def cmd_compare(args):
    path, meta = load_meta(args.zoo, args.name)
    if path is None:
        print(f"SKIP: {args.name}.onnx is not in {args.zoo}")
        return SKIP
    given, fixed = parse_io(args)
    atol, why, check = tolerance(path, meta, args.zoo, given, fixed)
    print(f"{args.name}: {meta['how']}; tolerance atol {atol:.4g} ({why})")
    work = args.work or tempfile.mkdtemp(prefix="ingot-quant-zoo-")
    rc, out, err = run_compare(args, path, atol, work)
    sys.stdout.write(out)
    if rc != 0:
        return 1
    if check is not None and not extra_check(work, check):
        return 1
    if args.min_integer is not None or args.max_float is not None:
        integer, flt, total = kernels(args.ingot, os.path.join(work, "model.ingot"))
        print(f"kernels: {integer} integer conv/matmul/gemm steps, {flt} float ones, {total} steps")
        if args.min_integer is not None and integer < args.min_integer:
            print(f"FAIL: expected at least {args.min_integer} integer conv/matmul/gemm steps")
            return 1
        if args.max_float is not None and flt > args.max_float:
            print(f"FAIL: expected at most {args.max_float} float conv/matmul/gemm steps")
            return 1
    return 0


def cmd_refused(args):
    path, meta = load_meta(args.zoo, args.name)
    if path is None:
        print(f"SKIP: {args.name}.onnx is not in {args.zoo}")
        return SKIP
    work = args.work or tempfile.mkdtemp(prefix="ingot-quant-zoo-")
    os.makedirs(work, exist_ok=True)
    cmd = [args.ingot, "compile", path, "-o", os.path.join(work, "model.ingot")]
    for i in args.input_shape:
        cmd += ["--input-shape", i]
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = (p.stdout + p.stderr).strip()
    print(f"{' '.join(cmd)}: exit {p.returncode}\n{out}")
    if p.returncode == 0:
        print(f"FAIL: {args.name} compiled; it was refused before (expected: {args.expect}): "
              "test it against ONNX Runtime now")
        return 1
    if args.expect not in out:
        print(f"FAIL: refused, but not with the expected message: {args.expect}")
        return 1
    return 0


def bundle_bytes(tool, bundle):
    p = subprocess.run([tool, "inspect", bundle, "--json"], capture_output=True, text=True)
    return json.loads(p.stdout)["file_bytes"] if p.returncode == 0 else os.path.getsize(bundle)


def cmd_table(args):
    work = args.work or tempfile.mkdtemp(prefix="ingot-quant-zoo-")
    rows = ["| model | made by | max abs err vs ORT | tolerance | bundle / fp32 bundle | "
            "integer conv/matmul steps | float conv/matmul/gemm steps |",
            "|---|---|---|---|---|---|---|"]
    fp32_sizes = {}
    for name in args.names:
        path, meta = load_meta(args.zoo, name)
        if path is None:
            rows.append(f"| {name} | not generated | | | | | |")
            continue
        extra = args.extra.get(name, {})
        a = argparse.Namespace(ingot=args.ingot, target=args.target, input=extra.get("input", []),
                               input_shape=extra.get("input_shape", []))
        given, fixed = parse_io(a)
        try:
            atol, why, check = tolerance(path, meta, args.zoo, given, fixed)
        except Exception as e:  # ORT cannot run it: say so in the table
            rows.append(f"| {name} | {meta['how']} | ORT failed: {str(e)[:120]} | | | | |")
            continue
        w = os.path.join(work, name)
        rc, out, err = run_compare(a, path, atol, w)
        bundle = os.path.join(w, "model.ingot")
        if not os.path.exists(bundle) or "FAIL: ingot compile" in out:
            msg = next((ln for ln in out.splitlines() if "error" in ln.lower()), out.strip()[-200:])
            rows.append(f"| {name} | {meta['how']} | refused: {msg.strip()[:200]} | {atol:.3g} | | | |")
            continue
        fname = meta["float"]
        if fname not in fp32_sizes:
            fw = os.path.join(work, "fp32_" + fname[:-5])
            frc, fout, _ = run_compare(a, os.path.join(args.zoo, fname), 1e9, fw)
            fb = os.path.join(fw, "model.ingot")
            fp32_sizes[fname] = bundle_bytes(args.ingot, fb) if os.path.exists(fb) else None
        size = bundle_bytes(args.ingot, bundle)
        ratio = f"{size / 1e6:.2f} MB / {fp32_sizes[fname] / 1e6:.2f} MB = {size / fp32_sizes[fname]:.2f}" \
            if fp32_sizes[fname] else f"{size / 1e6:.2f} MB"
        integer, flt, total = kernels(args.ingot, bundle)
        verdict = "" if rc == 0 and (check is None or extra_check(w, check)) else " (FAIL)"
        rows.append(f"| {name} | {meta['how']} | {err:.3g}{verdict} | {atol:.3g} ({why}) | {ratio} | "
                    f"{integer} | {flt} |")
    print("\n".join(rows))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("name")
    t = sub.add_parser("table")
    t.add_argument("names", nargs="+")
    t.add_argument("--extra", type=json.loads, default={},
                   help='JSON {NAME: {"input": [...], "input_shape": [...]}}')
    for p in (c, t):
        p.add_argument("--zoo", required=True)
        p.add_argument("--ingot", required=True)
        p.add_argument("--work")
        p.add_argument("--target", action="append")
    c.add_argument("--input", action="append", default=[])
    c.add_argument("--input-shape", action="append", default=[])
    c.add_argument("--min-integer", type=int, help="at least this many integer conv/matmul/gemm steps")
    c.add_argument("--max-float", type=int, help="at most this many float conv/matmul/gemm steps")
    r = sub.add_parser("refused")
    r.add_argument("name")
    r.add_argument("--expect", required=True, help="the error message `ingot compile` must print")
    r.add_argument("--zoo", required=True)
    r.add_argument("--ingot", required=True)
    r.add_argument("--work")
    r.add_argument("--input-shape", action="append", default=[])
    args = ap.parse_args()
    return {"compare": cmd_compare, "table": cmd_table, "refused": cmd_refused}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
