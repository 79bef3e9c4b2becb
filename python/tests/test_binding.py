"""The annotation calls of the Python package (range, push/pop, mark, counter,
metadata) through both bindings: the compiled extension (acceltrace._native)
and the ctypes fallback (ACCELTRACE_PYTHON_BINDING=ctypes). Both must write
the same trace, raise the same errors and keep the library's range stack
balanced. Their speed is a benchmark (bench/python_annotate.py), not a test."""

import json
import os
import subprocess
import sys
import threading

import acceltrace

from conftest import missing, need_trace_writer


def native_or_skip():
    """The extension module; a skip (a failure with CI set) where this build
    has none."""
    from acceltrace import _binding
    native, why = _binding._find_extension()
    if native is None:
        missing("acceltrace._native is not built: %s" % why)
    return native


def _window_counts(trace):
    return trace["acceltrace"]["outside_window"]


def test_ranges_outside_the_capture_window_are_balanced(lib, tmp_path):
    """A range entered and left while the capture window is closed moves the
    library's range stack both ways (its push and its pop are each counted
    outside the window), as the same range written in C does; a range that
    began outside the window and ends inside it is not written."""
    need_trace_writer(tmp_path)
    out = tmp_path / "t.json"
    with acceltrace.profile(output=out, capture_api=True):
        for _ in range(3):
            with acceltrace.range("before"):
                pass
        with acceltrace.range("straddles"):
            acceltrace.capture_start()
        with acceltrace.range("inside"):
            pass
    trace = json.loads(out.read_text(encoding="utf-8"))
    counts = _window_counts(trace)
    assert counts["range_push"] == 4
    assert counts["range_pop"] == 4
    assert trace["acceltrace"]["unbalanced_pops"] == 0
    names = [e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert names == ["inside"]


# ---- both bindings, one workload, the same trace ----------------------------

# Every annotation call of the package, with the awkward inputs (bytes,
# non-ASCII, a lone surrogate, numbers given as str), on three threads,
# before, inside and after the capture window, and a range that a session
# begins and ends inside. Prints the binding and each error it raised.
WORKLOAD = r'''
import sys, threading
import acceltrace

out = sys.argv[1]
print("binding", acceltrace.binding())


def errors(*calls, text=True):
    for c in calls:
        try:
            c()
            print("ok")
        except Exception as e:  # noqa: BLE001 (printed and compared)
            print(type(e).__name__, e if text else "")


@acceltrace.range("decorated")
def decorated(x):
    return x + 1


@acceltrace.range
def bare():
    acceltrace.mark("in bare")


def worker(i):
    with acceltrace.range("thread-%d" % i):
        for j in range(3):
            acceltrace.push("step")
            acceltrace.counter("t%d" % i, j)
            acceltrace.pop()


# No tool: everything is quiet, metadata raises, the binding's stack stays empty.
with acceltrace.range("off"):
    acceltrace.mark("off")
    acceltrace.counter("off", 1)
errors(lambda: acceltrace.metadata("off", "v"))
with acceltrace.range("session inside"):
    with acceltrace.profile(output=out, capture_api=True):
        with acceltrace.range("before window"):
            acceltrace.mark("before window")
            acceltrace.counter("before window", 1)
        acceltrace.push("pushed before window")
        acceltrace.capture_start()
        acceltrace.pop()
        with acceltrace.range("outer"):
            with acceltrace.range(b"bytes name"):
                acceltrace.mark("caf\u00e9 \u2603")
            assert decorated(1) == 2
            bare()
            acceltrace.counter("loss", 0.25)
            acceltrace.counter("int", 7)
            acceltrace.counter("from str", "1.5")
            acceltrace.mark("lone \udc80 surrogate")
            with acceltrace.range("lone \ud800 surrogate"):
                pass
            ts = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            acceltrace.metadata("plain", "say \"hi\"")
            acceltrace.metadata("doc", {"lr": 0.1, "tags": ["a", "\u00e9"]})
            acceltrace.metadata_json("raw", '{"n": 1}')
            # Wrong numbers of arguments: CPython words those itself.
            errors(lambda: acceltrace.range(), lambda: acceltrace.range("a", "b"),
                   lambda: acceltrace.counter("c"), lambda: acceltrace.pop(1), text=False)
            errors(lambda: acceltrace.range(42), lambda: acceltrace.range("a\0b"),
                   lambda: acceltrace.push(None), lambda: acceltrace.mark(3.5),
                   lambda: acceltrace.mark("a\0"), lambda: acceltrace.counter("c", "x"),
                   lambda: acceltrace.counter(b"c", None),
                   lambda: acceltrace.metadata(1, "v"), lambda: acceltrace.metadata("k", "\0"),
                   lambda: acceltrace.metadata("k", float("nan")),
                   lambda: acceltrace.metadata_json("k", "{bad"),
                   lambda: acceltrace.metadata_json("k", 5))
        acceltrace.push("left open")
        acceltrace.capture_stop()
        acceltrace.pop()
        with acceltrace.range("after window"):
            pass
        acceltrace.push("ends after the session")
    acceltrace.pop()
errors(acceltrace.pop)
print("depth", acceltrace._binding.impl._depth())
'''


def _run_workload(tmp_path, binding):
    out = tmp_path / ("%s.json" % binding)
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD, encoding="utf-8")
    p = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True,
                       env=dict(os.environ, ACCELTRACE_PYTHON_BINDING=binding), timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout, json.loads(out.read_text(encoding="utf-8"))


