"""Ingot from Python: compile ONNX models into bundles and run them.

  import ingot, numpy as np
  ingot.compile("model.onnx", "model.ingot", input_shapes={"x": (1, 3, 224, 224)},
                targets=["llvm"])
  with ingot.Session("model.ingot", threads=1) as session:
      outputs = session.run({"x": np.zeros((1, 3, 224, 224), np.float32)})

Sessions run through the C runtime (libingot.so.0, with ctypes); compile()
runs the `ingot` tool. How the package finds the two: ingot._locate (in
short: $INGOT_LIB / $INGOT_BIN, then the build tree of this venv, then an
installed prefix). `python -m ingot.compare MODEL.onnx` checks a model
against ONNX Runtime.
"""
from ._compiler import CompileError, compile
from ._locate import NotFoundError, find_tool
from .session import IngotError, Session, TensorInfo, Threads

__version__ = "0.1.0"
__all__ = ["compile", "Session", "TensorInfo", "Threads", "IngotError", "CompileError", "NotFoundError",
           "find_tool", "library_path", "runtime_version"]


def library_path():
    """Where libingot was loaded from (loads it on first use)."""
    from . import _native
    return _native.library_path()


def runtime_version():
    """libingot's version as "MAJOR.MINOR.PATCH"."""
    from . import _native
    v = _native.lib().ingot_version()
    return f"{v >> 16}.{(v >> 8) & 0xFF}.{v & 0xFF}"
