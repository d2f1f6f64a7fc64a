#!/usr/bin/env python3
"""Mutation test: many mutated bundles and models through the `ingot` driver.

  mutate.py --ingot build/ingot --bundle-tool build/.../bundle_tool \\
            --seeds tests/fuzz/corpus/importer --work DIR [--bundles 1200] [--models 1200]

Every mutant goes through the command line, in a pool of processes, and must
keep its contract: no signal, no hang (a time-out), and either success or
exit 1 with exactly one 'ingot: error:' line (ingot_bundle.run_ingot). A
refused compile must leave no output file.

Bundles (digits and a tiny model, compiled here), three kinds:
  raw        bit flips, byte overwrites, truncations, extensions, inserted or
             deleted bytes, huge values written into header and table
             fields, all with checksums as they are: `inspect` and `run`;
  repaired   structure mutations on an uncompressed copy (bundle_tool), with
             every checksum recomputed so they reach the parsers: swapped
             table entries, swapped section offsets, huge sizes and counts in
             the header, table, manifest (counts, dims, ranks, dtypes,
             offsets, steps, variant, launch and weight records) and plan,
             flips inside manifest/plan/weights:
             `inspect` only, which opens and verifies the bundle. A bundle
             whose checksums are right but whose manifest lies could make
             correct code write out of bounds when *run*: checksums catch
             accidents, signatures catch forgeries, which is the next kind;
  signed     any of the above on a signed bundle, code section included,
             checksums repaired: `run --require-signature` must refuse each.
Models (the fuzz seed corpus: small models of every op family, and digits):
  bytes      bit flips, truncations, inserted/deleted/duplicated/swapped bytes;
  protobuf   the message parsed as a protobuf tree and re-serialized with
             valid framing after changing one field: huge or odd varints
             (dims, types, counts, attribute values), truncated or grown
             length-delimited fields, deleted, duplicated or swapped fields.
  `compile`: a mutant may still be a valid model; then it must compile.
"""
import argparse
import concurrent.futures
import os
import random
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ingot_bundle import ENTRY, HEADER, Bundle, repaired, run_ingot  # noqa: E402

U32 = [0, 1, 2, 7, 8, 9, 63, 64, 255, 256, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]
U64 = [0, 1, 64, 1 << 31, 1 << 32, (1 << 32) + 64, 1 << 40, 1 << 62, (1 << 63) - 1, 1 << 63, (1 << 64) - 64,
       (1 << 64) - 1]
VARINTS = [0, 1, 2, 127, 128, 255, 1 << 31, (1 << 31) - 1, 1 << 32, 1 << 40, 1 << 62, (1 << 63) - 1, 1 << 63,
           (1 << 64) - 1]


# ---- bundle mutations ----------------------------------------------------------

def raw_mutation(data, rng):
    d = bytearray(data)
    op = rng.randrange(8)
    n = len(d)
    if op == 0:  # bit flips
        for _ in range(rng.choice([1, 1, 2, 4, 8])):
            i = rng.randrange(n)
            d[i] ^= 1 << rng.randrange(8)
        return bytes(d), "bitflip"
    if op == 1:  # byte overwrite with an interesting value
        i = rng.randrange(n)
        d[i] = rng.choice([0, 0xFF, 0x7F, 0x80, 0x01])
        return bytes(d), "byte"
    if op == 2:  # truncation, often inside the header or table
        cut = rng.choice([rng.randrange(0, 65), rng.randrange(64, 64 + 72 * 6), rng.randrange(n)])
        return bytes(d[:cut]), "truncate"
    if op == 3:  # extension
        return bytes(d) + bytes(rng.choice([b"\0", b"\0" * 64, os.urandom(rng.randrange(1, 300))])), "extend"
    if op == 4:  # insert bytes
        i = rng.randrange(n)
        return bytes(d[:i] + os.urandom(rng.randrange(1, 16)) + d[i:]), "insert"
    if op == 5:  # delete bytes
        i = rng.randrange(n)
        return bytes(d[:i] + d[i + rng.randrange(1, 64):]), "delete"
    # 6, 7: a huge value in a header or table field, checksums left stale
    b = Bundle(d)
    field_u64 = [16] + [64 + 72 * k + o for k in range(b.count) for o in (8, 16, 24)]
    field_u32 = [8, 12, 24, 28] + [64 + 72 * k + o for k in range(b.count) for o in (0, 4)]
    if op == 6 and field_u64:
        off = rng.choice(field_u64)
        if off + 8 <= n:
            struct.pack_into("<Q", d, off, rng.choice(U64))
    else:
        off = rng.choice(field_u32)
        if off + 4 <= n:
            struct.pack_into("<I", d, off, rng.choice(U32))
    return bytes(d), "hugefield-stale"