def _shape(trace):
    """What the trace says, without times, pids and tids: each thread's
    events in order (threads named by their first event), the counters'
    samples, the counts and the user's metadata."""
    lanes, counters = {}, []
    events = [e for e in trace["traceEvents"]
              if e["ph"] != "M" and e.get("args", {}).get("acceltrace") != "process lifetime"]
    events.sort(key=lambda e: (e["ts"], -e.get("dur", 0), e["name"]))
    for e in events:
        args = {k: v for k, v in e.get("args", {}).items() if k != "External id"}
        item = (e["ph"], e.get("cat"), e["name"], json.dumps(args, sort_keys=True))
        if e["ph"] == "C":
            counters.append(item)
        else:
            lanes.setdefault(e["tid"], []).append(item)
    a = trace["acceltrace"]
    counts = {k: a[k] for k in ("records", "dropped", "outside_window", "unbalanced_pops",
                                "unclosed_ranges", "nesting_violations", "invalid_utf8",
                                "errors")}
    user = {k: v for k, v in trace.items()
            if k not in ("traceEvents", "acceltrace", "baseTimeNanoseconds", "deviceProperties")}
    return sorted(lanes.values()), sorted(counters), counts, user


def test_extension_and_ctypes_write_the_same_trace(lib, tmp_path):
    need_trace_writer(tmp_path)
    native = native_or_skip()
    out_c, trace_c = _run_workload(tmp_path, "ctypes")
    out_n, trace_n = _run_workload(tmp_path, "extension")
    assert out_c.splitlines()[0] == "binding ctypes"
    assert out_n.splitlines()[0] == "binding extension", native
    assert out_n.splitlines()[1:] == out_c.splitlines()[1:]
    assert _shape(trace_n) == _shape(trace_c)
    # What the workload did, read in one of them (both are equal).
    assert "depth 0" in out_c
    lanes, counters, counts, user = _shape(trace_c)
    assert counts["unbalanced_pops"] == 0 and counts["nesting_violations"] == 0
    # Outside the window: four pushes, three pops (the fourth range ends
    # after the session, which no longer counts anything).
    assert counts["outside_window"]["range_push"] == 4
    assert counts["outside_window"]["range_pop"] == 3
    assert user["plain"] == 'say "hi"' and user["doc"] == {"lr": 0.1, "tags": ["a", "é"]}
    assert user["raw"] == {"n": 1} and "k" not in user
    names = {item[2] for lane in lanes for item in lane}
    assert {"outer", "bytes name", "café ☃", "decorated", "bare", "step",
            "thread-0", "thread-1", "thread-2"} <= names
    assert not names & {"off", "session inside", "before window", "pushed before window",
                        "after window", "ends after the session"}
    assert [c[2] for c in counters].count("loss") == 1
    assert ("C", None, "from str", '{"from str": 1.5}') in counters


