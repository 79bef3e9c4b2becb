"""Real programs that reach libOpenCL through dlopen, under `acceltrace run`
with the layer and with --preload (issue 16 section 1, issue 21.2).

pyopencl's extension module is dlopen()ed RTLD_LOCAL by Python and links
the wheel's bundled libOpenCL: the preload shim must find the real entry
points there (it used to call NULL: SIGSEGV). OpenCV loads libOpenCL
itself with dlopen + dlsym(handle): the shim never sees those calls (a
documented limit of --preload), the layer does. Either way the program's
output and exit status are exactly those of an untraced run, and the
trace parses with nothing dropped and no callback pending.
"""

import json
import os
import subprocess
import sys

import pytest

from acceltrace import _lib
from conftest import library_or_skip

PYOPENCL = """
import numpy as np, pyopencl as cl, pyopencl.array as ca
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
x = ca.to_device(q, np.arange(4096, dtype=np.float32))
for _ in range(3):
    x = 2 * x + 1
print("pyopencl", float(x.get().sum()))
"""

OPENCV = """
import cv2, numpy as np
cv2.ocl.setUseOpenCL(True)
u = cv2.UMat(np.arange(128 * 128, dtype=np.float32).reshape(128, 128))
r = cv2.GaussianBlur(u, (5, 5), 1.0)
print("opencv", cv2.ocl.useOpenCL(), float(r.get().sum()))
"""

CASES = {"pyopencl": ("pyopencl", PYOPENCL), "opencv": ("cv2", OPENCV)}


def _cli():
    cli = os.path.join(os.path.dirname(os.path.dirname(_lib.path())), "bin", "acceltrace")
    if not os.access(cli, os.X_OK):
        pytest.skip("no acceltrace command beside %s" % _lib.path())
    return cli


def _module_or_skip(name):
    try:
        __import__(name)
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("%s is not installed (scripts/python-env.sh pins it)" % name)


@pytest.mark.parametrize("mode", ["layer", "preload"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_dlopen_user_runs_as_untraced(case, mode, tmp_path):
    library_or_skip()
    module, code = CASES[case]
    _module_or_skip(module)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENCL_LAYERS", "LD_PRELOAD")}
    env["OPENCV_OPENCL_DEVICE"] = ":CPU:"  # PoCL is a CPU device; OpenCV skips those by default
    prog = [sys.executable, "-c", code]
    plain = subprocess.run(prog, capture_output=True, text=True, env=env, timeout=300)
    out = tmp_path / "trace.json"
    cmd = [_cli(), "run"]
    cmd += (["--preload"] if mode == "preload" else []) + ["-o", str(out), "--"] + prog
    traced = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert traced.returncode == plain.returncode, traced.stderr[-3000:]
    assert traced.stdout == plain.stdout
    assert plain.returncode == 0, plain.stderr[-3000:]
    with open(out, encoding="utf-8") as f:
        trace = json.load(f)
    meta = trace["acceltrace"]
    assert not any(meta["dropped"].values()), meta["dropped"]
    assert meta["callbacks"] == {"pending": 0, "lost": 0}
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    if case == "opencv" and mode == "preload":
        # dlsym(handle) bypasses the shim: untraced, unharmed, and said.
        assert kernels == []
        assert all("recorded nothing" in e for e in meta["errors"]), meta["errors"]
    else:
        assert meta["errors"] == []
        assert kernels, "no kernel in the trace"
