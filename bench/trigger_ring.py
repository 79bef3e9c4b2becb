#!/usr/bin/env python3
"""trigger_ring.py -- `acceltrace trigger` on a flight recorder (--ring) whose
program keeps writing: how long the launcher takes to write the trigger's
trace, and how much of the ring the trace keeps.

The program is tests/longrun/programs/ring_app.c `wait`: 200 000 "step"
ranges, then steps in bursts of 200 with a 2 ms nap for SECS seconds, a
mark "m<k>" every 1000 steps (--nap-us 0: no nap, the program never stops
writing). While it waits, TRIGGERS triggers are sent
one after the other (each `trigger` returns once its trace is written).
The launcher's own line "trigger N: trace written to FILE in MS ms" gives
the time; each trace is read for the steps it holds and its marks. A copy
of the ring torn by the program's writes is cut at the hole (reader.c):
its trace keeps only what follows, so the smallest window among the
triggers, and how many held no mark at all, say how whole the copies
were. Each build runs once a round, the order turned each round.

usage: trigger_ring.py RING_APP --act LABEL=ACCELTRACE [--act ...]
                       [--ring 256K] [--reps 5] [--triggers 8] [--secs 3] [--nap-us 2000]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def window(path):
    """Steps (host "step" ranges) and 1000-step marks in a trigger's trace."""
    with open(path) as f:
        ev = json.load(f)["traceEvents"]
    steps = sum(1 for e in ev if e.get("name") == "step" and e.get("cat") != "gpu_user_annotation")
    marks = sum(1 for e in ev if e.get("ph") == "i" and re.fullmatch(r"m\d+", e.get("name", "")))
    return steps, marks


def one_run(act, app, ring, triggers, secs, nap_us, tmp):
    """[(ms, steps, marks)] of one run's triggers."""
    out = os.path.join(tmp, "t.json")
    argv = [act, "run", f"--ring={ring}", "--chunk-size=32K", "--no-summary", "-f", "-o", out,
            "--", app, "wait", "200000", str(secs), str(nap_us)]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)
    if p.stdout.readline().strip() != "ready":
        sys.exit(f"{act}: the program did not start: {p.stderr.read()[-1500:]}")
    paths = []
    for _ in range(triggers):
        r = subprocess.run([act, "trigger", str(p.pid)], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{act} trigger: {r.stdout}{r.stderr}")
        paths.append(r.stdout.strip())
    _, err = p.communicate(timeout=300)
    if p.returncode != 0:
        sys.exit(f"{act} run exited {p.returncode}: {err[-1500:]}")
    ms = [float(x) for x in re.findall(r"trigger \d+: trace written to \S+ in ([\d.]+) ms", err)]
    if len(ms) != triggers:
        sys.exit(f"{act}: {len(ms)} trigger lines for {triggers} triggers: {err[-1500:]}")
    res = []
    for t, path in zip(ms, paths):
        res.append((t, *window(path)))
        os.unlink(path)
    return res


def spread(vals):
    return f"{statistics.median(vals):.1f} ({min(vals):.1f}..{max(vals):.1f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("app")
    ap.add_argument("--act", action="append", required=True, help="LABEL=path to acceltrace")
    ap.add_argument("--ring", default="256K")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--triggers", type=int, default=8)
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--nap-us", type=int, default=2000,
                    help="the program's nap between bursts of 200 steps (0: it never stops)")
    a = ap.parse_args()
    acts = [(label, os.path.abspath(path)) for label, path in (x.split("=", 1) for x in a.act)]
    app = os.path.abspath(a.app)
    got = {label: [] for label, _ in acts}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps):
            order = acts[rep % len(acts):] + acts[:rep % len(acts)]
            for label, act in order:
                got[label] += one_run(act, app, a.ring, a.triggers, a.secs, a.nap_us, tmp)
    print(f"ring {a.ring}, chunks of 32K, nap {a.nap_us} us; {a.reps} runs x {a.triggers} "
          f"triggers per build; "
          f"loadavg {os.getloadavg()[0]:.2f}")
    print(f"{'build':<12} {'trigger ms: median (min..max)':<32} {'steps kept: median (min..max)':<32}"
          f" {'no mark':>8}")
    for label, _ in acts:
        r = got[label]
        ms = [x[0] for x in r]
        steps = [x[1] for x in r]
        nomark = sum(1 for x in r if x[2] == 0)
        print(f"{label:<12} {spread(ms):<32} {spread(steps):<32} {nomark:>3} of {len(r)}")


main()
