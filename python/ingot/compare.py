"""Checks one ONNX model end to end: Ingot against ONNX Runtime.

  python -m ingot.compare MODEL.onnx [--input-shape NAME=1x3x224x224]...
         [--input NAME=FILE.npy]... [--const NAME=FILE.npy]... [--seed S] [--rtol 1e-3] [--atol 1e-4]
         [--target T]... [--threads N] [--via session|cli] [--ingot BIN]
         [--labels Y.npy --expected EXPECTED.json] [--work DIR]

Makes seeded random inputs for every graph input not given with --input
(floats standard normal, integers in [0, 10), bools 0/1; symbolic dimensions
are 1 unless --input-shape fixes them), runs onnxruntime, compiles the model
with `ingot compile` and runs the bundle, then compares each output:
|ingot - ort| <= atol + rtol * |ort| elementwise. Prints the max absolute and
relative error per output. With --labels, also checks that the argmax
accuracy of the first output equals the one recorded in --expected (keys
"correct" and "count", as written by models/make_digits.py).

--via session (the default) runs the bundle in this process through
libingot (ingot.Session); --via cli runs `ingot run --input NAME=... --output`
instead (what tests/e2e/compare.py does, so the CLI's run path and a tool
under an emulator can be checked). --ingot names the `ingot` tool (default:
found as ingot._locate says).
--const NAME=FILE.npy feeds the data to ONNX Runtime as an input and binds
it at compile time (`ingot compile --const`): the bundle has no such input.
Exit 0 when everything matches, 1 otherwise.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from ._locate import NotFoundError, find_tool
from .session import IngotError, Session

ORT_TO_NUMPY = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8,
    "tensor(int8)": np.int8, "tensor(bool)": np.bool_,
}


def npz_member_name(name):
    """What `ingot run --output` stores an output as (see cli/npy.h)."""
    return "".join("_" if (c in "/\\" or ord(c) < 0x20 or ord(c) == 0x7F) else c for c in name)


def parse_dims(text):
    try:
        dims = [int(d) for d in text.lower().split("x")]
    except ValueError:
        raise SystemExit(f"ingot.compare: bad dims '{text}' (expected e.g. 1x3x224x224)")
    return dims


def make_input(rng, dtype, shape):
    if dtype in (np.float32, np.float64, np.float16):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    return rng.integers(0, 10, size=shape).astype(dtype)


def run_cmd(cmd, what):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        print(f"FAIL: {what} exited {p.returncode} after {dt:.1f}s: {' '.join(cmd)}")
        sys.stdout.write(p.stdout[-4000:])
        sys.stdout.write(p.stderr[-4000:])
        return None, dt
    return p, dt


def main(argv=None, prog=None, default_via="session"):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--ingot", help="path to the ingot tool (default: found as ingot._locate says)")
    ap.add_argument("--via", choices=["session", "cli"], default=default_via,
                    help=f"run the bundle through libingot in this process (session) or with "
                         f"`ingot run` (cli); default {default_via}")
    ap.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    ap.add_argument("--const", action="append", default=[], metavar="NAME=FILE.npy",
                    help="an input bound at compile time (ingot compile --const), fed to onnxruntime as given")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--int-atol", type=int, default=0,
                    help="integer outputs may differ by this much (quantized outputs: steps); default: equal")
    ap.add_argument("--threads", type=int, default=0, help="0: the runtime's default")
    ap.add_argument("--target", action="append", default=None,
                    help="a code target as `ingot compile --target` takes it (repeatable)")
    ap.add_argument("--labels", help="int labels for an accuracy check on the first output")
    ap.add_argument("--expected", help="JSON with 'correct' and 'count' (needs --labels)")
    ap.add_argument("--work", help="folder for the bundle and tensors (default: a temp dir)")
    ap.add_argument("--layout", help="passed to ingot compile --layout (auto, nchw, nchw4c, nchw8c, nchw16c)")
    ap.add_argument("--max-trips", type=int, help="passed to ingot compile --max-trips (Loops with a run-time trip count)")
    args = ap.parse_args(argv)
    if args.threads < 0:
        ap.error(f"--threads must be 0 or more, not {args.threads}")
    if args.expected and not args.labels:
        ap.error("--expected needs --labels")
    try:
        import onnxruntime as ort
    except ImportError:
        print("FAIL: onnxruntime is not installed (pip install onnxruntime): it is the reference")
        return 1
    if not os.path.isfile(args.model):
        print(f"FAIL: {args.model}: no such file")
        return 1
    try:
        tool = args.ingot or find_tool()
    except NotFoundError as e:
        print(f"FAIL: {e}")
        return 1

    work = args.work or tempfile.mkdtemp(prefix="ingot-e2e-")
    os.makedirs(work, exist_ok=True)
    try:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        sess = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
        fixed = {}
        for item in args.input_shape:
            name, _, dims = item.partition("=")
            fixed[name] = parse_dims(dims)
        given, consts = {}, {}
        for item in args.input + args.const:
            name, _, path = item.partition("=")
            given[name] = np.load(path)
        for item in args.const:
            name, _, path = item.partition("=")
            consts[name] = path
        rng = np.random.default_rng(args.seed)
        feeds, shape_flags, input_flags = {}, [], []
        names = [i.name for i in sess.get_inputs()]
        for extra in set(fixed) | set(given):
            if extra not in names:
                print(f"FAIL: the model has no input '{extra}' (inputs: {names})")
                return 1
        for inp in sess.get_inputs():
            dtype = ORT_TO_NUMPY.get(inp.type)
            if dtype is None:
                print(f"FAIL: input '{inp.name}' has type {inp.type}, which ingot.compare cannot make")
                return 1
            symbolic = any(not isinstance(d, int) or d < 0 for d in inp.shape)
            if inp.name in given:
                data = given[inp.name].astype(dtype, copy=False)
                shape = list(data.shape)
            else:
                shape = fixed.get(inp.name) or [d if isinstance(d, int) and d >= 0 else 1
                                                for d in inp.shape]
                data = make_input(rng, dtype, shape)
            if inp.name in consts:
                feeds[inp.name] = data
                continue
            if symbolic or inp.name in fixed or list(shape) != list(inp.shape):
                shape_flags += ["--input-shape", f"{inp.name}={'x'.join(str(d) for d in shape)}"]
            feeds[inp.name] = data
            if args.via == "cli":
                path = os.path.join(work, f"input{len(input_flags) // 2}.npy")
                np.save(path, np.array(data, order="C"))  # (ascontiguousarray makes a scalar 1-D)
                input_flags += ["--input", f"{inp.name}={path}"]

        t0 = time.monotonic()
        ref = sess.run(None, feeds)
        ort_s = time.monotonic() - t0
        out_names = [o.name for o in sess.get_outputs()]

        bundle = os.path.join(work, "model.ingot")
        cmd = [tool, "compile", args.model, "-o", bundle, *shape_flags]
        for name, path in consts.items():
            cmd += ["--const", f"{name}={path}"]
        for target in args.target or []:
            cmd += ["--target", target]
        if args.layout:
            cmd += ["--layout", args.layout]
        if args.max_trips is not None:
            cmd += ["--max-trips", str(args.max_trips)]
        p, compile_s = run_cmd(cmd, "ingot compile")
        if p is None:
            return 1
        if args.via == "cli":
            out = os.path.join(work, "outputs.npz")
            cmd = [tool, "run", bundle, *input_flags, "--output", out]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            p, run_s = run_cmd(cmd, "ingot run")
            if p is None:
                return 1
            with np.load(out) as npz:
                got_all = {name: npz[npz_member_name(name)] for name in out_names
                           if npz_member_name(name) in npz.files}
            where = f"ingot run {run_s:.2f}s (process)"
        else:
            try:
                t0 = time.monotonic()
                with Session(bundle, threads=args.threads) as session:
                    open_s = time.monotonic() - t0
                    t0 = time.monotonic()
                    got_all = session.run({k: v for k, v in feeds.items() if k not in consts})
                    run_s = time.monotonic() - t0
                    target = session.target
            except (IngotError, NotFoundError, ValueError, TypeError, OSError) as e:
                print(f"FAIL: running {bundle} through libingot: {type(e).__name__}: {e}")
                return 1
            where = f"open {open_s * 1e3:.1f} ms, run {run_s * 1e3:.1f} ms ({target})"
        print(f"{os.path.basename(args.model)}: compile {compile_s:.2f}s, {where}, "
              f"onnxruntime {ort_s * 1e3:.1f} ms")

        ok = True
        for name, want in zip(out_names, ref):
            if name not in got_all:
                print(f"FAIL: output '{name}' missing from Ingot's outputs (has {sorted(got_all)})")
                ok = False
                continue
            got = got_all[name]
            if got.shape != want.shape:
                print(f"FAIL: output '{name}': shape {got.shape}, onnxruntime {want.shape}")
                ok = False
                continue
            if got.dtype != want.dtype:
                print(f"FAIL: output '{name}': dtype {got.dtype}, onnxruntime {want.dtype}")
                ok = False
                continue
            if want.dtype.kind in "fc":
                g = got.astype(np.float64)
                w = want.astype(np.float64)
                diff = np.abs(g - w)
                finite = np.isfinite(w) & np.isfinite(g)
                same_nonfinite = np.array_equal(np.isnan(g), np.isnan(w)) and \
                    np.array_equal(np.where(np.isinf(w), w, 0), np.where(np.isinf(g), g, 0))
                max_abs = float(diff[finite].max()) if finite.any() else 0.0
                rel = diff[finite] / np.maximum(np.abs(w[finite]), 1e-12)
                max_rel = float(rel.max()) if rel.size else 0.0
                bad = ~(diff <= args.atol + args.rtol * np.abs(w)) & finite
                good = (not bad.any()) and same_nonfinite
                print(f"  {name}: {list(want.shape)} max abs err {max_abs:.3g}, "
                      f"max rel err {max_rel:.3g}, {int(bad.sum())} of {want.size} outside "
                      f"atol {args.atol:g} + rtol {args.rtol:g} -> {'ok' if good else 'MISMATCH'}")
                if not good:
                    idx = np.unravel_index(int(np.argmax(np.where(bad, diff, -1))), want.shape)
                    print(f"    worst at {tuple(int(i) for i in idx)}: ingot {got[idx]!r}, "
                          f"onnxruntime {want[idx]!r}")
                    ok = False
            elif args.int_atol > 0 and want.dtype.kind in "iu":
                # quantized outputs: within int_atol steps, how many differ said
                diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
                good = int(diff.max(initial=0)) <= args.int_atol
                print(f"  {name}: {list(want.shape)} {int((diff != 0).sum())} of {want.size} differ, max "
                      f"{int(diff.max(initial=0))} (int atol {args.int_atol}) -> {'ok' if good else 'MISMATCH'}")
                ok = ok and good
            else:
                equal = np.array_equal(got, want)
                print(f"  {name}: {list(want.shape)} {'equal' if equal else 'MISMATCH'}")
                ok = ok and equal

        if args.labels:
            labels = np.load(args.labels)
            first = got_all[out_names[0]]
            correct = int((first.reshape(len(labels), -1).argmax(axis=1) == labels).sum())
            ort_correct = int((ref[0].reshape(len(labels), -1).argmax(axis=1) == labels).sum())
            line = (f"  accuracy: ingot {correct}/{len(labels)} = {correct / len(labels):.4f}, "
                    f"onnxruntime now {ort_correct}/{len(labels)}")
            if args.expected:
                with open(args.expected) as f:
                    exp = json.load(f)
                line += f", expected {exp['correct']}/{exp['count']}"
                if exp["count"] != len(labels) or correct != exp["correct"]:
                    ok = False
                    line += " -> MISMATCH"
            print(line)
        print("OK" if ok else "FAIL")
        return 0 if ok else 1
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
