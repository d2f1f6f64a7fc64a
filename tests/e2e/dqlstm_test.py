#!/usr/bin/env python3
"""com.microsoft DynamicQuantizeLSTM end to end, on LSTMs quantized at test time.

  dqlstm_test.py --ingot BIN --work DIR [--target T]
  dqlstm_test.py --refusals --ingot BIN --work DIR

Each case is a float ONNX LSTM (random weights, bias B, initial_h and
initial_c, all three outputs) that onnxruntime.quantization.quantize_dynamic
turns into DynamicQuantizeLSTM (int8 weights, zero points 0):
  fwd_pt      forward, per tensor (one scale per direction)
  bidi_pt     bidirectional, per tensor
  bidi_pc     bidirectional, per channel (per_channel=True: a scale per
              gate column)
  rev_pc_p    reverse, per channel, with peepholes P
  bidi_u8_zp  bidi_pc rewritten by hand to uint8 weights with zero point
              128 (the same real weights): the path where the zero point is
              subtracted (quantize_dynamic writes int8 and 0 for an LSTM)
  bidi_u8_zp_cols  the same with zero points 128 and 127 by turns per
              column; ONNX Runtime's kernel refuses zero points that differ
              ("InputWeight point must be constant"), so this one is
              compared with reference 2 only
  w_input     fwd_pt with W given at run time (a graph input), which
              ONNX Runtime runs too: the lowering loads the int8 weights
              from wherever they are, so nothing needs them constant
Each is compiled for the target and run (`ingot compile`, `ingot run`) on
seeded inputs, then compared (rtol 0) with
  1. ONNX Runtime running the quantized model. Its kernel quantizes X and
     the hidden state to uint8 at every step; Ingot computes in float32 on
     the exact dequantized weights (lower/lower_rnn.c). So the two differ
     by ONNX Runtime's activation rounding, which is measured on the same
     inputs with ONNX Runtime alone: gap = max |ORT(quantized) -
     ORT(the LSTM of the dequantized weights, tests/e2e/dqlstm_ref.py)|,
     and atol = GAP_FACTOR x gap, GAP_FACTOR = 2 (measured: Ingot's error
     against ORT equals that gap to 1e-6 on every case). A wrong weight
     layout, scale or zero point moves the outputs by their own size, far
     beyond.
  2. ONNX Runtime running the LSTM of the dequantized weights: what Ingot
     computes, so atol REF_ATOL = 1e-5 (float32 summation order over
     these short sums and 5 to 7 steps; measured at most 1e-6). This one
     catches an error smaller than ONNX Runtime's activation rounding.

--refusals: a DynamicQuantizeLSTM that Ingot cannot run is refused at
compile time with one message naming the node and the reason (exit 1, no
bundle): float32 W and R, a W_scale of neither shape, input_forget=1 (as
for LSTM), and layout=1 (not an attribute of the op; a stray one is not
taken as the LSTM's layout).

Exit 0 pass, 1 fail."""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
import dqlstm_ref as dqlstm  # noqa: E402
from ingot.compare import npz_member_name  # noqa: E402

GAP_FACTOR = 2.0
REF_ATOL = 1e-5
SEQ, BATCH, INPUT, HIDDEN = 7, 3, 10, 16


