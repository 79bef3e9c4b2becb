"""_plugin -- loads the torch.profiler plugin (plugins/torch) into torch.

The plugin is C++ compiled against one torch's headers; kineto's classes
change layout between torch versions, so a plugin built for another torch
must never be loaded. Its build writes a sidecar file
``libacceltrace_torch.so.json`` ({"torch_version": ...}); this module
compares that with ``torch.__version__`` *before* loading the library, and
the plugin's own ``act_torch_plugin_register`` checks again (it registers
nothing until asked). A mismatch is an ImportError-worthy message, shown as
a warning, and the sanitiser still works.

Search order for the plugin: ``ACCELTRACE_TORCH_PLUGIN`` (a path), then the
directory of the loaded libacceltrace, then the checkout's build tree. When
none was built for this torch, it is built for it now, once, and cached
(``_build``; ``ACCELTRACE_TORCH_BUILD=0`` turns that off).
"""

import ctypes
import json
import os
import warnings

from .. import _lib

PLUGIN_NAME = "libacceltrace_torch.so"

_state = {"handle": None, "path": None, "error": None, "tried": False}


class PluginVersionError(ImportError):
    """The plugin was built for another torch."""


def _candidates():
    env = os.environ.get("ACCELTRACE_TORCH_PLUGIN")
    if env:
        return [env]
    out = []
    try:
        libdir = os.path.dirname(os.path.abspath(_lib.path()))
        out.append(os.path.join(libdir, PLUGIN_NAME))
    except ImportError:
        pass
    out.append(os.path.join(_lib._REPO, "build", "lib", PLUGIN_NAME))
    seen, result = set(), []
    for p in out:
        if p not in seen:
            seen.add(p)
            result.append(p)
    return result


def built_for(path):
    """The torch version the plugin at ``path`` was built for (its sidecar)."""
    with open(path + ".json", encoding="utf-8") as f:
        return json.load(f)["torch_version"]


def _load(path):
    import torch

    want = built_for(path)
    have = torch.__version__
    if want != have:
        raise PluginVersionError(
            "acceltrace torch plugin %s was built for torch %s but this is torch %s; "
            "it was not loaded (kineto's classes differ between versions). Rebuild it "
            "against this torch (see docs/torch.md)." % (path, want, have))
    _lib.lib()  # libacceltrace first, globally, so the plugin binds to it
    handle = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    reg = handle.act_torch_plugin_register
    reg.restype = ctypes.c_char_p
    reg.argtypes = [ctypes.c_char_p]
    err = reg(have.encode())
    if err:
        raise PluginVersionError(err.decode("utf-8", "replace"))
    return handle


def register_hooks():
    """Give the PrivateUse1 backend acceltrace named hooks that say it is no
    device (act_torch_plugin_register_hooks). True if registered now."""
    h = _state["handle"]
    if h is None or not hasattr(h, "act_torch_plugin_register_hooks"):
        return False
    h.act_torch_plugin_register_hooks.restype = ctypes.c_int
    return h.act_torch_plugin_register_hooks() == 1


def _try(p, errors, mismatched):
    if not os.path.exists(p):
        errors.append("%s: not built" % p)
        return False
    try:
        _state["handle"] = _load(p)
        _state["path"] = p
        _state["error"] = None
        return True
    except (OSError, KeyError, ValueError, AttributeError, ImportError) as exc:
        errors.append("%s: %s" % (p, exc))
        if isinstance(exc, PluginVersionError):
            mismatched.append(str(exc))
    return False


def _build_for_this_torch(errors):
    """A plugin built for the torch in use (_build): its path, or None."""
    from . import _build
    if not _build.enabled():
        errors.append("building one is off (ACCELTRACE_TORCH_BUILD=0)")
        return None
    try:
        import torch
        return _build.build(torch)
    except (_build.PluginBuildError, ImportError, OSError) as exc:
        errors.append(str(exc))
        warnings.warn("acceltrace: %s" % exc, RuntimeWarning, stacklevel=3)
        return None


def load_plugin(path=None):
    """Load and register the plugin once; returns True when it is active."""
    if _state["handle"] is not None:
        return True
    paths = [path] if path else _candidates()
    errors, mismatched = [], []
    for p in paths:
        if _try(p, errors, mismatched):
            return True
    if not path and not os.environ.get("ACCELTRACE_TORCH_PLUGIN"):
        built = _build_for_this_torch(errors)
        if built and _try(built, errors, mismatched):
            return True
    for msg in mismatched:
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
    _state["error"] = "; ".join(errors) or "no plugin path"
    if all(e.endswith(": not built") for e in errors):
        _state["error"] += ("; to build it against this torch, install acceltrace from source in "
                            "this environment: pip install --no-build-isolation <acceltrace source> "
                            "(docs/torch.md)")
    return False


def plugin_loaded():
    return _state["handle"] is not None


def plugin_path():
    return _state["path"]


def plugin_error():
    """Why the plugin is not loaded (None when it is)."""
    return _state["error"]


def counters():
    """Diagnostics of the loaded plugin: sessions configured / started /
    processed, torch correlation ids seen, and those paired with an op's
    range (empty dict when the plugin is not loaded)."""
    h = _state["handle"]
    if h is None:
        return {}
    arr = (ctypes.c_uint64 * 5)()
    h.act_torch_plugin_counters(arr)
    keys = ("configured", "started", "processed", "torch_ids", "paired")
    return dict(zip(keys, (int(v) for v in arr)))


def last_errors():
    """Errors of the last plugin session that was processed (kineto only
    logs them): a list of lines."""
    h = _state["handle"]
    if h is None:
        return []
    fn = h.act_torch_plugin_last_errors
    fn.restype = ctypes.c_char_p
    text = (fn() or b"").decode("utf-8", "replace")
    return [line for line in text.split("\n") if line]
