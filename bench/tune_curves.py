#!/usr/bin/env python3
"""Best estimated latency against trials, from `ingot tune --curve FILE.csv`.

  python bench/tune_curves.py LABEL=CURVE.csv[,MORE.csv] ... [--at 100 200 400]

Each CSV has rows trials,elapsed_s,default_ms,best_ms (one per round; a run
resumed from its log writes a second file: list both, in order). For each
label it prints the estimated speed-up over the defaults (sum over steps of
default kernel time / best kernel time) at the given trial counts, the final
one, and the trials at which 90 % of the final speed-up was reached (the
speed-up minus 1, compared with 90 % of the final speed-up minus 1).
"""
import argparse
import csv


def load(paths):
    rows = []
    for p in paths.split(","):
        with open(p) as f:
            for r in csv.DictReader(f):
                rows.append((int(r["trials"]), float(r["elapsed_s"]), float(r["default_ms"]), float(r["best_ms"])))
    rows.sort()
    return rows


def speedup(row):
    return row[2] / row[3] if row[3] > 0 else 1.0


def at(rows, trials):
    best = None
    for r in rows:
        if r[0] <= trials:
            best = r
    return speedup(best) if best else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("curves", nargs="+", metavar="LABEL=CSV[,CSV]")
    ap.add_argument("--at", nargs="+", type=int, default=[100, 200, 300, 400, 600, 800, 1000])
    args = ap.parse_args()
    print("| run | " + " | ".join(f"{t} trials" for t in args.at) + " | final | trials to 90 % |")
    print("|---|" + "---|" * (len(args.at) + 2))
    for spec in args.curves:
        label, paths = spec.split("=", 1)
        rows = load(paths)
        if not rows:
            print(f"| {label} | no rows |")
            continue
        final = speedup(rows[-1])
        reach = next((r[0] for r in rows if speedup(r) - 1 >= 0.9 * (final - 1)), rows[-1][0])
        cells = []
        for t in args.at:
            v = at(rows, t) if t <= rows[-1][0] else None
            cells.append(f"{v:.3f}x" if v is not None else "-")
        print(f"| {label} | " + " | ".join(cells) + f" | {final:.3f}x at {rows[-1][0]} | {reach} |")


if __name__ == "__main__":
    main()
