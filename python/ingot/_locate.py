"""Where the package finds libingot.so.0 (the runtime) and the `ingot` tool.

The package is pure Python: it loads the runtime with ctypes and compiles by
running the `ingot` tool (the compiler exists only as a static library,
driver/, linked into that tool). Both are looked for in this order, the first
that exists wins:

  the tool, `ingot`:
    1. $INGOT_BIN (a path; when set it must exist, nothing else is tried)
    2. ingot/bin/ingot inside this package (a package shipped with its tools)
    3. the build tree this venv belongs to: scripts/setup.sh makes the venv at
       $INGOT_BUILD_DIR/venv, so sys.prefix/../ingot next to a CMakeCache.txt
    4. `ingot` on PATH (e.g. after `cmake --install` to a prefix)

  the runtime, libingot.so.0:
    1. $INGOT_LIB (a path; when set it must exist, nothing else is tried)
    2. ingot/lib/libingot.so.0 inside this package
    3. beside the tool found above: <dir>/runtime/libingot.so.0 (a build
       tree), <dir>/../lib*/libingot.so.0 or <dir>/../lib/*/libingot.so.0
       (an installed prefix), so that the two come from the same build
    4. the system's loader: "libingot.so.0" (LD_LIBRARY_PATH, ld.so.cache)
"""
import glob
import os
import shutil
import sys

SONAME = "libingot.so.0"
_HERE = os.path.dirname(os.path.abspath(__file__))


class NotFoundError(RuntimeError):
    """libingot or the ingot tool could not be found (see ingot._locate)."""


def _from_env(var, what):
    path = os.environ.get(var)
    if not path:
        return None
    if not os.path.isfile(path):
        raise NotFoundError(f"${var} is set to '{path}', which is not a file ({what})")
    return os.path.abspath(path)


def _build_tree_of_venv():
    """The build folder whose venv runs us (scripts/setup.sh), or None."""
    parent = os.path.dirname(os.path.abspath(sys.prefix))
    if os.path.isfile(os.path.join(parent, "CMakeCache.txt")):
        return parent
    return None


def find_tool(required=True):
    """The path of the `ingot` tool, or None (required=False) when none is found."""
    found = _from_env("INGOT_BIN", "the ingot tool")
    if found:
        return found
    looked = ["$INGOT_BIN (not set)"]
    candidates = [os.path.join(_HERE, "bin", "ingot")]
    tree = _build_tree_of_venv()
    if tree:
        candidates.append(os.path.join(tree, "ingot"))
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        looked.append(path)
    on_path = shutil.which("ingot")
    if on_path:
        return os.path.abspath(on_path)
    looked.append("PATH")
    if not required:
        return None
    raise NotFoundError("the ingot tool was not found; set INGOT_BIN to its path (looked at: "
                        + ", ".join(looked) + ")")


def library_candidates():
    """Paths to try for libingot.so.0, in order; the last entry is the bare
    SONAME for the system loader. $INGOT_LIB, when set, is the only one."""
    found = _from_env("INGOT_LIB", "libingot.so.0")
    if found:
        return [found]
    paths = [os.path.join(_HERE, "lib", SONAME)]
    tool = None
    try:
        tool = find_tool(required=False)
    except NotFoundError:
        pass  # a bad $INGOT_BIN is reported by compile(), not by the runtime's search
    if tool:
        bindir = os.path.dirname(tool)
        prefix = os.path.dirname(bindir)
        paths.append(os.path.join(bindir, "runtime", SONAME))
        paths += sorted(glob.glob(os.path.join(prefix, "lib*", SONAME)))
        paths += sorted(glob.glob(os.path.join(prefix, "lib", "*", SONAME)))
    seen, unique = set(), []
    for path in paths:
        if path not in seen and os.path.isfile(path):
            seen.add(path)
            unique.append(path)
    return unique + [SONAME]
