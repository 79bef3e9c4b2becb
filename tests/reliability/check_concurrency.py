#!/usr/bin/env python3
"""check_concurrency.py -- exact counts under contention (docs/reliability.md,
"Concurrency").

Runs conc_workload RANGE_THREADS RANGES CL_THREADS ENQUEUES with the
library attached (ACCELTRACE_SPOOL_DIR, the OpenCL layer, a buffer large
enough for everything), then reads the spool with spool_check (the
timeline's reader) and checks: one sealed spool, no reader problem,
nothing dropped, every range thread has exactly RANGES pushes and pops and
its full counter sequence with no torn, lost or misplaced record, and
exactly CL_THREADS * ENQUEUES kernel launches and kernel executions.

The spool is checked directly rather than through a trace: at full size
(64 x 100 000 ranges) a JSON trace would be most of a gigabyte.

usage: check_concurrency.py LIBACCELTRACE CONC_WORKLOAD SPOOL_CHECK WORKDIR RT R CT E
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    sys.exit("FAIL: " + msg)


def main():
    lib, prog, checker, work = sys.argv[1:5]
    rt, r, ct, e = (int(x) for x in sys.argv[5:9])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # The spool lives in memory when possible: at full size it is ~250 MB.
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else work
    spool = tempfile.mkdtemp(prefix="act-conc-", dir=base)
    try:
        need = rt * r * 40 + ct * e * 400 + (64 << 20)
        env = dict(os.environ, ACCELTRACE_SPOOL_DIR=spool, OPENCL_LAYERS=lib,
                   ACCELTRACE_BUFFER_SIZE="%dM" % ((need >> 20) + 1))
        p = subprocess.run([prog, str(rt), str(r), str(ct), str(e)], env=env, timeout=600,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            fail("workload exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-2000:]))
        c = subprocess.run([checker, spool], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=300)
        if c.returncode != 0 or c.stderr:
            fail("spool_check exit %d: %s" % (c.returncode, c.stderr.decode(errors="replace")[-2000:]))
        got = json.loads(c.stdout)
    finally:
        shutil.rmtree(spool, ignore_errors=True)
    if got["spools"] != 1 or got["sealed"] != 1:
        fail("expected one sealed spool: %r" % {k: got[k] for k in ("spools", "sealed")})
    if got["problems"]:
        fail("the reader found %d problems" % got["problems"])
    if any(got["dropped"].values()):
        fail("dropped: %r" % got["dropped"])
    names = {}
    for t in got["threads"]:
        names[t["name"]] = t
    want_counters = (r + 63) // 64
    for i in range(rt):
        t = names.get("r%d" % i)
        if not t:
            fail("thread r%d recorded nothing" % i)
        if (t["push"], t["pop"], t["counter"], t["bad"]) != (r, r, want_counters, 0):
            fail("thread r%d: %r, want %d pushes/pops, %d counters, 0 bad" % (i, t, r, want_counters))
    rec = got["records"]
    # Counters: the range threads' own are checked above; the OpenCL threads
    # also write device-memory samples (one per buffer created/released).
    if rec["range_push"] != rt * r or rec["range_pop"] != rt * r or rec["counter"] < rt * want_counters:
        fail("record totals %r" % rec)
    launches = got["api"].get("clEnqueueNDRangeKernel", 0)
    kernels = got["device_ops"].get("inc", 0)
    if launches != ct * e or kernels != ct * e:
        fail("%d launches and %d kernels, want %d each" % (launches, kernels, ct * e))
    print("%d x %d ranges, %d x %d kernels: exact" % (rt, r, ct, e))


if __name__ == "__main__":
    main()
