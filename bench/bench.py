#!/usr/bin/env python3
"""Side by side on this machine: Ingot, ONNX Runtime (and Apache TVM where it
is installed), the machine's FMA peak, and GEMM / conv throughput as a
fraction of that peak.

Not a test: nothing here asserts a speed (CTest only runs `--quick` to check
that the tables print).

1. Models (ResNet-18, ResNet-50, MobileNetV2, SqueezeNet 1.1 from
   models/make_cnn_zoo.py; a BERT-base encoder, sequence 128, from
   models/make_bert.py with its realistic token ids and padding mask).
   Each is compiled once (`ingot compile`, timed). For each thread count the
   engines run in interleaved rounds on the same inputs: a round is Ingot
   (`ingot run --bench RUNS`, one warm-up then RUNS timed runs), then ONNX
   Runtime (one warm run, RUNS timed runs, intra-op threads = T), then TVM.
   A row reports the median over rounds of each round's median, and the
   ratio ingot / ort as the median of the per-round ratios with their spread
   (lowest-highest round, and the quartiles): the machine's speed jumps
   between levels for seconds to minutes, and a ratio taken within one round
   is what both engines saw at one level. A spread that crosses 1.0 is
   flagged: that row cannot say which engine is faster.
2. FMA peak: bench/fma_peak.c, built now with the system cc and
   -march=native: independent FMA chains on the widest vector type, on one
   core and on every core (pthreads).
1b. int8 models (--int8-models; default ResNet-50 and MobileNetV2 through
   quantize_static, QDQ per channel, and BERT-base through quantize_dynamic,
   all made by models/make_quant_zoo.py): Ingot and ONNX Runtime running the
   same quantized file, and both on the float model it came from, in the
   same interleaved rounds; the table gives ingot / ort on int8 and each
   engine's int8 / fp32 with the spread over rounds. --target chooses the
   code (e.g. 'llvm -mcpu=znver4' for the VNNI dot-product instructions).
3. Kernels: single-op ONNX models (MatMul 1024^3 and BERT's shapes, with the
   weight as an initializer; ResNet convolutions, the three CNN stems and
   MobileNetV2 depthwise convolutions) through `ingot compile` / `ingot run
   --bench` and ONNX Runtime; GFLOP/s and the fraction of the peak for the
   same thread count, and GB/s (the op's least traffic over its time) with
   the fraction of this machine's copy bandwidth at the same working-set
   size: the bound of the memory-bound stems and depthwise convolutions.

  python bench/bench.py                                  # everything, 1 and 2 threads
  python bench/bench.py --models resnet18 bert_base --threads 2 --rounds 3
  python bench/bench.py --target x86-64-v3 --target x86-64-v4    # a variant bundle
  python bench/bench.py --quick                          # small sizes: a smoke test
  python bench/bench.py --defaults                       # pre-tuned logs vs the schedule defaults
  python bench/bench.py --models --no-kernels --target 'llvm -mcpu=znver4'   # int8 rows only, VNNI
  python bench/bench.py --quick --models --no-kernels --rounds 1             # int8 rows, small models

TVM's column needs `pip install apache-tvm==0.27.0.post1` in the python that
runs this script; it is built with the default relax pipeline for
llvm -mcpu=<host cpu> (no MetaSchedule tuning) and run on the relax VM.
"""
import argparse
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

# ONNX Runtime's worker threads keep spinning for a while after a run; let
# them settle before timing Ingot so that the engine timed next is not
# charged for the other's spinning threads.
SETTLE_S = 0.3

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CNNS = ["resnet18", "resnet50", "mobilenetv2", "squeezenet1_1"]
ALL_MODELS = CNNS + ["bert_base"]
QUICK_MODELS = ["resnet18_small", "squeezenet1_1_small", "bert_small"]
# int8 models from models/make_quant_zoo.py (NAME_qdq_pc: quantize_static QDQ
# per channel, uint8 activations, int8 weights; NAME_dyn: quantize_dynamic),
# each beside the float model it was made from
INT8_MODELS = ["resnet50_qdq_pc", "mobilenetv2_qdq_pc", "bert_base_dyn"]
QUICK_INT8_MODELS = ["resnet18_small_qdq_pc", "mobilenetv2_small_qdq_pc", "bert_small_dyn"]
# The real models' int8 forms (models/make_quant_zoo.py --set real, which
# fetches the float models first) and the input shapes they are timed at: the
# detector on the test page's first quarter, the classifier on a text line,
# Silero VAD on 16 chunks; random inputs except the page.
REAL_INT8_SHAPES = {"ppocr_det": {"x": (1, 3, 160, 320)}, "ppocr_cls": {"x": (1, 3, 48, 192)},
                    "silero_vad": {"input": (16, 576), "h": (1, 1, 128), "c": (1, 1, 128)}}
REAL_INT8_MODELS = ["ppocr_det_qdq_pc", "ppocr_cls_qdq_pc", "silero_vad_dyn"]

# (name, M, K, N)
GEMMS = [("gemm 1024x1024x1024", 1024, 1024, 1024),
         ("bert qkv/out 128x768x768", 128, 768, 768),
         ("bert ffn1 128x768x3072", 128, 768, 3072),
         ("bert ffn2 128x3072x768", 128, 3072, 768)]
