"""Ranks, name templates, --metadata JSON and merge, on the bundled example
(build/bin/vecops) and with launcher variables set by hand (fast; the
torchrun test is test_distributed.py)."""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, run_python
from test_analysers import BIN, LIB, need_build

sys.path.insert(0, os.path.join(REPO, "tests", "trace_check"))

ACT = os.path.join(BIN, "acceltrace")
VECOPS = os.path.join(BIN, "vecops")


def run(args, env=None, cwd=None):
    full = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
              "SLURM_PROCID"):
        full.pop(k, None)
    full.update(env or {})
    return subprocess.run([ACT] + args, capture_output=True, text=True, env=full, cwd=cwd,
                          timeout=120)


def load(path):
    with open(path) as f:
        return json.load(f)


@pytest.fixture
def two_ranks(tmp_path):
    """A script that runs vecops as rank 0 and rank 1 (torchrun's variables)."""
    need_build()
    s = tmp_path / "two.sh"
    s.write_text("#!/bin/sh\n"
                 "RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 %s >/dev/null &\n"
                 "RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 TAG=b %s >/dev/null\n"
                 "wait\n" % (VECOPS, VECOPS))
    s.chmod(0o755)
    return str(s)


def test_template_writes_one_trace_per_process_with_its_rank(two_ranks, tmp_path):
    r = run(["run", "--no-summary", "-o", str(tmp_path / "t.%r.%q{TAG}.json"), "--", two_ranks])
    assert r.returncode == 0, r.stderr
    for rank, name in ((0, "t.0..json"), (1, "t.1.b.json")):
        d = load(str(tmp_path / name))
        assert d["distributedInfo"] == {"rank": rank, "local_rank": rank, "world_size": 2,
                                        "launcher": "torchrun"}
        assert sum(e.get("cat") == "kernel" for e in d["traceEvents"]) > 0
        assert len(d["acceltrace"]["processes"]) == 1
    # HTA's rank pattern: "rank": N with a space
    with open(str(tmp_path / "t.1.b.json")) as f:
        assert '"rank": 1' in f.read()


def test_without_a_template_one_trace_and_no_rank_for_two_ranks(two_ranks, tmp_path):
    out = str(tmp_path / "all.json")
    r = run(["run", "--no-summary", "-o", out, "--", two_ranks])
    assert r.returncode == 0, r.stderr
    d = load(out)
    assert len(d["acceltrace"]["processes"]) == 2
    assert "distributedInfo" not in d
    assert any("different ranks" in e for e in d["acceltrace"]["errors"])


def test_pids_and_collisions_in_names(two_ranks, tmp_path):
    r = run(["run", "--no-summary", "-o", str(tmp_path / "same.json%%"), "--", two_ranks])
    assert r.returncode == 0, r.stderr
    names = sorted(os.listdir(str(tmp_path)))
    assert "same.json%" in names and sum(n.startswith("same.") for n in names) == 2, names


def test_bad_template_exits_2_before_running(tmp_path):
    need_build()
    marker = tmp_path / "ran"
    r = run(["run", "-o", str(tmp_path / "t.%x.json"), "--", "touch", str(marker)])
    assert r.returncode == 2 and "%x" in r.stderr
    assert not marker.exists()


def test_metadata_json_rule(tmp_path):
    need_build()
    out = str(tmp_path / "m.json")
    r = run(["run", "--no-summary", "-o", out, "--metadata", 'distributedInfo={"rank": 3}',
             "--metadata", "ver=1.10", "--metadata", "n=5", "--metadata", "l=[1, 2]",
             "--metadata", "bad={nope", "--", VECOPS], env={"RANK": "0"})
    assert r.returncode == 0, r.stderr
    d = load(out)
    assert d["distributedInfo"] == {"rank": 3}  # the user's wins over the launcher's
    assert d["ver"] == "1.10" and d["n"] == "5" and d["l"] == [1, 2] and d["bad"] == "{nope"


def test_in_process_session_records_its_rank(tmp_path):
    need_build()
    out = str(tmp_path / "s.json")
    rc, _, err = run_python("import acceltrace\n"
                            "with acceltrace.profile(output=%r):\n"
                            "    acceltrace.mark('x') if hasattr(acceltrace, 'mark') else None\n"
                            % out, env={"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4"})
    assert rc == 0, err
    assert load(out)["distributedInfo"] == {"rank": 2, "world_size": 4, "launcher": "openmpi"}


