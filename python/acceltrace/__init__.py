"""acceltrace -- Python interface to acceltrace, a vendor-neutral accelerator
profiler: ctypes over libacceltrace, with the annotation calls in a compiled
extension (acceltrace._native) where it loads (_binding.py).

    import acceltrace

    with acceltrace.profile(output="trace.json"):
        with acceltrace.range("step"):
            ...                       # host work and device work
        acceltrace.mark("checkpoint")
        acceltrace.counter("loss", 0.25)
        acceltrace.metadata("run", {"lr": 0.1})

``profile`` opens an in-process session (act_session_begin) and writes the
Chrome trace when it ends (act_session_end). ``range`` (also ``push`` /
``pop``), ``mark`` and ``counter`` are annotations: with nothing recording
they do nothing, at about the cost of calling a C function from Python.
``metadata`` raises when nothing records it, because a value the user asked
for must not vanish silently. ``rt()`` is the runtime
API table (the counterpart of ``torch.cuda.cudart()`` / ``torch.npu.npurt()``).
Errors are raised as :class:`AcceltraceError` subclasses named after the
ACT_E_* code, with the library's text. ``import acceltrace.torch`` adds the
torch.profiler integration.
"""

import json
import os
import threading

from . import _binding, _lib
from ._errors import (  # noqa: F401  (re-exported)
    ACT_E_CONFIG, ACT_E_CONFLICT, ACT_E_DISABLED, ACT_E_FORMAT, ACT_E_FULL,
    ACT_E_INVAL, ACT_E_IO, ACT_E_JSON, ACT_E_NOMEM, ACT_E_NOTFOUND,
    ACT_E_STATE, ACT_E_UNBALANCED, ACT_E_UNSUPPORTED, ACT_OK,
    AcceltraceError, CapacityError, ConfigError, ConflictError, DisabledError,
    InvalidArgumentError, InvalidJSONError, LibraryNotFoundError,
    NotFoundError, StateError, TraceIOError, UnbalancedError,
    UnsupportedError, error_class, make_error)
from ._rt import rt  # noqa: F401
from . import _threads
from ._threads import name_thread  # noqa: F401

_lib.on_load.append(_threads.install)  # threads named once the library is in use

__all__ = [
    "profile", "start", "stop", "capture_start", "capture_stop", "range",
    "push", "pop", "mark", "counter", "metadata", "metadata_json", "rt",
    "version", "library_version", "is_enabled", "strerror", "library_path",
    "binding", "name_thread", "AcceltraceError",
]

from ._version import __version__  # noqa: E402  (CMakeLists.txt's project VERSION)


_INT_MIN, _INT_MAX = -2 ** 31, 2 ** 31 - 1
_U64_MAX = 2 ** 64 - 1


def _in_range(value, lo, hi, what):
    """``value`` as an int within [lo, hi]; OverflowError outside (ctypes
    would wrap it silently)."""
    v = int(value)
    if not lo <= v <= hi:
        raise OverflowError("%s %d is out of range [%d, %d]" % (what, v, lo, hi))
    return v


def strerror(code):
    """The library's text for an ACT_E_* code."""
    code = _in_range(code, _INT_MIN, _INT_MAX, "error code")
    return _lib.require("act_strerror")(code).decode("utf-8", "replace")


def _check(rc, call):
    if rc < 0:
        raise make_error(rc, call, strerror)
    return rc


def library_version():
    """Version string of the loaded libacceltrace."""
    return _lib.require("act_version")().decode("utf-8", "replace")


def version():
    """Version of this package (and of the library it was made for)."""
    return __version__


def library_path():
    """Path of the libacceltrace this package loaded."""
    return _lib.path()


def is_enabled():
    """True while this process is recording."""
    return bool(_lib.require("act_is_enabled")())


# ---- sessions -------------------------------------------------------------

