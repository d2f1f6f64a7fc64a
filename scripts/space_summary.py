#!/usr/bin/env python3
"""Summarises an `ingot compile --dump-space FILE.json` listing: per template
and per op class (the template name's first word), the number of unique
kernels (workloads) and the size of the space (the sum over kernels of the
product of the lengths of the knob value lists).

  ingot compile model.onnx -o m.ingot --dump-space space.json
  python scripts/space_summary.py space.json
"""
import json
import math
import sys
from collections import defaultdict


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        objects = json.load(f)
    kernels = defaultdict(set)
    size = defaultdict(float)
    targets = set()
    for o in objects:
        points = math.prod(len(v) for v in o["space"].values())
        for key in (o["template"], o["template"].split(".")[0] + " (class)"):
            kernels[key].add((o["target"], o["workload"]))
            size[key] += points
        targets.add(o["target"])
    unique = {(o["target"], o["workload"]) for o in objects}
    print(f"{len(unique)} unique kernels on {', '.join(sorted(targets))}")
    print("| template or class | kernels | space size |")
    print("|---|---|---|")
    for key in sorted(kernels):
        print(f"| {key} | {len(kernels[key])} | {size[key]:.3g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
