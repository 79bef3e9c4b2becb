"""_threads -- Python threads named in the trace by their ``threading`` names.

A Python thread's OS name is its process's ("python3"), so its lane read
"python3 (tid)". Once the package loads libacceltrace (its first call),
each thread started from then on (and each one already running) is named
in the trace by its ``threading`` name through ``act_thread_name`` (as
nvtxNameOsThread does); the OS name is left alone, so the program sees no
change. A thread renamed after it started keeps its first name unless
``name_thread`` is called again. Run's start-up hook
(python/pyhook/sitecustomize.py) does the same for programs that never
import this package: it cannot import it, so it has its own few lines.
"""

import threading

from . import _lib

_installed = []


def name_thread(name, tid=0):
    """Name an OS thread of this process in the trace (tid 0: the calling
    thread). Nothing happens when no tool is attached."""
    if _lib.has("act_thread_name"):
        _lib.require("act_thread_name")(int(tid), _lib.encode(name, "thread name"))


def _name_current(thread):
    try:  # "name (tid)", as the trace writes the OS's names
        name_thread("%s (%d)" % (thread.name, threading.get_native_id()))
    except Exception:  # noqa: BLE001 - never the program's problem
        pass


def install():
    """Name every thread started from now on, and those running, once."""
    if _installed or not _lib.has("act_thread_name"):
        return
    _installed.append(True)
    bootstrap = threading.Thread._bootstrap_inner

    def _bootstrap_inner(self):
        _name_current(self)  # not current_thread(): not registered yet
        return bootstrap(self)

    threading.Thread._bootstrap_inner = _bootstrap_inner
    for t in threading.enumerate():
        if t is not threading.main_thread() and t.native_id:
            try:
                name_thread("%s (%d)" % (t.name, t.native_id), t.native_id)
            except Exception:  # noqa: BLE001
                pass
