#!/usr/bin/env python3
"""Tests on the real pretrained models that models/fetch_models.py fetches.

  real_model.py compare NAME --ingot BUILD/ingot [compare.py options...]
      fetches model NAME (det, cls, vad) into the cache if needed, then runs
      tests/e2e/compare.py on it (Ingot against ONNX Runtime) with the
      remaining options.

  real_model.py det-text --ingot BUILD/ingot [--work DIR] [--backend ingot|ort]
      renders an image with lines of text (a built-in 5x7 bitmap font, no
      image library), preprocesses it as RapidOCR does ((x/255 - 0.5)/0.5,
      HWC -> NCHW), runs the PP-OCR detector on it (compiled with Ingot, or
      ONNX Runtime with --backend ort to check the test itself), thresholds
      the probability map at 0.3 as RapidOCR does, finds 4-connected regions
      and checks that every rendered line is found: the bounding box of a
      region, grown by RapidOCR's unclip distance (area * 1.6 / perimeter),
      overlaps the line's box with IoU > 0.5; and that no region of more than
      MAX_SPURIOUS pixels lies away from the text. With the ingot backend the
      map is also compared with ONNX Runtime's (rtol 1e-3, atol 1e-4).

Exit 0 pass, 1 fail, 77 skipped (the model could not be downloaded).
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, HERE)
import fetch_models  # noqa: E402
from font5x7 import render_line  # noqa: E402

SKIP = 77
THRESH = 0.3          # RapidOCR's DBPostProcess thresh
UNCLIP_RATIO = 1.6    # RapidOCR's unclip_ratio
MIN_REGION = 30       # regions smaller than this (pixels) are noise, as min_size is for boxes
MAX_SPURIOUS = 200    # a region this large away from every line fails the test

# (text, top, left, scale): three lines of different sizes on a 320 x 640 page.
LINES = [
    ("INGOT RUNS PP-OCR", 40, 40, 4),
    ("HELLO WORLD 2026", 140, 60, 3),
    ("TEXT DETECTION TEST", 230, 30, 5),
]
HEIGHT, WIDTH = 320, 640


def fetch(name, python):
    try:
        return fetch_models.ensure([name], python=python)[name]
    except fetch_models.Unavailable as e:
        print(f"SKIP: model '{name}' unavailable: {e}")
        sys.exit(SKIP)
    except fetch_models.Broken as e:
        print(f"FAIL: model '{name}': {e}")
        sys.exit(1)


def render():
    """uint8 HWC BGR image (dark text on a light page) and each line's box (y0, x0, y1, x1)."""
    ink = np.zeros((HEIGHT, WIDTH), dtype=bool)
    boxes = []
    for text, top, left, scale in LINES:
        m = render_line(text, scale)
        h, w = m.shape
        if top + h > HEIGHT or left + w > WIDTH:
            raise SystemExit(f"line {text!r} does not fit the page")
        ink[top:top + h, left:left + w] |= m
        ys, xs = np.nonzero(m)
        boxes.append((int(top + ys.min()), int(left + xs.min()), int(top + ys.max()) + 1,
                      int(left + xs.max()) + 1))
    gray = np.where(ink, 30.0, 235.0)
    # soften the edges a little (3x3 box blur), as rendered text is antialiased
    p = np.pad(gray, 1, mode="edge")
    gray = sum(p[dy:dy + HEIGHT, dx:dx + WIDTH] for dy in range(3) for dx in range(3)) / 9.0
    img = np.repeat(gray[:, :, None], 3, axis=2).round().astype(np.uint8)
    return img, boxes


def preprocess(img):
    """RapidOCR's DetPreProcess (the page is already a multiple of 32: no resize)."""
    assert img.shape[0] % 32 == 0 and img.shape[1] % 32 == 0
    x = (img.astype(np.float32) / 255.0 - 0.5) / 0.5
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None]).astype(np.float32)


def regions(mask):
    """4-connected regions of a bool map: list of (pixel count, (y0, x0, y1, x1))."""
    h, w = mask.shape
    seen = np.zeros_like(mask)
    out = []
    for y0, x0 in zip(*np.nonzero(mask)):
        if seen[y0, x0]:
            continue
        seen[y0, x0] = True
        queue = collections.deque([(y0, x0)])
        n, ymin, xmin, ymax, xmax = 0, y0, x0, y0, x0
        while queue:
            y, x = queue.popleft()
            n += 1
            ymin, xmin, ymax, xmax = min(ymin, y), min(xmin, x), max(ymax, y), max(xmax, x)
            for ny, nx in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1)):
                if 0 <= ny < h and 0 <= nx < w and mask[ny, nx] and not seen[ny, nx]:
                    seen[ny, nx] = True
                    queue.append((ny, nx))
        out.append((n, (int(ymin), int(xmin), int(ymax) + 1, int(xmax) + 1)))
    return out