# ---- choosing the binding ----------------------------------------------------

def _binding_of(env):
    p = subprocess.run([sys.executable, "-c", "import acceltrace; print(acceltrace.binding())"],
                       capture_output=True, text=True, env=dict(os.environ, **env), timeout=60)
    return p.returncode, p.stdout.strip(), p.stderr.strip().splitlines()[-1:]


def test_the_binding_is_chosen_by_its_variable(lib):
    native_or_skip()
    env = {k: v for k, v in os.environ.items() if k != "ACCELTRACE_PYTHON_BINDING"}
    assert _binding_of(dict(env, ACCELTRACE_PYTHON_BINDING="auto"))[:2] == (0, "extension")
    assert _binding_of(dict(env, ACCELTRACE_PYTHON_BINDING="extension"))[:2] == (0, "extension")
    assert _binding_of(dict(env, ACCELTRACE_PYTHON_BINDING="ctypes"))[:2] == (0, "ctypes")


def test_a_bad_binding_value_is_a_clear_error():
    rc, _, err = _binding_of({"ACCELTRACE_PYTHON_BINDING": "Native"})
    assert rc != 0
    assert err == ["acceltrace._errors.ConfigError: Invalid value for ACCELTRACE_PYTHON_BINDING: "
                   "'Native'. Allowed: auto, extension or ctypes"]


def test_without_the_extension_auto_falls_back_and_extension_says_why(tmp_path):
    # A library path whose build tree has no extension: auto uses ctypes, a
    # forced extension is an ImportError that says where it looked.
    fake = tmp_path / "lib" / "libacceltrace.so"
    fake.parent.mkdir()
    fake.write_bytes(b"")
    rc, out, _ = _binding_of({"ACCELTRACE_LIBRARY": str(fake), "ACCELTRACE_PYTHON_BINDING": "auto"})
    assert (rc, out) == (0, "ctypes")
    rc, _, err = _binding_of({"ACCELTRACE_LIBRARY": str(fake),
                              "ACCELTRACE_PYTHON_BINDING": "extension"})
    assert rc != 0 and err[0].startswith("ImportError: ACCELTRACE_PYTHON_BINDING=extension, but")
    assert str(tmp_path / "python" / "acceltrace") in err[0]
    assert "ACCELTRACE_PYTHON_BINDING=auto" in err[0]


def test_an_extension_that_cannot_load_leaves_the_ctypes_binding_working(lib, tmp_path):
    """A broken extension beside the library (here: not an ELF file): auto
    says why and records through ctypes; extension is an ImportError."""
    need_trace_writer(tmp_path)
    import shutil
    (tmp_path / "lib").mkdir()
    (tmp_path / "python" / "acceltrace").mkdir(parents=True)
    libcopy = tmp_path / "lib" / "libacceltrace.so"
    shutil.copy(acceltrace.library_path(), libcopy)
    (tmp_path / "python" / "acceltrace" / "_native.abi3.so").write_bytes(b"not an ELF file")
    out = tmp_path / "t.json"
    code = ("import sys, acceltrace, acceltrace._binding as b\n"
            "print(acceltrace.binding())\n"
            "print(b.WHY_NOT_EXTENSION)\n"
            "with acceltrace.profile(output=sys.argv[1]):\n"
            "    with acceltrace.range('through ctypes'):\n"
            "        acceltrace.mark('m')\n")
    env = dict(os.environ, ACCELTRACE_LIBRARY=str(libcopy), ACCELTRACE_PYTHON_BINDING="auto")
    p = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    binding, why = p.stdout.splitlines()[:2]
    assert binding == "ctypes"
    assert "cannot be loaded" in why and str(tmp_path / "python" / "acceltrace") in why
    trace = json.loads(out.read_text(encoding="utf-8"))
    assert sorted(e["name"] for e in trace["traceEvents"]
                  if e.get("cat") == "user_annotation") == ["m", "through ctypes"]
    env["ACCELTRACE_PYTHON_BINDING"] = "extension"
    p = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode != 0 and "cannot be loaded" in p.stderr


