#!/usr/bin/env python3
"""Command-line behaviour of `ingot` that scripts rely on.

  cli_test.py --ingot BUILD/ingot --model models/digits/model.onnx --work DIR CASE

CASE is one of:
  flags     bad command lines: exit 2, exactly one 'ingot: error:' line
  inspect   `ingot inspect` (text and --json): JSON parses, has every key,
            arena_bytes >= arena_lower_bound_bytes > 0, inputs/outputs right
  corrupt   a corrupted bundle (any byte of the header and section table
            flipped, bytes flipped in the middle of every section, truncations,
            a byte appended) is refused by run and inspect: non-zero exit, one
            error line, no output file
  npy       bad inputs: a garbage .npy, a Fortran-order one, a shape or dtype
            mismatch, an unknown input name: one error line that says what
  run       run with and without --output, random inputs, --bench, threads
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def ingot(*args, timeout=300):
    return subprocess.run([ARGS.ingot, *args], capture_output=True, text=True, timeout=timeout)


def expect_error(p, what, code=None, contains=()):
    lines = p.stderr.splitlines()
    ok = check(p.returncode != 0 and p.returncode < 128 and p.returncode > 0,
               f"{what}: exit {p.returncode} (want a failure exit, not a crash)")
    if code is not None:
        ok = check(p.returncode == code, f"{what}: exit {p.returncode}, want {code}") and ok
    ok = check(len(lines) == 1 and lines[0].startswith("ingot: error: "),
               f"{what}: stderr is not exactly one 'ingot: error:' line: {p.stderr!r}") and ok
    for c in contains:
        ok = check(c in p.stderr, f"{what}: the message lacks {c!r}: {p.stderr!r}") and ok
    return ok


def compile_digits(batch=1):
    bundle = os.path.join(ARGS.work, f"digits_b{batch}.ingot")
    if not os.path.exists(bundle):
        p = ingot("compile", ARGS.model, "-o", bundle, "--input-shape", f"input=1x1x8x8"
                  if batch == 1 else f"input={batch}x1x8x8")
        if not check(p.returncode == 0, f"compile digits: {p.stderr.strip()}"):
            raise SystemExit(finish())
    return bundle


def case_flags():
    expect_error(ingot(), "no command", 2)
    expect_error(ingot("frobnicate"), "unknown command", 2, ["frobnicate"])
    expect_error(ingot("--frobnicate"), "unknown top-level option", 2)
    for sub in ["compile", "run", "inspect"]:
        expect_error(ingot(sub, "--no-such-flag", "x"), f"{sub} unknown flag", 2,
                     ["--no-such-flag"])
        p = ingot(sub, "--help")
        check(p.returncode == 0 and "usage: ingot " + sub in p.stdout and not p.stderr,
              f"{sub} --help")
    p = ingot("--help")
    check(p.returncode == 0 and "compile" in p.stdout and "inspect" in p.stdout, "ingot --help")
    p = ingot("--version")
    check(p.returncode == 0 and p.stdout.startswith("ingot "), "ingot --version")
    expect_error(ingot("run"), "run without a bundle", 2)
    expect_error(ingot("inspect"), "inspect without a bundle", 2)
    expect_error(ingot("run", "a.ingot", "b.ingot"), "run with two bundles", 2)
    for flag, value in [("--threads", "0"), ("--threads", "two"), ("--bench", "-1"),
                        ("--bench", "1x"), ("--seed", "-5"), ("--threads", "")]:
        expect_error(ingot("run", "a.ingot", flag, value), f"run {flag} {value!r}", 2, [flag])
    expect_error(ingot("run", "a.ingot", "--threads"), "run --threads without a value", 2)
    expect_error(ingot("run", "a.ingot", "--output"), "run --output without a value", 2)
    missing = os.path.join(ARGS.work, "missing.ingot")
    expect_error(ingot("run", missing), "run on a missing bundle", 1, ["missing.ingot"])
    expect_error(ingot("inspect", missing), "inspect on a missing bundle", 1, ["missing.ingot"])
    expect_error(ingot("compile", os.path.join(ARGS.work, "missing.onnx"), "-o",
                       os.path.join(ARGS.work, "x.ingot")), "compile a missing model", 1)
    check(not os.path.exists(os.path.join(ARGS.work, "x.ingot")), "compile failure left a file")


def case_inspect():
    bundle = compile_digits(1)
    p = ingot("inspect", bundle, "--json")
    if not check(p.returncode == 0, f"inspect --json: {p.stderr}"):
        return
    try:
        info = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        check(False, f"inspect --json output does not parse: {e}")
        return
    for key in ["arena_bytes", "arena_lower_bound_bytes", "inputs", "outputs", "targets",
                "sections", "format_version"]:
        check(key in info, f"inspect --json lacks '{key}'")
    if failures:
        return
    check(info["arena_bytes"] >= info["arena_lower_bound_bytes"] > 0,
          f"arena {info['arena_bytes']} vs lower bound {info['arena_lower_bound_bytes']}")
    check(info["inputs"] == [{"name": "input", "dtype": "float32", "shape": [1, 1, 8, 8]}],
          f"inputs: {info['inputs']}")
    check(info["outputs"] == [{"name": "probabilities", "dtype": "float32", "shape": [1, 10]}],
          f"outputs: {info['outputs']}")
    check(len(info["targets"]) >= 1, "no targets")
    check(len(info.get("variants", [])) == len(info["targets"]), f"variants: {info.get('variants')}")
    for v in info.get("variants", []):
        check(v["loader"] == "cpu-elf" and v["target"] in info["targets"] and v["launch"] == "kernel only"
              and info["sections"][v["weights_section"]]["kind"] == "weights"
              and info["sections"][v["code_section"]]["kind"] == "code", f"variant {v}")
    kinds = [s["kind"] for s in info["sections"]]
    for kind in ["manifest", "weights", "plan", "code"]:
        check(kind in kinds, f"no {kind} section in {kinds}")
    size = os.path.getsize(bundle)
    for s in info["sections"]:
        check(s["offset"] + s["stored_bytes"] <= size and s["offset"] % 64 == 0,
              f"section {s} out of the file")
    p = ingot("inspect", bundle)
    check(p.returncode == 0 and "probabilities" in p.stdout and "arena" in p.stdout,
          f"inspect text: {p.stdout} {p.stderr}")


def case_corrupt():
    bundle = compile_digits(1)
    p = ingot("inspect", bundle, "--json")
    if not check(p.returncode == 0, f"inspect of the good bundle: {p.stderr}"):
        return
    info = json.loads(p.stdout)
    blob = open(bundle, "rb").read()
    positions = {"magic": 0, "version": 8, "file_size": 16, "section_count": 24,
                 "table_crc": 32, "table": 64 + 8}
    for i, s in enumerate(info["sections"]):
        if s["stored_bytes"] > 0:
            positions[f"section{i}_{s['kind']}_middle"] = s["offset"] + s["stored_bytes"] // 2
            positions[f"section{i}_{s['kind']}_first"] = s["offset"]
    variants = {}
    for name, pos in positions.items():
        b = bytearray(blob)
        b[pos] ^= 0x5A
        variants["flip_" + name] = bytes(b)
    mid = len(blob) // 2
    if any(s["offset"] <= mid < s["offset"] + s["stored_bytes"] for s in info["sections"]):
        b = bytearray(blob)  # (alignment padding between sections carries no data)
        b[mid] ^= 0xFF
        variants["flip_file_middle"] = bytes(b)
    for frac in [0.0, 0.01, 0.5, 0.99]:
        variants[f"truncate_{frac}"] = blob[:int(len(blob) * frac)]
    variants["truncate_last_byte"] = blob[:-1]
    variants["appended_byte"] = blob + b"\0"
    # Every byte of the header and the section table is covered by a checksum.
    table_end = 64 + 72 * len(info["sections"])  # sizeof(ingot_section_entry_t) == 72
    for pos in range(table_end):
        b = bytearray(blob)
        b[pos] ^= 0x01
        path = os.path.join(ARGS.work, "corrupt_header_byte.ingot")
        with open(path, "wb") as f:
            f.write(b)
        p = ingot("inspect", path)
        if p.returncode == 0 or len(p.stderr.splitlines()) != 1 or p.returncode >= 128:
            check(False, f"header/table byte {pos} flipped: exit {p.returncode}, {p.stderr!r}")
    for name, data in variants.items():
        path = os.path.join(ARGS.work, f"corrupt_{name}.ingot")
        with open(path, "wb") as f:
            f.write(data)
        out = os.path.join(ARGS.work, f"corrupt_{name}.npz")
        expect_error(ingot("run", path, "--output", out), f"run on {name}", 1, [path])
        check(not os.path.exists(out), f"run on {name} left an output file")
        expect_error(ingot("inspect", path), f"inspect on {name}", 1, [path])


def case_npy():
    bundle = compile_digits(1)
    w = ARGS.work
    garbage = os.path.join(w, "garbage.npy")
    with open(garbage, "wb") as f:
        f.write(b"this is not a numpy file at all")
    out = os.path.join(w, "npy_out.npz")
    expect_error(ingot("run", bundle, "--input", f"input={garbage}", "--output", out),
                 "garbage .npy", 1, ["garbage.npy", "input"])
    fortran = os.path.join(w, "fortran.npy")
    np.save(fortran, np.asfortranarray(np.zeros((1, 1, 8, 8), np.float32).transpose(3, 2, 1, 0)))
    expect_error(ingot("run", bundle, "--input", f"input={fortran}", "--output", out),
                 "Fortran-order .npy", 1, ["fortran.npy", "Fortran"])
    wrong_shape = os.path.join(w, "wrong_shape.npy")
    np.save(wrong_shape, np.zeros((2, 1, 8, 8), np.float32))
    expect_error(ingot("run", bundle, "--input", f"input={wrong_shape}", "--output", out),
                 "shape mismatch", 1, ["input", "[1,1,8,8]", "[2,1,8,8]"])
    wrong_dtype = os.path.join(w, "wrong_dtype.npy")
    np.save(wrong_dtype, np.zeros((1, 1, 8, 8), np.int64))
    expect_error(ingot("run", bundle, "--input", f"input={wrong_dtype}", "--output", out),
                 "dtype mismatch", 1, ["float32", "int64"])
    good = os.path.join(w, "good.npy")
    np.save(good, np.zeros((1, 1, 8, 8), np.float32))
    expect_error(ingot("run", bundle, "--input", f"image={good}", "--output", out),
                 "unknown input name", 1, ["'image'", "'input'"])
    expect_error(ingot("run", bundle, "--input", good, "--input", good, "--output", out),
                 "too many positional inputs", 2)
    expect_error(ingot("run", bundle, "--input", f"input={w}/nope.npy", "--output", out),
                 "missing .npy", 1, ["nope.npy"])
    check(not os.path.exists(out), "a failed run left an output file")
    # A float64 file converts to the float32 input.
    f64 = os.path.join(w, "f64.npy")
    np.save(f64, np.full((1, 1, 8, 8), 0.5))
    p = ingot("run", bundle, "--input", f"input={f64}", "--output", out)
    check(p.returncode == 0 and os.path.exists(out), f"float64 input: {p.stderr}")


def case_run():
    bundle = compile_digits(1)
    w = ARGS.work
    x = np.load(os.path.join(os.path.dirname(ARGS.model), "test_x.npy"))[:1]
    one = os.path.join(w, "one.npy")
    np.save(one, x)
    out = os.path.join(w, "run_out.npz")
    for form in [["--input", f"input={one}"], ["--input", one], [f"--input={one}"]]:
        if os.path.exists(out):
            os.remove(out)
        p = ingot("run", bundle, *form, "--output", out, "--threads", "2")
        if check(p.returncode == 0 and not p.stderr, f"run {form}: {p.stderr}"):
            with np.load(out) as z:
                check(z.files == ["probabilities"], f"npz members {z.files}")
                y = z["probabilities"]
                check(y.shape == (1, 10) and y.dtype == np.float32, f"output {y.shape} {y.dtype}")
                check(abs(float(y.sum()) - 1.0) < 1e-4, f"softmax sums to {y.sum()}")
    p = ingot("run", bundle, "--input", f"input={one}")
    check(p.returncode == 0 and "probabilities: float32 [1,10]" in p.stdout and
          "argmax" in p.stdout, f"summary: {p.stdout!r} {p.stderr!r}")
    p1 = ingot("run", bundle, "--seed", "7")
    p2 = ingot("run", bundle, "--seed", "7")
    check(p1.returncode == 0 and p1.stdout == p2.stdout, "random inputs are deterministic")
    check("random" in p1.stderr and "ingot: note:" in p1.stderr, f"random note: {p1.stderr!r}")
    p = ingot("run", bundle, "--input", one, "--bench", "5", "--threads", "1")
    check(p.returncode == 0 and "latency: min " in p.stdout and "(5 runs, 1 threads)" in p.stdout,
          f"bench: {p.stdout!r} {p.stderr!r}")


CASES = {"flags": case_flags, "inspect": case_inspect, "corrupt": case_corrupt,
         "npy": case_npy, "run": case_run}


def finish():
    print(f"cli_test {ARGS.case}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    ARGS = ap.parse_args()
    shutil.rmtree(ARGS.work, ignore_errors=True)
    os.makedirs(ARGS.work)
    CASES[ARGS.case]()
    sys.exit(finish())