def manifest_fields(mdata):
    """Offsets of (fmt, offset) fields worth mutating inside a manifest."""
    if len(mdata) < 32:
        return []
    h = struct.unpack_from("<8I", mdata, 0)
    tensors, inputs, outputs, steps, args, kernels, strings, variants = h
    out = [("<I", 4 * k) for k in range(8)]
    pos = 32
    for t in range(min(tensors, 64)):
        base = pos + 96 * t
        if base + 96 > len(mdata):
            break
        out += [("<I", base), ("<I", base + 4), ("<I", base + 8), ("<I", base + 12), ("<Q", base + 16),
                ("<Q", base + 24)] + [("<q", base + 32 + 8 * k) for k in range(8)]
    pos += 96 * tensors
    align = lambda x: (x + 7) & ~7  # noqa: E731
    pos = align(pos)
    out += [("<I", pos + 4 * k) for k in range(min(inputs, 8))]
    pos = align(pos + 4 * inputs)
    out += [("<I", pos + 4 * k) for k in range(min(outputs, 8))]
    pos = align(pos + 4 * outputs)
    for s in range(min(steps, 32)):
        out += [("<I", pos + 16 * s + 4 * k) for k in range(4)]
    pos = align(pos + 16 * steps)
    out += [("<I", pos + 4 * k) for k in range(min(args, 32))]
    pos = align(pos + 4 * args)
    out += [("<I", pos + 4 * k) for k in range(min(kernels, 8))]
    # Format 2: variant records, their launch records and weight records.
    weights = sum(1 for t in range(tensors) if 32 + 96 * t + 16 <= len(mdata)
                  and struct.unpack_from("<I", mdata, 32 + 96 * t + 12)[0] == 2)
    pos = align(pos + 4 * kernels)
    for v in range(min(variants, 4)):
        out += [("<I", pos + 16 * v + 4 * k) for k in range(4)]
    pos = align(pos + 16 * variants)
    for r in range(min(variants * steps, 16)):
        out += [("<I", pos + 32 * r + 4 * k) for k in range(8)]
    pos = align(pos + 32 * variants * steps)
    for r in range(min(variants * weights, 16)):
        out += [("<Q", pos + 16 * r), ("<Q", pos + 16 * r + 8)]
    return [(f, o) for f, o in out if o + struct.calcsize(f) <= len(mdata)]


def interesting(fmt, rng, current):
    if fmt == "<I":
        return rng.choice(U32 + [(current + 1) & 0xFFFFFFFF, (current - 1) & 0xFFFFFFFF])
    if fmt == "<q":
        return rng.choice([-1, -(1 << 63), (1 << 63) - 1, 1 << 31, 1 << 32, 0, current + 1, max(0, current - 1)])
    return rng.choice(U64 + [(current + 64) % (1 << 64)])


