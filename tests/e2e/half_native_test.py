#!/usr/bin/env python3
"""float16 elementwise chains rounded after each op, bit for bit; and beside ONNX Runtime.

  half_native_test.py --ingot BUILD/ingot --work DIR [--source SRC --cross-build BUILD/aarch64]

The model (made here, opset 13, float16 throughout): Add, Mul by a float16
weight, Div, Abs, Sqrt, Sub, Relu, Neg, Max, Min with a constant near the
float16 maximum, an intermediate value that is also an output, and a
Transpose pair (a float32 op in Ingot: the float16 values meet float32 code
and come back through Casts). Inputs 3 x 343 (odd: vector tails), with
values next to the float16 maximum (sums overflow to infinity), subnormals,
zeros of both signs and ordinary ones; no NaN is made (ONNX Runtime's Max
treats NaNs otherwise than the IR's max).

What float16 arithmetic means, each op rounding its result to float16, is
numpy's float16 (it computes each op in float32 and rounds, which is exact).
ONNX Runtime gives exactly that for each of these ops alone (checked first,
op by op). On a whole chain it does not, on x86-64 CPUs: its CPU kernels for
Add, Mul, Div, Sqrt, Abs, Neg, Sub and Relu are float32 only, and its
InsertCastTransformer computes a chain of them in float32 and removes the
casts between them ("InsertedPrecisionFreeCast"), rounding where a node with
a float16 kernel (Max, Min, Transpose) or an output reads the value. So:
  1. `llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1` (fullfp16: float16
     arithmetic, chosen by default), run under qemu-aarch64 with the
     cross-built runtime (as tests/aarch64), equals the per-op reference bit
     for bit; its object holds float16 vector arithmetic (fadd, fmul, fdiv,
     fsqrt on .8h / .4h);
  2. the host's default target and `c` with --half-ops f16 (through float32)
     equal it too; with the default there (float32, rounded at the edges of
     float16 values) they are compared with ONNX Runtime;
  3. every result is printed beside ONNX Runtime's on the chain (elements
     that differ, float16 ulps, and those far apart: an intermediate that
     overflows in float16 and not in float32 makes an output differ
     wholly); informational;
  4. `llvm -mcpu=sapphirerapids` (AVX512-FP16): compiled only (this machine
     and qemu-x86_64 cannot run it), its object must hold vaddph and vmulph.
Steps that need the cross tools or objdump are skipped (and said so); exit
77 when nothing ran.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np

SYSROOT = "/usr/aarch64-linux-gnu"
N, M = 3, 343


def make_model(path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    w = rng.uniform(0.25, 4.0, size=(M,)).astype(np.float16)
    w[::7] *= -1
    f16 = TensorProto.FLOAT16
    nodes = [
        helper.make_node("Add", ["x", "y"], ["a"]),
        helper.make_node("Mul", ["a", "w"], ["b"]),
        helper.make_node("Div", ["b", "y"], ["d"]),
        helper.make_node("Abs", ["d"], ["ad"]),
        helper.make_node("Sqrt", ["ad"], ["s"]),
        helper.make_node("Sub", ["s", "x"], ["sx"]),
        helper.make_node("Relu", ["sx"], ["r"]),
        helper.make_node("Neg", ["y"], ["ny"]),
        helper.make_node("Max", ["r", "ny"], ["m"]),
        helper.make_node("Min", ["m", "cap"], ["out"]),
        helper.make_node("Transpose", ["a"], ["at"], perm=[1, 0]),
        helper.make_node("Transpose", ["at"], ["att"], perm=[1, 0]),
        helper.make_node("Mul", ["att", "x"], ["ax"]),
        helper.make_node("Div", ["ax", "w"], ["out2"]),
    ]
    graph = helper.make_graph(
        nodes, "half_chain",
        [helper.make_tensor_value_info("x", f16, [N, M]), helper.make_tensor_value_info("y", f16, [N, M])],
        [helper.make_tensor_value_info("out", f16, [N, M]), helper.make_tensor_value_info("out2", f16, [N, M]),
         helper.make_tensor_value_info("a", f16, [N, M])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([60000], dtype=np.float16), "cap")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return w


def make_inputs():
    rng = np.random.default_rng(11)
    x = rng.normal(0, 30, size=(N, M))
    y = rng.normal(0, 3, size=(N, M))
    k = N * M
    idx = rng.permutation(k)
    flat_x, flat_y = x.reshape(-1), y.reshape(-1)
    big = idx[: k // 6]                       # next to the float16 maximum: sums overflow
    flat_x[big] = rng.choice([-1, 1], size=big.size) * rng.uniform(30000, 65504, size=big.size)
    flat_y[big] = np.sign(flat_x[big]) * rng.uniform(30000, 65504, size=big.size)
    sub = idx[k // 6: k // 3]                 # subnormals (below 6.1e-5) of both signs
    flat_x[sub] = rng.choice([-1, 1], size=sub.size) * rng.uniform(0, 6e-5, size=sub.size)
    tiny = idx[k // 3: k // 2]
    flat_y[tiny] = rng.choice([-1, 1], size=tiny.size) * rng.uniform(6e-8, 1e-3, size=tiny.size)
    flat_x[idx[k // 2: k // 2 + 5]] = 0.0
    flat_x[idx[k // 2 + 5: k // 2 + 10]] = -0.0
    x, y = x.astype(np.float16), y.astype(np.float16)
    y[y == 0] = np.float16(1.0)                # no 0/0
    return x, y


def reference(x, y, w):
    """numpy float16: every op rounds to float16 (numpy computes it in float32, exactly so)."""
    with np.errstate(all="ignore"):
        a = x + y
        d = (a * w) / y
        r = np.maximum(np.sqrt(np.abs(d)) - x, np.float16(0))
        out = np.minimum(np.maximum(r, -y), np.float16(60000))
        out2 = (a * x) / w
    return {"out": out, "out2": out2, "a": a}


def same_bits(got, want):
    g, w = got.view(np.uint16), want.view(np.uint16)
    nan = np.isnan(got) & np.isnan(want)
    return (g == w) | nan


def compare(what, got, want):
    bad = 0
    for name, ref in want.items():
        g = got[name]
        if g.dtype != np.float16 or g.shape != ref.shape:
            print(f"FAIL {what}: {name} is {g.dtype} {g.shape}, want float16 {ref.shape}")
            bad += 1
            continue
        eq = same_bits(g, ref)
        if not eq.all():
            i = int(np.argmin(eq.reshape(-1)))
            print(f"FAIL {what}: {name}: {int((~eq).sum())} of {eq.size} differ; first at {i}: "
                  f"{g.reshape(-1)[i]!r} (0x{int(g.view(np.uint16).reshape(-1)[i]):04x}), want "
                  f"{ref.reshape(-1)[i]!r} (0x{int(ref.view(np.uint16).reshape(-1)[i]):04x})")
            bad += 1
    if not bad:
        print(f"ok {what}: {', '.join(want)} equal bit for bit")
    return bad


def ulp_diff(got, want):
    g = got.view(np.uint16).astype(np.int32)
    w = want.view(np.uint16).astype(np.int32)
    g = np.where(g & 0x8000, -(g & 0x7fff), g)  # ordered: ulps apart
    w = np.where(w & 0x8000, -(w & 0x7fff), w)
    d = np.abs(g - w)
    d[np.isnan(got) & np.isnan(want)] = 0
    return d


def close(what, got, want, against="ONNX Runtime"):
    """Prints how far got is from want: elements that differ (float16 ulps), and
    those beyond 2^-8 of the output's largest finite magnitude or where only
    one is infinite or NaN (an intermediate overflow in one order and not the
    other, next to the float16 maximum). Informational, never a failure."""
    bad, notes = 0, []
    for name, w in want.items():
        g = got[name]
        same = same_bits(g, w)
        gf, wf = g.astype(np.float64), w.astype(np.float64)
        fin = np.isfinite(wf)
        scale = float(np.abs(wf[fin]).max()) if fin.any() else 1.0
        ok = np.isinf(gf) == np.isinf(wf)
        ok &= np.isnan(gf) == np.isnan(wf)
        ok &= ~fin | (np.abs(gf - wf) <= scale * 2.0**-8)
        u = ulp_diff(g, w)
        notes.append(f"{name} {int((~same).sum())}/{same.size} differ (max {int(u[fin].max()) if fin.any() else 0} ulp)")
        if not ok.all():
            i = int(np.argmin(ok.reshape(-1)))
            notes[-1] += (f", {int((~ok).sum())} beyond 2^-8 of the largest (first {name}[{i}] = "
                          f"{g.reshape(-1)[i]!r}, {against} {w.reshape(-1)[i]!r})")
            bad += 1
    print(f"note {what} beside {against}: {'; '.join(notes)}")
    return 0  # informational: chains next to overflow round differently (see the docstring)


def single_ops(ort, work, x, y):
    """Each op alone in ONNX Runtime against numpy's float16: the per-op reference is ONNX Runtime's rounding."""
    import onnx
    from onnx import TensorProto, helper

    f16 = TensorProto.FLOAT16
    xa, ya = np.abs(x), y
    cases = {"Add": (2, lambda: x + y), "Sub": (2, lambda: x - y), "Mul": (2, lambda: x * y),
             "Div": (2, lambda: x / y), "Max": (2, lambda: np.maximum(x, y)), "Min": (2, lambda: np.minimum(x, y)),
             "Abs": (1, lambda: np.abs(x)), "Neg": (1, lambda: -x), "Sqrt": (1, lambda: np.sqrt(xa)),
             "Relu": (1, lambda: np.maximum(x, np.float16(0)))}
    bad = 0
    for op, (arity, fn) in cases.items():
        ins = ["x", "y"][:arity]
        g = helper.make_graph([helper.make_node(op, ins, ["z"])], op,
                              [helper.make_tensor_value_info(n, f16, [N, M]) for n in ins],
                              [helper.make_tensor_value_info("z", f16, [N, M])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        path = os.path.join(work, f"op_{op}.onnx")
        onnx.save(m, path)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {"x": xa if op == "Sqrt" else x, "y": ya}
        with np.errstate(all="ignore"):
            want = fn()
        got = sess.run(None, {k: feeds[k] for k in ins})[0]
        if not same_bits(got, want).all():
            print(f"FAIL: ONNX Runtime's {op} alone differs from numpy's float16")
            bad += 1
    if not bad:
        print(f"ok ONNX Runtime op by op: {', '.join(cases)} equal numpy's float16 (each result rounded)")
    return bad


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        print(f"FAIL: exit {p.returncode}: {' '.join(cmd)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        sys.exit(1)
    return p


def ingot_outputs(runner, bundle, work, tag, x_path, y_path):
    out = os.path.join(work, f"{tag}.npz")
    run([*runner, "run", bundle, "--input", f"x={x_path}", "--input", f"y={y_path}", "--output", out,
         "--threads", "2"])
    with np.load(out) as z:
        return {k[:-4] if k.endswith(".npy") else k: z[k] for k in z.files}


def objdump_tool(arch):
    for t in ("llvm-objdump", "llvm-objdump-14", f"{arch}-linux-gnu-objdump"):
        if shutil.which(t):
            return shutil.which(t)
    return None


def disassemble(ingot, bundle, target, work, arch):
    tool = objdump_tool(arch)
    if not tool:
        return None
    code = os.path.join(work, target.replace(" ", "_").replace("=", "_") + ".so")
    run([ingot, "inspect", bundle, "--extract-code", target, "-o", code])
    extra = ["--mattr=+fullfp16"] if arch == "aarch64" and "llvm" in os.path.basename(tool) else []
    return run([tool, "-d", *extra, code]).stdout  # (LLVM's disassembler shows FP16 only when told)


def cross_ingot(source, build):
    """The AArch64 `ingot` (runtime and run path), cross-built as tests/aarch64 does; None if it cannot be."""
    if not source or not build:
        return None
    if not (shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")
            and os.path.exists(os.path.join(SYSROOT, "lib", "ld-linux-aarch64.so.1"))):
        return None
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        run(["cmake", "-S", source, "-B", build, f"-DCMAKE_TOOLCHAIN_FILE={source}/cmake/aarch64-linux-gnu.cmake",
             "-DINGOT_RUNTIME_ONLY=ON", "-DINGOT_RUN_TOOL=ON", "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", build, "-j2"])
    return os.path.join(build, "ingot")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--source")
    ap.add_argument("--cross-build")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    import onnxruntime as ort

    model = os.path.join(a.work, "half_chain.onnx")
    w = make_model(model)
    x, y = make_inputs()
    x_path, y_path = os.path.join(a.work, "x.npy"), os.path.join(a.work, "y.npy")
    np.save(x_path, x)
    np.save(y_path, y)
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    want = dict(zip(names, sess.run(None, {"x": x, "y": y})))
    ref = reference(x, y, w)
    failures = single_ops(ort, a.work, x, y)
    close("ONNX Runtime (chain)", ref, want, "the per-op reference")
    inf = {k: int(np.isinf(v).sum()) for k, v in want.items()}
    sub = {k: int(((v != 0) & (np.abs(v.astype(np.float32)) < 6.1035e-5)).sum()) for k, v in want.items()}
    print(f"ONNX Runtime's outputs: infinities {inf}, subnormals {sub}")
    ran = 0

    # 1. AArch64 with fullfp16 under qemu: native float16 arithmetic (auto).
    a64 = "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"
    cross = cross_ingot(a.source, a.cross_build)
    bundle = os.path.join(a.work, "a64.ingot")
    run([a.ingot, "compile", model, "-o", bundle, "--target", a64, "-q"])
    text = disassemble(a.ingot, bundle, "llvm -mcpu=neoverse-n1", a.work, "aarch64")
    if text is None:
        print("note: no objdump: the AArch64 instructions not checked")
    else:
        counts = {}
        for line in text.splitlines():
            parts = line.split("\t")  # "addr: bytes", mnemonic, operands
            if len(parts) >= 3 and (".8h" in parts[-1] or ".4h" in parts[-1]):
                op = parts[-2].strip()
                if op in ("fadd", "fsub", "fmul", "fdiv", "fsqrt", "fmax", "fmin", "fcmgt", "fcmge", "fcmeq"):
                    counts[op] = counts.get(op, 0) + 1
        print(f"{a64}: float16 vector arithmetic: {counts or 'none'}")
        if sum(op in counts for op in ("fadd", "fsub", "fmul", "fdiv", "fsqrt")) < 4:
            print("FAIL: the AArch64 code should compute in float16 (fadd/fmul/fdiv/fsqrt .8h)")
            failures += 1
    if cross:
        runner = ["qemu-aarch64", "-L", SYSROOT, "-E", f"LD_LIBRARY_PATH={SYSROOT}/lib", cross]
        got = ingot_outputs(runner, bundle, a.work, "a64", x_path, y_path)
        failures += compare(f"{a64} under qemu", got, ref)
        failures += close(a64, got, want)
        ran += 1
    else:
        print("note: no cross tools (aarch64-linux-gnu-gcc, qemu-aarch64, libc6-dev-arm64-cross): "
              "the AArch64 run skipped")

    # 2. This host's default target and c: per-op float16 through float32
    #    with --half-ops f16; float32 with one rounding by default.
    for target in ("llvm", "c"):
        for mode in ("f16", "auto"):
            bundle = os.path.join(a.work, f"{target}_{mode}.ingot")
            run([a.ingot, "compile", model, "-o", bundle, "--target", target, "--half-ops", mode, "-q"])
            got = ingot_outputs([a.ingot], bundle, a.work, f"{target}_{mode}", x_path, y_path)
            ran += 1
            if mode == "f16":
                failures += compare(f"{target} --half-ops f16", got, ref)
            failures += close(f"{target} --half-ops {mode}", got, want)

    # 3. Sapphire Rapids (AVX512-FP16): compiled, not run.
    spr = "llvm -mcpu=sapphirerapids"
    bundle = os.path.join(a.work, "spr.ingot")
    run([a.ingot, "compile", model, "-o", bundle, "--target", spr, "-q"])
    text = disassemble(a.ingot, bundle, spr, a.work, "x86_64")
    if text is None:
        print("note: no objdump: the AVX512-FP16 instructions not checked")
    else:
        counts = {op: text.count(op) for op in ("vaddph", "vmulph", "vdivph", "vsqrtph")}
        print(f"{spr}: {counts} (compiled only: this CPU has no AVX512-FP16)")
        if not counts["vaddph"] or not counts["vmulph"]:
            print("FAIL: the Sapphire Rapids code should compute in float16 (vaddph, vmulph)")
            failures += 1
    if failures:
        print(f"FAIL: {failures} check(s)")
        return 1
    print("OK" if ran else "SKIP: nothing ran")
    return 0 if ran else 77


if __name__ == "__main__":
    sys.exit(main())
