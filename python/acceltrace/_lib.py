"""_lib -- finds and loads libacceltrace and declares the C prototypes.

Everything the package calls in C goes through here, so the rest of the
package never touches ctypes loading or symbol look-up. The library is
found, in order:

1. ``ACCELTRACE_LIBRARY``: an explicit path to ``libacceltrace.so``;
2. the library installed with this package: a wheel puts it inside the
   package (``acceltrace/lib``), ``cmake --install`` in the prefix's lib
   directory; ``_build_info`` (written by CMake) says where, relative to
   the package;
3. the build tree of the checkout this package lives in, or was installed
   from (``<repo>/build/lib/libacceltrace.so``; an editable install keeps
   the package there, a plain install records the checkout in ``_origin``);
4. the system loader path (``libacceltrace.so.0``, then ``libacceltrace.so``).

Functions the loaded library does not export (a build that lacks a part)
are left out of the table; :func:`require` names the missing one instead of
failing with an AttributeError deep inside a call.
"""

import ctypes
import os

from ._errors import AcceltraceError, LibraryNotFoundError

_HERE = os.path.dirname(os.path.abspath(__file__))
# python/acceltrace -> repository root; a plain install says where it came from.
try:
    from ._origin import REPO as _REPO
except ImportError:
    _REPO = os.path.dirname(os.path.dirname(_HERE))

# Written by CMake into an installed package only; None in a checkout.
try:
    from . import _build_info as BUILD_INFO
except ImportError:
    BUILD_INFO = None


def installed_path(kind, name):
    """Path of ``name`` in the installed ``kind`` ("lib" or "bin")
    directory, or None when this package is not an installed one."""
    if BUILD_INFO is None:
        return None
    rel = BUILD_INFO.LIBDIR if kind == "lib" else BUILD_INFO.BINDIR
    return os.path.normpath(os.path.join(_HERE, rel, name))


_lib = None
_lib_path = None
_missing = set()


def candidate_paths():
    """The places searched for libacceltrace, in order."""
    env = os.environ.get("ACCELTRACE_LIBRARY")
    if env:
        return [env]
    installed = installed_path("lib", "libacceltrace.so")
    return ([installed] if installed else []) + [
        os.path.join(_REPO, "build", "lib", "libacceltrace.so"),
        "libacceltrace.so.0",
        "libacceltrace.so",
    ]


class act_options(ctypes.Structure):
    """Mirror of ``act_options`` in include/acceltrace.h."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("buffer_size", ctypes.c_uint64),
        ("spool_dir", ctypes.c_char_p),
        ("capture_api", ctypes.c_int),
        ("trace_name", ctypes.c_char_p),
        ("python_backtrace", ctypes.c_int),
        ("python_backtrace_all", ctypes.c_int),
    ]


_c = ctypes
# name: (restype, argtypes) -- the declarations of include/acceltrace.h.
_PROTOTYPES = {
    "act_strerror": (_c.c_char_p, [_c.c_int]),
    "act_version": (_c.c_char_p, []),
    "act_is_enabled": (_c.c_int, []),
    "act_range_push": (_c.c_int, [_c.c_char_p]),
    "act_range_pop": (_c.c_int, []),
    "act_range_start": (_c.c_uint64, [_c.c_char_p]),
    "act_range_end": (None, [_c.c_uint64]),
    "act_mark": (None, [_c.c_char_p]),
    "act_counter": (None, [_c.c_char_p, _c.c_double]),
    "act_thread_name": (None, [_c.c_uint32, _c.c_char_p]),
    "act_metadata_set": (_c.c_int, [_c.c_char_p, _c.c_char_p]),
    "act_metadata_set_json": (_c.c_int, [_c.c_char_p, _c.c_char_p]),
    "act_start": (_c.c_int, []),
    "act_stop": (_c.c_int, []),
    "act_session_begin": (_c.c_int, [_c.POINTER(act_options)]),
    "act_session_end": (_c.c_int, [_c.c_char_p]),
}


# Called once the library is loaded (the package's modules add theirs).
on_load = []


def _load():
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    tried = []
    for path in candidate_paths():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (no such file)" % path)
            continue
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            tried.append("%s (%s)" % (path, exc))
            continue
        for name, (restype, argtypes) in _PROTOTYPES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                _missing.add(name)
                continue
            fn.restype = restype
            fn.argtypes = argtypes
        _lib, _lib_path = lib, path
        for hook in on_load:
            try:
                hook()
            except Exception:  # noqa: BLE001 - a hook never breaks loading
                pass
        return lib
    raise LibraryNotFoundError(
        "libacceltrace could not be loaded; build it (cmake -S . -B build && "
        "cmake --build build) or set ACCELTRACE_LIBRARY to its path. Tried: "
        + "; ".join(tried))


def lib():
    """The loaded library (loads it on first use)."""
    return _load()


def path():
    """Path the library was loaded from."""
    _load()
    return _lib_path


def has(name):
    """Whether the loaded library exports ``name``."""
    _load()
    return name not in _missing and hasattr(_lib, name)


def require(name):
    """The C function ``name``; a clear error if this build lacks it."""
    if not has(name):
        raise AcceltraceError(
            "%s is not exported by %s (this build of libacceltrace lacks it)"
            % (name, _lib_path), code=None)
    return getattr(_lib, name)


_idle = None


def idle():
    """Whether the library found no tool attached (``act__idle``): a call
    that answered ACT_E_DISABLED then changed nothing, where with a tool
    attached it was outside the capture window (and a push still moved the
    range stack). False when this build does not export the flag."""
    global _idle
    if _idle is None:
        try:
            _idle = ctypes.c_int.in_dll(_load(), "act__idle")
        except ValueError:
            _idle = ctypes.c_int(0)
    return bool(_idle.value)


def encode(text, what):
    """A Python str as the NUL-terminated UTF-8 bytes C expects."""
    if isinstance(text, bytes):
        data = text
    elif isinstance(text, str):
        data = text.encode("utf-8", "surrogatepass")
    else:
        raise TypeError("%s must be str, not %s" % (what, type(text).__name__))
    if b"\0" in data:
        raise ValueError("%s must not contain NUL characters" % what)
    return data
