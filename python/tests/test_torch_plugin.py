"""The torch.profiler plugin (plugins/torch) with torch 2.13.0 CPU.

Without device capture: it is built for this torch, refuses another, only
configures a session for device activity, hands kineto only safe strings
(the same sanitiser as the Python patch) and keeps the trace parseable.

With device capture (in-process sessions and the OpenCL layer in
libacceltrace, PoCL): OpenCL kernels launched inside record_function and a
custom op reach the exported trace as kernels linked to their ops by ac2g
flows, on device lanes sorted below the CPU, in every schedule() cycle,
and in key_averages()."""

import ctypes
import json
import os
import shutil
import subprocess
import sys
from collections import Counter

import pytest

torch = pytest.importorskip("torch")

import acceltrace  # noqa: E402
import acceltrace.torch as at  # noqa: E402
from acceltrace import _lib  # noqa: E402
from acceltrace.torch import _plugin  # noqa: E402

from conftest import REPO, missing, run_python  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def plugin_or_skip():
    if not at.plugin_loaded():
        missing("the torch plugin is not loaded: %s" % at.plugin_error())
    return _plugin._state["handle"]


def device_capture_or_skip():
    plugin_or_skip()
    missing = [s for s in ("act_session_begin", "act_session_end") if not _lib.has(s)]
    if missing:
        globals()["missing"]("libacceltrace has no in-process sessions yet (%s)" %
                             ", ".join(missing))
    if not hasattr(_lib.lib(), "clGetLayerInfo"):
        globals()["missing"]("libacceltrace has no OpenCL layer yet (clGetLayerInfo)")


# ---- without device capture -------------------------------------------------------

def test_plugin_is_built_for_this_torch():
    plugin_or_skip()
    assert _plugin.built_for(at.plugin_path()) == torch.__version__
    h = _plugin._state["handle"]
    h.act_torch_plugin_built_for.restype = ctypes.c_char_p
    assert h.act_torch_plugin_built_for().decode() == torch.__version__


ORDER = """
import sys, torch
from torch.profiler import profile, ProfilerActivity as A
if sys.argv[1] == "backend-first":
    torch.utils.rename_privateuse1_backend("fakedev")
import acceltrace.torch as at
assert at.plugin_loaded(), at.plugin_error()
print(torch._C._get_privateuse1_backend_name())
if sys.argv[1] == "plugin-first":
    torch.utils.rename_privateuse1_backend("fakedev")
with profile(activities=[A.CPU, A.PrivateUse1]):
    torch.ones(4) + 1
print(torch._C._get_privateuse1_backend_name(), at.counters()["processed"])
"""


@pytest.mark.parametrize("order,names", [
    ("backend-first", ["fakedev", "fakedev"]),
    ("plugin-first", ["privateuseone", "fakedev"]),
    ("no-backend", ["privateuseone", "acceltrace"]),
])
def test_the_plugin_never_takes_a_backends_privateuse1_slot(order, names):
    """A real PrivateUse1 backend (pytorch_ocl's "ocl") imported after
    acceltrace.torch could not name its device: the import had taken the
    slot ("already been set! Current backend: acceltrace"), and ocl:0 was
    refused. The slot is named only when a profiler is made, and only if no
    backend named it; the plugin's sessions work under either name."""
    plugin_or_skip()
    rc, out, err = run_python("import sys\nsys.argv[1:] = [%r]\n%s" % (order, ORDER))
    assert rc == 0, err[-2000:]
    lines = out.split("\n")
    assert lines[0] == names[0]
    assert lines[1].split() == [names[1], "1"]


