#!/usr/bin/env python3
"""The checks tests/gpu/run.sh runs on a machine with an NVIDIA GPU.

  gpu_check.py --ingot BUILD/ingot --work DIR [--cpu-target llvm|c]
               [--gpu-arch sm_90] [--bench N] [--skip-large]

1. The device: name, compute capability, SMs, clocks and bus width read from
   the driver (libcuda.so.1 through ctypes), hence its peak memory bandwidth
   (2 x memory clock x bus width) and fp32 peak (SMs x fp32 lanes per SM x 2
   x clock; the lanes from target/target_gpus.def, the row of the highest
   architecture the device runs). Where the driver does not say, the row's
   reference figures are used, and the line says so.
2. The end-to-end models (those tests/e2e and tests/models check on the CPU:
   digits, resnet18_small, mobilenetv2_small, packed_cases, bert_small, and
   the full ResNet-50 and BERT-base that bench/ times), generated here with
   models/make_*.py, each compiled once with
   `--target cuda -arch=SM --target CPU` and run with `ingot run --device
   cuda` against ONNX Runtime's CPU provider; the small ones also with
   `--device cpu`. ResNet-50 and BERT-base are then timed (`--bench N`).
3. A large elementwise Add (2^26 floats a side) and a large fp32 MatMul
   (4096^3), each checked against numpy and timed per step (`--profile`):
   the fraction of the peak bandwidth and of the fp32 peak they reach.

Exit 0 when every output matches (|ingot - reference| <= atol + rtol *
|reference|, INGOT_GPU_ATOL / INGOT_GPU_RTOL, default 1e-3 each) and every
step ran; 1 otherwise. Needs numpy, onnx and onnxruntime.
"""
import argparse
import ctypes
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ATOL = float(os.environ.get("INGOT_GPU_ATOL", "1e-3"))
RTOL = float(os.environ.get("INGOT_GPU_RTOL", "1e-3"))
T0 = time.monotonic()
failures = []


def say(text):
    print(f"[{time.monotonic() - T0:6.1f}s] {text}", flush=True)


def fail(text):
    failures.append(text)
    say(f"FAIL: {text}")


# ---- The device and the table. -------------------------------------------

def gpu_rows():
    """The CUDA rows of target/target_gpus.def: {number: fields}."""
    rows = {}
    pat = re.compile(r'^INGOT_TARGET_GPU\((\w+),\s*CUDA,\s*"(\w+)",\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+),\s*'
                     r'(\d+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d),\s*"([^"]*)"\)')
    with open(os.path.join(ROOT, "target", "target_gpus.def")) as f:
        for line in f:
            m = pat.match(line.strip())
            if m:
                rows[int(m.group(3))] = {"arch": m.group(2), "units": int(m.group(7)), "lanes": int(m.group(8)),
                                         "gflops": int(m.group(9)), "gbps": int(m.group(10)),
                                         "reference": m.group(12)}
    return rows


