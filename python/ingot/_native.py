"""ctypes declarations of runtime/ingot.h, loaded on first use.

Only what the package calls is declared. ctypes releases the GIL around each
call, so a long ingot_session_run does not block other Python threads.
"""
import ctypes
import threading

import numpy as np

from . import _locate

# The ABI this file declares (INGOT_VERSION_MAJOR in runtime/ingot.h), and
# the least minor version whose functions and structs it declares.
ABI_MAJOR = 0
ABI_MINOR_MIN = 6  # the prototypes below include 0.6 functions

# ingot_dtype_t -> numpy (values fixed by the bundle format).
DTYPES = {
    1: np.dtype(np.float32), 2: np.dtype(np.uint8), 3: np.dtype(np.int8),
    4: np.dtype(np.int32), 5: np.dtype(np.int64), 6: np.dtype(np.bool_),
    7: np.dtype(np.float16), 8: np.dtype(np.float64), 9: np.dtype(np.int16), 10: np.dtype(np.uint16),
    11: np.dtype(np.uint32), 12: np.dtype(np.uint64),
    13: np.dtype(np.uint16),  # bfloat16: numpy has none; the raw bits as uint16
    # float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz): their raw bits as uint8;
    # int4 / uint4: one value per byte, as int8 / uint8
    14: np.dtype(np.uint8), 15: np.dtype(np.uint8), 16: np.dtype(np.uint8), 17: np.dtype(np.uint8),
    18: np.dtype(np.int8), 19: np.dtype(np.uint8),
}


class Allocator(ctypes.Structure):
    _fields_ = [("self", ctypes.c_void_p), ("fn", ctypes.c_void_p)]


class Limits(ctypes.Structure):
    _fields_ = [("max_section_bytes", ctypes.c_uint64), ("max_arena_bytes", ctypes.c_uint64),
                ("max_tensors", ctypes.c_uint32), ("max_steps", ctypes.c_uint32)]


class BundleOptions(ctypes.Structure):
    _fields_ = [("allocator", Allocator), ("limits", Limits),
                ("signature_public_key", ctypes.c_void_p), ("device", ctypes.c_char_p),
                ("target", ctypes.c_char_p), ("flags", ctypes.c_uint32)]


class SessionOptions(ctypes.Structure):
    # ingot_session_options_t of API 0.4, field for field (a shorter mirror
    # would let libingot read past the end of it).
    _fields_ = [("allocator", Allocator), ("threads", ctypes.c_uint32),
                ("arena", ctypes.c_void_p), ("arena_bytes", ctypes.c_uint64),
                ("pool", ctypes.c_void_p), ("shared_arena", ctypes.c_void_p),
                ("shared_threads", ctypes.c_void_p), ("parallel_for", ctypes.c_void_p),
                ("parallel_for_self", ctypes.c_void_p), ("parallel_for_threads", ctypes.c_uint32)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_uint32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("bytes", ctypes.c_size_t)]


_P = ctypes.c_void_p
_PROTOTYPES = {
    "ingot_version": (ctypes.c_uint32, []),
    "ingot_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "ingot_last_error": (ctypes.c_char_p, []),
    "ingot_bundle_open_file": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(BundleOptions),
                                              ctypes.POINTER(_P)]),
    "ingot_bundle_release": (None, [_P]),
    "ingot_bundle_input_count": (ctypes.c_uint32, [_P]),
    "ingot_bundle_output_count": (ctypes.c_uint32, [_P]),
    "ingot_bundle_input_info": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.POINTER(TensorInfo)]),
    "ingot_bundle_output_info": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.POINTER(TensorInfo)]),
    "ingot_bundle_arena_bytes": (ctypes.c_uint64, [_P]),
    "ingot_bundle_target": (ctypes.c_char_p, [_P]),
    "ingot_bundle_target_reason": (ctypes.c_char_p, [_P]),
    "ingot_bundle_device": (ctypes.c_char_p, [_P]),
    "ingot_session_create": (ctypes.c_int, [_P, ctypes.POINTER(SessionOptions), ctypes.POINTER(_P)]),
    "ingot_session_release": (None, [_P]),
    "ingot_session_input_data": (_P, [_P, ctypes.c_uint32]),
    "ingot_session_output_data": (_P, [_P, ctypes.c_uint32]),
    "ingot_session_run": (ctypes.c_int, [_P]),
    # 0.3
    "ingot_bundle_input_index": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint32)]),
    "ingot_bundle_output_index": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint32)]),
    "ingot_session_cancel": (None, [_P]),
    # 0.4
    "ingot_bundle_metadata_count": (ctypes.c_uint32, [_P]),
    "ingot_bundle_metadata_entry": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p),
                                                   ctypes.POINTER(ctypes.c_char_p)]),
    "ingot_session_bind_input": (ctypes.c_int, [_P, ctypes.c_uint32, _P, ctypes.c_uint64]),
    "ingot_session_bind_output": (ctypes.c_int, [_P, ctypes.c_uint32, _P, ctypes.c_uint64]),
    "ingot_threads_create": (ctypes.c_int, [ctypes.c_uint32, Allocator, ctypes.POINTER(_P)]),
    "ingot_threads_release": (None, [_P]),
    # 0.5
    "ingot_bundle_output_shape_varies": (ctypes.c_int, [_P, ctypes.c_uint32]),
    "ingot_session_output_shape": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32),
                                                  ctypes.POINTER(ctypes.c_int64)]),
    # 0.6
    "ingot_bundle_input_shape_varies": (ctypes.c_int, [_P, ctypes.c_uint32]),
    "ingot_bundle_input_range": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32),
                                                ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64)]),
    "ingot_session_set_input_shape": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.c_uint32,
                                                     ctypes.POINTER(ctypes.c_int64)]),
}

_lock = threading.Lock()
_lib = None
_lib_path = None


def _load():
    errors = []
    for candidate in _locate.library_candidates():
        try:
            return ctypes.CDLL(candidate), candidate
        except OSError as e:
            errors.append(f"{candidate}: {e}")
    raise _locate.NotFoundError(
        "libingot.so.0 could not be loaded; set INGOT_LIB to its path (build it with "
        "`cmake --build BUILD --target ingot_runtime_shared`; tried " + "; ".join(errors) + ")")


def lib():
    """The loaded runtime, its functions declared. Raises NotFoundError."""
    global _lib, _lib_path
    with _lock:
        if _lib is None:
            handle, path = _load()
            for name, (restype, argtypes) in _PROTOTYPES.items():
                try:
                    fn = getattr(handle, name)
                except AttributeError:
                    raise _locate.NotFoundError(
                        f"{path} has no function {name}: not an Ingot runtime this package can use")
                fn.restype = restype
                fn.argtypes = argtypes
            version = handle.ingot_version()
            major, minor = version >> 16, (version >> 8) & 0xFF
            if major != ABI_MAJOR or minor < ABI_MINOR_MIN:
                raise _locate.NotFoundError(
                    f"{path} is Ingot runtime version {major}.{minor}; this package needs "
                    f"{ABI_MAJOR}.{ABI_MINOR_MIN} or a later {ABI_MAJOR}.x")
            _lib, _lib_path = handle, path
        return _lib


def library_path():
    """What libingot was loaded from (loading it if needed)."""
    lib()
    return _lib_path


def text(value):
    return value.decode("utf-8", "replace") if value is not None else ""
