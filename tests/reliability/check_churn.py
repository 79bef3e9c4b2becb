#!/usr/bin/env python3
"""check_churn.py -- thread and process churn (docs/reliability.md, "Churn").

  threads: churn_workload threads N BATCH RANGES with the library attached
      and a spool far smaller than one chunk per thread: every range of
      every thread is there (exact counts, nothing dropped), the spool used
      no more chunks than it has (chunks of exited threads were reused),
      and in the AddressSanitizer build LeakSanitizer finds no leak (the
      workload's exit status would say so).
  procs: `acceltrace run -- churn_workload procs RANGES`: the parent, a
      forked child (no exec), a fork+exec child and a posix_spawn child
      each have their own sealed process in the trace with exactly their
      own ranges, and the parent's ranges (two threads, one recording
      across the forks) are all there.

usage: check_churn.py threads LIBACCELTRACE CHURN_WORKLOAD SPOOL_CHECK WORKDIR N BATCH RANGES
       check_churn.py procs ACCELTRACE CHURN_WORKLOAD WORKDIR RANGES [quiesce]
(quiesce: sanitizer builds, see churn_workload.c)
"""
import collections
import json
import os
import shutil
import subprocess
import sys


def fail(msg):
    sys.exit("FAIL: " + msg)


def threads(lib, prog, checker, work, n, batch, ranges):
    shutil.rmtree(work, ignore_errors=True)
    spool = os.path.join(work, "spool")
    os.makedirs(spool)
    env = dict(os.environ, ACCELTRACE_SPOOL_DIR=spool, OPENCL_LAYERS=lib,
               ACCELTRACE_BUFFER_SIZE="4M", ACCELTRACE_CHUNK_SIZE="16K")
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    p = subprocess.run([prog, "threads", str(n), str(batch), str(ranges)], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if p.returncode != 0:
        fail("workload exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-3000:]))
    c = subprocess.run([checker, spool], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if c.returncode != 0 or c.stderr:
        fail("spool_check: %s" % c.stderr.decode(errors="replace")[-2000:])
    got = json.loads(c.stdout)
    if got["spools"] != 1 or got["sealed"] != 1 or got["problems"]:
        fail("spool state %r" % {k: got[k] for k in ("spools", "sealed", "problems")})
    if any(got["dropped"].values()):
        fail("dropped %r (chunks not reused?)" % {k: v for k, v in got["dropped"].items() if v})
    ths = [t for t in got["threads"] if t["name"] == "s"]
    if len(ths) != n:
        fail("%d threads recorded, %d started" % (len(ths), n))
    bad = [t for t in ths if (t["push"], t["pop"], t["bad"]) != (ranges, ranges, 0)]
    if bad:
        fail("threads with wrong records: %r" % bad[:3])
    if got["records"]["thread"] < n:
        fail("only %d THREAD records for %d threads" % (got["records"]["thread"], n))
    if got["chunks_used"] > got["chunk_count"] or got["chunk_count"] >= n:
        fail("chunks used %d of %d for %d threads" % (got["chunks_used"], got["chunk_count"], n))
    print("%d threads through %d chunks: exact" % (n, got["chunks_used"]))


def procs(acceltrace, prog, work, ranges, extra):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    trace = os.path.join(work, "procs.json")
    p = subprocess.run([acceltrace, "run", "--no-summary", "-o", trace, "--", prog, "procs",
                        str(ranges)] + extra, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    if p.returncode != 0:
        fail("exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-2000:]))
    want_parent = json.loads(p.stdout)["parent"]
    with open(trace) as f:
        doc = json.load(f)
    meta = doc["acceltrace"]
    procs_ = meta["processes"]
    if len(procs_) != 4 or not all(x["sealed"] for x in procs_) or meta["truncated_processes"]:
        fail("want 4 sealed processes, got %r" % procs_)
    if len({x["pid"] for x in procs_}) != 4:
        fail("processes share a pid: %r" % procs_)
    if any(meta["dropped"].values()) or meta["errors"]:
        fail("dropped %r errors %r" % (meta["dropped"], meta["errors"]))
    by_pid = collections.defaultdict(collections.Counter)
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "user_annotation":
            by_pid[e["pid"]][e["name"]] += 1
    got = [dict(c) for c in by_pid.values()]
    want = sorted([{"p": want_parent}, {"fork": ranges}, {"exec": ranges}, {"spawn": ranges}],
                  key=lambda d: sorted(d.items()))
    got = sorted(got, key=lambda d: sorted(d.items()))
    if got != want:
        fail("ranges per process %r, want %r" % (got, want))
    print("parent %d ranges, fork/exec/spawn children %d each: exact" % (want_parent, ranges))


def main():
    if sys.argv[1] == "threads":
        a = sys.argv[2:]
        threads(a[0], a[1], a[2], a[3], int(a[4]), int(a[5]), int(a[6]))
    else:
        a = sys.argv[2:]
        procs(a[0], a[1], a[2], int(a[3]), a[4:])


if __name__ == "__main__":
    main()