def test_run_trace_has_a_process_slice_for_tensorboard(tmp_path):
    need_build()
    out = str(tmp_path / "p.json")
    assert run(["run", "--no-summary", "-o", out, "--", VECOPS]).returncode == 0
    d = load(out)
    procs = [e for e in d["traceEvents"] if e.get("cat") == "cpu_op"]
    assert len(procs) == 1 and procs[0]["name"] == "vecops"
    host = [e for e in d["traceEvents"] if e.get("ph") == "X" and e["pid"] == procs[0]["pid"]]
    assert min(e["ts"] for e in host) >= procs[0]["ts"]
    assert max(e["ts"] + e["dur"] for e in host) <= procs[0]["ts"] + procs[0]["dur"] + 0.001
    # no host call: the summary (after run, and of the file) leaves it out
    r = run(["summary", out])
    assert r.returncode == 0 and "vecops" not in r.stdout, r.stdout
    r = run(["run", "-f", "-o", out, "--", VECOPS])
    assert r.returncode == 0 and "  vecops " not in r.stderr, r.stderr


def _two_traces(tmp_path):
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    assert run(["run", "--no-summary", "-o", a, "--", VECOPS], env={"RANK": "0"}).returncode == 0
    assert run(["run", "--no-summary", "-o", b, "--", VECOPS], env={"RANK": "1"}).returncode == 0
    return a, b


def test_merge_of_one_boot_is_exact(tmp_path):
    import validate_trace
    need_build()
    a, b = _two_traces(tmp_path)
    out = str(tmp_path / "m.json")
    r = run(["merge", "-o", out, a, b])
    assert r.returncode == 0, r.stderr
    m = load(out)
    assert validate_trace.validate(m) == []
    al = m["acceltrace"]["merge"]["alignment"]
    assert al == {"method": "monotonic clock (one boot)", "error_bound_ns": 0}
    # b ran after a: its first event is later by what the clocks say
    da, db = load(a), load(b)
    shift = (db["acceltrace"]["clock"]["base_monotonic_ns"]
             - da["acceltrace"]["clock"]["base_monotonic_ns"]) / 1000.0
    ins = m["acceltrace"]["merge"]["inputs"]
    assert ins[1]["shift_us"] - ins[0]["shift_us"] == pytest.approx(shift, abs=0.002)
    assert run(["merge", "-o", out, a, b]).returncode == 2  # exists: not overwritten


