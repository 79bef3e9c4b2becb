#!/usr/bin/env python3
"""check_limits.py -- resource limits of the program are the program's
(docs/reliability.md "Resource limits", issue 30 part 2).

usage: check_limits.py CASE ACCELTRACE LIMITS_WORKLOAD WORKDIR

  fsize    `ulimit -f 1024` (1 MiB, below the 256 MiB spool): the program
           keeps its exit status (7, not 153 = SIGXFSZ) and all its 1000
           ranges; 200 000 ranges: the records that do not fit are dropped
           and counted, one error names the file size limit; the trace that
           outgrows the limit too is not written (exit 74, the reason said,
           no signal), the spool is kept and `export` writes it later.
  xfsz     the same limit, the program with its own SIGXFSZ handler (or
           SIGXFSZ blocked): a forked child that records sees no SIGXFSZ
           until it writes past the limit itself, then exactly one.
  umask    the launcher and the program under umask 0222, 0277 and 0777
           (the program sets it again before forking and exec'ing): every
           record of the three processes is in the trace, the kept spool
           directory is 0700, its spools and run.json 0600.
  aslimit  `ulimit -v` on the launcher and its 12 children: every child's
           range is in the trace (the launcher mapped each child's whole
           256 MiB spool at once and lost 7 of 12 with exit 0).
  asloss   the launcher's own address space limited (prlimit) below what
           three children's spools hold: the trace names each process it
           could not read, `run` says so and exits 74, the spool is kept
           and `export` without the limit writes all four processes.
  autosize no --buffer-size (and ACCELTRACE_BUFFER_SIZE=auto): the spool
           is a quarter of the space free on its file system, 256 MiB to 4 GiB
           (the fixed 256 MiB before cut a 1.6 M-launch run short); a given
           size is the size.
  autosize_as  the same under `ulimit -v` 1.5 GiB: 256 MiB and all records.
  ring     a ring spool (--ring=1G) exported under a 512 MiB address
           space limit: the export of an ended process does not copy the
           ring (it did, and failed "out of memory" for a ring larger than
           the machine could hold: 30G on 24 GiB); a ring whose full trace
           the machine could not write (5 bytes of memory per ring byte) is
           refused before the program runs, with the largest it can take.
"""
import json
import os
import re
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time

SKIP = 77


def fail(msg):
    sys.exit("FAIL: " + msg)


def with_limits(fsize=None, aspace=None, mask=None):
    def pre():
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.RLIM_INFINITY))
        if aspace is not None:
            resource.setrlimit(resource.RLIMIT_AS, (aspace, resource.RLIM_INFINITY))
        if mask is not None:
            os.umask(mask)
    return pre


