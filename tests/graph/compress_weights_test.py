#!/usr/bin/env python3
"""Weight-only compression's conversions (graph/passes_weights.c) against numpy.

  compress_weights_test.py TOOL   (tests/graph/compress_weights_tool.c)

int8: per channel scale = float32(max|w| / 127), q = clip(rint(w / scale),
-127, 127) (numpy's rint rounds half to even), 0 for an all-zero channel;
element i in channel (i // outer_size) * inner + i % inner, the forms the
pass uses (axis 0, the last axis, packed panels). Exact ties (w = k + 1/2
with scale 1) must round to even. float16: numpy's astype (nearest even,
overflow to inf); bfloat16: the upper half of the float32 bits rounded to
nearest even. Everything must match bit for bit."""
import subprocess
import sys

import numpy as np


def run(tool, args, data):
    p = subprocess.run([tool, *args], input=np.ascontiguousarray(data, np.float32).tobytes(),
                       capture_output=True, check=True)
    return p.stdout


def ref_i8(w, outer, inner):
    n = w.size
    i = np.arange(n)
    ch = (i // outer) * inner + i % inner
    channels = (n // outer) * inner
    amax = np.zeros(channels, np.float32)
    np.maximum.at(amax, ch, np.abs(w))
    scale = (amax / np.float32(127)).astype(np.float32)
    s = scale[ch]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(s > 0, np.rint(w / s), 0)
    return np.clip(q, -127, 127).astype(np.int8), scale


def ref_bf16(w):
    u = w.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(w)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def main():
    tool = sys.argv[1]
    rng = np.random.default_rng(7)
    failures = 0
    cases = []
    # Conv [K, C, kh, kw] by axis 0; a MatMul B [K, N] by the last axis; packed panels [P, K, B].
    w = rng.standard_normal((12, 5, 3, 3)).astype(np.float32)
    w[3] = 0.0  # an all-zero channel
    cases.append(("conv axis 0", w, w[0].size, 1))
    b = (rng.standard_normal((40, 24)) * np.logspace(-3, 2, 24)).astype(np.float32)
    cases.append(("matmul last axis", b, b.size, 24))
    p = rng.standard_normal((3, 17, 16)).astype(np.float32)
    cases.append(("packed panels", p, 17 * 16, 16))
    # Exact ties: channel max 127 gives scale 1.0, and w = k + 0.5 are halfway.
    t = np.array([127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, -126.5, -127.0, 3.49999, 64.5], np.float32)
    cases.append(("ties", t, t.size, 1))
    for name, w, outer, inner in cases:
        flat = w.reshape(-1)
        out = run(tool, ["i8", str(flat.size), str(outer), str(inner)], flat)
        q = np.frombuffer(out[:flat.size], np.int8)
        s = np.frombuffer(out[flat.size:], np.float32)
        rq, rs = ref_i8(flat, outer, inner)
        ok = np.array_equal(q, rq) and np.array_equal(s, rs)
        print(f"int8 {name}: {flat.size} values, {s.size} scales -> {'ok' if ok else 'MISMATCH'}")
        if not ok:
            bad = np.nonzero(q != rq)[0][:5]
            print(f"  q {q[bad]} numpy {rq[bad]} at {bad}; scales equal: {np.array_equal(s, rs)}")
            failures += 1
    expected_ties = [127, 0, 2, 2, 0, -2, -2, 126, -126, -127, 3, 64]
    if list(np.frombuffer(run(tool, ["i8", str(t.size), str(t.size), "1"], t)[:t.size], np.int8)) != expected_ties:
        print("int8 ties: not rounded half to even")
        failures += 1

    h = np.concatenate([rng.standard_normal(4000).astype(np.float32) * 10,
                        np.array([65504, 65519.99, 65520, 1e6, -1e6, 6.1e-5, 6.0e-5, 3e-8, 2.98e-8, 1e-9, 0.0,
                                  -0.0, np.inf, -np.inf], np.float32),
                        rng.uniform(-1e-4, 1e-4, 2000).astype(np.float32)])
    got = np.frombuffer(run(tool, ["f16", str(h.size)], h), np.uint16)
    want = h.astype(np.float16).view(np.uint16)
    ok = np.array_equal(got, want)
    print(f"float16: {h.size} values -> {'ok' if ok else 'MISMATCH'}")
    if not ok:
        bad = np.nonzero(got != want)[0][:5]
        print(f"  {h[bad]}: {got[bad]} numpy {want[bad]}")
        failures += 1
    got = np.frombuffer(run(tool, ["bf16", str(h.size)], h), np.uint16)
    ok = np.array_equal(got, ref_bf16(h))
    print(f"bfloat16: {h.size} values -> {'ok' if ok else 'MISMATCH'}")
    failures += 0 if ok else 1
    print("PASS" if not failures else f"FAIL: {failures} case(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