def device_facts():
    """What the driver says of device 0 (None when it cannot be asked)."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        say(f"libcuda.so.1: {e}")
        return None
    if cu.cuInit(0) != 0:
        return None
    dev = ctypes.c_int()
    if cu.cuDeviceGet(ctypes.byref(dev), 0) != 0:
        return None

    def attr(n):
        v = ctypes.c_int()
        return v.value if cu.cuDeviceGetAttribute(ctypes.byref(v), n, dev) == 0 else 0

    name = ctypes.create_string_buffer(128)
    cu.cuDeviceGetName(name, 127, dev)
    # CUdevice_attribute: 16 SMs, 13 clock (kHz), 36 memory clock (kHz),
    # 37 bus width (bits), 75/76 compute capability.
    return {"name": name.value.decode(errors="replace"), "sm": attr(75) * 10 + attr(76), "sms": attr(16),
            "clock_khz": attr(13), "mem_khz": attr(36), "bus_bits": attr(37)}


def peaks(facts, rows):
    """(arch row, peak GB/s, peak fp32 GFLOP/s, where they come from)."""
    sm = facts["sm"] if facts else 90
    runs = [n for n in rows if n <= sm]
    row = rows[max(runs)] if runs else rows[min(rows)]
    if facts and facts["mem_khz"] and facts["bus_bits"] and facts["sms"] and facts["clock_khz"]:
        gbps = 2.0 * facts["mem_khz"] * 1e3 * facts["bus_bits"] / 8 / 1e9
        gflops = facts["sms"] * row["lanes"] * 2.0 * facts["clock_khz"] * 1e3 / 1e9
        return row, gbps, gflops, (f"driver: {facts['sms']} SMs x {row['lanes']} fp32 lanes ({row['arch']} row) "
                                   f"x 2 x {facts['clock_khz'] / 1e3:.0f} MHz; 2 x {facts['mem_khz'] / 1e3:.0f} MHz "
                                   f"x {facts['bus_bits']} bits")
    return row, float(row["gbps"]), float(row["gflops"]), f"target_gpus.def row {row['arch']} ({row['reference']})"


# ---- Running ingot. ------------------------------------------------------

def run(cmd, what, timeout=600):
    t = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    dt = time.monotonic() - t
    if p.returncode != 0:
        fail(f"{what}: exit {p.returncode} after {dt:.1f}s: {' '.join(cmd)}\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
        return None, dt
    return p, dt


def npz_name(name):
    return "".join("_" if (c in "/\\" or ord(c) < 0x20 or ord(c) == 0x7F) else c for c in name)


def compare(what, names, refs, npz_path):
    ok = True
    with np.load(npz_path) as got_all:
        for name, want in zip(names, refs):
            key = npz_name(name)
            if key not in got_all.files:
                fail(f"{what}: output '{name}' missing")
                ok = False
                continue
            got = got_all[key]
            if got.shape != want.shape or got.dtype != want.dtype:
                fail(f"{what}: output '{name}' is {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}")
                ok = False
                continue
            if want.dtype.kind not in "fc":
                if not np.array_equal(got, want):
                    fail(f"{what}: output '{name}' differs")
                    ok = False
                continue
            g, w = got.astype(np.float64), want.astype(np.float64)
            diff = np.abs(g - w)
            bad = ~(diff <= ATOL + RTOL * np.abs(w))
            max_abs = float(np.nanmax(diff)) if diff.size else 0.0
            say(f"  {what} {name}: max abs err {max_abs:.3g}, {int(bad.sum())} of {w.size} outside "
                f"atol {ATOL:g} + rtol {RTOL:g}")
            if bad.any():
                idx = np.unravel_index(int(np.argmax(np.where(bad, diff, -1))), w.shape)
                fail(f"{what}: output '{name}' MISMATCH, worst at {tuple(int(i) for i in idx)}: "
                     f"ingot {got[idx]!r}, reference {want[idx]!r}")
                ok = False
    return ok


LATENCY = re.compile(r"latency: min ([0-9.]+) ms, median ([0-9.]+) ms")
PROFILE = re.compile(r"profile: (\d+) steps, ([0-9.]+) ms per run in steps")


# ---- The models. -----------------------------------------------------------

def make_models(python, out, large):
    os.makedirs(out, exist_ok=True)
    jobs = [
        (["resnet18_small.onnx", "mobilenetv2_small.onnx"],
         [python, os.path.join(ROOT, "models", "make_cnn_zoo.py"), "--out", out, "--model", "all", "--size", "small"]),
        (["resnet50.onnx"],
         [python, os.path.join(ROOT, "models", "make_cnn_zoo.py"), "--out", out, "--model", "resnet50"]),
        (["bert_small.onnx", "bert_base.onnx"],
         [python, os.path.join(ROOT, "models", "make_bert.py"), "--out", out, "--size", "all"]),
        (["bert_small.onnx"],
         [python, os.path.join(ROOT, "models", "make_bert.py"), "--out", out, "--size", "small"]),
        (["packed_cases.onnx"],
         [python, os.path.join(ROOT, "models", "make_packed_cases.py"), "--out", out]),
    ]
    for files, cmd in jobs:
        if not large and ("resnet50.onnx" in files or "bert_base.onnx" in files):
            continue
        if all(os.path.exists(os.path.join(out, f)) for f in files):
            continue
        run(cmd, f"make {', '.join(files)}")


def model_inputs(sess, model_path, rng):
    """Seeded inputs as compare.py makes them; BERT's from its sample folder."""
    folder = model_path[:-len(".onnx")] + "_inputs"
    feeds = {}
    for inp in sess.get_inputs():
        sample = os.path.join(folder, inp.name + ".npy")
        if os.path.exists(sample):
            feeds[inp.name] = np.load(sample)
            continue
        shape = [d if isinstance(d, int) and d >= 0 else 1 for d in inp.shape]
        if inp.type == "tensor(float)":
            feeds[inp.name] = rng.standard_normal(shape).astype(np.float32)
        elif inp.type == "tensor(int64)":
            feeds[inp.name] = rng.integers(0, 10, size=shape).astype(np.int64)
        else:
            raise SystemExit(f"gpu_check.py: {model_path}: input '{inp.name}' of type {inp.type}")
    return feeds


