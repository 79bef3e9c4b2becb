"""HolisticTraceAnalysis (HTA) and the TensorBoard plugin on acceltrace traces.

Two traces: `acceltrace run` of the bundled example (build/bin/vecops) and a
torch.profiler trace with kernels and several ProfilerSteps (the plugin,
pyopencl kernels and copies; torch_steps_workload.py). On each, HTA's kernel
breakdown, temporal breakdown, idle-time breakdown, queue-length summary and
kernel-launch statistics return results whose kernel counts and device time
match the trace, and the TensorBoard plugin loads it with no warning and a
positive step time. A run trace written as .json.gz (several gzip members) is
read the same way by both, each through its own file reader. The pinned
versions are in scripts/python-env.sh.
"""

import gzip
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import zlib

import pytest

from conftest import REPO

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(REPO, "build", "bin")
LIB = os.path.join(REPO, "build", "lib", "libacceltrace.so")


def need_module(name):
    """The module, or a skip; with CI set a missing one is a failure."""
    try:
        return __import__(name)
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail("%s is needed (scripts/python-env.sh installs it): %s" % (name, exc))
        pytest.skip("%s is not installed: %s" % (name, exc))


def need_build():
    if not os.path.exists(os.path.join(BIN, "acceltrace")) or not os.path.exists(LIB):
        if os.environ.get("CI"):
            pytest.fail("build/ has no acceltrace command or libacceltrace.so")
        pytest.skip("build/ is not built")


def device_ops(trace):
    """The trace's kernels and copies/fills: name -> (count, total us)."""
    out = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            n, t = out.get(e["name"], (0, 0.0))
            out[e["name"]] = (n + 1, t + e["dur"])
    return out


