"""cli/npy.c against numpy: round trips of every dtype and format version,
.npz archives that numpy and zipfile accept (CRCs checked), and bad .npy files
that must be refused with one clear error line naming the file."""
import os
import struct
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

TOOL = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60)


def one_error_line(p, what):
    lines = p.stderr.splitlines()
    check(p.returncode == 1, f"{what}: exit {p.returncode}, expected 1 (stderr: {p.stderr!r})")
    check(len(lines) == 1 and lines[0].startswith("ingot: error: "),
          f"{what}: stderr is not one 'ingot: error:' line: {p.stderr!r}")


def raw_npy(header_dict, data=b"", version=(1, 0)):
    h = header_dict.encode("latin1")
    pre = 10 if version == (1, 0) else 12
    pad = (-(pre + len(h) + 1)) % 64
    h = h + b" " * pad + b"\n"
    if version == (1, 0):
        head = b"\x93NUMPY" + bytes(version) + struct.pack("<H", len(h))
    else:
        head = b"\x93NUMPY" + bytes(version) + struct.pack("<I", len(h))
    return head + h + data


with tempfile.TemporaryDirectory() as tmp:
    rng = np.random.default_rng(0)
    arrays = {
        "f32": rng.standard_normal((2, 3, 4)).astype(np.float32),
        "f64": rng.standard_normal((5,)),
        "f16": rng.standard_normal((3, 2)).astype(np.float16),
        "i64": rng.integers(-2**40, 2**40, size=(4, 1)),
        "i32": rng.integers(-1000, 1000, size=(7,)).astype(np.int32),
        "u8": rng.integers(0, 255, size=(2, 2, 2, 2)).astype(np.uint8),
        "i8": rng.integers(-128, 127, size=(9,)).astype(np.int8),
        "b1": rng.integers(0, 2, size=(3, 3)).astype(bool),
        "scalar": np.array(3.5, dtype=np.float32),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "rank8": np.ones((1, 2, 1, 2, 1, 2, 1, 2), dtype=np.float32),
    }
    for name, a in arrays.items():
        for version in [(1, 0), (2, 0), (3, 0)]:
            src = os.path.join(tmp, f"{name}_v{version[0]}.npy")
            with open(src, "wb") as f:
                np.lib.format.write_array(f, a, version=version)
            dst = os.path.join(tmp, f"{name}_v{version[0]}_out.npy")
            p = run("copy", src, dst)
            check(p.returncode == 0, f"copy {name} v{version}: {p.stderr}")
            if p.returncode != 0:
                continue
            b = np.load(dst)
            check(b.dtype == a.dtype and b.shape == a.shape and np.array_equal(a, b),
                  f"round trip {name} v{version}")
            # What we write is what numpy itself writes (version 1.0).
            ref = os.path.join(tmp, f"{name}_ref.npy")
            np.save(ref, a)
            check(open(ref, "rb").read() == open(dst, "rb").read(),
                  f"{name}: bytes differ from numpy.save")

    # .npz: numpy loads it, zipfile finds the CRCs right, names are kept.
    members = []
    for name in ["f32", "i64", "b1", "scalar", "empty"]:
        members.append(f"{name}={os.path.join(tmp, name + '_v1.npy')}")
    members.append(f"out/with:odd.name={os.path.join(tmp, 'u8_v1.npy')}")
    npz = os.path.join(tmp, "out.npz")
    p = run("npz", npz, *members)
    check(p.returncode == 0, f"npz: {p.stderr}")
    if p.returncode == 0:
        with zipfile.ZipFile(npz) as z:
            check(z.testzip() is None, "npz: zip CRC check failed")
            check(sorted(z.namelist()) == sorted(
                ["f32.npy", "i64.npy", "b1.npy", "scalar.npy", "empty.npy",
                 "out_with:odd.name.npy"]), f"npz names: {z.namelist()}")
        with np.load(npz) as z:
            for name in ["f32", "i64", "b1", "scalar", "empty"]:
                check(np.array_equal(z[name], arrays[name]) and z[name].dtype == arrays[name].dtype,
                      f"npz member {name}")
            check(np.array_equal(z["out_with:odd.name"], arrays["u8"]), "npz member odd name")
    empty_npz = os.path.join(tmp, "none.npz")
    p = run("npz", empty_npz)
    check(p.returncode == 0 and len(np.load(empty_npz).files) == 0, "empty npz")
    # Two names that map to one member are refused, and nothing is written.
    dup = os.path.join(tmp, "dup.npz")
    p = run("npz", dup, f"a/b={os.path.join(tmp, 'f32_v1.npy')}",
            f"a_b={os.path.join(tmp, 'f32_v1.npy')}")
    one_error_line(p, "npz duplicate member")
    check(not os.path.exists(dup), "npz duplicate member: a file was left behind")
    check(run("member", "a/b\\c\x01d").stdout.strip() == "a_b_c_d", "member name mapping")

    # Bad files: refused with one error line that names the file.
    good = raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", b"\0" * 8)
    sanity = os.path.join(tmp, "sanity.npy")
    open(sanity, "wb").write(good)
    check(np.load(sanity).shape == (2,), "the hand-made header is valid to numpy")
    bad = {
        "empty": b"",
        "magic": b"NOTNUMPY" + good[8:],
        "version": good[:6] + b"\x04\x00" + good[8:],
        "header_past_end": good[:8] + struct.pack("<H", 60000) + good[10:],
        "truncated_data": good[:-1],
        "extra_data": good + b"\0",
        "fortran": raw_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", b"\0" * 8),
        "big_endian": raw_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", b"\0" * 8),
        "complex": raw_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", b"\0" * 8),
        "object": raw_npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b"\0" * 8),
        "structured": raw_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
                              b"\0" * 8),
        "unknown_key": raw_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1, }", b"\0" * 8),
        "missing_key": raw_npy("{'descr': '<f4', 'shape': (2,), }", b"\0" * 8),
        "dup_key": raw_npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                           "'shape': (2,), }", b"\0" * 8),
        "not_tuple": raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", b"\0" * 8),
        "negative_dim": raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }"),
        "dim_overflow": raw_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
        "count_overflow": raw_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"),
        "bytes_overflow": raw_npy(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }"),
        "rank9": raw_npy("{'descr': '<f4', 'fortran_order': False, "
                         "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", b"\0" * 4),
        "not_dict": raw_npy("['descr', '<f4']", b""),
        "garbage_after": raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x",
                                 b"\0" * 8),
        "unterminated": raw_npy("{'descr': '<f4, 'fortran_order': False", b""),
        "non_ascii": raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\xe9",
                             b"\0" * 8),
        "fortran_bad": raw_npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", b"\0" * 8),
    }
    for name, data in bad.items():
        path = os.path.join(tmp, f"bad_{name}.npy")
        with open(path, "wb") as f:
            f.write(data)
        out = os.path.join(tmp, f"bad_{name}_out.npy")
        p = run("copy", path, out)
        one_error_line(p, f"bad .npy '{name}'")
        check(path in p.stderr, f"bad .npy '{name}': the message does not name the file: {p.stderr!r}")
        check(not os.path.exists(out), f"bad .npy '{name}': an output file was written")
    p = run("copy", os.path.join(tmp, "missing.npy"), os.path.join(tmp, "x.npy"))
    one_error_line(p, "missing file")

    # Fuzz-ish: every truncation and many single-byte flips of a valid file
    # either parse or fail cleanly (exit 1, one line), never crash.
    src = os.path.join(tmp, "f32_v1.npy")
    blob = open(src, "rb").read()
    cases = [blob[:n] for n in range(0, len(blob), 7)]
    for i in range(0, 128):
        flipped = bytearray(blob)
        flipped[i] ^= 0xFF if i % 2 else 0x01
        cases.append(bytes(flipped))
    for k, data in enumerate(cases):
        path = os.path.join(tmp, "fuzz.npy")
        open(path, "wb").write(data)
        p = run("copy", path, os.path.join(tmp, "fuzz_out.npy"))
        if p.returncode != 0:
            one_error_line(p, f"fuzz case {k}")

print(f"test_npy: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