def test_merge_reads_and_writes_gzip(tmp_path):
    """A .json.gz input merges as its plain copy does, an OUT named .gz is
    gzip, and a corrupt .gz input is one line and exit 2."""
    import gzip
    import shutil
    need_build()
    a, b = _two_traces(tmp_path)
    with open(b, "rb") as f, gzip.open(b + ".gz", "wb") as g:
        shutil.copyfileobj(f, g)
    plain, packed = str(tmp_path / "p.json"), str(tmp_path / "z.json.gz")
    assert run(["merge", "-o", plain, a, b]).returncode == 0
    r = run(["merge", "-o", packed, a, b + ".gz"])
    assert r.returncode == 0, r.stderr
    with open(packed, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    with gzip.open(packed, "rt") as f:
        got, want = json.load(f), load(plain)
    for d in (got, want):  # the inputs' names differ by the .gz
        for i in d["acceltrace"]["merge"]["inputs"]:
            i.pop("file")
    assert got == want
    bad = str(tmp_path / "bad.json.gz")
    with open(b + ".gz", "rb") as f, open(bad, "wb") as g:
        g.write(f.read()[:200])  # cut inside the stream
    r = run(["merge", "-o", str(tmp_path / "x.json"), a, bad])
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert bad in r.stderr


def test_merge_across_hosts_states_its_bound(tmp_path):
    need_build()
    a, b = _two_traces(tmp_path)
    db = load(b)
    db["acceltrace"]["host"]["boot_id"] = "another-host"
    with open(b, "w") as f:
        json.dump(db, f)
    da = load(a)
    out = str(tmp_path / "m.json")
    assert run(["merge", "-o", out, a, b]).returncode == 0
    al = load(out)["acceltrace"]["merge"]["alignment"]
    assert al["method"] == "wall clock"
    errs = sorted(d["acceltrace"]["clock"]["anchor"]["error_ns"] for d in (da, db))
    assert al["error_bound_ns"] == sum(errs)
    assert "NTP" in al["assumes"]
    # wall-clock shifts follow the anchors
    ins = load(out)["acceltrace"]["merge"]["inputs"]

    def wall0(d):
        c = d["acceltrace"]["clock"]
        return c["anchor"]["realtime_ns"] + c["base_monotonic_ns"] - c["anchor"]["monotonic_ns"]
    assert ins[1]["shift_us"] - ins[0]["shift_us"] == pytest.approx(
        (wall0(db) - wall0(da)) / 1000.0, abs=0.002)


def test_merge_refuses_what_is_not_a_trace(tmp_path):
    need_build()
    bad = tmp_path / "x.json"
    bad.write_text("{\"no\": 1}")
    r = run(["merge", "-o", str(tmp_path / "m.json"), str(bad)])
    assert r.returncode == 2 and "not a Chrome trace" in r.stderr
    bad.write_text("{")
    assert run(["merge", "-o", str(tmp_path / "m.json"), str(bad)]).returncode == 2


def _torch_trace(tmp_path):
    """A real torch.profiler trace (CPU only), made by this venv's torch."""
    from test_analysers import need_module
    need_module("torch")
    out = str(tmp_path / "torch.json")
    code = ("import torch\n"
            "from torch.profiler import profile, ProfilerActivity\n"
            "with profile(activities=[ProfilerActivity.CPU]) as p:\n"
            "    x = torch.ones(32, 32)\n"
            "    (x @ x).sum()\n"
            "p.export_chrome_trace(%r)\n" % out)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def _merged_ok(inputs, out):
    """merge exits 0 and its trace holds every object event of every input."""
    r = run(["merge", "-o", out] + inputs)
    assert r.returncode == 0, (inputs, r.returncode, r.stderr)
    m = load(out)
    want = sum(sum(isinstance(e, dict) for e in load(i)["traceEvents"]) for i in inputs)
    assert len(m["traceEvents"]) == want
    for e in m["traceEvents"]:
        if "ts" in e:
            assert isinstance(e["ts"], (int, float)) and abs(e["ts"]) < 1e15, e
    return m


def test_merge_takes_a_torch_profiler_trace_in_every_order(tmp_path):
    """A foreign trace first used to crash merge (a NULL boot id compared
    with the acceltrace trace's): every order of inputs merges."""
    need_build()
    t = _torch_trace(tmp_path)
    a, b = _two_traces(tmp_path)
    orders = [[t, a], [a, t], [t, a, b], [a, t, b], [a, b, t], [t, t]]
    for k, ins in enumerate(orders):
        m = _merged_ok(ins, str(tmp_path / ("m%d.json" % k)))
        al = m["acceltrace"]["merge"]["alignment"]
        assert al["method"] == "wall clock" and al["error_bound_ns"] is None, (ins, al)
        assert [i["file"] for i in m["acceltrace"]["merge"]["inputs"]] == ins


BASE = 1790000000000000000  # a wall clock (ns) for the foreign traces that state one

FOREIGN = [
    # (what, document, refused beside an acceltrace trace, refused alone): None merges, a
    # word is what the one line of the refusal names
    ("bare events", {"baseTimeNanoseconds": BASE, "traceEvents": [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}, None, None),
    ("no clock at all", {"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1,
                                          "dur": 2}]}, "no clock", None),
    ("bare array", [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}],
     "no clock", None),
    ("acceltrace member of other types",
     {"baseTimeNanoseconds": BASE, "acceltrace": {"host": {"boot_id": 7}, "clock": "x"},
      "traceEvents": []}, None, None),
    ("a boot id without a clock", {"baseTimeNanoseconds": BASE,
                                   "acceltrace": {"host": {"boot_id": "BOOT"}, "clock": {}},
                                   "traceEvents": [{"ph": "i", "name": "i", "pid": 2, "ts": 0}]},
     None, None),
    ("events that are not objects", {"baseTimeNanoseconds": BASE,
                                     "traceEvents": [1, None, "x", [], {"ph": "M"}]}, None, None),
    ("ids and pids at the limits",
     {"baseTimeNanoseconds": BASE, "traceEvents": [
         {"ph": "s", "name": "f", "id": 9223372036854775807, "pid": 4, "ts": 1},
         {"ph": "f", "name": "f", "id": -5, "pid": -1, "ts": 2, "bp": "e"},
         {"ph": "b", "name": "g", "id": "0x1", "pid": 4, "ts": 2},
         {"ph": "X", "name": "p", "pid": 1.5, "tid": 1, "ts": 3, "dur": 1},
         {"ph": "X", "name": "q", "pid": "s" * 400, "tid": 1, "ts": 3, "dur": 1},
         {"ph": "M", "name": "process_name", "pid": 9, "args": {"name": "\u00e9" * 600}}]},
     None, None),
    ("rank that is not a number", {"baseTimeNanoseconds": BASE, "distributedInfo": {"rank": "x"},
                                   "traceEvents": [{"ph": "i", "name": "i", "pid": 2, "ts": 0}]},
     None, None),
    ("huge rank", {"baseTimeNanoseconds": BASE, "distributedInfo": {"rank": 1e300},
                   "traceEvents": []}, "rank", "rank"),
    ("huge ts", {"baseTimeNanoseconds": BASE, "traceEvents": [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1e308, "dur": 1}]}, "ts", "ts"),
    ("huge base time", {"baseTimeNanoseconds": 1e30, "traceEvents": []},
     "baseTimeNanoseconds", "baseTimeNanoseconds"),
    ("negative base time", {"baseTimeNanoseconds": -5, "traceEvents": []},
     "baseTimeNanoseconds", "baseTimeNanoseconds"),
    ("huge monotonic base", {"baseTimeNanoseconds": BASE, "acceltrace": {
        "host": {"boot_id": "BOOT"}, "clock": {"base_monotonic_ns": 1e300}}, "traceEvents": []},
     "base_monotonic_ns", "base_monotonic_ns"),
    ("huge anchor", {"baseTimeNanoseconds": BASE, "acceltrace": {
        "host": {"boot_id": "other"}, "clock": {"base_monotonic_ns": 5, "anchor": {
            "monotonic_ns": -9e18, "realtime_ns": 9e18, "error_ns": 1}}}, "traceEvents": []},
     "anchor", "anchor"),
]


