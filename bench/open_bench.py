#!/usr/bin/env python3
"""Open time and peak memory: Ingot bundles against ONNX Runtime sessions.

  open_bench.py --ingot build/ingot --probe build/ingot_open_bench \\
                --models-dir build/models [--repeat 5] [--work DIR] [--quick]

For each model (ResNet-50 and BERT-base from --models-dir; --quick: the
repository's small digits model only, one repeat, for the test suite) it
compiles two bundles, one with the default weights storage (`--weights
auto`: raw and memory-mapped where zstd saves little) and one with
`--weights zstd` (every weight section compressed: how bundles were stored
before), then measures, each in a fresh process, with the files in the page
cache (one untimed round first):

  ingot  ingot_open_bench: ingot_bundle_open_file + ingot_session_create,
         then one run (bench/open_bench.c);
  ort    onnxruntime.InferenceSession(model) with the CPU provider and its
         default options, then one run.

Columns: open = wall time until the first run can start (median of
--repeat); peak = VmHWM once open, steady = VmRSS after one run, both
minus the process's RSS before the open (the interpreter and onnxruntime's
import for ORT, the tiny probe for Ingot), in MB (10^6 bytes). Nothing is
asserted: the table is the result.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ORT_PROBE = r"""
import json, sys, time
import numpy as np
import onnxruntime as ort

def vm():
    out = {}
    for line in open("/proc/self/status"):
        k, _, v = line.partition(":")
        if k in ("VmHWM", "VmRSS"):
            out[k] = int(v.split()[0])
    return out

path, shapes = sys.argv[1], json.loads(sys.argv[2])
base = vm()["VmRSS"]
t0 = time.perf_counter()
so = ort.SessionOptions()
so.intra_op_num_threads = 1
sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
t1 = time.perf_counter()
opened = vm()
feeds = {}
types = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32}
for i in sess.get_inputs():
    shape = shapes.get(i.name) or [d if isinstance(d, int) else 1 for d in i.shape]
    feeds[i.name] = np.zeros(shape, dtype=types.get(i.type, np.float32))
sess.run(None, feeds)
end = vm()
print(json.dumps({"open_s": t1 - t0, "rss_base": base, "hwm_open": opened["VmHWM"],
                  "rss_steady": end["VmRSS"], "hwm_end": end["VmHWM"]}))
"""

MODELS = [
    ("ResNet-50", "resnet50.onnx", {}),
    ("BERT-base", "bert_base.onnx", {"input_ids": [1, 128], "attention_mask": [1, 128], "token_type_ids": [1, 128]}),
]


def run_json(argv):
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def measure(argv, repeat):
    run_json(argv)  # warm the page cache
    rows = [run_json(argv) for _ in range(repeat)]
    open_s = statistics.median(r["open_s"] + r.get("session_s", 0.0) for r in rows)
    last = rows[-1]
    mb = lambda kib: kib * 1024 / 1e6  # noqa: E731
    return {"open_s": open_s, "peak": mb(last["hwm_open"] - last["rss_base"]),
            "steady": mb(last["rss_steady"] - last["rss_base"]), "in_place": last.get("in_place")}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ingot", required=True)
    p.add_argument("--probe", required=True, help="ingot_open_bench (bench/open_bench.c)")
    p.add_argument("--models-dir", default="build/models")
    p.add_argument("--work", default="/tmp/ingot_open_bench")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    models = MODELS
    if a.quick:
        models = [("digits", os.path.join(root, "models", "digits", "model.onnx"), {"input": [1, 1, 8, 8]})]
        a.repeat = 1
    rows = []
    for name, file, shapes in models:
        onnx_path = file if os.path.isabs(file) else os.path.join(a.models_dir, file)
        shape_args = [x for k, v in shapes.items() for x in ("--input-shape", f"{k}={'x'.join(map(str, v))}")]
        sizes = {"onnx": os.path.getsize(onnx_path)}
        for mode in ("auto", "zstd"):
            out = os.path.join(a.work, f"{name}_{mode}.ingot")
            subprocess.run([a.ingot, "compile", onnx_path, "-o", out, "-q", "--weights", mode, *shape_args],
                           check=True)
            sizes[mode] = os.path.getsize(out)
            r = measure([a.probe, out], a.repeat)
            rows.append((name, f"ingot, --weights {mode}", sizes[mode], r))
        r = measure([sys.executable, "-c", ORT_PROBE, onnx_path, json.dumps(shapes)], a.repeat)
        rows.append((name, "onnxruntime " + ort_version(), sizes["onnx"], r))
    print(f"CPU: {cpu_name()}; {os.cpu_count()} CPUs; median of {a.repeat}, files in the page cache")
    print("| model | runtime | file MB | open s | peak while opening MB | steady MB | peak / steady | weights in place |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for name, what, size, r in rows:
        ratio = r["peak"] / r["steady"] if r["steady"] > 0 else float("nan")
        place = "" if r["in_place"] is None else ("yes" if r["in_place"] else "no (decoded copy)")
        print(f"| {name} | {what} | {size / 1e6:.1f} | {r['open_s']:.3f} | {r['peak']:.0f} | {r['steady']:.0f} "
              f"| {ratio:.2f} | {place} |")
    return 0


def ort_version():
    try:
        import onnxruntime
        return onnxruntime.__version__
    except ImportError:
        return "?"


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    sys.exit(main())
