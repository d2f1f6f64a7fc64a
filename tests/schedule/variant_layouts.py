#!/usr/bin/env python3
"""Two variants of one bundle that pack their weights differently.

  variant_layouts.py --ingot BUILD/ingot --work DIR

On models/make_packed_cases.py (convs, a MatMul and Gemms with packable
weights), a tuning log gives targets x86-64-v3 and x86-64-v4 different
layout knobs for every packable kernel: v3 packs in panels of the smallest
width its space allows, v4 in the widest, and v4 leaves the MatMul's weight
unpacked. The test checks that
  - the compile takes each target's knobs (--dump-schedule),
  - `ingot inspect --json` shows two WEIGHTS sections, one per variant, each
    the size of the weights of a bundle compiled for that target alone,
  - the two-target bundle (the runtime loads the best variant this machine
    runs) and each one-target bundle match ONNX Runtime (the runtime has no
    switch to force a variant; a bundle of one target runs that layout),
  - without the log both variants share one WEIGHTS section;
  - a bundle whose lead target is not the one loaded here (x86-64-v2 first,
    x86-64-v3 second, when this CPU runs v3) runs the second variant's
    own weights correctly;
  - one weight read by two MatMuls that one target packs for one MatMul
    only and the other target leaves shared (one tensor per pairing of
    values) still matches, in both target orders.
Exit 0 when all hold.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from space_points import compare, parse_schedules, run  # noqa: E402

MODELS = os.path.join(HERE, "..", "..", "models")
TARGETS = ("x86-64-v3", "x86-64-v4")
INPUTS = {"x": (1, 24, 8, 8), "skip": (1, 40, 8, 8), "a": (2, 5, 37), "g": (3, 50), "h": (4, 37)}


def layout_log(space, path):
    """Records with different pack/panel per target; returns {(workload, target): knobs}."""
    want, records, seen = {}, [], set()
    for obj in space:
        key = (obj["workload"], obj["target"])
        if key in seen or "panel" not in obj["space"]:
            continue  # the first template listed is the class's default
        seen.add(key)
        knobs = dict(obj["knobs"])
        panels = obj["space"]["panel"]
        if obj["target"].split()[-1] == TARGETS[0]:  # "llvm x86-64-v3"
            knobs.update(pack=1, panel=min(panels))
        else:
            knobs.update(pack=1, panel=max(panels))
            if obj["workload"].startswith("matmul"):
                knobs["pack"] = 0
        records.append({"version": obj["log_version"], "workload": obj["workload"], "target": obj["target"],
                        "template": obj["template"], "knobs": knobs, "time_ms": 1.0})
        want[key] = (obj["template"], knobs)
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    return want


def shared_weight_model(path):
    """Two MatMuls of different row counts reading one weight [37, 64]."""
    from onnx import TensorProto, helper, numpy_helper, save

    w = np.random.default_rng(5).standard_normal((37, 64)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "w"], ["y1"], name="mm_a"),
         helper.make_node("MatMul", ["b", "w"], ["y2"], name="mm_b")], "shared_weight",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 37]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [6, 37])],
        [helper.make_tensor_value_info("y1", TensorProto.FLOAT, [4, 64]),
         helper.make_tensor_value_info("y2", TensorProto.FLOAT, [6, 64])],
        [numpy_helper.from_array(w, "w")])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def inspect(ingot, bundle):
    p, _ = run([ingot, "inspect", bundle, "--json"], "ingot inspect --json")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    args = ap.parse_args()
    import onnxruntime as ort

    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "packed_cases.onnx")
    run([sys.executable, os.path.join(MODELS, "make_packed_cases.py"), "--out", args.work], "make_packed_cases.py")
    rng = np.random.default_rng(3)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in INPUTS.items()}
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    ref = sess.run(None, feeds)
    outputs = [o.name for o in sess.get_outputs()]
    input_flags = []
    for n, a in feeds.items():
        path = os.path.join(args.work, f"input_{n}.npy")
        np.save(path, a)
        input_flags += ["--input", f"{n}={path}"]
    target_flags = [f for t in TARGETS for f in ("--target", t)]
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(f"{'ok' if ok else 'FAIL'}: {what}")
        failures += not ok

    def run_and_compare(bundle, what):
        out = bundle + ".npz"
        run([args.ingot, "run", bundle, *input_flags, "--output", out], f"ingot run {bundle}")
        check(compare(what, outputs, out, ref, args.rtol, args.atol), f"{what} matches onnxruntime")

    space_path = os.path.join(args.work, "space.json")
    shared = os.path.join(args.work, "shared.ingot")
    run([args.ingot, "compile", model, "-o", shared, "-q", "--dump-space", space_path, *target_flags],
        "ingot compile --dump-space")
    info = inspect(args.ingot, shared)
    check(len({v["weights_section"] for v in info["variants"]}) == 1,
          "without a log both variants share one weights section")

    with open(space_path) as f:
        space = json.load(f)
    log = os.path.join(args.work, "layouts.jsonl")
    want = layout_log(space, log)
    check(len(want) >= 2 * 6, f"{len(want) // 2} packable kernels per target in the log")

    bundle = os.path.join(args.work, "two.ingot")
    p, _ = run([args.ingot, "compile", model, "-o", bundle, "--tuning-log", log, "--dump-schedule", *target_flags],
               "ingot compile --tuning-log (two targets)")
    got = parse_schedules(p.stdout)
    check(all(got.get(k) == v for k, v in want.items()), "each target took its own layout knobs")
    info = inspect(args.ingot, bundle)
    sections = {v["weights_section"] for v in info["variants"]}
    check(len(info["variants"]) == 2 and len(sections) == 2, f"two variants, two weights sections ({sections})")
    run_and_compare(bundle, f"two-target bundle (loaded {info['loaded_target']})")

    loaded = info["loaded_target"].split()[-1]
    runnable = TARGETS if loaded == TARGETS[1] else TARGETS[:1] if loaded == TARGETS[0] else ()

    for target in TARGETS:
        alone = os.path.join(args.work, f"{target}.ingot")
        run([args.ingot, "compile", model, "-o", alone, "-q", "--tuning-log", log, "--target", target],
            f"ingot compile --target {target}")
        one = inspect(args.ingot, alone)
        mine = [v for v in info["variants"] if v["target"] == one["variants"][0]["target"]]
        check(len(mine) == 1 and mine[0]["weights_bytes"] == one["variants"][0]["weights_bytes"],
              f"{target}: its variant's weights ({mine[0]['weights_bytes'] if mine else None} bytes) are those of a "
              f"bundle for {target} alone ({one['variants'][0]['weights_bytes']} bytes)")
        if target in runnable:
            run_and_compare(alone, f"{target} alone")

    if TARGETS[0] in runnable:
        second = os.path.join(args.work, "v2_v3.ingot")
        run([args.ingot, "compile", model, "-o", second, "-q", "--tuning-log", log, "--target", "x86-64-v2",
             "--target", TARGETS[0]], "ingot compile (v2 leads, v3 second)")
        two = inspect(args.ingot, second)
        check(two["loaded_target"].endswith(TARGETS[0]) and len({v["weights_section"] for v in two["variants"]}) == 2,
              f"v2 + v3 bundle: two weights sections, loads {two['loaded_target']}")
        run_and_compare(second, "v2 + v3 bundle (second variant's own weights)")

    # One weight, two readers: v4 packs it for mm_a only, v3 never.
    sw = os.path.join(args.work, "shared_weight.onnx")
    shared_weight_model(sw)
    sw_feeds = {"a": rng.standard_normal((4, 37)).astype(np.float32),
                "b": rng.standard_normal((6, 37)).astype(np.float32)}
    sw_ref = ort.InferenceSession(sw, providers=["CPUExecutionProvider"]).run(None, sw_feeds)
    sw_flags = []
    for n, a in sw_feeds.items():
        np.save(os.path.join(args.work, f"sw_{n}.npy"), a)
        sw_flags += ["--input", f"{n}={os.path.join(args.work, f'sw_{n}.npy')}"]
    sw_space = os.path.join(args.work, "sw_space.json")
    run([args.ingot, "compile", sw, "-o", os.path.join(args.work, "sw0.ingot"), "-q", "--dump-space", sw_space,
         *target_flags], "ingot compile --dump-space (shared weight)")
    with open(sw_space) as f:
        objs = json.load(f)
    sw_log = os.path.join(args.work, "sw.jsonl")
    with open(sw_log, "w") as f:
        seen = set()
        for obj in objs:
            key = (obj["workload"], obj["target"])
            if key in seen or "pack" not in obj["space"]:
                continue
            seen.add(key)
            knobs = dict(obj["knobs"], pack=0)
            if obj["target"].endswith(TARGETS[1]) and "m4" in obj["workload"].split():
                knobs.update(pack=1, panel=16)
            f.write(json.dumps({"version": obj["log_version"], "workload": obj["workload"], "target": obj["target"],
                                "template": obj["template"], "knobs": knobs, "time_ms": 1.0}) + "\n")
    check(len(seen) == 4, f"shared weight: {len(seen)} kernel records (2 MatMuls x 2 targets)")
    for order in (TARGETS, TARGETS[::-1]):
        b = os.path.join(args.work, f"sw_{order[0]}_first.ingot")
        run([args.ingot, "compile", sw, "-o", b, "-q", "--tuning-log", sw_log, *[f for t in order for f in ("--target", t)]],
            f"ingot compile shared weight ({order[0]} first)")
        bi = inspect(args.ingot, b)
        check(len({v["weights_section"] for v in bi["variants"]}) == 2, f"shared weight, {order[0]} first: two weights sections")
        out = b + ".npz"
        run([args.ingot, "run", b, *sw_flags, "--output", out], f"ingot run {b}")
        check(compare(f"shared weight, {order[0]} first", ["y1", "y2"], out, sw_ref, args.rtol, args.atol),
              f"shared weight, {order[0]} first (loaded {bi['loaded_target']}) matches onnxruntime")

    if failures:
        print(f"{failures} failure(s)")
        return 1
    print("per-variant weight layouts: all checks hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