@pytest.fixture(scope="module")
def run_trace(tmp_path_factory):
    need_build()
    d = tmp_path_factory.mktemp("run")
    path = str(d / "vecops.json")
    r = subprocess.run([os.path.join(BIN, "acceltrace"), "run", "--no-summary", "-o", path, "--",
                        os.path.join(BIN, "vecops")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return str(d), path


@pytest.fixture(scope="module")
def torch_trace(tmp_path_factory):
    need_build()
    need_module("torch")
    need_module("pyopencl")
    import acceltrace.torch as at
    if not at.plugin_loaded():
        if os.environ.get("CI"):
            pytest.fail("the torch plugin is not loaded: %s" % at.plugin_error())
        pytest.skip("the torch plugin is not loaded: %s" % at.plugin_error())
    d = tmp_path_factory.mktemp("torch")
    env = dict(os.environ, OPENCL_LAYERS=LIB)
    r = subprocess.run([sys.executable, os.path.join(HERE, "torch_steps_workload.py"), str(d)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(os.path.join(str(d), "counts.json")) as f:
        counts = json.load(f)
    assert counts["errors"] == []
    # HTA reads every trace of the folder as a rank: keep only the trace.
    os.remove(os.path.join(str(d), "counts.json"))
    return str(d), os.path.join(str(d), "trace.json"), counts


def load(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        return json.load(f)


def gzip_members(path):
    """How many gzip members the file is made of."""
    with open(path, "rb") as f:
        data = f.read()
    n = 0
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        d.decompress(data)
        assert d.eof, "a cut gzip member"
        data = d.unused_data
        n += 1
    return n


@pytest.fixture(scope="module")
def gz_trace(tmp_path_factory):
    """`acceltrace run -o NAME.json.gz` of 6 000 launches: ~3 MB of JSON,
    so several gzip members (one per 1 MiB buffer, docs/trace-format.md)."""
    need_build()
    d = tmp_path_factory.mktemp("gz")
    path = str(d / "launches.json.gz")
    r = subprocess.run([os.path.join(BIN, "acceltrace"), "run", "--no-summary", "-o", path, "--",
                        os.path.join(BIN, "stream_app"), "launches", "6000"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return str(d), path


def hta_checks(folder, trace):
    need_module("hta")
    from acceltrace.hta import TraceAnalysis
    # include_last_profiler_step: HTA drops the last step's device ops by
    # default; the counts below are the whole trace's.
    analyzer = TraceAnalysis(folder, include_last_profiler_step=True)
    ops = device_ops(trace)
    n_ops = sum(n for n, _ in ops.values())
    total_us = sum(t for _, t in ops.values())
    assert n_ops > 0

    by_type, by_name = analyzer.get_gpu_kernel_breakdown(visualize=False)
    assert not by_type.empty and not by_name.empty
    # Per name: the count is sum / mean (HTA gives no count column); its
    # times are whole us.
    got = {r["name"]: (round(r["sum (us)"] / r["mean (us)"]) if r["mean (us)"] else None,
                       float(r["sum (us)"])) for _, r in by_name.iterrows()}
    zero = [k for k, v in got.items() if v[0] is None]  # all under 1 us: count unknown
    for k in zero:
        got[k] = (ops[k][0], got[k][1])
    assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in ops.items()}
    for name, (n, t) in ops.items():
        assert abs(got[name][1] - t) <= 2 * n + 1, (name, got[name], t)  # whole-us rounding

    temporal = analyzer.get_temporal_breakdown(visualize=False)
    assert len(temporal) == 1
    row = temporal.iloc[0]
    busy = row["compute_time(us)"] + row["non_compute_time(us)"]
    assert busy > 0 and row["idle_time(us)"] >= 0

    idle = analyzer.get_idle_time_breakdown(visualize=False)[0]
    assert not idle.empty
    streams = {e["args"]["stream"] for e in trace["traceEvents"]
               if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    assert set(idle["stream"]) == streams

    queue = analyzer.get_queue_length_summary()
    assert queue is not None and not queue.empty
    assert set(queue.index.get_level_values("stream")) == streams

    launch = analyzer.get_cuda_kernel_launch_stats(visualize=False)[0]
    assert len(launch) == n_ops, (len(launch), n_ops)
    return analyzer


def tensorboard_checks(path):
    need_module("torch_tb_profiler")
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    logger = logging.getLogger("pytorch_profiler")  # the plugin's logger
    h = Keep(level=logging.WARNING)
    logger.addHandler(h)
    try:
        # the plugin's own file reader (it inflates a .gz name)
        data = RunProfileData.parse("worker0", 0, path, tempfile.gettempdir())
        run = RunGenerator("worker0", 0, data).generate_run_profile()
    finally:
        logger.removeHandler(h)
    assert [r.getMessage() for r in records if r.levelno >= logging.WARNING] == []
    step = run.overview["performance"][0]
    assert step["name"] == "Average Step Time"
    assert step["value"] > 0, step
    assert data.has_kernel
    return data


def test_hta_on_a_run_trace(run_trace):
    folder, path = run_trace
    trace = load(path)
    hta_checks(folder, trace)


def test_tensorboard_on_a_run_trace(run_trace):
    tensorboard_checks(run_trace[1])


def test_hta_reads_a_gzip_trace(gz_trace):
    folder, path = gz_trace
    assert gzip_members(path) >= 2
    trace = load(path)
    assert len(device_ops(trace)) > 0
    hta_checks(folder, trace)  # HTA opens the folder's .json.gz itself


def test_tensorboard_reads_a_gzip_trace(gz_trace):
    tensorboard_checks(gz_trace[1])


def test_hta_with_kernels_shorter_than_a_microsecond(tmp_path):
    """HTA's own rounding (start up, end down) makes each of these -1 us
    long and its temporal breakdown assert; acceltrace.hta's reads them
    0 us long, in order, and every analysis runs."""
    need_module("hta")
    from acceltrace.hta import TraceAnalysis
    ev = []
    for i in range(50):
        ts = 1000 + 2.0 * i + 0.3
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "clEnqueueNDRangeKernel", "pid": 100,
                   "tid": 100, "ts": ts - 0.2, "dur": 0.1, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts,
                   "dur": 0.4, "args": {"stream": 7, "device": 0, "correlation": i + 1}})
    with open(tmp_path / "t.json", "w") as f:
        json.dump({"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": ev}, f)
    analyzer = TraceAnalysis(str(tmp_path), include_last_profiler_step=True)
    df = analyzer.t.get_trace(0)
    assert (df["dur"] >= 0).all()
    kernels = df[df["stream"].ne(-1)]
    # floor(start), from the first event at floor(1000.1)
    assert sorted(kernels["ts"]) == [2 * i for i in range(50)]
    row = analyzer.get_temporal_breakdown(visualize=False).iloc[0]
    assert 0 <= row["idle_time(us)"] <= 98  # first start 1000 to last end 1098
    by_name = analyzer.get_gpu_kernel_breakdown(visualize=False)[1]
    assert (by_name["sum (us)"] >= 0).all()
    assert len(analyzer.get_cuda_kernel_launch_stats(visualize=False)[0]) == 50


def test_hta_on_a_torch_profiler_trace_with_steps(torch_trace):
    folder, path, counts = torch_trace
    trace = load(path)
    steps = [e for e in trace["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    assert len(steps) == counts["steps"]
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert len(kernels) == counts["kernels"]
    # correlation on both ends of every launch (HTA joins on it)
    markers = {e["args"]["correlation"] for e in trace["traceEvents"]
               if e.get("cat") == "privateuse1_runtime"}
    assert {e["args"]["correlation"] for e in kernels} <= markers
    hta_checks(folder, trace)


def test_tensorboard_on_a_torch_profiler_trace(torch_trace):
    data = tensorboard_checks(torch_trace[1])
    assert len(data.steps_names) == torch_trace[2]["steps"]


def test_device_fields_follow_kineto(run_trace):
    trace = load(run_trace[1])
    for e in trace["traceEvents"]:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            a = e["args"]
            assert isinstance(a["stream"], int) and isinstance(a["device"], int)
            assert a["device"] == e["pid"] < 64
            assert a["queue"].startswith("0x")  # the handle is kept
            if e["cat"] == "gpu_memcpy" and e["dur"] > 0:
                assert a["memory bandwidth (GB/s)"] == pytest.approx(a["bytes"] / (e["dur"] * 1e3),
                                                                     rel=0.01)
    names = [e["args"]["name"] for e in trace["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e["pid"] < 64]
    # "<device> · queue N", and vecops' out-of-order queue says so
    assert all(re.search(r" \u00b7 queue \d+", n) for n in names), names
    assert any(re.search(r" \u00b7 queue \d+ \(out-of-order\)", n) for n in names), names
    assert not any(n.startswith("queue 0x") for n in names)


def test_run_trace_has_the_shape_kineto_writes(run_trace, torch_trace):
    """The same members and field types as the trace kineto wrote for the
    torch.profiler run (its CPU side, and the device ops it wrote for us)."""
    ours, kineto = load(run_trace[1]), load(torch_trace[1])
    for key in ("schemaVersion", "displayTimeUnit", "baseTimeNanoseconds", "deviceProperties",
                "traceEvents"):
        assert type(ours[key]) is type(kineto[key]), key

    def fields(trace, cat):
        evs = [e for e in trace["traceEvents"] if e.get("cat") == cat and e.get("ph") == "X"]
        assert evs, cat
        return {k: type(v) for e in evs for k, v in e.items() if k != "args"}, \
            {k: type(v) for e in evs for k, v in e.get("args", {}).items()}

    for cat in ("kernel", "gpu_memcpy"):
        top_o, args_o = fields(ours, cat)
        top_k, args_k = fields(kineto, cat)
        assert {k: top_o.get(k) for k in top_k} == top_k, cat
        for k in ("correlation", "device", "stream"):
            assert args_o[k] is args_k[k] is int, (cat, k)
    # a launch carries its correlation, as kineto's runtime events do
    _, launch_o = fields(ours, "opencl_runtime")
    _, launch_k = fields(kineto, "privateuse1_runtime")
    assert launch_o["correlation"] is launch_k["correlation"] is int
    # the device's process: named and sorted the way kineto does it
    for t in (ours, kineto):
        dev = {e["pid"] for e in t["traceEvents"] if e.get("cat") == "kernel"}
        sort = {e["pid"]: e["args"]["sort_index"] for e in t["traceEvents"]
                if e.get("name") == "process_sort_index"}
        assert all(sort[p] >= 5000000 for p in dev)