def float_lstm(direction, peep, seed):
    """A float32 LSTM model with B, initial_h, initial_c and all outputs."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    d = 2 if direction == "bidirectional" else 1
    w = (rng.standard_normal((d, 4 * HIDDEN, INPUT)) * 0.4).astype(np.float32)
    r = (rng.standard_normal((d, 4 * HIDDEN, HIDDEN)) * 0.3).astype(np.float32)
    b = (rng.standard_normal((d, 8 * HIDDEN)) * 0.2).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"), numpy_helper.from_array(b, "B")]
    ins = ["X", "W", "R", "B", "", "h0", "c0"]
    if peep:
        inits.append(numpy_helper.from_array((rng.standard_normal((d, 3 * HIDDEN)) * 0.3).astype(np.float32), "P"))
        ins.append("P")
    node = helper.make_node("LSTM", ins, ["Y", "Y_h", "Y_c"], name="lstm", hidden_size=HIDDEN, direction=direction)
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [node], "lstm",
        [helper.make_tensor_value_info("X", f, [SEQ, BATCH, INPUT]),
         helper.make_tensor_value_info("h0", f, [d, BATCH, HIDDEN]),
         helper.make_tensor_value_info("c0", f, [d, BATCH, HIDDEN])],
        [helper.make_tensor_value_info("Y", f, [SEQ, d, BATCH, HIDDEN]),
         helper.make_tensor_value_info("Y_h", f, [d, BATCH, HIDDEN]),
         helper.make_tensor_value_info("Y_c", f, [d, BATCH, HIDDEN])],
        inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def quantized(work, name, direction, per_channel, peep, seed):
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    fpath = os.path.join(work, name + "_float.onnx")
    qpath = os.path.join(work, name + ".onnx")
    onnx.save(float_lstm(direction, peep, seed), fpath)
    quantize_dynamic(fpath, qpath, weight_type=QuantType.QInt8, per_channel=per_channel)
    m = onnx.load(qpath)
    if not any(n.op_type == "DynamicQuantizeLSTM" for n in m.graph.node):
        raise SystemExit(f"FAIL: quantize_dynamic made no DynamicQuantizeLSTM of {name}")
    return m


def to_u8_zero_points(m, alternate):
    """Int8 weights with zero point 0 -> uint8 q + z (the same dequantized
    values) with z = 128, or (alternate) 128 and 127 by turns per column."""
    from onnx import numpy_helper
    node = next(n for n in m.graph.node if n.op_type == "DynamicQuantizeLSTM")
    inits = {t.name: t for t in m.graph.initializer}
    for qi, si, zi in ((1, 8, 9), (2, 10, 11)):
        q = numpy_helper.to_array(inits[node.input[qi]]).astype(np.int32)
        s = numpy_helper.to_array(inits[node.input[si]])
        z = (128 - (np.arange(s.size) % 2 if alternate else np.zeros(s.size, np.int32))).reshape(s.shape).astype(np.int32)
        qu = q + z.reshape(s.shape[0], 1, -1)
        assert qu.min() >= 0 and qu.max() <= 255
        inits[node.input[qi]].CopyFrom(numpy_helper.from_array(qu.astype(np.uint8), node.input[qi]))
        inits[node.input[zi]].CopyFrom(numpy_helper.from_array(z.astype(np.uint8), node.input[zi]))
    return m


def w_as_input(m):
    """The quantized W moved from the initializers to the graph inputs."""
    from onnx import TensorProto, helper, numpy_helper
    node = next(n for n in m.graph.node if n.op_type == "DynamicQuantizeLSTM")
    t = next(t for t in m.graph.initializer if t.name == node.input[1])
    w = numpy_helper.to_array(t)
    m.graph.initializer.remove(t)
    m.graph.input.append(helper.make_tensor_value_info(node.input[1], TensorProto.INT8, list(w.shape)))
    return m, {node.input[1]: w}


def cases(work):
    """(name, quantized model, whether ONNX Runtime runs it, whether W is
    fed at run time)."""
    import onnx
    out = []
    for name, direction, pc, peep in (("fwd_pt", "forward", False, False), ("bidi_pt", "bidirectional", False, False),
                                      ("bidi_pc", "bidirectional", True, False),
                                      ("rev_pc_p", "reverse", True, True)):
        out.append((name, quantized(work, name, direction, pc, peep, len(out) + 1), True, False))
    bidi_pc = out[2][1]
    for name, alternate in (("bidi_u8_zp", False), ("bidi_u8_zp_cols", True)):
        u8 = onnx.ModelProto()
        u8.CopyFrom(bidi_pc)
        out.append((name, to_u8_zero_points(u8, alternate), not alternate, False))
    out.append(("w_input", out[0][1], True, True))
    return out


def run_case(args, name, model, ort_runs, w_fed):
    import onnx
    path = os.path.join(args.work, name + ".onnx")
    run_model, fed = model, {}
    if w_fed:
        run_model = onnx.ModelProto()
        run_model.CopyFrom(model)
        run_model, fed = w_as_input(run_model)
    onnx.save(run_model, path)
    rng = np.random.default_rng(7)
    d = 2 if any(a.s == b"bidirectional" for n in model.graph.node for a in n.attribute if a.name == "direction") else 1
    feeds = {"X": rng.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32),
             "h0": (rng.standard_normal((d, BATCH, HIDDEN)) * 0.5).astype(np.float32),
             "c0": (rng.standard_normal((d, BATCH, HIDDEN)) * 0.5).astype(np.float32)}
    ref = dqlstm.ort_outputs(dqlstm.dequantized(model), feeds)
    feeds.update(fed)
    checks = [("the dequantized LSTM", ref, REF_ATOL, f"{REF_ATOL:g}")]
    if ort_runs:
        want = dqlstm.ort_outputs(path, feeds)
        gap = max(float(np.abs(want[k].astype(np.float64) - ref[k]).max()) for k in want)
        checks.insert(0, ("ORT", want, GAP_FACTOR * gap, f"{GAP_FACTOR:g} x ORT's activation-rounding gap {gap:.3g}"))
    work = os.path.join(args.work, name + "_" + args.target.split()[0])
    os.makedirs(work, exist_ok=True)
    bundle, out = os.path.join(work, "model.ingot"), os.path.join(work, "outputs.npz")
    flags = []
    for k, v in feeds.items():
        f = os.path.join(work, k + ".npy")
        np.save(f, v)
        flags += ["--input", f"{k}={f}"]
    for cmd in ([args.ingot, "compile", path, "-o", bundle, "--target", args.target],
                [args.ingot, "run", bundle, *flags, "--output", out]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{name}: FAIL: {' '.join(cmd)}: exit {p.returncode}\n{p.stdout}{p.stderr}")
            return False
    ok = True
    print(f"{name}:")
    with np.load(out) as npz:
        got = {k: npz[npz_member_name(k)].astype(np.float64) for k in ref}
    for what, want, atol, why in checks:
        for k in ref:
            err = float(np.abs(got[k] - want[k]).max())
            good = err <= atol
            ok &= good
            print(f"  {k}: max abs err {err:.3g} against {what} (atol {atol:.3g}: {why}) -> "
                  f"{'ok' if good else 'MISMATCH'}")
    return ok


def refusals(args):
    import onnx
    from onnx import numpy_helper
    base = quantized(args.work, "refuse_base", "forward", False, False, 11)
    node_name = next(n.name for n in base.graph.node if n.op_type == "DynamicQuantizeLSTM")
    failures = 0

    def float_weights(m):
        node = next(n for n in m.graph.node if n.op_type == "DynamicQuantizeLSTM")
        for k in (1, 2):
            t = next(t for t in m.graph.initializer if t.name == node.input[k])
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))
        return m

    def attr(name):
        def change(m):
            node = next(n for n in m.graph.node if n.op_type == "DynamicQuantizeLSTM")
            node.attribute.append(onnx.helper.make_attribute(name, 1))
            return m
        return change

    def scale_shape(m):
        node = next(n for n in m.graph.node if n.op_type == "DynamicQuantizeLSTM")
        for k in (8, 9):
            t = next(t for t in m.graph.initializer if t.name == node.input[k])
            t.CopyFrom(numpy_helper.from_array(np.repeat(numpy_helper.to_array(t), 3), t.name))
        return m

    for what, change, want in (
            ("W_scale of 3 elements", scale_shape,
             f"node '{node_name}' (DynamicQuantizeLSTM): W_scale must be float32 [1] or [1, {4 * HIDDEN}]"),
            ("float32 W and R", float_weights,
             f"node '{node_name}' (DynamicQuantizeLSTM): W must be [1, {INPUT}, {4 * HIDDEN}] and R "
             f"[1, {HIDDEN}, {4 * HIDDEN}], both int8 or both uint8"),
            ("input_forget=1", attr("input_forget"),
             f"node '{node_name}' (DynamicQuantizeLSTM): input_forget=1 is not supported"),
            ("layout=1", attr("layout"), f"node '{node_name}' (DynamicQuantizeLSTM): layout=1 is not supported")):
        m = onnx.ModelProto()
        m.CopyFrom(base)
        path = os.path.join(args.work, "refused.onnx")
        onnx.save(change(m), path)
        out = os.path.join(args.work, "refused.ingot")
        if os.path.exists(out):
            os.remove(out)
        p = subprocess.run([args.ingot, "compile", path, "-o", out], capture_output=True, text=True)
        ok = p.returncode == 1 and want in p.stderr and not os.path.exists(out)
        print(f"{what}: exit {p.returncode}, {p.stderr.strip()!r} -> {'ok' if ok else 'WRONG (want: ' + want + ')'}")
        failures += 0 if ok else 1
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--target", default="llvm")
    ap.add_argument("--refusals", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.refusals:
        failures = refusals(args)
    else:
        failures = sum(0 if run_case(args, *c) else 1 for c in cases(args.work))
    print("PASS" if not failures else f"FAIL: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
