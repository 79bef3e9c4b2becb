#!/usr/bin/env python3
"""export_ab.py -- compare two builds of the exporter on the same spool.

Generates one spool with build A's `act_bench_export --child generate`
(launches with a range, 5 trace events each), then exports it with build
A and build B in turn (`--child export`), round by round with the order
swapped every round, plainly and to .json.gz. Each export prints its wall
time and the CPU time of the exporting thread (the builder and the
formatter; writes and compression are on the writer's threads). Printed:
each build's events per CPU-second of that thread (the issue-17 measure,
"5 M events/s on one core") and per second of wall time (what the
compressor threads keep up with), medians with p10..p90 and min..max,
and the paired ratio B / A of each round, which is what a noisy machine
cannot fake. With --callgrind it counts instead each build's
instructions for one plain export (repeatable whatever the load). The two traces must be identical
byte for byte (checked once): a faster exporter that writes another trace
is not the same exporter. With --summary every export also computes and
prints the summary table (`--child export-summary`, what `acceltrace
export` does by default; issue 32 item 4), and the two tables must be
identical too.

usage: export_ab.py BENCH_A BENCH_B [--events=N] [--rounds=N] [--callgrind]
                    [--summary]
"""
import filecmp
import os
import re
import statistics
import subprocess
import sys
import tempfile

EVENTS_PER_UNIT = 5
MODE = "export"  # "export-summary" with --summary


def pct(v, p):
    s = sorted(v)
    k = (len(s) - 1) * p
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def export(bench, spool, out):
    if os.path.exists(out):
        os.unlink(out)
    r = subprocess.run([bench, "--child", MODE, spool, out], check=True,
                       capture_output=True, text=True).stdout.split()
    return float(r[0]), float(r[2])  # wall s, exporting thread's CPU s


def show(label, v, unit):
    print(f"{label:48s} median {statistics.median(v):7.3f} {unit}  p10..p90 "
          f"{pct(v, 0.1):7.3f}..{pct(v, 0.9):7.3f}  min..max {min(v):.3f}..{max(v):.3f}  "
          f"(n={len(v)})")


def callgrind(bench, spool, out):
    with tempfile.TemporaryDirectory(prefix="act-cg-") as d:
        cg = os.path.join(d, "cg.out")
        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg,
                            bench, "--child", MODE, spool, out],
                           check=True, capture_output=True, text=True)
        m = re.search(r"refs:\s+([\d,]+)", p.stderr)
        return int(m.group(1).replace(",", ""))


def same_output(ta, tb):
    """The two traces (and with --summary the two tables) byte for byte."""
    pairs = [(ta, tb)] + ([(ta + ".summary", tb + ".summary")] if MODE != "export" else [])
    return all(filecmp.cmp(x, y, shallow=False) for x, y in pairs)


def main(argv):
    global MODE
    opts = {a.split("=")[0]: a.split("=", 1)[1] if "=" in a else "1"
            for a in argv if a.startswith("--")}
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = args
    events = int(opts.get("--events", 1000000))
    rounds = int(opts.get("--rounds", 15))
    if "--summary" in opts:
        MODE = "export-summary"
    with tempfile.TemporaryDirectory(prefix="act-exp-ab-") as d:
        spool = os.path.join(d, "spool")
        os.mkdir(spool)
        subprocess.run([a, "--child", "generate", spool, str(events // EVENTS_PER_UNIT), "1"],
                       check=True, capture_output=True)
        ta, tb = os.path.join(d, "a.json"), os.path.join(d, "b.json")
        export(a, spool, ta)
        export(b, spool, tb)
        same = same_output(ta, tb)
        what = "traces and summaries" if MODE != "export" else "traces"
        print(f"# {events} events, {MODE}; {what} of A and B {'identical' if same else 'DIFFER'}; "
              f"load average {os.getloadavg()[0]:.2f} at the start")
        if not same:
            return 1
        os.unlink(ta)
        os.unlink(tb)
        if "--callgrind" in opts:
            ia = callgrind(a, spool, ta)
            ib = callgrind(b, spool, tb)
            print(f"instructions per event: A {ia / events:.1f}  B {ib / events:.1f}  "
                  f"B / A {ib / ia:.4f}")
            return 0
        res = {(k, v, m): [] for k in "AB" for v in ("plain", "gzip") for m in ("cpu", "wall")}
        for r in range(rounds):
            order = [("A", a), ("B", b)] if r % 2 == 0 else [("B", b), ("A", a)]
            for name, bench in order:
                for variant, out in (("plain", "t.json"), ("gzip", "t.json.gz")):
                    wall, cpu = export(bench, spool, os.path.join(d, out))
                    res[(name, variant, "cpu")].append(events / cpu / 1e6)
                    res[(name, variant, "wall")].append(events / wall / 1e6)
        print(f"# load average {os.getloadavg()[0]:.2f} at the end")
        for variant in ("plain", "gzip"):
            for m, what in (("cpu", "per CPU-second"), ("wall", "per second (wall)")):
                show(f"A {variant}: M events {what}", res[("A", variant, m)], "M/s")
                show(f"B {variant}: M events {what}", res[("B", variant, m)], "M/s")
                ratio = [y / x for x, y in zip(res[("A", variant, m)], res[("B", variant, m)])]
                show(f"B / A {variant} {m}, paired", ratio, "x  ")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