def test_naming_privateuse1_leaves_torch_without_an_accelerator(tmp_path):
    """Naming PrivateUse1 (torch.profiler needs the name to enable the
    PrivateUse1 activity) made torch believe an accelerator was present:
    torch._C._get_accelerator() raised "Please register
    PrivateUse1HooksInterface", and with it dist.barrier() on gloo, in any
    program that imported acceltrace.torch."""
    plugin_or_skip()
    code = """
import tempfile
import torch
import torch.distributed as dist
import acceltrace.torch as at
assert at.plugin_loaded(), at.plugin_error()
print(torch._C._get_accelerator().type)
dist.init_process_group("gloo", init_method="file://%s", rank=0, world_size=1)
dist.barrier()
dist.destroy_process_group()
print("barrier")
""" % (tmp_path / "store")
    rc, out, err = run_python(code)
    assert rc == 0, err[-2000:]
    assert out.split() == ["cpu", "barrier"]


def test_plugin_refuses_another_torch_version():
    h = plugin_or_skip()
    reg = h.act_torch_plugin_register
    reg.restype = ctypes.c_char_p
    reg.argtypes = [ctypes.c_char_p]
    msg = reg(b"1.13.1").decode()
    assert msg == ("acceltrace torch plugin was built for torch %s and refuses to load into "
                   "torch 1.13.1" % torch.__version__)
    assert reg(torch.__version__.encode()) is None  # registering twice is harmless


def test_a_plugin_built_for_another_torch_is_not_loaded(tmp_path):
    plugin_or_skip()
    fake = tmp_path / "libacceltrace_torch.so"
    shutil.copy(at.plugin_path(), fake)
    (tmp_path / "libacceltrace_torch.so.json").write_text('{"torch_version": "9.9.9"}')
    rc, out, err = run_python(
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    import acceltrace.torch as at\n"
        "print('LOADED', at.plugin_loaded())\n"
        "print('WARN', [str(x.message) for x in w if 'built for torch' in str(x.message)])\n",
        env={"ACCELTRACE_TORCH_PLUGIN": str(fake)})
    assert rc == 0, err
    assert "LOADED False" in out
    assert "was built for torch 9.9.9 but this is torch %s" % torch.__version__ in out
    assert "Rebuild it against this torch" in out


def _profile(activities, work=None):
    from torch.profiler import profile
    with profile(activities=activities) as p:
        (work or (lambda: torch.mm(torch.ones(16, 16), torch.ones(16, 16))))()
    return p


def test_a_session_is_configured_only_for_device_activity(tmp_path):
    plugin_or_skip()
    from torch.profiler import ProfilerActivity
    before = at.counters()["configured"]
    _profile([ProfilerActivity.CPU])
    assert at.counters()["configured"] == before
    p = _profile([ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])
    assert at.counters()["configured"] == before + 1
    p.export_chrome_trace(str(tmp_path / "t.json"))
    trace = json.loads((tmp_path / "t.json").read_text())
    assert any(e.get("cat") == "cpu_op" for e in trace["traceEvents"])


def test_without_a_session_the_device_lane_is_empty_and_says_why(tmp_path):
    """When the plugin's session cannot start (here: an acceltrace session
    of the program is already recording), torch.profiler still works, the
    device lane is empty and the plugin says why."""
    plugin_or_skip()
    from torch.profiler import ProfilerActivity
    acceltrace.start(output=str(tmp_path / "own.json"))
    try:
        p = _profile([ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])
    finally:
        acceltrace.stop()
    errors = at.last_errors()
    assert any("session did not start" in e for e in errors), errors
    p.export_chrome_trace(str(tmp_path / "t.json"))
    trace = json.loads((tmp_path / "t.json").read_text())
    assert not _kernels(trace)
    assert any(e.get("cat") == "cpu_op" for e in trace["traceEvents"])


@pytest.mark.parametrize("text", [
    "plain", 'say "hi"', "C:\\tmp\\x", "a\nb\tc\r\b\f", "\x00\x01\x1f\x7f", "你好 é",
    'mixed "\\\n', ""])
