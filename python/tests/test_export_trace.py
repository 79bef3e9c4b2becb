"""`acceltrace export -o OUT TRACE.json`: a trace file written again in any
format we write (issue 33 part 1). tests/trace_check/check_sqlite.py and
check_pftrace.py check event for event that our own traces exported to
SQLite and Perfetto protobuf hold what the JSON holds; here: the JSON
written again is the same JSON (plain and gzip); a torch.profiler trace
(string lanes, its own categories, nested args) goes to SQLite with its
ops queryable and comes back as JSON with nothing but its lanes renamed;
bad inputs are one line and exit 2.
"""

import gzip
import json
import os
import sqlite3
import subprocess

import pytest

from test_analysers import BIN, need_build

ACT = os.path.join(BIN, "acceltrace")


def export(*args):
    return subprocess.run([ACT, "export", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    need_build()
    d = tmp_path_factory.mktemp("export_trace")
    out = str(d / "t.json")
    r = subprocess.run([ACT, "run", "--no-summary", "-o", out, "--",
                        os.path.join(BIN, "vecops")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("name", ["again.json", "again.json.gz"])
def test_our_trace_written_again_is_the_same(ours, tmp_path, name):
    out = str(tmp_path / name)
    r = export("-o", out, ours)
    assert r.returncode == 0, r.stderr
    assert "events written to" in r.stderr and "could not be kept" not in r.stderr
    assert load(out) == load(ours)
    # and read back from the gzip one
    again = str(tmp_path / "third.json")
    assert export("-o", again, out).returncode == 0
    assert load(again) == load(ours)


TORCH_TRACE = {
    "schemaVersion": 1,
    "deviceProperties": [],
    "record_shapes": 1,
    "displayTimeUnit": "ms",
    "baseTimeNanoseconds": 1790857026000000000,
    "distributedInfo": {"backend": "gloo", "rank": 3, "world_size": 4},
    "traceName": "torch.json",
    "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10,
         "ts": 5615377143216.941, "dur": 52.375,
         "args": {"External id": 4, "Record function id": 0, "Ev Idx": 3,
                  "Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"],
                  "Concrete Inputs": ["", ""]}},
        {"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 10,
         "tid": 10, "ts": 5615377143200.0, "dur": 80.5, "args": {"Python id": 7}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,
         "ts": 5615377143300.125, "dur": 20.0,
         "args": {"correlation": 77, "External id": 4, "device": 0, "stream": 7}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
         "ts": 5615377143260.0, "dur": 5.5, "args": {"correlation": 77, "External id": 4}},
        {"ph": "f", "id": 77, "pid": 0, "tid": 7, "ts": 5615377143300.125, "cat": "ac2g",
         "name": "ac2g", "bp": "e"},
        {"ph": "s", "id": 77, "pid": 10, "tid": 10, "ts": 5615377143260.0, "cat": "ac2g",
         "name": "ac2g"},
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans",
         "tid": "PyTorch Profiler", "ts": 5615377143134.288, "dur": 68386.605,
         "args": {"Op count": 0}},
        {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "",
         "ts": 5615377211734.872},
        {"name": "process_name", "ph": "M", "ts": 5615377143134.288, "pid": 10, "tid": 0,
         "args": {"name": "python"}},
    ],
}


@pytest.fixture
def torch_trace(tmp_path):
    need_build()
    p = tmp_path / "torch.json"
    p.write_text(json.dumps(TORCH_TRACE))
    return str(p)


