#!/usr/bin/env python3
"""Seeing what happens (issue 13, item 8): `ingot inspect --plan/--svg`,
`ingot compile -v` and `ingot run --trace`.

  observe_test.py --ingot BUILD/ingot --model models/digits/model.onnx --work DIR CASE

CASE is one of:
  plan     --plan (text and --json) on the digits model and on a generated
           model with branches and a tensor named with XML's special
           characters: every arena tensor listed once, in the arena, 64-byte
           aligned, no two tensors live at one step share a byte (unless they
           are one alias group at one offset), the largest sum live at a step
           is the lower bound, arena and lower bound as `inspect --json`
           says, the sort orders; --svg parses as XML with one rectangle per
           tensor placed from its offset and steps and a tooltip naming it,
           the same bytes twice; bad --svg paths and values: one error line,
           the exit code, no file
  verbose  compile -v: every stage and the write on stderr with its time,
           the bundle the same as without -v; progress lines (plain without
           a terminal, one line redrawn in place on one)
  trace    run --trace: a JSON array of Chrome trace events, per traced run
           one "run" event and one event per step (node as name, kernel as
           cat) laid back to back inside it; without --bench one run, with
           --bench N the N timed runs; bad paths: one error line, exit 1,
           before any run, no file
"""
import argparse
import json
import os
import pty
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_test  # noqa: E402  the shared helpers: check, ingot, expect_error
from cli_test import check, expect_error, ingot  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
ODD_NAME = "mid&<\"odd'>"  # an intermediate whose name XML must escape


