"""Checks where the llvm target emits vpdpbusd for a quantized conv model.

Compiles MODEL once for `llvm -mcpu=znver4` (a CPU whose row in
target/target_cpus.def adds avx512vnni) and `llvm x86-64-v4` (AVX-512
without VNNI), extracts each variant's object with `ingot inspect
--extract-code` and disassembles it: the ConvInteger kernels' dot4 must be
vpdpbusd in the first and must not appear in the second (there the plain
widened multiply-add). Both variants read the conv inputs as dot4 words
(steps of ai.ingot Dot4Words in the plan); a `c` bundle, whose target has no
dot4 kernels, has none. Compile only, so it runs on any x86-64 or AArch64
build host; exit 77 (skipped) without objdump.

usage: vnni_code.py --ingot INGOT --model MODEL.onnx --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    objdump = shutil.which("llvm-objdump") or shutil.which("llvm-objdump-14") or shutil.which("objdump")
    if not objdump:
        print("no objdump: skipped")
        return 77
    os.makedirs(args.work, exist_ok=True)
    bundle = os.path.join(args.work, "model.ingot")
    vnni, plain = "llvm -mcpu=znver4", "llvm x86-64-v4"
    subprocess.run([args.ingot, "compile", args.model, "-o", bundle, "--target", vnni, "--target", plain,
                    "--quiet"], check=True)
    failures = 0
    for target, want in ((vnni, True), (plain, False)):
        code = os.path.join(args.work, target.replace(" ", "_").replace("=", "_") + ".so")
        subprocess.run([args.ingot, "inspect", bundle, "--extract-code", target, "-o", code], check=True)
        text = subprocess.run([objdump, "-d", code], check=True, capture_output=True, text=True).stdout
        count = text.count("vpdpbusd")
        ok = count > 0 if want else count == 0
        print(f"{target}: {count} vpdpbusd ({'ok' if ok else 'WRONG'})")
        failures += not ok
    for target, bundle_path, want in ((vnni + " and " + plain, bundle, True), ("c", os.path.join(args.work, "c.ingot"), False)):
        if target == "c":
            subprocess.run([args.ingot, "compile", args.model, "-o", bundle_path, "--target", "c", "--quiet"], check=True)
        plan = json.loads(subprocess.run([args.ingot, "inspect", bundle_path, "--plan", "--json"], check=True,
                                         capture_output=True, text=True).stdout)
        words = sum(step["kernel"].startswith("dot4words") for step in plan["steps"])
        ok = words > 0 if want else words == 0
        print(f"{target}: {words} Dot4Words steps ({'ok' if ok else 'WRONG'})")
        failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