def run(acceltrace, args, trace, opts=(), timeout=120, **limits):
    return subprocess.run([acceltrace, "run", "--no-summary", "-f", "-o", trace] + list(opts) +
                          ["--"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, preexec_fn=with_limits(**limits))


def export(acceltrace, spool, trace, timeout=120, **limits):
    return subprocess.run([acceltrace, "export", spool, "-o", trace, "--force"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                          preexec_fn=with_limits(**limits))


def err(p):
    return p.stderr.decode(errors="replace")


def load(trace):
    with open(trace) as f:
        return json.load(f)


def ranges(doc):
    names = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "user_annotation":
            names[e["name"]] = names.get(e["name"], 0) + 1
    return names


def kept_spool(text):
    """The spool directory `run` says it kept."""
    for line in text.splitlines():
        for key in ("the spool is kept in ", "spool kept in "):
            if key in line:
                return line.split(key, 1)[1].split(";")[0].strip()
    return None


def fsize(acceltrace, prog, work):
    lim = 1 << 20
    trace = os.path.join(work, "fsize.json")
    p = run(acceltrace, [prog, "ranges", "1000", "7"], trace, fsize=lim)
    if p.returncode != 7:
        fail("ulimit -f 1024: exit %d, want the program's 7 (153 is SIGXFSZ): %s" %
             (p.returncode, err(p)[-2000:]))
    doc = load(trace)
    meta = doc["acceltrace"]
    if ranges(doc).get("r") != 1000 or any(meta["dropped"].values()) or meta["errors"]:
        fail("ranges %r dropped %r errors %r" % (ranges(doc), meta["dropped"], meta["errors"]))
    print("ulimit -f 1024, 1000 ranges: exit 7, all recorded")

    n = 200000
    p = run(acceltrace, [prog, "ranges", str(n), "7"], trace, fsize=lim)
    if p.returncode != 74:
        fail("a trace larger than the limit: exit %d, want 74 (not written, said): %s" %
             (p.returncode, err(p)[-2000:]))
    if "File too large" not in err(p):
        fail("the reason (File too large) is not said: %r" % err(p)[-2000:])
    got = json.loads(p.stdout)
    if got["full"] == 0 or got["ok"] == 0:
        fail("calls %r: the spool must fill within the limit" % got)
    spool = kept_spool(err(p))
    if not spool or not os.path.isdir(spool):
        fail("the spool is not kept: %r" % err(p)[-2000:])
    q = export(acceltrace, spool, trace)
    if q.returncode != 0:
        fail("export of the kept spool: exit %d: %s" % (q.returncode, err(q)[-2000:]))
    shutil.rmtree(spool, ignore_errors=True)
    meta = load(trace)["acceltrace"]
    rec = meta["records"].get("range_push", 0)
    drop = meta["dropped"].get("range_push", 0)
    if rec + drop != n or rec < got["ok"]:
        fail("recorded %d + dropped %d != %d calls (ok %d)" % (rec, drop, n, got["ok"]))
    lines = [e for e in meta["errors"] if "file size limit" in e]
    if len(lines) != 1 or "File too large" not in lines[0]:
        fail("want one error naming the file size limit, got %r" % meta["errors"])
    print("ulimit -f 1024, %d ranges: %d recorded, %d dropped; trace over the limit: exit 74, "
          "kept, exported: %s" % (n, rec, drop, lines[0]))


def xfsz(acceltrace, prog, work):
    for mode in ("handler", "blocked"):
        trace = os.path.join(work, "xfsz-%s.json" % mode)
        own = os.path.join(work, "own-%s.bin" % mode)
        p = run(acceltrace, [prog, "xfsz", "1000", mode, own], trace, fsize=1 << 20)
        if p.returncode != 0:
            fail("%s: exit %d (153 is SIGXFSZ): %s" % (mode, p.returncode, err(p)[-2000:]))
        got = json.loads(p.stdout)
        if got != {"ok": 1000, "before": 0, "after": 1}:
            fail("%s: the child saw %r, want no SIGXFSZ of ours and one of its own" % (mode, got))
        if ranges(load(trace)).get("child") != 1000:
            fail("%s: ranges %r" % (mode, ranges(load(trace))))
        print("SIGXFSZ %s: %r" % (mode, got))


def umask(acceltrace, prog, work):
    n = 200
    for mask in (0o222, 0o277, 0o777):
        trace = os.path.join(work, "umask-%o.json" % mask)
        p = run(acceltrace, [prog, "umask", "%o" % mask, str(n), prog], trace,
                opts=["--keep-spool"], mask=mask)
        if p.returncode != 0:
            fail("umask %o: exit %d: %s" % (mask, p.returncode, err(p)[-2000:]))
        spool = kept_spool(err(p))
        if not spool:
            fail("umask %o: no kept spool said: %r" % (mask, err(p)))
        modes = {}  # the spools and what `export` needs (nothing else is kept)
        for name in os.listdir(spool):
            if name.endswith(".acts") or name == "run.json":
                modes[name] = stat.S_IMODE(os.lstat(os.path.join(spool, name)).st_mode)
        dmode = stat.S_IMODE(os.stat(spool).st_mode)
        shutil.rmtree(spool, ignore_errors=True)
        if dmode != 0o700:
            fail("umask %o: spool directory mode %o, want 700" % (mask, dmode))
        bad = {k: "%o" % v for k, v in modes.items() if v != 0o600}
        if bad or len([k for k in modes if k.endswith(".acts")]) != 3:
            fail("umask %o: spool files %r, want three .acts files, all 600" %
                 (mask, {k: "%o" % v for k, v in modes.items()}))
        doc = load(trace)
        meta = doc["acceltrace"]
        want = {"parent": n, "forked": n, "r": n}
        if ranges(doc) != want or any(meta["dropped"].values()) or meta["errors"]:
            fail("umask %o: ranges %r (want %r) dropped %r errors %r" %
                 (mask, ranges(doc), want, meta["dropped"], meta["errors"]))
        print("umask %o: 3 processes, %d ranges each, files 600 in a 700 directory" % (mask, n))


def aslimit(acceltrace, prog, work):
    k = 12
    trace = os.path.join(work, "aslimit.json")
    # Each process maps its own 256 MiB spool; 1.5 GiB holds one process
    # with its libraries, not a launcher mapping 13 whole spools.
    p = run(acceltrace, [prog, "children", str(k), "1"], trace, aspace=1536 << 20)
    if p.returncode != 0:
        fail("exit %d: %s" % (p.returncode, err(p)[-2000:]))
    doc = load(trace)
    want = dict({"c%d" % i: 1 for i in range(k)}, p=1)
    if ranges(doc) != want or doc["acceltrace"]["errors"]:
        fail("ranges %r, want %r; errors %r" % (ranges(doc), want, doc["acceltrace"]["errors"]))
    print("ulimit -v 1.5 GiB, %d children: all %d processes in the trace" % (k, k + 1))


def vm_size(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def asloss(acceltrace, prog, work):
    k, n = 3, 1000000  # 32 MiB of records per child
    trace = os.path.join(work, "asloss.json")
    go = os.path.join(work, "go")
    tmp = os.path.join(work, "tmp")
    os.makedirs(tmp)
    env = dict(os.environ, TMPDIR=tmp)
    cmd = [acceltrace, "run", "--no-summary", "-f", "-o", trace, "--",
           prog, "children", str(k), str(n), go]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        # The launcher has made its spool directory, the program its spool.
        for _ in range(2000):
            spools = [d for d in os.listdir(tmp)]
            if spools and any(f.endswith(".acts") for f in os.listdir(os.path.join(tmp, spools[0]))):
                break
            time.sleep(0.01)
        else:
            fail("the program never made its spool")
        time.sleep(0.3)  # the launcher's reading thread has opened it
        # Room for the export's own memory, not for a child's 32 MiB.
        limit = vm_size(p.pid) + (12 << 20)
        resource.prlimit(p.pid, resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
        open(go, "w").close()
        out, errb = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    text = errb.decode(errors="replace")
    if p.returncode != 74:
        fail("launcher limited to %d MiB: exit %d, want 74 (processes lost): %s" %
             (limit >> 20, p.returncode, text[-3000:]))
    if "lacks %d processes" % k not in text:
        fail("run does not say how many processes it lost: %r" % text[-3000:])
    meta = load(trace)["acceltrace"]
    lost = [e for e in meta["errors"] if "cannot map" in e]
    if len(lost) != k:
        fail("want %d errors naming the unread spools, got %r" % (k, meta["errors"]))
    spool = kept_spool(text)
    if not spool or not os.path.isdir(spool):
        fail("the spool is not kept: %r" % text[-2000:])
    q = export(acceltrace, spool, trace)
    if q.returncode != 0:
        fail("export of the kept spool: exit %d: %s" % (q.returncode, err(q)[-2000:]))
    shutil.rmtree(spool, ignore_errors=True)
    got = ranges(load(trace))
    want = dict({"c%d" % i: n for i in range(k)}, p=1)
    if got != want:
        fail("exported again: ranges %r, want %r" % (got, want))
    print("launcher limited: exit 74, %d processes named: %s; export wrote all" % (k, lost[0]))


def mem_total():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


def ring(acceltrace, prog, work):
    trace = os.path.join(work, "ring.json")
    p = run(acceltrace, [prog, "ranges", "1000", "0"], trace, opts=["--ring=1G", "--keep-spool"])
    if p.returncode != 0:
        fail("--ring=1G: exit %d: %s" % (p.returncode, err(p)[-2000:]))
    spool = kept_spool(err(p))
    if not spool:
        fail("no kept spool said: %r" % err(p))
    q = export(acceltrace, spool, trace, aspace=512 << 20)
    shutil.rmtree(spool, ignore_errors=True)
    if q.returncode != 0 or ranges(load(trace)).get("r") != 1000:
        fail("export of a 1 GiB ring under a 512 MiB address space limit: exit %d, ranges %r: %s"
             % (q.returncode, ranges(load(trace)), err(q)[-2000:]))
    print("--ring=1G exported within 512 MiB of address space")

    # A ring whose full trace needs more memory than the machine has (5
    # bytes per ring byte) is refused before the program runs.
    gib = (mem_total() // 5 + (1 << 30) - 1 >> 30) + 1
    if gib > 64:
        print("(the machine has more than 315 GiB: every --ring it accepts can be exported)")
        return
    p = run(acceltrace, [prog, "ranges", "1000", "0"], trace, opts=["--ring=%dG" % gib])
    if p.returncode != 2 or p.stdout or "--ring=" not in err(p) or "at most" not in err(p):
        fail("--ring=%dG on %d GiB: exit %d, stdout %r (want 2, the program not run, the "
             "largest ring said): %s" % (gib, mem_total() >> 30, p.returncode, p.stdout,
                                        err(p)[-2000:]))
    print("--ring=%dG on a %d GiB machine: refused up front: %s" %
          (gib, mem_total() >> 30, err(p).strip()))


def kept_spool_size(acceltrace, prog, work, name, opts=(), env=None, **limits):
    """Run `ranges 100 0` with --keep-spool; its spool's capacity (the file,
    kept, is cut to what it used: checked, and exported again), and
    the space then free on the spool's file system (a quarter of the free
    space before it was made: what is free after, plus the spool's own
    reserved blocks)."""
    trace = os.path.join(work, name + ".json")
    p = subprocess.run([acceltrace, "run", "--no-summary", "--keep-spool", "-f", "-o", trace] +
                       list(opts) + ["--", prog, "ranges", "100", "0"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120, preexec_fn=with_limits(**limits),
                       env=dict(os.environ, **(env or {})))
    m = re.search(r"spool kept in (\S+)", err(p))
    if p.returncode != 0 or not m:
        fail("%s: exit %d: %s" % (name, p.returncode, err(p)[-2000:]))
    spool = m.group(1)
    try:
        acts = [f for f in os.listdir(spool) if f.endswith(".acts")]
        path = os.path.join(spool, acts[0])
        st = os.stat(path)
        with open(path, "rb") as f:
            head = f.read(104)
        # record.h's act_spool_header: header_size at 12, capacity at 16,
        # chunk_size at 24, flags at 44, chunks_used at 96.
        header_size, capacity, chunk_size = struct.unpack_from("<IQI", head, 12)
        flags, = struct.unpack_from("<I", head, 44)
        used, = struct.unpack_from("<Q", head, 96)
        # Kept, the spool is cut to the chunks it used (it was made sealed).
        if not flags & 1 or st.st_size != header_size + used * chunk_size:
            fail("%s: kept spool of %d bytes, flags %#x: want it cut to %d + %d x %d" %
                 (name, st.st_size, flags, header_size, used, chunk_size))
        v = os.statvfs(spool)
        free = v.f_bavail * v.f_frsize + st.st_blocks * 512
        if ranges(load(trace)) != {"r": 100}:
            fail("%s: ranges %r, want 100" % (name, ranges(load(trace))))
        again = os.path.join(work, name + ".again.json")
        e = export(acceltrace, spool, again)
        if (e.returncode != 0 or ranges(load(again)) != {"r": 100} or
                load(again)["acceltrace"]["errors"]):
            fail("%s: export of the kept spool: exit %d, %s" % (name, e.returncode, err(e)[-1500:]))
        return capacity, free
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def autosize(acceltrace, prog, work):
    lo, hi = 256 << 20, 4 << 30
    for name, env in (("default", None), ("auto", {"ACCELTRACE_BUFFER_SIZE": "auto"})):
        size, free = kept_spool_size(acceltrace, prog, work, name, env=env)
        want = min(max(free // 4, lo), hi)
        # Whole chunks after the header; the free space moves a little
        # between the spool's creation and our statvfs (other files).
        if not (lo - (1 << 20) <= size <= hi and abs(size - want) <= max(64 << 20, want // 50)):
            fail("%s: the spool is %d bytes; free space %d: want about %d" %
                 (name, size, free, want))
        print("%s: spool %d MiB with %d MiB free" % (name, size >> 20, free >> 20))
    size, _ = kept_spool_size(acceltrace, prog, work, "given", opts=["--buffer-size=8M"])
    if size != 8 << 20:
        fail("--buffer-size=8M: the spool is %d bytes" % size)
    print("--buffer-size=8M: 8 MiB")


def autosize_as(acceltrace, prog, work):
    size, free = kept_spool_size(acceltrace, prog, work, "aslimit", aspace=1536 << 20)
    if size != 256 << 20 and free // 4 > 256 << 20:
        fail("ulimit -v 1.5 GiB: the spool is %d bytes, want the 256 MiB minimum" % size)
    print("ulimit -v 1.5 GiB: %d MiB, every range kept" % (size >> 20))


def main():
    case, acceltrace, prog, work = sys.argv[1:5]
    work = os.path.join(work, case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    {"fsize": fsize, "xfsz": xfsz, "umask": umask, "aslimit": aslimit, "asloss": asloss,
     "ring": ring, "autosize": autosize, "autosize_as": autosize_as}[case](acceltrace, prog, work)


if __name__ == "__main__":
    main()
