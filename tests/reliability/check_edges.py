#!/usr/bin/env python3
"""check_edges.py -- edge cases of recording (docs/reliability.md, issue 14).

usage: check_edges.py CASE ACCELTRACE EDGE_WORKLOAD WORKDIR

  fullfs   TMPDIR on a 2 MiB tmpfs: 200 000 ranges do not fit; the program
           keeps its exit status (7), the trace is written, the records that
           did not fit are dropped and counted, one error line says why; with
           the tmpfs already full, `run` does not die either, nor does a
           reader of a spool file left there with its header not written
           (a sparse file: a program that could not reserve its header's
           page, between making the file and removing it). Skipped (77)
           when a tmpfs cannot be mounted, unless CI is set and we are root.
  reexec   a program that records and execs itself 5 times: all 6 ranges,
           no process marked truncated.
  tree     fork -> fork -> fork, vfork + exec, posix_spawn -> posix_spawn,
           fork + exec -> fork, none recording before starting its child:
           every descendant's range is in the trace.
  late     a child that records after the run ended does not recreate the
           (removed) spool directory.
  bogus    ids act_range_start() never returned are counted as invalid
           range ends, not as dropped or outside the window.
  utf8     a name cut to fit a chunk is cut at a character boundary.
  exitbusy exit() while two threads keep enqueuing OpenCL commands does not
           wait the whole drain timeout; callbacks.lost <= callbacks.pending.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77


def fail(msg):
    sys.exit("FAIL: " + msg)


def run(acceltrace, args, trace, env=None, timeout=120, opts=()):
    p = subprocess.run([acceltrace, "run", "--no-summary", "-f", "-o", trace] + list(opts) +
                       ["--"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=timeout)
    return p


def load(trace):
    with open(trace) as f:
        return json.load(f)


def user_ranges(doc):
    by_pid = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "user_annotation":
            by_pid.setdefault(e["pid"], []).append(e["name"])
    return by_pid


def mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % size, "tmpfs", path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return p.returncode == 0, p.stdout.decode(errors="replace").strip()


def fullfs(acceltrace, prog, work):
    mnt = os.path.join(work, "small")
    ok, why = mount_tmpfs(mnt, "2m")
    if not ok:
        msg = "cannot mount a tmpfs (%s): %s" % ("uid %d" % os.getuid(), why)
        if os.environ.get("CI") and os.getuid() == 0:
            fail(msg)
        print("SKIP: " + msg)
        sys.exit(SKIP)
    try:
        env = dict(os.environ, TMPDIR=mnt)
        trace = os.path.join(work, "fullfs.json")
        n = 200000
        # read while it runs from the first millisecond: the reader opens the
        # spool before it fills up (its header copy then says nothing of it)
        p = run(acceltrace, [prog, "ranges", str(n), "7"], trace, env=env,
                opts=("--stream-interval=1",))
        if p.returncode != 7:
            fail("exit %d, want the program's 7: %s" % (p.returncode, p.stderr.decode()[-2000:]))
        got = json.loads(p.stdout)
        doc = load(trace)
        meta = doc["acceltrace"]
        rec = meta["records"].get("range_push", 0)
        drop = meta["dropped"].get("range_push", 0)
        # "other": a push that fit with a pop that did not (at the edge).
        if got["other"] > 1 or got["full"] == 0:
            fail("calls %r: some must have found the spool full" % got)
        if rec != got["ok"] + got["other"] or rec + drop != n:
            fail("recorded %d + dropped %d != %d calls (ok %d)" % (rec, drop, n, got["ok"]))
        lines = [e for e in meta["errors"] if "space" in e]
        if len(lines) != 1:
            fail("want one error line saying the disk is full, got %r" % meta["errors"])
        if meta["truncated_processes"]:
            fail("process marked truncated: %r" % meta["processes"])
        said = [ln for ln in p.stderr.decode(errors="replace").splitlines() if "no room" in ln]
        if len(said) != 1:
            fail("`run` must say on one line that the disk was full: %r" % p.stderr.decode())
        print("full tmpfs: exit 7, %d recorded, %d dropped: %s" % (rec, drop, lines[0]))

        # The file system already full before the program starts.
        filler = os.path.join(mnt, "filler")
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        p = run(acceltrace, [prog, "ranges", "1000", "7"], trace, env=env)
        if p.returncode != 7 and p.returncode != 2:
            fail("already full: exit %d (want 7, or run's own 2 when it cannot make its spool): "
                 "%s" % (p.returncode, p.stderr.decode()[-2000:]))
        if p.returncode < 0 or p.returncode > 128:
            fail("already full: died of a signal (%d)" % p.returncode)
        print("already full: exit %d, stderr %r" % (p.returncode, p.stderr.decode()[-300:]))

        # A spool the program made and could not write its header into: a
        # read of that page through a mapping allocates it, and on a full
        # tmpfs that is SIGBUS. Its reader (`run`'s, while the program is
        # between making and removing the file; `export`) says so instead.
        spools = os.path.join(mnt, "spools")
        os.mkdir(spools)
        with open(os.path.join(spools, "4242.acts"), "wb") as f:
            f.truncate(1 << 20)
        out = os.path.join(work, "holes.json")
        p = subprocess.run([acceltrace, "export", "--no-summary", "-f", "-o", out, spools],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        if p.returncode < 0 or p.returncode > 128:
            fail("a spool whose header is not written, on a full file system: export died of "
                 "signal %d: %s" % (-p.returncode if p.returncode < 0 else p.returncode - 128,
                                    p.stderr.decode()[-1000:]))
        if "4242.acts" not in p.stderr.decode(errors="replace"):
            fail("a spool whose header is not written: not named: %r" % p.stderr.decode())
        print("header not written: export exit %d, %r" % (p.returncode,
                                                           p.stderr.decode()[-200:].strip()))
    finally:
        subprocess.run(["umount", mnt])


def reexec(acceltrace, prog, work):
    trace = os.path.join(work, "reexec.json")
    p = run(acceltrace, [prog, "reexec", "5"], trace)
    if p.returncode != 0:
        fail("exit %d: %s" % (p.returncode, p.stderr.decode()[-2000:]))
    doc = load(trace)
    names = sorted(n for v in user_ranges(doc).values() for n in v)
    want = ["img%d" % i for i in range(6)]
    if names != want:
        fail("ranges %r, want %r" % (names, want))
    meta = doc["acceltrace"]
    if meta["truncated_processes"] or not all(x["sealed"] for x in meta["processes"]):
        fail("a process marked truncated: %r" % meta["processes"])
    if meta["errors"]:
        fail("errors %r" % meta["errors"])
    print("6 images of one pid: %r" % names)


def tree(acceltrace, prog, work):
    trace = os.path.join(work, "tree.json")
    p = run(acceltrace, [prog, "tree"], trace)
    if p.returncode != 0:
        fail("exit %d: %s" % (p.returncode, p.stderr.decode()[-2000:]))
    doc = load(trace)
    got = sorted(tuple(sorted(v)) for v in user_ranges(doc).values())
    want = sorted((n,) for n in ["p", "fork1", "fork2", "fork3", "vfork", "spawn1", "spawn2",
                                 "exec1", "exec2"])
    if got != want:
        fail("ranges per process %r, want %r" % (got, want))
    meta = doc["acceltrace"]
    if meta["truncated_processes"] or any(meta["dropped"].values()) or meta["errors"]:
        fail("truncated %r dropped %r errors %r" % (meta["truncated_processes"],
                                                   meta["dropped"], meta["errors"]))
    print("9 processes, each with its range")


def late(acceltrace, prog, work):
    trace = os.path.join(work, "late.json")
    done = os.path.join(work, "late.done")
    tmp = os.path.join(work, "tmp")
    os.makedirs(tmp)
    env = dict(os.environ, TMPDIR=tmp)
    p = run(acceltrace, [prog, "late", done], trace, env=env)
    if p.returncode != 0:
        fail("exit %d: %s" % (p.returncode, p.stderr.decode()[-2000:]))
    for _ in range(300):
        if os.path.exists(done):
            break
        time.sleep(0.05)
    else:
        fail("the late child never finished")
    time.sleep(0.1)
    left = os.listdir(tmp)
    if left:
        fail("a spool directory was recreated after the run: %r" % left)
    print("late child: %s, nothing left in TMPDIR" % open(done).read().strip())


def bogus(acceltrace, prog, work):
    trace = os.path.join(work, "bogus.json")
    p = run(acceltrace, [prog, "bogus"], trace)
    if p.returncode != 0:
        fail("exit %d: %s" % (p.returncode, p.stderr.decode()[-2000:]))
    meta = load(trace)["acceltrace"]
    if meta["dropped"].get("range_end") or meta["outside_window"].get("range_end"):
        fail("bogus ends counted as dropped %r / outside %r" % (meta["dropped"],
                                                               meta["outside_window"]))
    if meta.get("invalid_range_ends") != 4:
        fail("invalid_range_ends %r, want 4" % meta.get("invalid_range_ends"))
    if meta["records"].get("range_end") != 1:
        fail("range_end records %r, want 1" % meta["records"].get("range_end"))
    print("4 bogus ids counted as invalid_range_ends")


def utf8(acceltrace, prog, work):
    trace = os.path.join(work, "utf8.json")
    p = run(acceltrace, [prog, "utf8"], trace, env=dict(os.environ, ACCELTRACE_CHUNK_SIZE="4K"))
    if p.returncode != 0:
        fail("exit %d: %s" % (p.returncode, p.stderr.decode()[-2000:]))
    doc = load(trace)
    meta = doc["acceltrace"]
    names = [n for v in user_ranges(doc).values() for n in v]
    if len(names) != 1 or not names[0] or set(names[0]) != {"\u20ac"}:
        fail("the cut name is not whole characters: %r" % (names[0][-4:] if names else names))
    if meta["invalid_utf8"] or meta["strings_truncated"] != 1:
        fail("invalid_utf8 %r strings_truncated %r" % (meta["invalid_utf8"],
                                                      meta["strings_truncated"]))
    if any("UTF-8" in e for e in meta["errors"]):
        fail("errors %r" % meta["errors"])
    print("name cut to %d whole characters" % len(names[0]))


def exitbusy(acceltrace, prog, work):
    trace = os.path.join(work, "exitbusy.json")
    t0 = time.monotonic()
    p = run(acceltrace, [prog, "exitbusy"], trace, opts=["--drain-timeout=60000"], timeout=100)
    took = time.monotonic() - t0
    if p.returncode != 0:
        fail("exit %d: %s" % (p.returncode, p.stderr.decode()[-2000:]))
    if took >= 8:
        fail("took %.1f s: waited the whole drain for work enqueued after exit() began" % took)
    meta = load(trace)["acceltrace"]
    cb = meta["callbacks"]
    if cb["lost"] > cb["pending"]:
        fail("callbacks.lost %d > callbacks.pending %d" % (cb["lost"], cb["pending"]))
    print("exit with busy threads: %.1f s, callbacks %r" % (took, cb))


def main():
    case, acceltrace, prog, work = sys.argv[1:5]
    work = os.path.join(work, case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    {"fullfs": fullfs, "reexec": reexec, "tree": tree, "late": late, "bogus": bogus,
     "utf8": utf8, "exitbusy": exitbusy}[case](acceltrace, prog, work)


if __name__ == "__main__":
    main()
