#!/usr/bin/env python3
"""validate_trace.py -- check an acceltrace Chrome trace against the trace
shape of DESIGN.md, with nothing but Python's json module.

usage: validate_trace.py TRACE.json [--kernels N] [--names a,b] [--ooo]

Checks: the file parses as a JSON object with traceEvents and the
top-level members; every device op launched from the host (a device slice
whose correlation matches an opencl_runtime slice) has exactly one ac2g
flow pair, "s" on the launching thread inside the launch slice, "f" with
"bp":"e" on the device op; flow ids are unique (one s and one f each);
device start >= host enqueue start; durations are non-negative; slices on
a lane never overlap (host lanes may nest, device lanes may not); device
processes sort below host processes; the number of kernel slices is N.
"""
import argparse
import json
import sys
from collections import defaultdict

EPS = 0.0021  # us: timestamps carry three decimals, each rounded
HOST_CATS = {"opencl_runtime", "cpu_op", "user_annotation", "cuda_runtime", "cuda_driver",
             "python_function", "Trace"}


class Invalid(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Invalid(msg)


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise Invalid(f"{path}: not JSON: {e}")
    need(isinstance(doc, dict), "top level is not an object")
    for key in ("schemaVersion", "traceName", "displayTimeUnit", "baseTimeNanoseconds",
                "traceEvents", "acceltrace"):
        need(key in doc, f"missing top-level member {key!r}")
    need(isinstance(doc["traceEvents"], list), "traceEvents is not a list")
    clock = doc["acceltrace"].get("clock")
    need(isinstance(clock, dict) and "method" in clock, "acceltrace.clock.method missing")
    return doc


def validate(doc, kernels=None, names=(), ooo=False):
    ev = doc["traceEvents"]
    xs = [e for e in ev if e.get("ph") == "X"]
    for e in xs:
        need(e.get("dur", -1) >= 0, f"negative or missing dur: {e}")
        need(isinstance(e.get("ts"), (int, float)), f"bad ts: {e}")
    launches = {}
    for e in xs:
        corr = (e.get("args") or {}).get("correlation")
        if e.get("cat") == "opencl_runtime" and corr:
            need(corr not in launches, f"correlation {corr} on two host launches")
            launches[corr] = e
    host_pids = {e["pid"] for e in xs if e.get("cat") in HOST_CATS}
    device = [e for e in xs if e.get("cat") not in HOST_CATS]
    need(device, "no device slices at all")
    device_pids = {e["pid"] for e in device}
    need(not (host_pids & device_pids), "a process holds both host and device slices")

    # Sort order: every device process sorts below every host process.
    sort = {e["pid"]: e["args"]["sort_index"] for e in ev
            if e.get("ph") == "M" and e.get("name") == "process_sort_index"}
    for d in device_pids:
        need(d in sort, f"device pid {d} has no process_sort_index")
        for h in host_pids:
            need(sort[d] > sort.get(h, h), f"device pid {d} does not sort below host pid {h}")

    # Flows: unique ids, exactly one s and one f each.
    starts, finishes = defaultdict(list), defaultdict(list)
    for e in ev:
        if e.get("cat") == "ac2g":
            need(e.get("name") == "ac2g", f"ac2g flow with name {e.get('name')!r}")
            if e.get("ph") == "s":
                starts[e["id"]].append(e)
            elif e.get("ph") == "f":
                need(e.get("bp") == "e", f"flow finish without bp e: {e}")
                finishes[e["id"]].append(e)
    for fid in set(starts) | set(finishes):
        need(len(starts[fid]) == 1 and len(finishes[fid]) == 1,
             f"flow id {fid}: {len(starts[fid])} starts, {len(finishes[fid])} finishes")
    f_by_lane = defaultdict(list)
    for fid, (f,) in finishes.items():
        f_by_lane[(f["pid"], f["tid"])].append((f["ts"], fid))

    linked = 0
    for op in device:
        corr = (op.get("args") or {}).get("correlation")
        if not corr or corr not in launches:
            continue
        host = launches[corr]
        linked += 1
        need(op["ts"] >= host["ts"] - EPS,
             f"{op['name']} starts {host['ts'] - op['ts']:.3f} us before its enqueue")
        fids = [fid for ts, fid in f_by_lane[(op["pid"], op["tid"])] if abs(ts - op["ts"]) <= EPS]
        need(len(fids) == 1, f"{op['name']} (corr {corr}) has {len(fids)} flow finishes")
        (s,) = starts[fids[0]]
        need((s["pid"], s["tid"]) == (host["pid"], host["tid"]),
             f"flow {fids[0]} starts on another thread than its launch")
        need(host["ts"] - EPS <= s["ts"] <= host["ts"] + host["dur"] + EPS,
             f"flow {fids[0]} starts outside its launch slice")
    need(linked == len(starts), f"{len(starts)} flows but {linked} linked device ops")
    # A command that failed on the device has no times, hence no device op:
    # an instant event with the error and its correlation stands for it.
    failed = {(e.get("args") or {}).get("correlation") for e in ev
              if e.get("ph") == "i" and "error" in (e.get("args") or {})}
    unlinked = [c for c in launches if c in failed]
    need(linked + len(unlinked) == len(launches),
         f"{len(launches)} launches but {linked} linked device ops")

    # Lanes: device lanes never overlap; host lanes nest properly.
    lanes = defaultdict(list)
    for e in xs:
        lanes[(e["pid"], e["tid"])].append(e)
    for (pid, tid), items in lanes.items():
        items.sort(key=lambda e: (e["ts"], -e["dur"]))
        if pid in device_pids:
            for a, b in zip(items, items[1:]):
                need(b["ts"] >= a["ts"] + a["dur"] - EPS,
                     f"device lane {pid}/{tid}: {a['name']} overlaps {b['name']}")
        else:
            stack = []
            for e in items:
                while stack and e["ts"] >= stack[-1] - EPS:
                    stack.pop()
                need(not stack or e["ts"] + e["dur"] <= stack[-1] + EPS,
                     f"host lane {pid}/{tid}: {e['name']} overlaps its parent partially")
                stack.append(e["ts"] + e["dur"])

    ks = [e for e in device if e.get("cat") == "kernel"]
    if kernels is not None:
        need(len(ks) == kernels, f"{len(ks)} kernel slices, expected {kernels}")
    for n in names:
        need(any(k["name"] == n for k in ks), f"no kernel slice named {n}")
    if ooo:
        lanes_per_pid = defaultdict(set)
        for k in ks:
            lanes_per_pid[k["pid"]].add(k["tid"])
        need(any(len(t) > 1 for t in lanes_per_pid.values()), "no queue used sub-lanes")
    return dict(slices=len(xs), device=len(device), kernels=len(ks), flows=len(starts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--kernels", type=int)
    ap.add_argument("--names", default="")
    args = ap.parse_args()
    try:
        r = validate(load(args.trace), args.kernels, tuple(filter(None, args.names.split(","))))
    except Invalid as e:
        print(f"INVALID: {e}")
        return 1
    print(f"valid: {r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