def unclip(box):
    """Grows a box by RapidOCR's unclip distance: area * ratio / perimeter."""
    y0, x0, y1, x1 = box
    h, w = y1 - y0, x1 - x0
    d = h * w * UNCLIP_RATIO / (2.0 * (h + w))
    return (y0 - d, x0 - d, y1 + d, x1 + d)


def iou(a, b):
    iy = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ix = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iy * ix
    area = lambda r: (r[2] - r[0]) * (r[3] - r[1])  # noqa: E731
    return inter / (area(a) + area(b) - inter)


def run_ort(model, x):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def run_ingot(ingot, model, x, work):
    bundle = os.path.join(work, "det_text.ingot")
    xin = os.path.join(work, "page.npy")
    out = os.path.join(work, "out.npz")
    np.save(xin, x)
    for what, cmd in (("compile", [ingot, "compile", model, "-o", bundle, "--input-shape",
                                   "x=" + "x".join(str(d) for d in x.shape)]),
                      ("run", [ingot, "run", bundle, "--input", f"x={xin}", "--output", out])):
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True)
        print(f"ingot {what}: {time.monotonic() - t0:.2f}s")
        if p.returncode != 0:
            print(f"FAIL: ingot {what} exited {p.returncode}: {' '.join(cmd)}")
            sys.stdout.write(p.stdout[-4000:] + p.stderr[-4000:])
            sys.exit(1)
    with np.load(out) as z:
        return z[z.files[0]]


def det_text(args):
    model = fetch("det", args.python)
    img, boxes = render()
    x = preprocess(img)
    ref = run_ort(model, x)
    if args.backend == "ort":
        prob = ref
    else:
        prob = run_ingot(args.ingot, model, x, args.work)
        if prob.shape != ref.shape:
            print(f"FAIL: probability map shape {prob.shape}, onnxruntime {ref.shape}")
            return 1
        diff = np.abs(prob.astype(np.float64) - ref)
        bad = int((diff > 1e-4 + 1e-3 * np.abs(ref)).sum())
        print(f"probability map vs onnxruntime: max abs err {diff.max():.3g}, {bad} of {ref.size} "
              f"outside atol 1e-4 + rtol 1e-3")
        if bad:
            print("FAIL: the probability map differs from onnxruntime's")
            return 1
    if prob.shape != (1, 1, HEIGHT, WIDTH):
        print(f"FAIL: probability map shape {prob.shape}, expected {(1, 1, HEIGHT, WIDTH)}")
        return 1
    found = [r for r in regions(prob[0, 0] > THRESH) if r[0] >= MIN_REGION]
    ok = True
    print(f"{len(found)} regions of at least {MIN_REGION} pixels above {THRESH}:")
    for n, box in found:
        grown = unclip(box)
        best = max(iou(grown, b) for b in boxes)
        print(f"  region {box} ({n} px), unclipped {tuple(round(v, 1) for v in grown)}, "
              f"best IoU with a line {best:.2f}")
        near = any(iou(grown, b) > 0 for b in boxes)
        if not near and n > MAX_SPURIOUS:
            print(f"    FAIL: a spurious region of {n} pixels away from the text")
            ok = False
    for (text, *_), b in zip(LINES, boxes):
        scores = [iou(unclip(box), b) for _, box in found]
        best = max(scores, default=0.0)
        verdict = "ok" if best > 0.5 else "NOT FOUND"
        print(f"  line {text!r} box {b}: best IoU {best:.2f} -> {verdict}")
        ok = ok and best > 0.5
    print("OK" if ok else "FAIL")
    return 0 if ok else 1


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["compare"]:
        if len(argv) < 2:
            raise SystemExit("usage: real_model.py compare NAME [compare.py options]")
        ap = argparse.ArgumentParser()
        ap.add_argument("--python", default=sys.executable)
        known, rest = ap.parse_known_args(argv[2:])
        model = fetch(argv[1], known.python)
        cmd = [sys.executable, os.path.join(ROOT, "tests", "e2e", "compare.py"), model, *rest]
        return subprocess.run(cmd).returncode
    if argv[:1] == ["det-text"]:
        ap = argparse.ArgumentParser(prog="real_model.py det-text")
        ap.add_argument("--ingot", help="path to the ingot binary (needed for --backend ingot)")
        ap.add_argument("--work", help="folder for the bundle and tensors (default: a temp dir)")
        ap.add_argument("--backend", choices=["ingot", "ort"], default="ingot")
        ap.add_argument("--python", default=sys.executable, help="python whose pip fetches")
        args = ap.parse_args(argv[1:])
        if args.backend == "ingot" and not args.ingot:
            ap.error("--ingot is required with --backend ingot")
        args.work = args.work or tempfile.mkdtemp(prefix="ingot-det-text-")
        os.makedirs(args.work, exist_ok=True)
        return det_text(args)
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
