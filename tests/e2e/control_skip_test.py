#!/usr/bin/env python3
"""The runtime skips the steps of the branch an If does not take: compiles
an If on an input left to run time (models/make_control_cases.py,
if_branch.onnx), runs it profiled with the condition true and false, and
checks in the trace (`ingot run --trace`) that every step of the branch not
taken took no time at all (it was skipped) and every step of the taken one
ran.

  control_skip_test.py --ingot BUILD/ingot --models DIR --work DIR
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    bundle = os.path.join(a.work, "if_branch.ingot")
    subprocess.run([a.ingot, "compile", os.path.join(a.models, "if_branch.onnx"), "-o", bundle], check=True,
                   stdout=subprocess.DEVNULL)
    x = os.path.join(a.work, "x.npy")
    np.save(x, np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5)
    failures = 0
    for value, taken, dropped in (("true", "If_0/then/", "If_0/else/"), ("false", "If_0/else/", "If_0/then/")):
        trace = os.path.join(a.work, f"trace_{value}.json")
        subprocess.run([a.ingot, "run", bundle, "--input", f"x={x}", "--input",
                        f"fast={os.path.join(a.models, f'if_{value}.npy')}", "--bench", "3", "--profile",
                        "--trace", trace], check=True, stdout=subprocess.DEVNULL)
        with open(trace) as f:
            steps = [e for e in json.load(f) if e.get("ph") == "X" and "step" in e.get("args", {})]
        ran = [e["name"] for e in steps if e["name"].startswith(taken)]
        skipped = [e["name"] for e in steps if e["name"].startswith(dropped)]
        if not ran or not skipped:
            print(f"FAIL: fast={value}: no steps of one branch in the trace ({sorted({e['name'] for e in steps})})")
            failures += 1
            continue
        slow = sorted({e["name"] for e in steps if e["name"].startswith(dropped) and e["dur"] != 0})
        idle = sorted({e["name"] for e in steps if e["name"].startswith(taken) and e["dur"] == 0})
        if slow:
            print(f"FAIL: fast={value}: steps of the branch not taken ran: {slow}")
            failures += 1
        if idle:
            print(f"FAIL: fast={value}: steps of the taken branch did not run: {idle}")
            failures += 1
        if not slow and not idle:
            print(f"ok: fast={value}: {len(set(ran))} steps ran, {len(set(skipped))} skipped")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
