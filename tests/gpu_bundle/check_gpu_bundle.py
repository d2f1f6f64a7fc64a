#!/usr/bin/env python3
"""GPU variants checked without a GPU (issue 11's compile-time checks).

  check_gpu_bundle.py --ingot BUILD/ingot --work DIR [--ptxas PATH] [--run]
                      [--bert small|base] MODEL.onnx [MODEL.onnx ...]

For each model: `ingot compile MODEL --target cuda -arch=sm_90 --target rocm
-mcpu=gfx90a --target llvm` (the unquoted form) gives one bundle whose
`ingot inspect --json` lists three variants (loaders cuda, hip, cpu-elf; every
GPU step with a grid); the CUDA variant's code set holds a CUBIN for sm_90 and
PTX for compute_90, the PTX has one .entry per unique kernel (the count
`ingot compile` prints), the CUBIN's symbol table (readelf) lists each of
them, the PTX passes ptxas for sm_90; the ROCm variant's code object lists
each kernel and its descriptor (NAME.kd). With --run (first model only): the
bundle runs here on its CPU variant and matches ONNX Runtime; `--device
cuda` fails with one clear line; a bundle with only GPU variants fails to run
with one line that names why each variant was skipped, and `ingot inspect`
still shows it. Exit 0 when all holds, 1 otherwise, 77 when readelf, NVRTC or
hiprtc is missing (the GPU targets cannot be compiled here).
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys

import numpy as np

FAILURES = []


class Skip(Exception):
    """A GPU compiler (NVRTC, hiprtc) is missing on this machine."""


def fail(msg):
    print("FAIL: " + msg)
    FAILURES.append(msg)


def run(cmd, ok=True, timeout=900):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if ok and p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {p.returncode}:\n{p.stdout}{p.stderr}")
    return p


def code_set(data):
    """Entries of a CUDA code set (runtime/ingot_format.h) -> {kind: (arch, bytes)}."""
    if data[:8] != b"INGOTGPU":
        raise ValueError("no INGOTGPU header")
    version, count = struct.unpack_from("<II", data, 8)
    if version != 1 or not 1 <= count <= 8:
        raise ValueError(f"version {version}, count {count}")
    out = {}
    for i in range(count):
        kind, arch, off, size = struct.unpack_from("<IIQQ", data, 16 + 24 * i)
        if off % 16 or off + size > len(data):
            raise ValueError(f"entry {i}: offset {off} size {size} in {len(data)} bytes")
        out[kind] = (arch, data[off:off + size])
    return out


def elf_symbols(path):
    p = run(["readelf", "-W", "-s", path])
    names = set()
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0].rstrip(":").isdigit():
            names.add(f[-1])  # the name is last (readelf may print "[<other>: 10]" before it)
    return names


def given_inputs(model):
    """Inputs saved beside a model as STEM_inputs/NAME.npy (models/make_bert.py
    writes them: token ids and a mask that random numbers would not make)."""
    folder = os.path.splitext(model)[0] + "_inputs"
    if not os.path.isdir(folder):
        return {}
    return {f[:-4]: np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".npy")}


def check_model(args, model, first):
    name = os.path.splitext(os.path.basename(model))[0]
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    bundle = os.path.join(work, "model.ingot")
    shapes = [a for n, x in given_inputs(model).items()
              for a in ("--input-shape", f"{n}={'x'.join(map(str, x.shape))}")]
    # --tuning-log none: the CPU variant's default schedules on every machine (the
    # built-in logs apply only on the CPU they were tuned on, and once hid a
    # default that failed to compile with unpacked weights)
    p = run([args.ingot, "compile", model, "-o", bundle, *shapes, "--target", "cuda", "-arch=sm_90",
             "--target", "rocm", "-mcpu=gfx90a", "--target", "llvm", "--tuning-log", "none"], ok=False)
    if p.returncode != 0 and "is not available" in p.stderr:
        raise Skip(p.stderr.strip())
    if p.returncode != 0:
        fail(f"{name}: ingot compile exited {p.returncode}: {p.stderr.strip()}")
        return
    m = re.search(r"\((\d+) unique kernels\)", p.stdout)
    if not m:
        fail(f"{name}: no kernel count in the compile output:\n{p.stdout}")
        return
    kernels = int(m.group(1))
    info = json.loads(run([args.ingot, "inspect", bundle, "--json"]).stdout)
    loaders = sorted(v["loader"] for v in info["variants"])
    if loaders != ["cpu-elf", "cuda", "hip"]:
        fail(f"{name}: variants {loaders}, want cpu-elf, cuda, hip")
    targets = {v["loader"]: v["target"] for v in info["variants"]}
    if targets.get("cuda") != "cuda -arch=sm_90" or targets.get("hip") != "rocm -mcpu=gfx90a":
        fail(f"{name}: GPU variant targets {targets}")
    if not info["loaded_target"].startswith("llvm"):
        fail(f"{name}: loaded '{info['loaded_target']}' here, want the llvm variant ({info['target_reason']})")
    for v in info["variants"]:
        if v["loader"] in ("cuda", "hip") and "grid" not in v["launch"]:
            fail(f"{name}: {v['loader']} variant's launch '{v['launch']}' has no grid")

    # CUDA: the code set, PTX entries, CUBIN symbols, ptxas.
    cuda = os.path.join(work, "cuda.codeset")
    run([args.ingot, "inspect", bundle, "--extract-code", "cuda -arch=sm_90", "-o", cuda])
    try:
        entries = code_set(open(cuda, "rb").read())
    except ValueError as e:
        fail(f"{name}: CUDA code set: {e}")
        return
    if set(entries) != {1, 2} or entries[1][0] != 90 or entries[2][0] != 90:
        fail(f"{name}: code set entries {[(k, a) for k, (a, _) in entries.items()]}, want CUBIN 90 + PTX 90")
        return
    cubin, ptx = os.path.join(work, "k.cubin"), os.path.join(work, "k.ptx")
    open(cubin, "wb").write(entries[1][1])
    open(ptx, "wb").write(entries[2][1].rstrip(b"\0"))
    names = re.findall(rb"\.entry\s+([A-Za-z_][A-Za-z0-9_$]*)", entries[2][1])
    names = sorted(set(n.decode() for n in names))
    if len(names) != kernels:
        fail(f"{name}: PTX has {len(names)} entries, compile reported {kernels} unique kernels")
    missing = [n for n in names if n not in elf_symbols(cubin)]
    if missing:
        fail(f"{name}: CUBIN lacks {missing[:5]}")
    if args.ptxas:
        p = run([args.ptxas, "-arch=sm_90", ptx, "-o", os.path.join(work, "ptxas.cubin")], ok=False)
        if p.returncode != 0:
            fail(f"{name}: ptxas rejects the PTX: {p.stderr[:2000]}")
    # ROCm: the code object's kernels and descriptors.
    hsaco = os.path.join(work, "k.hsaco")
    run([args.ingot, "inspect", bundle, "--extract-code", "rocm -mcpu=gfx90a", "-o", hsaco])
    head = open(hsaco, "rb").read(20)
    if head[:4] != b"\x7fELF" or head[18] != 224:
        fail(f"{name}: the ROCm code is not an AMDGPU ELF")
    syms = elf_symbols(hsaco)
    missing = [n for n in names if n not in syms or n + ".kd" not in syms]
    if missing:
        fail(f"{name}: the ROCm code object lacks {missing[:5]}")
    print(f"{name}: 3 variants; {kernels} kernels in the CUBIN, PTX (ptxas {'ok' if args.ptxas else 'not run'}) "
          f"and the gfx90a code object; CUBIN {len(entries[1][1])} B, PTX {len(entries[2][1])} B")
    if first and args.run:
        check_run(args, model, bundle, work, shapes)


def one_error_line(p, what, needle):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    if p.returncode == 0 or len(lines) != 1 or needle not in lines[0]:
        fail(f"{what}: exit {p.returncode}, stderr {p.stderr!r} (want one line naming '{needle}')")


def check_run(args, model, bundle, work, shapes):
    import onnxruntime as ort
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds, flags = {}, []
    given = given_inputs(model)
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        x = given[i.name] if i.name in given else rng.standard_normal(shape).astype(np.float32)
        feeds[i.name] = x
        path = os.path.join(work, f"in{len(flags)}.npy")
        np.save(path, x)
        flags += ["--input", f"{i.name}={path}"]
    ref = sess.run(None, feeds)
    out = os.path.join(work, "out.npz")
    p = run([args.ingot, "run", bundle, *flags, "--output", out, "--verbose"])
    if "llvm" not in p.stdout + p.stderr:
        fail(f"run --verbose does not name the llvm variant:\n{p.stdout}{p.stderr}")
    with np.load(out) as got:
        for o, want in zip(sess.get_outputs(), ref):
            g = got[o.name]
            err = float(np.max(np.abs(g - want) / (1e-4 + 1e-3 * np.abs(want))))
            print(f"  CPU variant vs onnxruntime, {o.name}: max |err| / (1e-4 + 1e-3 |ref|) = {err:.3g}")
            if err > 1.0:
                fail(f"CPU variant output '{o.name}' differs from onnxruntime")
    p = run([args.ingot, "run", bundle, *flags, "--device", "cuda"], ok=False)
    one_error_line(p, "run --device cuda without a GPU", "cuda")
    gpu_only = os.path.join(work, "gpu_only.ingot")
    run([args.ingot, "compile", model, "-o", gpu_only, *shapes, "--target", "cuda", "-arch=sm_90", "--target", "rocm"])
    p = run([args.ingot, "run", gpu_only, *flags], ok=False)
    one_error_line(p, "run of a bundle with only GPU variants", "no code variant runs on this machine")
    if os.path.exists(out + ".partial"):
        fail("a partial output file was left")
    info = json.loads(run([args.ingot, "inspect", gpu_only, "--json"]).stdout)
    if info["loaded_target"] != "" or "cuda" not in info["target_reason"] or len(info["variants"]) != 2:
        fail(f"inspect of the GPU-only bundle: loaded '{info['loaded_target']}', reason '{info['target_reason']}'")
    print(f"  GPU-only bundle: {p.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--ptxas", default=None)
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--bert", metavar="SIZE", help="also make models/make_bert.py's model of SIZE and check it")
    args = ap.parse_args()
    if args.bert:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        bert = os.path.join(args.work, f"bert_{args.bert}.onnx")
        if not os.path.exists(bert):
            os.makedirs(args.work, exist_ok=True)
            run([sys.executable, os.path.join(root, "models", "make_bert.py"), "--out", args.work,
                 "--size", args.bert])
        args.models.append(bert)
    if not shutil.which("readelf"):
        print("SKIP: readelf is missing")
        return 77
    if args.ptxas and not os.path.exists(args.ptxas):
        args.ptxas = None
    try:
        for i, model in enumerate(args.models):
            check_model(args, model, i == 0)
    except Skip as e:
        print(f"SKIP: {e}")
        return 77
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("all GPU bundle checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
