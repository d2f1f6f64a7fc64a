#!/usr/bin/env python3
"""Which steps of models/make_blocked_cases.py's model run in the blocked
activation layout (ingot_graph_block_activations), per --layout, and which
elementwise chains became one kernel (ingot_graph_fuse_elementwise): the
kernels of `ingot inspect --plan --json`, counted by kind. The numbers themselves are
compared with ONNX Runtime by the e2e_blocked_* tests.

  blocked_layout_test.py --ingot BUILD/ingot --model blocked_cases.onnx --work DIR
"""
import argparse
import collections
import json
import os
import subprocess
import sys

FAILURES = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        FAILURES.append(what)


def kinds(ingot, model, work, layout):
    bundle = os.path.join(work, f"blocked_{layout}.ingot")
    p = subprocess.run([ingot, "compile", model, "-o", bundle, "--target", "llvm", "--layout", layout, "-q"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        check(False, f"compile --layout {layout}: {p.stderr.strip()}")
        return collections.Counter(), {}
    p = subprocess.run([ingot, "inspect", bundle, "--plan", "--json"], capture_output=True, text=True, check=True)
    steps = json.loads(p.stdout)["steps"]
    by_node = {s["node"]: s["kernel"].split("_")[0] for s in steps}
    return collections.Counter(by_node.values()), by_node


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)

    c, nodes = kinds(a.ingot, a.model, a.work, "nchw16c")
    # stem (NCHW in), dw, c24, c, body (+ residual), head, the SE conv and
    # up: blocked; the depthwise conv on the 3-channel image is not (a
    # depthwise conv needs a blocked input).
    check(c["convblocked"] == 8 and c["conv"] == 1, f"nchw16c: 8 blocked convs and 1 NCHW conv: {dict(c)}")
    # The lane-wise ops of the SE block and the HardSwish, the constants per
    # channel, the global pool and the Resize stay in the region: the edges
    # are b (ReduceMean), c24 (the 24+24-channel Concat, NCHW with blocks of
    # 16) and the graph outputs head and up.
    edges = sorted(n for n in nodes if "_from_" in n)
    check(edges == ["b_from_nchw16c", "c24_from_nchw16c", "head_from_nchw16c", "up_from_nchw16c"],
          f"nchw16c: the edges are b, c24, head and up: {edges}")
    check(nodes.get("up_x_node") == "resize" and nodes.get("se_pool_node") == "averagepool",
          f"nchw16c: Resize and the SE pool run blocked: {nodes}")
    # ingot_graph_fuse_elementwise: the spelled-out HardSwish (Add, Clip,
    # Mul, Div) and the Mul and Add of constants per channel after it are one
    # loop; h2 (read twice) and the SE gate (another shape) stay apart.
    check(nodes.get("pc_node_fused6") == "fusedelementwise" and
          not any(n.startswith("hs") for n in nodes) and "h2_node" in nodes,
          f"nchw16c: the six lane-wise steps after h2 are one fused kernel: {sorted(nodes)}")

    c, nodes = kinds(a.ingot, a.model, a.work, "nchw8c")
    # With blocks of 8 the 24-channel parts concatenate blocked: c24 is no
    # edge, the pooled concatenation (a graph output) is.
    edges = sorted(n for n in nodes if "_from_" in n)
    check(c["convblocked"] == 8 and edges == ["b_from_nchw8c", "cc_from_nchw8c", "head_from_nchw8c", "up_from_nchw8c"],
          f"nchw8c: the Concat of c24 and c24 stays blocked: {edges}")

    c, nodes = kinds(a.ingot, a.model, a.work, "nchw")
    check(c["convblocked"] == 0 and c["fromblocked"] == 0 and c["conv"] == 9, f"nchw: no blocked step: {dict(c)}")
    check(nodes.get("pc_node_fused6") == "fusedelementwise", f"nchw: the same chain fused: {sorted(nodes)}")
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