def test_the_extension_binds_the_library_the_package_loaded(lib, tmp_path):
    """One libacceltrace in the process: the extension resolves its
    functions from the copy ctypes loaded, never links a second one."""
    native_or_skip()
    code = ("import acceltrace\n"
            "with acceltrace.profile():\n"
            "    acceltrace.mark('m')\n"
            "maps = open('/proc/self/maps').read().split()\n"
            "print(acceltrace.binding(), len({p for p in maps if 'libacceltrace.so' in p}))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, ACCELTRACE_PYTHON_BINDING="extension"), timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["extension", "1"]


# ---- the binding in use here ---------------------------------------------------

class _Model:
    @acceltrace.range("method")
    def forward(self, x):
        return (self, x)


@acceltrace.range("recurse")
def _recurse(n):
    return 0 if n == 0 else 1 + _recurse(n - 1)


def test_deep_recursion_and_methods_stay_balanced(lib, tmp_path):
    """300 nested ranges (past the binding's first allocation and the
    library's 256 tracked levels) all close; a decorated method still binds
    its instance."""
    need_trace_writer(tmp_path)
    out = tmp_path / "t.json"
    impl = acceltrace._binding.impl
    m = _Model()
    with acceltrace.profile(output=out):
        assert _recurse(300) == 300
        assert m.forward(1) == (m, 1)
        assert impl._depth() == 0
    trace = json.loads(out.read_text(encoding="utf-8"))
    assert len([e for e in trace["traceEvents"] if e["name"] == "recurse"]) == 301
    assert len([e for e in trace["traceEvents"] if e["name"] == "method"]) == 1
    assert trace["acceltrace"]["unbalanced_pops"] == 0
    assert trace["acceltrace"]["nesting_violations"] == 0
    assert _Model.forward.__name__ == "forward" and _Model.forward.__wrapped__


def test_each_thread_keeps_its_own_ranges(lib, tmp_path):
    """A thread's pops never close another thread's ranges, and each
    thread's stack of open ranges is its own."""
    need_trace_writer(tmp_path)
    out = tmp_path / "t.json"
    impl = acceltrace._binding.impl
    inner_go, outer_done, depths = threading.Event(), threading.Event(), {}

    def a():
        with acceltrace.range("a-outer"):
            inner_go.set()
            outer_done.wait(10)
            depths["a"] = impl._depth()

    def b():
        inner_go.wait(10)
        for _ in range(5):
            acceltrace.push("b")
            acceltrace.pop()
        depths["b"] = impl._depth()
        outer_done.set()

    with acceltrace.profile(output=out):
        ts = [threading.Thread(target=a), threading.Thread(target=b)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert depths == {"a": 1, "b": 0}
    trace = json.loads(out.read_text(encoding="utf-8"))
    (outer,) = [e for e in trace["traceEvents"] if e["name"] == "a-outer"]
    bs = [e for e in trace["traceEvents"] if e["name"] == "b"]
    assert len(bs) == 5 and all(e["tid"] != outer["tid"] for e in bs)
    assert trace["acceltrace"]["unbalanced_pops"] == 0
