#!/usr/bin/env python3
"""The Python package (python/ingot) against this build and ONNX Runtime.

  test_python.py CASE --source SRC --build BUILD --work DIR

CASE:
  session  ingot.compile + ingot.Session on the digits model, from the source
           tree (INGOT_BIN / INGOT_LIB name this build): outputs match ONNX
           Runtime; bad names, shapes, dtypes, feeds, bundles and compile
           arguments raise the documented exceptions with the tensor's name;
           the zero-copy paths (Session.input, copy_outputs=False) behave as
           documented
  locate   how the package finds the tool and libingot without INGOT_BIN /
           INGOT_LIB: an installed prefix on PATH, the build tree of a venv
           made as scripts/setup.sh makes it; a bad $INGOT_LIB is reported
  pip      `pip install ./python` (a copy of it) into a target folder; the
           installed package (not the source tree) compiles and runs the
           model, and `python -m ingot.compare` reports OK
  compare  `python -m ingot.compare` through the source tree: OK on the
           digits model, FAIL (exit 1) with zero tolerance and on a model
           that does not exist
Exit 0 when every check passes; 77 when a case cannot run here (skipped).
"""
import argparse
import gc
import hashlib
import os
import threading
import shutil
import subprocess
import sys
import traceback

import numpy as np

FAILURES = []


def check(cond, what):
    if cond:
        print(f"  ok: {what}")
    else:
        print(f"  FAIL: {what}")
        FAILURES.append(what)


def raises(exc_type, fragments, fn, what):
    """fn() must raise exc_type whose message holds every fragment."""
    try:
        fn()
    except exc_type as e:
        msg = str(e)
        missing = [f for f in fragments if f not in msg]
        check(not missing, f"{what}: {exc_type.__name__}: {msg}"
              + (f" (missing {missing})" if missing else ""))
        return e
    except Exception as e:  # noqa: BLE001 - the wrong kind is a failure to report
        check(False, f"{what}: raised {type(e).__name__}: {e}, wanted {exc_type.__name__}")
        return None
    check(False, f"{what}: raised nothing, wanted {exc_type.__name__}")
    return None


