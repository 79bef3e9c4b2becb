"""dist_workload -- one rank of a torchrun job for the distributed tests:
gloo on the CPU, an all-reduce per step, and OpenCL kernels and copies
through pyopencl in every step (PoCL).

    torchrun --nproc_per_node=2 dist_workload.py OUT [--profile]

With --profile each rank runs the steps under torch.profiler
([CPU, PrivateUse1], the acceltrace plugin; OPENCL_LAYERS must name
libacceltrace.so) and writes OUT/rank<R>.json; without, it only works (for
`acceltrace run -o 'OUT/trace.%r.json'`). Each rank writes
OUT/launched.<R>.json: the kernels it launched.
"""

import json
import os
import sys

import numpy as np
import pyopencl as cl
import torch
import torch.distributed as dist

out, profile = sys.argv[1], "--profile" in sys.argv[2:]
STEPS = 3
dist.init_process_group("gloo")
rank = dist.get_rank()

ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
prg = cl.Program(ctx, """
__kernel void axpb(float a, __global float *y) { size_t i = get_global_id(0); y[i] = a * y[i] + 1.0f; }
""").build()
axpb = cl.Kernel(prg, "axpb")
n = 1 << 14
y = np.full(n, rank, dtype=np.float32)
dy = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, y.nbytes)
t = torch.ones(1024)


def step():
    cl.enqueue_copy(queue, dy, y)
    axpb(queue, (n,), None, np.float32(0.5), dy)
    cl.enqueue_copy(queue, y, dy)
    queue.finish()
    dist.all_reduce(t)


if profile:
    import acceltrace.torch  # noqa: F401  (loads the plugin)
    from torch.profiler import ProfilerActivity, schedule

    def ready(p):
        p.export_chrome_trace(os.path.join(out, "rank%d.json" % rank))

    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
                                schedule=schedule(wait=0, warmup=1, active=STEPS, repeat=1),
                                on_trace_ready=ready) as p:
        for _ in range(STEPS + 1):
            step()
            p.step()
    launched = STEPS
else:
    for _ in range(STEPS):
        step()
    launched = STEPS
with open(os.path.join(out, "launched.%d.json" % rank), "w") as f:
    json.dump({"rank": rank, "kernels": launched}, f)
dist.destroy_process_group()
# Leave without interpreter finalization: torch's gloo worker threads may
# still drop an all-reduce's AsyncWork, whose tensors hold Python objects,
# while Py_Finalize runs; taking the GIL then ends the thread inside a
# noexcept destructor and the rank dies of SIGABRT ("terminate called
# without an active exception"; pytorch/pytorch#190489, the fix attempted
# in #179291 was abandoned). Seen in 6 of 25 torchrun --profile runs beside
# two busy loops, untraced frames only (gloo runLoop -> ~AsyncWork ->
# decref -> take_gil -> pthread_exit). Everything this rank writes is
# written and closed above; the recorder needs no exit handler (its spool
# is a shared mapping the launcher reads, docs/reliability.md).
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
