"""`acceltrace stats`: named reports over a SQLite trace (issue 33 part 2).

vecops (PoCL) traced to t.sqlite; each summary report checked against the
answer computed here from the database's own views with Python's
statistics module (count, total, average, median, min, max, sample
standard deviation); time units, csv and json; the reports listed; bad
inputs (an unknown report, a file that is neither a database nor JSON, a
corrupt database) answered with one line and exit 2; a JSON trace read
through a temporary SQLite trace.
"""

import json
import os
import sqlite3
import statistics
import subprocess

import pytest

from test_analysers import BIN, need_build

ACT = os.path.join(BIN, "acceltrace")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    need_build()
    d = tmp_path_factory.mktemp("stats")
    out = str(d / "t.sqlite")
    r = subprocess.run([ACT, "run", "--no-summary", "-f", "-o", out, "--",
                        os.path.join(BIN, "vecops")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def stats(*args):
    return subprocess.run([ACT, "stats", *args], capture_output=True, text=True, timeout=120)


def report(db, name, *extra):
    r = stats("--report", name, "--format", "json", *extra, db)
    assert r.returncode == 0, r.stderr
    (rep,) = json.loads(r.stdout)
    assert rep["report"] == name and rep["file"] == db
    return rep["rows"]


def expected(db, view, group="name"):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT %s, dur_ns FROM %s" % (group, view)).fetchall()
    con.close()
    by = {}
    for k, d in rows:
        by.setdefault(k, []).append(d)
    total = sum(d for _, d in rows)
    return {k: {"Time (%)": 100.0 * sum(v) / total, "Total Time (ns)": sum(v), "n": len(v),
                "Avg (ns)": sum(v) / len(v), "Med (ns)": statistics.median(v),
                "Min (ns)": min(v), "Max (ns)": max(v),
                "StdDev (ns)": statistics.stdev(v) if len(v) > 1 else 0.0}
            for k, v in by.items()}


def check_sum(rows, want, count_col, name_col):
    assert {r[name_col] for r in rows} == set(want)
    for r in rows:
        w = want[r[name_col]]
        assert r[count_col] == w["n"]
        for col in ("Time (%)", "Total Time (ns)", "Avg (ns)", "Med (ns)", "Min (ns)",
                    "Max (ns)", "StdDev (ns)"):
            assert r[col] == pytest.approx(w[col], rel=1e-9, abs=1e-6), (r[name_col], col)


def test_kern_sum_against_the_database(db):
    rows = report(db, "kern_sum")
    check_sum(rows, expected(db, "kernels"), "Instances", "Name")
    totals = [r["Total Time (ns)"] for r in rows]
    assert totals == sorted(totals, reverse=True)


def test_api_sum_and_mem_time_sum_and_range_sum(db):
    check_sum(report(db, "api_sum"), expected(db, "api_calls"), "Num Calls", "Name")
    check_sum(report(db, "mem_time_sum"), expected(db, "memops"), "Count", "Operation")
    con = sqlite3.connect(db)
    n_ranges = con.execute("SELECT COUNT(*) FROM ranges").fetchone()[0]
    con.close()
    assert sum(r["Instances"] for r in report(db, "range_sum")) == n_ranges


def test_mem_sum_bytes_and_bandwidth(db):
    con = sqlite3.connect(db)
    want = {(k, n): (c, b, t) for k, n, c, b, t in con.execute(
        "SELECT kind, name, COUNT(*), SUM(bytes), SUM(dur_ns) FROM memops GROUP BY kind, name")}
    con.close()
    rows = report(db, "mem_sum")
    assert len(rows) == len(want) and rows
    for r in rows:
        c, b, t = want[(r["Kind"], r["Operation"])]
        assert (r["Count"], r["Total (B)"], r["Total Time (ns)"]) == (c, b, t)
        assert r["Bandwidth (GB/s)"] == pytest.approx(b / t)


def test_traces_and_rank_sum(db):
    con = sqlite3.connect(db)
    n_k = con.execute("SELECT COUNT(*) FROM kernels").fetchone()[0]
    n_a = con.execute("SELECT COUNT(*) FROM api_calls").fetchone()[0]
    con.close()
    kt = report(db, "kern_trace")
    assert len(kt) == n_k and all(r["Launch"] == "clEnqueueNDRangeKernel" for r in kt)
    assert [r["Start (ns)"] for r in kt] == sorted(r["Start (ns)"] for r in kt)
    assert len(report(db, "api_trace")) == n_a
    (rank,) = report(db, "rank_sum")
    assert rank["Kernels"] == n_k and 0 < rank["Device Busy (%)"] <= 100.0
    # busy: the union of the device intervals, computed here the plain way
    con = sqlite3.connect(db)
    iv = sorted(con.execute("SELECT start_ns, end_ns FROM kernels UNION ALL "
                            "SELECT start_ns, end_ns FROM memops").fetchall())
    con.close()
    busy, cur = 0, None
    for s, e in iv:
        if cur is None or s > cur[1]:
            if cur:
                busy += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    busy += cur[1] - cur[0]
    assert rank["Device Busy (ns)"] == busy
    assert report(db, "cl_builds")[0]["Call"] == "clBuildProgram"
    assert report(db, "cl_errors") == [] and report(db, "cl_leaks") == []


def test_time_units_csv_and_table(db):
    ns = {r["Name"]: r for r in report(db, "kern_sum")}
    ms = {r["Name"]: r for r in report(db, "kern_sum", "--timeunit", "ms")}
    for k in ns:
        assert ms[k]["Total Time (ms)"] == pytest.approx(ns[k]["Total Time (ns)"] / 1e6)
        assert ms[k]["Instances"] == ns[k]["Instances"]
    r = stats("--report", "kern_sum", "--format", "csv", db)
    lines = r.stdout.strip().splitlines()
    assert lines[0].startswith("Report,File,Time (%),Total Time (ns),Instances")
    assert len(lines) == 1 + len(ns)
    r = stats(db)  # the default reports, as a table
    assert r.returncode == 0
    for name in ("kern_sum", "api_sum", "mem_time_sum", "mem_sum", "range_sum"):
        assert " ** %s (%s):" % (name, db) in r.stdout


def test_list_and_bad_inputs(db, tmp_path):
    r = stats("--list")
    assert r.returncode == 0 and len([ln for ln in r.stdout.splitlines() if "_" in ln]) >= 11
    r = stats("--report", "kern_summ", db)
    assert r.returncode == 2 and "no report 'kern_summ'" in r.stderr
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(os.urandom(4096))
    r = stats(str(bad))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert str(bad) in r.stderr
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"SQLite format 3\0" + os.urandom(4096))
    r = stats(str(corrupt))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert str(corrupt) in r.stderr
    # A JSON trace is read through a SQLite trace made in a temporary folder.
    js = tmp_path / "t.json"
    js.write_text('{"traceEvents": []}')
    tmpd = tmp_path / "tmpd"
    tmpd.mkdir()
    r = subprocess.run([ACT, "stats", str(js)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, TMPDIR=str(tmpd)))
    assert r.returncode == 0 and "(no rows" in r.stdout, r.stderr
    assert not os.listdir(tmpd)
    r = stats("--format", "xml", db)
    assert r.returncode == 2
