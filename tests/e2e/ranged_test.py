#!/usr/bin/env python3
"""Ranged input dims: one bundle for every size in a range, run at several
sizes against ONNX Runtime running the same model at each size.

  ranged_test.py bert  --ingot BUILD/ingot --work DIR [--target T] [--sizes 7 64 128]
      the BERT-style encoder (models/make_bert.py, small) compiled once with
      --input-shape input_ids=1x1..128 (attention_mask and token_type_ids
      name the same dims, so they share the range); each size runs with
      real tokens and padding; then a run at 129 tokens and one whose
      inputs disagree on the length must fail with one clear message.
  ranged_test.py pool  --ingot BUILD/ingot --work DIR [--target T]
      means over a ranged dim: ReduceMean keeping it (then x - mean) and
      over it and a fixed dim together, at 1, 5 and 9 of 1..9 rows.
  ranged_test.py cnn   --ingot BUILD/ingot --work DIR [--target T]
      a small CNN (Conv, Relu, MaxPool, a strided Conv, BatchNormalization,
      AveragePool, GlobalAveragePool, Flatten, Gemm, Softmax; its feature map
      is a second output) compiled once for images of 224..640 by 224..640
      and run at 224x224, 320x480 and 640x640 (and odd sizes 227x301), then
      once with its batch ranged 1..4 and run at 1, 3, 4. A window that a
      range cannot take (auto_pad SAME with a stride) is refused, naming the
      node (by compile and by check), and so is a run at 641.

Prints each size's max error; exits non-zero on any mismatch.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def compile_bundle(a, model, out, shapes, expect_fail=False):
    cmd = [a.ingot, "compile", model, "-o", out, "-q"]
    for s in shapes:
        cmd += ["--input-shape", s]
    if a.target:
        cmd += ["--target", a.target]
    p = run(cmd)
    if expect_fail:
        return p
    if p.returncode != 0:
        sys.exit(f"compile failed: {' '.join(cmd)}\n{p.stderr}")
    return p


def ingot_outputs(a, bundle, inputs, tag):
    args = [a.ingot, "run", bundle, "--threads", "2"]
    for name, arr in inputs.items():
        path = os.path.join(a.work, f"{tag}_{name}.npy")
        np.save(path, arr)
        args += ["--input", f"{name}={path}"]
    out = os.path.join(a.work, f"{tag}.npz")
    if os.path.exists(out):
        os.remove(out)
    p = run(args + ["--output", out])
    return p, (dict(np.load(out)) if p.returncode == 0 else None)


def compare(name, got, want, atol, rtol):
    if got.shape != want.shape:
        print(f"  {name}: shape {got.shape}, ONNX Runtime {want.shape}")
        return False
    err = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
    ok = np.allclose(got, want, atol=atol, rtol=rtol)
    print(f"  {name}: shape {list(got.shape)} max error {err:.3g} {'ok' if ok else 'MISMATCH'}")
    return ok


def check_sizes(a, model, bundle, cases, atol, rtol):
    import onnxruntime as ort
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ok = True
    for tag, inputs in cases:
        want = dict(zip(names, sess.run(None, inputs)))
        p, got = ingot_outputs(a, bundle, inputs, tag)
        print(f"{tag}:")
        if got is None:
            print(f"  ingot run failed: {p.stderr.strip()}")
            ok = False
            continue
        for n in names:
            ok &= compare(n, got[n.replace("/", "_")], want[n], atol, rtol)
    return ok


def expect_error(p, what, needles):
    text = p.stderr.strip()
    good = p.returncode != 0 and all(n in text for n in needles) and "Traceback" not in text
    print(f"{what}: exit {p.returncode}: {text.splitlines()[-1] if text else '(no message)'} "
          f"{'ok' if good else 'WRONG'}")
    return good


def guarded(a, model, shapes, least):
    """The kernels stop at the run's size: at least `least` of them test a
    run_size input in their loops (schedule/range_guard.c), seen in
    --dump-ir."""
    cmd = [a.ingot, "compile", model, "-o", os.path.join(a.work, "dump.ingot"), "-q", "--dump-ir"]
    for s in shapes:
        cmd += ["--input-shape", s]
    if a.target:
        cmd += ["--target", a.target]
    p = run(cmd)
    funcs = [f for f in p.stdout.split("\nfunc ") if f.strip()]
    count = sum(1 for f in funcs if "run_size" in f.split("{", 1)[-1])
    good = p.returncode == 0 and count >= least
    print(f"kernels that stop at the run's size: {count} of {len(funcs)} {'ok' if good else 'TOO FEW'}")
    return good


def stale_runs(a, model, bundle):
    """One session, so one arena: a 640x640 image with NaN past row and
    column 300, then 227x301 and 224x224 images. The kernels stop near the
    run's size and leave the rest as it was, so what the masks and guards
    let through of the NaN run shows as a wrong (NaN) later result."""
    import onnxruntime as ort
    os.environ.setdefault("INGOT_BIN", a.ingot)
    import ingot
    sess = ingot.Session(bundle, threads=2)
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(11)
    big = rng.standard_normal((1, 3, 640, 640)).astype(np.float32)
    big[:, :, 300:, :] = np.nan
    big[:, :, :, 300:] = np.nan
    sess.run({"x": big})
    ok = True
    for h, w in ((227, 301), (224, 224)):
        x = rng.standard_normal((1, 3, h, w)).astype(np.float32)
        got = sess.run({"x": x})
        want = dict(zip([o.name for o in ref.get_outputs()], ref.run(None, {"x": x})))
        print(f"after a NaN run, image{h}x{w}:")
        for n in want:
            ok &= compare(n, got[n], want[n], 1e-5, 1e-4)
    return ok


def bert(a):
    subprocess.run([sys.executable, os.path.join(ROOT, "models", "make_bert.py"), "--out", a.work, "--size",
                    "small"], check=True, stdout=subprocess.DEVNULL)
    model = os.path.join(a.work, "bert_small.onnx")
    bundle = os.path.join(a.work, "bert_ranged.ingot")
    compile_bundle(a, model, bundle, ["input_ids=1x1..128"])
    rng = np.random.default_rng(7)
    cases = []
    for s in a.sizes:
        ids = rng.integers(1000, 8000, size=(1, s), dtype=np.int64)
        ids[0, 0] = 101
        mask = np.ones((1, s), dtype=np.int64)
        real = max(1, s - s // 5)  # the last fifth is padding
        mask[0, real:] = 0
        ids[0, real:] = 0
        types = np.zeros((1, s), dtype=np.int64)
        types[0, real // 2:real] = 1
        cases.append((f"tokens{s}", {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}))
    ok = check_sizes(a, model, bundle, cases, atol=2e-4, rtol=1e-3)
    ok &= guarded(a, model, ["input_ids=1x1..128"], least=15)
    if not a.target:
        # Two variants in one bundle: each target's kernel of a step takes the
        # same arguments, guards or not.
        two = os.path.join(a.work, "bert_ranged_two.ingot")
        p = run([a.ingot, "compile", model, "-o", two, "-q", "--input-shape", "input_ids=1x1..128",
                 "--target", "llvm -mcpu=x86-64-v4", "--target", "llvm -mcpu=x86-64"])
        good = p.returncode == 0
        print(f"two llvm variants: {'ok' if good else 'FAILED: ' + p.stderr.strip()}")
        ok &= good and check_sizes(a, model, two, cases[:1], atol=2e-4, rtol=1e-3)
    # Past the range, and inputs that disagree on the length.
    long = {"input_ids": np.ones((1, 129), np.int64), "attention_mask": np.ones((1, 129), np.int64),
            "token_type_ids": np.zeros((1, 129), np.int64)}
    p, _ = ingot_outputs(a, bundle, long, "tokens129")
    ok &= expect_error(p, "129 tokens", ["input_ids", "129"])
    odd = {"input_ids": np.ones((1, 9), np.int64), "attention_mask": np.ones((1, 8), np.int64),
           "token_type_ids": np.zeros((1, 9), np.int64)}
    p, _ = ingot_outputs(a, bundle, odd, "disagree")
    ok &= expect_error(p, "inputs of 9 and 8 tokens", ["attention_mask"])
    return ok


def make_cnn(path, batch, height, width, same_pads=False):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), "w1")
    b1 = numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "b1")
    w2 = numpy_helper.from_array((rng.standard_normal((16, 8, 3, 3)) * 0.2).astype(np.float32), "w2")
    bn = [numpy_helper.from_array((rng.random(16) + 0.5).astype(np.float32), "bn_scale"),
          numpy_helper.from_array((rng.standard_normal(16) * 0.1).astype(np.float32), "bn_bias"),
          numpy_helper.from_array((rng.standard_normal(16) * 0.1).astype(np.float32), "bn_mean"),
          numpy_helper.from_array((rng.random(16) + 0.5).astype(np.float32), "bn_var")]
    fc = numpy_helper.from_array((rng.standard_normal((10, 16)) * 0.3).astype(np.float32), "fc")
    fb = numpy_helper.from_array((rng.standard_normal(10) * 0.1).astype(np.float32), "fb")
    conv2 = dict(auto_pad="SAME_UPPER") if same_pads else dict(pads=[1, 1, 1, 1])
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], strides=[2, 2], **conv2),
        helper.make_node("BatchNormalization", ["c2"] + [t.name for t in bn], ["n2"]),
        helper.make_node("Relu", ["n2"], ["features"]),
        helper.make_node("AveragePool", ["features"], ["a2"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         count_include_pad=1),
        helper.make_node("GlobalAveragePool", ["a2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], axis=1),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, height, width])
    ys = [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [batch, 10]),
          helper.make_tensor_value_info("features", TensorProto.FLOAT, None)]
    g = helper.make_graph(nodes, "cnn", [x], ys, [w1, b1, w2] + bn + [fc, fb])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def cnn(a):
    model = os.path.join(a.work, "cnn.onnx")
    make_cnn(model, "N", "H", "W")
    rng = np.random.default_rng(5)
    # One bundle for every image of 224..640 by 224..640.
    bundle = os.path.join(a.work, "cnn_image.ingot")
    compile_bundle(a, model, bundle, ["x=1x3x224..640x224..640"])
    cases = [(f"image{h}x{w}", {"x": rng.standard_normal((1, 3, h, w)).astype(np.float32)})
             for h, w in ((224, 224), (320, 480), (640, 640), (227, 301))]
    ok = check_sizes(a, model, bundle, cases, atol=1e-5, rtol=1e-4)
    ok &= guarded(a, model, ["x=1x3x224..640x224..640"], least=8)
    ok &= stale_runs(a, model, bundle)
    p, _ = ingot_outputs(a, bundle, {"x": np.zeros((1, 3, 641, 224), np.float32)}, "image641")
    ok &= expect_error(p, "an image of 641 rows", ["'x'", "641"])
    # The batch ranged.
    bundle = os.path.join(a.work, "cnn_batch.ingot")
    compile_bundle(a, model, bundle, ["x=1..4x3x32x32"])
    cases = [(f"batch{n}", {"x": rng.standard_normal((n, 3, 32, 32)).astype(np.float32)}) for n in (1, 3, 4)]
    ok &= check_sizes(a, model, bundle, cases, atol=1e-5, rtol=1e-4)
    # A strided window whose pads change with the size (auto_pad SAME).
    same = os.path.join(a.work, "cnn_same.onnx")
    make_cnn(same, "N", "H", "W", same_pads=True)
    refused = os.path.join(a.work, "cnn_same.ingot")
    if os.path.exists(refused):
        os.remove(refused)
    p = compile_bundle(a, same, refused, ["x=1x3x16..64x16..64"], expect_fail=True)
    ok &= expect_error(p, "auto_pad SAME with a stride", ["node 'Conv_3' (Conv)", "auto_pad SAME"])
    if os.path.exists(refused):
        print("  a refused compile left an output file")
        ok = False
    p = run([a.ingot, "check", same, "--input-shape", "x=1x3x16..64x16..64"])
    good = p.returncode == 1 and "node 'Conv_3' (Conv): auto_pad SAME with a stride" in p.stdout
    print(f"ingot check reports the Conv: {'ok' if good else 'WRONG: ' + p.stdout.strip()}")
    ok &= good
    return ok


def pool(a):
    """Means over a ranged dim (mean pooling of a sequence): ReduceMean keeping
    the dim (then centred), and over the ranged and a fixed dim together."""
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "S", 8])
    outs = [helper.make_tensor_value_info("centred", TensorProto.FLOAT, [1, "S", 8]),
            helper.make_tensor_value_info("mean_all", TensorProto.FLOAT, [1])]
    g = helper.make_graph([
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[1], keepdims=1),
        helper.make_node("Sub", ["x", "m"], ["centred"]),
        helper.make_node("ReduceMean", ["x"], ["mean_all"], axes=[1, 2], keepdims=0),
    ], "pool", [x], outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    model = os.path.join(a.work, "pool.onnx")
    onnx.save(m, model)
    bundle = os.path.join(a.work, "pool.ingot")
    compile_bundle(a, model, bundle, ["x=1x1..9x8"])
    rng = np.random.default_rng(9)
    cases = [(f"rows{n}", {"x": rng.standard_normal((1, n, 8)).astype(np.float32)}) for n in (1, 5, 9)]
    return check_sizes(a, model, bundle, cases, atol=1e-5, rtol=1e-5)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", choices=["bert", "cnn", "pool"])
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--target", default=None)
    ap.add_argument("--sizes", type=int, nargs="+", default=[7, 64, 128])
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    ok = {"bert": bert, "cnn": cnn, "pool": pool}[a.case](a)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
