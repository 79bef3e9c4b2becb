"""One trace per rank of a torchrun job, as HTA and the launchers expect.

torchrun --nproc_per_node=2 (gloo on the CPU; each rank launches OpenCL
kernels through pyopencl and all-reduces once per step; dist_workload.py):
under `acceltrace run -o 'DIR/trace.%r.json'` and under torch.profiler in
each rank (the plugin): two traces with the right ranks in distributedInfo;
HTA loads each folder as two ranks and its per-rank analyses run; `merge`
yields one valid trace with both ranks.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO
from test_analysers import BIN, LIB, need_build, need_module

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(REPO, "tests", "trace_check"))


def torchrun(out, *extra, wrap=(), env=None):
    cmd = list(wrap) + [sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc_per_node=2", os.path.join(HERE, "dist_workload.py"), out, *extra]
    full = dict(os.environ, **(env or {}))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=full)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    # leave only the traces in the folder: HTA reads every file as a rank
    launched = {}
    for r_ in (0, 1):
        p = os.path.join(out, "launched.%d.json" % r_)
        with open(p) as f:
            launched[r_] = json.load(f)["kernels"]
        os.remove(p)
    return r, launched


def kernels(path):
    with open(path) as f:
        d = json.load(f)
    return d, [e for e in d["traceEvents"] if e.get("cat") == "kernel"]


def hta_per_rank(folder, launched):
    need_module("hta")
    from acceltrace.hta import TraceAnalysis
    a = TraceAnalysis(folder, include_last_profiler_step=True)
    assert a.t.get_ranks() == [0, 1]
    by_name = a.get_gpu_kernel_breakdown(visualize=False)[1]
    assert set(by_name["rank"]) == {0, 1}
    temporal = a.get_temporal_breakdown(visualize=False)
    assert sorted(temporal["rank"]) == [0, 1]
    idle = a.get_idle_time_breakdown(ranks=[0, 1], visualize=False)[0]
    assert set(idle["rank"]) == {0, 1}
    queue = a.get_queue_length_summary(ranks=[0, 1])
    assert set(queue.index.get_level_values("rank")) == {0, 1}
    stats = a.get_cuda_kernel_launch_stats(ranks=[0, 1], visualize=False)
    assert set(stats) == {0, 1} and all(len(v) >= launched[r] for r, v in stats.items())


@pytest.fixture(scope="module")
def run_traces(tmp_path_factory):
    need_build()
    need_module("torch")
    need_module("pyopencl")
    out = str(tmp_path_factory.mktemp("run"))
    r, launched = torchrun(out, wrap=(os.path.join(BIN, "acceltrace"), "run", "--no-summary",
                                      "-o", os.path.join(out, "trace.%r.json"), "--"))
    return out, launched, r.stderr


def test_run_writes_one_trace_per_rank(run_traces):
    out, launched, stderr = run_traces
    assert sorted(os.listdir(out)) == ["trace.0.json", "trace.1.json"], stderr
    for rank in (0, 1):
        d, ks = kernels(os.path.join(out, "trace.%d.json" % rank))
        info = d["distributedInfo"]
        assert info["rank"] == rank and info["world_size"] == 2 and info["local_rank"] == rank
        assert len(ks) == launched[rank]


def test_hta_reads_the_run_traces_as_two_ranks(run_traces):
    hta_per_rank(run_traces[0], run_traces[1])


def test_merge_gives_one_valid_trace_with_both_ranks(run_traces, tmp_path):
    import validate_trace
    out = str(tmp_path / "all.json")
    ins = [os.path.join(run_traces[0], "trace.%d.json" % r) for r in (0, 1)]
    r = subprocess.run([os.path.join(BIN, "acceltrace"), "merge", "-o", out] + ins,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        d = json.load(f)
    assert validate_trace.validate(d) == []
    merge = d["acceltrace"]["merge"]
    assert [i["rank"] for i in merge["inputs"]] == [0, 1]
    assert merge["alignment"] == {"method": "monotonic clock (one boot)", "error_bound_ns": 0}
    names = [e["args"]["name"] for e in d["traceEvents"] if e.get("name") == "process_name"]
    assert any(n.startswith("rank 0 \u00b7 ") for n in names)
    assert any(n.startswith("rank 1 \u00b7 ") for n in names)
    ks = [e for e in d["traceEvents"] if e.get("cat") == "kernel"]
    assert len(ks) == sum(run_traces[1].values())
    # each rank's device keeps its own pid, and args.device follows it
    assert len({e["pid"] for e in ks}) == 2 and all(e["args"]["device"] == e["pid"] for e in ks)
    # the same events, shifted by one offset per input
    for rank, path in enumerate(ins):
        with open(path) as f:
            src = json.load(f)
        shift = merge["inputs"][rank]["shift_us"]
        a = sorted(e["ts"] for e in src["traceEvents"] if e.get("cat") == "kernel")
        pids = set(merge["inputs"][rank]["pids"].values())
        b = sorted(e["ts"] for e in ks if e["pid"] in pids)
        assert b == pytest.approx([t + shift for t in a], abs=0.002)


def test_torch_profiler_in_each_rank(tmp_path):
    need_build()
    need_module("torch")
    need_module("pyopencl")
    import acceltrace.torch as at
    if not at.plugin_loaded():
        if os.environ.get("CI"):
            pytest.fail("the torch plugin is not loaded: %s" % at.plugin_error())
        pytest.skip("the torch plugin is not loaded: %s" % at.plugin_error())
    out = str(tmp_path)
    _, launched = torchrun(out, "--profile", env={"OPENCL_LAYERS": LIB})
    assert sorted(os.listdir(out)) == ["rank0.json", "rank1.json"]
    for rank in (0, 1):
        d, ks = kernels(os.path.join(out, "rank%d.json" % rank))
        info = d["distributedInfo"]
        assert info["rank"] == rank and info["backend"] == "gloo" and info["local_rank"] == rank
        assert len(ks) == launched[rank]
    hta_per_rank(out, launched)
    # torch.profiler's traces merge too: placed by their wall clocks
    merged = os.path.join(out, "..", "torch-merged.json")
    r = subprocess.run([os.path.join(BIN, "acceltrace"), "merge", "-o", merged,
                        os.path.join(out, "rank0.json"), os.path.join(out, "rank1.json")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(merged) as f:
        m = json.load(f)
    assert m["acceltrace"]["merge"]["alignment"]["method"] == "wall clock"
    assert m["acceltrace"]["merge"]["alignment"]["error_bound_ns"] is None
    ks = [e for e in m["traceEvents"] if e.get("cat") == "kernel"]
    assert sorted({e["pid"] for e in ks}) == [0, 1]
    assert all(e["args"]["device"] == e["pid"] for e in ks)
    names = [e["args"]["name"] for e in m["traceEvents"] if e.get("name") == "process_name"]
    assert {n.split(" \u00b7 ")[0] for n in names} == {"rank 0", "rank 1"}