def _merged_checks(what, m):
    for e in m["traceEvents"]:
        if isinstance(e.get("ts"), (int, float)):
            assert abs(e["ts"]) < 1e15, (what, e)
    names = [e["args"]["name"] for e in m["traceEvents"]
             if e.get("name") == "process_name" and "name" in e.get("args", {})]
    assert all(n.startswith("rank ") for n in names), (what, names)
    strs = [e["pid"] for e in m["traceEvents"] if isinstance(e.get("pid"), str)]
    assert all(len(p) > 400 for p in strs), (what, strs)
    ids = [e["id"] for e in m["traceEvents"] if isinstance(e.get("id"), int)]
    assert all(-2 ** 63 <= i < 2 ** 63 for i in ids), (what, ids)


@pytest.mark.parametrize("what,doc,mixed,alone", FOREIGN, ids=[f[0] for f in FOREIGN])
def test_merge_of_foreign_json_works_or_is_refused_with_a_reason(tmp_path, what, doc, mixed,
                                                                 alone):
    need_build()
    a, _ = _two_traces(tmp_path)
    boot = load(a)["acceltrace"]["host"]["boot_id"]
    f = str(tmp_path / "foreign.json")
    with open(f, "w") as out:
        json.dump(json.loads(json.dumps(doc).replace("BOOT", boot)), out)
    for k, (ins, refused) in enumerate((([f, a], mixed), ([a, f], mixed), ([f], alone))):
        out = str(tmp_path / ("m%d.json" % k))
        r = run(["merge", "-o", out] + ins)
        assert r.returncode in (0, 2), (what, ins, r.returncode, r.stderr)
        if refused is None:
            assert r.returncode == 0, (what, ins, r.stderr)
            _merged_checks(what, load(out))
        else:
            lines = r.stderr.strip().splitlines()
            assert r.returncode == 2 and len(lines) == 1, (what, ins, r.stderr)
            assert f in lines[0] and refused in lines[0], (what, lines)
            assert not os.path.exists(out)


def test_merge_says_why_it_cannot_write(tmp_path):
    need_build()
    a, b = _two_traces(tmp_path)
    r = run(["merge", "-o", str(tmp_path / "no" / "m.json"), a, b])
    assert r.returncode == 2 and "No such file or directory" in r.stderr, r.stderr


