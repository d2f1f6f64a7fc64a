#!/usr/bin/env python3
"""Firmware output (`ingot compile --emit-firmware`) end to end.

For each model (the committed digits model; a small CNN written here with
Conv, Relu, MaxPool, Pow (x^1.5: the kernel calls the firmware's own powf
through the environment), Conv, Sigmoid, GlobalAveragePool, Gemm and
Softmax; the same CNN with Tanh and Erf for Sigmoid, whose kernels compute in
double, so that on Cortex-M4 and RV32 they need the compiler's soft-double
helpers, which this machine lacks for linking):

  1. compile it to firmware files only (no -o: no compiler is run);
  2. host: build the files with the system C compiler and the example's
     main (examples/firmware/main.c), the glue with -Wall -Wextra -Werror,
     run it on random inputs and compare with ONNX Runtime
     (|ingot - ort| <= atol + rtol |ort|, the e2e tests' tolerances);
  3. Cortex-M4: clang --target=thumbv7em-none-eabihf -mcpu=cortex-m4
     -mfloat-abi=hard -ffreestanding -nostdlib -O2 -c; the objects may need
     nothing from outside but the compiler's own helpers (soft float);
     where they need none, link a bare
     image with ld.lld (tests/firmware/bare_start.c), report its size with
     llvm-size, run it under qemu-arm (user mode, no C library) and compare
     its output with ONNX Runtime too;
  4. RV32: clang --target=riscv32 -march=rv32imac ... -c, the same check of
     what the objects need (soft float: the compiler's helpers); then the
     same image for rv32imafc (hardware float) linked and run under
     qemu-riscv32.
And the c target's bundle with a cross compiler in --cc ("clang
--target=aarch64-linux-gnu"): built with no x86 flags, its code for another
machine; an x86-64 level with that compiler is refused.
A missing cross tool (clang without the target, ld.lld, qemu) skips that
part with a message; the host part always runs.

  firmware_test.py --ingot BUILD/ingot --source SRC --work DIR [--cc cc] [--clang clang]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np

RTOL, ATOL = 1e-3, 1e-4
M4 = ["--target=thumbv7em-none-eabihf", "-mcpu=cortex-m4", "-mfloat-abi=hard"]
RV32 = ["--target=riscv32", "-march=rv32imac", "-mabi=ilp32"]
RV32F = ["--target=riscv32", "-march=rv32imafc", "-mabi=ilp32f"]
FREESTANDING = ["-ffreestanding", "-nostdlib", "-O2", "-std=c99"]
FW_FILES = ["ingot_model.c", "ingot_model_kernels.c", "ingot_model_weights.c"]
# What the freestanding objects may still need: the compiler's runtime
# helpers (soft float, 64-bit division), names the compiler itself calls,
# never libm's or libc's (the kernels define memcpy, memmove and memset).
ALLOWED_UNDEFINED = re.compile(r"^(__aeabi_\w+|__\w+[sd]f\d?|__\w+[sd]i\d?|__\w+ti\d?)$")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, **kw)
    if r.returncode != 0:
        sys.stdout.write(r.stdout.decode(errors="replace") if isinstance(r.stdout, bytes) else r.stdout)
        sys.stdout.write(r.stderr.decode(errors="replace") if isinstance(r.stderr, bytes) else r.stderr)
        raise SystemExit(f"FAIL: {' '.join(cmd)} (exit {r.returncode})")
    return r


def make_cnn(path, tanh_erf):
    import onnx
    from onnx import TensorProto, helper

    rng = np.random.default_rng(7)

    def init(name, shape, scale=0.3):
        return helper.make_tensor(name, TensorProto.FLOAT, shape,
                                  (rng.standard_normal(shape) * scale).astype(np.float32).ravel().tolist())

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Pow", ["p1", "e"], ["q1"]),
        helper.make_node("Conv", ["q1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        *([helper.make_node("Tanh", ["c2"], ["t2"]), helper.make_node("Erf", ["t2"], ["f2"])] if tanh_erf
          else [helper.make_node("Sigmoid", ["c2"], ["f2"])]),
        helper.make_node("GlobalAveragePool", ["f2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["fl"]),
        helper.make_node("Gemm", ["fl", "wf", "bf"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1),
    ]
    inits = [init("w1", [8, 3, 3, 3]), init("b1", [8], 0.1), init("w2", [12, 8, 3, 3], 0.2),
             init("b2", [12], 0.1), init("wf", [10, 12]), init("bf", [10], 0.1),
             helper.make_tensor("e", TensorProto.FLOAT, [], [1.5])]
    graph = helper.make_graph(nodes, "tiny_cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def reference(model, feeds):
    import onnxruntime as ort
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def compare(what, got, want):
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bad = ~(diff <= ATOL + RTOL * np.abs(want))
    print(f"  {what}: max |diff| {diff.max():.3g} -> {'ok' if not bad.any() else 'MISMATCH'}")
    if bad.any():
        raise SystemExit(f"FAIL: {what}: {int(bad.sum())} of {bad.size} elements off")


def undefined_symbols(objects, nm):
    defined, undefined = set(), set()
    for o in objects:
        for line in run([nm, o], text=True).stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                undefined.add(parts[1])
            elif len(parts) == 3:
                defined.add(parts[2])
    return sorted(undefined - defined)


def have_target(clang, flags, work):
    probe = os.path.join(work, "probe.c")
    with open(probe, "w") as f:
        f.write("int probe(int x) { return x + 1; }\n")
    r = subprocess.run([clang, *flags, "-ffreestanding", "-c", probe, "-o", probe + ".o"], capture_output=True)
    return r.returncode == 0


def write_io_c(path, inputs, header):
    """fw_io.c: the inputs' bytes, the outputs' buffers, for bare_start.c."""
    with open(path, "w") as f:
        f.write('#include "ingot_model.h"\n\n')
        for i, a in enumerate(inputs):
            data = a.tobytes()
            f.write(f"static const uint8_t in{i}[{len(data)}] __attribute__((aligned(16))) = {{")
            f.write(",".join(str(b) for b in data))
            f.write("};\n")
        f.write(f"const void* const fw_inputs[] = {{{', '.join(f'in{i}' for i in range(len(inputs)))}}};\n")
        outs = header["outputs"]
        for i, bytes_ in enumerate(outs):
            f.write(f"static uint8_t out{i}[{bytes_}] __attribute__((aligned(16)));\n")
        f.write(f"void* const fw_outputs[] = {{{', '.join(f'out{i}' for i in range(len(outs)))}}};\n")
        f.write(f"const uint32_t fw_output_bytes[] = {{{', '.join(str(b) for b in outs)}}};\n")


def read_header(path):
    text = open(path).read()
    def macro(name):
        m = re.search(rf"#define {name} (\S+)", text)
        return m.group(1) if m else None
    nin, nout = int(macro("INGOT_MODEL_INPUT_COUNT").rstrip("u")), int(macro("INGOT_MODEL_OUTPUT_COUNT").rstrip("u"))
    return {
        "arena": int(macro("INGOT_MODEL_ARENA_BYTES").rstrip("u")),
        "inputs": [int(macro(f"INGOT_MODEL_INPUT{i}_BYTES").rstrip("u")) for i in range(nin)],
        "outputs": [int(macro(f"INGOT_MODEL_OUTPUT{i}_BYTES").rstrip("u")) for i in range(nout)],
        "input_names": [macro(f"INGOT_MODEL_INPUT{i}_NAME").strip('"') for i in range(nin)],
    }


def cross(name, fw, work, clang, tools, flags, label, inputs, want, link_flags=None, emulator=None):
    """Compiles the firmware files for one machine; checks what they need;
    links, sizes and runs an image where it can. Returns the sizes or None."""
    print(f"  {label}: {' '.join(flags)}")
    if not have_target(clang, flags, work):
        print(f"  SKIP {label}: {clang} cannot compile for {' '.join(flags)}")
        return None
    objs = []
    for src in FW_FILES:
        obj = os.path.join(work, f"{label}_{src}.o")
        run([clang, *flags, *FREESTANDING, "-w", "-c", os.path.join(fw, src), "-o", obj])
        objs.append(obj)
    if not tools["llvm-nm"]:
        print(f"  SKIP {label} symbol check: no llvm-nm")
        return None
    need = undefined_symbols(objs, tools["llvm-nm"])
    bad = [s for s in need if not ALLOWED_UNDEFINED.match(s)]
    if bad:
        raise SystemExit(f"FAIL: {label}: the firmware objects need {bad} from outside")
    helpers = need
    print(f"  {label}: objects need {need if need else 'nothing'} from outside")
    if link_flags is None:
        return None
    if helpers:
        print(f"  SKIP {label} link: needs the compiler's runtime helpers {helpers}, which this machine lacks")
        return None
    if not tools["ld.lld"]:
        print(f"  SKIP {label} link: no ld.lld")
        return None
    io_c = os.path.join(work, "fw_io.c")
    write_io_c(io_c, inputs, read_header(os.path.join(fw, "ingot_model.h")))
    extra = []
    for src in (os.path.join(os.path.dirname(os.path.abspath(__file__)), "bare_start.c"), io_c):
        obj = os.path.join(work, f"{label}_{os.path.basename(src)}.o")
        run([clang, *flags, *FREESTANDING, "-fomit-frame-pointer", f"-I{fw}", "-c", src, "-o", obj])
        extra.append(obj)
    image = os.path.join(work, f"{name}_{label}.elf")
    run([tools["ld.lld"], *link_flags, "--gc-sections", "-e", "_start", "-o", image, *objs, *extra])
    # The model alone: the image without the test's input and start code.
    model_image = os.path.join(work, f"{name}_{label}_model.elf")
    run([tools["ld.lld"], *link_flags, "--gc-sections", "-e", "ingot_model_run", "-u", "ingot_model_run",
         "-o", model_image, *objs])
    sizes = None
    if tools["llvm-size"]:
        out = run([tools["llvm-size"], "-A", model_image], text=True).stdout
        sec = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit():
                sec[parts[0]] = int(parts[1])
        text = sec.get(".text", 0)
        rodata = sum(v for k, v in sec.items() if k.startswith(".rodata") or k == ".ARM.exidx")
        data = sec.get(".data", 0)
        bss = sec.get(".bss", 0)
        sizes = {"text": text, "rodata": rodata, "data": data, "bss": bss}
        print(f"  {label} image of the model (ingot_model_run and all it reaches): text {text} + rodata {rodata} "
              f"+ data {data} = {text + rodata + data} bytes of flash; arena (caller's, RAM) "
              f"{read_header(os.path.join(fw, 'ingot_model.h'))['arena']} bytes; bss {bss}")
    if emulator and shutil.which(emulator):
        r = subprocess.run([emulator, image], capture_output=True, timeout=600)
        if r.returncode != 0:
            raise SystemExit(f"FAIL: {label} image under {emulator}: exit {r.returncode} {r.stderr[-400:]!r}")
        got = np.frombuffer(r.stdout, dtype=np.float32)
        flat = np.concatenate([w.astype(np.float32).ravel() for w in want])
        if got.size != flat.size:
            raise SystemExit(f"FAIL: {label} under {emulator}: {got.size} floats out, {flat.size} expected")
        compare(f"{label} under {emulator} vs onnxruntime", got, flat)
    elif emulator:
        print(f"  SKIP {label} run: no {emulator}")
    return sizes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--source", required=True, help="the source tree")
    ap.add_argument("--work", required=True)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--clang", default="clang")
    ap.add_argument("--model", choices=["digits", "cnn", "all"], default="all")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    tools = {t: shutil.which(t) or shutil.which(f"{t}-14") for t in ("llvm-nm", "llvm-size", "ld.lld")}
    clang = shutil.which(args.clang)
    example = os.path.join(args.source, "examples", "firmware", "main.c")

    models = []
    if args.model in ("digits", "all"):
        models.append(("digits", os.path.join(args.source, "models", "digits", "model.onnx"), ["input=1x1x8x8"]))
    if args.model in ("cnn", "all"):
        for name, tanh_erf in (("tiny_cnn", False), ("tiny_cnn_tanh_erf", True)):
            cnn = os.path.join(args.work, f"{name}.onnx")
            make_cnn(cnn, tanh_erf)
            models.append((name, cnn, []))

    rng = np.random.default_rng(0)
    for name, model, shapes in models:
        print(f"== {name}")
        work = os.path.join(args.work, name)
        fw = os.path.join(work, "fw")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        cmd = [args.ingot, "compile", model, "--target", "c", "--emit-firmware", fw, "-q"]
        for s in shapes:
            cmd += ["--input-shape", s]
        run(cmd)
        for f in ["ingot_model.h", *FW_FILES]:
            if not os.path.isfile(os.path.join(fw, f)):
                raise SystemExit(f"FAIL: {f} not written")
        header = read_header(os.path.join(fw, "ingot_model.h"))

        # Inputs: random, shaped as ONNX Runtime wants them.
        import onnxruntime as ort
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        feeds, inputs = {}, []
        for i, meta in enumerate(sess.get_inputs()):
            dims = [int(d) for d in shapes[0].split("=")[1].split("x")] if shapes else meta.shape
            a = rng.standard_normal(dims).astype(np.float32)
            if a.nbytes != header["inputs"][i]:
                raise SystemExit(f"FAIL: input {i}: header says {header['inputs'][i]} bytes, model {a.nbytes}")
            feeds[meta.name] = a
            inputs.append(a)
        want = reference(model, feeds)

        # Host build: the glue warning-free and freestanding; then the program.
        run([args.cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-ffreestanding", "-c",
             os.path.join(fw, "ingot_model.c"), "-o", os.path.join(work, "glue_check.o")])
        exe = os.path.join(work, "host_model")
        run([args.cc, "-std=c99", "-O2", f"-I{fw}", "-o", exe, example,
             *[os.path.join(fw, f) for f in FW_FILES]])
        in_paths, out_paths = [], []
        for i, a in enumerate(inputs):
            p = os.path.join(work, f"in{i}.bin")
            a.tofile(p)
            in_paths.append(p)
        for i in range(len(want)):
            out_paths.append(os.path.join(work, f"out{i}.bin"))
        r = run([exe, *in_paths, *out_paths], text=True)
        print("  host: " + r.stdout.strip())
        for i, w in enumerate(want):
            got = np.fromfile(out_paths[i], dtype=np.float32).reshape(w.shape)
            compare(f"host output {i} vs onnxruntime", got, w)

        if not clang:
            print(f"  SKIP cross builds: no {args.clang}")
            continue
        sizes = cross(name, fw, work, clang, tools, M4, "cortex-m4", inputs, want,
                      link_flags=["-m", "armelf"], emulator="qemu-arm")
        cross(name, fw, work, clang, tools, RV32, "rv32imac", inputs, want)
        cross(name, fw, work, clang, tools, RV32F, "rv32imafc", inputs, want,
              link_flags=["-m", "elf32lriscv"], emulator="qemu-riscv32")
        if sizes:
            print(f"  SIZE {name} cortex-m4: text {sizes['text']} rodata {sizes['rodata']} data {sizes['data']} "
                  f"flash {sizes['text'] + sizes['rodata'] + sizes['data']} arena {header['arena']}")
    if args.model in ("digits", "all"):
        # The command line: --emit-firmware needs target c; -o or it is required.
        model = os.path.join(args.source, "models", "digits", "model.onnx")
        fw = os.path.join(args.work, "refused")
        r = subprocess.run([args.ingot, "compile", model, "--input-shape", "input=1x1x8x8", "--target", "x86-64",
                            "--emit-firmware", fw], capture_output=True, text=True)
        if r.returncode != 1 or "--emit-firmware needs exactly one target, of kind c" not in r.stderr \
                or os.path.exists(fw):
            raise SystemExit(f"FAIL: --emit-firmware with an llvm target: exit {r.returncode}, {r.stderr!r}")
        r = subprocess.run([args.ingot, "compile", model, "--input-shape", "input=1x1x8x8"], capture_output=True,
                           text=True)
        if r.returncode != 2 or "--emit-firmware DIR" not in r.stderr:
            raise SystemExit(f"FAIL: neither -o nor --emit-firmware: exit {r.returncode}, {r.stderr!r}")
        print("  command line: --emit-firmware refuses llvm targets; -o or --emit-firmware required, ok")
    if args.model in ("digits", "all") and clang:
        # The c target's shared object with a cross compiler (flags in --cc):
        # no x86 flags reach it; the bundle's code is for another machine.
        if have_target(clang, ["--target=aarch64-linux-gnu"], args.work):
            bundle = os.path.join(args.work, "digits_aarch64.ingot")
            model = os.path.join(args.source, "models", "digits", "model.onnx")
            run([args.ingot, "compile", model, "--input-shape", "input=1x1x8x8", "--target", "c", "-q",
                 "--cc", f"{clang} --target=aarch64-linux-gnu", "-o", bundle])
            out = subprocess.run([args.ingot, "inspect", bundle], capture_output=True, text=True).stdout
            if "for another machine" not in out:
                raise SystemExit(f"FAIL: the aarch64 bundle's code is not for another machine:\n{out}")
            print("  c target with --cc 'clang --target=aarch64-linux-gnu': aarch64 code, ok")
            r = subprocess.run([args.ingot, "compile", model, "--input-shape", "input=1x1x8x8", "--target",
                                "c -mcpu=x86-64-v3", "--cc", f"{clang} --target=aarch64-linux-gnu", "-o", bundle],
                               capture_output=True, text=True)
            if r.returncode == 0 or "names an x86-64 level" not in r.stderr:
                raise SystemExit(f"FAIL: an x86-64 level with an aarch64 compiler was not refused: {r.stderr}")
            print("  c -mcpu=x86-64-v3 with an aarch64 compiler: refused, ok")
        else:
            print(f"  SKIP c target cross build: {clang} cannot compile for aarch64-linux-gnu")
    print("PASS")


if __name__ == "__main__":
    main()