QUICK_GEMMS = [("gemm 64x64x64", 64, 64, 64)]
# (name, cin, cout, k, stride, hw[, groups, pad]); groups == cin: depthwise
CONVS = [("resnet stem 7x7/2 3->64 @224", 3, 64, 7, 2, 224),
         ("squeezenet stem 3x3/2 3->64 @224", 3, 64, 3, 2, 224, 1, 0),
         ("mobilenetv2 stem 3x3/2 3->32 @224", 3, 32, 3, 2, 224),
         ("resnet18 3x3 64->64 @56", 64, 64, 3, 1, 56),
         ("resnet50 1x1 256->64 @56", 256, 64, 1, 1, 56),
         ("resnet50 3x3/2 128->128 @56", 128, 128, 3, 2, 56),
         ("resnet50 3x3 256->256 @14", 256, 256, 3, 1, 14),
         ("mobilenetv2 dw 3x3 32 @112", 32, 32, 3, 1, 112, 32),
         ("mobilenetv2 dw 3x3/2 144 @56", 144, 144, 3, 2, 56, 144),
         ("mobilenetv2 dw 3x3 384 @14", 384, 384, 3, 1, 14, 384)]
QUICK_CONVS = [("conv 3x3 8->8 @16", 8, 8, 3, 1, 16), ("dw 3x3 8 @16", 8, 8, 3, 1, 16, 8)]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- models

def make_zoo_model(name, work):
    path = os.path.join(work, name + ".onnx")
    if not os.path.exists(path):
        base, small = (name[:-6], "small") if name.endswith("_small") else (name, "full")
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "make_cnn_zoo.py"),
                        "--out", work, "--model", base, "--size", small],
                       check=True, stdout=subprocess.DEVNULL)
    return path


def make_bert_model(name, work):
    size = name.split("_", 1)[1]
    path = os.path.join(work, f"bert_{size}.onnx")
    folder = os.path.join(work, f"bert_{size}_inputs")
    if not os.path.exists(path) or not os.path.isdir(folder):
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "make_bert.py"),
                        "--out", work, "--size", size], check=True, stdout=subprocess.DEVNULL)
    feeds = {n: np.load(os.path.join(folder, n + ".npy"))
             for n in ("input_ids", "attention_mask", "token_type_ids")}
    return path, feeds


def model_and_feeds(name, work):
    """(onnx path, {input name: array}): the same arrays go to every engine."""
    if name.startswith("bert_"):
        return make_bert_model(name, work)
    shapes = REAL_INT8_SHAPES.get(name, {})
    path = os.path.join(work, name + ".onnx") if shapes else make_zoo_model(name, work)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.standard_normal(shapes.get(i.name) or [d if isinstance(d, int) else 1 for d in i.shape])
             .astype(np.float32) for i in sess.get_inputs()}
    page = os.path.join(work, "ppocr_det_x.npy")  # written by make_quant_zoo.py --set real
    if name == "ppocr_det" and os.path.exists(page):
        feeds["x"] = np.load(page)
    return path, feeds


def int8_float_name(name):
    """resnet50_qdq_pc -> resnet50, bert_base_dyn -> bert_base."""
    return re.sub(r"_(qdq_pc|qdq_pt|qop_pc|qop_pt|dyn)$", "", name)


