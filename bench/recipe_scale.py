#!/usr/bin/env python3
"""recipe_scale.py -- `acceltrace recipe` at 8 and 64 ranks of 160 000
kernels (issue 33 part 3), against HolisticTraceAnalysis on the same traces
(BENCHMARKS.md "Multi-rank recipes").

    python bench/recipe_scale.py [--ranks=8,64] [--kernels=160000] [--reps=3]
        [--hta-ranks=8,16] [--hta-limit=600] [--dir=DIR]

Traces come from bench/gen_ranks.py (our JSON format; kept in DIR, default
/tmp/acceltrace-recipe-scale, and reused). Measured, each as its own
process (wall, user+system CPU, peak RSS of its largest process, from
wait4), median and min..max over --reps:

  convert  the Parquet conversion of every rank (cache removed first; once
           at the largest rank count, --reps below it)
  duckdb   kernel_sum + rank_imbalance (the two commands, cache warm)
  dask     the same with --engine dask (a local cluster of 2 workers)
  hta      HTA's TraceAnalysis(trace_dir) + get_gpu_kernel_breakdown +
           get_temporal_breakdown (acceltrace.hta), at --hta-ranks rank
           counts; a count above the largest measured one is extrapolated
           linearly from it (said so). A run past --hta-limit seconds is
           killed and said.

Prints the load average before and after (the machine may be shared).
"""

import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
ENV = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, HERE)
import gen_ranks  # noqa: E402

HTA = """
import sys, time
t0 = time.monotonic()
from acceltrace.hta import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
t1 = time.monotonic()
a.get_gpu_kernel_breakdown(visualize=False)
a.get_temporal_breakdown(visualize=False)
print("HTA load %.2f analyse %.2f" % (t1 - t0, time.monotonic() - t1))
"""


def timed(cmd, limit=3600):
    """(wall s, CPU s, peak MiB, stdout) of ``cmd``, or None past ``limit``."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV)
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - t0 > limit:
            p.kill()
            os.wait4(p.pid, 0)
            return None
        time.sleep(0.05)
    wall = time.monotonic() - t0
    out = p.stdout.read().decode()
    if os.waitstatus_to_exitcode(status):
        sys.exit("recipe_scale: %s: status %d" % (" ".join(cmd), os.waitstatus_to_exitcode(status)))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0, out


def spread(v):
    return "%.2f (%.2f..%.2f)" % (statistics.median(v), min(v), max(v))


def report(what, n, runs):
    cols = ["%s %s" % (k, spread([r[i] for r in runs]))
            for i, k in enumerate(("wall s", "CPU s", "peak MiB"))]
    print("RESULT recipe_scale %3d ranks %-32s %s  (%d reps)" % (n, what, "  ".join(cols),
                                                                len(runs)), flush=True)


def folder(base, n, kernels):
    d = os.path.join(base, "r%d_k%d" % (n, kernels))
    if os.path.isdir(d) and sum(f.endswith(".json") for f in os.listdir(d)) == n:
        return d
    t = time.monotonic()
    gen_ranks.generate(d, n, kernels)
    print("generated %d ranks x %d kernels in %.0f s: %.0f MB" % (
        n, kernels, time.monotonic() - t,
        sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
            if f.endswith(".json")) / 1e6), flush=True)
    return d


def hta_folder(src, n):
    """A folder of links to the first ``n`` ranks of ``src`` (no cache folder)."""
    d = src + ".hta%d" % n
    if not os.path.isdir(d):
        os.makedirs(d)
        for r in range(n):
            os.symlink(os.path.join(src, "rank%d.json" % r), os.path.join(d, "rank%d.json" % r))
    return d


def main():
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    ranks = [int(x) for x in opts.get("ranks", "8,64").split(",")]
    kernels = int(opts.get("kernels", 160000))
    reps = int(opts.get("reps", 3))
    hta_ranks = [int(x) for x in opts.get("hta-ranks", "8,16").split(",") if x]
    limit = float(opts.get("hta-limit", 600))
    base = opts.get("dir", "/tmp/acceltrace-recipe-scale")
    load0 = os.getloadavg()
    print("machine: %d CPUs; load %.2f %.2f %.2f" % ((os.cpu_count(),) + load0), flush=True)
    recipe = [PY, "-m", "acceltrace.recipe"]
    prepare = [PY, "-c", "import sys; from acceltrace.recipe import inputs; "
                         "inputs.prepare(sys.argv[1:])"]
    hta_per_rank, hta_done = None, set()
    for n in ranks:
        d = folder(base, n, kernels)
        runs = []
        for _ in range(1 if n == max(ranks) else reps):
            shutil.rmtree(os.path.join(d, ".acceltrace-cache"), ignore_errors=True)
            runs.append(timed(prepare + [d]))
        report("convert to Parquet (once)", n, runs)
        for engine in ("duckdb", "dask"):
            runs = []
            for _ in range(reps):
                a = timed(recipe + ["kernel_sum", "--engine", engine, d])
                b = timed(recipe + ["rank_imbalance", "--engine", engine, d])
                runs.append((a[0] + b[0], a[1] + b[1], max(a[2], b[2])))
            report("%s kernel_sum+rank_imbalance" % engine, n, runs)
        for h in [h for h in hta_ranks if h <= n and h not in hta_done]:
            hta_done.add(h)
            hd = hta_folder(d, h)
            runs, notes = [], []
            for _ in range(reps if h <= 8 else 1):
                r = timed([PY, "-c", HTA, hd], limit)
                if r is None:
                    print("RESULT recipe_scale %3d ranks HTA killed after %.0f s" % (h, limit))
                    break
                runs.append(r)
                notes.append(r[3].strip())
            if runs:
                report("HTA breakdown+temporal", h, runs)
                print("   (%s)" % "; ".join(notes), flush=True)
                hta_per_rank = (statistics.median(r[0] for r in runs) / h, h)
        if hta_per_rank and n > hta_per_rank[1]:
            print("RESULT recipe_scale %3d ranks HTA extrapolated from %d ranks: %.0f s wall"
                  % (n, hta_per_rank[1], hta_per_rank[0] * n), flush=True)
    print("load before %.2f %.2f %.2f after %.2f %.2f %.2f" % (load0 + os.getloadavg()))


if __name__ == "__main__":
    main()