def test_the_plugin_sanitises_exactly_like_the_patch(text):
    h = plugin_or_skip()
    fn = h.act_torch_plugin_sanitize
    fn.restype = ctypes.c_size_t
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                   ctypes.c_size_t]
    out, notes = ctypes.create_string_buffer(256), ctypes.create_string_buffer(512)
    data = text.encode()
    if b"\0" in data:
        data = data.replace(b"\0", b"")
        text = text.replace("\0", "")
    fn(data, out, 256, notes, 512)
    safe, expected_notes = at.sanitize_value(text)
    assert out.value.decode() == safe
    assert notes.value.decode() == ", ".join(expected_notes)


# ---- with device capture (OpenCL on PoCL) ---------------------------------------------

@pytest.fixture(scope="module")
def ocl_helper(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        missing("no C compiler for the OpenCL helper")
    lib = tmp_path_factory.mktemp("ocl") / "libocl_helper.so"
    r = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib),
                        os.path.join(HERE, "ocl_helper.c"), "-lOpenCL"],
                       capture_output=True, text=True)
    if r.returncode:
        missing("cannot build the OpenCL helper (OpenCL headers, libOpenCL): %s" %
                r.stderr.strip())
    return str(lib)


@pytest.fixture(scope="module")
def run(ocl_helper, tmp_path_factory):
    """Run torch_workload.py once with the OpenCL layer; its outputs."""
    device_capture_or_skip()
    out = tmp_path_factory.mktemp("torchrun")
    env = dict(os.environ, OPENCL_LAYERS=_lib.path())
    r = subprocess.run([sys.executable, os.path.join(HERE, "torch_workload.py"), str(out),
                        ocl_helper], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]

    def load(name):
        with open(out / name, encoding="utf-8") as f:
            return json.load(f)  # also: every trace parses
    return {"trace": load("trace.json"), "summary": load("summary.json"),
            "cycles": [load("c1.json"), load("c2.json")] if (out / "c2.json").exists() else []}


def _cat(trace, cat):
    return [e for e in trace["traceEvents"] if str(e.get("cat", "")).lower() == cat]


def _kernels(trace):
    return _cat(trace, "kernel")


def test_kernels_reach_the_trace_with_type_and_stream(run):
    kernels = _kernels(run["trace"])
    names = Counter(k["name"] for k in kernels)
    assert names["saxpy"] >= 3 and names["scale"] >= 3, names
    for k in kernels:
        assert "type" in k["args"] and "stream" in k["args"]
    assert _cat(run["trace"], "gpu_memcpy"), "the uploads and read-backs are copies"


def test_record_function_is_drawn_on_the_device_lanes(run):
    """kineto's gpu_user_annotation, which a PrivateUse1 plugin's session
    had none of: each record_function around device work, on the lane of
    its ops, from the first one's start to the last one's end, with the
    range's External id (HTA's user-annotation breakdown reads them)."""
    trace = run["trace"]
    gua = [e for e in _cat(trace, "gpu_user_annotation") if e["name"] == "ocl_saxpy_scope"]
    scopes = [e for e in _cat(trace, "user_annotation") if e["name"] == "ocl_saxpy_scope"]
    assert len(gua) >= 3 and len(scopes) == 3, [e["name"] for e in _cat(trace, "gpu_user_annotation")]
    ext = {e["args"]["External id"] for e in scopes}
    assert {e["args"]["External id"] for e in gua} <= ext
    ops = [e for e in trace["traceEvents"] if e.get("ph") == "X" and
           str(e.get("cat", "")).lower() in ("kernel", "gpu_memcpy")]
    for g in gua:
        inside = [o for o in ops if (o["pid"], o["tid"]) == (g["pid"], g["tid"]) and
                  g["ts"] - 0.001 <= o["ts"] and o["ts"] + o["dur"] <= g["ts"] + g["dur"] + 0.001]
        assert inside, g
        assert abs(min(o["ts"] for o in inside) - g["ts"]) < 0.002


def test_no_vendor_prefix(run):
    for e in run["trace"]["traceEvents"]:
        name = str(e.get("name", ""))
        assert not name.lower().startswith(("opencl::", "acceltrace::", "mspti::", "cupti::"))