def make_int8_model(name, work):
    """(int8 onnx path, float onnx path, feeds): the int8 model made by
    models/make_quant_zoo.py in `work` (the full-size ones with --set bench,
    the small ones with --set zoo), fed the float model's inputs."""
    fname = int8_float_name(name)
    if fname == name:  # else the float model's file would stand in for the int8 one
        raise RuntimeError(f"'{name}' is no int8 model name (NAME_qdq_pc, _qdq_pt, _qop_pc, _qop_pt or _dyn, "
                           f"e.g. {', '.join(INT8_MODELS)})")
    path = os.path.join(work, name + ".onnx")
    if not os.path.exists(path):
        which = "bench" if name in INT8_MODELS else "real" if fname in REAL_INT8_SHAPES else "zoo"
        r = subprocess.run([sys.executable, os.path.join(ROOT, "models", "make_quant_zoo.py"), "--out", work,
                            "--set", which, "--only", name], capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(path):
            raise RuntimeError(f"make_quant_zoo.py --only {name}: {(r.stderr or r.stdout).strip()[-300:]}")
    fpath, feeds = model_and_feeds(fname, work)  # after: --set real writes the float model too
    return path, fpath, feeds


def model_flops(path, feeds):
    """Floating-point operations of one run (2 per multiply-add) of the
    model's Conv, Gemm and MatMul nodes, from ONNX shape inference with the
    inputs fixed to the feeds' shapes (an axis it cannot settle counts 1: the
    benchmark's batch); None when a node has no shape at all. Elementwise
    work is left out: with the FMA peak this gives a bound, not a
    prediction."""
    m = onnx.load(path, load_external_data=False)
    for i in m.graph.input:
        if i.name in feeds:
            dims = i.type.tensor_type.shape.dim
            for d, n in zip(dims, feeds[i.name].shape):
                d.ClearField("dim_param")
                d.dim_value = int(n)
    m = onnx.shape_inference.infer_shapes(m, data_prop=True)  # Reshape targets computed from shapes
    shapes = {}
    for v in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        dims = [d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim]
        shapes[v.name] = dims
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    total = 0
    for n in m.graph.node:
        if n.op_type not in ("Conv", "Gemm", "MatMul"):
            continue
        y, a, b = shapes.get(n.output[0]), shapes.get(n.input[0]), shapes.get(n.input[1])
        if not y or not a or not b:
            return None
        # ONNX's inference can lose a batch axis that an exporter's shape
        # arithmetic rebuilds; the benchmark runs batch 1.
        y, a, b = ([1 if d is None else d for d in v] for v in (y, a, b))
        out = int(np.prod(y))
        if n.op_type == "Conv":
            total += 2 * out * int(np.prod(b[1:]))  # C/group x kernel taps per output
        elif n.op_type == "Gemm":
            trans_a = any(x.name == "transA" and x.i for x in n.attribute)
            total += 2 * out * (a[0] if trans_a else a[1])
        else:
            total += 2 * out * a[-1]
    return total


def save_feeds(feeds, work, stem):
    args = []
    for n, x in feeds.items():
        p = os.path.join(work, f"{stem}_{n}.npy")
        np.save(p, x)
        args += ["--input", f"{n}={p}"]
    return args


def single_op_model(path, node, inputs, outputs, inits):
    g = helper.make_graph([node], "k", inputs, outputs, initializer=inits)
    m = helper.make_model(g, producer_name="ingot-bench", opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def make_gemm(work, m, k, n):
    path = os.path.join(work, f"gemm_{m}x{k}x{n}.onnx")
    rng = np.random.default_rng(m * 7 + k * 3 + n)
    if not os.path.exists(path):
        w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
        single_op_model(path, helper.make_node("MatMul", ["a", "w"], ["y"]),
                        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                        [numpy_helper.from_array(w, "w")])
    return path, {"a": rng.standard_normal((m, k)).astype(np.float32)}, 2.0 * m * k * n


def make_conv(work, cin, cout, k, stride, hw, groups=1, pad=None):
    """A one-Conv model; returns (path, feeds, flops, bytes): bytes is the
    least memory traffic of the op (input, weights and output once)."""
    pad = k // 2 if pad is None else pad
    path = os.path.join(work, f"conv_{cin}_{cout}_{k}_{stride}_{hw}_g{groups}_p{pad}.onnx")
    rng = np.random.default_rng(cin * 31 + cout * 7 + k + stride + hw)
    ho = (hw + 2 * pad - k) // stride + 1
    cg = cin // groups
    if not os.path.exists(path):
        w = (rng.standard_normal((cout, cg, k, k)) * np.sqrt(2.0 / (cg * k * k))).astype(np.float32)
        b = (rng.standard_normal(cout) * 0.01).astype(np.float32)
        node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k], group=groups,
                                strides=[stride, stride], pads=[pad] * 4)
        single_op_model(path, node,
                        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, hw, hw])],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, ho, ho])],
                        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    x = rng.standard_normal((1, cin, hw, hw)).astype(np.float32)
    nbytes = 4 * (cin * hw * hw + cout * cg * k * k + cout + cout * ho * ho)
    return path, {"x": x}, 2.0 * cout * ho * ho * cg * k * k, nbytes


