#!/usr/bin/env python3
"""stream_memory.py -- the launcher's peak memory, streamed against --no-stream,
in one run (BENCHMARKS.md "Streaming"; docs/architecture.md "Streaming",
memory).

For each N, `acceltrace run --log=debug -- stream_app launches N` and the same
with --no-stream, alternating, REPS times each; the figure is run's own
"launcher peak memory" line (getrusage of the launcher alone). Prints the
median and the p10..p90 spread (min..max for a few repetitions) of each arm,
how many of the streamed runs read records while the program ran, and the
load average before and after.

usage: stream_memory.py ACCELTRACE STREAM_APP [REPS] [N...]
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile


def run(act, app, n, extra, out):
    r = subprocess.run([act, "run", "--force", "--no-summary", "--log=debug", *extra, "-o", out,
                        "--", app, "launches", str(n)], capture_output=True, text=True,
                       timeout=300)
    m = re.search(r"launcher peak memory (\d+) KiB", r.stderr)
    read = re.search(r"(\d+) records were read while the program ran", r.stderr)
    if r.returncode or not m:
        sys.exit(f"run {n} {extra}: exit {r.returncode}: {r.stderr[-1000:]}")
    return int(m.group(1)) / 1024, bool(read and int(read.group(1)) and "void" not in r.stderr)


def spread(v):
    v = sorted(v)
    if len(v) < 10:
        return f"{v[0]:.1f}..{v[-1]:.1f}"
    q = statistics.quantiles(v, n=10)
    return f"{q[0]:.1f}..{q[-1]:.1f}"


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    act, app = sys.argv[1:3]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    sizes = [int(x) for x in sys.argv[4:]] or [10000, 40000, 160000]
    print(f"load before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        out = tmp + "/t.json"
        for n in sizes:
            s, b, live = [], [], 0
            for _ in range(reps):
                mib, streamed = run(act, app, n, [], out)
                s.append(mib)
                live += streamed
                b.append(run(act, app, n, ["--no-stream"], out)[0])
            print(f"{n} launches: streamed {statistics.median(s):.1f} MiB ({spread(s)}; "
                  f"{live}/{reps} read while running), --no-stream "
                  f"{statistics.median(b):.1f} MiB ({spread(b)})")
    print(f"load after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