def branchy_model(path):
    """x -> several branches with different lifetimes (MatMuls keep the steps
    apart), one intermediate named ODD_NAME, two Reshapes (aliases)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w = [numpy_helper.from_array(rng.standard_normal((32, 32)).astype(np.float32) * 0.2, f"w{i}")
         for i in range(4)]
    w += [numpy_helper.from_array(np.array([128], np.int64), "flat_shape"),
          numpy_helper.from_array(np.array([4, 32], np.int64), "back_shape")]
    nodes = [
        helper.make_node("MatMul", ["x", "w0"], ["a"], name="mm0"),
        helper.make_node("Sigmoid", ["a"], ["b"], name="sig"),
        helper.make_node("MatMul", ["b", "w1"], [ODD_NAME], name="mm1"),
        helper.make_node("Tanh", [ODD_NAME], ["d"], name="tanh"),
        helper.make_node("Reshape", ["d", "flat_shape"], ["d_flat"], name="flatten_d"),
        helper.make_node("Reshape", ["d_flat", "back_shape"], ["d_back"], name="unflatten_d"),
        helper.make_node("MatMul", ["d_back", "w2"], ["e"], name="mm2"),
        helper.make_node("Add", ["e", "a"], ["f"], name="add_a"),
        helper.make_node("MatMul", ["f", "w3"], ["g"], name="mm3"),
        helper.make_node("Mul", ["g", "b"], ["h"], name="mul_b"),
        helper.make_node("Softmax", ["h"], ["y"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(nodes, "branchy",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])],
                              initializer=w)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


def compile_model(model, name, *extra):
    bundle = os.path.join(cli_test.ARGS.work, name)
    p = ingot("compile", model, "-o", bundle, "-q", *extra)
    check(p.returncode == 0, f"compile {name}: {p.stderr.strip()}")
    return bundle


def plan_json(bundle, *extra):
    p = ingot("inspect", bundle, "--plan", "--json", *extra)
    if not check(p.returncode == 0 and not p.stderr, f"inspect --plan --json {bundle}: {p.stderr}"):
        return None
    return json.loads(p.stdout)


def live_together(a, b):
    return a["first_step"] <= b["last_step"] and b["first_step"] <= a["last_step"]


def check_plan(bundle, what, want_names=()):
    plan = plan_json(bundle)
    info = json.loads(ingot("inspect", bundle, "--json").stdout)
    if plan is None:
        return None
    tensors, steps = plan["tensors"], plan["steps"]
    arena, lower = plan["arena_bytes"], plan["arena_lower_bound_bytes"]
    check(arena == info["arena_bytes"] and lower == info["arena_lower_bound_bytes"],
          f"{what}: arena {arena}/{lower} vs inspect --json {info['arena_bytes']}/"
          f"{info['arena_lower_bound_bytes']}")
    check(0 < lower <= arena, f"{what}: lower bound {lower}, arena {arena}")
    names = [t["name"] for t in tensors]
    check(len(names) == len(set(names)), f"{what}: a tensor listed twice: {names}")
    for io in info["inputs"] + info["outputs"]:
        rows = [t for t in tensors if t["name"] == io["name"]]
        if check(len(rows) == 1, f"{what}: {io['name']} is in the plan once"):
            check(rows[0]["bytes"] == 4 * int(np.prod(io["shape"])),
                  f"{what}: {io['name']} has {rows[0]['bytes']} bytes, shape {io['shape']}")
            want = "input" if io in info["inputs"] else "output"
            check(rows[0]["kind"] == want, f"{what}: {io['name']} is {rows[0]['kind']}, want {want}")
            if want == "input":
                check(rows[0]["first_step"] == 0 and rows[0]["last_step"] == len(steps) - 1,
                      f"{what}: input {io['name']} lives {rows[0]['first_step']}..{rows[0]['last_step']}")
    for n in want_names:
        check(n in names, f"{what}: {n!r} not in the plan: {names}")
    for t in tensors:
        check(t["offset"] % 64 == 0 and t["offset"] + t["bytes"] <= arena and t["bytes"] > 0,
              f"{what}: {t['name']} at {t['offset']}+{t['bytes']} outside the arena {arena} or unaligned")
        check(0 <= t["first_step"] <= t["last_step"] < len(steps),
              f"{what}: {t['name']} lives {t['first_step']}..{t['last_step']} of {len(steps)} steps")
        check(t["first_node"] == steps[t["first_step"]]["node"], f"{what}: {t['name']} first node")
    # The real check: tensors live at one step never share a byte, except an
    # alias group (a Reshape's output is its input's storage: one offset, the
    # same bytes).
    for i, a in enumerate(tensors):
        for b in tensors[i + 1:]:
            if not live_together(a, b) or (a["offset"], a["bytes"]) == (b["offset"], b["bytes"]):
                continue
            overlap = a["offset"] < b["offset"] + b["bytes"] and b["offset"] < a["offset"] + a["bytes"]
            check(not overlap, f"{what}: {a['name']} [{a['offset']}, +{a['bytes']}) steps "
                  f"{a['first_step']}..{a['last_step']} overlaps {b['name']} [{b['offset']}, +{b['bytes']}) "
                  f"steps {b['first_step']}..{b['last_step']}")
    # The lower bound is the largest sum live at one step (an alias group,
    # tensors at one offset live together, counted once at its largest).
    def at_step(s):
        groups = {}
        for t in tensors:
            if t["first_step"] <= s <= t["last_step"]:
                size = (t["bytes"] + 63) // 64 * 64
                groups[t["offset"]] = max(groups.get(t["offset"], 0), size)
        return sum(groups.values())
    peak = max(at_step(s) for s in range(len(steps)))
    check(peak == lower, f"{what}: the largest sum live at a step is {peak}, the bundle says {lower}")
    check(max(t["offset"] + t["bytes"] for t in tensors) <= arena, f"{what}: arena too small")

    # The text table: the same rows, ordered by first step (default) or offset.
    for sort, key in [(None, lambda r: (r[2], r[0])), ("offset", lambda r: (r[0], r[2]))]:
        p = ingot("inspect", bundle, "--plan", *(["--sort", sort] if sort else []))
        if not check(p.returncode == 0, f"{what}: inspect --plan --sort {sort}: {p.stderr}"):
            continue
        lines = p.stdout.splitlines()
        check(f"arena: {arena} bytes (lower bound {lower} bytes" in p.stdout, f"{what}: text arena line")
        rows = []
        for line in lines[3:]:
            f = line.split()
            first, last = map(int, f[2].split(".."))
            rows.append((int(f[0]), int(f[1]), first, last, f[3], f[4]))
        want = sorted((t["offset"], t["bytes"], t["first_step"], t["last_step"], t["kind"], t["name"])
                      for t in tensors if " " not in t["name"])
        check(sorted(rows) == want, f"{what}: text rows {rows} differ from --json {want}")
        check([key(r) for r in rows] == sorted(key(r) for r in rows), f"{what}: --sort {sort}: not in order")
    return plan


def check_svg(bundle, plan, what):
    svg = os.path.join(cli_test.ARGS.work, os.path.basename(bundle) + ".svg")
    p = ingot("inspect", bundle, "--svg", svg)
    if not check(p.returncode == 0 and not p.stdout and not p.stderr, f"{what}: --svg: {p.stdout}{p.stderr}"):
        return
    data = open(svg, "rb").read()
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        check(False, f"{what}: the SVG is not well-formed XML: {e}")
        return
    check(root.tag == SVG + "svg", f"{what}: root element {root.tag}")
    rects = [r for r in root.iter(SVG + "rect") if r.get("class") == "tensor"]
    check(len(rects) == len(plan["tensors"]), f"{what}: {len(rects)} rectangles for {len(plan['tensors'])} tensors")
    steps, arena = len(plan["steps"]), plan["arena_bytes"]
    frame = [r for r in root.iter(SVG + "rect") if r.get("class") is None and r.get("x")]
    fx, fy = float(frame[0].get("x")), float(frame[0].get("y"))
    fw, fh = float(frame[0].get("width")), float(frame[0].get("height"))
    by_name = {t["name"]: t for t in plan["tensors"]}
    for r in rects:
        title = r.find(SVG + "title").text
        name = title.split(" (")[0]
        t = by_name.get(name)
        if not check(t is not None, f"{what}: the tooltip {title!r} names no tensor"):
            continue
        check(f"{t['bytes']} bytes" in title and f"offset {t['offset']}" in title, f"{what}: tooltip {title!r}")
        x, y, w = float(r.get("x")), float(r.get("y")), float(r.get("width"))
        check(abs(x - (fx + fw * t["first_step"] / steps)) < 0.02 and
              abs(w - fw * (t["last_step"] - t["first_step"] + 1) / steps) < 0.02 and
              abs(y - (fy + fh * t["offset"] / arena)) < 0.02 and
              fx <= x and x + w <= fx + fw + 0.02 and fy <= y <= fy + fh,
              f"{what}: {name}'s rectangle x={x} y={y} w={w} is not where its steps and offset put it")
    texts = " ".join(t.text or "" for t in root.iter(SVG + "text"))
    check("step" in texts and "arena offset" in texts and "lower bound" in texts, f"{what}: axis labels: {texts}")
    again = svg + ".again"
    ingot("inspect", bundle, "--svg", again)
    check(open(again, "rb").read() == data, f"{what}: a second --svg differs (not deterministic)")
    return svg


def case_plan():
    digits = compile_model(cli_test.ARGS.model, "digits.ingot", "--input-shape", "input=1x1x8x8")
    plan = check_plan(digits, "digits")
    if plan:
        check_svg(digits, plan, "digits")
    model = os.path.join(cli_test.ARGS.work, "branchy.onnx")
    branchy_model(model)
    for target in ["llvm", "c"]:
        bundle = compile_model(model, f"branchy_{target}.ingot", "--target", target)
        plan = check_plan(bundle, f"branchy {target}", want_names=[ODD_NAME])
        if plan:
            check(len(plan["steps"]) >= 5, f"branchy {target}: {len(plan['steps'])} steps")
            check(all(s["kernel"] for s in plan["steps"]), f"branchy {target}: a step without its kernel")
            check_svg(bundle, plan, f"branchy {target}")

    # Bad paths and values.
    work = cli_test.ARGS.work
    missing = os.path.join(work, "no_such_folder", "plan.svg")
    expect_error(ingot("inspect", digits, "--svg", missing), "--svg into a missing folder", 1, ["no_such_folder"])
    check(not os.path.exists(os.path.dirname(missing)), "--svg made the missing folder")
    folder = os.path.join(work, "a_folder")
    os.makedirs(folder)
    expect_error(ingot("inspect", digits, "--svg", folder), "--svg onto a folder", 1, ["a_folder"])
    check(os.listdir(folder) == [], f"--svg onto a folder left {os.listdir(folder)}")
    check(not [f for f in os.listdir(work) if f.startswith("a_folder") and f != "a_folder"],
          f"--svg onto a folder left a temporary file: {os.listdir(work)}")
    expect_error(ingot("inspect", digits, "--svg="), "--svg with no FILE", 2, ["--svg"])
    expect_error(ingot("inspect", digits, "--plan", "--sort", "size"), "--sort size", 2, ["--sort"])
    expect_error(ingot("inspect", digits, "--sort", "offset"), "--sort without --plan", 2, ["--plan"])
    expect_error(ingot("inspect", digits, "--plan", "--extract-code", "x", "-o", os.path.join(work, "x")),
                 "--plan with --extract-code", 2)
    out = os.path.join(work, "from_missing.svg")
    expect_error(ingot("inspect", os.path.join(work, "missing.ingot"), "--svg", out), "--svg of a missing bundle", 1)
    check(not os.path.exists(out), "--svg of a missing bundle left a file")
    corrupt = os.path.join(work, "corrupt.ingot")
    data = bytearray(open(digits, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(corrupt, "wb").write(bytes(data))
    expect_error(ingot("inspect", corrupt, "--plan"), "--plan of a corrupt bundle", 1)
    p = ingot("inspect", "--help")
    check("--plan" in p.stdout and "--svg FILE" in p.stdout and "--sort" in p.stdout, "inspect --help: --plan, --svg")


STAGES = ["import", "passes", "lower", "schedule", "codegen", "package", "write", "total"]


def case_verbose():
    work = cli_test.ARGS.work
    shape = ["--input-shape", "input=1x1x8x8"]
    quiet = compile_model(cli_test.ARGS.model, "quiet.ingot", *shape)
    bundle = os.path.join(work, "verbose.ingot")
    p = ingot("compile", cli_test.ARGS.model, "-o", bundle, "-v", *shape)
    if not check(p.returncode == 0, f"compile -v: {p.stderr}"):
        return
    check("compiled " in p.stdout, "compile -v keeps the summary on stdout")
    check("stage times" not in p.stdout, "compile -v: the stage times went to stdout")
    lines = p.stderr.splitlines()
    for stage in STAGES:
        rows = [line.split() for line in lines if line.split()[:1] == [stage]]
        if check(len(rows) == 1, f"compile -v: stage {stage!r} is not one line of stderr: {p.stderr!r}"):
            check(rows[0][2] == "s" and float(rows[0][1]) >= 0, f"compile -v: {stage} has no time: {rows[0]}")
    total = float([line.split() for line in lines if line.split()[:1] == ["total"]][0][1])
    parts = sum(float(line.split()[1]) for line in lines if line.split()[:1] and line.split()[0] in STAGES[:-1])
    check(abs(total - parts) < 1e-3, f"compile -v: total {total} is not the sum {parts}")
    check(open(bundle, "rb").read() == open(quiet, "rb").read(), "compile -v made another bundle")
    # No progress lines for a short compile by default, nor without -v.
    check(not [line for line in lines if line.startswith("ingot: [")], f"compile -v: progress on a short compile: {lines}")
    env = dict(os.environ, INGOT_PROGRESS_AFTER_MS="0")
    p = subprocess.run([cli_test.ARGS.ingot, "compile", cli_test.ARGS.model, *shape, "-o", bundle], env=env,
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0 and not p.stderr, f"compile without -v and without a terminal printed {p.stderr!r}")
    p = subprocess.run([cli_test.ARGS.ingot, "compile", cli_test.ARGS.model, *shape, "-o", bundle, "-v", "--target", "c",
                        "--target", "llvm"], env=env, capture_output=True, text=True, timeout=300)
    progress = [line for line in p.stderr.splitlines() if line.startswith("ingot: [")]
    seen = [line.split("] ")[1].split(":")[0].split(" (")[0] for line in progress]
    check(p.returncode == 0 and seen[:1] == ["import"] and seen[-1:] == ["package"] and
          set(seen) == set(STAGES[:-2]), f"compile -v progress: stages {seen}: {p.stderr!r}")
    check("\r" not in p.stderr and "\033" not in p.stderr, "compile -v progress redraws without a terminal")
    check(any("codegen: target 0/2 (c)" in line for line in progress) and
          any("schedule: kernel 0/8 (c)" in line for line in progress),
          f"compile -v: codegen of 2 targets, scheduling of 2 x 4 kernels: {progress}")
    # On a terminal: one line redrawn in place, cleared at the end.
    master, slave = pty.openpty()
    proc = subprocess.Popen([cli_test.ARGS.ingot, "compile", cli_test.ARGS.model, *shape, "-o", bundle], env=env,
                            stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    proc.wait(timeout=300)
    os.close(master)
    text = got.decode(errors="replace")
    check(proc.returncode == 0 and text.startswith("\ringot: [") and "\n" not in text.replace("\r\n", "\n").strip("\n")
          and text.endswith("\r\033[K"), f"compile on a terminal: progress {text!r}")
    p = ingot("compile", "--help")
    check(all(s in p.stdout for s in STAGES[:-1]) and "INGOT_PROGRESS_AFTER_MS" in p.stdout, "compile --help: -v")


def case_trace():
    work = cli_test.ARGS.work
    bundle = compile_model(cli_test.ARGS.model, "digits.ingot", "--input-shape", "input=1x1x8x8")
    plan = plan_json(bundle)
    x = os.path.join(work, "x.npy")
    np.save(x, np.zeros((1, 1, 8, 8), np.float32))
    for runs, extra in [(1, []), (3, ["--bench", "3", "--profile"]), (2, ["--bench", "2"])]:
        trace = os.path.join(work, f"trace_{runs}.json")
        p = ingot("run", bundle, "--input", f"input={x}", "--trace", trace, *extra)
        what = f"run --trace {' '.join(extra)}"
        if not check(p.returncode == 0 and not p.stderr, f"{what}: {p.stderr}"):
            continue
        check(("profile:" in p.stdout) == ("--profile" in extra), f"{what}: the profile table")
        try:
            events = json.load(open(trace))
        except (OSError, ValueError) as e:
            check(False, f"{what}: the trace does not parse: {e}")
            continue
        check(isinstance(events, list), f"{what}: not a JSON array")
        x_events = [e for e in events if e.get("ph") == "X"]
        run_events = [e for e in x_events if e["cat"] == "run"]
        step_events = [e for e in x_events if e["cat"] != "run"]
        check(len(run_events) == runs and len(step_events) == runs * len(plan["steps"]),
              f"{what}: {len(run_events)} runs and {len(step_events)} steps, want {runs} x {len(plan['steps'])}")
        for e in x_events:
            check(isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] >= 0
                  and e["ts"] >= 0 and e["pid"] == 1 and e["tid"] == 1, f"{what}: event {e}")
        for r, run in enumerate(run_events):
            check(run["args"]["run"] == r and run["name"] == f"run {r}", f"{what}: run event {run}")
            mine = [e for e in step_events if e["args"]["run"] == r]
            for i, (e, s) in enumerate(zip(mine, plan["steps"])):
                check(e["name"] == s["node"] and e["cat"] == s["kernel"] and e["args"]["step"] == i,
                      f"{what}: step {i} event {e}, the bundle's step is {s}")
            at = run["ts"]
            for e in mine:
                check(abs(e["ts"] - at) < 1e-2, f"{what}: step {e['args']['step']} at {e['ts']}, want {at}")
                at = e["ts"] + e["dur"]
            check(at <= run["ts"] + run["dur"] + 1e-2, f"{what}: the steps of run {r} end after it")
            if r:
                prev = run_events[r - 1]
                check(run["ts"] >= prev["ts"] + prev["dur"] - 1e-2, f"{what}: run {r} starts inside run {r - 1}")
    bad = os.path.join(work, "no_such_folder", "t.json")
    expect_error(ingot("run", bundle, "--input", f"input={x}", "--trace", bad, "--bench", "2"),
                 "--trace into a missing folder", 1, ["no_such_folder"])
    p = ingot("run", bundle, "--input", f"input={x}", "--trace", bad)
    check(not p.stdout, f"--trace into a missing folder ran first: {p.stdout!r}")
    check(not os.path.exists(os.path.dirname(bad)), "--trace made a folder")
    expect_error(ingot("run", bundle, "--trace="), "--trace with no FILE", 2, ["--trace"])
    p = ingot("run", "--help")
    check("--trace FILE.json" in p.stdout and "back to back" in p.stdout, "run --help: --trace")


CASES = {"plan": case_plan, "verbose": case_verbose, "trace": case_trace}

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    cli_test.ARGS = args
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    CASES[args.case]()
    print(f"observe_test {args.case}: {len(cli_test.failures)} failure(s)")
    sys.exit(1 if cli_test.failures else 0)