def check_model(args, model_path, bench):
    import onnxruntime as ort
    name = os.path.basename(model_path)[:-len(".onnx")]
    if name == "model":  # models/digits/model.onnx
        name = os.path.basename(os.path.dirname(model_path))
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    so = ort.SessionOptions()
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    feeds = model_inputs(sess, model_path, np.random.default_rng(0))
    shape_flags, input_flags = [], []
    declared = {inp.name: inp.shape for inp in sess.get_inputs()}
    for i, (k, v) in enumerate(feeds.items()):
        path = os.path.join(work, f"input{i}.npy")
        np.save(path, np.ascontiguousarray(v))
        input_flags += ["--input", f"{k}={path}"]
        if list(declared[k]) != list(v.shape):  # symbolic dimensions, fixed as the data has them
            shape_flags += ["--input-shape", f"{k}={'x'.join(str(d) for d in v.shape)}"]
    t = time.monotonic()
    refs = sess.run(None, feeds)
    ort_ms = (time.monotonic() - t) * 1e3
    names = [o.name for o in sess.get_outputs()]

    bundle = os.path.join(work, "model.ingot")
    p, compile_s = run([args.ingot, "compile", model_path, "-o", bundle, *shape_flags, *args.gpu_targets,
                        "--target", args.cpu_target, "-q"], f"{name}: compile")
    if p is None:
        return None
    out = os.path.join(work, "cuda.npz")
    p, run_s = run([args.ingot, "run", bundle, "--device", args.device, "-v", *input_flags, "--output", out],
                   f"{name}: run --device {args.device}")
    if p is None:
        return None
    notes = p.stderr.splitlines()
    reason = "; ".join(line.replace("ingot: note: ", "") for line in notes
                       if "code variant:" in line or "cuda:" in line)
    say(f"{name}: compile {compile_s:.1f}s, run {run_s:.1f}s (process); {reason[:150]}")
    compare(f"{name} {args.device}", names, refs, out)
    if not bench and args.device == "cpu":
        return None
    if not bench and args.device != "cpu":
        out = os.path.join(work, "cpu.npz")
        if run([args.ingot, "run", bundle, "--device", "cpu", *input_flags, "--output", out],
               f"{name}: run --device cpu")[0]:
            compare(f"{name} cpu", names, refs, out)
        return None
    p, _ = run([args.ingot, "run", bundle, "--device", args.device, *input_flags, "--bench", str(bench)],
               f"{name}: bench")
    m = LATENCY.search(p.stdout) if p else None
    if not m:
        if p:
            fail(f"{name}: no latency line in: {p.stdout[-500:]}")
        return None
    # ONNX Runtime on this machine's CPU, for scale (the median of 5 runs).
    times = []
    for _ in range(5):
        t = time.monotonic()
        sess.run(None, feeds)
        times.append((time.monotonic() - t) * 1e3)
    return {"model": name, "min_ms": float(m.group(1)), "median_ms": float(m.group(2)),
            "ort_cpu_ms": sorted(times)[2], "first_ort_ms": ort_ms}


# ---- Roofline probes: one large elementwise op, one large GEMM. -------------

