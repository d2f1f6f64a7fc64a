#!/usr/bin/env python3
"""`ingot compile --weights fp16|bf16|int8` (weight-only compression) end to end.

  weights_precision_test.py MODEL.onnx --ingot BIN --work DIR [--target T]
      [--input NAME=FILE.npy]... [--precisions fp16,bf16,int8]
  weights_precision_test.py --refusals MODEL.onnx --ingot BIN --work DIR

For each precision: compiles with `--weights P --weights raw` (both kinds of
value, the codec raw so that sizes are the stored bytes), with the same
inputs given as --accuracy-input; checks that the accuracy report names the
precision and every output, that the weights shrink against the float32
bundle's (the report's "weights: X bytes against Y") to at most
  fp16, bf16  0.56   (2 bytes of 4; the small weights stay float32)
  int8        0.33   (1 byte of 4, plus a float32 scale per channel)
then runs the bundle (`ingot run`) and compares every output with ONNX
Runtime running the float32 model:
  max |ingot - ort| <= tol * max |ort|
  fp16 3e-3, bf16 3e-2, int8 1e-1.
The tolerances come from the weights' rounding: a float16 weight is within
a relative 2^-11 (4.9e-4) of its value, a bfloat16 one within 2^-8 (3.9e-3,
8x more), an int8 one within half a step, 1/254 of its channel's largest
|w| (more, relative to its small weights). Through ResNet-18, MobileNetV2
(small) and the small BERT, with these tests' inputs, the largest errors
measured were 1.4e-3 (fp16), 1.2e-2 (bf16) and 4.3e-2 (int8), each BERT's
tanh pooler output (the others: at most 8.5e-4, 7.6e-3, 2.5e-2) of the
output's max |y|; the tolerances leave 2.2-2.5x over those.
The report's own relative errors (against Ingot's float32 bundle) must be
within the same tolerances.

--refusals: a --weights value of neither set is a usage error (exit 2) that
lists both sets and writes no file; int8 weights for a GPU target are
refused (exit 1), no file."""
import argparse
import os
import re
import subprocess
import sys

import numpy as np

LIMIT = {"fp16": 0.56, "bf16": 0.56, "int8": 0.33}
TOL = {"fp16": 3e-3, "bf16": 3e-2, "int8": 1e-1}
NP = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32}


def refusals(args):
    failures = 0
    out = os.path.join(args.work, "refused.ingot")
    for extra, want_rc, want in ((["--weights", "fp8"], 2, ["auto, zstd, raw", "fp32, fp16, bf16, int8", "'fp8'"]),
                                 (["--weights", "int8", "--target", "cuda"], 1, ["CPU targets", "cuda"])):
        if os.path.exists(out):
            os.remove(out)
        p = subprocess.run([args.ingot, "compile", args.model, "-o", out, *extra], capture_output=True, text=True)
        ok = p.returncode == want_rc and all(w in p.stderr for w in want) and not os.path.exists(out)
        print(f"{' '.join(extra)}: exit {p.returncode}, {p.stderr.strip()!r} -> {'ok' if ok else 'WRONG'}")
        failures += 0 if ok else 1
    p = subprocess.run([args.ingot, "compile", "--help"], capture_output=True, text=True)
    ok = "--weights fp32|fp16|bf16|int8" in p.stdout and "--weights auto|zstd|raw" in p.stdout
    print(f"--help lists both --weights forms -> {'ok' if ok else 'WRONG'}")
    failures += 0 if ok else 1
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--target")
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--precisions", default="fp16,bf16,int8")
    ap.add_argument("--refusals", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.refusals:
        failures = refusals(args)
        print("PASS" if not failures else f"FAIL: {failures}")
        return 1 if failures else 0

    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    given = dict((n, np.load(p)) for n, _, p in (i.partition("=") for i in args.input))
    rng = np.random.default_rng(0)
    feeds, flags = {}, []
    for inp in sess.get_inputs():
        if inp.name in given:
            data = given[inp.name]
        else:
            shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
            data = rng.uniform(-1, 1, shape).astype(NP[inp.type])
        feeds[inp.name] = data
        path = os.path.join(args.work, f"{inp.name}.npy")
        np.save(path, data)
        flags += ["--input-shape", f"{inp.name}={'x'.join(str(d) for d in data.shape)}"]
        flags += ["--accuracy-input", f"{inp.name}={path}"]
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))

    failures = 0
    for prec in args.precisions.split(","):
        bundle = os.path.join(args.work, f"{prec}.ingot")
        cmd = [args.ingot, "compile", args.model, "-o", bundle, "--weights", prec, "--weights", "raw", *flags]
        if args.target:
            cmd += ["--target", args.target]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{prec}: compile failed ({p.returncode}): {p.stderr.strip()}")
            failures += 1
            continue
        report = p.stdout[p.stdout.find("accuracy:"):] if "accuracy:" in p.stdout else ""
        print(report.rstrip())
        if not report.startswith(f"accuracy: {prec} weights against float32"):
            print(f"{prec}: no accuracy report")
            failures += 1
            continue
        m = re.search(r"weights: (\d+) bytes against (\d+) in float32", report)
        ratio = int(m.group(1)) / int(m.group(2)) if m else 1.0
        ok = ratio <= LIMIT[prec]
        print(f"{prec}: weights {ratio:.3f} of float32 (at most {LIMIT[prec]}) -> {'ok' if ok else 'TOO BIG'}")
        failures += 0 if ok else 1
        out = os.path.join(args.work, f"{prec}_outputs.npz")
        run = [args.ingot, "run", bundle, "--output", out]
        for name in feeds:
            run += ["--input", f"{name}={os.path.join(args.work, name + '.npy')}"]
        p = subprocess.run(run, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{prec}: ingot run failed: {p.stderr.strip()}")
            failures += 1
            continue
        with np.load(out) as npz:
            for name, want in ref.items():
                got = npz[name] if name in npz.files else None
                m = re.search(rf"output '{re.escape(name)}': max abs error \S+, (\S+) of", report)
                if got is None or m is None:
                    print(f"{prec}: output '{name}' missing from the run or the report")
                    failures += 1
                    continue
                scale = float(np.abs(want).max()) or 1.0
                rel = float(np.abs(got.astype(np.float64) - want).max()) / scale
                reported = float(m.group(1))
                ok = rel <= TOL[prec] and reported <= TOL[prec]
                print(f"{prec}: '{name}' max |ingot - ort| = {rel:.3g} of max |ort| {scale:.4g}, reported "
                      f"{reported:.3g} (tol {TOL[prec]:g}) -> {'ok' if ok else 'MISMATCH'}")
                failures += 0 if ok else 1
    print("PASS" if not failures else f"FAIL: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
