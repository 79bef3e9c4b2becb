"""_binding -- chooses how the annotation calls reach libacceltrace: the
compiled extension acceltrace._native (C, python/native/native.c) or the
ctypes fallback (_annotate_ctypes.py). Both offer range, push, pop, mark,
counter and metadata_set with the same behaviour; ``impl`` is the one in
use and ``NAME`` says which ("extension" or "ctypes").

``ACCELTRACE_PYTHON_BINDING`` chooses: ``auto`` (the default: the extension
where it loads, else ctypes), ``extension`` (the extension or an ImportError
saying why) or ``ctypes``. Any other value is a ConfigError naming the
variable, the value and what is allowed.

The extension is found, in order, inside this package (a wheel or an
installed tree), then in the build tree of the library the package will
load (``<build>/lib/libacceltrace.so`` -> ``<build>/python/acceltrace/``), so
that a checkout, an editable install and ``ACCELTRACE_LIBRARY`` each use the
extension built with their library.
"""

import functools
import importlib.machinery
import importlib.util
import os
import sys

from . import _annotate_ctypes, _lib
from ._errors import ACT_E_CONFIG, ConfigError, make_error

ENV = "ACCELTRACE_PYTHON_BINDING"
CHOICES = ("auto", "extension", "ctypes")
# The extension's interface version this package is written for.
_API = 1


_texts = {}


def strerror(code):
    """The library's text for an ACT_E_* code (constant: asked once per code,
    which halves what a metadata call raising DisabledError costs)."""
    text = _texts.get(code)
    if text is None:
        text = _texts[code] = _lib.require("act_strerror")(code).decode("utf-8", "replace")
    return text


def raise_error(rc, call):
    """Raise the exception of ``call`` having returned ``rc``."""
    raise make_error(rc, call, strerror)


def decorate(rng, fn):
    """``fn`` wrapped in the range ``rng`` (the range's own state is per
    thread, so one range object serves every call and thread)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with rng:
            return fn(*args, **kwargs)
    return wrapper


def bare(fn):
    """``@acceltrace.range`` without a name: the function's qualified name."""
    return decorate(impl.range(getattr(fn, "__qualname__", getattr(fn, "__name__", "?"))), fn)


def _build_tree_dir():
    """Where the build tree of the library to be loaded keeps the extension."""
    for path in _lib.candidate_paths():
        if os.sep in path and os.path.exists(path):
            libdir = os.path.dirname(os.path.realpath(path))
            return os.path.join(os.path.dirname(libdir), "python", "acceltrace")
    return None


def _load_from(directory):
    name = __package__ + "._native"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(directory, "_native" + suffix)
        if os.path.exists(path):
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[name] = module
            setattr(sys.modules[__package__], "_native", module)
            return module
    return None


def _find_extension():
    """The extension module, or (None, why)."""
    installed = os.path.dirname(os.path.abspath(__file__))
    directory = _build_tree_dir()
    where = [installed] + ([directory] if directory and directory != installed else [])
    native = None
    for d in where:
        try:
            native = _load_from(d)
        except ImportError as exc:
            return None, "in %s but cannot be loaded: %s" % (d, exc)
        if native is not None:
            break
    if native is None:
        return None, ("neither installed with the package nor built with the library "
                      "(looked in %s)" % " and ".join(where))
    if getattr(native, "API", None) != _API:
        return None, ("%s: interface %r, this package needs %d (rebuild it)"
                      % (native.__file__, getattr(native, "API", None), _API))
    return native, None


def _bind_native():
    _lib.lib()  # LibraryNotFoundError, as the ctypes binding raises it
    impl._bind(_lib.path())


def _missing(symbol):
    _lib.require(symbol)


def _choose():
    want = os.environ.get(ENV, "auto")
    if want not in CHOICES:
        raise ConfigError("Invalid value for %s: '%s'. Allowed: auto, extension or ctypes"
                          % (ENV, want), code=ACT_E_CONFIG)
    if want == "ctypes":
        return _annotate_ctypes, "ctypes", "%s=ctypes" % ENV
    native, why = _find_extension()
    if native is not None:
        native._setup(_bind_native, raise_error, _missing, decorate, bare)
        return native, "extension", None
    if want == "extension":
        raise ImportError("%s=extension, but the extension acceltrace._native is %s; "
                          "set %s=auto to use the ctypes binding" % (ENV, why, ENV))
    return _annotate_ctypes, "ctypes", "the extension acceltrace._native is " + why


_annotate_ctypes.setup(raise_error, decorate, bare)
impl, NAME, WHY_NOT_EXTENSION = _choose()
