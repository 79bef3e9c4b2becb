#!/usr/bin/env python3
"""check_crash.py -- `acceltrace run` keeps every published record when the
traced program dies (docs/reliability.md, "Crashes").

Runs crash_workload (programs/crash_workload.c) --runs times, each with a
random death (SIGKILL, SIGSEGV, SIGBUS, abort(), _exit(3), or none as the
control) at a random total record count, and checks each trace:

  * `acceltrace run` passes the status through (128+signal, or 3);
  * the trace parses (json module) and names the process truncated
    (acceltrace.truncated_processes, processes[].sealed == false), and a
    normal end is sealed and not truncated;
  * per thread, the ranges "w<t>.<i>" form a gap-free, duplicate-free
    prefix 0..m-1 with m >= the count the program published before dying
    (PUBFILE); every range below that count is whole (no "truncated" arg)
    and holds its clEnqueueNDRangeKernel call (every 8th iteration);
  * the counter "seq.t<t>" values are the same kind of prefix.

--external more runs are SIGKILLed from outside 0-300 ms after the start
(during start-up, recording or teardown): status 137, the trace parses,
the process (if it recorded anything) is truncated with gap-free prefixes.

usage: check_crash.py ACCELTRACE CRASH_WORKLOAD WORKDIR [--runs N] [--seed S]
"""
import argparse
import bisect
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

DEATHS = {"kill": 128 + signal.SIGKILL, "segv": 128 + signal.SIGSEGV,
          "bus": 128 + signal.SIGBUS, "abort": 128 + signal.SIGABRT, "exit": 3, "none": 0,
          "wait": 128 + signal.SIGKILL}
THREADS = 4
RANGE = re.compile(r"^w(\d+)\.(\d+)$")


def fail(msg, ctx):
    sys.exit("FAIL (%s): %s" % (ctx, msg))


def check_prefix(seen, floor, what, ctx):
    """seen: list of ints recorded for one thread."""
    if len(seen) != len(set(seen)):
        fail("%s: duplicates" % what, ctx)
    m = len(seen)
    if sorted(seen) != list(range(m)):
        missing = sorted(set(range(max(seen) + 1)) - set(seen))[:5]
        fail("%s: not a gap-free prefix (missing e.g. %s)" % (what, missing), ctx)
    if m < floor:
        fail("%s: %d recorded but %d were published before the death" % (what, m, floor), ctx)
    return m


def check_trace(path, published, mode, ctx):
    with open(path, "rb") as f:
        doc = json.load(f)
    meta = doc["acceltrace"]
    procs = meta["processes"]
    if mode == "wait" and not procs:
        return 0  # killed before its first record: nothing to keep
    if len(procs) != 1:
        fail("expected one process, got %r" % procs, ctx)
    pid = procs[0]["pid"]
    truncated = meta.get("truncated_processes", [])
    if mode == "none":
        if not procs[0]["sealed"] or truncated:
            fail("normal end marked truncated", ctx)
    elif procs[0]["sealed"] or truncated != [pid]:
        fail("death not marked truncated: sealed=%r truncated=%r" % (procs[0]["sealed"], truncated), ctx)
    if any(meta["dropped"].values()):
        fail("records dropped: %r" % meta["dropped"], ctx)

    ranges = {t: [] for t in range(THREADS)}
    tid_of = {}
    whole = {t: set() for t in range(THREADS)}
    counters = {t: [] for t in range(THREADS)}
    api = {}  # tid -> list of ts of clEnqueueNDRangeKernel
    spans = {}  # (t, i) -> (ts, end)
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "user_annotation":
            m = RANGE.match(e["name"])
            if not m:
                fail("unexpected range %r" % e["name"], ctx)
            t, i = int(m.group(1)), int(m.group(2))
            ranges[t].append(i)
            tid_of.setdefault(t, e["tid"])
            if tid_of[t] != e["tid"]:
                fail("thread %d on two lanes" % t, ctx)
            if not e.get("args", {}).get("truncated"):
                whole[t].add(i)
            spans[(t, i)] = (e["ts"], e["ts"] + e["dur"])
        elif e.get("ph") == "C" and e["name"].startswith("seq.t"):
            t = int(e["name"][5:])
            vals = [v for v in e.get("args", {}).values()]
            counters[t].append(int(vals[0]))
        elif e.get("ph") == "X" and e.get("name") == "clEnqueueNDRangeKernel":
            api.setdefault(e["tid"], []).append(e)
    for t in range(THREADS):
        floor = published.get(t, 0)
        m = check_prefix(ranges[t], floor, "ranges of thread %d" % t, ctx)
        if mode == "none" and m != floor:
            fail("thread %d: %d ranges, %d expected" % (t, m, floor), ctx)
        broken = [i for i in range(floor) if i not in whole[t]]
        if broken:
            fail("thread %d: published ranges marked truncated: %s" % (t, broken[:5]), ctx)
        # A counter is written after its pop: the counters may stop one
        # short of the ranges, never more, and never below what was published.
        mc = check_prefix(counters[t], floor, "counter of thread %d" % t, ctx)
        if mc > m:
            fail("thread %d: %d counters but %d ranges" % (t, mc, m), ctx)
        # Every published kernel iteration's range holds its launch.
        calls = sorted((c["ts"], c["ts"] + c["dur"]) for c in api.get(tid_of.get(t), []))
        starts = [c[0] for c in calls]
        want = len(range(0, floor, 8))
        inside = 0
        for i in range(0, floor, 8):
            s, e = spans[(t, i)]
            k = bisect.bisect_left(starts, s)
            if k < len(calls) and calls[k][1] <= e + 0.001:
                inside += 1
        if inside < want:
            fail("thread %d: %d kernel launches inside published ranges, %d expected"
                 % (t, inside, want), ctx)
    return sum(len(v) for v in ranges.values())