def test_every_flow_start_has_a_finish_and_ids_are_unique(run):
    flows = _cat(run["trace"], "ac2g")
    starts = [f["id"] for f in flows if f["ph"] == "s"]
    finishes = [f["id"] for f in flows if f["ph"] == "f"]
    assert starts, "no ac2g flows"
    assert len(starts) == len(set(starts)), "one start per op, ids never repeat"
    assert sorted(starts) == sorted(finishes)
    assert all(f.get("bp") == "e" for f in flows if f["ph"] == "f")


def test_no_flow_points_backwards_in_time(run):
    flows = _cat(run["trace"], "ac2g")
    start_ts = {f["id"]: f["ts"] for f in flows if f["ph"] == "s"}
    for f in flows:
        if f["ph"] == "f":
            assert f["ts"] >= start_ts[f["id"]]


def _sort_index(trace):
    return {e["pid"]: e["args"]["sort_index"] for e in trace["traceEvents"]
            if e.get("ph") == "M" and e.get("name") == "process_sort_index"}


def test_flow_ends_are_on_device_lanes_and_starts_are_not(run):
    trace = run["trace"]
    device_pids = {k["pid"] for k in _kernels(trace)} | {c["pid"] for c in
                                                        _cat(trace, "gpu_memcpy")}
    for f in _cat(trace, "ac2g"):
        if f["ph"] == "f":
            assert f["pid"] in device_pids
        else:
            assert f["pid"] not in device_pids


def test_device_lanes_sort_below_every_cpu_lane(run):
    trace = run["trace"]
    index = _sort_index(trace)
    device_pids = {k["pid"] for k in _kernels(trace)}
    cpu_pids = {e["pid"] for e in _cat(trace, "cpu_op")}
    assert device_pids and cpu_pids
    for d in device_pids:
        assert d in index, "every device process has a sort index"
        for c in cpu_pids:
            assert index[d] > index.get(c, c)


def test_kernels_are_linked_to_the_ops_that_launched_them(run):
    trace = run["trace"]
    ext_ids = {e["args"]["External id"]: e["name"] for e in _cat(trace, "cpu_op") +
               _cat(trace, "user_annotation") if "External id" in e.get("args", {})}
    linked = Counter(ext_ids.get(k["args"].get("External id")) for k in _kernels(trace))
    assert linked["acceltrace_test::ocl_scale"] >= 3, linked
    assert linked["ocl_saxpy_scope"] >= 3, linked


def test_every_schedule_cycle_collects(run):
    assert run["summary"]["cycles"] == [1, 2]
    assert len(run["cycles"]) == 2
    for trace in run["cycles"]:
        assert _kernels(trace), "each cycle re-arms the plugin"


def test_every_active_step_has_its_kernels(run):
    """schedule(wait=1, warmup=1, active=3, repeat=2) on a queue the helper
    made without profiling before any profiler ran (issue 13.1): each of a
    cycle's 3 active steps launches saxpy and scale, and all 6 kernels are
    in that cycle's trace, inside its ProfilerStep."""
    for trace in run["cycles"]:
        names = Counter(k["name"] for k in _kernels(trace))
        assert names == Counter({"saxpy": 3, "scale": 3}), names
        steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"]
                       if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"))
        assert len(steps) == 3, steps
        for step in steps:
            launches = [e for e in _cat(trace, "opencl_runtime") + _cat(trace, "cuda_runtime")
                        + _cat(trace, "privateuse1_runtime")
                        if step[0] <= e["ts"] <= step[1] and "NDRange" in e.get("name", "")]
            assert launches, "no kernel launch inside %s" % (step,)


def test_key_averages_show_device_time_for_launching_ops(run):
    rows = {r["key"]: r for r in run["summary"]["key_averages"]}
    assert rows["acceltrace_test::ocl_scale"]["device_time_total"] > 0
    assert rows["ocl_saxpy_scope"]["device_time_total"] > 0
    assert rows["aten::mm"]["device_time_total"] == 0