def test_torch_trace_to_sqlite(torch_trace, tmp_path):
    db = str(tmp_path / "t.sqlite")
    r = export("-o", db, torch_trace)
    assert r.returncode == 0, r.stderr
    con = sqlite3.connect(db)
    (k,) = con.execute("SELECT name, dur_ns, correlation, external_id, stream FROM kernels")
    assert k == ("gemm", 20000, 77, 4, 7)
    (a,) = con.execute("SELECT name, correlation FROM api_calls")
    assert a == ("cudaLaunchKernel", 77)
    (op,) = con.execute("SELECT name, dur_ns, external_id FROM ranges")
    assert op == ("aten::mm", 52375, 4)
    dims = con.execute("SELECT value FROM arg_values WHERE key = 'Input Dims'").fetchone()[0]
    assert json.loads(dims) == [[64, 64], [64, 64]]
    cats = {c for (c,) in con.execute("SELECT category FROM slices")}
    assert {"python_function", "Trace", "kernel", "cpu_op"} <= cats
    flows = con.execute("SELECT from_pid, to_pid, to_ns - from_ns FROM flows").fetchall()
    assert flows == [(10, 0, 40125)]
    meta = {k: (json.loads(v) if j else v)
            for k, v, j in con.execute("SELECT key, value, is_json FROM meta")}
    assert meta["distributedInfo"]["rank"] == 3 and meta["traceName"] == "torch.json"
    # reports count from the first event of a foreign trace
    assert int(meta["base_ns"]) == 5615377143134288
    names = dict(con.execute("SELECT pid, name FROM processes"))
    assert "Spans" in names.values() and names[10] == "python"
    r = subprocess.run([ACT, "stats", "--report", "rank_sum", "--format", "json", db],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["rows"][0]["Rank"] == 3


def test_torch_trace_written_again(torch_trace, tmp_path):
    out = str(tmp_path / "again.json")
    r = export("-o", out, torch_trace)
    assert r.returncode == 0, r.stderr
    got = load(out)
    for k, v in TORCH_TRACE.items():
        if k != "traceEvents":
            assert got[k] == v, k
    lanes = {}
    for e in got["traceEvents"]:
        if e["ph"] == "M" and e["name"] in ("process_name", "thread_name"):
            lanes[(e["pid"], e.get("tid"))] = e["args"]["name"]
    evs = [e for e in got["traceEvents"] if not (e["ph"] == "M" and "ts" not in e and
                                                  e["pid"] >= 0xfff00000)]
    for want in TORCH_TRACE["traceEvents"]:
        w = dict(want)
        if w["ph"] == "M":
            w.pop("ts")  # a metadata event's ts is not kept (no reader uses it)
        match = [e for e in evs if e["name"] == w["name"] and e["ph"] == w["ph"]]
        assert len(match) == 1, w
        e = match[0]
        if isinstance(w["pid"], str):  # a named lane: a number, named by an M event
            assert lanes[(e["pid"], None)] == w["pid"]
            assert lanes[(e["pid"], e["tid"])] == w["tid"]
            w["pid"], w["tid"] = e["pid"], e["tid"]
        assert e == w


@pytest.mark.parametrize("content,why", [
    ("not json at all", "not valid JSON"),
    ('{"traceEvents": 3}', "traceEvents"),
    ("", ""),
])
def test_bad_input_is_one_line(tmp_path, content, why):
    need_build()
    src = tmp_path / "bad.json"
    src.write_text(content)
    out = tmp_path / "out.sqlite"
    r = export("-o", str(out), str(src))
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "bad.json" in lines[0] and why in lines[0], r.stderr
    assert not out.exists() and not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_existing_output_needs_force(ours, tmp_path):
    out = tmp_path / "t.sqlite"
    out.write_text("keep me")
    r = export("-o", str(out), ours)
    assert r.returncode == 2 and "--force" in r.stderr
    assert out.read_text() == "keep me"
    assert export("-f", "-o", str(out), ours).returncode == 0
    assert sqlite3.connect(str(out)).execute("SELECT count(*) FROM kernels").fetchone()[0] > 0


def test_template_output_refused(ours, tmp_path):
    r = export("-o", str(tmp_path / "t-%p.json"), ours)
    assert r.returncode == 2 and "template" in r.stderr


def test_more_args_than_an_event_holds_are_said(tmp_path):
    """An event holds at most 65 535 args: the rest are counted, not
    wrapped round into a wrong count."""
    need_build()
    args = {"a%d" % i: i for i in range(70000)}
    src = tmp_path / "many.json"
    src.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "name": "big", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": args},
        {"ph": "X", "name": "next", "pid": 1, "tid": 1, "ts": 3, "dur": 1, "args": {"k": 1}}]}))
    out = str(tmp_path / "out.json")
    r = export("-o", out, str(src))
    assert r.returncode == 0, r.stderr
    assert "4465 event members could not be kept" in r.stderr, r.stderr
    evs = load(out)["traceEvents"]
    assert len(evs[0]["args"]) == 65535 and evs[1]["args"] == {"k": 1}


@pytest.mark.parametrize("name", ["direct.json", "direct.pftrace"])
def test_direct_io_writes_the_same_bytes(ours, tmp_path, name):
    """ACCELTRACE_DIRECT_IO=0: every whole block goes out with O_DIRECT
    (writers/obuf.c), the last partial one through the cache; the file is
    byte for byte what the page cache alone writes."""
    got = {}
    for mode in ("0", "off"):
        out = str(tmp_path / (mode + name))
        r = subprocess.run([ACT, "export", "-o", out, ours], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, ACCELTRACE_DIRECT_IO=mode))
        assert r.returncode == 0, r.stderr
        with open(out, "rb") as f:
            got[mode] = f.read()
    assert len(got["0"]) > 8192 and got["0"] == got["off"]


def test_direct_io_bad_value_is_refused(ours, tmp_path):
    r = subprocess.run([ACT, "export", "-o", str(tmp_path / "x.json"), ours],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, ACCELTRACE_DIRECT_IO="fast"))
    assert r.returncode == 2, r.stderr
    assert "ACCELTRACE_DIRECT_IO" in r.stderr and not os.path.exists(tmp_path / "x.json")
