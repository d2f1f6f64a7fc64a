"""Runs an int8 bundle and compares its uint8 outputs with ONNX Runtime on
the same QDQ file, for the e2e tests that build such models
(words_last_test.py, patches_test.py), and every pair of bytes with
onnx.reference's outputs on them (qdq_fused_test.py, qadd_rescale_test.py).

An output may differ by one step where the requantization's float32 product
is within an ulp of a half: allowed in at most 0.1 % of its elements, none
by more."""
import os
import re
import subprocess
import sys

import numpy as np


def save_model(nodes, name, inputs, outputs, inits, path):
    """A checked opset 21 model of these graph parts, saved at `path`."""
    import onnx
    from onnx import helper
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    onnx.save(model, path)


def byte_pairs_reference(model, names, work):
    """Every pair of uint8 values once, a and b [256, 256] (a[i, j] = i,
    b[i, j] = j), saved as a.npy and b.npy under `work`; returns them and
    onnx.reference's outputs of `model` on them, by the names `names`."""
    a, b = np.meshgrid(np.arange(256, dtype=np.uint8), np.arange(256, dtype=np.uint8), indexing="ij")
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    np.save(os.path.join(work, "a.npy"), a)
    np.save(os.path.join(work, "b.npy"), b)

    from onnx.reference import ReferenceEvaluator
    return a, b, dict(zip(names, ReferenceEvaluator(model).run(None, {"a": a, "b": b})))


def compile_kernels(ingot, model_path, bundle, target):
    """Compiles with the schedule defaults; returns (node, workload) of each
    kernel from --dump-schedule. Exits on a failed compile."""
    r = subprocess.run([ingot, "compile", model_path, "-o", bundle, "--target", target, "--tuning-log", "none", "-q",
                        "--dump-schedule"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"compile for {target} failed: {r.stderr.strip()}")
    return re.findall(r"^kernel \S+ \(node '([^']*)', target '[^']*', workload '([^']*)'", r.stdout, re.M)


def check(ingot, bundle, model_path, feeds, work, label=lambda name: ""):
    """Runs `bundle` on `feeds` (name -> float32 array, saved under `work`)
    and returns the failures (strings) against ONNX Runtime; prints a line
    per output, `label(name)` beside its name. Exits on a failed run."""
    cmd = [ingot, "run", bundle, "--output", os.path.join(work, "out.npz")]
    for name, v in feeds.items():
        np.save(os.path.join(work, f"{name}.npy"), v)
        cmd += ["--input", f"{name}={work}/{name}.npy"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"run failed: {r.stderr.strip()}")
    got = np.load(os.path.join(work, "out.npz"))

    import onnxruntime as ort
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ref = dict(zip(names, sess.run(None, feeds)))
    failures = []
    for name in names:
        a = got[f"{name}.npy" if f"{name}.npy" in got.files else name].astype(int)
        d = np.abs(a - ref[name].astype(int))
        n = int(np.count_nonzero(d))
        print(f"{name}{label(name)}: {n} of {d.size} outputs differ from ONNX Runtime (max {int(d.max())} steps)")
        if d.max() > 1 or n > d.size // 1000:
            failures.append(f"{name}: {n} outputs differ, max {int(d.max())} steps")
    return failures
