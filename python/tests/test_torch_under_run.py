"""torch ops under `acceltrace run`, with no change to the program (issue 31,
part 1).

`run` gives a Python program its start-up hook (python/pyhook): when the
program imports torch, the plugin observes torch's operators and
record_function ranges (a global RecordFunction observer). Checked here on
the CPU build of torch: aten ops as cpu_op slices with kineto's Sequence
number and Fwd thread id, record_function as user_annotation, an OpenCL
kernel launched inside a range linked to it by External id, --torch=off,
the program's own sitecustomize still run, sys.path untouched, and a plugin
for another torch refused with one line.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import OCL_PROLOGUE, missing
from test_analysers import BIN, LIB, need_build, need_module

ACCELTRACE = os.path.join(BIN, "acceltrace")
PLUGIN = os.path.join(os.path.dirname(LIB), "libacceltrace_torch.so")

TORCH_SCRIPT = textwrap.dedent('''\
    import sys
    import torch
    x = torch.ones(64, 64, requires_grad=True)
    with torch.profiler.record_function("my_step"):
        y = (x @ x).relu().sum()
    y.backward()
    print("sys.path clean:", not any("acceltrace-pyhook" in p for p in sys.path))
    ''')


def need_plugin():
    need_build()
    need_module("torch")
    if not os.path.exists(PLUGIN):
        missing("the torch plugin is not built (%s)" % PLUGIN)


def run(tmp_path, script, *opts, env=None):
    p = tmp_path / "prog.py"
    p.write_text(script)
    out = str(tmp_path / "t.json")
    full = dict(os.environ, **(env or {}))
    r = subprocess.run([ACCELTRACE, "run", "--no-summary", "-f", "-o", out, *opts, "--",
                        sys.executable, str(p)], capture_output=True, text=True, timeout=300,
                       env=full)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(out) as f:
        return json.load(f)["traceEvents"], r


def ops(events, name=None):
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"
            and e["name"] != "process" and (name is None or e["name"] == name)]


def test_aten_ops_and_ranges_with_no_code_change(tmp_path):
    need_plugin()
    events, r = run(tmp_path, TORCH_SCRIPT)
    assert "sys.path clean: True" in r.stdout
    mm = ops(events, "aten::mm")
    assert len(mm) == 3  # forward, and two in MmBackward0
    assert any(e["args"].get("Sequence number") == 0 for e in mm)
    assert all("External id" in e["args"] for e in mm)
    step = [e for e in events if e.get("cat") == "user_annotation" and e["name"] == "my_step"]
    assert len(step) == 1
    # the forward matmul lies inside my_step, on the same thread
    fwd = [e for e in ops(events, "aten::matmul")][0]
    s = step[0]
    assert fwd["tid"] == s["tid"] and s["ts"] <= fwd["ts"] <= fwd["ts"] + fwd["dur"] <= \
        s["ts"] + s["dur"] + 0.001
    # backward: kineto's linkage to the forward op
    back = ops(events, "MmBackward0")
    assert len(back) == 1 and back[0]["args"]["Sequence number"] == 0
    assert back[0]["args"]["Fwd thread id"] >= 1


def test_torch_off(tmp_path):
    need_plugin()
    events, r = run(tmp_path, TORCH_SCRIPT, "--torch=off")
    assert ops(events) == []
    assert "sys.path clean: True" in r.stdout
    r = subprocess.run([ACCELTRACE, "run", "--torch=maybe", "--", "true"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "--torch wants on or off" in r.stderr


def test_a_kernel_inside_a_range_takes_its_external_id(tmp_path):
    need_plugin()
    need_module("pyopencl")
    script = textwrap.dedent('''\
        import numpy as np
        import pyopencl as cl
        import torch
        ctx = cl.create_some_context(interactive=False)
        q = cl.CommandQueue(ctx)
        prg = cl.Program(ctx, "__kernel void k(__global float *y) { y[get_global_id(0)] += 1.0f; }").build()
        d = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
        with torch.profiler.record_function("launch_here"):
            prg.k(q, (1024,), None, d)
        q.finish()
        ''')
    events, _ = run(tmp_path, script)
    rng = [e for e in events if e.get("name") == "launch_here" and e.get("ph") == "X"
           and e.get("cat") == "user_annotation"]
    assert len(rng) == 1
    ext = rng[0]["args"]["External id"]
    launch = [e for e in events if e.get("name") == "clEnqueueNDRangeKernel"
              and e.get("cat") != "kernel" and e.get("ph") == "X"]
    kernel = [e for e in events if e.get("cat") == "kernel"]
    assert len(launch) == 1 and len(kernel) == 1
    assert launch[0]["args"]["External id"] == ext
    assert kernel[0]["args"]["External id"] == ext


def test_user_ranges_are_projected_onto_the_device_lanes(tmp_path):
    """kineto's gpu_user_annotation (what HTA's user-annotation breakdown
    reads): each kernel's innermost user range, not an operator, drawn on
    the kernel's device lane from its first kernel's start to its last
    one's end, with the range's External id."""
    need_plugin()
    need_module("pyopencl")
    script = textwrap.dedent('''\
        import ctypes
        import pyopencl as cl
        import torch
        lib = ctypes.CDLL(None)
        ctx = cl.create_some_context(interactive=False)
        q = cl.CommandQueue(ctx)
        prg = cl.Program(ctx, "__kernel void k(__global float *y) { y[get_global_id(0)] += 1.0f; }").build()
        d = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
        with torch.profiler.record_function("outer"):
            with torch.profiler.record_function("inner"):
                prg.k(q, (1024,), None, d)
                # an operator inside a range: the kernel's user range is "inner"
                lib.act__op_push(b"aten::fake", 1, -1, 0)
                prg.k(q, (1024,), None, d)
                lib.act_range_pop()
            prg.k(q, (1024,), None, d)
        prg.k(q, (1024,), None, d)  # in no range
        q.finish()
        ''')
    events, _ = run(tmp_path, script)
    ext = {e["name"]: e["args"].get("External id") for e in events
           if e.get("cat") in ("user_annotation", "cpu_op") and e.get("ph") == "X"}
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    assert len(kernels) == 4
    gua = sorted((e for e in events if e.get("cat") == "gpu_user_annotation"),
                 key=lambda e: e["ts"])
    assert [e["name"] for e in gua] == ["inner", "outer"], gua
    inner, outer = gua
    lane = (kernels[0]["pid"], kernels[0]["tid"])
    assert all((e["pid"], e["tid"]) == lane for e in gua)
    assert inner["ph"] == "X" and inner["args"]["External id"] == ext["inner"]
    assert outer["args"]["External id"] == ext["outer"]
    assert inner["ts"] == kernels[0]["ts"]
    assert abs(inner["ts"] + inner["dur"] - kernels[1]["ts"] - kernels[1]["dur"]) < 0.002
    assert outer["ts"] == kernels[2]["ts"]
    assert abs(outer["dur"] - kernels[2]["dur"]) < 0.002
    assert kernels[1]["args"]["External id"] == ext["aten::fake"]


def test_the_programs_own_sitecustomize_still_runs(tmp_path):
    need_plugin()
    mine = tmp_path / "site"
    mine.mkdir()
    (mine / "sitecustomize.py").write_text("import builtins\nbuiltins.MINE = 42\n")
    script = TORCH_SCRIPT + "import builtins\nprint('mine', getattr(builtins, 'MINE', None))\n"
    events, r = run(tmp_path, script, env={"PYTHONPATH": str(mine)})
    assert "mine 42" in r.stdout
    assert ops(events, "aten::mm")


def test_a_plugin_for_another_torch_is_refused_in_one_line(tmp_path):
    need_plugin()
    other = tmp_path / "libacceltrace_torch.so"
    shutil.copy(PLUGIN, other)
    (tmp_path / "libacceltrace_torch.so.json").write_text('{"torch_version": "1.0.0"}')
    events, r = run(tmp_path, TORCH_SCRIPT, env={"ACCELTRACE_TORCH_PLUGIN": str(other)})
    lines = [ln for ln in r.stderr.splitlines() if "torch ops are not recorded" in ln]
    assert len(lines) == 1 and "built for torch 1.0.0" in lines[0], r.stderr
    assert ops(events) == []


def test_torch_profiler_inside_run_keeps_its_kernels(tmp_path):
    """import acceltrace.torch + torch.profiler in a program started by
    `acceltrace run`: the profiler's session used to fail ("another tracer
    holds the resource", said only in last_errors()) and its trace had no
    kernel. Now the cycle reads the launcher's spool: kernels and flows in
    the profiler's trace, and in the run trace too."""
    need_plugin()
    need_module("pyopencl")
    prof = str(tmp_path / "prof.json")
    script = textwrap.dedent('''\
        import sys
        import pyopencl as cl
        import torch
        import acceltrace.torch as at
        from torch.profiler import profile, ProfilerActivity, record_function
        ctx = cl.create_some_context(interactive=False)
        q = cl.CommandQueue(ctx)
        prg = cl.Program(ctx, "__kernel void k(__global float *y) { y[get_global_id(0)] += 1.0f; }").build()
        d = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
        prg.k(q, (1024,), None, d)  # before the cycle: not in the profiler's trace
        q.finish()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as p:
            for _ in range(3):
                with record_function("launch"):
                    prg.k(q, (1024,), None, d)
            q.finish()
        p.export_chrome_trace(sys.argv[1])
        print("errors:", at.last_errors())
        ''')
    p = tmp_path / "prog.py"
    p.write_text(script)
    out = str(tmp_path / "t.json")
    r = subprocess.run([ACCELTRACE, "run", "--no-summary", "-f", "-o", out, "--", sys.executable,
                        str(p), prof], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "errors: []" in r.stdout, r.stdout + r.stderr
    with open(prof) as f:
        pev = json.load(f)["traceEvents"]
    kernels = [e for e in pev if e.get("cat") == "kernel"]
    assert len(kernels) == 3, [e.get("name") for e in pev if e.get("ph") == "X"][:40]
    flows = [e for e in pev if e.get("cat") == "ac2g"]
    assert len(flows) >= 6  # a start and an end per kernel
    with open(out) as f:
        rev = json.load(f)["traceEvents"]
    assert len([e for e in rev if e.get("cat") == "kernel"]) == 4


def test_hta_user_annotations_and_critical_path_on_a_run_trace(tmp_path):
    """What gpu_user_annotation is for: HTA's user-annotation breakdown and
    its critical path analysis of a record_function, on a `run` trace
    (acceltrace.hta takes OpenCL's calls as HTA takes CUDA's runtime)."""
    need_plugin()
    need_module("pyopencl")
    need_module("hta")
    script = OCL_PROLOGUE + textwrap.dedent('''\
        import torch
        for i in range(4):
            with torch.profiler.record_function("step%d" % (i % 2)):
                knl(q, (1024,), None, d)
                knl(q, (1024,), None, d)
        q.finish()
        ''')
    events, _ = run(tmp_path, script)
    from acceltrace.hta import TraceAnalysis
    folder = tmp_path / "hta"
    folder.mkdir()
    os.replace(tmp_path / "t.json", folder / "t.json")
    a = TraceAnalysis(str(folder), include_last_profiler_step=True)
    ua = a.get_gpu_user_annotation_breakdown(visualize=False)
    assert set(ua["name"]) == {"step0", "step1"}
    gua = [e for e in events if e.get("cat") == "gpu_user_annotation"]
    assert len(gua) == 4
    cp, ok = a.critical_path_analysis(rank=0, annotation="step0", instance_id=0)
    assert ok and len(cp.critical_path_nodes) > 0
