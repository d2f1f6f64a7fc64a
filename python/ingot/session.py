"""ingot.Session: a bundle opened with libingot and one session on it."""
import collections
import collections.abc
import ctypes
import os

import numpy as np

from . import _native

TensorInfo = collections.namedtuple("TensorInfo", "name dtype shape shape_min", defaults=(None,))
TensorInfo.__doc__ = ("A bundle's input or output: its name, numpy dtype and shape (a tuple); for an input "
                      "compiled for a range of sizes, shape is the largest and shape_min the least (else None).")


class IngotError(RuntimeError):
    """A failure reported by libingot or by the ingot tool.

    status: the runtime's status name ("corrupt", "i/o error", "signature
    refused", "cancelled", ...) or "compile" for a failed `ingot compile`;
    code: the ingot_status_t value (None for compile); the message is the
    runtime's or the tool's own."""

    def __init__(self, message, status=None, code=None):
        super().__init__(message)
        self.status = status
        self.code = code


def _check(lib, status, what):
    if status != 0:
        name = _native.text(lib.ingot_status_name(status))
        detail = _native.text(lib.ingot_last_error())
        raise IngotError(f"{what}: {detail or name} ({name})", status=name, code=status)


def _describe(info):
    if info.shape_min is None:
        return f"{info.dtype.name} {list(info.shape)}"
    dims = ", ".join(str(hi) if lo == hi else f"{lo}..{hi}" for lo, hi in zip(info.shape_min, info.shape))
    return f"{info.dtype.name} [{dims}]"


def _dtype_text(dtype):
    # '>f4' and '<f4' are both "float32" by name; say which one was given.
    if dtype.byteorder not in "=|" and dtype.byteorder != np.dtype(dtype.type).byteorder:
        return f"{dtype.name} ({'big' if dtype.byteorder == '>' else 'little'}-endian)"
    return dtype.name


class _Handles:
    """The native bundle and session; released when the last reference goes,
    which includes every array that points into the session's arena."""

    def __init__(self, lib):
        self.lib = lib
        self.bundle = ctypes.c_void_p()
        self.session = ctypes.c_void_p()

    def __del__(self):
        # The bundle must outlive its session (runtime/ingot.h).
        if self.session:
            self.lib.ingot_session_release(self.session)
            self.session = ctypes.c_void_p()
        if self.bundle:
            self.lib.ingot_bundle_release(self.bundle)
            self.bundle = ctypes.c_void_p()


class _ArenaView:
    """numpy's view of a tensor in a session's arena; keeps the arena alive."""

    def __init__(self, handles, pointer, info, writable):
        self._handles = handles
        self.__array_interface__ = {
            "version": 3, "shape": tuple(info.shape), "typestr": info.dtype.str,
            "data": (pointer, not writable),
        }


def _arena_array(handles, pointer, info, writable):
    if int(np.prod(info.shape, dtype=np.int64)) == 0:
        array = np.empty(info.shape, info.dtype)  # no bytes: nothing to point at
        array.flags.writeable = writable
        return array
    if pointer is None:
        raise IngotError(f"tensor '{info.name}' has no memory in this session", status="internal")
    array = np.asarray(_ArenaView(handles, pointer, info, writable))
    if not writable:
        array.flags.writeable = False
    return array