def env_for(args, **extra):
    env = dict(os.environ)
    for var in ("INGOT_BIN", "INGOT_LIB", "PYTHONPATH"):
        env.pop(var, None)
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def ort_run(model, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def case_session(args):
    os.environ["INGOT_BIN"] = os.path.join(args.build, "ingot")
    os.environ["INGOT_LIB"] = os.path.join(args.build, "runtime", "libingot.so.0")
    sys.path.insert(0, os.path.join(args.source, "python"))
    import ingot
    check(os.path.dirname(ingot.__file__) == os.path.join(args.source, "python", "ingot"),
          f"ingot imported from the source tree ({ingot.__file__})")
    check(ingot.library_path() == os.environ["INGOT_LIB"], f"libingot from $INGOT_LIB: {ingot.library_path()}")
    check(ingot.runtime_version() == "0.6.0", f"runtime version {ingot.runtime_version()}")

    model = os.path.join(args.source, "models", "digits", "model.onnx")
    bundle = os.path.join(args.work, "digits.ingot")
    got = ingot.compile(model, bundle, input_shapes={"input": (5, 1, 8, 8)}, targets=["llvm"])
    check(got == bundle and os.path.getsize(bundle) > 0, "compile wrote the bundle")

    session = ingot.Session(bundle, threads=1)
    check([(i.name, i.dtype, i.shape) for i in session.inputs] == [("input", np.float32, (5, 1, 8, 8))],
          f"inputs {session.inputs}")
    check([(o.name, o.shape) for o in session.outputs] == [("probabilities", (5, 10))],
          f"outputs {session.outputs}")
    check(session.device == "cpu" and session.target.startswith("llvm"), f"target {session.target}")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 1, 8, 8)).astype(np.float32)
    ref = ort_run(model, {"input": x})["probabilities"]
    out = session.run({"input": x})
    check(set(out) == {"probabilities"}, f"run returns {{output name: array}}: {sorted(out)}")
    y = out["probabilities"]
    err = float(np.abs(y - ref).max())
    check(y.dtype == np.float32 and y.shape == (5, 10) and err <= 1e-5, f"matches onnxruntime (max abs err {err:.3g})")
    check(y.flags.writeable and y.flags.owndata, "outputs are new arrays by default")

    # Non-contiguous input: copied through its strides, same answer.
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    check(not xt.flags.c_contiguous and np.array_equal(xt, x), "a strided view of the same input")
    session.input("input")[...] = 0  # so that an input not copied shows
    err2 = float(np.abs(session.run({"input": xt})["probabilities"] - ref).max())
    check(err2 <= 1e-5, f"strided input gives the same result (max abs err {err2:.3g})")

    # Zero copy: fill the arena's input, run with no feeds or with the view itself.
    view = session.input("input")
    check(view.flags.writeable and view.shape == (5, 1, 8, 8), "Session.input gives a writable arena view")
    view[...] = x[::-1]
    ref_rev = ort_run(model, {"input": np.ascontiguousarray(x[::-1])})["probabilities"]
    check(float(np.abs(session.run()["probabilities"] - ref_rev).max()) <= 1e-5, "run() on the filled arena view")
    check(float(np.abs(session.run({"input": view})["probabilities"] - ref_rev).max()) <= 1e-5,
          "run({name: the arena view}) (nothing copied)")
    views = session.run({"input": x}, copy_outputs=False)
    yv = views["probabilities"]
    check(not yv.flags.writeable and float(np.abs(yv - ref).max()) <= 1e-5,
          "copy_outputs=False gives a read-only view with the result")
    raises(ValueError, ["read-only"], lambda: yv.__setitem__((0, 0), 1.0), "writing to an output view")
    kept = y.copy()
    session.run({"input": x[::-1].copy()}, copy_outputs=False)
    check(float(np.abs(yv - ref_rev).max()) <= 1e-5, "the view shows the next run's result (documented)")
    check(np.array_equal(y, kept), "a copied output is not touched by later runs")

    # Bad feeds: one clear error naming the tensor, nothing run.
    raises(ValueError, ["no input 'image'", "'input'"], lambda: session.run({"image": x}), "unknown input name")
    raises(ValueError, ["missing input 'input'", "float32 [5, 1, 8, 8]"], lambda: session.run({}), "missing input")
    raises(ValueError, ["input 'input'", "[1, 1, 8, 8]", "[5, 1, 8, 8]"],
           lambda: session.run({"input": x[:1]}), "wrong shape")
    raises(TypeError, ["input 'input'", "float64", "float32"],
           lambda: session.run({"input": x.astype(np.float64)}), "wrong dtype")
    raises(TypeError, ["input 'input'", "big-endian"],
           lambda: session.run({"input": x.astype(">f4")}), "wrong byte order")
    raises(TypeError, ["input 'input'", "numpy.ndarray", "list"],
           lambda: session.run({"input": x.tolist()}), "not an array")
    raises(TypeError, ["dict"], lambda: session.run([x]), "feeds not a dict")
    raises(ValueError, ["no input 'nope'"], lambda: session.input("nope"), "Session.input of an unknown name")

    # Bad sessions and bundles.
    raises(FileNotFoundError, ["bundle not found", "missing.ingot"],
           lambda: ingot.Session(os.path.join(args.work, "missing.ingot")), "missing bundle file")
    raises(IsADirectoryError, ["folder"], lambda: ingot.Session(args.work), "a folder as the bundle")
    corrupt = os.path.join(args.work, "corrupt.ingot")
    with open(bundle, "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF
    with open(corrupt, "wb") as f:
        f.write(data)
    e = raises(ingot.IngotError, ["corrupt.ingot"], lambda: ingot.Session(corrupt), "a corrupt bundle")
    check(e is not None and e.status == "corrupt", f"its status is 'corrupt' ({getattr(e, 'status', None)})")
    not_bundle = os.path.join(args.work, "not_a_bundle.ingot")
    with open(not_bundle, "w") as f:
        f.write("hello")
    raises(ingot.IngotError, ["not_a_bundle.ingot"], lambda: ingot.Session(not_bundle), "a file that is no bundle")
    raises(ValueError, ["threads"], lambda: ingot.Session(bundle, threads=-1), "threads=-1")
    raises(TypeError, ["threads"], lambda: ingot.Session(bundle, threads="2"), "threads='2'")
    raises(ValueError, ["public_key", "32 bytes"], lambda: ingot.Session(bundle, public_key=b"x"), "a short key")
    raises(ingot.IngotError, ["signature"], lambda: ingot.Session(bundle, public_key=bytes(32)),
           "an unsigned bundle opened with a key")
    raises(ingot.IngotError, ["device"], lambda: ingot.Session(bundle, device="tpu"), "an unknown device")

    # Closing: later calls fail clearly; arrays into the arena keep it alive.
    keep = session.run({"input": x}, copy_outputs=False)["probabilities"]
    with session:
        pass
    raises(ValueError, ["closed"], lambda: session.run({"input": x}), "run after close")
    del session
    gc.collect()
    check(float(np.abs(keep - ref).max()) <= 1e-5, "an output view outlives its closed session")

    # Two sessions with several threads give the same answers.
    with ingot.Session(bundle, threads=2) as s2:
        check(float(np.abs(s2.run({"input": x})["probabilities"] - ref).max()) <= 1e-5, "threads=2")

    # API 0.4 from Python: metadata, lookup by name, cancel, bound arrays, a shared pool.
    with ingot.Session(bundle) as s5:
        md = s5.metadata
        with open(model, "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        check(md.get("source_sha256") == want and md.get("name") == "digits_mlp"
              and "--input-shape input=5x1x8x8" in md.get("compile_flags", ""), f"metadata {md}")
        check(s5.input_index("input") == 0 and s5.output_index("probabilities") == 0, "lookup by name")
        e = raises(ingot.IngotError, ["nope"], lambda: s5.input_index("nope"), "an unknown input name")
        check(e is not None and e.status == "not found", f"its status ({getattr(e, 'status', None)})")
        s5.cancel()
        e = raises(ingot.IngotError, ["cancelled"], lambda: s5.run({"input": x}), "a cancelled run")
        check(e is not None and e.status == "cancelled", f"its status ({getattr(e, 'status', None)})")
        check(float(np.abs(s5.run({"input": x})["probabilities"] - ref).max()) <= 1e-5, "the run after a cancel")
        xin = x.copy()
        yout = np.zeros((5, 10), np.float32)
        s5.bind_input("input", xin)
        s5.bind_output("probabilities", yout)
        got = s5.run(copy_outputs=False)["probabilities"]
        check(got is yout and float(np.abs(yout - ref).max()) <= 1e-5, "run into a bound output array")
        xin[...] = x[::-1]
        s5.run()
        check(float(np.abs(yout - ref_rev).max()) <= 1e-5, "a bound input read in place")
        raises(ValueError, ["float32 [5, 10]"], lambda: s5.bind_output("probabilities", np.zeros((5, 9), np.float32)),
               "binding a wrong shape")
        ro = np.zeros((5, 10), np.float32)
        ro.flags.writeable = False
        raises(ValueError, ["writable"], lambda: s5.bind_output("probabilities", ro), "binding a read-only output")
        s5.bind_output("probabilities", None)
        yout[...] = 0
        check(float(np.abs(s5.run()["probabilities"] - ref_rev).max()) <= 1e-5 and not yout.any(),
              "unbound: the arena again")
    pool = ingot.Threads(2)
    shared = [ingot.Session(bundle, shared_threads=pool) for _ in range(2)]
    pool.close()  # the sessions keep it alive
    results = [None, None]

    def go(i):
        results[i] = [shared[i].run({"input": x})["probabilities"] for _ in range(20)]
    workers = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    check(all(r is not None and all(float(np.abs(y - ref).max()) <= 1e-5 for y in r) for r in results),
          "two sessions on one shared pool, run at once")
    for sh in shared:
        sh.close()

    # compile errors.
    raises(FileNotFoundError, ["ONNX model not found"],
           lambda: ingot.compile(os.path.join(args.work, "nope.onnx"), bundle), "compile a missing model")
    e = raises(ingot.CompileError, ["no input 'x'", "'input'"],
               lambda: ingot.compile(model, os.path.join(args.work, "x.ingot"), input_shapes={"x": (1, 1, 8, 8)}),
               "compile with an unknown input name (the tool's message)")
    check(e is not None and e.returncode != 0 and "ingot: error:" in e.stderr, "CompileError carries the tool's stderr")
    raises(ingot.CompileError, ["unknown target 'bogus'"],
           lambda: ingot.compile(model, os.path.join(args.work, "x.ingot"), targets=["bogus"]), "an unknown target")
    raises(TypeError, ["input_shapes['input']", "not an int"],
           lambda: ingot.compile(model, bundle, input_shapes={"input": (1, "a", 8, 8)}), "a non-int dimension")
    raises(ValueError, ["negative"],
           lambda: ingot.compile(model, bundle, input_shapes={"input": (1, -1, 8, 8)}), "a negative dimension")
    raises(ValueError, ["targets is empty"], lambda: ingot.compile(model, bundle, targets=[]), "no targets")
    # Two variants in one bundle, a target as a plain string.
    both = ingot.compile(model, os.path.join(args.work, "both.ingot"), input_shapes={"input": (5, 1, 8, 8)},
                         targets=["c", "llvm"])
    with ingot.Session(both) as s3:
        check(float(np.abs(s3.run({"input": x})["probabilities"] - ref).max()) <= 1e-5,
              f"a bundle with c and llvm variants ({s3.target})")
    c_only = ingot.compile(model, os.path.join(args.work, "c.ingot"), input_shapes={"input": [1, 1, 8, 8]},
                           targets="c")
    with ingot.Session(c_only) as s4:
        check(s4.target == "c" and s4.inputs[0].shape == (1, 1, 8, 8), f"targets='c' ({s4.target}, {s4.inputs[0].shape})")

    # API 0.5: an output whose size the run computes (NonZero) comes back in that size.
    import onnx
    from onnx import TensorProto, helper
    nz_model = os.path.join(args.work, "nonzero.onnx")
    graph = helper.make_graph([helper.make_node("NonZero", ["x"], ["idx"])], "nonzero",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("idx", TensorProto.INT64, [2, None])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), nz_model)
    nz_bundle = ingot.compile(nz_model, os.path.join(args.work, "nonzero.ingot"), targets=["llvm"])
    with ingot.Session(nz_bundle, threads=1) as s5:
        check(s5.outputs[0].shape == (2, 12), f"the output's bounds {s5.outputs[0].shape}")
        for k, xs in enumerate((np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 5, 6]], np.float32),
                                np.zeros((3, 4), np.float32), np.ones((3, 4), np.float32))):
            want = ort_run(nz_model, {"x": xs})["idx"]
            for copy in (True, False):
                got = s5.run({"x": xs}, copy_outputs=copy)["idx"]
                check(got.shape == want.shape and np.array_equal(got, want),
                      f"NonZero case {k} (copy_outputs={copy}): shape {got.shape}, onnxruntime {want.shape}")

    # API 0.6: a ranged input dim (self-attention over 1..6 rows), compiled from a
    # (least, largest) pair, run at three sizes; one outside the range is refused.
    rg_model = os.path.join(args.work, "ranged.onnx")
    graph = helper.make_graph([
        helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["x", "xt"], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "x"], ["y"])], "ranged",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "S", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "S", 8])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), rg_model)
    rg_bundle = ingot.compile(rg_model, os.path.join(args.work, "ranged.ingot"), input_shapes={"x": (1, (1, 6), 8)},
                              targets=["llvm"])
    with ingot.Session(rg_bundle, threads=1) as s6:
        info = s6.inputs[0]
        check(info.shape == (1, 6, 8) and info.shape_min == (1, 1, 8), f"the ranged input's info {info}")
        rng = np.random.default_rng(6)
        for n in (1, 4, 6, 2):
            xs = rng.standard_normal((1, n, 8)).astype(np.float32)
            want = ort_run(rg_model, {"x": xs})["y"]
            got = s6.run({"x": xs})["y"]
            check(got.shape == want.shape and np.allclose(got, want, atol=1e-5),
                  f"ranged input at {n} rows: shape {got.shape}, onnxruntime {want.shape}")
        raises(ValueError, ["x", "7", "1..6"], lambda: s6.run({"x": np.zeros((1, 7, 8), np.float32)}),
               "a ranged input past its range")


