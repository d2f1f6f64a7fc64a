"""ingot.compile: runs `ingot compile` (the compiler is no shared library;
the tool is found as ingot._locate says)."""
import collections.abc
import os
import subprocess

from . import _locate
from .session import IngotError


class CompileError(IngotError):
    """`ingot compile` failed; the message is the tool's own. returncode: its
    exit status (1 failure, 2 bad command line); stderr: all it printed."""

    def __init__(self, message, returncode, stderr):
        super().__init__(message, status="compile")
        self.returncode = returncode
        self.stderr = stderr


def _shape_flags(input_shapes):
    if input_shapes is None:
        return []
    if not isinstance(input_shapes, collections.abc.Mapping):
        raise TypeError(f"input_shapes must be a dict {{input name: shape}}, not "
                        f"{type(input_shapes).__name__}")
    flags = []
    for name, shape in input_shapes.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"input_shapes: input names are non-empty str, not {name!r}")
        if isinstance(shape, (str, bytes)) or not isinstance(shape, collections.abc.Iterable):
            raise TypeError(f"input_shapes['{name}']: a shape is a tuple of ints, not {shape!r}")
        dims = list(shape)
        if not dims:
            # A scalar input has no dims to fix; `ingot compile` needs none.
            raise ValueError(f"input_shapes['{name}']: an empty shape fixes nothing; leave the "
                             f"input out")
        texts = []
        for d in dims:
            # A dim is an int, or a (least, largest) pair: a range the bundle takes.
            ends = list(d) if isinstance(d, tuple) and len(d) == 2 else [d]
            for e in ends:
                if isinstance(e, bool) or not hasattr(e, "__index__"):
                    raise TypeError(f"input_shapes['{name}']: dimension {d!r} is not an int or a "
                                    f"(least, largest) pair of ints")
                if e.__index__() < 0:
                    raise ValueError(f"input_shapes['{name}']: dimension {d} is negative")
            texts.append("..".join(str(e.__index__()) for e in ends))
        flags += ["--input-shape", f"{name}={'x'.join(texts)}"]
    return flags


def _target_flags(targets):
    if targets is None:
        return []
    if isinstance(targets, str):
        targets = [targets]
    if not isinstance(targets, collections.abc.Iterable):
        raise TypeError(f"targets must be a list of str, not {type(targets).__name__}")
    targets = list(targets)
    if not targets:
        raise ValueError("targets is empty; leave it out (None) for the default target")
    flags = []
    for t in targets:
        if not isinstance(t, str) or not t.strip():
            raise TypeError(f"targets: each target is a non-empty str (e.g. 'llvm'), not {t!r}")
        flags += ["--target", t]
    return flags


def compile(model_path, output_path, input_shapes=None, targets=None, tuning_log=None,
            tool=None):
    """Compiles the ONNX model at model_path into the bundle output_path.

    input_shapes: {input name: shape} fixing inputs' shapes, e.g.
    {"x": (1, 3, 224, 224)} (symbolic dimensions need it). targets: code
    targets, one variant each, as `ingot compile --target` takes them
    (["llvm"], ["llvm", "c"], ["llvm -mcpu=x86-64-v3"]); None: the tool's
    default. tuning_log: a tuning log (path), or "none" for the default
    schedules. tool: the `ingot` tool to run (default: found as
    ingot._locate describes).

    Returns output_path. Raises FileNotFoundError for a missing model,
    TypeError/ValueError for bad arguments, and CompileError with the tool's
    message when `ingot compile` fails."""
    model = os.fspath(model_path)
    out = os.fspath(output_path)
    if not os.path.isfile(model):
        raise FileNotFoundError(2, "ONNX model not found", model)
    cmd = [os.fspath(tool) if tool is not None else _locate.find_tool(), "compile", model, "-o", out,
           "-q", *_shape_flags(input_shapes), *_target_flags(targets)]
    if tuning_log is not None:
        cmd += ["--tuning-log", os.fspath(tuning_log)]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        raise _locate.NotFoundError(f"cannot run the ingot tool '{cmd[0]}': {e}") from None
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr or p.stdout).strip().splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("ingot: error: ")]
        message = "; ".join(ln[len("ingot: error: "):] for ln in errors) or \
            (lines[-1] if lines else f"exited with status {p.returncode}")
        raise CompileError(f"ingot compile {model}: {message}", p.returncode, p.stderr)
    return out
