"""_annotate_ctypes -- the annotation calls (range, push/pop, mark, counter,
metadata_set) over ctypes: the binding used where the compiled extension
acceltrace._native cannot load (or ACCELTRACE_PYTHON_BINDING=ctypes).

It has the extension's interface and behaviour, call for call (errors,
names, what each open range's exit does); it is about ten times slower
(BENCHMARKS.md, "Python annotations"). _binding.py picks one of the two.
"""

import threading

from . import _lib
from ._errors import ACT_E_DISABLED, ACT_E_FULL

# What leaving a range does: nothing (its push changed nothing: no tool),
# pop, or pop without raising (pushed outside the capture window: the
# library moved its stack and counts the pop outside the window too).
_EXIT_NONE, _EXIT_POP, _EXIT_POP_QUIET = 0, 1, 2

# Hooks given by _binding.setup(): raise_error(rc, call), decorate(range,
# fn), bare(fn).
_hooks = {}


def setup(raise_error, decorate, bare):
    _hooks.update(raise_error=raise_error, decorate=decorate, bare=bare)


_tls = threading.local()


def _stack():
    stack = getattr(_tls, "stack", None)
    if stack is None:
        stack = _tls.stack = []
    return stack


def _quiet(rc):
    return rc >= 0 or rc == ACT_E_DISABLED or rc == ACT_E_FULL


def _push(data):
    rc = _lib.require("act_range_push")(data)
    # The library moves its range stack even when the record was dropped
    # for lack of space (ACT_E_FULL), and, with a tool attached, when the
    # capture window is closed (ACT_E_DISABLED, counted outside the
    # window), so that the pop stays balanced; only a push that did
    # nothing (no tool) must not be popped.
    if rc == 0 or rc == ACT_E_FULL:
        how = _EXIT_POP
    elif rc == ACT_E_DISABLED:
        how = _EXIT_NONE if _lib.idle() else _EXIT_POP_QUIET
    else:
        _hooks["raise_error"](rc, "act_range_push")
    _stack().append(how)


def _pop(raising):
    stack = _stack()
    # A pop with nothing pushed here still reaches the library (a range
    # pushed in C).
    how = stack.pop() if stack else _EXIT_POP
    if how == _EXIT_NONE:
        return
    rc = _lib.require("act_range_pop")()
    # A session that ended inside the range leaves nothing to pop; a range
    # begun outside the window is counted there, not raised.
    if not _quiet(rc) and how == _EXIT_POP and raising:
        _hooks["raise_error"](rc, "act_range_pop")


class range:  # noqa: A001  (the name users expect: acceltrace.range)
    """A named range on the calling thread: ``with acceltrace.range("x"):``
    or ``@acceltrace.range("x")`` (also bare ``@acceltrace.range``, which
    uses the function's qualified name). Ranges nest."""

    def __new__(cls, name):
        if callable(name) and not isinstance(name, (str, bytes)):
            return _hooks["bare"](name)  # bare decorator: @acceltrace.range
        self = super().__new__(cls)
        self._name = _lib.encode(name, "range name")
        self.name = name
        return self

    def __repr__(self):
        return "acceltrace.range(%r)" % (self.name,)

    def __enter__(self):
        _push(self._name)
        return self

    def __exit__(self, exc_type, exc, tb):
        _pop(exc_type is None)
        return False

    def __call__(self, fn):
        return _hooks["decorate"](self, fn)


def push(name):
    """Open a range named ``name`` on this thread (close it with pop())."""
    _push(_lib.encode(name, "range name"))


def pop():
    """Close this thread's innermost range."""
    _pop(True)


def mark(name):
    """An instant event named ``name``."""
    _lib.require("act_mark")(_lib.encode(name, "mark name"))


def counter(name, value):
    """One sample of the counter ``name``."""
    _lib.require("act_counter")(_lib.encode(name, "counter name"), float(value))


def metadata_set(key, value, json):
    """A top-level member of the trace: the string ``value``, or with
    ``json`` true the JSON text ``value``; raises on every error."""
    call = "act_metadata_set_json" if json else "act_metadata_set"
    rc = _lib.require(call)(_lib.encode(key, "metadata key"),
                            _lib.encode(value, "metadata JSON" if json else "metadata value"))
    if rc < 0:
        _hooks["raise_error"](rc, call)


def _depth():
    """This thread's open ranges as the binding counts them (tests)."""
    return len(_stack())
