"""sitecustomize for programs started by `acceltrace run` (docs/torch.md).

`run` puts this file's folder first on PYTHONPATH for the program (not with
--torch=off). At start-up it:

1. takes its folder off sys.path again, and runs the program's own
   sitecustomize, if there is one, as if this one were not there;
2. names each `threading.Thread` started from then on in the trace by its
   threading name (act_thread_name; the OS name is left alone);
3. watches for `import torch`: only then, the acceltrace torch plugin
   (ACCELTRACE_TORCH_PLUGIN, set by `run`) is loaded and observes torch's
   operators and record_function ranges (a global RecordFunction observer):
   each becomes a slice on its thread's timeline (cpu_op, user_annotation)
   and kernels launched inside take its External id. A program that never
   imports torch pays one meta-path lookup per import, nothing more.

Whatever fails here is said once on stderr and the program goes on.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _say(msg):
    try:
        sys.stderr.write("acceltrace: %s\n" % msg)
    except Exception:  # noqa: BLE001 - never the program's problem
        pass


def _observe(torch):
    path = os.environ.get("ACCELTRACE_TORCH_PLUGIN")
    if not path:
        _say("torch ops are not recorded: no torch plugin beside this acceltrace "
             "(build it with torch installed, or set ACCELTRACE_TORCH_PLUGIN)")
        return
    try:
        import ctypes
        import json
        with open(path + ".json") as f:
            want = json.load(f).get("torch_version")
        if want != torch.__version__:
            _say("torch ops are not recorded: the plugin %s was built for torch %s, this is "
                 "torch %s (rebuild it against this torch, docs/torch.md)"
                 % (path, want, torch.__version__))
            return
        h = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        fn = h.act_torch_plugin_observe_ops
        fn.restype = ctypes.c_char_p
        fn.argtypes = [ctypes.c_char_p]
        err = fn(torch.__version__.encode())
        if err:
            _say("torch ops are not recorded: %s" % err.decode("utf-8", "replace"))
    except Exception as exc:  # noqa: BLE001
        _say("torch ops are not recorded: %s" % exc)


def _thread_namer():
    """act_thread_name of the libacceltrace beside this folder, if the
    process has loaded it (the OpenCL layer, the torch plugin): never loaded
    here, so a program that touches no accelerator is left as it is."""
    import ctypes
    for name in ("libacceltrace.so.0", "libacceltrace.so"):
        try:
            lib = ctypes.CDLL(os.path.join(os.path.dirname(_HERE), name),
                              mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            fn = lib.act_thread_name
        except (OSError, AttributeError):
            continue
        fn.restype = None
        fn.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
        return fn
    return None


def _name_threads():
    """Each threading.Thread started from now on is named in the trace by its
    threading name (act_thread_name), not as the interpreter's OS thread
    ("python3 (tid)"); the OS name is left alone."""
    import threading
    bootstrap = threading.Thread._bootstrap_inner
    namer = []

    def _bootstrap_inner(self):
        try:
            if not namer:
                fn = _thread_namer()
                if fn is not None:
                    namer.append(fn)
            if namer:
                name = "%s (%d)" % (self.name, threading.get_native_id())
                namer[0](0, name.encode("utf-8", "replace"))
        except Exception:  # noqa: BLE001 - never the program's problem
            pass
        return bootstrap(self)

    threading.Thread._bootstrap_inner = _bootstrap_inner


class _TorchWatch:
    """A meta-path finder that finds nothing itself: when `torch` is found by
    the others, its loader is wrapped so that _observe runs once torch is
    imported."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        import importlib.machinery
        sys.meta_path.remove(self)  # once; and not ourselves below
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                spec = find(name, path, target) if find else None
                if spec is not None:
                    break
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_observe(module):
            exec_module(module)
            _observe(module)

        try:
            loader.exec_module = exec_and_observe
        except Exception:  # noqa: BLE001 - a loader that refuses: no ops
            return spec
        return spec


def _chain():
    """Run the program's own sitecustomize, as site.py would have."""
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    me = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401  (the program's, if any)
    except ImportError as exc:
        if exc.name != "sitecustomize":
            raise
        if me is not None:
            sys.modules["sitecustomize"] = me


try:
    _name_threads()
except Exception as exc:  # noqa: BLE001
    _say("Python threads keep their OS names in the trace: %s" % exc)
if "torch" in sys.modules:
    _observe(sys.modules["torch"])
else:
    sys.meta_path.insert(0, _TorchWatch())
_chain()
