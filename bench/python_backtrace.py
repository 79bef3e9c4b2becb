#!/usr/bin/env python3
"""python_backtrace.py -- what --python-backtrace costs per captured call:
pyopencl kernel launches on PoCL from 20 Python frames deep, recorded by an
in-process session (acceltrace.profile) with python_backtrace=0 (off) and
=16, paired in the same process and run.

    OPENCL_LAYERS=build/lib/libacceltrace.so \\
        python bench/python_backtrace.py [--reps=N] [--launches=N]

Method (BENCHMARKS.md, "Python backtraces"): each repetition opens one
session per subject, in an order rotated per repetition, and times a loop of
--launches launches (perf_counter_ns for wall, thread_time_ns for the
launching thread's CPU time) with the garbage collector off; the queue is
drained outside the timed loop. The figure is the median over repetitions of
(with stacks - without) / launches, with the minimum and maximum of those
paired differences. Prints RESULT lines and the load before and after; checks
on the first repetition that every launch carried its stack.
"""

import gc
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import pyopencl as cl

import acceltrace

DEPTH = 20  # frames above the launch: more than the 16 captured


def parse_args(argv):
    opts = {"reps": 11, "launches": 4000}
    for a in argv:
        k, _, v = a.partition("=")
        if k in ("--reps", "--launches") and v:
            opts[k[2:]] = int(v)
        else:
            sys.exit("usage: python_backtrace.py [--reps=N] [--launches=N]")
    return opts


def setup():
    ctx = cl.create_some_context(interactive=False)
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, "__kernel void k(__global float *y) { y[get_global_id(0)] += 1.0f; }")
    prg = prg.build()
    d = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * 64)
    knl = prg.k
    return q, knl, d


def deep(n, fn):
    return fn() if n == 0 else deep(n - 1, fn)


def timed(q, knl, d, launches, depth, out):
    def loop():
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        for _ in range(launches):
            knl(q, (64,), None, d)
        return time.perf_counter_ns() - w0, time.thread_time_ns() - c0

    with acceltrace.profile(out, python_backtrace=depth, buffer_size=256 << 20):
        gc.disable()
        try:
            wall, cpu = deep(DEPTH, loop)
        finally:
            gc.enable()
        q.finish()
    return wall / launches, cpu / launches


def check(path, launches):
    with open(path) as f:
        ev = json.load(f)["traceEvents"]
    got = [e for e in ev if e.get("name") == "clEnqueueNDRangeKernel" and e.get("ph") == "X"
           and e.get("cat") != "kernel"]
    with_stack = [e for e in got if e.get("args", {}).get("Python stack", "").count("\n") == 15]
    if len(got) != launches or len(with_stack) != launches:
        sys.exit("python_backtrace: %d launches, %d with 16 frames (want %d)"
                 % (len(got), len(with_stack), launches))


def main():
    o = parse_args(sys.argv[1:])
    q, knl, d = setup()
    load0 = os.getloadavg()
    diffs = {"wall": [], "cpu": []}
    base = {"wall": [], "cpu": []}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(o["reps"]):
            res = {}
            for depth in ((0, 16) if rep % 2 == 0 else (16, 0)):
                out = os.path.join(tmp, "t%d.json" % depth)
                res[depth] = timed(q, knl, d, o["launches"], depth, out)
                if rep == 0 and depth == 16:
                    check(out, o["launches"])
            for i, k in enumerate(("wall", "cpu")):
                diffs[k].append(res[16][i] - res[0][i])
                base[k].append(res[0][i])
    load1 = os.getloadavg()
    for k in ("wall", "cpu"):
        dv = diffs[k]
        print("RESULT python_backtrace capture_%s_ns %.0f ns baseline_launch=%.0f ns "
              "min=%.0f max=%.0f reps=%d launches=%d target<=2000"
              % (k, statistics.median(dv), statistics.median(base[k]), min(dv), max(dv),
                 o["reps"], o["launches"]))
    print("load before %.2f %.2f %.2f after %.2f %.2f %.2f" % (load0 + load1))


if __name__ == "__main__":
    main()