def make_prefix(args, root):
    """bin/ingot and lib/libingot.so.0 under root, as `cmake --install` lays them out."""
    os.makedirs(os.path.join(root, "bin"), exist_ok=True)
    os.makedirs(os.path.join(root, "lib"), exist_ok=True)
    for src, dst in ((os.path.join(args.build, "ingot"), os.path.join(root, "bin", "ingot")),
                     (os.path.join(args.build, "runtime", "libingot.so.0"), os.path.join(root, "lib", "libingot.so.0"))):
        if os.path.lexists(dst):
            os.remove(dst)
        os.symlink(src, dst)


PROBE = ("import ingot, sys; print(ingot.__file__); print(ingot.find_tool()); print(ingot.library_path()); "
         "s = ingot.Session(sys.argv[1]); import numpy as np; "
         "print(s.run({'input': np.zeros((1, 1, 8, 8), np.float32)})['probabilities'].shape)")


def probe(python, bundle, env, cwd):
    p = subprocess.run([python, "-c", PROBE, bundle], env=env, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"
    return p.stdout.split("\n"), None


def case_locate(args):
    src_python = os.path.join(args.source, "python")
    bundle = os.path.join(args.work, "digits.ingot")
    subprocess.run([os.path.join(args.build, "ingot"), "compile", "-q", "-o", bundle, "--input-shape",
                    "input=1x1x8x8", os.path.join(args.source, "models", "digits", "model.onnx")], check=True)
    numpy_site = os.path.dirname(os.path.dirname(np.__file__))
    # A venv outside any build tree (this python's may be one: the set-up venv).
    bare = os.path.join(args.work, "bare")
    shutil.rmtree(bare, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", os.path.join(bare, "venv")], check=True)
    bare_python = os.path.join(bare, "venv", "bin", "python")
    src_python += os.pathsep + numpy_site  # the new venvs see numpy through PYTHONPATH

    # 1. An installed prefix: `ingot` on PATH, libingot in ../lib.
    prefix = os.path.join(args.work, "prefix")
    make_prefix(args, prefix)
    env = env_for(args, PYTHONPATH=src_python, PATH=os.path.join(prefix, "bin") + os.pathsep + os.environ["PATH"])
    lines, err = probe(bare_python, bundle, env, args.work)
    check(lines is not None and lines[1] == os.path.join(prefix, "bin", "ingot")
          and lines[2] == os.path.join(prefix, "lib", "libingot.so.0") and lines[3] == "(1, 10)",
          f"an installed prefix on PATH: {lines or err}")

    # 2. The build tree of the venv (scripts/setup.sh: BUILD/venv): nothing on PATH.
    tree = os.path.join(args.work, "tree")
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(os.path.join(tree, "runtime"))
    open(os.path.join(tree, "CMakeCache.txt"), "w").close()
    os.symlink(os.path.join(args.build, "ingot"), os.path.join(tree, "ingot"))
    os.symlink(os.path.join(args.build, "runtime", "libingot.so.0"), os.path.join(tree, "runtime", "libingot.so.0"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", os.path.join(tree, "venv")], check=True)
    venv_python = os.path.join(tree, "venv", "bin", "python")
    env = env_for(args, PYTHONPATH=src_python, PATH="/usr/bin:/bin")
    lines, err = probe(venv_python, bundle, env, args.work)
    check(lines is not None and lines[1] == os.path.join(tree, "ingot")
          and lines[2] == os.path.join(tree, "runtime", "libingot.so.0") and lines[3] == "(1, 10)",
          f"the build tree of the venv: {lines or err}")

    # 3. $INGOT_BIN / $INGOT_LIB win, and a wrong one is an error naming the variable.
    env = env_for(args, PYTHONPATH=src_python, PATH="/usr/bin:/bin",
                  INGOT_BIN=os.path.join(args.build, "ingot"),
                  INGOT_LIB=os.path.join(prefix, "lib", "libingot.so.0"))
    lines, err = probe(venv_python, bundle, env, args.work)
    check(lines is not None and lines[1] == os.path.join(args.build, "ingot")
          and lines[2] == os.path.join(prefix, "lib", "libingot.so.0"), f"$INGOT_BIN and $INGOT_LIB first: {lines or err}")
    env["INGOT_LIB"] = os.path.join(args.work, "no-such-libingot.so.0")
    lines, err = probe(bare_python, bundle, env, args.work)
    check(lines is None and "INGOT_LIB" in err and "no-such-libingot.so.0" in err, f"a bad $INGOT_LIB: {err}")
    env = env_for(args, PYTHONPATH=src_python, PATH="/usr/bin:/bin")
    p = subprocess.run([bare_python, "-c", "import ingot; ingot.find_tool()"], env=env, cwd=args.work,
                       capture_output=True, text=True)
    last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    check(p.returncode != 0 and "NotFoundError" in last and "INGOT_BIN" in last,
          f"no tool anywhere: {last}")
    p = subprocess.run([bare_python, "-c", "import ingot"], env=env, cwd=args.work, capture_output=True, text=True)
    check(p.returncode == 0, "import ingot needs neither the tool nor libingot")

    # 4. The venv scripts/setup.sh made for this build (CI): ingot installed into it.
    venv = os.path.join(args.build, "venv")
    if os.path.realpath(sys.prefix) != os.path.realpath(venv):
        print(f"  note: this python ({sys.prefix}) is not {venv}; the set-up venv is not checked")
        return
    lines, err = probe(sys.executable, bundle, env_for(args, PATH="/usr/bin:/bin"), args.work)
    check(lines is not None and lines[1] == os.path.join(args.build, "ingot")
          and os.path.realpath(lines[2]) == os.path.realpath(os.path.join(args.build, "runtime", "libingot.so.0")),
          f"the set-up venv imports ingot and finds this build by itself: {lines or err}")


def case_pip(args):
    copy = os.path.join(args.work, "python-src")
    target = os.path.join(args.work, "site")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(os.path.join(args.source, "python"), copy,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
           "--target", target, copy]
    # With setuptools that can build wheels here, build without fetching it
    # (bdist_wheel: setuptools >= 70.1, or the wheel package); else pip
    # fetches setuptools from PyPI for an isolated build.
    p = subprocess.run([sys.executable, "-c", "import setuptools.command.bdist_wheel"], capture_output=True)
    q = subprocess.run([sys.executable, "-c", "import setuptools, wheel"], capture_output=True)
    if p.returncode == 0 or q.returncode == 0:
        cmd.insert(4, "--no-build-isolation")
    else:
        print("  note: setuptools cannot build a wheel in this python; pip fetches it (isolated build)")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout[-2000:] + p.stderr[-2000:])
    check(p.returncode == 0, "pip install ./python")
    if p.returncode != 0:
        return
    env = env_for(args, PYTHONPATH=target, INGOT_BIN=os.path.join(args.build, "ingot"),
                  INGOT_LIB=os.path.join(args.build, "runtime", "libingot.so.0"))
    model = os.path.join(args.source, "models", "digits", "model.onnx")
    bundle = os.path.join(args.work, "digits.ingot")
    code = ("import ingot, numpy as np, sys; print(ingot.__file__); "
            f"ingot.compile({model!r}, {bundle!r}, input_shapes={{'input': (2, 1, 8, 8)}}, targets=['llvm']); "
            f"print(ingot.Session({bundle!r}).run({{'input': np.ones((2, 1, 8, 8), np.float32)}})['probabilities'].shape)")
    p = subprocess.run([sys.executable, "-c", code], env=env, cwd=args.work, capture_output=True, text=True)
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and lines[0].startswith(target + os.sep) and lines[1] == "(2, 10)",
          f"the installed package compiles and runs: {lines} {p.stderr.strip()[-500:]}")
    p = subprocess.run([sys.executable, "-m", "ingot.compare", model], env=env, cwd=args.work,
                       capture_output=True, text=True)
    print(p.stdout.rstrip())
    check(p.returncode == 0 and p.stdout.rstrip().endswith("OK"), "python -m ingot.compare from the installed package")


def case_compare(args):
    model = os.path.join(args.source, "models", "digits", "model.onnx")
    env = env_for(args, PYTHONPATH=os.path.join(args.source, "python"), INGOT_BIN=os.path.join(args.build, "ingot"),
                  INGOT_LIB=os.path.join(args.build, "runtime", "libingot.so.0"))
    digits = os.path.join(args.source, "models", "digits")
    runs = [
        ("digits, one image", [model, "--input-shape", "input=1x1x8x8"], 0),
        ("digits test set with accuracy", [model, "--input", f"input={digits}/test_x.npy", "--labels",
                                           f"{digits}/test_y.npy", "--expected", f"{digits}/expected.json",
                                           "--threads", "2"], 0),
        ("--via cli", [model, "--via", "cli", "--work", os.path.join(args.work, "cli")], 0),
        ("zero tolerance finds the rounding differences", [model, "--atol", "0", "--rtol", "0"], 1),
        ("a missing model", [os.path.join(args.work, "nope.onnx")], 1),
        ("--expected without --labels", [model, "--expected", f"{digits}/expected.json"], 2),
    ]
    for what, argv, want in runs:
        p = subprocess.run([sys.executable, "-m", "ingot.compare", *argv], env=env, cwd=args.work,
                           capture_output=True, text=True)
        print("    " + (p.stdout + p.stderr).rstrip().replace("\n", "\n    "))
        last = (p.stdout.rstrip().splitlines() or [""])[-1]
        good = p.returncode == want and (want != 0 or last == "OK") and (want != 1 or "FAIL" in p.stdout)
        check(good, f"{what}: exit {p.returncode} (want {want})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["session", "locate", "pip", "compare"])
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    args.source = os.path.abspath(args.source)
    args.build = os.path.abspath(args.build)
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)
    for need in (os.path.join(args.build, "ingot"), os.path.join(args.build, "runtime", "libingot.so.0")):
        if not os.path.exists(need):
            print(f"FAIL: {need} is missing (build the ingot and ingot_runtime_shared targets)")
            return 1
    try:
        globals()[f"case_{args.case}"](args)
    except Exception:  # noqa: BLE001 - an unexpected error is a failure with its traceback
        traceback.print_exc()
        FAILURES.append("unexpected exception")
    if FAILURES:
        print(f"FAIL: {len(FAILURES)} check(s) failed")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
