"""Shared fixtures of the Python tests: the library under test, and skips
that name exactly which part of the C side this build does not have yet.

A part the tests need that is missing (the library, a symbol, the torch
plugin, the OpenCL layer, PoCL, a helper or fake the build makes) is a
skip on a developer's machine, and a failure when the environment variable
CI is set: in CI a skip would hide a regression (missing())."""

import os
import subprocess
import sys

import pytest

import acceltrace
from acceltrace import _lib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def missing(why):
    """A needed part is missing: skip, or fail when CI is set."""
    if os.environ.get("CI"):
        pytest.fail("CI: %s" % why, pytrace=False)
    pytest.skip(why)


def library_or_skip():
    try:
        return _lib.lib()
    except acceltrace.LibraryNotFoundError as exc:
        missing("libacceltrace is not built in this tree yet: %s" % exc)


def need(*symbols):
    """Skip unless the loaded library exports every one of ``symbols``."""
    library_or_skip()
    missing = [s for s in symbols if not _lib.has(s)]
    if missing:
        globals()["missing"]("the C side does not implement %s yet" % ", ".join(missing))


_writer_probe = {}


def need_trace_writer(tmp_dir):
    """Skip unless an in-process session can write its trace (the exporter
    may still be a stub answering ACT_E_UNSUPPORTED in this build)."""
    need("act_session_begin", "act_session_end")
    if "error" not in _writer_probe:
        err = None
        try:
            with acceltrace.profile(output=os.path.join(str(tmp_dir), "probe.json")):
                pass
        except acceltrace.UnsupportedError as exc:
            err = str(exc)
        _writer_probe["error"] = err
    if _writer_probe["error"]:
        missing("the trace writer is not in this build yet: %s" % _writer_probe["error"])


@pytest.fixture
def lib():
    return library_or_skip()


def run_python(code, env=None):
    """Run ``code`` in a fresh interpreter of this venv; (rc, stdout, stderr)."""
    full = dict(os.environ)
    full.update(env or {})
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=full, timeout=120)
    return p.returncode, p.stdout, p.stderr


# A Python script's start: a PoCL context, queue `q`, program `prg` with
# kernel `k` (adds 1 to each float of its buffer), buffer `d` of 4 KiB, and
# `knl`, the kernel with `d` set (scripts run by the tests append to it).
OCL_PROLOGUE = """\
import ctypes, threading
import pyopencl as cl
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
prg = cl.Program(ctx, "__kernel void k(__global float *y) { y[get_global_id(0)] += 1.0f; }").build()
d = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
knl = cl.Kernel(prg, "k")
knl.set_args(d)
"""
