#!/usr/bin/env python3
"""check_clock_truth.py -- the timeline tells the truth about device times
(issue 30.6), for one clock mapping method.

usage: check_clock_truth.py ACCELTRACE PROGRAM METHOD [TIMER_LAYER]

PROGRAM (programs/clock_truth.c) enqueues commands on one in-order queue
and writes its own CL_PROFILING_COMMAND_QUEUED/SUBMIT/START/END of each.
It runs under `acceltrace run` with ACCELTRACE_OPENCL_CLOCK=METHOD (auto:
unset). device_host_timer needs TIMER_LAYER (rtld/host_timer_layer.c, the
timer API PoCL lacks) under our interception: the preload shim is used.

The trace must state, for the device, the method it used (METHOD, unless
auto) with its offset and error ("opencl_clock_<pid>_<device>"), and:
 - every device op starts and ends exactly at the program's own START and
   END plus that offset (to the nanosecond the trace writes);
 - the offset is true: the program's QUEUED, mapped by it, falls inside
   its own enqueue call as the trace shows it, give or take the stated
   error;
 - the queue is in order: no two of its ops overlap, all on one lane.
A trace without that metadata (older builds) is read by what its clock
says ("monotonic_raw": offset 0).
"""
import json
import os
import subprocess
import sys
import tempfile

ACT, PROG, METHOD = sys.argv[1:4]
LAYER = sys.argv[4] if len(sys.argv) > 4 else ""
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(tmp):
    env = dict(os.environ)
    for v in ("OPENCL_LAYERS", "LD_PRELOAD", "ACCELTRACE_OPENCL_CLOCK"):
        env.pop(v, None)
    args = [ACT, "run", "--no-summary", "-o", os.path.join(tmp, "t.json")]
    if METHOD != "auto":
        env["ACCELTRACE_OPENCL_CLOCK"] = METHOD
    if METHOD == "device_host_timer":
        if not LAYER:
            fail("device_host_timer needs the timer layer")
        env["OPENCL_LAYERS"] = LAYER
        args.append("--preload")
    own = os.path.join(tmp, "own.txt")
    r = subprocess.run([*args, "--", PROG, own, "60"], env=env, capture_output=True, text=True,
                       timeout=100)
    if r.returncode != 0 or r.stdout.strip() != "64 commands":
        fail(f"traced program: exit {r.returncode}, {r.stdout!r}, {r.stderr}")
    with open(own) as f:
        cmds = [[int(x) for x in line.split()[1:]] for line in f]
    with open(os.path.join(tmp, "t.json")) as f:
        return cmds, json.load(f)


def clock_of(doc):
    clocks = {k: v for k, v in doc.items() if k.startswith("opencl_clock_")}
    if len(clocks) > 1:
        fail(f"one device, {len(clocks)} clock mappings: {clocks}")
    if clocks:
        return next(iter(clocks.values()))
    c = doc["acceltrace"]["clock"]
    print(f"note: no opencl_clock metadata; the trace's clock says {c}")
    return {"method": c["method"], "offset_ns": 0 if c["method"] == "monotonic_raw" else None,
            "error_ns": c.get("error_ns", -1)}


def ns(us):
    return round(us * 1000)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        cmds, doc = run(tmp)
    a = doc["acceltrace"]
    forced = [e for e in a.get("errors", []) if "ACCELTRACE_OPENCL_CLOCK" in e]
    if forced:
        fail(f"the forced method did not work: {forced}")
    clk = clock_of(doc)
    if METHOD != "auto" and clk["method"] != METHOD:
        fail(f"method {clk['method']}, forced {METHOD}")
    off, err = clk["offset_ns"], clk["error_ns"]
    if off is None or err is None or err < 0:
        fail(f"the trace states no offset or error for the device: {clk}")
    base = a["clock"]["base_monotonic_ns"]
    ev = doc["traceEvents"]
    ops = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS),
                 key=lambda e: e["ts"])
    calls = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "opencl_runtime"
             and e["name"].startswith("clEnqueue")]
    calls.sort(key=lambda e: e["ts"])
    if len(ops) != len(cmds) or len(calls) != len(cmds):
        fail(f"{len(cmds)} commands, {len(ops)} device ops, {len(calls)} enqueue calls")
    worst = 0
    for i, (op, call, (queued, submit, start, end)) in enumerate(zip(ops, calls, cmds)):
        if not queued <= submit <= start <= end:
            fail(f"command {i}: the program read times out of order: {queued} {submit} {start} {end}")
        t0, t1 = base + ns(op["ts"]), base + ns(op["ts"]) + ns(op["dur"])
        if abs(t0 - (start + off)) > 1 or abs(t1 - (end + off)) > 1:
            fail(f"command {i} ({op['name']}): trace {t0}..{t1}, own reads mapped by the stated "
                 f"offset {off}: {start + off}..{end + off} ({t0 - start - off:+d} ns)")
        q = queued + off
        c0, c1 = base + ns(call["ts"]), base + ns(call["ts"]) + ns(call["dur"])
        miss = max(c0 - q, q - c1, 0)
        worst = max(worst, miss)
        if miss > err + 1:
            fail(f"command {i}: QUEUED mapped to {q}, {miss} ns outside its enqueue call "
                 f"{c0}..{c1} (stated error {err} ns): the offset is not true")
    lanes = {(e["pid"], e["tid"]) for e in ops}
    if len(lanes) != 1:
        fail(f"one in-order queue drawn on {len(lanes)} lanes: {sorted(lanes)}")
    for x, y in zip(ops, ops[1:]):
        if ns(y["ts"]) < ns(x["ts"]) + ns(x["dur"]):
            fail(f"in-order queue: {y['name']} at {y['ts']} overlaps {x['name']} "
                 f"{x['ts']}+{x['dur']}")
    print(f"ok: {len(ops)} device ops, method {clk['method']}, offset {off} ns, error {err} ns, "
          f"QUEUED at most {worst} ns outside its call")


main()