def write_model(path, nodes, inputs, outputs):
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(nodes, os.path.basename(path),
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def probe(args, name, nodes, inputs, outputs, data, reference, bench):
    """Compiles and checks a one-node model; the step's ms per run."""
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, f"{name}.onnx")
    write_model(model, nodes, inputs, outputs)
    flags = []
    for (n, _), arr in zip(inputs, data):
        path = os.path.join(work, f"{n}.npy")
        np.save(path, arr)
        flags += ["--input", f"{n}={path}"]
    bundle = os.path.join(work, f"{name}.ingot")
    if run([args.ingot, "compile", model, "-o", bundle, *args.gpu_targets, "-q"], f"{name}: compile")[0] is None:
        return None
    out = os.path.join(work, "out.npz")
    if run([args.ingot, "run", bundle, "--device", args.device, *flags, "--output", out],
           f"{name}: run")[0] is None:
        return None
    compare(name, [outputs[0][0]], [reference], out)
    p, _ = run([args.ingot, "run", bundle, "--device", args.device, *flags, "--bench", str(bench), "--profile"],
               f"{name}: bench")
    m = PROFILE.search(p.stdout) if p else None
    if not m:
        if p:
            fail(f"{name}: no profile line in: {p.stdout[-500:]}")
        return None
    return float(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--python", default=sys.executable, help="runs models/make_*.py")
    ap.add_argument("--cpu-target", default="llvm")
    ap.add_argument("--gpu-arch", default=None, help="default: the table's highest sm the device runs")
    ap.add_argument("--bench", type=int, default=20)
    ap.add_argument("--skip-large", action="store_true", help="no ResNet-50, BERT-base or roofline probes")
    ap.add_argument("--dry-run-cpu", action="store_true",
                    help="for testing this script without a GPU: the CPU target in place of cuda, --device cpu")
    args = ap.parse_args()
    args.ingot = os.path.abspath(args.ingot)
    os.makedirs(args.work, exist_ok=True)

    rows = gpu_rows()
    facts = device_facts()
    row, peak_gbps, peak_gflops, source = peaks(facts, rows)
    args.gpu_arch = args.gpu_arch or row["arch"]
    args.gpu_targets = ["--target", "cuda", f"-arch={args.gpu_arch}"]
    args.device = "cuda"
    if args.dry_run_cpu:
        args.gpu_targets, args.device = ["--target", "c"], "cpu"
        say("dry run: target c and --device cpu in place of cuda")
    if facts:
        say(f"device: {facts['name']}, sm_{facts['sm']}; compiling for {args.gpu_arch} + {args.cpu_target}")
    else:
        say(f"device: the driver could not be asked; compiling for {args.gpu_arch} + {args.cpu_target}")
    say(f"peaks: {peak_gbps:.0f} GB/s, {peak_gflops / 1e3:.1f} TFLOP/s fp32 ({source})")

    models = os.path.join(args.work, "models")
    make_models(args.python, models, not args.skip_large)
    small = [os.path.join(ROOT, "models", "digits", "model.onnx")] + \
        [os.path.join(models, f) for f in ("resnet18_small.onnx", "mobilenetv2_small.onnx", "packed_cases.onnx",
                                           "bert_small.onnx")]
    for path in small:
        if os.path.exists(path):
            check_model(args, path, 0)
        else:
            fail(f"{path} was not made")
    results = []
    if not args.skip_large:
        for f in ("resnet50.onnx", "bert_base.onnx"):
            path = os.path.join(models, f)
            r = check_model(args, path, args.bench) if os.path.exists(path) else fail(f"{path} was not made")
            if r:
                results.append(r)

        rng = np.random.default_rng(1)
        n = 1 << 26
        a = rng.random(n, dtype=np.float32)
        b = rng.random(n, dtype=np.float32)
        from onnx import helper
        ms = probe(args, "add_2p26", [helper.make_node("Add", ["a", "b"], ["y"])], [("a", [n]), ("b", [n])],
                   [("y", [n])], [a, b], a + b, 10)
        del a, b
        k = 4096
        x = (rng.random((k, k), dtype=np.float32) - 0.5)
        w = (rng.random((k, k), dtype=np.float32) - 0.5)
        ref = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
        gemm_ms = probe(args, "matmul_4096", [helper.make_node("MatMul", ["x", "w"], ["y"])],
                        [("x", [k, k]), ("w", [k, k])], [("y", [k, k])], [x, w], ref, 5)
        print()
        print("== results on the GPU ==")
        for r in results:
            print(f"{r['model']:12s} latency min {r['min_ms']:.3f} ms, median {r['median_ms']:.3f} ms "
                  f"(--bench {args.bench}, inputs and outputs copied); ONNX Runtime CPU {r['ort_cpu_ms']:.1f} ms")
        if ms:
            gbps = 3.0 * n * 4 / (ms * 1e-3) / 1e9
            print(f"elementwise  Add of 2^26 floats: {ms:.3f} ms, {gbps:.0f} GB/s = {100 * gbps / peak_gbps:.1f} % "
                  f"of {peak_gbps:.0f} GB/s")
        if gemm_ms:
            gflops = 2.0 * k ** 3 / (gemm_ms * 1e-3) / 1e9
            print(f"gemm         MatMul 4096^3 fp32: {gemm_ms:.3f} ms, {gflops / 1e3:.2f} TFLOP/s = "
                  f"{100 * gflops / peak_gflops:.1f} % of {peak_gflops / 1e3:.1f} TFLOP/s")
    print(f"total {time.monotonic() - T0:.0f} s; {len(failures)} failure(s)")
    for f in failures:
        print("  " + f.splitlines()[0])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
