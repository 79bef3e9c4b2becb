"""Issue 13.1: kernels from queues created before profiling starts.

A program makes its pyopencl queue (without profiling) at start-up and
opens an in-process session later, with the layer loaded (OPENCL_LAYERS).
The layer makes every queue profiling-capable from its creation, so the
session captures the kernels; the program still sees the queue as it
asked for it. Run in a fresh interpreter (pyopencl_late_session.py).
"""

import json
import os
import subprocess
import sys

import pytest

from acceltrace import _lib
from conftest import library_or_skip, need

HERE = os.path.dirname(os.path.abspath(__file__))


def _pyopencl_or_skip():
    try:
        import pyopencl  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("pyopencl is not installed (scripts/python-env.sh pins it)")


def test_a_session_started_late_captures_kernels_of_an_earlier_queue(tmp_path):
    library_or_skip()
    need("act_session_begin", "act_session_end")
    _pyopencl_or_skip()
    out = tmp_path / "late.json"
    prog = [sys.executable, os.path.join(HERE, "pyopencl_late_session.py"), str(out)]
    base = {k: v for k, v in os.environ.items() if k not in ("OPENCL_LAYERS", "LD_PRELOAD")}
    plain = subprocess.run(prog[:2] + [str(tmp_path / "plain.json")], capture_output=True,
                           text=True, env=base, timeout=300)
    assert plain.returncode == 0, plain.stderr[-3000:]
    r = subprocess.run(prog, capture_output=True, text=True,
                       env=dict(base, OPENCL_LAYERS=_lib.path()), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    # What the program sees is what it sees untraced.
    assert seen == json.loads(plain.stdout.strip().splitlines()[-1])
    assert seen["properties"] == 0 and seen["profiling_info"] == "not available", seen
    with open(out, encoding="utf-8") as f:
        trace = json.load(f)
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert [k["name"] for k in kernels] == ["twice"] * 3, trace["acceltrace"].get("errors")
    assert all(k["dur"] > 0 for k in kernels)
    assert not any(trace["acceltrace"]["dropped"].values())