def test_slices_on_a_device_lane_never_overlap(run):
    trace = run["trace"]
    device = [e for e in trace["traceEvents"] if e.get("ph") == "X" and
              str(e.get("cat", "")).lower() in ("kernel", "gpu_memcpy", "gpu_memset")]
    by_lane = {}
    for e in device:
        by_lane.setdefault((e["pid"], e["tid"]), []).append(e)
    names = {(e["pid"], e["tid"]) for e in trace["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    for lane, events in by_lane.items():
        assert lane in names, "every device lane is named"
        events.sort(key=lambda e: e["ts"])
        for a, b in zip(events, events[1:]):
            assert b["ts"] >= a["ts"] + a["dur"] - 0.001


# ---- correlation ids a vendor reuses (the fake libmspti) -----------------------------

def _fake_mspti():
    path = os.path.join(REPO, "build", "fakes", "mspti", "libmspti.so")
    if not os.path.exists(path):
        missing("the fake libmspti is not built (%s)" % path)
    return path


@pytest.fixture(scope="module")
def mspti_run(tmp_path_factory):
    """torch_mspti_workload.py once, over the fake libmspti wrapping its
    correlation ids every 2 launches; the torch trace, acceltrace's Chrome
    trace of the same run and the workload's summary."""
    device_capture_or_skip()
    fake = _fake_mspti()
    out = tmp_path_factory.mktemp("mspti")
    env = dict(os.environ, ACCELTRACE_MSPTI_LIB=fake, FAKE_MSPTI_CORR_WRAP="2",
               FAKE_MSPTI_DELAY_MS="300", ACCELTRACE_TORCH_TRACE=str(out / "acceltrace.json"))
    r = subprocess.run([sys.executable, os.path.join(HERE, "torch_mspti_workload.py"), str(out),
                        fake], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]

    def load(name):
        with open(out / name, encoding="utf-8") as f:
            return json.load(f)
    return {"trace": load("trace.json"), "summary": load("summary.json"),
            "acceltrace": load("acceltrace.json") if (out / "acceltrace.json").exists() else None}


def _linked_ops(trace, op_cats):
    """kernel name -> name of the op its External id names."""
    ops = {e["args"]["External id"]: e["name"] for e in trace["traceEvents"]
           if str(e.get("cat", "")).lower() in op_cats and "External id" in e.get("args", {})}
    return {k["name"]: ops.get(k["args"].get("External id")) for k in _kernels(trace)}


def test_reused_correlation_ids_link_each_kernel_to_its_own_op(mspti_run):
    corrs = mspti_run["summary"]["corrs"]
    assert len(set(corrs)) < len(corrs), "the fake must reuse correlation ids"
    linked = _linked_ops(mspti_run["trace"], ("cpu_op", "user_annotation"))
    assert linked == {"k_%d" % i: "op_%d" % i for i in range(len(corrs))}, linked


def test_one_run_exported_both_ways_agrees(mspti_run):
    """The torch trace (plugin) and acceltrace's Chrome trace of the same
    run: the same device ops, each launched by the same op with the same
    launch call, and one flow per launch."""
    ours = mspti_run["acceltrace"]
    assert ours is not None, "ACCELTRACE_TORCH_TRACE wrote no trace"
    torch_trace = mspti_run["trace"]
    assert sorted(k["name"] for k in _kernels(torch_trace)) == \
        sorted(k["name"] for k in _kernels(ours))
    assert _linked_ops(torch_trace, ("cpu_op", "user_annotation")) == \
        _linked_ops(ours, ("user_annotation",))
    for trace in (torch_trace, ours):
        flows = _cat(trace, "ac2g")
        starts = [f for f in flows if f["ph"] == "s"]
        assert len(starts) == len(_kernels(trace))
    # The same durations on both sides (the same device records).
    dur = {k["name"]: round(k["dur"]) for k in _kernels(ours)}
    assert {k["name"]: round(k["dur"]) for k in _kernels(torch_trace)} == dur
