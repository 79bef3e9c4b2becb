"""pyopencl_late_session -- the program test_late_session.py runs (in its
own interpreter: OPENCL_LAYERS must be set before libOpenCL loads).

As users write it: the context and a queue WITHOUT profiling are made at
start-up, work runs, and only later is a session opened with
acceltrace.profile(). The 3 kernels launched inside must be in the trace
(issue 13.1); the program must still see its queue as it asked for it: no
profiling property, and event profiling info not available.

argv[1]: the trace path. Prints one JSON line of what the program saw.
"""

import json
import sys

import numpy as np
import pyopencl as cl

import acceltrace

ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx)  # no profiling, as most programs
prg = cl.Program(ctx, "__kernel void twice(__global float *a)"
                      " { a[get_global_id(0)] *= 2.0f; }").build()
host = np.ones(1024, dtype=np.float32)
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
prg.twice(queue, host.shape, None, buf)  # before the session: not traced
queue.finish()

with acceltrace.profile(output=sys.argv[1]):
    for _ in range(3):
        prg.twice(queue, host.shape, None, buf)
    queue.finish()

ev = prg.twice(queue, host.shape, None, buf)
ev.wait()
try:
    ev.profile.start
    profiling_info = "available"
except cl.RuntimeError as exc:
    profiling_info = exc.code == cl.status_code.PROFILING_INFO_NOT_AVAILABLE and "not available"
cl.enqueue_copy(queue, host, buf)
print(json.dumps({"properties": int(queue.properties), "profiling_info": profiling_info,
                  "value": float(host[0])}))
