#!/usr/bin/env python3
"""torch_ops.py -- what recording one torch operator costs: the same loop of
small CPU ops (torch.add on 4-element tensors) untraced, under `acceltrace
run` (the start-up hook observes every op, issue 31 part 1) and under
torch.profiler (CPU activity, in process), paired in one run.

    python bench/torch_ops.py [--reps=N] [--ops=N]

Method (BENCHMARKS.md, "torch ops under run"): each repetition starts the
three subjects as fresh processes, in an order rotated per repetition; each
times its loop itself (perf_counter_ns and the thread's CPU time), after a
warm-up, with the garbage collector off. The figure is the median over
repetitions of (subject - untraced) / ops, with the min..max of those
paired differences. Prints RESULT lines and the load before and after.
"""

import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ACCELTRACE = os.path.join(ROOT, "build", "bin", "acceltrace")

LOOP = r'''
import gc, sys, time
import torch
n = int(sys.argv[1])
a, b = torch.ones(4), torch.ones(4)
def loop(k):
    for _ in range(k):
        torch.add(a, b)
loop(1000)
gc.disable()
def timed():
    w, c = time.perf_counter_ns(), time.thread_time_ns()
    loop(n)
    return time.perf_counter_ns() - w, time.thread_time_ns() - c
if len(sys.argv) > 2:
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU]):
        w, c = timed()
else:
    w, c = timed()
print("TIMES", w / n, c / n)
'''


def subject(kind, n, tmp):
    script = os.path.join(tmp, "loop.py")
    cmd = [sys.executable, script, str(n)]
    if kind == "profiler":
        cmd.append("--profiler")
    if kind == "run":
        cmd = [ACCELTRACE, "run", "--no-summary", "--log=error", "-f", "-o",
               os.path.join(tmp, "t.json"), "--"] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True).stdout
    line = [ln for ln in out.splitlines() if ln.startswith("TIMES")][0]
    return tuple(float(x) for x in line.split()[1:])


def main():
    reps, n = 7, 100000
    for a in sys.argv[1:]:
        k, _, v = a.partition("=")
        if k == "--reps":
            reps = int(v)
        elif k == "--ops":
            n = int(v)
        else:
            sys.exit("usage: torch_ops.py [--reps=N] [--ops=N]")
    kinds = ["untraced", "run", "profiler"]
    res = {k: [] for k in kinds}
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "loop.py"), "w") as f:
            f.write(LOOP)
        for rep in range(reps):
            order = kinds[rep % 3:] + kinds[:rep % 3]
            got = {k: subject(k, n, tmp) for k in order}
            for k in kinds:
                res[k].append(got[k])
    load1 = os.getloadavg()
    base_w = statistics.median(r[0] for r in res["untraced"])
    base_c = statistics.median(r[1] for r in res["untraced"])
    print("RESULT torch_ops untraced wall=%.0f ns cpu=%.0f ns per op" % (base_w, base_c))
    for k in ("run", "profiler"):
        for i, what in enumerate(("wall", "cpu")):
            d = [s[i] - u[i] for s, u in zip(res[k], res["untraced"])]
            print("RESULT torch_ops %s_%s_cost %.0f ns per op min=%.0f max=%.0f reps=%d ops=%d"
                  % (k, what, statistics.median(d), min(d), max(d), reps, n))
    print("load before %.2f %.2f %.2f after %.2f %.2f %.2f" % (load0 + load1))


if __name__ == "__main__":
    main()
