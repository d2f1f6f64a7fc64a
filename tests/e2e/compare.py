#!/usr/bin/env python3
"""The tests' entry to `python -m ingot.compare` (python/ingot/compare.py),
from the source tree: runs the bundle with `ingot run` (--via cli) unless told
otherwise, as the CTest tests and tests/aarch64 (an emulated `ingot`) expect.

  compare.py MODEL.onnx --ingot BUILD/ingot [ingot.compare options...]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from ingot import compare  # noqa: E402

if __name__ == "__main__":
    sys.exit(compare.main(prog="compare.py", default_via="cli"))
