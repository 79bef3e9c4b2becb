#!/usr/bin/env python3
"""check_stream.py -- `acceltrace run` streams (issue 17 item 1): the trace it
writes, reading the program's spool and writing its settled host events while
the program runs, is the trace a batch export of the same spool writes
afterwards (`acceltrace export` of the kept spool) event for event: the same
top-level members and values, the same events, the events of each lane and
kind in the same order (byte for byte when nothing was written early); the
summary is identical.

The programs read their spool with --stream-interval=1, so that even short
runs are read in many batches, across chunk and segment boundaries: the
bundled example (vecops, several threads: the OpenCL callbacks), a program
churning threads (chunks recycled between threads), one forking, exec'ing and
spawning children on two recording threads, one exec'ing itself (a spool
per image: the first image is the one read live), and one opening and closing
its capture window with act_start/act_stop (--capture-range=api: which API
calls are inside is settled after the pass), and stream_app's kernel
launches, whose device ops and flows are laid out and written while it runs
too (the first lane group: device 0, the lowest queue): on one queue, on two
(the second waits for the exit), with a fork + exec child and an exec'd
image of the same pid (their ops on the same device), and beside a thread
that recorded once and then waits idle until the end (its records, in a
segment left open, must hold nothing back: most of the run is read while it
runs).

usage: check_stream.py ACCELTRACE VECOPS CHURN_WORKLOAD EDGE_WORKLOAD CAPTURE_API STREAM_APP
       [CASE...]
(CASE: vecops, threads, procs, reexec, capture_api, launches, queues, loop, idle,
forkexec, killed, sealed; default all)

killed: a launcher SIGKILLed while it streams leaves no temporary file beside
-o (the trace file is unnamed, O_TMPFILE, until it is complete); started
3 nice levels below us, every thread of it (the reading thread, the writer
threads) stays at that nice value meanwhile: the user's priority, neither
raised nor lowered.

sealed: reads 10 s apart, a program whose exit lingers 500 ms after the
tracer's exit handler: its records are read when its spool is sealed (the
recorder touches the file, the reading thread's inotify watch sees it),
not after the exit, and every event is written then: after the exit only
the file's close and the summary are left.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def summary_lines(stderr):
    """The summary: what acceltrace printed that is not one of its own
    'acceltrace: ...' lines, at the end of stderr (after the program's)."""
    return [l for l in stderr.splitlines() if not l.startswith("acceltrace:")]


# Cases whose program's host events settle while it runs (capture_api's
# wait for its capture window; reexec's first image records one range, which
# its thread still owns when the image ends: none is written early there).
WRITES_EARLY = ("vecops", "threads", "procs", "launches", "queues", "forkexec", "idle")
# Cases whose device ops (and their flows) are written while it runs: PoCL's
# callback thread fills a chunk with them (~1 700 ops) before the reader may
# read past it, which these runs do. forkexec's first image often ends
# before (it reports what it wrote, early or not, void or not).
DEVICE_EARLY = ("launches", "queues", "idle")


def equivalent(name, a, b):
    """The streamed trace is the batch trace event for event: the same
    top-level members with the same values, and the same events, each kind
    of event of a process in the same order. Byte for byte when nothing was
    written while the program ran."""
    if a == b:
        return "identical"
    ta, tb = json.loads(a), json.loads(b)
    ea, eb = ta.pop("traceEvents"), tb.pop("traceEvents")
    if ta != tb:
        keys = sorted(k for k in set(ta) | set(tb) if ta.get(k) != tb.get(k))
        fail(f"{name}: top-level members differ: {keys}")
    if len(ea) != len(eb):
        fail(f"{name}: {len(ea)} events streamed, {len(eb)} in the batch export")
    def canon(events):
        return sorted(json.dumps(e, sort_keys=True) for e in events)
    ca, cb = canon(ea), canon(eb)
    if ca != cb:
        at = next(i for i in range(len(ca)) if ca[i] != cb[i])
        fail(f"{name}: events differ: {ca[at]} vs {cb[at]}")
    def lanes(events):  # the order within each (pid, tid, ph, cat)
        out = {}
        for e in events:
            out.setdefault((e.get("pid"), e.get("tid"), e.get("ph"), e.get("cat")), []).append(
                json.dumps(e, sort_keys=True))
        return out
    if lanes(ea) != lanes(eb):
        fail(f"{name}: the events of a lane come in another order")
    return "equivalent event for event"


def streamed(name, r):
    """The run's "N records were read while the program ran" match, when it
    read something (and wrote what the case expects early)."""
    live = re.search(r"(\d+) records were read while the program ran, (\d+) events written "
                     r"\((\d+) device ops\)", r.stderr)
    if not live or (int(live.group(1)) == 0 and name not in READ_AT_EXIT):
        return None
    if name in WRITES_EARLY and int(live.group(2)) == 0:
        return None
    if name in DEVICE_EARLY and int(live.group(3)) == 0:
        return None
    return live


def check(act, name, argv, tmp, extra=()):
    out = os.path.join(tmp, name + ".stream.json")
    # Whether the reading thread gets the CPU while a short
    # program runs is the machine's load, not what is tested: up to three
    # tries for a run that was read while it ran; the last try's trace is
    # the one compared with the batch export of its spool.
    for attempt in range(3):
        r = subprocess.run([act, "run", "--keep-spool", "--stream-interval=1", "--log=debug",
                            "-o", out, "-f", *extra, "--", *argv], capture_output=True,
                           text=True, timeout=120)
        if r.returncode != 0 or streamed(name, r) or attempt == 2:
            break
        m = re.search(r"spool kept in (\S+)", r.stderr)
        if m:
            subprocess.run(["rm", "-rf", m.group(1)])
        print(f"note {name}: not read while it ran (try {attempt + 1}); again")
    if r.returncode != 0:
        fail(f"{name}: run exited {r.returncode}: {r.stderr[-2000:]}")
    live = re.search(r"(\d+) records were read while the program ran, (\d+) events written "
                     r"\((\d+) device ops\)", r.stderr)
    if not live or (int(live.group(1)) == 0 and name not in READ_AT_EXIT):
        fail(f"{name}: nothing was read while the program ran: {r.stderr[-2000:]}")
    after = check_after_exit(name, r.stderr, int(live.group(1)))
    m = re.search(r"spool kept in (\S+)", r.stderr)
    if not m:
        fail(f"{name}: no 'spool kept in' line: {r.stderr[-2000:]}")
    spool = m.group(1)
    batch = os.path.join(tmp, name + ".batch.json")
    e = subprocess.run([act, "export", spool, "-o", batch], capture_output=True, text=True,
                       timeout=120)
    if e.returncode != 0:
        fail(f"{name}: export exited {e.returncode}: {e.stderr[-2000:]}")
    a, b = open(out, "rb").read(), open(batch, "rb").read()
    same = equivalent(name, a, b)
    want = summary_lines(e.stderr)
    got = summary_lines(r.stderr)
    if not want or got[-len(want):] != want:
        fail(f"{name}: summaries differ:\n--- run\n" + "\n".join(got) + "\n--- export\n" +
             "\n".join(want))
    subprocess.run(["rm", "-rf", spool])
    written = int(live.group(2))
    if name in WRITES_EARLY and written == 0:
        fail(f"{name}: no event was written while the program ran: {r.stderr[-2000:]}")
    devops = int(live.group(3))
    if name in DEVICE_EARLY and devops == 0:
        fail(f"{name}: no device op was written while the program ran: {r.stderr[-2000:]}")
    void = " (void: rewritten at the exit)" if "written early are void" in r.stderr else ""
    print(f"ok {name}: {live.group(1)} records read and {written} events written while it ran "
          f"({devops} device ops){void}; {len(a)} bytes, {same}; summary identical "
          f"({len(want)} lines); {after}")


# The cases whose records may all be read at the exit (record.h S1: a
# segment is read once its thread ended it; a thread ends one every 4 KiB of
# records, when it leaves its chunk, or when it ends): each image of
# `reexec` records one range and is replaced by exec, which ends none of its
# segments; capture_api's threads record less than 4 KiB each and live until
# the exit. Both are still read through the live build, at the exit.
READ_AT_EXIT = {"reexec", "capture_api"}

# The cases whose records must mostly be read while the program runs.
HELD_BACK_NOT = {"idle"}

SEALED_EARLY = re.compile(
    r"at the seal, before the exit: the last (\d+) records read and every event written in "
    r"([\d.]+) ms")
AFTER_EXIT = re.compile(
    r"after the exit: ([\d.]+) ms in all; reader stopped ([\d.]+) ms, tail of (\d+) records "
    r"\(of (\d+)\) read ([\d.]+) ms, events written ([\d.]+) ms, file closed ([\d.]+) ms, "
    r"summary ([\d.]+) ms, spool handed off ([\d.]+) ms")


def check_after_exit(name, stderr, read_live):
    """The debug line that splits the time after the exit (what
    bench_workload reads): the tail is exactly the records the reading thread
    had not taken, and the parts add up to the whole."""
    m = AFTER_EXIT.search(stderr)
    if not m:
        fail(f"{name}: no 'after the exit' line: {stderr[-2000:]}")
    total, tail, records = float(m.group(1)), int(m.group(3)), int(m.group(4))
    parts = sum(float(m.group(i)) for i in (2, 5, 6, 7, 8, 9))
    if tail + read_live != records:
        fail(f"{name}: tail {tail} + {read_live} read while it ran != {records} records")
    # A thread that recorded and went idle holds nothing back: the launches
    # of the other were read as they came (400 ms of them), not at the exit.
    if name in HELD_BACK_NOT and tail * 2 > records:
        fail(f"{name}: {tail} of {records} records were left for after the exit")
    if abs(parts - total) > 0.35:  # six parts, each rounded to 0.1 ms
        fail(f"{name}: the parts after the exit add up to {parts:.1f} ms, not {total} ms")
    return f"tail {tail} of {records} records, {total} ms after the exit"


def check_sealed(act, app, tmp):
    """A spool sealed at the exit is read at once, not at the next read:
    with reads 10 s apart, a 3 000-launch program whose exit takes 500 ms
    after the tracer's own exit handler (STREAM_APP_LINGER_MS) has all its
    records read and every event written during those 500 ms (its spool is
    the only one: act_export_live_finish), none after the exit; the trace
    is the batch export's, event for event."""
    out = os.path.join(tmp, "sealed.json")
    env = dict(os.environ, STREAM_APP_LINGER_MS="500")
    r = subprocess.run([act, "run", "--stream-interval=10000", "--log=debug", "--no-summary",
                        "--keep-spool", "-o", out, "-f", "--", app, "loop", "3000"],
                       capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0:
        fail(f"sealed: run exited {r.returncode}: {r.stderr[-2000:]}")
    m = AFTER_EXIT.search(r.stderr)
    if not m:
        fail(f"sealed: no 'after the exit' line: {r.stderr[-2000:]}")
    tail, records = int(m.group(3)), int(m.group(4))
    if tail:
        fail(f"sealed: {tail} of {records} records were read after the exit, not when the "
             f"spool was sealed")
    early = SEALED_EARLY.search(r.stderr)
    if not early:
        fail(f"sealed: the events were not all written when the spool was sealed: "
             f"{r.stderr[-2000:]}")
    if "void" in r.stderr:
        fail(f"sealed: what was written at the seal was void: {r.stderr[-2000:]}")
    m = re.search(r"spool kept in (\S+)", r.stderr)
    if not m:
        fail(f"sealed: no 'spool kept in' line: {r.stderr[-2000:]}")
    batch = os.path.join(tmp, "sealed_batch.json")
    e = subprocess.run([act, "export", "--no-summary", "-o", batch, "-f", m.group(1)],
                       capture_output=True, text=True, timeout=120)
    subprocess.run(["rm", "-rf", m.group(1)])
    if e.returncode != 0:
        fail(f"sealed: export exited {e.returncode}: {e.stderr[-2000:]}")
    equivalent("sealed", open(out, "rb").read(), open(batch, "rb").read())
    print(f"ok sealed: {records} records read and every event written at the seal "
          f"({early.group(2)} ms, its last {early.group(1)} records), none after the exit")


def thread_nices(pid):
    """The nice value of each thread of `pid` (the 19th field of
    /proc/PID/task/TID/stat), by thread id."""
    nices = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return nices
    for tid in tids:
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        except OSError:
            continue
        nices[tid] = int(stat.rsplit(")", 1)[1].split()[16])
    return nices


def check_killed(act, app, tmp):
    d = os.path.join(tmp, "killed")
    os.mkdir(d)
    out = os.path.join(d, "k.json")
    p = subprocess.Popen([act, "run", "--stream-interval=1", "-o", out, "--", app, "launches",
                          "8000", "8000"], env=dict(os.environ, TMPDIR=d),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         preexec_fn=lambda: os.nice(3))
    want = min(os.nice(0) + 3, 19)  # ours plus 3: ctest may itself run under nice
    begun, nices, deadline = None, {}, time.time() + 30
    while begun is None and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
        nices.update(thread_nices(p.pid))
        try:
            fds = os.listdir(f"/proc/{p.pid}/fd")
        except OSError:  # it ended meanwhile
            break
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{p.pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith(d + "/#") or target.startswith(os.path.join(d, ".k.json.")):
                begun = target
    try:
        kids = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
    except OSError:
        kids = []
    p.kill()
    p.wait()
    for k in kids:
        try:
            os.kill(int(k), signal.SIGKILL)
        except OSError:
            pass
    for k in kids:  # gone before the directory is removed
        for _ in range(100):
            if not os.path.exists(f"/proc/{k}"):
                break
            time.sleep(0.05)
    if begun is None:
        fail("killed: the launcher never began the trace file while the program ran")
    if len(nices) < 2 or set(nices.values()) != {want}:
        fail(f"killed: the launcher started at nice {want} had threads at {nices} (thread: "
             f"nice), not two or more (the main and the reading thread), all at nice {want}")
    left = [n for n in os.listdir(d) if not n.startswith("acceltrace-")]
    if left:
        fail(f"killed: a SIGKILLed launcher left {left} beside -o")
    print(f"ok killed: the trace begun while the program ran ({begun}) left nothing when the "
          "launcher was killed")


def main():
    if len(sys.argv) < 7:
        print(__doc__)
        return 2
    act, vecops, churn, edge, capture, app = sys.argv[1:7]
    cases = {
        "vecops": ([vecops], []),
        "threads": ([churn, "threads", "200", "8", "300"], []),
        "procs": ([churn, "procs", "20000"], []),
        "reexec": ([edge, "reexec", "3"], []),
        "capture_api": ([capture], ["--capture-range=api"]),
        "launches": ([app, "launches", "3000", "300"], []),
        "queues": ([app, "queues", "1500", "300"], []),
        "loop": ([app, "loop", "20000"], []),
        "idle": ([app, "idle", "3000", "400"], []),
        "forkexec": ([app, "forkexec", "3000", "400"], []),
    }
    wanted = sys.argv[7:] or list(cases) + ["killed", "sealed"]
    with tempfile.TemporaryDirectory() as tmp:
        for name in wanted:
            if name == "killed":
                check_killed(act, app, tmp)
                continue
            if name == "sealed":
                check_sealed(act, app, tmp)
                continue
            argv, extra = cases[name]
            check(act, name, argv, tmp, extra=extra)
    print("streamed traces are the batch traces")
    return 0


if __name__ == "__main__":
    sys.exit(main())
