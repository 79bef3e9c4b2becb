"""_rt -- ``acceltrace.rt()``: the runtime-API table (include/acceltrace_rt.h)
as a Python object, the counterpart of ``torch.cuda.cudart()`` and
torch_npu's ``torch.npu.npurt()``.

Like npurt, calls take plain integers (addresses as ints) and return the
backend's plain integer error code (0 = success); ``error_string(code)``
turns one into text. ``mem_get_info`` and ``device_count`` return values
and raise :class:`RtError` on failure, like ``cudaMemGetInfo`` in torch.
``rt()`` returns the same object on every call (per backend name).

The C table layout is mirrored in :class:`_ActRt` below -- the one place to
change if include/acceltrace_rt.h changes.
"""

import ctypes
import threading

from . import _lib
from ._errors import AcceltraceError

c = ctypes

# Flags of host_register (ACT_RT_HOST_REG_*, include/acceltrace_rt.h: the
# CANN values).
HOST_REG_PINNED = 0x10000000
HOST_REG_MAPPED = 0x2

# Result codes (ACT_RT_*).
SUCCESS = 0
ERROR_INVALID_PARAM = -1001
ERROR_NOT_REGISTERED = -1002
ERROR_ALREADY_REGISTERED = -1003
ERROR_INVALID_HANDLE = -1004
ERROR_INVALID_DEVICE = -1005
ERROR_NO_LIBRARY = -1006
ERROR_NO_SYMBOL = -1007
ERROR_NO_DEVICE = -1008
ERROR_NOMEM = -1009
ERROR_UNSUPPORTED = -1010
ERROR_CONFIG = -1011

# mem_get_info's "free" when the backend cannot know it (ACT_RT_MEM_UNKNOWN).
MEM_UNKNOWN = (1 << (8 * c.sizeof(c.c_size_t))) - 1


class RtError(AcceltraceError):
    """A runtime-API call returned an error code."""


class _ActRt(c.Structure):
    """Mirror of ``struct act_rt`` (include/acceltrace_rt.h)."""

    _fields_ = [
        ("struct_size", c.c_size_t),
        ("name", c.c_char_p),
        ("host_register", c.CFUNCTYPE(c.c_int, c.c_void_p, c.c_size_t, c.c_uint)),
        ("host_unregister", c.CFUNCTYPE(c.c_int, c.c_void_p)),
        ("stream_create", c.CFUNCTYPE(c.c_int, c.POINTER(c.c_void_p))),
        ("stream_destroy", c.CFUNCTYPE(c.c_int, c.c_void_p)),
        ("profiler_start", c.CFUNCTYPE(c.c_int)),
        ("profiler_stop", c.CFUNCTYPE(c.c_int)),
        ("mem_get_info", c.CFUNCTYPE(c.c_int, c.c_int, c.POINTER(c.c_size_t),
                                     c.POINTER(c.c_size_t))),
        ("device_count", c.CFUNCTYPE(c.c_int, c.POINTER(c.c_int))),
        ("synchronize", c.CFUNCTYPE(c.c_int)),
        ("error_string", c.CFUNCTYPE(c.c_char_p, c.c_int)),
    ]


class Runtime:
    """One backend's runtime-API table. Obtain it with :func:`rt`."""

    HOST_REG_PINNED = HOST_REG_PINNED
    HOST_REG_MAPPED = HOST_REG_MAPPED
    MEM_UNKNOWN = MEM_UNKNOWN

    def __init__(self, table):
        self._t = table.contents
        self.name = (self._t.name or b"").decode("utf-8", "replace")

    def __repr__(self):
        return "<acceltrace.rt %r>" % self.name

    def host_register(self, ptr, size, flags):
        return self._t.host_register(c.c_void_p(int(ptr) or None), int(size), int(flags))

    def host_unregister(self, ptr):
        return self._t.host_unregister(c.c_void_p(int(ptr) or None))

    def stream_create(self, slot):
        """``slot`` is the address of a pointer-sized slot (as in npurt:
        ``ctypes.addressof(ctypes.c_void_p())``); the stream is written there."""
        return self._t.stream_create(c.cast(c.c_void_p(int(slot) or None),
                                            c.POINTER(c.c_void_p)))

    def stream_destroy(self, stream):
        return self._t.stream_destroy(c.c_void_p(int(stream) or None))

    def profiler_start(self):
        return self._t.profiler_start()

    def profiler_stop(self):
        return self._t.profiler_stop()

    def synchronize(self):
        return self._t.synchronize()

    def error_string(self, code):
        s = self._t.error_string(int(code))
        return s.decode("utf-8", "replace") if s else "unknown error %d" % code

    def _raise(self, call, rc):
        detail = last_error()
        raise RtError("%s.%s failed: %s (%d)%s" % (self.name, call, self.error_string(rc), rc,
                                                  ": " + detail if detail else ""), code=rc)

    def mem_get_info(self, device=0):
        """(free, total) bytes of ``device``; free is None when the backend
        cannot know it (OpenCL)."""
        free, total = c.c_size_t(0), c.c_size_t(0)
        rc = self._t.mem_get_info(int(device), c.byref(free), c.byref(total))
        if rc != 0:
            self._raise("mem_get_info", rc)
        return (None if free.value == MEM_UNKNOWN else free.value), total.value

    def device_count(self):
        n = c.c_int(0)
        rc = self._t.device_count(c.byref(n))
        if rc != 0:
            self._raise("device_count", rc)
        return n.value


_cache = {}
_lock = threading.Lock()


def _declare():
    lib = _lib.lib()
    for name, args in (("act_rt", []), ("act_rt_for", [c.c_char_p])):
        if _lib.has(name):
            fn = getattr(lib, name)
            fn.restype = c.POINTER(_ActRt)
            fn.argtypes = args
    if _lib.has("act_rt_last_error"):
        lib.act_rt_last_error.restype = c.c_char_p
        lib.act_rt_last_error.argtypes = []


def last_error():
    """Details of the last runtime-table failure on this thread ("" if none)."""
    _declare()
    if not _lib.has("act_rt_last_error"):
        return ""
    return (_lib.lib().act_rt_last_error() or b"").decode("utf-8", "replace")


def rt(backend=None):
    """The runtime-API table of the active backend (or of ``backend``:
    "opencl", "cuda", "ascend"); the same object on every call."""
    with _lock:
        if backend in _cache:
            return _cache[backend]
        _declare()
        if backend is None:
            table = _lib.require("act_rt")()
        else:
            table = _lib.require("act_rt_for")(_lib.encode(backend, "backend"))
        if not table:
            why = last_error()
            raise RtError("acceltrace.rt(%r): no runtime-API table%s"
                          % (backend, ": " + why if why else ""))
        if table.contents.struct_size < c.sizeof(_ActRt):
            raise RtError("acceltrace.rt(%r): the library's table is older than this package's "
                          "(%d < %d bytes)" % (backend, table.contents.struct_size,
                                               c.sizeof(_ActRt)))
        obj = _cache[backend] = Runtime(table)
        return obj
