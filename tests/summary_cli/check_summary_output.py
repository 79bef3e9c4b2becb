#!/usr/bin/env python3
"""check_summary_output.py ACCELTRACE -- what `acceltrace summary` prints
(issue 20, issue 14 items 7 and 9): an 80-column table, C++ names
shortened without merging distinct kernels, --timeunit, self vs total time
of nested host slices, the by-range table, csv/json parsed back, error
lines, per-rank rows with the spread, .json.gz and standard input, no
terminal control bytes from a trace, "permission denied", and ACCELTRACE_*
checked as `run` does."""
import csv
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

tool = sys.argv[1]
failures = []


def fail(msg):
    failures.append(msg)


def run(*args, env=None, stdin=None, columns="80"):
    e = dict(os.environ, COLUMNS=columns)
    e.update(env or {})
    return subprocess.run([tool, "summary", *args], capture_output=True, env=e, input=stdin,
                          timeout=60)


K1 = "void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<float, 128, 64>>(Params)"
K2 = "void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<half, 128, 64>>(Params)"
LONG_A = "aten::some_extremely_long_operator_name_that_goes_on_and_on_variant_alpha"
LONG_B = "aten::some_extremely_long_operator_name_that_goes_on_and_on_variant_beta"


def X(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


def trace(rank=None, scale=1.0, errors=()):
    ev = [
        X("cpu_op", "parent", 0, 100 * scale, **{"External id": 1}),
        X("cpu_op", "child", 20 * scale, 60 * scale, **{"External id": 2}),
        X("cpu_op", LONG_A, 200, 5), X("cpu_op", LONG_B, 210, 5),
        X("kernel", K1, 30, 10, pid=0, tid=7, **{"External id": 2}),
        X("kernel", K2, 50, 30, pid=0, tid=7, **{"External id": 2}),
        X("kernel", "\x1b[31mred\x1b[0m\x07", 90, 1, pid=0, tid=7),
        X("kernel", "_Z6kernelIfEvPT_i", 95, 1, pid=0, tid=7),
        X("kernel", "_Z6kernelIiEvPT_i", 97, 1, pid=0, tid=7),
    ]
    t = {"traceEvents": ev, "acceltrace": {"errors": list(errors)}}
    if rank is not None:
        t["distributedInfo"] = {"rank": rank, "world_size": 2}
    return t


with tempfile.TemporaryDirectory() as d:
    def write(name, obj, opener=open):
        p = os.path.join(d, name)
        with opener(p, "wt") as f:
            json.dump(obj, f)
        return p

    errs = ["no spool files: the program recorded nothing"] + ["error %d" % i for i in range(6)]
    t1 = write("t1.json", trace(errors=errs))
    p = run("--by-range", t1)
    out = p.stdout.decode()
    if p.returncode != 0:
        fail("t1: rc=%d %r" % (p.returncode, p.stderr))
    wide = [ln for ln in out.splitlines() if len(ln) > 80]
    if wide:
        fail("lines over 80 columns with COLUMNS=80: %r" % wide)
    if b"\x1b" in p.stdout or b"\x07" in p.stdout:
        fail("terminal control bytes printed raw")
    if "on 0 lanes" in out:
        fail("by-range table says 'on 0 lanes'")
    rows = [ln.split()[0] for ln in out.splitlines() if ln.startswith("  cutlass::Kernel")]
    if len(rows) != 2 or rows[0] == rows[1]:
        fail("base names of two distinct kernels: %r\n%s" % (rows, out))
    kern = [ln.split()[0] for ln in out.splitlines() if ln.startswith("  kernel")]
    if len(kern) != 2 or kern[0] == kern[1] or not all(k.startswith("kernel~") for k in kern):
        fail("demangled base names of kernel<float>/kernel<int>: %r" % kern)
    p = run("--names=full", t1, columns="200")
    if "void kernel<float>(float*, int)" not in p.stdout.decode():
        fail("--names=full does not demangle:\n" + p.stdout.decode())
    p = run("--names=mangled", t1, columns="200")
    if "_Z6kernelIfEvPT_i" not in p.stdout.decode():
        fail("--names=mangled changed the name")
    longs = [ln[2:40] for ln in out.splitlines() if "some_extremely" in ln]
    if len(longs) != 2 or longs[0] == longs[1]:
        fail("two long names cut to the same text: %r" % longs)
    # self vs total: parent 100 total, 40 self; child 60/60; parent is 100% of busy, not 160
    host = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln.startswith(("  parent", "  child"))}
    if host.get("parent", [None] * 4)[2:4] != ["100.000", "40.000"]:
        fail("parent total/self: %r" % host.get("parent"))
    if "no spool files: the program recorded nothing" not in out or "and 2 more" not in out:
        fail("error lines not printed (up to 5, then 'and N more'):\n" + out)
    p = run("--names=full", "--timeunit=ms", "--format=json", t1)
    try:
        j = json.loads(p.stdout)
    except ValueError:
        j = {"device": {"rows": []}, "host": {"rows": [{"name": "parent", "total": 0, "self": 0}]},
             "timeunit": None}
    names = sorted(r["name"] for r in j["device"]["rows"])
    if K1 not in names or K2 not in names or j["timeunit"] != "ms":
        fail("json full names / unit: %r" % names)
    par = [r for r in j["host"]["rows"] if r["name"] == "parent"][0]
    if abs(par["total"] - 0.1) > 1e-9 or abs(par["self"] - 0.04) > 1e-9:
        fail("json parent in ms: %r" % par)
    p = run("--format=csv", "--by-range", t1)
    block = p.stdout.decode().split("\n\n")[0]
    rows = list(csv.DictReader(io.StringIO(block)))
    dev = [r for r in rows if r["section"] == "device"]
    rng = [r for r in rows if r["section"] == "range"]
    if len(dev) != 5 or float([r for r in dev if r["name"] == K2][0]["total_us"]) != 30.0:
        fail("csv device rows: %r" % dev)
    if not any(r["name"] == "child" and float(r["total_us"]) == 40.0 for r in rng):
        fail("csv by-range rows: %r" % rng)
    # several ranks: a row each and the spread, slowest named
    r0 = write("r0.json", trace(rank=0))
    r1 = write("r1.json.gz", trace(rank=1, scale=3.0), opener=gzip.open)
    p = run(r0, r1)
    out = p.stdout.decode()
    if p.returncode != 0 or "Per rank: 2" not in out or "slowest: rank 1" not in out:
        fail("per-rank rows / spread (gzip input):\n%s%s" % (out, p.stderr))
    p = run("--format=json", r0, r1)
    ranks = json.loads(p.stdout).get("ranks", [])
    if sorted(r.get("rank") for r in ranks) != [0, 1] or \
            max(ranks, key=lambda r: r["span"])["rank"] != 1:
        fail("json ranks: %r" % ranks)
    # standard input
    with open(t1, "rb") as f:
        p = run("-", stdin=f.read())
    if p.returncode != 0 or b"Device ops: 5 names" not in p.stdout:
        fail("summary - : rc=%d %r" % (p.returncode, p.stderr))
    # ACCELTRACE_* checked as run does
    p = run(t1, env={"ACCELTRACE_LOG": "loud"})
    if p.returncode != 2 or b"ACCELTRACE_LOG" not in p.stderr:
        fail("invalid ACCELTRACE_LOG: rc=%d %r" % (p.returncode, p.stderr))
    # a usage error is one line
    p = run("--format=xml", t1)
    if p.returncode != 2 or len(p.stderr.splitlines()) != 1:
        fail("usage error: rc=%d %r" % (p.returncode, p.stderr))
    # an unreadable file: permission denied (as nobody when we are root)
    secret = os.path.join(d, "secret.json")
    shutil.copy(t1, secret)
    os.chmod(secret, 0)
    cmd = [tool, "summary", secret]
    if os.geteuid() == 0:
        os.chmod(d, 0o755)
        tcopy = os.path.join(d, "acceltrace")
        shutil.copy(tool, tcopy)
        os.chmod(tcopy, 0o755)
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", tcopy, "summary",
               secret]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 2 or "permission denied" not in p.stderr or "not valid JSON" in p.stderr:
        fail("unreadable file: rc=%d %r" % (p.returncode, p.stderr))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("summary output: all checks pass")