def _big_trace(path, events, pid):
    """A generated trace of about 130 bytes an event (acceltrace's clock)."""
    with open(path, "w") as f:
        f.write('{"traceEvents":[')
        for i in range(events):
            f.write('%s{"ph":"X","cat":"kernel","name":"k%d","pid":%d,"tid":7,"ts":%d.5,'
                    '"dur":3.25,"args":{"correlation":%d,"External id":%d}}'
                    % ("," if i else "", i % 50, pid, i * 10, i, i // 10))
        f.write('],"baseTimeNanoseconds":1700000000000000000,'
                '"distributedInfo":{"rank":%d}}' % pid)


def test_merge_streams_in_bounded_memory(tmp_path):
    """Two traces of ~100 MB each merge with a 64 MiB limit on the whole
    address space (ulimit -v; so on the RSS too: a child's own peak RSS
    cannot be read here, it inherits this interpreter's at fork). The
    jansson-DOM merge needed ~15x its input (3.8 GB for 260 MB) and was
    refused by such a limit. Every event is there, in order, and standard
    input works as an input."""
    need_build()
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    _big_trace(a, 750000, 1)
    _big_trace(b, 750000, 2)
    assert os.path.getsize(a) > 95e6
    out = str(tmp_path / "m.json")

    err = str(tmp_path / "err")
    with open(b, "rb") as stdin, open(err, "w") as e:
        # the limit set by the shell that execs merge: no fork of this
        # (large) interpreter whose peak RSS the child would inherit
        p = subprocess.Popen(["/bin/sh", "-c", 'ulimit -v 65536 && exec "$@"', "sh",
                              os.path.join(BIN, "acceltrace"), "merge", "-o", out, a, "-"],
                             stdin=stdin, stdout=e, stderr=e)
        p.wait(timeout=600)
    with open(err) as e:
        assert p.returncode == 0, e.read()
    d = load(out)
    ev = d["traceEvents"]
    assert len(ev) == 1500000
    assert [e["args"]["correlation"] for e in ev[:3]] == [0, 1, 2]
    assert ev[750000]["args"]["correlation"] == 0 and ev[750000]["pid"] != ev[0]["pid"]
    assert [i["file"] for i in d["acceltrace"]["merge"]["inputs"]] == [a, "-"]
    assert [i["rank"] for i in d["acceltrace"]["merge"]["inputs"]] == [1, 2]


@pytest.mark.parametrize("golden, inputs", [
    ("golden_boot.json", ["rank0.json", "rank1.json.gz"]),
    ("golden_torch_first.json", ["torch.json", "rank0.json", "rank1.json.gz"]),
    ("golden_mixed.json", ["rank1.json.gz", "torch.json", "rank0.json"]),
])
def test_streaming_merge_equals_the_document_merge(tmp_path, golden, inputs):
    """The streaming merge writes what the document-loading merge wrote
    (tests/data/merge/golden_*.json, made by 8bd5b2c's merge on the inputs
    beside them: one boot, a torch.profiler trace first and in the middle,
    gzip input, flows, string and large ids, async events, counters,
    device properties), compared as parsed JSON."""
    need_build()
    data = os.path.join(REPO, "tests", "data", "merge")
    out = str(tmp_path / "m.json")
    r = run(["merge", "-o", out] + inputs, cwd=data)
    assert r.returncode == 0, r.stderr
    assert load(out) == load(os.path.join(data, golden))


def test_merge_writes_every_value_back_as_read(tmp_path):
    """merge writes its events by hand (not through jansson's dump): every
    value an event holds reads back the same, strings with quotes, control
    characters and non-ASCII, reals short and long (three decimals, or
    17 digits), integers at both ends, nested arrays and objects. Only pid
    and ts are mapped (one input, no clock: ts as written)."""
    need_build()
    args = {"quote\"back\\slash": "tab\there\nnl\r\x01\x1f/\u00e9\u4e2d\U0001f600",
            "reals": [0.1 + 0.2, 1e300, -2.5e-300, 23320.314, -0.5, 123456789012.345, 3.0],
            "ints": [0, -1, 9223372036854775807, -9223372036854775808, 10 ** 18],
            "nested": {"a": [True, False, None, {"b": []}], "": {}}, "empty": ""}
    ev = {"ph": "X", "cat": "c\u00e9", "name": "n\"\\", "pid": 1, "tid": 2, "ts": 1.5,
          "dur": 0.001, "args": args}
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"traceEvents": [ev]}), encoding="utf-8")
    out = str(tmp_path / "m.json")
    r = run(["merge", "-o", out, str(src)])
    assert r.returncode == 0, r.stderr
    got = [e for e in load(out)["traceEvents"] if e.get("ph") == "X"]
    assert len(got) == 1
    g = got[0]
    for k in ("cat", "name", "tid", "dur", "args"):
        assert g[k] == ev[k], k
    assert json.dumps(g["args"], sort_keys=True) == json.dumps(args, sort_keys=True)
