#!/usr/bin/env python3
"""tail_scale.py -- the tail after the exit against the run's length (issue 32
section 1 and 2): a training loop's shape (tests/stream/programs/stream_app.c
`loop N`: N launches back to back, a clFinish every 1000), traced by one or
more acceltrace builds and by CLIntercept (cliloader, Chrome call logging
and device timing), interleaved in each round, the order turned by one
tool each round.

Each acceltrace build's tail is also given over CLIntercept's of the
same round (paired: the machine's moods cancel), with how many rounds
were under 2x (issue 32 section 1's target).

The tail is the same for every tracer: from the program's end (stream_app
prints its CLOCK_MONOTONIC time with STREAM_APP_END set) to the return of
the command that ran it. Also: acceltrace's launcher peak (its `--log=debug`
line, getrusage of the launcher alone), the peak RSS of the traced process
tree (ru_maxrss of the children: for CLIntercept, which lives in the
program, that is its only figure), trace bytes per launch, and dropped
records (a run that dropped is flagged: its tail is short for that reason).

Each acceltrace run keeps its spool in a TMPDIR of its own, and the next
run starts only once `run`'s detached child has freed it (the spool and
the replaced trace are freed after `run` returns): otherwise that child's
work lands on the next run, which may be another tool's. The time it took
from `run`'s return is the "freed after" column (--no-settle: go on at
once, as back-to-back runs of a script do). With --replace each build's
trace is left in place for its next run to replace (`-f`), as a user who
runs the same command again has it; else it is removed after each run.

With --export-reps N, each acceltrace build also keeps the spool of one
more run per size and exports it N times (`acceltrace export SPOOL -o
X.json`, the summary on, as `run` writes): events per CPU-second of the
export process (user + system, all its threads; events counted in the
trace written), the export-rate column of issue 32's scaling table.

usage: tail_scale.py STREAM_APP [--act LABEL=ACCELTRACE]... [--cliloader PATH]
                     [--sizes 16000,160000,1600000] [--reps 3] [--buffer-size 2G]
                     [--export-reps N] [--no-settle] [--replace]
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run_timed(argv, env):
    """Run argv; the tail in ms (end of the program to our return), stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    back = time.monotonic_ns()
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    m = re.search(r"stream_app: end_ns=(\d+)", r.stderr)
    if r.returncode != 0 or not m:
        sys.exit(f"{argv[0]} exited {r.returncode}: {r.stderr[-1500:]}")
    # ru_maxrss of the children is a maximum over all of them so far: only
    # a rise is this run's (else "<=" the earlier peak).
    return (back - int(m.group(1))) / 1e6, r.stderr, rss if rss > before else None


def act_env(act):
    """The environment for a run by `act`: the program's libacceltrace (it
    links it, RUNPATH the tree it was built in) is the one beside `act`,
    so that each build's launcher reads a spool its own recorder wrote."""
    env = dict(os.environ, STREAM_APP_END="1")
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(act))), "lib")
    if os.path.exists(os.path.join(lib, "libacceltrace.so")):
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"]
                                        if env.get("LD_LIBRARY_PATH") else "")
    return env


def settle(spools, limit_s=60):
    """ms until the directory `spools` is empty (run's detached child has
    freed the spool), or None after limit_s."""
    t0 = time.monotonic()
    while os.listdir(spools):
        if time.monotonic() - t0 > limit_s:
            return None
        time.sleep(0.002)
    return (time.monotonic() - t0) * 1e3


def one_act(act, app, n, tmp, buffer_size, wait, label, replace):
    out = os.path.join(tmp, f"t-{label}.json")
    env = act_env(act)
    spools = os.path.join(tmp, "spools")
    os.makedirs(spools, exist_ok=True)
    env["TMPDIR"] = spools
    tail, err, rss = run_timed([act, "run", "--log=debug", f"--buffer-size={buffer_size}", "-o",
                                out, "-f", "--", app, "loop", str(n)], env)
    freed = settle(spools) if wait else None
    peak = re.search(r"launcher peak memory (\d+) KiB", err)
    drop = re.search(r"dropped records\s+(\d+)", err)
    # Where the tail goes (run's debug line "after the exit: ..."): the records
    # the reading thread had not read at the exit, and the parts of the tail.
    left = re.search(r"tail of (\d+) records \(of (\d+)\) read ([\d.]+) ms", err)
    closed = re.search(r"file closed ([\d.]+) ms", err)
    summ = re.search(r"summary ([\d.]+) ms", err)
    size = os.path.getsize(out)
    if not replace:
        os.unlink(out)
    return {"tail": tail, "launcher": int(peak.group(1)) / 1024 if peak else None,
            "tree": rss / 1024 if rss else None, "bpl": size / n,
            "dropped": int(drop.group(1)) if drop else 0,
            "left": 100.0 * int(left.group(1)) / int(left.group(2)) if left else None,
            "read_ms": float(left.group(3)) if left else None,
            "close_ms": float(closed.group(1)) if closed else None,
            "sum_ms": float(summ.group(1)) if summ else None, "freed_ms": freed}


def one_cli(cliloader, app, n, tmp):
    dump = os.path.join(tmp, "clidump")
    shutil.rmtree(dump, ignore_errors=True)
    env = dict(os.environ, STREAM_APP_END="1", CLI_DumpDir=dump, CLI_ChromeCallLogging="1",
               CLI_ChromePerformanceTiming="1")
    tail, _, rss = run_timed([cliloader, "-q", app, "loop", str(n)], env)
    size = sum(os.path.getsize(os.path.join(dump, f)) for f in os.listdir(dump)
               if f.endswith(".json"))
    shutil.rmtree(dump, ignore_errors=True)
    return {"tail": tail, "launcher": None, "tree": rss / 1024 if rss else None,
            "bpl": size / n, "dropped": 0, "left": None, "read_ms": None, "close_ms": None,
            "sum_ms": None, "freed_ms": None}


