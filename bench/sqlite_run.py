#!/usr/bin/env python3
"""sqlite_run.py -- how much longer `acceltrace run -o t.sqlite` takes to return
than `-o t.json` (issue 33 part 1: within 2x). The program is tail_scale.py's
(stream_app `loop N`: N launches back to back, a clFinish every 1000); each
round runs it once per format, the order swapped every round. Measured, as in
tail_scale.py: the tail, from the program's end to the return of `run`
(what a user waits for), and the launcher's CPU time (user + system of
`run` and its children less the program's own, which holds under load when
wall time does not). Printed: medians with min..max per format and size, and
the paired ratio sqlite / json of each round.

usage: sqlite_run.py STREAM_APP ACCELTRACE [--sizes 16000,160000] [--reps 5]
"""
import argparse
import os
import resource
import statistics
import sys
import tempfile

from tail_scale import run_timed, spread


def one(act, app, n, tmp, ext):
    out = os.path.join(tmp, "t." + ext)
    env = dict(os.environ, STREAM_APP_END="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    tail, _, _ = run_timed([act, "run", "--no-summary", "-o", out, "-f", "--", app, "loop",
                            str(n)], env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    size = os.path.getsize(out)
    os.unlink(out)
    return {"tail": tail, "cpu": cpu * 1000, "bpl": size / n}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("app")
    ap.add_argument("act")
    ap.add_argument("--sizes", default="16000,160000")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    res, ratio = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps):
            for n in sizes:
                order = ("json", "sqlite") if rep % 2 == 0 else ("sqlite", "json")
                got = {ext: one(a.act, a.app, n, tmp, ext) for ext in order}
                for ext, r in got.items():
                    res.setdefault((ext, n), []).append(r)
                ratio.setdefault(n, []).append(got["sqlite"]["tail"] / got["json"]["tail"])
                print(f"round {rep + 1} {n}: " + ", ".join(
                    f"{e} tail {got[e]['tail']:.1f} ms cpu {got[e]['cpu']:.0f} ms"
                    for e in order), flush=True)
    print(f"\nload: {os.getloadavg()[0]:.2f} (1 min)")
    print("| launches | output | tail ms | run CPU ms | B/launch | tail sqlite/json (paired) |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        for ext in ("json", "sqlite"):
            rs = res[(ext, n)]
            print(f"| {n} | {ext} | {spread([r['tail'] for r in rs])} | "
                  f"{spread([r['cpu'] for r in rs])} | "
                  f"{statistics.median(r['bpl'] for r in rs):.0f} | "
                  f"{spread(ratio[n]) if ext == 'sqlite' else ''} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
