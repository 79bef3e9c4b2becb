#!/usr/bin/env python3
"""pftrace_ab.py [--launches=N] [--reps=R] -- the Perfetto protobuf writer
against the JSON writer (issue 32 section 5, docs/pftrace.md): one run of
tests/stream's stream_app (`loop N`: N kernel launches back to back) with
--keep-spool, then the kept spool exported R times to each format in
alternating order (paired reps). Prints bytes per launch of each output (the
whole file over N, and the slope between N/2 and N launches) and the
export's CPU time (user + sys of the child) per format with the median of
the per-pair ratio pftrace/json and its spread. Run from the repository
root after a build."""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin")
TOOL, APP = os.path.join(BIN, "acceltrace"), os.path.join(BIN, "stream_app")


def kept_spool(d, n):
    out = os.path.join(d, f"run{n}.json")
    p = subprocess.run([TOOL, "run", "--keep-spool", "--no-summary", "-o", out, "--", APP,
                        "loop", str(n)], capture_output=True, text=True, check=True)
    for line in p.stderr.splitlines():
        if "spool kept in " in line:
            return line.split("spool kept in ", 1)[1].strip()
    sys.exit(f"no spool kept: {p.stderr[-300:]}")


def export_cpu(spool, out):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([TOOL, "export", "--no-summary", "-f", spool, "-o", out], check=True,
                   capture_output=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=200000)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        outs = {"json": os.path.join(d, "x.json"), "pftrace": os.path.join(d, "x.pftrace")}
        sizes = {}
        for n in (a.launches // 2, a.launches):
            spool = kept_spool(d, n)
            for k, out in outs.items():
                export_cpu(spool, out)
                sizes[(k, n)] = os.path.getsize(out)
            if n != a.launches:
                shutil.rmtree(spool)
        cpu = {k: [] for k in outs}
        for i in range(a.reps):
            order = list(outs.items())
            if i % 2:
                order.reverse()
            for k, out in order:
                cpu[k].append(export_cpu(spool, out))
        shutil.rmtree(spool)
    n, h = a.launches, a.launches // 2
    for k in outs:
        slope = (sizes[(k, n)] - sizes[(k, h)]) / (n - h)
        v = cpu[k]
        print(f"{k}: {sizes[(k, n)]} B, {sizes[(k, n)] / n:.1f} B/launch (slope {slope:.1f}); "
              f"export CPU median {statistics.median(v):.3f} s (min {min(v):.3f}, "
              f"max {max(v):.3f})")
    r = [p / j for p, j in zip(cpu["pftrace"], cpu["json"])]
    print(f"pftrace/json CPU per pair: median {statistics.median(r):.2f} "
          f"(min {min(r):.2f}, max {max(r):.2f}), {a.reps} pairs")


main()
