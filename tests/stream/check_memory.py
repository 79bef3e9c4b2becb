#!/usr/bin/env python3
"""check_memory.py -- the launcher's peak memory against the run's length
(issue 17 item 2, NOT met yet: docs/architecture.md "Streaming").

The requirement is a peak bounded by what is still open (pending flows,
unfinished device ops), whatever the run's length. Today the builder keeps
every API call, range and ARG record of the live process until the exit, so
the peak grows with the launches: this test states that growth as the
bound it holds to (at most GROWTH_KIB per launch between a run and one 4x as
long, read from `run --log=debug`'s "launcher peak memory" line, getrusage of
the launcher alone) so that it cannot get worse unnoticed. Whoever bounds it
lowers GROWTH_KIB to ~0.

usage: check_memory.py ACCELTRACE STREAM_APP
"""
import re
import subprocess
import sys
import tempfile

GROWTH_KIB = 1.5  # per launch; measured 0.8-1.1 (2026-12-03)
SHORT, LONG = 5000, 20000


def peak(act, app, n, out):
    r = subprocess.run([act, "run", "--force", "--no-summary", "--log=debug", "-o", out, "--",
                        app, "launches", str(n)], capture_output=True, text=True, timeout=120)
    m = re.search(r"launcher peak memory (\d+) KiB", r.stderr)
    if r.returncode != 0 or not m:
        print(f"FAIL: run of {n} launches: exit {r.returncode}: {r.stderr[-2000:]}")
        sys.exit(1)
    return int(m.group(1))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    act, app = sys.argv[1:3]
    with tempfile.TemporaryDirectory() as tmp:
        out = tmp + "/t.json"
        short = min(peak(act, app, SHORT, out) for _ in range(2))
        long_ = min(peak(act, app, LONG, out) for _ in range(2))
    per = (long_ - short) / (LONG - SHORT)
    print(f"launcher peak: {short} KiB for {SHORT} launches, {long_} KiB for {LONG}: "
          f"{per:.2f} KiB per launch (bound {GROWTH_KIB})")
    if per > GROWTH_KIB:
        print(f"FAIL: the launcher's peak grows {per:.2f} KiB per launch, more than {GROWTH_KIB}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
