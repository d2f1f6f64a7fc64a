#!/usr/bin/env python3
"""Signatures, atomic writes and limits, through the `ingot` driver.

  trust_test.py --ingot build/ingot --model models/digits/model.onnx --work DIR CASE

CASE:
  keys        keygen: files, modes, never overwrites; key files are checked
  signature   a signed bundle runs with --require-signature; unsigned, signed
              by another key, or with any byte changed (every header and
              table byte, bytes of each section, every signature byte), with
              or without checksums repaired, it is refused with one error line
              (a changed section byte: by the signature, checked first)
  atomic      failed compile / run --output / sign leave the old file intact,
              no file at a new path and no temporary files; inputs untouched
  inplace     --weights raw|zstd|auto: raw weights stored uncompressed (and the
              runtime maps them in place), reproducible bytes, outputs equal to
              the zstd bundle's, signed raw bundles verify and any changed
              weight byte is refused (signature, and checksum without a key)
  verify      `ingot verify`: good bundles pass; a flipped bit names its section;
              a signed bundle altered anywhere is a signature error; unsigned
              or another key with --require-signature refused
  limits      models asking for too much (huge dims, elements, nodes, external
              data outside the model's folder, symlinks that escape) are refused
Every refusal must be exit 1 with exactly one 'ingot: error:' line.
"""
import argparse
import concurrent.futures
import hashlib
import os
import random
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mutation"))
from ingot_bundle import CODEC_NONE, Bundle, repaired, run_ingot  # noqa: E402

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, file=sys.stderr)


def refused(argv, what, expect=None, env=None, code=1):
    """Runs argv, which must fail cleanly with exit `code` (2: a usage
    error); `expect` must appear in the error."""
    rc, out, err, problem = run_ingot(argv, env=env)
    text = err.decode("utf-8", "replace").strip()
    check(problem is None, f"{what}: {problem}: {text[:300]}")
    check(rc == code, f"{what}: exit {rc}, expected {code}: {text[:300]}")
    if expect is not None:
        check(expect in text, f"{what}: error does not mention {expect!r}: {text[:300]}")
    return text


def ok(argv, what, env=None):
    rc, out, err, problem = run_ingot(argv, env=env)
    check(problem is None and rc == 0, f"{what}: exit {rc} {problem}: {err.decode('utf-8', 'replace')[:300]}")
    return out.decode("utf-8", "replace")


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def compile_model(a, out):
    ok([a.ingot, "compile", a.model, "-o", out, "-q", "--input-shape", "input=1x1x8x8"], f"compile {out}")


# ---- keys -------------------------------------------------------------------

def case_keys(a, w):
    key = os.path.join(w, "k")
    out = ok([a.ingot, "keygen", "-o", key], "keygen")
    check("k.pub" in out, "keygen names the public key")
    check(stat.S_IMODE(os.stat(key).st_mode) == 0o600, "secret key mode 0600")
    check(stat.S_IMODE(os.stat(key + ".pub").st_mode) == 0o644, "public key mode 0644")
    before = (sha(key), sha(key + ".pub"))
    refused([a.ingot, "keygen", "-o", key], "keygen over an existing key", "already exists")
    check((sha(key), sha(key + ".pub")) == before, "keygen left the existing keys alone")
    # Only the .pub exists: still refused, and no secret key left behind.
    lone = os.path.join(w, "lone")
    shutil.copy(key + ".pub", lone + ".pub")
    refused([a.ingot, "keygen", "-o", lone], "keygen where NAME.pub exists", "already exists")
    check(not os.path.exists(lone), "keygen left no half pair")
    refused([a.ingot, "keygen", "-o", os.path.join(w, "missing", "k")], "keygen into a missing folder")
    check(sorted(os.listdir(w)) == ["k", "k.pub", "lone.pub"], f"keygen left stray files: {os.listdir(w)}")
    # Key files are checked.
    bundle = os.path.join(w, "b.ingot")
    compile_model(a, bundle)
    refused([a.ingot, "sign", bundle, "--key", key + ".pub"], "sign with a public key", "public key")
    refused([a.ingot, "run", bundle, "--require-signature", key], "require with a secret key", "secret key")
    junk = os.path.join(w, "junk")
    with open(junk, "w") as f:
        f.write("ingot-ed25519-secret-key 1234\n")
    refused([a.ingot, "sign", bundle, "--key", junk], "sign with a junk key", "not an Ingot secret key")
    # A damaged secret key (its public half altered) is refused.
    text = open(key).read().split()
    bad = os.path.join(w, "bad")
    with open(bad, "w") as f:
        f.write(text[0] + " " + text[1][:-2] + ("00" if text[1][-2:] != "00" else "11") + "\n")
    refused([a.ingot, "sign", bundle, "--key", bad], "sign with a damaged key", "damaged")
    refused([a.ingot, "sign", bundle], "sign without --key", "--key", code=2)
    refused([a.ingot, "keygen"], "keygen without -o", "-o NAME", code=2)
    refused([a.ingot, "run", bundle, "--require-signature"], "--require-signature without a file", code=2)