def child_of(pid):
    """The traced program: the launcher's only child."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = f.read().split()
    except OSError:
        return None
    return int(kids[0]) if kids else None


def run_one(a, argv, mode, delay_ms):
    """Run the launcher; for "wait", SIGKILL the traced program from
    outside delay_ms after it was started (start-up, recording or exit)."""
    if mode != "wait":
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    kid = None
    while kid is None and time.monotonic() < deadline and p.poll() is None:
        kid = child_of(p.pid)
    time.sleep(delay_ms / 1000.0)
    if kid is not None:
        try:
            os.kill(kid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    out, err = p.communicate(timeout=120)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("acceltrace")
    ap.add_argument("program")
    ap.add_argument("workdir")
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--external", type=int, default=10,
                    help="extra runs killed from outside at a random time")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 30)
    print("seed %d (rerun with --seed %d)" % (seed, seed))
    rng = random.Random(seed)
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    modes = ["kill", "segv", "bus", "abort", "exit"]
    plan = [("none", 3000)]
    for n in range(a.runs - 1):
        # Every mode equally often; a few deaths right at the start.
        kill_at = rng.choice([0, 1, 2]) if n % 10 == 0 else rng.randrange(3, 12000)
        plan.append((modes[n % len(modes)], kill_at))
    # Deaths from outside, at any instant: SIGKILL 0-300 ms after start.
    plan += [("wait", rng.randrange(0, 300)) for _ in range(a.external)]
    total = 0
    for n, (mode, kill_at) in enumerate(plan):
        ctx = "run %d: %s at %d, seed %d" % (n, mode, kill_at, seed)
        trace = os.path.join(a.workdir, "t%d.json" % n)
        pub = os.path.join(a.workdir, "pub%d" % n)
        r = run_one(a, [a.acceltrace, "run", "--no-summary", "-o", trace, "--",
                        a.program, mode, str(kill_at), str(THREADS), pub], mode, kill_at)
        if r.returncode != DEATHS[mode]:
            fail("exit status %d, expected %d; stderr: %s"
                 % (r.returncode, DEATHS[mode], r.stderr.decode(errors="replace")[-800:]), ctx)
        published = {}
        if mode == "wait" and not os.path.exists(pub):
            open(pub, "w").close()
        with open(pub) as f:
            for line in f:
                t, c = line.split()
                published[int(t)] = int(c)
        if kill_at and mode not in ("none", "wait") and sum(published.values()) < kill_at - THREADS:
            fail("published counts %r below the kill point" % published, ctx)
        total += check_trace(trace, published, mode, ctx)
        os.unlink(trace)
    print("%d runs, %d ranges checked: ok" % (len(plan), total))


if __name__ == "__main__":
    main()
