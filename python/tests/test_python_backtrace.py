"""--python-backtrace: the Python line behind every launch (issue 35, part 2).

A pyopencl program on PoCL, untouched, under `acceltrace run
--python-backtrace`: each kernel launch, copy and synchronisation made
while its thread holds the GIL carries the "Python stack" arg (innermost
frame first, "file(line): function"), each thread its own; `summary
--by-python-line` gives device time per line; a program that is not Python
gets one note and its usual trace; the in-process session takes the same
option.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from test_analysers import BIN, LIB, need_build, need_module

ACCELTRACE = os.path.join(BIN, "acceltrace")

# Line numbers matter: f() launches at line 12 (checked below).
SCRIPT = textwrap.dedent('''\
    import sys
    import threading

    import numpy as np
    import pyopencl as cl

    ctx = cl.create_some_context(interactive=False)
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, "__kernel void k(__global float *y) { y[get_global_id(0)] += 1.0f; }").build()
    y = np.zeros(1024, dtype=np.float32)
    d = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, y.nbytes)
    def f(): prg.k(q, y.shape, None, d)
    def copy_back(): cl.enqueue_copy(q, y, d)
    def in_thread(qq):
        prg.k(qq, y.shape, None, d)
        qq.finish()
    for _ in range(3):
        f()
    copy_back(); copy_back()
    if "--threads" in sys.argv:
        t = threading.Thread(target=in_thread, args=(cl.CommandQueue(ctx),), name="worker")
        t.start()
        t.join()
    q.finish()
    ''')


def write_script(tmp_path):
    p = tmp_path / "script.py"
    p.write_text(SCRIPT)
    return str(p)


def run_traced(tmp_path, *args, flag="--python-backtrace", prog=None):
    need_build()
    need_module("pyopencl")
    out = str(tmp_path / "t.json")
    prog = prog or [sys.executable, write_script(tmp_path), *args]
    cmd = [ACCELTRACE, "run", "--no-summary", "-f", "-o", out] + ([flag] if flag else []) + \
        ["--"] + prog
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(out) as fh:
        return json.load(fh), r, out


def api_events(trace, name):
    return [e for e in trace["traceEvents"] if e.get("name") == name and e.get("ph") == "X"
            and e.get("cat") != "kernel"]


def frames(e):
    return e["args"]["Python stack"].split("\n")


def test_a_kernel_launched_from_f_carries_that_frame(tmp_path):
    trace, _, _ = run_traced(tmp_path)
    script = str(tmp_path / "script.py")
    launches = api_events(trace, "clEnqueueNDRangeKernel")
    assert len(launches) == 3
    for e in launches:
        st = frames(e)
        mine = [fr for fr in st if fr.startswith(script)]
        # innermost first: f at line 12, then the module-level loop at 18
        assert mine == ["%s(12): f" % script, "%s(18): <module>" % script], st
    # pyopencl releases the GIL around its copies and clFinish: they used to
    # carry no stack. The profile hook (pystack.c P4) gives the first call of
    # each such function its stack at its return, and later ones at their
    # C_CALL: both copies, and the finish, carry their lines.
    copies = api_events(trace, "clEnqueueReadBuffer")
    assert len(copies) == 2
    for e in copies:
        mine = [fr for fr in frames(e) if fr.startswith(script)]
        assert mine == ["%s(13): copy_back" % script, "%s(19): <module>" % script], e["args"]
    # each copy's wait, in the same GIL-less call: held with it, then given
    waits = api_events(trace, "clWaitForEvents")
    assert waits and all("%s(13): copy_back" % script in frames(e) for e in waits)
    fin = api_events(trace, "clFinish")
    assert [[fr for fr in frames(e) if fr.startswith(script)] for e in fin] == \
        [["%s(24): <module>" % script]]


def test_threads_keep_their_own_stacks(tmp_path):
    trace, _, _ = run_traced(tmp_path, "--threads")
    script = str(tmp_path / "script.py")
    launches = api_events(trace, "clEnqueueNDRangeKernel")
    assert len(launches) == 4
    by_tid = {}
    for e in launches:
        by_tid.setdefault(e["tid"], []).append(frames(e))
    assert len(by_tid) == 2
    worker = [st for st in by_tid.values() if len(st) == 1][0][0]
    assert "%s(15): in_thread" % script in worker
    assert not any("(12): f" in fr for fr in worker)
    assert any("threading.py" in fr for fr in worker)  # the thread's own bootstrap
    main = [st for st in by_tid.values() if len(st) == 3][0]
    assert all(not any("in_thread" in fr for fr in st) for st in main)
    # the worker's clFinish, GIL released, gets its stack from the profile
    # hook (pystack.c P4: pending calls run on the main thread only)
    worker_tid = [tid for tid, st in by_tid.items() if len(st) == 1][0]
    fin = [e for e in api_events(trace, "clFinish") if e["tid"] == worker_tid]
    assert len(fin) == 1 and "%s(16): in_thread" % script in frames(fin[0])


def test_off_by_default_and_on_in_a_session(tmp_path):
    trace, _, _ = run_traced(tmp_path, flag=None)
    assert not any("Python stack" in e.get("args", {}) for e in trace["traceEvents"])
    need_module("pyopencl")
    code = textwrap.dedent('''\
        import os, runpy, sys
        import acceltrace
        with acceltrace.profile(sys.argv[1], python_backtrace=2):
            runpy.run_path(sys.argv[2])
        ''')
    out = str(tmp_path / "session.json")
    env = dict(os.environ, OPENCL_LAYERS=LIB, ACCELTRACE_LIBRARY=LIB)
    r = subprocess.run([sys.executable, "-c", code, out, write_script(tmp_path)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(out) as fh:
        trace = json.load(fh)
    launches = api_events(trace, "clEnqueueNDRangeKernel")
    assert len(launches) == 3
    for e in launches:
        st = frames(e)
        assert len(st) == 2 and st[1].endswith("(12): f"), st


def test_summary_by_python_line(tmp_path):
    _, _, out = run_traced(tmp_path)
    script = str(tmp_path / "script.py")
    r = subprocess.run([ACCELTRACE, "summary", "--by-python-line", "--format", "json", out],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = {row["name"]: row for row in json.loads(r.stdout)["by_python_line"]}
    assert rows["%s(12): f" % script]["count"] == 3
    r = subprocess.run([ACCELTRACE, "summary", "--by-python-line", out], capture_output=True,
                       text=True, timeout=120)
    assert "Device time by launching Python line" in r.stdout
    r = subprocess.run([ACCELTRACE, "summary", "--by-python-line", "--by-range", out],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "give one" in r.stderr


def test_a_program_that_is_not_python_gets_a_note(tmp_path):
    need_build()
    trace, r, _ = run_traced(tmp_path, prog=[os.path.join(BIN, "vecops")])
    assert r.stderr.count("no CPython") == 1, r.stderr
    assert [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert not any("Python stack" in e.get("args", {}) for e in trace["traceEvents"])


@pytest.mark.parametrize("bad", ["0x", "65", "8:some", ":all", "-1"])
def test_a_bad_depth_is_refused(tmp_path, bad):
    need_build()
    r = subprocess.run([ACCELTRACE, "run", "--python-backtrace=" + bad, "--", "true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "ACCELTRACE_PYTHON_BACKTRACE" in r.stderr, r.stderr