# ---- signature ----------------------------------------------------------------

def sample_offsets(b, rng):
    """(offset, region) pairs: every header byte; the first and last byte of
    every field of every table entry, and a few more; the first, middle,
    last and some random bytes of each section; every field of the
    signature record."""
    picks = [(i, "header") for i in range(64)]
    fields = [(0, 4), (4, 4), (8, 8), (16, 8), (24, 8), (32, 4), (36, 4), (40, 32)]
    for k in range(b.count):
        base = 64 + 72 * k
        for off, size in fields:
            picks += [(base + off, f"table entry {k}"), (base + off + size - 1, f"table entry {k}")]
        picks += [(base + rng.randrange(72), f"table entry {k}") for _ in range(4)]
    for idx, e in enumerate(b.entries):
        name = f"section {idx} ({['?', 'manifest', 'weights', 'plan', 'code', 'signature', 'metadata'][e['kind']]})"
        if e["kind"] == 5:  # magic, algorithm, reserved, public key, signature
            for off in (0, 7, 8, 11, 12, 15, 16, 31, 47, 48, 60, 80, 100, 111):
                picks.append((e["offset"] + off, name))
            continue
        inside = {e["offset"], e["offset"] + e["stored"] - 1, e["offset"] + e["stored"] // 2}
        inside |= {rng.randrange(e["offset"], e["offset"] + e["stored"]) for _ in range(8)}
        picks += [(o, name) for o in sorted(inside)]
    # Padding between the table and the sections and between sections.
    covered = set()
    for e in b.entries:
        covered |= set(range(e["offset"], e["offset"] + e["stored"]))
    pads = [o for o in range(b.table_end, len(b.data)) if o not in covered]
    picks += [(o, "padding") for o in pads[:: max(1, len(pads) // 6)]]
    return picks


def mutant_job(args):
    ingot, path, pub, offset, region, repair = args
    with open(path, "rb") as f:
        data = bytearray(f.read())
    original = bytes(data)
    data[offset] ^= 0x5A if offset % 2 else 0x01
    if repair:
        data = bytearray(repaired(data))
        if bytes(data) == original:  # the byte was a checksum: repair restored it
            return offset, region, repair, None, "same", ""
    mpath = f"{path}.{offset}.{int(repair)}.mut"
    with open(mpath, "wb") as f:
        f.write(data)
    rc, out, err, problem = run_ingot([ingot, "run", mpath, "--require-signature", pub])
    os.unlink(mpath)
    return offset, region, repair, rc, problem, err.decode("utf-8", "replace").strip()


def case_signature(a, w):
    key, other = os.path.join(w, "k"), os.path.join(w, "other")
    ok([a.ingot, "keygen", "-o", key], "keygen")
    ok([a.ingot, "keygen", "-o", other], "keygen other")
    unsigned = os.path.join(w, "unsigned.ingot")
    signed = os.path.join(w, "signed.ingot")
    compile_model(a, unsigned)
    shutil.copy(unsigned, signed)
    out = ok([a.ingot, "sign", signed, "--key", key], "sign")
    check("signed" in out, "sign reports what it did")
    # The signed bundle runs, with and without the requirement, and inspects.
    base = ok([a.ingot, "run", signed, "--require-signature", key + ".pub", "--seed", "3"], "run signed")
    check(base == ok([a.ingot, "run", unsigned, "--seed", "3"], "run unsigned"), "signed and unsigned agree")
    ok([a.ingot, "run", signed], "run signed without a key")
    check("signature" in ok([a.ingot, "inspect", signed], "inspect signed"), "inspect lists the signature")
    # Re-signing gives the same bytes; signing with another key replaces it.
    again = os.path.join(w, "again.ingot")
    shutil.copy(signed, again)
    ok([a.ingot, "sign", again, "--key", key], "re-sign")
    check(sha(again) == sha(signed), "re-signing with the same key is byte-identical")
    ok([a.ingot, "sign", again, "--key", other], "sign with another key")
    ok([a.ingot, "run", again, "--require-signature", other + ".pub"], "run re-signed by the other key")
    refused([a.ingot, "run", again, "--require-signature", key + ".pub"], "replaced signature", "another key")
    # Unsigned and another key.
    text = refused([a.ingot, "run", unsigned, "--require-signature", key + ".pub"], "unsigned", "not signed")
    check(text.endswith("(signature refused)"), f"unsigned: not the signature status: {text[:300]}")
    text = refused([a.ingot, "run", signed, "--require-signature", other + ".pub"], "another key", "another key")
    check(text.endswith("(signature refused)"), f"another key: not the signature status: {text[:300]}")
    refused([a.ingot, "run", signed, "--require-signature", os.path.join(w, "nope.pub")], "missing key file")
    # A signed bundle that is not signed last, or two signatures: refused.
    b = Bundle(open(signed, "rb").read())
    i, e = b.section("signature")
    b.entries[0], b.entries[i] = b.entries[i], b.entries[0]
    with open(os.path.join(w, "moved.ingot"), "wb") as f:
        f.write(b.repair().data)
    refused([a.ingot, "run", os.path.join(w, "moved.ingot")], "signature entry not last", "signature")
    # Truncated signature, trailing byte.
    data = open(signed, "rb").read()
    for name, mutant in (("truncated", data[:-1]), ("extended", data + b"\0"), ("no signature bytes",
                                                                                data[:-112])):
        p = os.path.join(w, name.replace(" ", "_") + ".ingot")
        with open(p, "wb") as f:
            f.write(repaired(mutant))
        refused([a.ingot, "run", p, "--require-signature", key + ".pub"], f"signed bundle {name}")
    # Any byte changed, as stored and with every checksum repaired.
    rng = random.Random(11)
    picks = sample_offsets(Bundle(data), rng)
    jobs = [(a.ingot, signed, key + ".pub", o, r, rep) for o, r in picks for rep in (False, True)]
    regions = set()
    count = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for offset, region, repair, rc, problem, err in pool.map(mutant_job, jobs):
            if problem == "same":
                continue
            count += 1
            regions.add(region.split(" (")[0] if region.startswith("section") else region.split(" ")[0])
            what = f"byte {offset} ({region}) flipped{' and checksums repaired' if repair else ''}"
            check(problem is None and rc == 1, f"{what}: exit {rc} {problem}: {err[:200]}")
            if rc == 1 and region.startswith("section") and "signature)" not in region:
                # Section bytes: the signature is checked before any checksum,
                # so it is what refuses them, checksums repaired or not.
                check("(signature refused)" in err, f"{what}: refused for another reason: {err[:200]}")
    print(f"signature: {count} altered bundles refused, regions: {sorted(regions)}")


# ---- atomic writes --------------------------------------------------------------

def case_atomic(a, w):
    tmpdir = os.path.join(w, "tmp")
    os.makedirs(tmpdir)
    env = dict(os.environ, TMPDIR=tmpdir)
    out_dir = os.path.join(w, "out")
    os.makedirs(out_dir)
    model_copy = os.path.join(w, "model.onnx")
    shutil.copy(a.model, model_copy)
    model_sum = sha(model_copy)
    bundle = os.path.join(out_dir, "model.ingot")
    ok([a.ingot, "compile", model_copy, "-o", bundle, "-q", "--input-shape", "input=1x1x8x8"], "compile", env)
    good = sha(bundle)
    check(sha(model_copy) == model_sum, "compile did not touch its input")

    # A bad model compiled over an existing bundle: the old one stays.
    bad = os.path.join(w, "bad.onnx")
    with open(model_copy, "rb") as f:
        data = f.read()
    with open(bad, "wb") as f:
        f.write(data[: len(data) // 2])
    bad_sum = sha(bad)
    refused([a.ingot, "compile", bad, "-o", bundle, "-q"], "compile a truncated model over a bundle", env=env)
    check(sha(bundle) == good, "a failed compile left the older bundle intact")
    check(sha(bad) == bad_sum, "a failed compile did not touch its input")
    # A model that parses but fails later (a shape that does not fit).
    refused([a.ingot, "compile", model_copy, "-o", bundle, "-q", "--input-shape", "input=1x1x9x9"],
            "compile with a wrong input shape over a bundle", env=env)
    check(sha(bundle) == good, "a failed late compile left the older bundle intact")
    check(sha(model_copy) == model_sum, "a failed late compile did not touch its input")
    # Into a folder that does not exist: an error, nothing anywhere.
    refused([a.ingot, "compile", model_copy, "-o", os.path.join(w, "missing", "m.ingot"), "-q",
             "--input-shape", "input=1x1x8x8"], "compile into a missing folder", env=env)
    # Output path is a folder.
    refused([a.ingot, "compile", model_copy, "-o", out_dir, "-q", "--input-shape", "input=1x1x8x8"],
            "compile onto a folder", env=env)
    check(os.path.isdir(out_dir), "compile onto a folder left the folder")
    # run --output: a failing run leaves an older .npz alone; a missing folder leaves nothing.
    npz = os.path.join(out_dir, "out.npz")
    ok([a.ingot, "run", bundle, "--output", npz], "run --output", env)
    npz_sum = sha(npz)
    refused([a.ingot, "run", bundle, "--output", npz, "--input", "input=" + os.path.join(w, "none.npy")],
            "run with a missing input over an .npz", env=env)
    check(sha(npz) == npz_sum, "a failed run left the older .npz intact")
    refused([a.ingot, "run", bundle, "--output", os.path.join(w, "missing", "o.npz")],
            "run --output into a missing folder", env=env)
    # sign: a bad key or a corrupt bundle leaves the bundle as it was.
    ok([a.ingot, "keygen", "-o", os.path.join(w, "k")], "keygen")
    refused([a.ingot, "sign", bundle, "--key", os.path.join(w, "k.pub")], "sign with a public key")
    check(sha(bundle) == good, "a failed sign left the bundle intact")
    corrupt = os.path.join(out_dir, "corrupt.ingot")
    with open(bundle, "rb") as f:
        cdata = bytearray(f.read())
    cdata[len(cdata) // 2] ^= 0xFF
    with open(corrupt, "wb") as f:
        f.write(cdata)
    csum = sha(corrupt)
    refused([a.ingot, "sign", corrupt, "--key", os.path.join(w, "k")], "sign a corrupt bundle", "checksum")
    check(sha(corrupt) == csum, "a refused sign left the corrupt bundle as it was")
    # Nothing temporary anywhere: not beside the outputs, not in TMPDIR.
    stray = [n for d in (w, out_dir) for n in os.listdir(d) if ".tmp." in n]
    check(not stray, f"temporary files left behind: {stray}")
    check(os.listdir(tmpdir) == [], f"files left in TMPDIR: {os.listdir(tmpdir)}")
    check(sorted(os.listdir(out_dir)) == ["corrupt.ingot", "model.ingot", "out.npz"],
          f"unexpected files in the output folder: {sorted(os.listdir(out_dir))}")


# ---- limits ---------------------------------------------------------------------

def case_inplace(a, w):
    key = os.path.join(w, "k")
    ok([a.ingot, "keygen", "-o", key], "keygen")
    paths = {}
    for mode in ("raw", "zstd", "auto"):
        paths[mode] = os.path.join(w, mode + ".ingot")
        ok([a.ingot, "compile", a.model, "-o", paths[mode], "-q", "--input-shape", "input=1x1x8x8",
            "--weights", mode], f"compile --weights {mode}")
    again = os.path.join(w, "raw_again.ingot")
    ok([a.ingot, "compile", a.model, "-o", again, "-q", "--input-shape", "input=1x1x8x8", "--weights", "raw"],
       "compile --weights raw again")
    check(sha(again) == sha(paths["raw"]), "--weights raw is byte-reproducible")
    raw = Bundle(open(paths["raw"], "rb").read())
    _, we = raw.section("weights")
    check(we["codec"] == 0 and we["offset"] % 64 == 0, f"raw weights stored uncompressed, aligned: {we}")
    zst = Bundle(open(paths["zstd"], "rb").read())
    check(zst.section("weights")[1]["codec"] == 1, "--weights zstd compresses the weights")
    refused([a.ingot, "compile", a.model, "-o", os.path.join(w, "x.ingot"), "--weights", "lz4"],
            "unknown --weights value", "--weights", code=2)
    out = ok([a.ingot, "run", paths["raw"], "--seed", "5"], "run raw")
    check(out == ok([a.ingot, "run", paths["zstd"], "--seed", "5"], "run zstd"), "raw and zstd bundles agree")
    check(out == ok([a.ingot, "run", paths["auto"], "--seed", "5"], "run auto"), "auto and zstd bundles agree")
    signed = os.path.join(w, "signed_raw.ingot")
    shutil.copy(paths["raw"], signed)
    ok([a.ingot, "sign", signed, "--key", key], "sign raw")
    check(out == ok([a.ingot, "run", signed, "--require-signature", key + ".pub", "--seed", "5"],
                    "run signed raw"), "signed raw bundle runs and agrees")
    data = open(signed, "rb").read()
    _, we = Bundle(data).section("weights")
    for at in (we["offset"], we["offset"] + we["stored"] // 2, we["offset"] + we["stored"] - 1):
        mutant = bytearray(data)
        mutant[at] ^= 0x20
        p = os.path.join(w, f"weight_byte_{at}.ingot")
        with open(p, "wb") as f:
            f.write(repaired(bytes(mutant)))
        refused([a.ingot, "run", p, "--require-signature", key + ".pub"], f"weight byte {at} changed, signed",
                "(signature refused)")
        with open(p, "wb") as f:
            f.write(bytes(mutant))
        # Checksums not repaired: with a key the signature still speaks first.
        refused([a.ingot, "run", p, "--require-signature", key + ".pub"],
                f"weight byte {at} changed, signed, checksums not repaired", "does not match: the bundle was altered")
        refused([a.ingot, "run", p], f"weight byte {at} changed, no key", "checksum")
    for cut in (len(data) - 1, we["offset"] + 5, 100):
        p = os.path.join(w, f"cut_{cut}.ingot")
        with open(p, "wb") as f:
            f.write(data[:cut])
        refused([a.ingot, "run", p], f"raw bundle truncated to {cut} bytes")


def case_limits(a, w):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def save(name, nodes, inputs, outputs, inits=()):
        g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        p = os.path.join(w, name + ".onnx")
        with open(p, "wb") as f:
            f.write(m.SerializeToString())
        return p

    def compile_refused(path, what, expect, *flags):
        refused([a.ingot, "compile", path, "-o", os.path.join(w, "x.ingot"), "-q", *flags], what, expect)
        check(not os.path.exists(os.path.join(w, "x.ingot")), f"{what}: no output written")

    vi = helper.make_tensor_value_info
    relu = [helper.make_node("Relu", ["x"], ["y"])]
    # A graph input whose fixed shape holds 2^62 elements.
    p = save("huge_input", relu, [vi("x", TensorProto.FLOAT, [1 << 31, 1 << 31])], [vi("y", TensorProto.FLOAT, None)])
    compile_refused(p, "huge graph input", "elements")
    # An initializer whose dims claim 2^40 elements (with no data to match).
    def dims_only(dims):
        t = TensorProto()
        t.name, t.data_type = "w", TensorProto.FLOAT
        t.dims.extend(dims)
        return t

    t = dims_only([1 << 20, 1 << 20])
    p = save("huge_init", [helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", TensorProto.FLOAT, [1])],
             [vi("y", TensorProto.FLOAT, None)], [t])
    compile_refused(p, "huge initializer", "elements")
    # Dims whose product overflows 64 bits.
    t = dims_only([1 << 40, 1 << 40])
    p = save("overflow_init", [helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", TensorProto.FLOAT, [1])],
             [vi("y", TensorProto.FLOAT, None)], [t])
    compile_refused(p, "overflowing initializer", "overflow")
    # raw_data shorter than the shape says.
    t = numpy_helper.from_array(np.zeros(4, np.float32), "w")
    t.dims[:] = [8]
    p = save("short_raw", [helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", TensorProto.FLOAT, [8])],
             [vi("y", TensorProto.FLOAT, None)], [t])
    compile_refused(p, "raw_data shorter than its shape", "raw_data")
    # Reshape to a shape with 2^62 elements (shape inference must not overflow or allocate it).
    shape = numpy_helper.from_array(np.array([1 << 31, 1 << 31], np.int64), "s")
    p = save("huge_reshape", [helper.make_node("Reshape", ["x", "s"], ["y"])], [vi("x", TensorProto.FLOAT, [4])],
             [vi("y", TensorProto.FLOAT, None)], [shape])
    compile_refused(p, "reshape to 2^62 elements", None)
    # Names from the model reach the error line: never as control characters
    # (run_ingot refuses an error line holding any).
    evil = "\x1b[31mred\x1b[0m\x0b\x0c\r\nsecond line\x7f"
    p = save("evil_names", [helper.make_node("NoSuchOp" + evil, ["x"], ["y"], name="n" + evil)],
             [vi("x", TensorProto.FLOAT, [1])], [vi("y", TensorProto.FLOAT, [1])])
    text = refused([a.ingot, "compile", p, "-o", os.path.join(w, "x.ingot"), "-q"], "control characters in names",
                   "NoSuchOp")
    check("\x1b" not in text and "second line" in text, f"names are printed safely: {text!r}")
    # External data: absolute path, '..', a symlink that escapes, one that stays inside.
    ext = os.path.join(w, "ext")
    os.makedirs(ext)
    outside = os.path.join(w, "outside.bin")
    with open(outside, "wb") as f:
        f.write(np.arange(4, dtype=np.float32).tobytes())
    shutil.copy(outside, os.path.join(ext, "inside.bin"))
    os.symlink(outside, os.path.join(ext, "escape.bin"))
    os.symlink("inside.bin", os.path.join(ext, "alias.bin"))
    os.makedirs(os.path.join(ext, "sub"))
    os.symlink(os.path.join("..", ".."), os.path.join(ext, "sub", "up"))  # ext/sub/up -> w

    def ext_model(name, location):
        t = dims_only([4])
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key, e.value = "location", location
        g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [vi("x", TensorProto.FLOAT, [4])], [vi("y", TensorProto.FLOAT, [4])], [t])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        p = os.path.join(ext, name + ".onnx")
        with open(p, "wb") as f:
            f.write(m.SerializeToString())
        return p

    ok([a.ingot, "compile", ext_model("inside", "inside.bin"), "-o", os.path.join(w, "in.ingot"), "-q"],
       "external data inside the folder")
    ok([a.ingot, "compile", ext_model("alias", "alias.bin"), "-o", os.path.join(w, "alias.ingot"), "-q"],
       "external data through a symlink that stays inside")
    compile_refused(ext_model("absolute", outside), "absolute external path", "relative path")
    compile_refused(ext_model("dotdot", "../outside.bin"), "'..' in an external path", "relative path")
    compile_refused(ext_model("escape", "escape.bin"), "symlink escaping the folder", "outside the model's folder")
    compile_refused(ext_model("updir", "sub/up/outside.bin"), "symlinked folder escaping", "outside the model's folder")
    compile_refused(ext_model("missing", "nothere.bin"), "missing external file", "nothere.bin")
    compile_refused(ext_model("folder", "sub"), "external data that is a folder", None)


# ---- verify --------------------------------------------------------------------

def case_verify(a, w):
    key, other = os.path.join(w, "k"), os.path.join(w, "other")
    ok([a.ingot, "keygen", "-o", key], "keygen")
    ok([a.ingot, "keygen", "-o", other], "keygen other")
    unsigned = os.path.join(w, "unsigned.ingot")
    signed = os.path.join(w, "signed.ingot")
    compile_model(a, unsigned)
    shutil.copy(unsigned, signed)
    ok([a.ingot, "sign", signed, "--key", key], "sign")
    # Good bundles pass, and say what was checked.
    out = ok([a.ingot, "verify", unsigned], "verify unsigned")
    check("signature: none" in out and "loads here" in out and "verified" in out, f"verify output: {out}")
    out = ok([a.ingot, "verify", signed, "--require-signature", key + ".pub"], "verify signed, its key")
    check("signature: valid" in out and "(the required key)" in out, f"verify signed output: {out}")
    ok([a.ingot, "verify", signed], "verify signed, no key required")
    # Signature refusals: each a 'signature:' error, exit 1.
    refused([a.ingot, "verify", unsigned, "--require-signature", key + ".pub"], "verify unsigned with a key",
            "signature: not signed")
    refused([a.ingot, "verify", signed, "--require-signature", other + ".pub"], "verify, another key",
            "signature: signed by key")
    # One bit flipped in each section of the unsigned bundle: refused, the
    # section named; of the signed one: a signature error, checksums repaired
    # or not, with or without --require-signature.
    b = Bundle(open(unsigned, "rb").read())
    for idx, e in enumerate(b.entries):
        kind = ["?", "manifest", "weights", "plan", "code", "signature", "metadata"][e["kind"]]
        for where in (e["offset"], e["offset"] + e["stored"] // 2, e["offset"] + e["stored"] - 1):
            data = bytearray(b.data)
            data[where] ^= 0x10
            p = os.path.join(w, f"flip_{idx}_{where}.ingot")
            with open(p, "wb") as f:
                f.write(data)
            refused([a.ingot, "verify", p], f"verify, bit flipped in section {idx} ({kind}) at {where}",
                    f"section {idx} ({kind}")
            with open(p, "wb") as f:
                f.write(repaired(data))
            if kind in ("weights", "code") and e["codec"] != CODEC_NONE:
                # Stored checksums repaired: the raw checksum, checked only
                # once decoded, still catches it (or zstd does).
                refused([a.ingot, "verify", p], f"verify, repaired flip in section {idx} ({kind}) at {where}",
                        f"section {idx} ({kind}")
            elif kind == "metadata" and e["codec"] == CODEC_NONE:
                # Raw metadata with both checksums repaired: the flip may
                # leave well-formed metadata (another text; only a signature
                # tells) or break its structure (refused). Either way no crash.
                r = subprocess.run([a.ingot, "verify", p], capture_output=True, text=True)
                check(r.returncode in (0, 1), f"verify, repaired flip in raw metadata at {where}: exit {r.returncode}")
            elif kind == "weights":
                # Raw weights (--weights auto stores fp32 uncompressed) with
                # both checksums repaired are another valid bundle: only a
                # signature can tell (the signed case below).
                ok([a.ingot, "verify", p], f"verify, repaired flip in raw section {idx} ({kind}) at {where}")
    s = Bundle(open(signed, "rb").read())
    for idx, e in enumerate(s.entries):
        if e["kind"] == 5:
            continue
        where = e["offset"] + e["stored"] // 2
        data = bytearray(s.data)
        data[where] ^= 0x10
        for repair in (False, True):
            p = os.path.join(w, f"tampered_{idx}_{int(repair)}.ingot")
            with open(p, "wb") as f:
                f.write(repaired(data) if repair else data)
            for args in (["--require-signature", key + ".pub"], []):
                refused([a.ingot, "verify", p, *args],
                        f"verify {args}, signed bundle altered in section {idx}{' (repaired)' if repair else ''}",
                        "signature: the signature by key")
    # Not a bundle, a missing file, no bundle given.
    junk = os.path.join(w, "junk.ingot")
    with open(junk, "wb") as f:
        f.write(b"not a bundle at all" * 10)
    refused([a.ingot, "verify", junk], "verify junk", "format: not an Ingot bundle")
    refused([a.ingot, "verify", os.path.join(w, "nope.ingot")], "verify a missing file",
            "nope.ingot': No such file or directory")
    refused([a.ingot, "verify"], "verify without a bundle", "no bundle", code=2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ingot", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("case", choices=["keys", "signature", "atomic", "inplace", "limits", "verify"])
    a = p.parse_args()
    a.ingot = os.path.abspath(a.ingot)
    a.model = os.path.abspath(a.model)
    w = os.path.abspath(a.work)
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    globals()["case_" + a.case](a, w)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)", file=sys.stderr)
        return 1
    print(f"trust {a.case}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