def structural_mutation(data, rng):
    """A structural change to an uncompressed bundle; returns (bytes, name)
    with checksums repaired."""
    b = Bundle(data)
    d = b.data
    op = rng.randrange(9)
    if op == 0 and b.count >= 2:  # swap two table entries
        i, j = rng.sample(range(b.count), 2)
        b.entries[i], b.entries[j] = b.entries[j], b.entries[i]
        name = "swap-entries"
    elif op == 1 and b.count >= 2:  # swap what two entries point at
        i, j = rng.sample(range(b.count), 2)
        for key in ("offset", "stored", "raw"):
            b.entries[i][key], b.entries[j][key] = b.entries[j][key], b.entries[i][key]
        name = "swap-sections"
    elif op == 2:  # a huge header field
        field = rng.choice(["file_size", "count", "version", "flags"])
        setattr(b, field, rng.choice(U64 if field == "file_size" else U32))
        name = f"header-{field}"
    elif op == 3:  # a huge table field
        e = rng.choice(b.entries)
        key = rng.choice(["offset", "stored", "raw", "kind", "codec"])
        e[key] = rng.choice(U64 if key in ("offset", "stored", "raw") else U32)
        name = f"entry-{key}"
    elif op in (4, 5, 6):  # a manifest field
        _, e = b.section("manifest")
        m = d[e["offset"]:e["offset"] + e["stored"]]
        fields = manifest_fields(m)
        fmt, off = rng.choice(fields)
        cur = struct.unpack_from(fmt, m, off)[0]
        struct.pack_into(fmt, d, e["offset"] + off, interesting(fmt, rng, cur))
        name = "manifest-field"
    elif op == 7:  # a plan field
        _, e = b.section("plan")
        p0 = e["offset"]
        choices = [("<Q", 0), ("<Q", 8), ("<I", 16), ("<I", 20)]
        for r in range(min(8, max(0, (e["stored"] - 24) // 32))):
            choices += [("<I", 24 + 32 * r + 4 * k) for k in range(4)] + [("<Q", 24 + 32 * r + 16),
                                                                           ("<Q", 24 + 32 * r + 24)]
        fmt, off = rng.choice([c for c in choices if c[1] + struct.calcsize(c[0]) <= e["stored"]])
        cur = struct.unpack_from(fmt, d, p0 + off)[0]
        struct.pack_into(fmt, d, p0 + off, interesting(fmt, rng, cur))
        name = "plan-field"
    else:  # flips inside manifest, plan or weights
        _, e = b.section(rng.choice(["manifest", "plan", "weights"]))
        for _ in range(rng.choice([1, 2, 8])):
            if e["stored"]:
                d[e["offset"] + rng.randrange(e["stored"])] ^= 1 << rng.randrange(8)
        name = "section-flips"
    b.write_table()
    return bytes(b.repair().data), name


# ---- protobuf mutations -------------------------------------------------------------

def read_varint(buf, i):
    v = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("varint")
        c = buf[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def parse(buf, depth=0):
    """A protobuf message as a list of [field, wiretype, value]; length-
    delimited values that parse as messages become nested lists."""
    out, i = [], 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        fn, wt = key >> 3, key & 7
        if fn == 0:
            raise ValueError("field 0")
        if wt == 0:
            v, i = read_varint(buf, i)
        elif wt == 1:
            v, i = bytes(buf[i:i + 8]), i + 8
        elif wt == 5:
            v, i = bytes(buf[i:i + 4]), i + 4
        elif wt == 2:
            n, i = read_varint(buf, i)
            v, i = bytes(buf[i:i + n]), i + n
            if depth < 8 and v:
                try:
                    v = parse(v, depth + 1)
                except ValueError:
                    pass
        else:
            raise ValueError("wire type")
        if i > len(buf):
            raise ValueError("truncated")
        out.append([fn, wt, v])
    return out


def serialize(msg):
    out = bytearray()
    for fn, wt, v in msg:
        out += varint(fn << 3 | wt)
        if wt == 0:
            out += varint(v)
        elif wt == 2:
            body = serialize(v) if isinstance(v, list) else v
            out += varint(len(body)) + body
        else:
            out += v
    return bytes(out)


def all_fields(msg, acc=None):
    acc = [] if acc is None else acc
    for f in msg:
        acc.append((msg, f))
        if f[1] == 2 and isinstance(f[2], list):
            all_fields(f[2], acc)
    return acc


def model_mutation(data, tree, rng):
    op = rng.randrange(10)
    if op < 4:  # bytes
        d = bytearray(data)
        n = len(d)
        kind = rng.randrange(5)
        if kind == 0:
            for _ in range(rng.choice([1, 2, 8])):
                d[rng.randrange(n)] ^= 1 << rng.randrange(8)
            return bytes(d), "bitflip"
        if kind == 1:
            return bytes(d[:rng.randrange(n)]), "truncate"
        if kind == 2:
            i = rng.randrange(n)
            return bytes(d[:i] + os.urandom(rng.randrange(1, 8)) + d[i:]), "insert"
        if kind == 3:
            i = rng.randrange(n)
            return bytes(d[:i] + d[i + rng.randrange(1, 32):]), "delete"
        i, j = sorted(rng.sample(range(n), 2))
        return bytes(d[:i] + d[i:j] + d[i:]), "duplicate"
    # protobuf tree
    t = parse(data)
    fields = all_fields(t)
    op = rng.randrange(6)
    if op <= 2:  # a varint to a huge or odd value
        ints = [(m, f) for m, f in fields if f[1] == 0]
        if ints:
            m, f = rng.choice(ints)
            f[2] = rng.choice(VARINTS + [f[2] + 1, max(0, f[2] - 1), f[2] * 1000003])
            return serialize(t), "varint"
    if op == 3:  # grow or shrink a bytes field
        bs = [(m, f) for m, f in fields if f[1] == 2 and not isinstance(f[2], list)]
        if bs:
            m, f = rng.choice(bs)
            v = f[2]
            f[2] = v[:rng.randrange(len(v) + 1)] if rng.random() < 0.5 else v + os.urandom(rng.randrange(1, 64))
            return serialize(t), "bytes-field"
    if op == 4:  # delete or duplicate a field
        m, f = rng.choice(fields)
        if rng.random() < 0.5:
            m.remove(f)
            return serialize(t), "delete-field"
        m.insert(m.index(f), [f[0], f[1], f[2]])
        return serialize(t), "duplicate-field"
    m, f = rng.choice(fields)  # swap two siblings
    if len(m) >= 2:
        i, j = rng.sample(range(len(m)), 2)
        m[i], m[j] = m[j], m[i]
    return serialize(t), "swap-fields"


# ---- driver --------------------------------------------------------------------------

def run_job(job):
    name, data, argv, must_refuse, out_path = job
    mpath = job_path(name)
    with open(mpath, "wb") as f:
        f.write(data)
    argv = [mpath if a == "@" else a for a in argv]
    t0 = time.monotonic()
    rc, out, err, problem = run_ingot(argv, timeout=ARGS.timeout)
    dt = time.monotonic() - t0
    msg = err.decode("utf-8", "replace").strip()
    if problem is None and must_refuse and rc != 1:
        problem = f"accepted (exit {rc}), must be refused"
    if problem is None and out_path and rc != 0 and os.path.exists(out_path):
        problem = "a refused compile left an output file"
    if problem is None and rc not in (0, 1):
        problem = f"exit {rc}"
    if out_path and os.path.exists(out_path):
        os.unlink(out_path)
    if problem is None:
        os.unlink(mpath)
    return name, rc, problem, msg, dt


def job_path(name):
    return os.path.join(ARGS.work, "mutants", name)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--ingot", required=True)
    p.add_argument("--bundle-tool", required=True)
    p.add_argument("--seeds", required=True, help="folder of small .onnx models")
    p.add_argument("--digits", required=True, help="the digits model")
    p.add_argument("--work", required=True)
    p.add_argument("--bundles", type=int, default=1200)
    p.add_argument("--models", type=int, default=1200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--jobs", type=int, default=2 * (os.cpu_count() or 1))
    ARGS = a = p.parse_args()
    a.work = os.path.abspath(a.work)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(os.path.join(a.work, "mutants"))
    rng = random.Random(a.seed)
    W = a.work

    def sh(*argv):
        subprocess.run(argv, check=True, capture_output=True)

    # Bundles: digits and the smallest seed that compiles; uncompressed copies; a signed one.
    t0 = time.monotonic()
    bundles = {}
    sh(a.ingot, "compile", a.digits, "-o", f"{W}/digits.ingot", "-q", "--input-shape", "input=1x1x8x8")
    bundles["digits"] = f"{W}/digits.ingot"
    seeds = sorted(os.path.join(a.seeds, f) for f in os.listdir(a.seeds) if f.endswith(".onnx"))
    for s in sorted(seeds, key=os.path.getsize):
        if subprocess.run([a.ingot, "compile", s, "-o", f"{W}/tiny.ingot", "-q"], capture_output=True).returncode == 0:
            bundles["tiny"] = f"{W}/tiny.ingot"
            break
    for k in list(bundles):
        sh(a.bundle_tool, "uncompress", bundles[k], f"{W}/{k}_raw.ingot")
        bundles[k + "_raw"] = f"{W}/{k}_raw.ingot"
    sh(a.ingot, "keygen", "-o", f"{W}/key")
    shutil.copy(bundles["digits"], f"{W}/signed.ingot")
    sh(a.ingot, "sign", f"{W}/signed.ingot", "--key", f"{W}/key")
    # The originals must pass, so that refusals below are the mutations' doing.
    for k, path in bundles.items():
        rc, _, err, problem = run_ingot([a.ingot, "run", path])
        assert rc == 0 and problem is None, (k, err)
    data = {k: open(v, "rb").read() for k, v in bundles.items()}
    signed = open(f"{W}/signed.ingot", "rb").read()

    jobs = []
    counts = {}
    n_raw = a.bundles * 45 // 100
    n_rep = a.bundles * 35 // 100
    n_sig = a.bundles - n_raw - n_rep
    def attempts(n):
        i = made = 0
        while made < n and i < 20 * n:
            i += 1
            yield i
    for i in attempts(n_raw):
        if counts.get("bundle raw", 0) >= n_raw:
            break
        k = rng.choice(list(data))
        mutant, how = raw_mutation(data[k], rng)
        if mutant == data[k]:
            continue
        cmd = [a.ingot, "inspect" if i % 2 else "run", "@"]
        jobs.append((f"b{i:05d}_raw_{k}_{how}.ingot", mutant, cmd, False, None))
        counts["bundle raw"] = counts.get("bundle raw", 0) + 1
    for i in attempts(n_rep):
        if counts.get("bundle repaired", 0) >= n_rep:
            break
        k = rng.choice([k for k in data if k.endswith("_raw")])
        mutant, how = structural_mutation(data[k], rng)
        if mutant == data[k]:
            continue
        jobs.append((f"b{i:05d}_rep_{k}_{how}.ingot", mutant, [a.ingot, "inspect", "@"], False, None))
        counts["bundle repaired"] = counts.get("bundle repaired", 0) + 1
    for i in attempts(n_sig):
        if counts.get("bundle signed", 0) >= n_sig:
            break
        if i % 2:
            mutant, how = raw_mutation(signed, rng)
            mutant = repaired(mutant) if rng.random() < 0.5 else mutant
        else:
            b = Bundle(signed)
            d = bytearray(signed)
            idx, e = rng.choice(list(enumerate(b.entries)))
            for _ in range(rng.choice([1, 2, 4])):
                d[e["offset"] + rng.randrange(e["stored"])] ^= 1 << rng.randrange(8)
            mutant, how = repaired(d), f"section{idx}-flips"
        if mutant == signed:
            continue
        jobs.append((f"b{i:05d}_sig_{how}.ingot", mutant, [a.ingot, "run", "@", "--require-signature",
                                                         f"{W}/key.pub"], True, None))
        counts["bundle signed"] = counts.get("bundle signed", 0) + 1

    models = [(s, []) for s in seeds] + [(a.digits, ["--input-shape", "input=1x1x8x8"])]
    model_data = [(open(s, "rb").read(), flags, os.path.basename(s)[:-5]) for s, flags in models]
    for i in attempts(a.models):
        if counts.get("model", 0) >= a.models:
            break
        d, flags, base = rng.choice(model_data)
        try:
            mutant, how = model_mutation(d, None, rng)
        except (ValueError, IndexError):
            continue
        if mutant == d:
            continue
        out = os.path.join(W, "mutants", f"m{i:05d}.out.ingot")
        jobs.append((f"m{i:05d}_{base}_{how}.onnx", mutant, [a.ingot, "compile", "@", "-o", out, "-q"] + flags,
                     False, out))
        counts["model"] = counts.get("model", 0) + 1
    setup = time.monotonic() - t0

    t0 = time.monotonic()
    failures, outcome, slowest = [], {}, (0, "")
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for name, rc, problem, msg, dt in pool.map(run_job, jobs):
            kind = "model" if name.startswith("m") else "bundle"
            outcome[(kind, rc)] = outcome.get((kind, rc), 0) + 1
            slowest = max(slowest, (dt, name))
            if problem:
                failures.append(f"{name}: {problem}: {msg[:300]}")
    elapsed = time.monotonic() - t0
    for k in sorted(counts):
        print(f"{k:16s} {counts[k]:5d} mutants")
    for (kind, rc), n in sorted(outcome.items(), key=lambda x: (x[0][0], str(x[0][1]))):
        print(f"{kind:6s} exit {rc}: {n}")
    print(f"{len(jobs)} mutants in {elapsed:.1f} s ({a.jobs} at a time; setup {setup:.1f} s); "
          f"slowest {slowest[0]:.2f} s ({slowest[1]})")
    n_bundles = sum(v for k, v in counts.items() if k.startswith("bundle"))
    ok = n_bundles >= min(1000, a.bundles) and counts.get("model", 0) >= min(1000, a.models)
    if not ok:
        failures.append(f"too few mutants: {n_bundles} bundles, {counts.get('model', 0)} models")
    for f in failures[:40]:
        print("FAIL", f, file=sys.stderr)
    if failures:
        print(f"{len(failures)} failure(s); mutants kept in {W}/mutants", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
