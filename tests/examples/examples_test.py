#!/usr/bin/env python3
"""The examples (examples/), built and run as their READMEs say, against
ONNX Runtime.

  examples_test.py CASE --source SRC --build BUILD --ingot BUILD/ingot --work DIR

CASE:
  c_classify       `cmake --install BUILD` into a temporary prefix, then
                   examples/c_classify configured with find_package(ingot
                   CONFIG) against it, built, and run on the digits bundle for
                   the committed images (examples/data) and 30 test-set images
                   written here (P2 and P5): the class it prints is ONNX
                   Runtime's argmax and its probabilities ONNX Runtime's;
                   a file that is not a PGM and a wrong bundle fail with one
                   line on stderr (exit 1), bad usage exits 2
  python_classify  examples/python/classify.py with the source tree's package
                   (INGOT_BIN, INGOT_LIB name this build) on the same images:
                   compiles the bundle it is given when missing, then the
                   same checks
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnxruntime as ort

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)
    return cond


def write_pgm(path, raw, binary):
    """raw: 8x8 ints in 0..16, written with maxval 16."""
    with open(path, "wb") as f:
        if binary:
            f.write(b"P5\n8 8\n16\n" + bytes(raw.astype(np.uint8).ravel()))
        else:
            f.write(b"P2\n# written by examples_test.py\n8 8\n16\n")
            for row in raw:
                f.write((" ".join(str(v) for v in row) + "\n").encode())


def read_pgm_p2(path):
    fields = [t for line in open(path) if not line.startswith("#") for t in line.split()]
    assert fields[0] == "P2" and fields[1:4] == ["8", "8", "16"], path
    return np.array(fields[4:68], np.float32).reshape(1, 1, 8, 8) / 16.0


def images(work):
    """(path, float32 [1,1,8,8]) for the committed images and 30 test images."""
    data = os.path.join(ARGS.source, "examples", "data")
    out = [(os.path.join(data, n), read_pgm_p2(os.path.join(data, n)))
           for n in sorted(os.listdir(data)) if n.endswith(".pgm")]
    check(len(out) >= 3, f"committed images: {out}")
    x = np.load(os.path.join(ARGS.source, "models", "digits", "test_x.npy"))
    for i in range(30):
        raw = np.rint(x[i, 0] * 16).astype(int)
        path = os.path.join(work, f"test_{i}.pgm")
        write_pgm(path, raw, binary=i % 2 == 1)
        out.append((path, (raw / 16.0).astype(np.float32).reshape(1, 1, 8, 8)))
    return out


def check_output(p, image, session, what):
    if not check(p.returncode == 0, f"{what}: exit {p.returncode}: {p.stderr}"):
        return
    lines = p.stdout.splitlines()
    want = session.run(None, {"input": image})[0][0]
    best = int(np.argmax(want))
    first = lines[0].split() if lines else []
    ok = check(len(first) == 4 and first[0] == "class" and first[1] == str(best),
               f"{what}: printed {lines[:1]}, ONNX Runtime's argmax is {best} ({want.round(4).tolist()})")
    if ok:
        got = [float(line.split(":")[1]) for line in lines[1:11]]
        check(len(got) == 10 and np.allclose(got, want, atol=2e-4),
              f"{what}: probabilities {got}, ONNX Runtime's {want.round(4).tolist()}")


def expect_failure(p, code, what):
    lines = p.stderr.splitlines()
    check(p.returncode == code and len(lines) == 1 and lines[0].startswith("usage: classify" if code == 2 else
                                                                           "classify: "),
          f"{what}: exit {p.returncode} (want {code}), stderr {p.stderr!r}")


def compile_bundle(path, shape="1x1x8x8"):
    p = subprocess.run([ARGS.ingot, "compile", os.path.join(ARGS.source, "models", "digits", "model.onnx"),
                        "-o", path, "-q", "--input-shape", f"input={shape}"], capture_output=True, text=True)
    check(p.returncode == 0, f"compile {path}: {p.stderr}")
    return path


def bad_images(cmd, work, env=None):
    """cmd + [IMAGE] must fail with one line for images that are not 8x8 PGMs."""
    for name, text in [("wide.pgm", "P2\n9 8\n16\n" + "0 " * 72), ("short.pgm", "P2\n8 8\n16\n" + "0 " * 63),
                       ("bright.pgm", "P2\n8 8\n16\n" + "17 " * 64), ("text.pgm", "not an image\n")]:
        path = os.path.join(work, name)
        open(path, "w").write(text)
        expect_failure(subprocess.run(cmd + [path], capture_output=True, text=True, env=env), 1, f"image {name}")


def case_c_classify(work):
    prefix = os.path.join(work, "prefix")
    log = open(os.path.join(work, "log"), "w")
    steps = [
        ["cmake", "--install", ARGS.build, "--prefix", prefix],
        ["cmake", "-S", os.path.join(ARGS.source, "examples", "c_classify"), "-B", os.path.join(work, "cmake"),
         f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"],
        ["cmake", "--build", os.path.join(work, "cmake")],
    ]
    for cmd in steps:
        if not check(subprocess.run(cmd, stdout=log, stderr=log).returncode == 0,
                     f"{' '.join(cmd[:2])} failed (see {log.name})"):
            return
    prog = os.path.join(work, "cmake", "classify")
    bundle = compile_bundle(os.path.join(work, "digits.ingot"))
    session = ort.InferenceSession(os.path.join(ARGS.source, "models", "digits", "model.onnx"))
    for path, image in images(work):
        check_output(subprocess.run([prog, bundle, path], capture_output=True, text=True), image, session,
                     f"classify {os.path.basename(path)}")
    bad_images([prog, bundle], work)
    expect_failure(subprocess.run([prog, bundle, os.path.join(work, "missing.pgm")], capture_output=True,
                                  text=True), 1, "a missing image")
    batch = compile_bundle(os.path.join(work, "digits_b4.ingot"), "4x1x8x8")
    expect_failure(subprocess.run([prog, batch, images(work)[0][0]], capture_output=True, text=True), 1,
                   "a bundle for a batch of 4")
    expect_failure(subprocess.run([prog, os.path.join(work, "missing.ingot"), images(work)[0][0]],
                                  capture_output=True, text=True), 1, "a missing bundle")
    expect_failure(subprocess.run([prog], capture_output=True, text=True), 2, "no arguments")
    p = subprocess.run([prog, bundle], capture_output=True, text=True)
    expect_failure(p, 2, "one argument")


def case_python_classify(work):
    env = dict(os.environ, PYTHONPATH=os.path.join(ARGS.source, "python"), INGOT_BIN=ARGS.ingot,
               INGOT_LIB=os.path.join(ARGS.build, "runtime", "libingot.so.0"))
    script = os.path.join(ARGS.source, "examples", "python", "classify.py")
    bundle = os.path.join(work, "digits.ingot")
    cmd = [sys.executable, script, "--bundle", bundle]
    session = ort.InferenceSession(os.path.join(ARGS.source, "models", "digits", "model.onnx"))
    for k, (path, image) in enumerate(images(work)):
        check_output(subprocess.run(cmd + [path], capture_output=True, text=True, env=env), image, session,
                     f"classify.py {os.path.basename(path)}")
        if k == 0:
            check(os.path.isfile(bundle), "classify.py --bundle did not compile the missing bundle")
    # Without --bundle it compiles into a temporary folder and leaves nothing.
    first = images(work)[0]
    before = set(os.listdir(work))
    check_output(subprocess.run([sys.executable, script, first[0]], capture_output=True, text=True, env=env,
                                cwd=work), first[1], session, "classify.py without --bundle")
    check(set(os.listdir(work)) == before, "classify.py without --bundle left files")
    bad_images(cmd, work, env)
    env_bad = dict(env, INGOT_BIN=os.path.join(work, "no_such_ingot"))
    expect_failure(subprocess.run([sys.executable, script, first[0]], capture_output=True, text=True,
                                  env=env_bad), 1, "classify.py with a missing ingot tool")


CASES = {"c_classify": case_c_classify, "python_classify": case_python_classify}

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ARGS = ap.parse_args()
    shutil.rmtree(ARGS.work, ignore_errors=True)
    os.makedirs(ARGS.work)
    CASES[ARGS.case](ARGS.work)
    print(f"examples_test {ARGS.case}: {len(FAILURES)} failure(s)")
    sys.exit(1 if FAILURES else 0)