def count_events(path):
    """Trace events in a JSON trace written by acceltrace (one per line)."""
    n = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 24)
            if not b:
                return n
            n += b.count(b'{"ph":')


def export_rate(act, app, n, tmp, buffer_size, reps):
    """Events per CPU-second of `acceltrace export` of one kept spool."""
    out = os.path.join(tmp, "k.json")
    r = subprocess.run([act, "run", "--keep-spool", "--no-summary", f"--buffer-size={buffer_size}",
                        "-o", out, "-f", "--", app, "loop", str(n)], env=act_env(act),
                       capture_output=True, text=True, timeout=1800)
    m = re.search(r"spool kept in (\S+)", r.stderr)
    if r.returncode != 0 or not m:
        sys.exit(f"{act} run --keep-spool exited {r.returncode}: {r.stderr[-1500:]}")
    rates = []
    try:
        for _ in range(reps):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            e = subprocess.run([act, "export", m.group(1), "-o", out, "-f"], capture_output=True,
                               text=True, timeout=1800)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if e.returncode != 0:
                sys.exit(f"{act} export exited {e.returncode}: {e.stderr[-1500:]}")
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            rates.append(count_events(out) / cpu / 1e6)
    finally:
        shutil.rmtree(m.group(1), ignore_errors=True)
        if os.path.exists(out):
            os.unlink(out)
    return rates


def spread(vals, digits=1):
    """Median (min..max) of the values given (None left out), `digits` decimals."""
    vals = sorted(v for v in vals if v is not None)
    if not vals:
        return "–"
    return f"{statistics.median(vals):.{digits}f} ({vals[0]:.{digits}f}..{vals[-1]:.{digits}f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("app")
    ap.add_argument("--act", action="append", default=[])
    ap.add_argument("--cliloader")
    ap.add_argument("--sizes", default="16000,160000,1600000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--buffer-size", default="2G")
    ap.add_argument("--export-reps", type=int, default=0)
    ap.add_argument("--no-settle", dest="settle", action="store_false")
    ap.add_argument("--replace", action="store_true")
    a = ap.parse_args()
    tools = [tuple(s.split("=", 1)) for s in a.act]
    if a.cliloader:
        tools.append(("CLIntercept", a.cliloader))
    sizes = [int(s) for s in a.sizes.split(",")]
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps):
            for n in sizes:
                # Each round in another order: a tool that follows another's
                # long run (CLIntercept's 1.6 M-launch trace, 350 MB, being
                # written back) is not always the same one.
                k = rep % len(tools)
                for label, path in tools[k:] + tools[:k]:
                    r = (one_cli(path, a.app, n, tmp) if label == "CLIntercept" else
                         one_act(path, a.app, n, tmp, a.buffer_size, a.settle, label,
                                 a.replace))
                    res.setdefault((label, n), []).append(r)
                    print(f"round {rep + 1} {label} {n}: tail {r['tail']:.1f} ms, launcher "
                          f"{r['launcher']} MiB, tree {r['tree']} MiB, {r['bpl']:.0f} B/launch, "
                          f"dropped {r['dropped']}, left at exit {r['left']} %, read "
                          f"{r['read_ms']} ms, closed {r['close_ms']} ms, summary "
                          f"{r['sum_ms']} ms, freed after {r['freed_ms']} ms", flush=True)
        for n in sizes if a.export_reps else []:
            for label, path in tools:
                if label != "CLIntercept":
                    rates = export_rate(path, a.app, n, tmp, a.buffer_size, a.export_reps)
                    for r in res[(label, n)]:
                        r["export"] = rates
                    print(f"export {label} {n}: {spread(rates)} M events/CPU-s", flush=True)
    print("\n| launches | tool | tail ms | tail / CLIntercept's, paired | launcher peak MiB "
          "| process tree peak MiB "
          "| trace B/launch | dropped | % records left at exit | tail: read ms | file closed ms "
          "| summary ms | freed after ms | export M ev/CPU-s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        for label, _ in tools:
            rs = res[(label, n)]
            # Each round's tail over CLIntercept's in the same round: the
            # machine's moods cancel where a ratio of medians keeps them.
            cli = res.get(("CLIntercept", n))
            paired = ([r["tail"] / c["tail"] for r, c in zip(rs, cli)]
                      if cli and label != "CLIntercept" else [])
            under2 = (f", under 2 in {sum(x < 2 for x in paired)} of {len(paired)}"
                      if paired else "")
            print(f"| {n} | {label} | {spread([r['tail'] for r in rs])} | "
                  f"{spread(paired, 2)}{under2} | "
                  f"{spread([r['launcher'] for r in rs])} | {spread([r['tree'] for r in rs])} | "
                  f"{statistics.median(r['bpl'] for r in rs):.0f} | "
                  f"{max(r['dropped'] for r in rs)} | {spread([r['left'] for r in rs])} | "
                  f"{spread([r['read_ms'] for r in rs])} | {spread([r['close_ms'] for r in rs])} | "
                  f"{spread([r['sum_ms'] for r in rs])} | {spread([r['freed_ms'] for r in rs])} | "
                  f"{spread(rs[0].get('export', []))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
