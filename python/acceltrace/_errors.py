"""_errors -- Python exceptions for acceltrace's negative ACT_E_* codes.

Every C call that returns an error code goes through :func:`check`, which
raises the exception class of that code with the library's own text
(``act_strerror``) and the name of the call, so a failure reads as what went
wrong rather than as a bare number.
"""

# Codes of include/acceltrace.h (its ACT_ERRORS list; tests/test_errors.py
# checks that the two agree).
ACT_OK = 0
ACT_E_DISABLED = -1
ACT_E_INVAL = -2
ACT_E_NOMEM = -3
ACT_E_IO = -4
ACT_E_FULL = -5
ACT_E_STATE = -6
ACT_E_JSON = -7
ACT_E_UNBALANCED = -8
ACT_E_CONFIG = -9
ACT_E_FORMAT = -10
ACT_E_NOTFOUND = -11
ACT_E_CONFLICT = -12
ACT_E_UNSUPPORTED = -13


class AcceltraceError(RuntimeError):
    """An acceltrace call failed. ``code`` is the ACT_E_* value (or None)."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class LibraryNotFoundError(AcceltraceError, ImportError):
    """libacceltrace could not be loaded."""


class DisabledError(AcceltraceError):
    """Nothing is recording in this process (ACT_E_DISABLED)."""


class InvalidArgumentError(AcceltraceError, ValueError):
    """An argument was rejected (ACT_E_INVAL)."""


class InvalidJSONError(AcceltraceError, ValueError):
    """A JSON text did not parse (ACT_E_JSON)."""


class StateError(AcceltraceError):
    """The call is not valid now (ACT_E_STATE), e.g. a second session."""


class UnbalancedError(AcceltraceError):
    """A range was closed that was never opened (ACT_E_UNBALANCED)."""


class ConfigError(AcceltraceError, ValueError):
    """An ACCELTRACE_* setting has an invalid value (ACT_E_CONFIG)."""


class TraceIOError(AcceltraceError, OSError):
    """A file or system call failed (ACT_E_IO)."""


class CapacityError(AcceltraceError):
    """The recorder is full; the record was counted as dropped (ACT_E_FULL)."""


class NotFoundError(AcceltraceError, LookupError):
    """No such thing: backend, group or file (ACT_E_NOTFOUND)."""


class ConflictError(AcceltraceError):
    """Another tracer holds the resource (ACT_E_CONFLICT)."""


class UnsupportedError(AcceltraceError):
    """Not supported by this platform or build (ACT_E_UNSUPPORTED)."""


_CLASSES = {
    ACT_E_DISABLED: DisabledError,
    ACT_E_INVAL: InvalidArgumentError,
    ACT_E_NOMEM: AcceltraceError,
    ACT_E_IO: TraceIOError,
    ACT_E_FULL: CapacityError,
    ACT_E_STATE: StateError,
    ACT_E_JSON: InvalidJSONError,
    ACT_E_UNBALANCED: UnbalancedError,
    ACT_E_CONFIG: ConfigError,
    ACT_E_FORMAT: AcceltraceError,
    ACT_E_NOTFOUND: NotFoundError,
    ACT_E_CONFLICT: ConflictError,
    ACT_E_UNSUPPORTED: UnsupportedError,
}


def error_class(code):
    """The exception class raised for ``code``."""
    return _CLASSES.get(code, AcceltraceError)


def make_error(code, call, strerror):
    """An exception for ``call`` having returned ``code``."""
    text = strerror(code) if strerror is not None else "error"
    return error_class(code)("%s failed: %s (%d)" % (call, text, code), code=code)
