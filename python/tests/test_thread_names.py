"""Threads are named as the OS names them (issue 31 part 4).

A pyopencl program whose worker thread names itself with prctl(PR_SET_NAME)
before its first launch: its lane is "my-worker (TID)" in the trace, and the
main thread's is the program's name with its tid, not "thread N".
"""

import json
import os
import subprocess
import sys
import textwrap

from conftest import OCL_PROLOGUE
from test_analysers import BIN, need_build, need_module

# A kernel ready to launch from a thread.
PROLOGUE = OCL_PROLOGUE

SCRIPT = PROLOGUE + textwrap.dedent('''\
    def work():
        ctypes.CDLL(None).prctl(15, b"my-worker", 0, 0, 0)  # PR_SET_NAME
        cl.enqueue_nd_range_kernel(q, knl, (64,), None)
        q.finish()
    t = threading.Thread(target=work)
    t.start()
    t.join()
    ''')


def test_lanes_carry_the_os_thread_names(tmp_path):
    need_build()
    need_module("pyopencl")
    # --torch=off: without run's Python hook, which names Python threads by
    # their threading names (test_python_threads_carry_their_threading_names)
    name, tid, _, names, pid = _launch_lane_name(tmp_path, SCRIPT, "--torch=off")
    assert name == "my-worker (%d)" % tid
    assert names[pid].endswith("(%d)" % pid) and not names[pid].startswith("thread")


PY_THREADS = PROLOGUE + textwrap.dedent('''\
    def work():
        cl.enqueue_nd_range_kernel(q, knl, (64,), None)
        q.finish()
        print(open("/proc/thread-self/comm").read().strip())
    USE_API
    t = threading.Thread(target=work, name="loader-3")
    t.start()
    t.join()
    print(open("/proc/self/comm").read().strip())
    ''')


def _launch_lane_name(tmp_path, script, *run_opts):
    p = tmp_path / "pynamed.py"
    p.write_text(script)
    out = str(tmp_path / "t.json")
    r = subprocess.run([os.path.join(BIN, "acceltrace"), "run", "--no-summary", "-f", "-o", out,
                        *run_opts, "--", sys.executable, str(p)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        ev = json.load(f)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    launch = [e for e in ev if e.get("name") == "clEnqueueNDRangeKernel" and e.get("ph") == "X"
              and e.get("cat") != "kernel"]
    assert len(launch) == 1
    return names[launch[0]["tid"]], launch[0]["tid"], r.stdout, names, launch[0]["pid"]


def test_python_threads_carry_their_threading_names(tmp_path):
    """A Python thread's OS name is the interpreter's: its lane read
    "python3 (tid)". Under run (and once the Python API is in use) its
    lane carries its threading name, and its OS name is left as it was."""
    need_build()
    need_module("pyopencl")
    for use_api, opts in (("pass", ()), ("import acceltrace; acceltrace.mark('m')", ("--torch=off",))):
        name, tid, out, _, _ = _launch_lane_name(tmp_path, PY_THREADS.replace("USE_API", use_api),
                                                 *opts)
        assert name == "loader-3 (%d)" % tid, (use_api, name)
        thread_comm, main_comm = out.split()
        assert thread_comm == main_comm  # the OS name is the interpreter's still