class Session:
    """Opens the bundle at bundle_path and creates one session on it.

      session = ingot.Session("model.ingot", threads=1)
      outputs = session.run({"input": x})       # {output name: ndarray}

    threads: worker threads for parallel loops (0: one per online CPU).
    device: which kind of code variant to load: None/"auto", "cpu", "cuda" or
    "rocm" (ingot_bundle_options_t.device). public_key: the 32 bytes of an
    Ed25519 public key; the bundle must then carry a valid signature by it.
    shared_threads: an ingot.Threads whose pool this session shares with
    others (threads is then ignored).

    Memory: inputs and outputs live in the session's arena unless bound to
    arrays of the caller (bind_input, bind_output: no copy at all, the
    kernels read and write the arrays). run() copies each input into the
    arena once (straight from the array's buffer, whatever its strides), or
    not at all when the array given is the arena's own (see input()). Outputs
    are copied into new arrays by default; run(copy_outputs=False) returns
    read-only views of the arena instead, with no copy, which the next run()
    overwrites.

    One session runs on one thread at a time; run() releases the GIL while
    the model runs. close() (or leaving a `with` block) ends the session; its
    memory is freed once no array returned by input() or run(copy_outputs=
    False) refers to it any more.
    """

    def __init__(self, bundle_path, threads=1, device=None, public_key=None, shared_threads=None):
        path = os.fspath(bundle_path)
        if isinstance(threads, bool) or not isinstance(threads, int):
            raise TypeError(f"threads must be an int, not {type(threads).__name__}")
        if threads < 0 or threads > 0xFFFFFFFF:
            raise ValueError(f"threads must be 0 (one per CPU) or more, not {threads}")
        if device is not None and not isinstance(device, str):
            raise TypeError(f"device must be a str or None, not {type(device).__name__}")
        key = None
        if public_key is not None:
            if not isinstance(public_key, (bytes, bytearray)):
                raise TypeError(f"public_key must be bytes, not {type(public_key).__name__}")
            if len(public_key) != 32:
                raise ValueError(f"public_key must be 32 bytes (an Ed25519 key), not {len(public_key)}")
            key = ctypes.create_string_buffer(bytes(public_key), 32)
        if not os.path.exists(path):
            raise FileNotFoundError(2, "bundle not found", path)
        if os.path.isdir(path):
            raise IsADirectoryError(21, "a bundle must be a file, this is a folder", path)

        lib = _native.lib()
        handles = _Handles(lib)
        options = _native.BundleOptions()
        options.device = device.encode() if device is not None else None
        options.signature_public_key = ctypes.cast(key, ctypes.c_void_p) if key is not None else None
        _check(lib, lib.ingot_bundle_open_file(os.fsencode(path), ctypes.byref(options),
                                               ctypes.byref(handles.bundle)),
               f"cannot open bundle '{path}'")
        self._inputs = self._infos(lib, handles.bundle, lib.ingot_bundle_input_count,
                                   lib.ingot_bundle_input_info, "input")
        for i, info in enumerate(self._inputs):
            if lib.ingot_bundle_input_shape_varies(handles.bundle, i):
                rank, lo, hi = ctypes.c_uint32(), (ctypes.c_int64 * 8)(), (ctypes.c_int64 * 8)()
                _check(lib, lib.ingot_bundle_input_range(handles.bundle, i, ctypes.byref(rank), lo, hi), f"input {i}")
                self._inputs[i] = info._replace(shape_min=tuple(lo[d] for d in range(rank.value)))
        self._outputs = self._infos(lib, handles.bundle, lib.ingot_bundle_output_count,
                                    lib.ingot_bundle_output_info, "output")
        session_options = _native.SessionOptions()
        session_options.threads = threads
        if shared_threads is not None:
            if not isinstance(shared_threads, Threads):
                raise TypeError(f"shared_threads must be an ingot.Threads, not {type(shared_threads).__name__}")
            if shared_threads._holder is None:
                raise ValueError("shared_threads is closed")
            session_options.threads = 0
            session_options.shared_threads = shared_threads._holder.handle
        _check(lib, lib.ingot_session_create(handles.bundle, ctypes.byref(session_options),
                                             ctypes.byref(handles.session)),
               f"cannot create a session on '{path}'")
        self._lib = lib
        self._handles = handles
        # The pool must outlive the session: its handles hold it.
        handles.threads = shared_threads._holder if shared_threads is not None else None
        self._path = path
        self._bound = {}
        self._input_index = {info.name: i for i, info in enumerate(self._inputs)}
        self._input_views = [
            _arena_array(handles, lib.ingot_session_input_data(handles.session, i), info, True)
            for i, info in enumerate(self._inputs)]
        self._output_views = [
            _arena_array(handles, lib.ingot_session_output_data(handles.session, i), info, False)
            for i, info in enumerate(self._outputs)]

    @staticmethod
    def _infos(lib, bundle, count_fn, info_fn, kind):
        infos = []
        for i in range(count_fn(bundle)):
            raw = _native.TensorInfo()
            _check(lib, info_fn(bundle, i, ctypes.byref(raw)), f"{kind} {i}")
            dtype = _native.DTYPES.get(raw.dtype)
            name = _native.text(raw.name)
            if dtype is None:
                raise IngotError(f"{kind} '{name}' has element type {raw.dtype}, which this "
                                 f"package does not know", status="unsupported")
            infos.append(TensorInfo(name, dtype, tuple(raw.dims[d] for d in range(raw.rank))))
        return infos

    # -- what the bundle holds ------------------------------------------------

    @property
    def inputs(self):
        """The model's inputs, in order: [TensorInfo(name, dtype, shape)]."""
        return list(self._inputs)

    @property
    def outputs(self):
        """The model's outputs, in order: [TensorInfo(name, dtype, shape)]."""
        return list(self._outputs)

    @property
    def path(self):
        return self._path

    def _bundle(self):
        if self._handles is None:
            raise ValueError(f"the session on '{self._path}' is closed")
        return self._handles.bundle

    @property
    def target(self):
        """The target of the code variant loaded ("llvm x86-64-v3", "c", ...)."""
        return _native.text(self._lib.ingot_bundle_target(self._bundle()))

    @property
    def target_reason(self):
        """Why that variant was picked (ingot_bundle_target_reason)."""
        return _native.text(self._lib.ingot_bundle_target_reason(self._bundle()))

    @property
    def device(self):
        """"cpu", "cuda" or "rocm"."""
        return _native.text(self._lib.ingot_bundle_device(self._bundle()))

    @property
    def arena_bytes(self):
        return int(self._lib.ingot_bundle_arena_bytes(self._bundle()))

    @property
    def metadata(self):
        """What the bundle was made from (ingot_bundle_metadata): {key: value},
        e.g. name, model_version, producer, source_sha256, compile_flags;
        {} for a bundle written before Ingot 0.4."""
        bundle = self._bundle()
        out = {}
        for i in range(self._lib.ingot_bundle_metadata_count(bundle)):
            key, value = ctypes.c_char_p(), ctypes.c_char_p()
            _check(self._lib, self._lib.ingot_bundle_metadata_entry(bundle, i, ctypes.byref(key),
                                                                    ctypes.byref(value)), "metadata")
            out[_native.text(key.value)] = _native.text(value.value)
        return out

    def input_index(self, name):
        """The position of input `name` in Session.inputs (libingot's lookup);
        IngotError (status "not found") for an unknown name."""
        return self._index(name, self._lib.ingot_bundle_input_index, "input")

    def output_index(self, name):
        """The position of output `name` in Session.outputs."""
        return self._index(name, self._lib.ingot_bundle_output_index, "output")

    def _index(self, name, fn, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} names are str, not {type(name).__name__}")
        index = ctypes.c_uint32()
        _check(self._lib, fn(self._bundle(), name.encode(), ctypes.byref(index)), f"{kind} {name!r}")
        return int(index.value)

    def cancel(self):
        """Asks a run in progress (in another thread) to stop before its next
        step; it then raises IngotError with status "cancelled". A cancel
        between runs cancels the next run (ingot_session_cancel)."""
        handles = self._handles
        if handles is not None:
            self._lib.ingot_session_cancel(handles.session)

    # -- caller-owned buffers ----------------------------------------------------

    def _bind(self, kind, name, array):
        infos = self._inputs if kind == "input" else self._outputs
        index = self.input_index(name) if kind == "input" else self.output_index(name)
        info = infos[index]
        handles = self._handles
        fn = self._lib.ingot_session_bind_input if kind == "input" else self._lib.ingot_session_bind_output
        views = self._input_views if kind == "input" else self._output_views
        if array is None:
            _check(self._lib, fn(handles.session, index, None, 0), f"unbind {kind} '{name}'")
            self._bound.pop((kind, index), None)
            pointer = (self._lib.ingot_session_input_data(handles.session, index) if kind == "input"
                       else self._lib.ingot_session_output_data(handles.session, index))
            views[index] = _arena_array(handles, pointer, info, kind == "input")
            return
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{kind} '{name}': expected a numpy.ndarray, got {type(array).__name__}")
        if array.dtype != info.dtype or tuple(array.shape) != info.shape:
            raise ValueError(f"{kind} '{name}': the array is {_dtype_text(array.dtype)} {list(array.shape)}, "
                             f"the model's is {_describe(info)}")
        if not array.flags.c_contiguous:
            raise ValueError(f"{kind} '{name}': the array must be C-contiguous")
        if kind == "output" and not array.flags.writeable:
            raise ValueError(f"output '{name}': the array must be writable")
        _check(self._lib, fn(handles.session, index, array.ctypes.data, array.nbytes), f"bind {kind} '{name}'")
        self._bound[(kind, index)] = array  # kept alive while bound
        views[index] = array

    def bind_input(self, name, array):
        """Runs read input `name` straight from `array` (C-contiguous, the
        input's exact dtype and shape; kept referenced while bound): no copy.
        run({name: other}) then copies `other` into `array`. None unbinds."""
        self._bundle()
        self._bind("input", name, array)

    def bind_output(self, name, array):
        """Runs write output `name` straight into `array` (writable,
        C-contiguous, exact dtype and shape); run(copy_outputs=False) returns
        `array` itself for it. Do not touch it while a run is in progress.
        None unbinds."""
        self._bundle()
        self._bind("output", name, array)

    # -- running --------------------------------------------------------------

    def input(self, name):
        """A writable array over input `name` in the session's arena. Filling
        it and then calling run() (or run({name: that array})) copies nothing."""
        self._bundle()
        if name not in self._input_index:
            raise ValueError(self._unknown_input(name))
        return self._input_views[self._input_index[name]]

    def _unknown_input(self, name):
        known = ", ".join(f"'{i.name}' ({_describe(i)})" for i in self._inputs)
        return f"the model has no input {name!r} (its inputs: {known})"

    def _feed(self, feeds):
        if not isinstance(feeds, collections.abc.Mapping):
            raise TypeError(f"run() takes a dict {{input name: numpy.ndarray}}, not "
                            f"{type(feeds).__name__}")
        for name in feeds:
            if not isinstance(name, str):
                raise TypeError(f"input names are str, not {type(name).__name__} ({name!r})")
            if name not in self._input_index:
                raise ValueError(self._unknown_input(name))
        missing = [i for i in self._inputs if i.name not in feeds]
        if missing:
            raise ValueError("missing input" + ("s " if len(missing) > 1 else " ")
                             + ", ".join(f"'{i.name}' ({_describe(i)})" for i in missing))
        # Check everything before writing anything into the arena.
        for info in self._inputs:
            value = feeds[info.name]
            if not isinstance(value, np.ndarray):
                raise TypeError(f"input '{info.name}': expected a numpy.ndarray of "
                                f"{_describe(info)}, got {type(value).__name__}")
            if value.dtype != info.dtype:
                raise TypeError(f"input '{info.name}': dtype {_dtype_text(value.dtype)}, the model "
                                f"takes {info.dtype.name} (convert with .astype(np.{info.dtype.name}))")
            if info.shape_min is not None:
                if value.ndim != len(info.shape):
                    raise ValueError(f"input '{info.name}': shape {list(value.shape)}, the model takes "
                                     f"{_describe(info)}")
                for d, (n, lo, hi) in enumerate(zip(value.shape, info.shape_min, info.shape)):
                    if not lo <= n <= hi:
                        raise ValueError(f"input '{info.name}': dim {d} is {n}, outside its range {lo}..{hi} "
                                         f"(the model takes {_describe(info)})")
            elif tuple(value.shape) != info.shape:
                raise ValueError(f"input '{info.name}': shape {list(value.shape)}, the model takes "
                                 f"{list(info.shape)}")
        for index, (info, view) in enumerate(zip(self._inputs, self._input_views)):
            value = feeds[info.name]
            if info.shape_min is not None:
                # The run's shape; the data dense in it from the buffer's start.
                dims = (ctypes.c_int64 * 8)(*value.shape)
                _check(self._lib, self._lib.ingot_session_set_input_shape(self._handles.session, index, value.ndim,
                                                                          dims), f"input '{info.name}'")
                if tuple(value.shape) != info.shape:
                    dense = np.ascontiguousarray(value)
                    ctypes.memmove(view.ctypes.data, dense.ctypes.data, dense.nbytes)
                    continue
            if value.__array_interface__["data"][0] == view.__array_interface__["data"][0] and \
                    value.strides == view.strides:
                continue  # the arena's own memory (Session.input): nothing to copy
            if value.flags.c_contiguous:
                ctypes.memmove(view.ctypes.data, value.ctypes.data, value.nbytes)
            else:
                np.copyto(view, value, casting="no")

    def run(self, feeds=None, copy_outputs=True):
        """Runs the model once and returns {output name: ndarray}.

        feeds: {input name: ndarray} naming every input, each of the exact
        dtype and shape of Session.inputs (else ValueError or TypeError naming
        the input); an input with shape_min takes any shape from shape_min to
        shape, dim by dim, and the outputs come in the shapes the run gives
        them. None runs on what the arrays from input() hold (a ranged input
        in the shape of its last feed).
        copy_outputs: True (default) returns new arrays; False returns
        read-only views of the session's arena, valid until the next run."""
        handles = self._handles
        if handles is None:
            raise ValueError(f"the session on '{self._path}' is closed")
        if feeds is not None:
            self._feed(feeds)
        _check(self._lib, self._lib.ingot_session_run(handles.session), f"run of '{self._path}'")
        views = [self._run_shape(i, view) for i, view in enumerate(self._output_views)]
        if copy_outputs:
            return {info.name: view.copy() for info, view in zip(self._outputs, views)}
        return {info.name: view for info, view in zip(self._outputs, views)}

    def _run_shape(self, index, view):
        """Output `index`'s view in the shape the last run computed, for an
        output whose size depends on the data (NonZero, Unique, ...): its
        first elements, dense in that shape."""
        lib, handles = self._lib, self._handles
        if not lib.ingot_bundle_output_shape_varies(handles.bundle, index):
            return view
        rank = ctypes.c_uint32()
        dims = (ctypes.c_int64 * 8)()
        _check(lib, lib.ingot_session_output_shape(handles.session, index, ctypes.byref(rank), dims),
               f"shape of output {index} of '{self._path}'")
        shape = tuple(dims[d] for d in range(rank.value))
        return view.reshape(-1)[:int(np.prod(shape, dtype=np.int64))].reshape(shape)

    def close(self):
        """Ends the session (idempotent); see the class's note on memory."""
        self._handles = None
        self._bound = {}
        self._input_views = []
        self._output_views = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        state = "closed" if self._handles is None else self.target
        ins = ", ".join(f"{i.name}: {_describe(i)}" for i in self._inputs)
        outs = ", ".join(f"{o.name}: {_describe(o)}" for o in self._outputs)
        return f"<ingot.Session '{self._path}' ({state}) inputs [{ins}] outputs [{outs}]>"


class _PoolHandle:
    """The native ingot_threads_t; released when the last holder (the Threads
    object, or a session's handles) lets go, so after every session on it."""

    def __init__(self, lib, handle):
        self.lib = lib
        self.handle = handle

    def __del__(self):
        if self.handle:
            self.lib.ingot_threads_release(self.handle)
            self.handle = ctypes.c_void_p()


class Threads:
    """A thread pool that sessions share (ingot_threads_t): pass it as
    Session(..., shared_threads=pool). count: threads, the calling one
    included (0: one per online CPU). Sessions on one pool may run at the
    same time in different threads; one parallel loop uses the pool at a
    time and the others run on their own thread meanwhile. The native pool
    is released once close() was called (or the object collected) and no
    session on it is left."""

    def __init__(self, count=0):
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"count must be an int >= 0, not {count!r}")
        lib = _native.lib()
        handle = ctypes.c_void_p()
        _check(lib, lib.ingot_threads_create(count, _native.Allocator(), ctypes.byref(handle)),
               "cannot create a thread pool")
        self._holder = _PoolHandle(lib, handle)

    def close(self):
        self._holder = None
