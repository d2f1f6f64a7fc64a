#!/usr/bin/env python3
"""ONNX backend conformance: the node tests of the installed onnx wheel through Ingot.

  run.py --ingot BUILD/ingot [--filter REGEX] [--jobs N] [--timeout S] [--target T]
         [--expected FILE] [--write-expected FILE] [--json OUT] [--work DIR]

Finds the test folders of the onnx package of the interpreter running this
script (onnx/backend/test/data/{node,pytorch-converted,pytorch-operator,simple}/*,
each with model.onnx and test_data_set_0/input_N.pb, output_N.pb). For each
test it writes the inputs as .npy, runs

  ingot compile model.onnx -o t.ingot --input-shape NAME=DIMS ...   (every input;
                                                   --target T when given)
  ingot run t.ingot --input NAME=FILE.npy ... --output out.npz --threads 1

and compares every output with the expected one: same dtype, same shape, and
|got - want| <= atol + rtol * |want| elementwise (rtol 1e-3, atol 1e-5; NaN
equals NaN). Test names are SUITE/NAME, e.g. node/test_abs.

Each test ends in one category:
  passed    every output matches
  wrong     an output differs (max abs / rel error), or has the wrong dtype or shape
  refused   `ingot compile` said "ingot: error: ..." (the reason is kept), or an
            input/output is a string, sequence, optional or a dtype .npy cannot carry
  error     `ingot run` said "ingot: error: ..." (a bad-input error at run time)
  crashed   a signal, or an exit status / output that is not a clean error
  hung      a command ran past --timeout and was killed

Prints a summary per op (the op under test: from the test name matched against
ONNX op names, else the model's single node, else its first non-trivial op) and
the totals. With --expected FILE only the tests listed there run (one name a
line, '#' comments), and the exit status is 1 when any of them does not pass.
--write-expected FILE writes the sorted names of the passing tests. --json OUT
writes every test's result.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple")
CATEGORIES = ("passed", "wrong", "refused", "error", "crashed", "hung")
RTOL = 1e-3
ATOL = 1e-5

# Ops that shape a model around the op under test; not chosen as "the op".
TRIVIAL_OPS = {"Constant", "Identity", "Reshape", "Unsqueeze", "Squeeze", "Shape", "Gather",
               "Concat", "Cast", "Transpose", "Flatten", "ConstantOfShape", "Slice", "Expand"}


def data_root():
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


def discover(root):
    tests = []
    for suite in SUITES:
        d = os.path.join(root, suite)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if os.path.isfile(os.path.join(path, "model.onnx")) and \
                    os.path.isdir(os.path.join(path, "test_data_set_0")):
                tests.append((f"{suite}/{name}", path))
    return tests


def npz_member_name(name):
    """What `ingot run --output` stores an output as (see cli/npy.h)."""
    return "".join("_" if (c in "/\\" or ord(c) < 0x20 or ord(c) == 0x7F) else c for c in name)


_SCHEMA_KEYS = None


def schema_keys():
    """ONNX op names keyed by their lowercase form without underscores, longest first."""
    global _SCHEMA_KEYS
    if _SCHEMA_KEYS is None:
        import onnx.defs
        names = {s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain in ("", "ai.onnx")}
        _SCHEMA_KEYS = sorted(((n.lower(), n) for n in names), key=lambda kv: -len(kv[0]))
    return _SCHEMA_KEYS


def op_under_test(test_name, model):
    ops = [n.op_type for n in model.graph.node]
    base = test_name.split("/", 1)[1]
    key = base[5:] if base.startswith("test_") else base
    squashed = key.replace("_", "").lower()
    if test_name.startswith("node/"):
        present = {o.lower(): o for o in ops}
        # An op of the model whose name starts the test name (test_reduce_sum_... -> ReduceSum).
        for low, name in sorted(present.items(), key=lambda kv: -len(kv[0])):
            if squashed.startswith(low):
                return name
        # Expanded tests and function ops: any ONNX op name.
        for low, name in schema_keys():
            if squashed.startswith(low):
                return name
    if len(ops) == 1:
        return ops[0]
    for o in ops:
        if o not in TRIVIAL_OPS:
            return o
    return ops[0] if ops else "(empty)"


# ---- one test ---------------------------------------------------------------

NPY_OK = None


def onnx_dtype_problem(type_proto):
    """None when a value of this type can travel as .npy, else why not."""
    import onnx
    which = type_proto.WhichOneof("value")
    if which != "tensor_type":
        return f"a {which or 'untyped'} value"
    et = type_proto.tensor_type.elem_type
    np_ok = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
             onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.INT16,
             onnx.TensorProto.INT8, onnx.TensorProto.UINT64, onnx.TensorProto.UINT32,
             onnx.TensorProto.UINT16, onnx.TensorProto.UINT8, onnx.TensorProto.BOOL,
             onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128,
             onnx.TensorProto.BFLOAT16,  # bfloat16: its raw bits as uint16 (README, "run")
             # float8: raw bits as uint8; int4 / uint4: one a byte as int8 / uint8
             onnx.TensorProto.FLOAT8E4M3FN, onnx.TensorProto.FLOAT8E4M3FNUZ,
             onnx.TensorProto.FLOAT8E5M2, onnx.TensorProto.FLOAT8E5M2FNUZ,
             onnx.TensorProto.INT4, onnx.TensorProto.UINT4}
    if et not in np_ok:
        return f"dtype {onnx.TensorProto.DataType.Name(et).lower()}"
    return None


def read_tensor(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def run_cmd(cmd, timeout):
    """(returncode or None on timeout, stdout+stderr text, seconds)."""
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    except OSError as e:
        return -1, str(e), 0.0
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = p.communicate()
        return None, (out + err).decode("utf-8", "replace"), time.monotonic() - t0
    return p.returncode, (out + err).decode("utf-8", "replace"), time.monotonic() - t0


def error_line(text):
    for line in text.splitlines():
        if line.startswith("ingot: error: "):
            return line[len("ingot: error: "):]
    return None


def as_npy(arr):
    """arr as .npy can hold it (ml_dtypes types, from onnx): bfloat16 as its
    uint16 bits, the float8s as their uint8 bits, int4 / uint4 as int8 / uint8."""
    name = arr.dtype.name
    if name == "bfloat16":
        return arr.view(np.uint16)
    if name.startswith("float8_"):
        return arr.view(np.uint8)
    if name in ("int4", "uint4"):
        return arr.astype(np.int8 if name == "int4" else np.uint8)
    return arr


def compare(got, want):
    """None when equal within tolerance, else a description."""
    want = as_npy(want)  # bfloat16 and the float8s compare bit for bit
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != expected {want.dtype}", None
    if got.shape != want.shape:
        return f"shape {list(got.shape)} != expected {list(want.shape)}", None
    if got.size == 0:
        return None, None
    if want.dtype.kind in "biu":
        bad = got != want
        if not bad.any():
            return None, None
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        return f"{int(bad.sum())} of {want.size} values differ (max abs {diff.max():.3g})", float(diff.max())
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    gn, wn = np.isnan(g), np.isnan(w)
    nan_bad = gn != wn
    with np.errstate(invalid="ignore", over="ignore"):
        same_inf = np.isinf(w) & (g == w)
        diff = np.where(gn | wn | same_inf, 0.0, np.abs(g - w))
        tol = ATOL + RTOL * np.abs(np.where(np.isinf(w), 0.0, w))
        bad = nan_bad | (diff > tol) | (np.isnan(diff))
    if not bad.any():
        return None, None
    finite = diff[np.isfinite(diff)]
    max_abs = float(finite.max()) if finite.size else float("inf")
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(w) > 0, diff / np.abs(w), np.where(diff > 0, np.inf, 0.0))
    rel_f = rel[np.isfinite(rel)]
    max_rel = float(rel_f.max()) if rel_f.size else float("inf")
    extra = f", {int(nan_bad.sum())} NaN mismatches" if nan_bad.any() else ""
    return (f"{int(bad.sum())} of {want.size} values off: max abs {max_abs:.3g}, "
            f"max rel {max_rel:.3g}{extra}"), max_abs


def run_one(args):
    name, path, ingot, timeout, work, target = args
    import onnx
    result = {"name": name, "op": "?", "category": None, "reason": "", "seconds": 0.0}
    t0 = time.monotonic()
    tdir = os.path.join(work, name.replace("/", "__"))
    try:
        os.makedirs(tdir, exist_ok=True)
        model_path = os.path.join(path, "model.onnx")
        model = onnx.load(model_path)
        result["op"] = op_under_test(name, model)
        init_names = {i.name for i in model.graph.initializer}
        graph_inputs = list(model.graph.input)
        data_dir = os.path.join(path, "test_data_set_0")
        n_in = len([f for f in os.listdir(data_dir) if re.fullmatch(r"input_\d+\.pb", f)])
        n_out = len([f for f in os.listdir(data_dir) if re.fullmatch(r"output_\d+\.pb", f)])
        if n_in != len(graph_inputs):
            graph_inputs = [i for i in graph_inputs if i.name not in init_names]
        if n_in != len(graph_inputs):
            result.update(category="refused", stage="runner",
                          reason=f"{n_in} input files for {len(graph_inputs)} graph inputs")
            return result
        for v in list(graph_inputs) + list(model.graph.output):
            problem = onnx_dtype_problem(v.type)
            if problem:
                result.update(category="refused", stage="runner",
                              reason=f"'{v.name}' is {problem}, which .npy cannot carry")
                return result
        cmd_compile = [ingot, "compile", model_path, "-o", os.path.join(tdir, "t.ingot"), "-q"]
        if target:
            cmd_compile += ["--target", target]
        cmd_run = [ingot, "run", os.path.join(tdir, "t.ingot"), "--threads", "1",
                   "--output", os.path.join(tdir, "out.npz")]
        input_files = {}
        for i, v in enumerate(graph_inputs):
            arr = read_tensor(os.path.join(data_dir, f"input_{i}.pb"))
            f = os.path.join(tdir, f"input_{i}.npy")
            np.save(f, as_npy(arr))
            input_files[v.name] = f
            cmd_compile += ["--input-shape", f"{v.name}=" + "x".join(str(d) for d in arr.shape)]
        # Inputs that decide an output shape (a Reshape target, Resize scales,
        # Slice bounds, ...) must be known when compiling: the node tests feed
        # them as graph inputs, so bind those to the test's data with
        # `ingot compile --const NAME=FILE.npy`, as a user would.
        bound = []
        for _ in range(len(graph_inputs) + 1):
            rc, text, _ = run_cmd(cmd_compile, timeout)
            msg = error_line(text or "") or ""
            if rc != 1 or not re.search(r"must be known at compile time|must be a constant", msg):
                break
            names = [q for q in re.findall(r"'([^']+)'", msg) if q in input_files and q not in bound]
            if not names:
                break
            bound.append(names[0])
            cmd_compile += ["--const", f"{names[0]}={input_files[names[0]]}"]
        if bound:
            result["bound"] = bound
        for name, f in input_files.items():
            if name not in bound:
                cmd_run += ["--input", f"{name}={f}"]
        for stage, cmd in (("compile", cmd_compile), ("run", cmd_run)):
            rc, text, _ = run_cmd(cmd, timeout) if stage == "run" else (rc, text, None)
            if rc is None:
                result.update(category="hung", stage=stage, reason=f"{stage} ran past {timeout}s")
                return result
            if rc == 0:
                continue
            msg = error_line(text)
            if rc == 1 and msg is not None:
                result.update(category="refused" if stage == "compile" else "error", stage=stage, reason=msg)
            elif rc < 0:
                result.update(category="crashed", stage=stage,
                              reason=f"{stage}: signal {signal.Signals(-rc).name}")
            else:
                tail = " | ".join(text.strip().splitlines()[-3:])
                result.update(category="crashed", stage=stage, reason=f"{stage}: exit {rc}: {tail[:300]}")
            return result
        got = np.load(os.path.join(tdir, "out.npz"))
        problems = []
        worst = 0.0
        for i, v in enumerate(model.graph.output):
            if i >= n_out:
                break
            want = read_tensor(os.path.join(data_dir, f"output_{i}.pb"))
            member = npz_member_name(v.name)
            if member not in got.files:
                problems.append(f"output '{v.name}' missing")
                continue
            msg, err = compare(got[member], want)
            if msg:
                problems.append(f"'{v.name}': {msg}")
                if err is not None:
                    worst = max(worst, err)
        if problems:
            result.update(category="wrong", stage="compare", reason="; ".join(problems), max_abs=worst)
        else:
            result.update(category="passed", stage="compare")
        return result
    except Exception as e:  # a runner problem with this test, not Ingot's
        result.update(category="crashed", stage="runner", reason=f"runner: {type(e).__name__}: {e}")
        return result
    finally:
        result["seconds"] = round(time.monotonic() - t0, 3)
        shutil.rmtree(tdir, ignore_errors=True)


# ---- driver -----------------------------------------------------------------

def read_list(path):
    names = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


def short_reason(reason):
    """A refusal reason with node and value names blanked, to group alike ones."""
    r = re.sub(r"^\S+\.onnx: ", "", reason)
    r = re.sub(r"'[^']*'", "'*'", r)
    r = re.sub(r"\b\d+\b", "N", r)
    return r[:160]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--ingot", required=True, help="path to the ingot binary")
    ap.add_argument("--filter", help="run only tests whose SUITE/NAME matches this regex (re.search)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per command (default 60)")
    ap.add_argument("--target", help="code target for ingot compile (default: ingot's own default)")
    ap.add_argument("--expected", help="run only the tests listed; fail when any does not pass")
    ap.add_argument("--write-expected", help="write the sorted list of passing tests here")
    ap.add_argument("--json", help="write every test's result here")
    ap.add_argument("--work", help="scratch folder (default: a temporary one, removed after)")
    ap.add_argument("--quiet", action="store_true", help="no per-op table; totals and failures only")
    a = ap.parse_args()

    ingot = os.path.abspath(a.ingot)
    if not os.access(ingot, os.X_OK):
        print(f"run.py: '{a.ingot}' is not an executable", file=sys.stderr)
        return 2
    root = data_root()
    tests = discover(root)
    if not tests:
        print(f"run.py: no tests under {root}", file=sys.stderr)
        return 2
    expected = None
    if a.expected:
        expected = read_list(a.expected)
        known = {n for n, _ in tests}
        missing = [n for n in expected if n not in known]
        if missing:
            print(f"run.py: {len(missing)} listed tests do not exist in {root}: {missing[:5]}", file=sys.stderr)
            return 2
        wanted = set(expected)
        tests = [t for t in tests if t[0] in wanted]
    if a.filter:
        rx = re.compile(a.filter)
        tests = [t for t in tests if rx.search(t[0])]

    own_work = a.work is None
    work = tempfile.mkdtemp(prefix="ingot-conformance-") if own_work else os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    t0 = time.monotonic()
    results = []
    try:
        jobs = [(n, p, ingot, a.timeout, work, a.target) for n, p in tests]
        with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            for i, r in enumerate(pool.map(run_one, jobs, chunksize=1)):
                results.append(r)
                if sys.stderr.isatty():
                    print(f"\r{i + 1}/{len(jobs)}", end="", file=sys.stderr, flush=True)
        if sys.stderr.isatty():
            print(file=sys.stderr)
    finally:
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - t0

    per_op = collections.defaultdict(collections.Counter)
    totals = collections.Counter()
    for r in results:
        per_op[r["op"]][r["category"]] += 1
        totals[r["category"]] += 1

    if not a.quiet:
        w = max([len(op) for op in per_op] + [2])
        print(f"{'op':<{w}}  total " + " ".join(f"{c:>7}" for c in CATEGORIES))
        for op in sorted(per_op):
            c = per_op[op]
            print(f"{op:<{w}}  {sum(c.values()):>5} " + " ".join(f"{c[k]:>7}" for k in CATEGORIES))
        print()
        reasons = collections.Counter(short_reason(r["reason"]) for r in results if r["category"] == "refused")
        if reasons:
            print("most common refusals:")
            for reason, n in reasons.most_common(25):
                print(f"  {n:>4}  {reason}")
            print()
        for cat in ("wrong", "error", "crashed", "hung"):
            bad = [r for r in results if r["category"] == cat]
            if bad:
                print(f"{cat}:")
                for r in bad:
                    print(f"  {r['name']}: {r['reason'][:300]}")
                print()

    print("by suite:")
    for suite in SUITES:
        c = collections.Counter(r["category"] for r in results if r["name"].startswith(suite + "/"))
        if c:
            print(f"  {suite:<18} {sum(c.values()):>5} tests: " + ", ".join(f"{k} {c[k]}" for k in CATEGORIES))
    print(f"total: {len(results)} tests in {elapsed:.0f}s: " + ", ".join(f"{k} {totals[k]}" for k in CATEGORIES))

    if a.write_expected:
        passing = sorted(r["name"] for r in results if r["category"] == "passed")
        with open(a.write_expected, "w") as f:
            f.write("# Conformance tests that pass (tests/conformance/run.py --write-expected).\n")
            for n in passing:
                f.write(n + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"totals": {k: totals[k] for k in CATEGORIES}, "seconds": round(elapsed, 1),
                       "tests": sorted(results, key=lambda r: r["name"])}, f, indent=1)
    if expected is not None:
        failed = [r for r in results if r["category"] != "passed"]
        if failed:
            print(f"FAIL: {len(failed)} of {len(results)} expected-pass tests do not pass:")
            for r in failed:
                print(f"  {r['name']}: {r['category']}: {r['reason'][:300]}")
            return 1
        print(f"ok: all {len(results)} expected-pass tests pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
