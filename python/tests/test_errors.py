"""The error codes are one list: ACT_ERRORS in include/acceltrace.h (an
X-macro that makes the C enum and act_strerror's texts). The Python package
(acceltrace/_errors.py) must name the same codes with the same values, map
each to an exception class, and the library's act_strerror must give the
list's text for each."""

import ctypes
import os
import re

from acceltrace import _errors

from conftest import REPO, library_or_skip

HEADER = os.path.join(REPO, "include", "acceltrace.h")


def header_errors():
    with open(HEADER, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"#define ACT_ERRORS\(X\)(.*?)\n\n", text, re.S)
    assert m, "include/acceltrace.h has no ACT_ERRORS(X) list"
    rows = re.findall(r'X\((ACT_\w+),\s*(-?\d+),\s*"([^"]*)"\)', m.group(1))
    assert rows, "ACT_ERRORS lists no code"
    return [(name, int(value), msg) for name, value, msg in rows]


def test_python_names_every_code_of_the_header_with_its_value():
    rows = header_errors()
    for name, value, _ in rows:
        assert getattr(_errors, name, None) == value, name
    python = {k: v for k, v in vars(_errors).items() if re.fullmatch(r"ACT_(OK|E_\w+)", k)}
    assert python == {name: value for name, value, _ in rows}


def test_every_error_code_has_its_exception_class():
    for name, value, _ in header_errors():
        if value:
            assert value in _errors._CLASSES, name


def test_the_library_says_the_lists_text():
    lib = library_or_skip()
    lib.act_strerror.restype = ctypes.c_char_p
    lib.act_strerror.argtypes = [ctypes.c_int]
    for name, value, msg in header_errors():
        assert lib.act_strerror(value).decode() == msg, name
    assert lib.act_strerror(-999).decode() == "unknown error"
