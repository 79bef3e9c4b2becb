#!/usr/bin/env python3
"""opencl_ab.py -- compare builds of the OpenCL layer on the same program.

Runs `act_bench_opencl --child N` (held queue, then back-to-back) untraced
and under each layer (A, B, ...), interleaved round by round with the
order rotated, and prints per-enqueue figures: the held loops' CPU time on
the enqueuing thread (columns 4 and 5: without and with an event per
enqueue; steadier than wall time on a busy machine) and wall time, as
medians of the paired differences X - A (and, from a third layer on,
X - B) with p10..p90, and each layer's own added cost against untraced. With
--callgrind it instead counts, under callgrind, the instructions per call
of the app's clEnqueueNDRangeKernel and clReleaseEvent (libOpenCL's entry
points, inclusive: loader, layer and runtime) for each layer.
Used for BENCHMARKS.md's before/after rows (issue 16).

usage: opencl_ab.py BENCH LIB_A LIB_B [LIB_C...] [--rounds=N] [--n=N] [--callgrind]
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile


def run_child(bench, n, lib):
    env = dict(os.environ)
    env.pop("OPENCL_LAYERS", None)
    env.pop("ACCELTRACE_SPOOL_DIR", None)
    with tempfile.TemporaryDirectory(prefix="act-ab-") as spool:
        if lib:
            env["OPENCL_LAYERS"] = lib
            env["ACCELTRACE_SPOOL_DIR"] = spool
        out = subprocess.run([bench, "--child", str(n)], env=env, check=True,
                             capture_output=True, text=True).stdout
    return [float(x) for x in out.split()]


def pct(v, p):
    s = sorted(v)
    k = (len(s) - 1) * p
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def show(label, v):
    print(f"{label:46s} median {statistics.median(v):8.1f}  p10..p90 "
          f"{pct(v, 0.1):8.1f}..{pct(v, 0.9):8.1f}  (n={len(v)})")


def callgrind(bench, lib, n, fn):
    """Instructions inside the app's calls to `fn` (libOpenCL's entry, so
    the loader, the layer and the runtime count alike for every layer)."""
    with tempfile.TemporaryDirectory(prefix="act-cg-") as d:
        out = os.path.join(d, "cg.out")
        env = dict(os.environ, OPENCL_LAYERS=lib, ACCELTRACE_SPOOL_DIR=d)
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                        "--toggle-collect=" + fn, bench, "--child", str(n)], env=env,
                       check=True, capture_output=True)
        text = subprocess.run(["callgrind_annotate", out], check=True, capture_output=True,
                              text=True).stdout
    total = int(re.search(r"([\d,]+)\s+\(100\.0%\)\s+PROGRAM TOTALS", text).group(1)
                .replace(",", ""))
    # clEnqueueNDRangeKernel: warm-up + held + back-to-back + held with
    # events; clReleaseEvent: the last loop's releases (and the gates').
    calls = 3 * n + 1 if fn == "clEnqueueNDRangeKernel" else n + 2
    return total / calls, text


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) if "=" in a else (a[2:], "1")
                for a in sys.argv[1:] if a.startswith("--"))
    if len(args) < 3:
        sys.exit(__doc__)
    bench, libs = args[0], dict(zip("ABCDEFGH", args[1:]))
    if "callgrind" in opts:
        n = int(opts.get("n", 1000))
        for fn in ("clEnqueueNDRangeKernel", "clReleaseEvent"):
            for name, lib in libs.items():
                per, text = callgrind(bench, lib, n, fn)
                print(f"callgrind {name}: {per:.0f} instructions per {fn} ({lib})")
                if "verbose" in opts:
                    print("\n".join(text.splitlines()[:60]))
        return
    rounds, n = int(opts.get("rounds", 15)), int(opts.get("n", 5000))
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}")
    print("layers: " + ", ".join(f"{k}={v}" for k, v in libs.items()))
    order = [""] + list(libs)
    cols = {who: [] for who in order}
    for r in range(rounds):
        k = r % len(order)
        for who in order[k:] + order[:k]:
            cols[who].append(run_child(bench, n, libs.get(who)))
    print(f"load average at end:   {open('/proc/loadavg').read().split()[:3]}")
    for col, what in ((3, "held CPU ns/enqueue"), (4, "held+event CPU ns/enqueue"),
                      (0, "held wall ns/enqueue"), (1, "back-to-back wall ns/enqueue")):
        u = [x[col] for x in cols[""]]
        show(f"{what}: untraced", u)
        for who in libs:
            show(f"{what}: {who} added", [y[col] - x for x, y in zip(u, cols[who])])
        for who in list(libs)[1:]:
            show(f"{what}: {who} - A", [y[col] - x[col] for x, y in zip(cols["A"], cols[who])])
        for who in list(libs)[2:]:
            show(f"{what}: {who} - B", [y[col] - x[col] for x, y in zip(cols["B"], cols[who])])


if __name__ == "__main__":
    main()
