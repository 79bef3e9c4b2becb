"""torch_steps_workload -- a training loop profiled by torch.profiler with
[CPU, PrivateUse1] over several ProfilerSteps, each step launching OpenCL
kernels and copies through pyopencl; for the HolisticTraceAnalysis and
TensorBoard-plugin tests. Run with OPENCL_LAYERS set to libacceltrace.so.

argv[1]: output directory (writes trace.json and counts.json: the kernels
the program launched while the profiler was active).
"""

import json
import os
import sys

import numpy as np
import pyopencl as cl
import torch
from torch.profiler import ProfilerActivity, profile, schedule

import acceltrace.torch  # noqa: F401  (loads the plugin)

STEPS = 4
out = sys.argv[1]
ctx = cl.create_some_context(interactive=False)
# Profiling-enabled, as a program that wants device times asks for it.
queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
prg = cl.Program(ctx, """
__kernel void saxpy(float a, __global const float *x, __global float *y)
{ size_t i = get_global_id(0); y[i] = a * x[i] + y[i]; }
__kernel void scale(float a, __global float *y)
{ size_t i = get_global_id(0); y[i] = a * y[i]; }
""").build()
saxpy, scale = cl.Kernel(prg, "saxpy"), cl.Kernel(prg, "scale")
n = 1 << 16
x = np.ones(n, dtype=np.float32)
y = np.zeros(n, dtype=np.float32)
mf = cl.mem_flags
dx = cl.Buffer(ctx, mf.READ_ONLY, x.nbytes)
dy = cl.Buffer(ctx, mf.READ_WRITE, y.nbytes)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
inp = torch.randn(32, 64)


def step():
    opt.zero_grad()
    model(inp).pow(2).mean().backward()
    opt.step()
    cl.enqueue_copy(queue, dx, x)
    cl.enqueue_copy(queue, dy, y)
    saxpy(queue, (n,), None, np.float32(2.0), dx, dy)
    scale(queue, (n,), None, np.float32(0.5), dy)
    cl.enqueue_copy(queue, y, dy)
    queue.finish()


def ready(prof):
    prof.export_chrome_trace(os.path.join(out, "trace.json"))


# A schedule, so that each step is a ProfilerStep#N event; one cycle: one
# warm-up step, then STEPS recorded ones.
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
             schedule=schedule(wait=0, warmup=1, active=STEPS, repeat=1),
             on_trace_ready=ready) as p:
    for _ in range(STEPS + 1):
        step()
        p.step()
with open(os.path.join(out, "counts.json"), "w") as f:
    json.dump({"steps": STEPS, "kernels": 2 * STEPS, "copies": 3 * STEPS,
               "errors": acceltrace.torch.last_errors()}, f)
