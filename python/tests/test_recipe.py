"""`acceltrace recipe` (acceltrace.recipe, issue 33 part 3): every recipe
against answers computed by hand on a two-rank set written here, the same
output from DuckDB and from a local Dask cluster (one per module) on a
generated four-rank set, the Parquet cache, the pictures, the native
command's dispatch, and bad inputs (one line on stderr, exit 2)."""

import io
import json
import os
import sqlite3
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest

from conftest import REPO, missing

try:
    import dask  # noqa: F401
    import distributed  # noqa: F401
    import duckdb  # noqa: F401
    import matplotlib  # noqa: F401
    import pyarrow  # noqa: F401
except ImportError as exc:  # a skip here, a failure in CI (as conftest's missing())
    why = "the analysis packages are not installed (pip install acceltrace[analysis]): %s" % exc
    if os.environ.get("CI"):
        pytest.fail("CI: " + why, pytrace=False)
    pytest.skip(why, allow_module_level=True)

from acceltrace.recipe import RecipeError, cli, convert, engines, inputs, recipes  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "bench"))
import gen_ranks  # noqa: E402

ACT = os.path.join(REPO, "build", "bin", "acceltrace")


def X(cat, name, ts, dur, pid=0, tid=7, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


def write(path, rank, events, world=2, name="hand", base=1700000000000000000):
    doc = {"traceName": name, "baseTimeNanoseconds": base, "traceEvents": events}
    if rank is not None:
        doc["distributedInfo"] = {"rank": rank, "world_size": world}
    with open(path, "w") as f:
        json.dump(doc, f)
    return str(path)


def launch(corr, ts, dur):
    return X("opencl_runtime", "clEnqueueNDRangeKernel", ts, dur, pid=100, tid=100,
             correlation=corr)


def kernel(name, corr, ts, dur, stream=7):
    return X("kernel", name, ts, dur, tid=stream, correlation=corr, device=0, stream=stream)


def step(n, ts, dur):
    return X("user_annotation", "ProfilerStep#%d" % n, ts, dur, pid=100, tid=100)


@pytest.fixture
def hand(tmp_path):
    """Two ranks; every number the tests expect is worked out in comments."""
    d = tmp_path / "hand"
    d.mkdir()
    write(d / "r0.json", 0, [
        launch(1, 0, 2), launch(2, 3, 2), launch(3, 20, 1),
        kernel("A", 1, 4, 6),          # [4000, 10000]
        kernel("B", 2, 10.01, 5),      # [10010, 15010]
        kernel("A", 3, 25, 4),         # [25000, 29000]
        X("gpu_memcpy", "Memcpy HtoD", 30, 2, device=0, stream=7, bytes=64),  # [30000, 32000]
        step(0, 0, 16), step(1, 16, 18)])
    write(d / "r1.json", 1, [
        launch(1, 0, 1), launch(2, 1, 1),
        kernel("A", 1, 1.5, 8),                    # [1500, 9500]
        kernel("ncclAllReduce", 2, 5, 10, stream=8),  # [5000, 15000]
        step(0, 0, 20), step(1, 20, 10)])
    return str(d)


@pytest.fixture(scope="module")
def scheduler():
    """One local Dask cluster (2 workers, threads) for the module."""
    from distributed import LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as c:
        yield c.scheduler_address


def tables(name, inputs_, engine="duckdb", scheduler=None):
    rec = recipes.get(name)
    ranks = inputs.prepare(inputs_, jobs=1)
    return engines.run(rec, ranks, engine, scheduler)[1]


def rows(df):
    return [tuple(None if v != v else v for v in r) for r in df.itertuples(index=False)]


def command(args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(args)
    return rc, out.getvalue(), err.getvalue()


def test_kernel_sum_by_hand(hand):
    t = tables("kernel_sum", [hand])["kernel_sum"]
    # A: 6000, 4000 (rank 0), 8000 (rank 1); all: 33000 ns
    assert rows(t) == [
        (54.55, 18000, 3, 6000.0, 6000.0, 4000, 8000, 2000.0, 2, "A"),
        (30.3, 10000, 1, 10000.0, 10000.0, 10000, 10000, 0.0, 1, "ncclAllReduce"),
        (15.15, 5000, 1, 5000.0, 5000.0, 5000, 5000, 0.0, 1, "B")]


def test_rank_imbalance_by_hand(hand):
    t = tables("rank_imbalance", [hand])
    # rank 0: ops from 4000 to 32000, busy 6000+5000+4000+2000; rank 1: [1500, 15000] all busy
    assert rows(t["ranks"]) == [(0, 28000, 17000, 11000, 60.71, 15000, 3, 34000, 1),
                                (1, 13500, 13500, 0, 100.0, 18000, 2, 30000, 1)]
    assert rows(t["steps"]) == [("ProfilerStep#0", 2, 16000, 18000.0, 20000, 1, 20.0),
                                ("ProfilerStep#1", 2, 10000, 14000.0, 18000, 0, 44.44)]


def test_idle_by_hand(hand):
    t = tables("idle", [hand])["idle"]
    # rank 0 queue 7: B 10 ns after A (< 30: kernel wait); A#2 launched at 20000, after B
    # ended (15010): host wait 9990; the copy 1000 ns later, no launch: other
    assert rows(t) == [(0, 0, 7, 4, 28000, 11000, 39.29, 9990, 10, 1000, 90.82),
                       (1, 0, 7, 1, 8000, 0, 0.0, 0, 0, 0, None),
                       (1, 0, 8, 1, 10000, 0, 0.0, 0, 0, 0, None)]


def test_launch_delay_by_hand(hand):
    t = tables("launch_delay", [hand])["launch_delay"]
    # start - end of launch: rank 0 2000, 5010, 4000; rank 1 500, 3000 (nearest-rank)
    assert rows(t) == [(0, 3, 4000, 5010, 5010, 5010, 3670.0),
                       (1, 2, 500, 3000, 3000, 3000, 1750.0)]


def test_comm_overlap_by_hand(hand):
    t = tables("comm_overlap", [hand])["comm_overlap"]
    # rank 1: allreduce [5000, 15000] under A [1500, 9500]: 4500 overlapped
    assert rows(t) == [(1, 1, 10000, 10000, 4500, 5500, 45.0)]


def test_no_collectives_is_a_line_not_an_error(hand, tmp_path):
    rc, out, err = command(["comm_overlap", os.path.join(hand, "r0.json"),
                            "--format", "json"])
    assert rc == 2 and "rank 1 of world size 2 missing" in err  # world size 2: rank 1 needed
    solo = write(tmp_path / "solo.json", None, [kernel("A", 1, 1, 1)])
    rc, out, err = command(["comm_overlap", solo])
    assert rc == 0 and out.startswith("comm_overlap: no collectives recorded"), (out, err)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("gen"))
    gen_ranks.generate(d, 4, 3000, steps=5, jobs=1)
    return d


@pytest.mark.parametrize("name", sorted(recipes.RECIPES))
def test_duckdb_and_dask_give_the_same_output(name, generated, scheduler):
    a = tables(name, [generated])
    b = tables(name, [generated], "dask", scheduler)
    assert list(a) == list(b)
    for t in a:
        assert len(a[t]) > 0
        assert list(a[t].columns) == list(b[t].columns)
        assert rows(a[t]) == rows(b[t]), t
    # and the command's text is the same, byte for byte
    outs = [command([name, "--format", "csv", generated] + e)
            for e in ([], ["--engine", "dask", "--scheduler", scheduler])]
    assert outs[0][0] == outs[1][0] == 0 and outs[0][1] == outs[1][1]


def test_generated_straggler_and_totals(generated):
    t = tables("rank_imbalance", [generated])
    assert set(t["steps"]["Slowest Rank"]) == {1}  # gen_ranks' straggler
    k = tables("kernel_sum", [generated])["kernel_sum"]
    assert k["Instances"].sum() == 4 * (3000 - 3000 // 40)  # one op in 40 is a copy
    assert abs(k["Time (%)"].sum() - 100) < 0.1


def test_pictures_and_formats(hand, tmp_path):
    out = str(tmp_path / "pics")
    for name in recipes.RECIPES:
        rc, text, err = command([name, hand, "-o", out, "--timeunit", "us"])
        assert rc == 0, err
        for ext in ("png", "svg"):
            assert os.path.getsize(os.path.join(out, "%s.%s" % (name, ext))) > 1000
    rc, text, _ = command(["kernel_sum", hand, "--format", "json", "--timeunit", "us"])
    doc = json.loads(text)
    assert doc["tables"]["kernel_sum"][0]["Total Time (us)"] == 18.0
    rc, text, _ = command(["kernel_sum", hand, "--format", "csv"])
    assert text.splitlines()[1].startswith("kernel_sum,54.55,18000,3,")
    rc, text, _ = command(["kernel_sum", hand])
    assert "18,000" in text and text.splitlines()[0] == "kernel_sum"


def test_cache_made_once_and_again_when_the_trace_changes(hand):
    r0 = os.path.join(hand, "r0.json")
    inputs.prepare([hand], jobs=1)
    info = os.path.join(convert.cache_dir(r0), "info.json")
    assert os.path.dirname(os.path.dirname(info)) == os.path.join(hand, ".acceltrace-cache")
    m = os.stat(info).st_mtime_ns
    inputs.prepare([hand], jobs=1)
    assert os.stat(info).st_mtime_ns == m
    with open(r0) as f:
        doc = json.load(f)
    doc["traceEvents"].append(kernel("C", 9, 40, 1))
    with open(r0, "w") as f:
        json.dump(doc, f)
    assert convert.cached_info(r0) is None
    names = set(tables("kernel_sum", [hand])["kernel_sum"]["Name"])
    assert "C" in names


def test_sqlite_and_torch_inputs(tmp_path):
    """A SQLite trace (the views of docs/sqlite.md) beside a torch.profiler
    style JSON trace (cuda_runtime, no acceltrace fields): one run of two ranks."""
    db = str(tmp_path / "r0.sqlite")
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE meta(key TEXT, value TEXT, is_json INTEGER);
        INSERT INTO meta VALUES ('distributedInfo', '{"rank":0,"world_size":2}', 1),
                                ('base_ns', '1000000', 1), ('base_wall_ns', '1700000000000000000', 1);
        CREATE VIEW kernels AS SELECT 1001000 AS start_ns, 1004000 AS end_ns, 'gemm' AS name,
            0 AS device, 3 AS lane, NULL AS stream, 5 AS correlation, NULL AS external_id;
        CREATE VIEW api_calls AS SELECT 1000000 AS start_ns, 1000500 AS end_ns,
            'clEnqueueNDRangeKernel' AS name, 9 AS pid, 9 AS tid, 5 AS correlation;
        CREATE VIEW memops AS SELECT 1 AS start_ns, 1 AS end_ns, 'x' AS name, 0 AS device,
            0 AS lane, 'copy' AS kind, 0 AS bytes, 0 AS correlation WHERE 0;
        CREATE VIEW slices AS SELECT 'X' AS ph, 'user_annotation' AS category, 'r' AS name,
            9 AS pid, 9 AS tid, 1000000 AS start_ns, 1005000 AS end_ns;
    """)
    con.commit()
    con.close()
    write(tmp_path / "r1.json", 1, [
        X("cuda_runtime", "cudaLaunchKernel", 0, 1, pid=5, tid=5, correlation=8),
        X("kernel", "gemm", 2, 2, pid=0, tid=7, correlation=8, device=0, stream=7)], name=None)
    t = tables("kernel_sum", [str(tmp_path)])["kernel_sum"]
    assert rows(t) == [(100.0, 5000, 2, 2500.0, 2500.0, 2000, 3000, 707.1, 2, "gemm")]
    d = tables("launch_delay", [str(tmp_path)])["launch_delay"]
    assert rows(d)[0][:3] == (0, 1, 500) and rows(d)[1][:3] == (1, 1, 1000)


@pytest.mark.parametrize("case, message", [
    ("corrupt_json", "not a readable trace"),
    ("corrupt_sqlite", "not an acceltrace SQLite trace"),
    ("two_runs_names", "traces of different runs: trace names"),
    ("two_runs_rank_twice", "rank 1 is in two traces"),
    ("two_runs_times", "traces of different runs"),
    ("missing_rank", "rank 2 of world size 4 missing (have 0,1,3)"),
    ("unknown_recipe", "unknown recipe 'nope'"),
])
def test_bad_inputs_one_line_exit_2(case, message, tmp_path):
    d = tmp_path / case
    d.mkdir()
    ev = [kernel("A", 1, 1, 1)]
    name = "kernel_sum"
    if case == "corrupt_json":
        write(d / "r0.json", 0, ev)
        (d / "r1.json").write_text('{"traceEvents": [{"ph": "X", "cat": "kernel"')
    elif case == "corrupt_sqlite":
        write(d / "r0.json", 0, ev)
        (d / "r1.sqlite").write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    elif case == "two_runs_names":
        write(d / "r0.json", 0, ev)
        write(d / "r1.json", 1, ev, name="other")
    elif case == "two_runs_rank_twice":
        for r in ("a0", "a1", "b1"):
            write(d / (r + ".json"), int(r[1]), ev)
    elif case == "two_runs_times":
        write(d / "r0.json", 0, ev)
        write(d / "r1.json", 1, ev, base=1700000000000000000 + 3600 * 10**9)
    elif case == "missing_rank":
        for r in (0, 1, 3):
            write(d / ("r%d.json" % r), r, ev, world=4)
    else:
        write(d / "r0.json", None, ev)
        name = "nope"
    rc, out, err = command([name, str(d)])
    assert rc == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and err.startswith("acceltrace recipe: ") and message in err, err


def test_native_command_runs_the_recipe(hand):
    if not os.access(ACT, os.X_OK):
        missing("build/bin/acceltrace is not built")
    env = dict(os.environ, ACCELTRACE_PYTHON=sys.executable)
    p = subprocess.run([ACT, "recipe", "kernel_sum", "--format", "csv", hand],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[1].startswith("kernel_sum,54.55,18000,3,")
    p = subprocess.run([ACT, "recipe", "kernel_sum", "/nonexistent"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 2 and p.stderr == "acceltrace recipe: /nonexistent: no such file " \
                                             "or folder\n"
    env["ACCELTRACE_PYTHON"] = "/nonexistent/python"
    p = subprocess.run([ACT, "recipe", "kernel_sum", hand], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 2 and "ACCELTRACE_PYTHON" in p.stderr
    p = subprocess.run([sys.executable, "-m", "acceltrace", "recipe", "launch_delay", hand,
                        "--format", "csv"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "launch_delay,0,3,4000," in p.stdout, p.stderr


def test_recipe_error_is_an_exception_for_python_users(tmp_path):
    with pytest.raises(RecipeError, match="no traces in this folder"):
        inputs.prepare([str(tmp_path)])


def test_streamed_and_whole_json_reads_agree(hand, tmp_path, monkeypatch):
    """ijson's stream and json.load (where ijson is missing) give the same tables."""
    import pyarrow.parquet as pq
    src = os.path.join(hand, "r0.json")
    convert.convert(src)
    a = {t: pq.read_table(os.path.join(convert.cache_dir(src), t + ".parquet"))
         for t in convert.SCHEMAS}
    monkeypatch.setitem(sys.modules, "ijson", None)  # import ijson: ImportError
    facts = convert.convert(src)
    for t in convert.SCHEMAS:
        assert pq.read_table(os.path.join(convert.cache_dir(src), t + ".parquet")).equals(a[t])
    assert facts["rank"] == 0 and facts["rows"]["kernels"] == 3
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    with pytest.raises(RecipeError, match="not a readable trace"):
        convert.convert(str(bad))


def test_sqlite_exported_from_json_gives_the_same_answers(hand, tmp_path):
    """`acceltrace export -o r.sqlite r.json` of each rank: every recipe prints the
    same as on the JSON traces."""
    if not os.access(ACT, os.X_OK):
        missing("build/bin/acceltrace is not built")
    d = tmp_path / "sql"
    d.mkdir()
    for r in ("r0", "r1"):
        p = subprocess.run([ACT, "export", "--no-summary", "-o", str(d / (r + ".sqlite")),
                            os.path.join(hand, r + ".json")], capture_output=True, text=True,
                           timeout=120)
        if p.returncode:
            missing("this build's export cannot write SQLite from JSON: %s" % p.stderr.strip())
    for name in recipes.RECIPES:
        a, b = (command([name, "--format", "csv", x]) for x in (hand, str(d)))
        assert a[0] == b[0] == 0 and a[1] == b[1], (name, a, b)


def test_dask_without_a_scheduler_starts_its_own(hand):
    a = command(["launch_delay", "--format", "csv", hand])
    b = command(["launch_delay", "--format", "csv", "--engine", "dask", hand])
    assert a[0] == b[0] == 0 and a[1] == b[1], b[2]
    rc, out, err = command(["idle", "--scheduler", "tcp://127.0.0.1:8786", hand])
    assert rc == 2 and err == "acceltrace recipe: --scheduler is for --engine dask\n"
