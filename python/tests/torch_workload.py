"""torch_workload -- the program the plugin tests profile, run in its own
interpreter (OPENCL_LAYERS must be set before libOpenCL loads, and the
PrivateUse1 naming is once per process).

A small model step on the CPU, OpenCL kernels launched inside a
record_function scope (saxpy with its two uploads and one read-back) and
inside a custom op (scale), profiled with [CPU, PrivateUse1]; then the same
under schedule(wait=1, warmup=1, active=3, repeat=2). Writes trace.json,
c1.json, c2.json and summary.json (key_averages, plugin counters, errors)
into the directory given as argv[1]; argv[2] is the OpenCL helper library.
"""

import ctypes
import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

import acceltrace.torch as at

out, helper = sys.argv[1], sys.argv[2]
N = 4096
ocl = ctypes.CDLL(helper)
ocl.ocl_error.restype = ctypes.c_char_p
if ocl.ocl_init(ctypes.c_size_t(N)) != 0:
    sys.exit("OpenCL set-up failed: %s" % ocl.ocl_error().decode())
xs = (ctypes.c_float * N)(*([1.0] * N))
ys = (ctypes.c_float * N)()


@torch.library.custom_op("acceltrace_test::ocl_scale", mutates_args=())
def ocl_scale(t: torch.Tensor) -> torch.Tensor:
    if ocl.ocl_scale(ctypes.c_float(0.5)) != 0:
        raise RuntimeError(ocl.ocl_error().decode())
    return t * 0.5


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
inp = torch.randn(32, 64)
ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def step():
    opt.zero_grad()
    loss = model(inp).pow(2).mean()
    loss.backward()
    opt.step()
    with record_function("ocl_saxpy_scope"):
        if ocl.ocl_saxpy(ctypes.c_float(2.0), xs, ys) != 0:
            raise RuntimeError(ocl.ocl_error().decode())
    ocl_scale(inp)


for _ in range(2):
    step()

with profile(activities=ACTIVITIES) as prof:
    for _ in range(3):
        step()
prof.export_chrome_trace(os.path.join(out, "trace.json"))
averages = [{"key": e.key, "count": e.count, "device_time_total": e.device_time_total,
             "self_device_time_total": e.self_device_time_total}
            for e in prof.key_averages()]
summary = {"key_averages": averages, "counters": at.counters(), "errors": at.last_errors(),
           "plugin": at.plugin_loaded()}

cycles = []


def ready(p):
    cycles.append(len(cycles) + 1)
    p.export_chrome_trace(os.path.join(out, "c%d.json" % cycles[-1]))


with profile(activities=ACTIVITIES, schedule=schedule(wait=1, warmup=1, active=3, repeat=2),
             on_trace_ready=ready) as prof:
    for _ in range(10):
        step()
        prof.step()
summary["cycles"] = cycles
summary["counters_after_schedule"] = at.counters()
ocl.ocl_shutdown()
with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
    json.dump(summary, f)
