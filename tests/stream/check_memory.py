#!/usr/bin/env python3
"""check_memory.py -- the launcher's peak memory does not grow with the run's
length when the spool is read while the program runs (issue 17 item 1's
memory requirement; docs/architecture.md "Streaming", memory).

The launcher keeps only what is still open (ranges on a stack, launches
whose device op was not written, slices a later one may sort before) and
drops the spool's pages as it reads: its peak for a run and for one 4x as
long differ by less than BOUND_MIB, whatever the length. Read from
`run --log=debug`'s "launcher peak memory" line (getrusage of the launcher
alone, its VmHWM); the lowest of two runs each, and each run must have read
records while the program ran (else the batch export, which grows, was
measured). Before (2026-12-03): 0.8-1.1 KiB per launch, ~96 MiB here.
The longer run is 400 000 launches (10x): from there the spool's page
cache is in large folios (ext4, Linux >= 6.16) that a read maps whole, and
a reader that counted 64 KiB per window it touched mapped up to 32 MiB
between drops: 40-41 MiB at 400 000 against 14 at 40 000 (2026-12-05),
which 160 000 launches did not show.

Keeping memory small must not cost the program its CPU: each drop of the
spool's pages is a system call that unmaps the whole mapping, and what is
read again faults back in, on the cores the program runs on. The drops of
the longer run (the "spool pages dropped N times" of the same line) stay
under DROPS_PER_K per 1000 launches. Before (2026-12-03): 25-30 (a drop
every few KiB read, ~4 500 for 160 k launches); after: ~2.

With --summary (issue 32 section 2), the same runs print the summary
table at the end, as `run` does by default, under the same bound: its
aggregator holds a reorder window of slices and the name of every range a
device op may come from (the by-range table). Measured (2026-12-05, each
launch in a range "step"): the window at 512 Ki slices from the start,
+21.4 MiB (fails); at 4 Ki with a hash entry a range, +12.7 MiB at load
1.5 (fails) but +9.8 at load 5.5: the peak is mostly the reader's mapped
windows, and a 10 MiB map built late partly fits under it. What the
summary itself holds is checked exactly by test_summary's
test_memory_flat (1.7 -> 12.2 MiB before, 206 KiB at both after). With
the range ids kept as runs: +2.3 MiB at load 1.5, +5.4-5.6 at load 7.

usage: check_memory.py [--summary] ACCELTRACE STREAM_APP
"""
import re
import subprocess
import sys
import tempfile

BOUND_MIB = 12  # measured 4-9 MiB for 40 k vs 160 k launches (2026-12-03), 3-4 for 400 k
DROPS_PER_K = 6  # measured ~1.7 (one or two a poll, one per MiB of windows mapped)
SHORT, LONG = 40000, 400000


def peak(act, app, n, out, summary):
    opts = [] if summary else ["--no-summary"]
    r = subprocess.run([act, "run", "--force", *opts, "--log=debug", "-o", out, "--", app,
                        "launches", str(n)], capture_output=True, text=True, timeout=120)
    m = re.search(r"launcher peak memory (\d+) KiB", r.stderr)
    read = re.search(r"(\d+) records were read while the program ran", r.stderr)
    drops = re.search(r"spool pages dropped (\d+) times", r.stderr)
    if r.returncode != 0 or not m:
        print(f"FAIL: run of {n} launches: exit {r.returncode}: {r.stderr[-2000:]}")
        sys.exit(1)
    streamed = read and drops and int(read.group(1)) > 0 and "void" not in r.stderr
    return (int(m.group(1)), int(drops.group(1))) if streamed else None


def lowest(act, app, n, out, summary):
    got = [p for p in (peak(act, app, n, out, summary) for _ in range(3)) if p is not None]
    if not got:
        print(f"FAIL: no run of {n} launches was read while it ran (or its early events were void)")
        sys.exit(1)
    return min(p for p, _ in got[:2]), min(d for _, d in got[:2])


def main():
    args = sys.argv[1:]
    summary = args[:1] == ["--summary"]
    args = args[1:] if summary else args
    if len(args) != 2:
        print(__doc__)
        return 2
    act, app = args
    with tempfile.TemporaryDirectory() as tmp:
        out = tmp + "/t.json"
        short, _ = lowest(act, app, SHORT, out, summary)
        long_, drops = lowest(act, app, LONG, out, summary)
    per_k = drops / (LONG / 1000)
    print(f"spool pages dropped {drops} times for {LONG} launches: {per_k:.1f} per 1000 "
          f"(bound {DROPS_PER_K})")
    if per_k > DROPS_PER_K:
        print(f"FAIL: the launcher dropped the spool's pages {per_k:.1f} times per 1000 "
              f"launches, bound {DROPS_PER_K}")
        return 1
    diff = (long_ - short) / 1024
    what = "with the summary" if summary else "without the summary"
    print(f"launcher peak {what}: {short} KiB for {SHORT} launches, {long_} KiB for {LONG}: "
          f"{diff:+.1f} MiB (bound {BOUND_MIB} MiB)")
    if diff >= BOUND_MIB:
        print(f"FAIL: the launcher's peak {what} grew {diff:.1f} MiB for {LONG - SHORT} more "
              f"launches, bound {BOUND_MIB} MiB")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
