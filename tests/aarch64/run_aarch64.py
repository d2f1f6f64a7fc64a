#!/usr/bin/env python3
"""The AArch64 path end to end, under qemu-user.

  run_aarch64.py --ingot BUILD/ingot --source SRC --build BUILD/aarch64 --work DIR
                 [--zoo BUILD/models]

1. Cross-builds the runtime and the run path of `ingot` (the top-level
   CMakeLists.txt with -DINGOT_RUNTIME_ONLY=ON -DINGOT_RUN_TOOL=ON and the
   toolchain cmake/aarch64-linux-gnu.cmake) with aarch64-linux-gnu-gcc.
2. Compiles models on this machine with --target aarch64 (the host `ingot`,
   LLVM), runs them with the AArch64 `ingot` under qemu-aarch64 and compares
   every output with ONNX Runtime run here (tests/e2e/compare.py): the digits
   model (one image; the whole test set with its accuracy) and the small
   ResNet-18 and MobileNetV2 of the CNN zoo, on 2 threads; a QDQ net and
   tests/e2e/patches_test.py's convs from under 4 channels (Im2Col) for
   Neoverse N1 (sdot) and V1 (usdot).
3. A bundle with x86-64 and AArch64 variants: the AArch64 runtime picks
   AArch64 and says why.

Exit 77 (CTest: skipped) with a message when the cross tools are missing:
  apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  dpkg --add-architecture arm64 && apt-get update
  apt-get install libzstd-dev:arm64 libjansson-dev:arm64 libsodium-dev:arm64
(scripts/setup.sh does this with INGOT_CROSS_AARCH64=1).

qemu runs the binaries as
  qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib
The LD_LIBRARY_PATH keeps the C library the one of the cross toolchain's
loader: without it the loader (libc6-arm64-cross) picks up the multiarch
libc6:arm64 from /lib/aarch64-linux-gnu, a different build of glibc 2.36,
and the first pthread_create hangs.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

SKIP = 77
SYSROOT = "/usr/aarch64-linux-gnu"
MULTIARCH = "/usr/lib/aarch64-linux-gnu"


def skip(why):
    print(f"SKIP: {why}")
    print("install: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user; "
          "dpkg --add-architecture arm64; apt-get update; apt-get install libzstd-dev:arm64 "
          "libjansson-dev:arm64 libsodium-dev:arm64 (or INGOT_CROSS_AARCH64=1 scripts/setup.sh)")
    sys.exit(SKIP)


def run(cmd, what, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        print(f"FAIL: {what}: exit {p.returncode}: {' '.join(cmd)}")
        print(p.stdout[-4000:])
        print(p.stderr[-4000:])
        sys.exit(1)
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--zoo")
    a = ap.parse_args()

    for tool in ("aarch64-linux-gnu-gcc", "qemu-aarch64", "cmake"):
        if not shutil.which(tool):
            skip(f"{tool} is not installed")
    if not os.path.exists(os.path.join(SYSROOT, "lib", "ld-linux-aarch64.so.1")):
        skip(f"no AArch64 C library in {SYSROOT} (libc6-dev-arm64-cross)")
    for lib in ("zstd", "jansson", "sodium"):
        if not os.path.exists(os.path.join(MULTIARCH, f"lib{lib}.so")):
            skip(f"no AArch64 lib{lib} in {MULTIARCH} (lib{lib}-dev:arm64)")
    os.makedirs(a.work, exist_ok=True)

    # 1. The cross build (incremental after the first run).
    # The project's own top-level CMakeLists.txt, runtime-only with the run
    # path of `ingot`, and the toolchain file: the build the README shows. A
    # build folder configured from another source folder is made anew.
    toolchain = os.path.join(a.source, "cmake", "aarch64-linux-gnu.cmake")
    cache = os.path.join(a.build, "CMakeCache.txt")
    if os.path.exists(cache):
        with open(cache) as f:
            home = [l.split("=", 1)[1].strip() for l in f if l.startswith("CMAKE_HOME_DIRECTORY:")]
        if not home or os.path.realpath(home[0]) != os.path.realpath(a.source):
            shutil.rmtree(a.build)
    if not os.path.exists(cache):
        run(["cmake", "-S", a.source, "-B", a.build, f"-DCMAKE_TOOLCHAIN_FILE={toolchain}",
             "-DINGOT_RUNTIME_ONLY=ON", "-DINGOT_RUN_TOOL=ON", "-DCMAKE_BUILD_TYPE=Release"],
            "configure the cross build")
    run(["cmake", "--build", a.build, "-j2"], "cross-build the runtime and ingot")
    cross = os.path.join(a.build, "ingot")
    p = run(["file", cross], "file") if shutil.which("file") else None
    if p is not None and "aarch64" not in p.stdout:
        print(f"FAIL: {cross} is not an AArch64 binary: {p.stdout}")
        return 1

    # The driver compare.py runs: compile here, everything else under qemu.
    wrapper = os.path.join(a.work, "ingot-qemu")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\n"
                "# Made by tests/aarch64/run_aarch64.py: compile on the host, run under qemu.\n"
                f"if [ \"$1\" = compile ]; then exec '{a.ingot}' \"$@\"; fi\n"
                f"exec qemu-aarch64 -L {SYSROOT} -E LD_LIBRARY_PATH={SYSROOT}/lib '{cross}' \"$@\"\n")
    os.chmod(wrapper, 0o755)
    p = run([wrapper, "--version"], "the AArch64 ingot under qemu")
    print(f"qemu: {p.stdout.strip()}")

    compare = os.path.join(a.source, "tests", "e2e", "compare.py")
    digits = os.path.join(a.source, "models", "digits")
    cases = [
        ("digits", [os.path.join(digits, "model.onnx"), "--input-shape", "input=1x1x8x8"]),
        ("digits_test_set", [os.path.join(digits, "model.onnx"), "--input",
                             f"input={os.path.join(digits, 'test_x.npy')}", "--labels",
                             os.path.join(digits, "test_y.npy"), "--expected",
                             os.path.join(digits, "expected.json")]),
    ]
    for model in ("resnet18_small", "mobilenetv2_small"):
        path = os.path.join(a.zoo or "", f"{model}.onnx")
        if a.zoo and os.path.exists(path):
            cases.append((model, [path]))
        else:
            print(f"note: {path} not found (models/make_cnn_zoo.py makes it); {model} not checked")
    # A quantized net (QDQ per channel, models/make_qop_cases.py) whose
    # integer convs and MatMul run as dot4: two sdot a dot4 with dotprod
    # (Neoverse N1), one usdot with i8mm (Neoverse V1); qemu-aarch64's
    # default CPU has both.
    qnet = os.path.join(a.zoo or "", "qop_net_qdq_pc.onnx")
    targets = {}
    if a.zoo and os.path.exists(qnet):
        for cpu in ("neoverse-n1", "neoverse-v1"):
            cases.append((f"qop_net_{cpu}", [qnet]))
            targets[f"qop_net_{cpu}"] = f"llvm -mtriple=aarch64-linux-gnu -mcpu={cpu}"
    else:
        print(f"note: {qnet} not found (models/make_qop_cases.py makes it); dot4 on AArch64 not checked")
    # Convs from under 4 channels as an Im2Col writing their patches' words
    # and a 1x1 conv over them (tests/e2e/patches_test.py's model), with sdot
    # and with usdot; compile must show an Im2Col kernel for each conv the
    # model marks as rewritten (patches_test.CONVS).
    sys.path.insert(0, os.path.join(a.source, "tests", "e2e"))
    import patches_test  # noqa: E402
    patches = os.path.join(a.work, "patches.onnx")
    patches_test.make_model(patches)
    failed = []
    for cpu in ("neoverse-n1", "neoverse-v1"):
        name = f"patches_{cpu}"
        cases.append((name, [patches, "--int-atol", "1"]))
        targets[name] = f"llvm -mtriple=aarch64-linux-gnu -mcpu={cpu}"
        p = run([a.ingot, "compile", patches, "-o", os.path.join(a.work, f"{name}.ingot"), "--target", targets[name],
                 "-q", "--dump-schedule"], f"compile {name}")
        im2col = p.stdout.count("workload 'im2col")
        want = sum(1 for conv in patches_test.CONVS if conv[-1])
        print(f"{name}: {im2col} Im2Col kernels")
        if im2col != want:
            print(f"FAIL: {name}: {im2col} Im2Col kernels, want {want}")
            failed.append(name)
    for name, args in cases:
        cmd = [sys.executable, compare, *args, "--ingot", wrapper, "--target", targets.get(name, "aarch64"),
               "--threads", "2", "--work", os.path.join(a.work, name)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(p.stdout)
        if p.returncode != 0:
            sys.stdout.write(p.stderr[-2000:])
            failed.append(name)

    # 3. Variants: x86-64 and AArch64 in one bundle; the AArch64 runtime picks its own.
    bundle = os.path.join(a.work, "variants.ingot")
    run([a.ingot, "compile", os.path.join(digits, "model.onnx"), "-o", bundle, "-q", "--input-shape",
         "input=1x1x8x8", "--target", "x86-64-v3", "--target", "aarch64", "--target", "x86-64"], "compile variants")
    info = json.loads(run([wrapper, "inspect", bundle, "--json"], "inspect under qemu").stdout)
    reason = info.get("target_reason", "")
    print(f"variants under qemu: {reason}")
    if info.get("loaded_target") != "llvm aarch64" or "built for x86-64, this CPU is AArch64" not in reason:
        print("FAIL: the AArch64 runtime should pick the aarch64 variant and say why the others do not run")
        failed.append("variants")
    p = run([wrapper, "run", bundle, "--verbose", "--threads", "2"], "run variants under qemu")
    if "picked llvm aarch64" not in p.stderr:
        print(f"FAIL: run --verbose: {p.stderr}")
        failed.append("run --verbose")

    if failed:
        print(f"FAIL: {', '.join(failed)}")
        return 1
    print("OK: the AArch64 path end to end under qemu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
