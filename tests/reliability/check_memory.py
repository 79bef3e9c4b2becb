#!/usr/bin/env python3
"""check_memory.py -- bounded memory (docs/reliability.md, "Memory").

Runs mem_workload (programs/mem_workload.c) under `acceltrace run
--buffer-size=CAP` with far more records than CAP holds, and checks:

  * the resident memory the program gained while recording (VmRSS after -
    before, read by the program from /proc/self/status) is at most CAP plus
    the documented fixed overhead: FIXED_KIB per process and PER_THREAD_KIB
    per recording thread; the file-backed part (RssFile + RssShmem, the
    spool mapping) alone is at most CAP;
  * nothing is lost silently: for every kind the program wrote, records in
    the trace + dropped == calls made, and some were dropped;
  * the drops are in the trace metadata per kind, and the summary (at the
    end of `run`, and `acceltrace summary` on the file) lists the same
    per-kind counts.

usage: check_memory.py ACCELTRACE MEM_WORKLOAD WORKDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

FIXED_KIB = 64        # documented in docs/reliability.md
PER_THREAD_KIB = 24   # documented in docs/reliability.md
CASES = [("1M", 1024, 8, 50000), ("4M", 4096, 32, 10000)]


def fail(msg):
    sys.exit("FAIL: " + msg)


def summary_drops(text):
    text = re.sub(r"\n {4,}", " ", text)  # a long line is wrapped at 80 columns
    m = re.search(r"dropped records\s+(\d+)(?: \(([^)]*)\))?", text)
    if not m and ("Counters: all clean" in text or re.search(r"^Counters:$", text, re.M)):
        return 0, {}  # the summary lists only the counters that are not 0
    if not m:
        fail("no 'dropped records' line in the summary:\n" + text[-2000:])
    kinds = {}
    for part in (m.group(2) or "").split(", "):
        if part:
            k, v = part.rsplit(" ", 1)
            kinds[k] = int(v)
    return int(m.group(1)), kinds


def run_case(acceltrace, prog, work, cap, cap_kib, threads, iters):
    trace = os.path.join(work, "mem-%s.json" % cap)
    r = subprocess.run([acceltrace, "run", "--buffer-size=" + cap, "-o", trace, "--",
                        prog, str(threads), str(iters)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=100)
    err = r.stderr.decode(errors="replace")
    if r.returncode != 0:
        fail("%s: exit status %d: %s" % (cap, r.returncode, err[-1500:]))
    out = json.loads(r.stdout)
    before, after = out["before"], out["after"]
    gained = after["VmRSS"] - before["VmRSS"]
    file_gained = (after["RssFile"] + after["RssShmem"]) - (before["RssFile"] + before["RssShmem"])
    bound = cap_kib + FIXED_KIB + PER_THREAD_KIB * threads
    print("%s, %d threads: RSS +%d KiB (file-backed +%d, anonymous +%d); bound %d KiB"
          % (cap, threads, gained, file_gained, after["RssAnon"] - before["RssAnon"], bound))
    if gained > bound:
        fail("%s: resident memory grew by %d KiB, more than %d KiB" % (cap, gained, bound))
    if file_gained > cap_kib:
        fail("%s: the spool mapping grew by %d KiB, more than its capacity" % (cap, file_gained))

    with open(trace) as f:
        meta = json.load(f)["acceltrace"]
    dropped, records = meta["dropped"], meta["records"]
    for kind, calls in out["calls"].items():
        got = records[kind] + dropped[kind] + meta["outside_window"][kind]
        if got != calls:
            fail("%s: %s: %d recorded + %d dropped != %d calls"
                 % (cap, kind, records[kind], dropped[kind], calls))
        if not dropped[kind]:
            fail("%s: %s: nothing dropped (the test needs an overflow)" % (cap, kind))
    total = sum(dropped.values())
    want = {k: v for k, v in dropped.items() if v}
    for where, text in (("run", err), ("summary", None)):
        if text is None:
            s = subprocess.run([acceltrace, "summary", trace], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            if s.returncode != 0:
                fail("summary exit %d: %s" % (s.returncode, s.stderr.decode()))
            text = s.stdout.decode()
        n, kinds = summary_drops(text)
        if n != total or kinds != want:
            fail("%s summary: dropped %d %r, trace says %d %r" % (where, n, kinds, total, want))


# A spool far larger than what is recorded: the program's resident spool
# pages stay within a window however much it records (docs/reliability.md):
# the chunks faulted in ahead (8 MiB) and, per recording thread, the 2 MiB
# regions around its current chunk (about 3 MiB a thread measured, 8 allowed).
WINDOW_AHEAD_KIB = 8 * 1024
WINDOW_THREAD_KIB = 8 * 1024


def window_run(acceltrace, prog, work, threads, iters):
    trace = os.path.join(work, "mem-window.json")
    r = subprocess.run([acceltrace, "run", "--buffer-size=1G", "--no-summary", "-f", "-o", trace,
                        "--", prog, str(threads), str(iters)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=100)
    if r.returncode != 0:
        fail("window: exit status %d: %s" % (r.returncode, r.stderr.decode()[-1500:]))
    out = json.loads(r.stdout)
    before, after = out["before"], out["after"]
    with open(trace) as f:
        dropped = json.load(f)["acceltrace"]["dropped"]
    os.unlink(trace)
    if sum(dropped.values()):
        fail("window: records dropped: %r" % dropped)
    return (after["RssFile"] + after["RssShmem"]) - (before["RssFile"] + before["RssShmem"])


def run_window_case(acceltrace, prog, work, threads=4, iters=800000):
    """About 230 MB recorded into a 1 GiB spool: before the recorder gave up
    the pages of full chunks, the program kept ~105 MB of them resident."""
    window = WINDOW_AHEAD_KIB + WINDOW_THREAD_KIB * threads
    grown = window_run(acceltrace, prog, work, threads, iters)
    print("window: %d threads x %d iterations, spool pages resident +%d KiB (window %d KiB)"
          % (threads, iters, grown, window))
    if grown > window:
        fail("window: the spool's resident pages grew by %d KiB, more than the %d KiB window"
             % (grown, window))


def main():
    acceltrace, prog, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for case in CASES:
        run_case(acceltrace, prog, work, *case)
    run_window_case(acceltrace, prog, work)
    print("ok")


if __name__ == "__main__":
    main()