class profile:
    """An in-process recording session; writes a Chrome trace at the end.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    ``output`` is the trace path (None: record and discard). The keyword
    arguments are those of ``act_options``: ``buffer_size`` (bytes, 0 =
    automatic, as for ``acceltrace run``), ``spool_dir`` (None = a private temporary directory),
    ``capture_api`` (record only between :func:`capture_start` and
    :func:`capture_stop`), ``trace_name``, ``python_backtrace`` (the
    innermost N Python frames on each kernel launch, copy and
    synchronisation made from Python; 0 = off, or ``True`` for 16) and
    ``python_backtrace_all`` (on every intercepted call).
    """

    def __init__(self, output=None, *, buffer_size=0, spool_dir=None,
                 capture_api=False, trace_name=None, python_backtrace=0,
                 python_backtrace_all=False):
        self.output = os.fspath(output) if output is not None else None
        if int(buffer_size) < 0:
            raise ValueError("buffer_size must be >= 0, not %r" % (buffer_size,))
        self.buffer_size = _in_range(int(buffer_size), 0, _U64_MAX, "buffer_size")
        self.spool_dir = os.fspath(spool_dir) if spool_dir is not None else None
        self.capture_api = bool(capture_api)
        self.trace_name = trace_name
        depth = 16 if python_backtrace is True else int(python_backtrace)
        if python_backtrace_all and depth == 0:
            depth = 16
        self.python_backtrace = _in_range(depth, 0, 64, "python_backtrace")
        self.python_backtrace_all = bool(python_backtrace_all)
        self._running = False

    @property
    def running(self):
        return self._running

    def _options(self):
        opts = _lib.act_options()
        opts.struct_size = _lib.ctypes.sizeof(_lib.act_options)
        opts.buffer_size = self.buffer_size
        opts.spool_dir = (_lib.encode(self.spool_dir, "spool_dir")
                          if self.spool_dir is not None else None)
        opts.capture_api = 1 if self.capture_api else 0
        opts.trace_name = (_lib.encode(self.trace_name, "trace_name")
                           if self.trace_name is not None else None)
        opts.python_backtrace = self.python_backtrace
        opts.python_backtrace_all = 1 if self.python_backtrace_all else 0
        return opts

    def start(self):
        """Begin recording (act_session_begin)."""
        if self._running:
            raise StateError("this profile is already running", code=ACT_E_STATE)
        opts = self._options()
        _check(_lib.require("act_session_begin")(_lib.ctypes.byref(opts)),
               "act_session_begin")
        self._running = True
        return self

    def stop(self):
        """Stop recording and write the trace; returns its path (or None)."""
        if not self._running:
            raise StateError("this profile is not running", code=ACT_E_STATE)
        self._running = False
        out = _lib.encode(self.output, "output") if self.output is not None else None
        _check(_lib.require("act_session_end")(out), "act_session_end")
        return self.output

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        # The trace is written even when the body raised: it is what one
        # wants to look at then. A failure to write it does not hide the
        # body's exception.
        try:
            self.stop()
        except AcceltraceError:
            if exc_type is None:
                raise
        return False


_current = None
_current_lock = threading.Lock()


def start(output=None, **options):
    """Begin a session without a ``with`` block; :func:`stop` ends it."""
    global _current
    with _current_lock:
        if _current is not None and _current.running:
            raise StateError("acceltrace.start(): a session started with start() "
                             "is still running", code=ACT_E_STATE)
        p = profile(output, **options)
        p.start()
        _current = p
        return p


def stop():
    """End the session begun by :func:`start`; returns the trace path."""
    global _current
    with _current_lock:
        if _current is None or not _current.running:
            raise StateError("acceltrace.stop(): no session was started with start()",
                             code=ACT_E_STATE)
        p, _current = _current, None
        return p.stop()


def capture_start():
    """Open the capture range (sessions with capture_api=True)."""
    _check(_lib.require("act_start")(), "act_start")


def capture_stop():
    """Close the capture range."""
    _check(_lib.require("act_stop")(), "act_stop")


# ---- annotations ------------------------------------------------------------
#
# range, push, pop, mark and counter are the binding's own functions (the
# extension's in C, or the ctypes fallback's: _binding.py), with no Python
# layer in between: a call costs what calling them costs.

range = _binding.impl.range  # noqa: A001  (the name users expect: acceltrace.range)
push = _binding.impl.push
pop = _binding.impl.pop
mark = _binding.impl.mark
counter = _binding.impl.counter
_metadata_set = _binding.impl.metadata_set


def binding():
    """How the annotation calls reach the library: "extension" (the compiled
    acceltrace._native) or "ctypes" (the fallback; see
    ACCELTRACE_PYTHON_BINDING in docs/configuration.md)."""
    return _binding.NAME


METADATA_MAX_DEPTH = 64  # ACT_METADATA_MAX_DEPTH


def _check_depth(value):
    """InvalidJSONError when ``value`` nests more than METADATA_MAX_DEPTH
    lists and dicts (checked without recursion: json.dumps would hit
    Python's recursion limit first on a very deep value)."""
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            children = v.values()
        elif isinstance(v, (list, tuple)):
            children = v
        else:
            continue
        if depth == METADATA_MAX_DEPTH:
            raise InvalidJSONError("metadata value nests more than %d lists and dicts"
                                   % METADATA_MAX_DEPTH, code=ACT_E_JSON)
        stack.extend((c, depth + 1) for c in children)


def metadata(key, value):
    """Add a top-level member to the trace: a str is stored as a string,
    anything else as the JSON of ``json.dumps(value)``."""
    if isinstance(value, str):
        _metadata_set(key, value, False)
    else:
        _lib.encode(key, "metadata key")  # the key's errors first, as for a str
        _check_depth(value)
        _metadata_set(key, json.dumps(value, ensure_ascii=False, allow_nan=False), True)


def metadata_json(key, text):
    """Add a top-level member whose value is the JSON text ``text``
    (validated by the library: InvalidJSONError when it does not parse)."""
    _metadata_set(key, text, True)

