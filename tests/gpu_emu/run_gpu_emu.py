#!/usr/bin/env python3
"""Whole models through the runtime's CUDA path on an emulated GPU.

  run_gpu_emu.py --ingot BUILD/ingot --driver libingot_emu_cuda.so --work DIR
                 [--cxx g++] [--bert small] [--self-check] MODEL.onnx [...]

For each model: `ingot compile MODEL --target cuda -arch=sm_90 --target llvm
--emit-c k.cu` (the CUDA C of the bundle's CUDA variant); k.cu built by the
host C++ compiler with emu_kernel.h and a table of its kernels (name, the
launch the printer wrote in each kernel's header, whether it has a barrier:
read from the source, nothing per op) into a shared library; then `ingot run
--device cuda --verbose` with INGOT_CUDA_DRIVER pointing at the emulated
driver (emu_cuda_driver.c) and INGOT_EMU_KERNELS at that library, so the
runtime's CUDA loader, its staged device session and the launch records of
the bundle run for real; the outputs against ONNX Runtime (CPU provider):
|got - ref| <= atol + rtol |ref| (1e-4, 1e-3 as tests/e2e/compare.py), and
--verbose must name the cuda variant.

A model with barriers runs a second time with each block's threads in the
reverse order (INGOT_EMU_REVERSE): the outputs must be the same bit for bit
(a race between the threads of a block would change them).

--self-check (on the first model): the test must be able to fail. (a) every
launch with a grid above one block runs one block fewer (the driver's
INGOT_EMU_SHRINK_GRID, as a wrong launch record would) and the launch check
off: the outputs must differ; (b) one kernel's printed __launch_bounds__ and
launch comment changed: the run must fail with the driver's launch error;
(c) where some kernel has a barrier, every __syncthreads() dropped from the
source: the outputs must differ; (d) thread 1 of the first kernel with a
barrier returns at its start: the run must fail naming the barrier that the
other threads wait at ((c) and (d) on the first model that has a barrier).

When a model differs, localize(): the model again with every float node
output a graph output, node by node against onnxruntime: the first nodes
that differ, with the kernels named after their ops.

Exit 0 when all holds, 1 otherwise, 77 when the C++ compiler or NVRTC is
missing.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FAILURES = []


class Skip(Exception):
    pass


def fail(msg):
    print("FAIL: " + msg, flush=True)
    FAILURES.append(msg)


def run(cmd, env=None, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


# A kernel's header as codegen/codegen_gpu.c prints it: a comment with the
# launch, then the signature with __launch_bounds__.
HEADER = re.compile(r"/\* ---- (\w+): grid (\d+) x (\d+) x (\d+), block (\d+) x (\d+) x (\d+) \*/\s*\n"
                    r"extern \"C\" __global__ void __launch_bounds__\((\d+)\) (\w+)\(")
SIGNATURE = re.compile(r"extern \"C\" __global__ void (?:__launch_bounds__\((\d+)\) )?(\w+)\(")


def kernel_table(source):
    """[(name, bounds, grid, block, barriers)] of the printed source."""
    kernels = []
    sigs = list(SIGNATURE.finditer(source))
    for i, m in enumerate(sigs):
        name = m.group(2)
        body = source[m.end():sigs[i + 1].start() if i + 1 < len(sigs) else len(source)]
        h = None
        for hm in HEADER.finditer(source, max(0, m.start() - 200), m.end()):
            if hm.group(9) == name:
                h = hm
        grid = tuple(int(h.group(k)) for k in (2, 3, 4)) if h else (0, 0, 0)
        block = tuple(int(h.group(k)) for k in (5, 6, 7)) if h else (0, 0, 0)
        kernels.append((name, int(m.group(1) or 0), grid, block, "__syncthreads" in body))
    return kernels


def build_kernels(args, source_path, lib_path):
    source = open(source_path).read()
    kernels = kernel_table(source)
    if not kernels:
        raise SystemExit(f"FAIL: no kernels in {source_path}")
    # Each __shared__ array made undefined (0xff bytes) when a block starts.
    host_source = re.sub(r"^(\s*__shared__ [^;\[]+ (\w+)\[\d+\];)$", r"\1 INGOT_EMU_SHARED_FRESH(\2);", source,
                         flags=re.M)
    host_path = lib_path[:-3] + "_host.cu"
    with open(host_path, "w") as f:
        f.write(host_source)
    cpp = lib_path[:-3] + "_emu.cpp"
    with open(cpp, "w") as f:
        f.write(f'#include "{os.path.abspath(host_path)}"\n\nINGOT_EMU_TABLE_BEGIN\n')
        for name, bounds, g, b, barriers in kernels:
            f.write(f"INGOT_EMU_KERNEL({name}, {bounds}, {g[0]}, {g[1]}, {g[2]}, {b[0]}, {b[1]}, {b[2]}, "
                    f"{int(barriers)})\n")
        f.write("INGOT_EMU_TABLE_END\n")
    p = run([args.cxx, "-std=c++17", "-O1", "-w", "-fPIC", "-shared", "-include",
             os.path.join(HERE, "emu_kernel.h"), "-I", HERE, "-o", lib_path, cpp])
    if p.returncode != 0:
        fail(f"{source_path}: the host C++ compiler rejects the printed CUDA C:\n{p.stderr[:3000]}")
        return None
    return kernels


def given_inputs(model):
    folder = os.path.splitext(model)[0] + "_inputs"
    if not os.path.isdir(folder):
        return {}
    return {f[:-4]: np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".npy")}


def emu_env(args, lib, **extra):
    env = dict(os.environ)
    env["INGOT_CUDA_DRIVER"] = os.path.abspath(args.driver)
    env["INGOT_EMU_KERNELS"] = os.path.abspath(lib)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_bundle(args, bundle, flags, out, env):
    """`ingot run --device cuda --verbose`; (completed process, seconds)."""
    if os.path.exists(out):
        os.remove(out)
    t0 = time.monotonic()
    p = run([args.ingot, "run", bundle, *flags, "--device", "cuda", "--verbose", "--output", out], env=env)
    return p, time.monotonic() - t0


def max_err(out, names, ref):
    """max over outputs of |got - ref| / (atol + rtol |ref|), and max |got - ref|."""
    worst, worst_abs = 0.0, 0.0
    with np.load(out) as got:
        for name, want in zip(names, ref):
            g = got[name].astype(np.float64)
            w = want.astype(np.float64)
            if g.shape != w.shape:
                return float("inf"), float("inf")
            g, w = np.atleast_1d(g), np.atleast_1d(w)  # rank-0 outputs index as 1-D
            d = np.abs(g - w)
            d[np.isnan(d) & ~(np.isnan(g) & np.isnan(w))] = np.inf
            d[np.isnan(g) & np.isnan(w)] = 0
            worst = max(worst, float(np.max(d / (args_atol + args_rtol * np.abs(w)))))
            worst_abs = max(worst_abs, float(np.max(d)))
    return worst, worst_abs


args_atol, args_rtol = 1e-4, 1e-3


def check_model(args, model, self_check):
    """self_check: "all" (a, b and c), "barriers" (c only), or None."""
    import onnxruntime as ort
    name = os.path.splitext(os.path.basename(model))[0]
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    bundle, source, lib = (os.path.join(work, f) for f in ("model.ingot", "k.cu", "k.so"))
    given = given_inputs(model)
    shapes = [a for n, x in given.items() for a in ("--input-shape", f"{n}={'x'.join(map(str, x.shape))}")]
    t0 = time.monotonic()
    p = run([args.ingot, "compile", model, "-o", bundle, "--emit-c", source, *shapes,
             "--target", "cuda", "-arch=sm_90", "--target", "llvm"])
    if p.returncode != 0 and "is not available" in p.stderr:
        raise Skip(p.stderr.strip())
    if p.returncode != 0:
        fail(f"{name}: ingot compile exited {p.returncode}: {p.stderr.strip()}")
        return
    t_compile = time.monotonic() - t0
    t0 = time.monotonic()
    kernels = build_kernels(args, source, lib)
    if kernels is None:
        return
    t_cxx = time.monotonic() - t0

    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    flags = []
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        x = given[i.name] if i.name in given else rng.standard_normal(shape).astype(np.float32)
        feeds[i.name] = x
        path = os.path.join(work, f"in{len(flags) // 2}.npy")
        np.save(path, x)
        flags += ["--input", f"{i.name}={path}"]
    ref = sess.run(None, feeds)
    names = [o.name for o in sess.get_outputs()]
    out = os.path.join(work, "out.npz")
    p, t_run = run_bundle(args, bundle, flags, out, emu_env(args, lib))
    text = p.stdout + p.stderr
    barrier_kernels = sum(1 for k in kernels if k[4])
    threads = sorted({k[3][0] * k[3][1] * k[3][2] for k in kernels})
    summary = (f"{len(kernels)} kernels ({barrier_kernels} with barriers; threads per block "
               f"{threads[0]}..{threads[-1]}); compile {t_compile:.1f}s, g++ {t_cxx:.1f}s, run {t_run:.1f}s")
    if p.returncode != 0:
        fail(f"{name}: ingot run --device cuda exited {p.returncode}: {text.strip()[-3000:]}")
        print(f"{name}: {summary}")
        return
    if not re.search(r"picked cuda -arch=sm_90: CUDA device 0: Ingot emulated GPU", text):
        fail(f"{name}: run --verbose does not say the cuda variant on the emulated GPU was picked:\n{text}")
    err, err_abs = max_err(out, names, ref)
    status = "pass" if err <= 1.0 else "FAIL"
    print(f"{name}: {status}: max |err| {err_abs:.3g}, max |err| / (1e-4 + 1e-3 |ref|) = {err:.3g}; {summary}",
          flush=True)
    if err > 1.0:
        fail(f"{name}: the CUDA variant on the emulated GPU differs from onnxruntime (max |err| {err_abs:.3g})")
        localize(args, model, work, given, shapes, feeds)
        return
    if barrier_kernels:
        # The threads of each block in the other order: a race between the
        # threads of a block (a missing barrier) changes the outputs.
        rev = os.path.join(work, "reverse.npz")
        p, _ = run_bundle(args, bundle, flags, rev, emu_env(args, lib, INGOT_EMU_REVERSE=1))
        if p.returncode != 0:
            fail(f"{name}: the run with the threads in reverse order exited {p.returncode}: {p.stderr.strip()[-2000:]}")
        else:
            with np.load(out) as a, np.load(rev) as b:
                diff = [n for n in a.files if not np.array_equal(a[n], b[n], equal_nan=True)]
            if diff:
                fail(f"{name}: outputs {diff} change when each block's threads run in reverse order (a race)")
            else:
                print(f"  threads of each block in reverse order: the same outputs, bit for bit")
    if self_check:
        return run_self_check(args, name, work, bundle, source, lib, kernels, flags, names, ref, self_check)
    return None


def localize(args, model, work, given, shapes, feeds, extra_env=None):
    """Which node goes wrong first: the model again with every float node
    output made a graph output (fusion then keeps them), on the emulated GPU
    against onnxruntime, node by node in graph order. Prints the first nodes
    whose outputs differ and the printed kernels named after their ops."""
    import onnx
    import onnxruntime as ort
    from onnx import shape_inference
    m = shape_inference.infer_shapes(onnx.load(model))
    known = {v.name: v for v in list(m.graph.value_info) + list(m.graph.output)}
    have = {o.name for o in m.graph.output}
    order = []
    for node in m.graph.node:
        for o in node.output:
            v = known.get(o)
            if v is not None and v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
                if o not in have:
                    m.graph.output.append(v)
                    have.add(o)
                order.append((o, node.op_type, node.name))
    dbg = os.path.join(work, "localize")
    os.makedirs(dbg, exist_ok=True)
    path = os.path.join(dbg, "all_outputs.onnx")
    onnx.save(m, path)
    bundle, source, lib = (os.path.join(dbg, f) for f in ("model.ingot", "k.cu", "k.so"))
    p = run([args.ingot, "compile", path, "-o", bundle, "--emit-c", source, *shapes,
             "--target", "cuda", "-arch=sm_90", "--target", "llvm"])
    if p.returncode != 0 or build_kernels(args, source, lib) is None:
        print(f"  localize: cannot compile the model with every node output: {p.stderr.strip()[-500:]}")
        return
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ref = dict(zip(names, sess.run(None, feeds)))
    flags = []
    for i, (n, x) in enumerate(feeds.items()):
        np.save(os.path.join(dbg, f"in{i}.npy"), x)
        flags += ["--input", f"{n}={os.path.join(dbg, f'in{i}.npy')}"]
    out = os.path.join(dbg, "out.npz")
    env = emu_env(args, lib, **(extra_env or {}))
    p, _ = run_bundle(args, bundle, flags, out, env)
    if p.returncode != 0:
        print(f"  localize: the run fails: {p.stderr.strip()[-800:]}")
        return
    kernels = [k[0] for k in kernel_table(open(source).read())]
    shown = 0
    with np.load(out) as got:
        for o, op, node in order:
            member = "".join("_" if (c in "/\\" or ord(c) < 0x20 or ord(c) == 0x7F) else c for c in o)
            if member not in got.files:
                continue
            g, w = got[member].astype(np.float64), ref[o].astype(np.float64)
            d = np.abs(g - w) if g.shape == w.shape else np.array([np.inf])
            d[np.isnan(d)] = np.inf
            e = float(np.max(d / (args_atol + args_rtol * np.abs(w)))) if g.shape == w.shape else np.inf
            if e > 1.0:
                like = [k for k in kernels if k.lower().startswith(op.lower())][:6]
                print(f"  localize: node '{node}' ({op}) output '{o}': max |err| {float(np.max(d)):.3g} "
                      f"(shape {list(w.shape)}); kernels for {op}: {like}")
                shown += 1
                if shown == 3:
                    break
    if not shown:
        print("  localize: every node output matches when each is a graph output (the bug needs a fusion)")


def run_self_check(args, name, work, bundle, source, lib, kernels, flags, names, ref, which):
    """Returns "barriers" when (c) is still to be done on a later model."""
    out = os.path.join(work, "self.npz")
    src = open(source).read()
    if which == "barriers":
        return drop_barriers(args, name, work, bundle, src, kernels, flags, names, ref, out)
    # (a) a wrong grid (one block fewer on every launch of more than one block).
    if any(k[2][0] > 1 for k in kernels):
        p, _ = run_bundle(args, bundle, flags, out, emu_env(args, lib, INGOT_EMU_SHRINK_GRID=1, INGOT_EMU_CHECK_DIMS=0))
        err = max_err(out, names, ref)[1] if p.returncode == 0 else None
        if p.returncode == 0 and err is not None and max_err(out, names, ref)[0] <= 1.0:
            fail(f"{name} self-check: launches one block short still match onnxruntime: the test cannot fail")
        else:
            print(f"  self-check (a): grids one block short -> "
                  f"{'outputs differ, max |err| %.3g' % err if err is not None else 'run fails'} (caught)")
    else:
        print("  self-check (a): no kernel has more than one block (skipped)")
    # (b) a kernel printed for another block size than the bundle launches.
    target = next((k for k in kernels if k[1]), None)
    if target:
        kname, bounds = target[0], target[1]
        wrong = bounds * 2 if bounds < 512 else bounds // 2
        mutated = src.replace(f"__launch_bounds__({bounds}) {kname}(", f"__launch_bounds__({wrong}) {kname}(")
        mutated = re.sub(rf"(/\* ---- {kname}: grid \d+ x \d+ x \d+, block )\d+( x \d+ x \d+ \*/)",
                         lambda m: f"{m.group(1)}{wrong}{m.group(2)}", mutated)
        msrc, mlib = os.path.join(work, "k_dims.cu"), os.path.join(work, "k_dims.so")
        open(msrc, "w").write(mutated)
        if build_kernels(args, msrc, mlib) is not None:
            p, _ = run_bundle(args, bundle, flags, out, emu_env(args, mlib))
            if p.returncode == 0 or kname not in p.stderr:
                fail(f"{name} self-check: kernel {kname} printed for {wrong} threads, launched with {bounds}: "
                     f"exit {p.returncode}, stderr {p.stderr.strip()[-600:]}")
            else:
                line = [l for l in p.stderr.splitlines() if kname in l][0]
                print(f"  self-check (b): {kname} printed for __launch_bounds__({wrong}) (block x changed to match), "
                      f"launched with {bounds} threads -> caught: {line.strip()}")
    return drop_barriers(args, name, work, bundle, src, kernels, flags, names, ref, out)


def drop_barriers(args, name, work, bundle, src, kernels, flags, names, ref, out):
    """(c) every barrier dropped; "barriers" when this model has none."""
    if any(k[4] for k in kernels):
        msrc, mlib = os.path.join(work, "k_nobarrier.cu"), os.path.join(work, "k_nobarrier.so")
        open(msrc, "w").write(src.replace("__syncthreads();", ";"))
        ks = build_kernels(args, msrc, mlib)
        if ks is not None:
            # The table is made from the barrier-free source, so the driver
            # runs those threads without yielding: use the original flags.
            p, _ = run_bundle(args, bundle, flags, out, emu_env(args, mlib))
            err = max_err(out, names, ref) if p.returncode == 0 else None
            if err is not None and err[0] <= 1.0:
                fail(f"{name} self-check: every __syncthreads dropped and the outputs still match")
            else:
                print(f"  self-check (c) on {name}: every __syncthreads dropped -> "
                      f"{'outputs differ, max |err| %.3g' % err[1] if err else 'run fails'} (caught)")
        # (d) one thread of a barrier kernel leaves before the first barrier.
        kname = next(k[0] for k in kernels if k[4])
        head = re.search(rf"extern \"C\" __global__ void [^\n]*\b{kname}\([^\n]*\{{", src)
        msrc, mlib = os.path.join(work, "k_diverge.cu"), os.path.join(work, "k_diverge.so")
        open(msrc, "w").write(src[:head.end()] + " if (threadIdx.x == 1u) return;" + src[head.end():])
        if build_kernels(args, msrc, mlib) is not None:
            p, _ = run_bundle(args, bundle, flags, out, emu_env(args, mlib))
            line = [l for l in p.stderr.splitlines() if "without it" in l]
            if p.returncode == 0 or not line:
                fail(f"{name} self-check: thread 1 of {kname} skips the barriers and the run does not say so: "
                     f"exit {p.returncode}, {p.stderr.strip()[-600:]}")
            else:
                print(f"  self-check (d) on {name}: thread 1 of {kname} returns before its barriers -> caught: "
                      f"{line[0].strip()}")
        return None
    print(f"  self-check (c): no kernel of {name} has a barrier (tried on the next model)")
    return "barriers"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*")
    ap.add_argument("--ingot")
    ap.add_argument("--driver")
    ap.add_argument("--work")
    ap.add_argument("--build-kernels", nargs=2, metavar=("K.cu", "K.so"),
                    help="only build the kernel library of a printed source (for emu_ingot.sh)")
    ap.add_argument("--cxx", default=shutil.which("g++") or "")
    ap.add_argument("--bert", metavar="SIZE")
    ap.add_argument("--self-check", action="store_true")
    args = ap.parse_args()
    if not args.cxx or not shutil.which(args.cxx):
        print("SKIP: no host C++ compiler (g++)")
        return 77
    if args.build_kernels:
        ok = build_kernels(args, *args.build_kernels) is not None
        return 0 if ok else 2
    if not (args.ingot and args.driver and args.work):
        ap.error("--ingot, --driver and --work are required")
    os.makedirs(args.work, exist_ok=True)
    if args.bert:
        root = os.path.dirname(os.path.dirname(HERE))
        bert = os.path.join(args.work, f"bert_{args.bert}.onnx")
        if not os.path.exists(bert):
            p = run([sys.executable, os.path.join(root, "models", "make_bert.py"), "--out", args.work,
                     "--size", args.bert])
            if p.returncode != 0:
                raise SystemExit(f"FAIL: make_bert.py: {p.stderr}")
        args.models.append(bert)
    t0 = time.monotonic()
    pending = "all" if args.self_check else None
    try:
        for model in args.models:
            before = len(FAILURES)
            left = check_model(args, model, pending)
            if len(FAILURES) == before:
                pending = left
    except Skip as e:
        print(f"SKIP: {e}")
        return 77
    if pending == "barriers":
        print("self-check (c) not done: no model has a kernel with a barrier")
    print(f"{len(args.models)} models in {time.monotonic() - t0:.0f}s")
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("every model's CUDA variant matches onnxruntime on the emulated GPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