def copy_bandwidth(nbytes, seconds=0.2):
    """Bytes a second this machine moves reading and writing a working set
    of `nbytes` (half read, half written: numpy's copy of nbytes / 2, best
    of repeated copies for about `seconds`): the memory limit a kernel that
    must read its input and write its output once is held to, at its size
    (in-cache sets copy faster than ones from DRAM)."""
    n = max(1024, int(nbytes) // 8)  # float32 elements in each half
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    best = float("inf")
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * 4 * n / best


# ---------------------------------------------------------------- engines

class Ingot:
    def __init__(self, exe, targets, extra=()):
        self.exe = exe
        self.targets = targets
        self.extra = list(extra)

    def compile(self, model, bundle, feeds):
        cmd = [self.exe, "compile", model, "-o", bundle, "-q", *self.extra]
        for t in self.targets:
            cmd += ["--target", t]
        for n, x in feeds.items():
            cmd += ["--input-shape", f"{n}={'x'.join(str(d) for d in x.shape)}"]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            raise RuntimeError((r.stderr or r.stdout).strip().splitlines()[-1:] or ["compile failed"])
        return dt

    def round(self, bundle, input_args, threads, runs):
        r = subprocess.run([self.exe, "run", bundle, *input_args, "--threads", str(threads),
                            "--bench", str(runs)], capture_output=True, text=True)
        m = re.search(r"min ([0-9.]+) ms, median ([0-9.]+) ms", r.stdout + r.stderr)
        if r.returncode != 0 or not m:
            raise RuntimeError(f"ingot run failed: {(r.stderr or r.stdout).strip()[-300:]}")
        return float(m.group(2))

    def outputs(self, bundle, input_args, npz):
        """The bundle's outputs on those inputs, one run: {name: array}."""
        r = subprocess.run([self.exe, "run", bundle, *input_args, "--output", npz], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"ingot run failed: {(r.stderr or r.stdout).strip()[-300:]}")
        with np.load(npz) as z:
            return {k: z[k] for k in z.files}

    def loaded_target(self, bundle):
        r = subprocess.run([self.exe, "inspect", bundle, "--json"], capture_output=True, text=True)
        m = re.search(r'"loaded_target"\s*:\s*"([^"]*)"', r.stdout)
        return m.group(1) if m else "?"


def ort_session(model, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def timed_median(fn, runs):
    fn()  # warm
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


class Tvm:
    """Apache TVM through relax: ONNX frontend, default pipeline, relax VM."""

    def __init__(self):
        self.why = None
        try:
            import tvm  # noqa: F401
            from tvm import relax  # noqa: F401
            from tvm.relax.frontend.onnx import from_onnx  # noqa: F401
        except Exception as e:  # ImportError, or a broken install
            self.why = (f"apache-tvm not importable in {sys.executable} ({type(e).__name__}: "
                        f"{str(e).splitlines()[0] if str(e) else ''}); "
                        "`pip install apache-tvm==0.27.0.post1` there to add the column")
            return
        import tvm
        from tvm.target import codegen
        self.tvm = tvm
        self.cpu = codegen.llvm_get_system_cpu()
        self.version = tvm.__version__
        self.config_threads = tvm.get_global_func("runtime.config_threadpool", allow_missing=True)
        self.threads = None

    def build(self, model, feeds):
        tvm = self.tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx
        m = onnx.load(model)
        mod = from_onnx(m, shape_dict={n: list(x.shape) for n, x in feeds.items()},
                        keep_params_in_input=False)
        target = tvm.target.Target({"kind": "llvm", "mcpu": self.cpu,
                                    "num-cores": os.cpu_count() or 1})
        t0 = time.perf_counter()
        ex = tvm.compile(mod, target=target)
        dt = time.perf_counter() - t0
        vm = relax.VirtualMachine(ex, tvm.cpu())
        make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
        args = [make(x) for x in feeds.values()]
        return (lambda: vm["main"](*args)), dt

    def set_threads(self, t):
        if self.config_threads is not None and self.threads != t:
            self.config_threads(1, t)  # mode 1: big cores; t threads
            self.threads = t


# ---------------------------------------------------------------- peak

def fma_peak(work, seconds):
    src = os.path.join(HERE, "fma_peak.c")
    exe = os.path.join(work, "fma_peak")
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        return None, "no C compiler"
    r = subprocess.run([cc, "-O2", "-march=native", "-std=c11", "-pthread", src, "-o", exe, "-lm"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"{cc} failed: {r.stderr.strip()[-300:]}"
    r = subprocess.run([exe, str(os.cpu_count() or 1), str(seconds)], capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"fma_peak failed: {r.stderr.strip()}"
    vals = dict(line.split(None, 1) for line in r.stdout.strip().splitlines())
    peak = {"isa": vals["isa"], "lanes": int(vals["lanes"]), "g1": float(vals["gflops_1"]),
            "gall": float(vals["gflops_all"]), "ncpu": int(vals["threads"]),
            "int8_isa": vals.get("int8_isa", "none").strip()}
    if "gops8_1" in vals:  # the int8 dot-product peak, where the machine has one
        peak["i1"], peak["iall"] = float(vals["gops8_1"]), float(vals["gops8_all"])
    return peak, None


def peak_for(peak, threads, one="g1", every="gall"):
    """The peak for a thread count: fp32 FMA (g1/gall), or the int8 dot
    product (one="i1", every="iall"); None where not measured."""
    if not peak or one not in peak:
        return None
    if threads <= 1:
        return peak[one]
    if threads >= peak["ncpu"]:
        return peak[every]
    return peak[one] * threads


# ---------------------------------------------------------------- main

def cpu_name():
    """The model name, with the family and model numbers (a VM may only say
    "AMD EPYC": family 25 is Zen 3/4, 26 Zen 5) and the widest vector and
    matrix extensions."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    k, v = (x.strip() for x in line.split(":", 1))
                    info.setdefault(k, v)
    except OSError:
        pass
    if "model name" not in info:
        return platform.processor() or platform.machine()
    flags = set(info.get("flags", "").split())
    isa = [x for x in ("avx512f", "amx_tile") if x in flags] or [x for x in ("avx2",) if x in flags]
    return (f"{info['model name']} (family {info.get('cpu family', '?')} model {info.get('model', '?')}"
            + (", " + " ".join(isa) if isa else "") + ")")


def fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def spread(ratios):
    """Per-round ratios -> (median, lowest, highest, first quartile, third
    quartile); None for none."""
    if not ratios:
        return None
    r = sorted(ratios)
    q = statistics.quantiles(r, n=4, method="inclusive") if len(r) > 1 else [r[0], r[0], r[0]]
    return statistics.median(r), r[0], r[-1], q[0], q[2]


def fmt_spread(sp):
    """'0.91 (0.85-0.97, IQR 0.88-0.94)', with ' crosses 1.0' where it does."""
    if sp is None:
        return "-", "-"
    med, lo, hi, q1, q3 = sp
    flag = " **crosses 1.0**" if lo < 1.0 < hi else ""
    return f"{med:.2f}", f"{lo:.2f}-{hi:.2f} (IQR {q1:.2f}-{q3:.2f}){flag}"


def int8_error(ingot, bundle, model, input_args, feeds, npz):
    """(max abs error, elements that differ, elements) of the bundle's
    outputs against ONNX Runtime running the same model file on the same
    inputs (one thread: the reference, not a timing)."""
    sess = ort_session(model, 1)
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    got = ingot.outputs(bundle, input_args, npz)
    worst, differ, total = 0.0, 0, 0
    for name, w in want.items():
        g = got.get(name.replace("/", "_"))
        if g is None or g.shape != w.shape:
            raise RuntimeError(f"output '{name}': {'missing' if g is None else f'shape {g.shape}'} "
                               f"against ONNX Runtime's {w.shape}")
        d = np.abs(g.astype(np.float64) - w.astype(np.float64))
        worst, differ, total = max(worst, float(d.max(initial=0.0))), differ + int((d > 0).sum()), total + d.size
    return worst, differ, total


def int8_table(ingot, names, threads, rounds, runs, work, peak, failures):
    """int8 rows: each int8 model with Ingot and with ONNX Runtime (the same
    quantized file), and the float model it came from with both, in
    interleaved rounds (Ingot int8, ORT int8, Ingot fp32, ORT fp32) on the
    same inputs; medians of round medians, ratios as the median of the
    per-round ratios with their spread."""
    rows = []
    for name in names:
        try:
            path, fpath, feeds = make_int8_model(name, work)
            bundle = os.path.join(work, name + ".ingot")
            ctime = ingot.compile(path, bundle, feeds)
            fbundle = os.path.join(work, int8_float_name(name) + ".ingot")
            ingot.compile(fpath, fbundle, feeds)
        except Exception as e:
            failures.append(f"{name}: {e}")
            log(f"{name}: {e}")
            continue
        loaded = ingot.loaded_target(bundle)
        input_args = save_feeds(feeds, work, name)
        try:
            error = int8_error(ingot, bundle, path, input_args, feeds, os.path.join(work, name + "_out.npz"))
        except Exception as e:
            failures.append(f"{name}: {e}")
            log(f"{name}: {e}")
            continue
        sizes = (os.path.getsize(bundle) / 1e6, os.path.getsize(fbundle) / 1e6)
        try:
            flops = model_flops(fpath, feeds)
        except Exception as e:
            log(f"{name}: cannot count its multiply-adds: {e}")
            flops = None
        for t in threads:
            sess, fsess = ort_session(path, t), ort_session(fpath, t)
            i8, o8, i32, o32 = [], [], [], []
            try:
                for _ in range(rounds):
                    time.sleep(SETTLE_S)
                    i8.append(ingot.round(bundle, input_args, t, runs))
                    o8.append(timed_median(lambda: sess.run(None, feeds), runs))
                    time.sleep(SETTLE_S)
                    i32.append(ingot.round(fbundle, input_args, t, runs))
                    o32.append(timed_median(lambda: fsess.run(None, feeds), runs))
            except Exception as e:
                failures.append(f"{name} threads={t}: {e}")
                log(f"{name} threads={t}: {e}")
                continue
            med = [statistics.median(v) for v in (i8, o8, i32, o32)]
            sp_ort = spread([a / b for a, b in zip(i8, o8)])
            sp_i = spread([a / b for a, b in zip(i8, i32)])
            sp_o = spread([a / b for a, b in zip(o8, o32)])
            p, p8 = peak_for(peak, t), peak_for(peak, t, "i1", "iall")
            bound = flops / p * 1e-6 if flops and p else None
            bound8 = flops / p8 * 1e-6 if flops and p8 else None
            rows.append((name, t, med, sp_ort, sp_i, sp_o, flops, bound, bound8, ctime, loaded, error, sizes))
            log(f"{name:24s} threads={t}  ingot int8 {med[0]:8.2f} ms  ort int8 {med[1]:8.2f} ms  "
                f"ingot fp32 {med[2]:8.2f} ms  ort fp32 {med[3]:8.2f} ms")
    print("\nint8 models (models/make_quant_zoo.py: NAME_qdq_pc quantize_static QDQ per channel, uint8 "
          "activations, int8 weights; NAME_dyn quantize_dynamic, int8 weights) beside the float model they "
          "were made from, in interleaved rounds: ingot int8, ort int8 (the same quantized file), ingot fp32, "
          "ort fp32")
    print("\n| model | threads | ingot int8 ms | ort int8 ms | ingot / ort (int8) | spread over rounds "
          "| ingot fp32 ms | ingot int8 / fp32 | spread over rounds | ort fp32 ms | ort int8 / fp32 | GOP "
          "| int8 peak ms | ingot, ort int8 of it | fp32 FMA peak ms | ingot fp32 of it | ingot compile s "
          "| ingot code | max abs err vs ort (elements differing) | bundle MB (fp32) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, t, (mi8, mo8, mi32, mo32), sp_ort, sp_i, sp_o, flops, bound, bound8, ct, loaded, err, sz in rows:
        r1, g1 = fmt_spread(sp_ort)
        r2, g2 = fmt_spread(sp_i)
        of8 = f"{bound8 / mi8:.0%}, {bound8 / mo8:.0%}" if bound8 else "-"
        of32 = f"{bound / mi32:.0%}" if bound else "-"
        print(f"| {name} | {t} | {mi8:.2f} | {mo8:.2f} | {r1} | {g1} | {mi32:.2f} | {r2} | {g2} | {mo32:.2f} | "
              f"{fmt_spread(sp_o)[0]} | {fmt(flops * 1e-9 if flops else None)} | {fmt(bound8)} | {of8} | "
              f"{fmt(bound)} | {of32} | {ct:.2f} | {loaded} | {err[0]:.3g} ({err[1]} of {err[2]}) | "
              f"{sz[0]:.1f} ({sz[1]:.1f}) |")
    i8 = peak.get("int8_isa", "none") if peak else "none"
    print("(GOP: the float model's Conv, Gemm and MatMul multiply-adds, x2 (the int8 model does the same "
          "ones, a dynamic model's attention products in float); int8 peak ms: that work at the measured int8 "
          f"dot-product peak (bench/fma_peak.c, {i8}; on AVX2 without VNNI the vpmaddubsw + vpmaddwd + vpaddd "
          "sequence both engines use there; '-' where the machine has none), a bound no int8 "
          "kernel beats; fp32 FMA peak ms: the same at the fp32 FMA peak. --target 'llvm -mcpu=znver4' (or "
          "another CPU with avx512vnni) compiles Ingot's dot4 words as vpdpbusd; the default x86-64-v4 code "
          "uses pmaddwd, half the multiply-adds per instruction. max abs err: Ingot's outputs against ONNX Runtime "
          "running the same int8 file on the same inputs, over all outputs; the tolerances the tests allow are "
          "tests/e2e/quant_zoo.py's.)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ingot", default=os.path.join(ROOT, "build", "ingot"))
    ap.add_argument("--models", nargs="*", default=None,
                    help=f"from {', '.join(ALL_MODELS)} (and NAME_small, bert_small); default all; "
                         "none (--models alone): no fp32 model rows")
    ap.add_argument("--threads", nargs="+", type=int, default=None, help="default: 1 2")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 12)")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per round (default 5)")
    ap.add_argument("--target", action="append", default=[],
                    help="passed to `ingot compile --target`; repeat for a bundle with variants "
                         "(default: ingot's own default)")
    ap.add_argument("--quick", action="store_true",
                    help="small models and kernels, few runs, 1 thread: a smoke test")
    ap.add_argument("--int8-models", nargs="*", default=None,
                    help=f"int8 rows: from {', '.join(INT8_MODELS)} (and {', '.join(QUICK_INT8_MODELS)}; "
                         f"the real models' {', '.join(REAL_INT8_MODELS)}; any NAME_qdq_pc, _qdq_pt, _qop_pc, "
                         "_qop_pt of the CNN zoo); "
                         "default those (the small ones with --quick); none: no int8 rows")
    ap.add_argument("--no-tvm", action="store_true", help="skip TVM even where it is installed")
    ap.add_argument("--no-kernels", action="store_true", help="skip the peak and GEMM/conv tables")
    ap.add_argument("--baseline", default=None, metavar="INGOT",
                    help="another build's ingot executable (e.g. of the previous main): its bundles run "
                         "in the same interleaved rounds, and the table gains ingot / baseline with the "
                         "spread of the per-round ratios")
    ap.add_argument("--defaults", action="store_true",
                    help="also compile each model with `--tuning-log none` (the schedule defaults alone) and "
                         "run it in the same interleaved rounds: the table gains ingot / defaults, i.e. what the "
                         "tuning log (the built-in pre-tuned one, or --tuning-log) gives")
    ap.add_argument("--tuning-log", default=None, metavar="LOG",
                    help="compile the ingot column with this tuning log (default: the built-in pre-tuned logs)")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    q = args.quick
    models = (QUICK_MODELS if q else ALL_MODELS) if args.models is None else args.models
    int8_models = (QUICK_INT8_MODELS if q else INT8_MODELS) if args.int8_models is None else args.int8_models
    threads = args.threads or ([1] if q else [1, 2])
    rounds = args.rounds or (2 if q else 12)
    runs = args.runs or (3 if q else 5)
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    if args.baseline and args.defaults:
        ap.error("--baseline and --defaults each take the second column: give one")
    ingot = Ingot(os.path.abspath(args.ingot), args.target,
                  ["--tuning-log", os.path.abspath(args.tuning_log)] if args.tuning_log else [])
    base = Ingot(os.path.abspath(args.baseline), args.target) if args.baseline else None
    if args.defaults:
        base = Ingot(os.path.abspath(args.ingot), args.target, ["--tuning-log", "none"])
    base_name = "defaults" if args.defaults else "baseline"
    tvm = None if (args.no_tvm or q) else Tvm()
    tvm_why = ("--quick" if q else "--no-tvm") if tvm is None else tvm.why
    if tvm is not None and tvm.why:
        tvm = None

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    header = (f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}, "
              f"{cpu_name()}, {os.cpu_count()} CPUs, load average {load:.2f} at start; "
              f"onnxruntime {ort.__version__}, numpy {np.__version__}, python {platform.python_version()}")
    log(header)
    failures = []

    # The FMA peak first: the model rows give the time their multiply-adds
    # take at it, and the kernel rows their fraction of it.
    peak, peak_why = fma_peak(work, 0.05 if q else 0.3)

    # -------- models
    rows = []
    base_rows = []
    for name in models:
        try:
            model, feeds = model_and_feeds(name, work)
            bundle = os.path.join(work, name + ".ingot")
            ctime = ingot.compile(model, bundle, feeds)
            base_bundle = os.path.join(work, name + ".base.ingot")
            if base is not None:
                base.compile(model, base_bundle, feeds)
        except Exception as e:
            failures.append(f"{name}: {e}")
            log(f"{name}: {e}")
            continue
        loaded = ingot.loaded_target(bundle)
        input_args = save_feeds(feeds, work, name)
        try:
            flops = model_flops(model, feeds)
        except Exception as e:  # a count is a note, never a failure
            log(f"{name}: cannot count its multiply-adds: {e}")
            flops = None
        tvm_fn, tvm_ctime, tvm_err = None, None, None
        if tvm is not None:
            try:
                log(f"{name}: building with TVM ...")
                tvm_fn, tvm_ctime = tvm.build(model, feeds)
            except Exception as e:
                tvm_err = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200] if str(e) else ''}"
                log(f"{name}: TVM build failed: {tvm_err}")
        for t in threads:
            sess = ort_session(model, t)
            ing, onx, tv, bas = [], [], [], []
            tvm_runs = runs
            try:
                for _ in range(rounds):  # interleaved rounds, same inputs
                    time.sleep(SETTLE_S)
                    ing.append(ingot.round(bundle, input_args, t, runs))
                    if base is not None:
                        bas.append(base.round(base_bundle, input_args, t, runs))
                    onx.append(timed_median(lambda: sess.run(None, feeds), runs))
                    if tvm_fn is not None:
                        tvm.set_threads(t)
                        m = timed_median(tvm_fn, tvm_runs)
                        tv.append(m)
                        # an untuned TVM build can be slow: keep a round near 2 s
                        tvm_runs = max(1, min(runs, int(2000 / max(m, 1e-3))))
            except Exception as e:
                failures.append(f"{name} threads={t}: {e}")
                log(f"{name} threads={t}: {e}")
                continue
            mi, mo = statistics.median(ing), statistics.median(onx)
            mt = statistics.median(tv) if tv else None
            sp = spread([a / b for a, b in zip(ing, onx)])
            spt = spread([a / b for a, b in zip(tv, onx)]) if tv else None
            p = peak_for(peak, t)
            bound = flops / p * 1e-6 if flops and p else None
            rows.append((name, t, mi, mo, mt, ctime, tvm_ctime, loaded, tvm_err, sp, spt, flops, bound))
            if bas:
                per_round = sorted(a / b for a, b in zip(ing, bas))
                base_rows.append((name, t, mi, statistics.median(bas), mo, statistics.median(per_round),
                                  per_round[0], per_round[-1]))
            log(f"{name:20s} threads={t}  ingot {mi:8.2f} ms  ort {mo:8.2f} ms  ratio {' '.join(fmt_spread(sp))}"
                + (f"  tvm {mt:8.2f} ms" if mt is not None else "")
                + (f"  {base_name} {statistics.median(bas):8.2f} ms" if bas else ""))

    print(f"\n{header}")
    print(f"command: {' '.join([os.path.basename(sys.executable), 'bench/bench.py', *sys.argv[1:]])}")
    print(f"{rounds} interleaved rounds x {runs} warm runs; ms: medians of round medians; ratios: median of "
          f"the per-round ratios, spread: lowest-highest round (IQR: quartiles); "
          f"ingot target(s): {', '.join(args.target) or 'default'}")
    tvm_note = f"TVM {tvm.version} (relax default pipeline, llvm -mcpu={tvm.cpu}, untuned)" \
        if tvm is not None else f"TVM: not measured: {tvm_why}"
    print(tvm_note)
    if models:
        print("\n| model | threads | ingot ms | onnxruntime ms | ingot / ort | spread over rounds | tvm ms "
              "| tvm / ort | GFLOP | at FMA peak ms | ingot, ort of peak | ingot compile s | ingot code |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, t, mi, mo, mt, ct, tct, loaded, terr, sp, spt, flops, bound in rows:
        tcol = fmt(mt) if mt is not None else ("build failed" if terr else "n/a")
        ratio, rng = fmt_spread(sp)
        of_peak = f"{bound / mi:.0%}, {bound / mo:.0%}" if bound else "-"
        print(f"| {name} | {t} | {mi:.2f} | {mo:.2f} | {ratio} | {rng} | {tcol} | "
              f"{fmt_spread(spt)[0]} | {fmt(flops * 1e-9 if flops else None)} | {fmt(bound)} | {of_peak} | "
              f"{ct:.2f} | {loaded} |")
    if models:
        print("(GFLOP: the Conv, Gemm and MatMul multiply-adds of one run, x2; at FMA peak: that work at the "
              "measured peak for the thread count, a bound no fp32 direct convolution or GEMM beats)")
    if base_rows:
        what = ("the same ingot with --tuning-log none (schedule defaults); ingot is compiled with "
                + (f"--tuning-log {args.tuning_log}" if args.tuning_log else "the built-in pre-tuned logs")
                if args.defaults else os.path.abspath(args.baseline))
        print(f"\n{base_name}: {what}, in the same rounds; "
              f"ingot / {base_name} is the median of the per-round ratios, with their range")
        print(f"\n| model | threads | ingot ms | {base_name} ms | onnxruntime ms | ingot / {base_name} | range |")
        print("|---|---|---|---|---|---|---|")
        for name, t, mi, mb, mo, r, lo, hi in base_rows:
            print(f"| {name} | {t} | {mi:.2f} | {mb:.2f} | {mo:.2f} | {r:.3f} | {lo:.3f}-{hi:.3f} |")
    terrs = [(r[0], r[8]) for r in rows if r[8]]
    for name, e in dict(terrs).items():
        print(f"TVM build of {name} failed: {e}")

    # -------- int8 models
    if int8_models:
        int8_table(ingot, int8_models, threads, rounds, runs, work, peak, failures)

    # -------- peak and kernels
    if not args.no_kernels:
        if peak:
            print(f"\nFMA peak ({peak['isa']}, {peak['lanes']} float lanes, fp32): "
                  f"{peak['g1']:.1f} GFLOP/s on 1 core, {peak['gall']:.1f} GFLOP/s on "
                  f"{peak['ncpu']} cores (bench/fma_peak.c, best of 5)")
            if "i1" in peak:
                print(f"int8 dot-product peak ({peak['int8_isa']}): {peak['i1']:.1f} GOP/s on 1 core, "
                      f"{peak['iall']:.1f} GOP/s on {peak['ncpu']} cores")
        else:
            print(f"\nFMA peak: not measured: {peak_why}")
        kernels = [("gemm", *g) for g in (QUICK_GEMMS if q else GEMMS)] + \
                  [("conv", *c) for c in (QUICK_CONVS if q else CONVS)]
        print("\n(GB/s: the kernel's least traffic, input + weights + output once, over its time; of bw: that "
              "over this machine's copy bandwidth at the same working-set size, one thread, numpy copy; "
              "the bound for stems and depthwise convolutions)")
        print("\n| kernel | threads | ingot ms | ingot GFLOP/s | of peak | ort GFLOP/s | of peak | ingot / ort "
              "| spread over rounds | ingot GB/s | of bw | ort GB/s | of bw |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for kind, label, *shape in kernels:
            try:
                if kind == "gemm":
                    path, feeds, flops = make_gemm(work, *shape)
                    m, k, n = shape
                    nbytes = 4 * (m * k + k * n + m * n)
                else:
                    path, feeds, flops, nbytes = make_conv(work, *shape)
                bw = copy_bandwidth(nbytes, 0.05 if q else 0.2)
                stem = os.path.splitext(os.path.basename(path))[0]
                bundle = os.path.join(work, stem + ".ingot")
                ingot.compile(path, bundle, feeds)
                input_args = save_feeds(feeds, work, stem)
            except Exception as e:
                failures.append(f"{label}: {e}")
                print(f"| {label} | - | failed: {e} | | | | | | | | | | |")
                continue
            for t in threads:
                sess = ort_session(path, t)
                ing, onx = [], []
                try:
                    for _ in range(rounds):
                        time.sleep(SETTLE_S)
                        ing.append(ingot.round(bundle, input_args, t, runs))
                        onx.append(timed_median(lambda: sess.run(None, feeds), runs))
                except Exception as e:
                    failures.append(f"{label} threads={t}: {e}")
                    print(f"| {label} | {t} | failed: {e} | | | | | | | | | | |")
                    continue
                mi, mo = statistics.median(ing), statistics.median(onx)
                gi, go = flops / mi * 1e-6, flops / mo * 1e-6
                p = peak_for(peak, t)
                ratio, rng = fmt_spread(spread([a / b for a, b in zip(ing, onx)]))
                bi, bo = nbytes / mi * 1e-6, nbytes / mo * 1e-6  # GB/s (times in ms)
                print(f"| {label} | {t} | {mi:.3f} | {gi:.1f} | {fmt(gi / p if p else None, '.0%')} | "
                      f"{go:.1f} | {fmt(go / p if p else None, '.0%')} | {ratio} | {rng} | "
                      f"{bi:.1f} | {bi * 1e9 / bw:.0%} | {bo:.1f} | {bo * 1e9 / bw:.0%} |", flush=True)

    if failures:
        print("\nfailures:\n  " + "\n  ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
