#!/usr/bin/env python3
"""check_vendor_trace.py -- run a vendor test program's "trace" case
(ranges on several threads launching work through a fake vendor library,
then the project's builder and Chrome writer) and validate the JSON:

  - every ac2g flow has exactly one start and one finish, none backwards;
  - >= 99 % of kernels link to the range they were launched in (the scenario
    names each kernel after its range), the rest are counted;
  - device lanes sort below every host process; each kernel sits on a
    "stream N" lane; kernel args carry the kernel type ("type") and the
    stream id ("stream", the lane's N);
  - collectives (mspti) carry their communicator in args ("commName");
  - the "<vendor>_clock" metadata (derived by the builder from the
    source's clock records) says how vendor times were mapped;
  - no vendor prefix on names; no error lines in the trace metadata.

usage: check_vendor_trace.py PROGRAM EXPECTED_KERNELS
"""
import collections
import json
import os
import subprocess
import sys
import tempfile


def main():
    prog, expected = sys.argv[1], int(sys.argv[2])
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "trace.json")
        r = subprocess.run([prog, "trace", out], timeout=120)
        if r.returncode != 0:
            print(f"FAIL: {prog} trace exited {r.returncode}")
            return 1
        with open(out, encoding="utf-8") as f:
            trace = json.load(f)
    return validate(trace, expected)


def validate(trace, expected):
    fails = []
    ev = trace["traceEvents"]
    starts, finishes = collections.defaultdict(list), collections.defaultdict(list)
    for e in ev:
        if e.get("cat") == "ac2g":
            (starts if e["ph"] == "s" else finishes)[e["id"]].append(e)
    for fid in set(starts) | set(finishes):
        if len(starts[fid]) != 1 or len(finishes[fid]) != 1:
            fails.append(f"flow {fid}: {len(starts[fid])} starts, {len(finishes[fid])} finishes")
        elif finishes[fid][0]["ts"] < starts[fid][0]["ts"]:
            fails.append(f"flow {fid} points backwards in time")

    ranges = {e["args"]["External id"]: e["name"] for e in ev
              if e.get("cat") == "user_annotation" and "External id" in e.get("args", {})}
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"
               and e["name"].startswith("t")]
    linked = sum(1 for k in kernels
                 if ranges.get(k.get("args", {}).get("External id")) == k["name"])
    print(f"{len(kernels)} kernels, {linked} linked to their range, {len(kernels) - linked} not")
    if len(kernels) != expected:
        fails.append(f"{len(kernels)} kernels, expected {expected}")
    if linked * 100 < expected * 99:
        fails.append(f"only {linked} of {expected} kernels linked to their range")

    # The clock mapping of the cycle, derived by the builder from the
    # source's clock records at start and stop.
    clocks = {k: v for k, v in trace.items() if k in ("cupti_clock", "mspti_clock")}
    if len(clocks) != 1:
        fails.append(f"clock metadata: {sorted(clocks)}")
    for key, clk in clocks.items():
        if not isinstance(clk, dict) or "method" not in clk:
            fails.append(f"{key}: {clk!r}")
        elif "offset_start_ns" in clk and \
                clk["drift_ns"] != clk["offset_stop_ns"] - clk["offset_start_ns"]:
            fails.append(f"{key}: drift is not stop - start: {clk!r}")
        elif key == "mspti_clock" and "offset_start_ns" not in clk:
            fails.append(f"{key}: the fake libmspti stamps CLOCK_REALTIME: {clk!r}")

    sort = {e["pid"]: e["args"]["sort_index"] for e in ev
            if e.get("ph") == "M" and e["name"] == "process_sort_index"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
               if e.get("ph") == "M" and e["name"] == "thread_name"}
    device_pids = {e["pid"] for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"}
    host_pids = {e["pid"] for e in ev if e.get("ph") == "X" and e.get("cat") == "user_annotation"}
    if device_pids and host_pids and \
            min(sort.get(p, p) for p in device_pids) <= max(sort.get(p, p) for p in host_pids):
        fails.append("a device lane does not sort below the host processes")
    for k in kernels:
        lane = threads.get((k["pid"], k["tid"]), "")
        if not lane.startswith("stream "):
            fails.append(f"kernel {k['name']} on lane {lane!r}, not a stream")
            break
        args = k.get("args", {})
        if args.get("type") not in ("AI_CORE", "regular"):
            fails.append(f"kernel {k['name']} args lack the kernel type: {args}")
            break
        if f"stream {args.get('stream')}" != lane.split(" (")[0]:
            fails.append(f"kernel {k['name']} on lane {lane!r} has stream arg {args.get('stream')}")
            break
    for c in (e for e in ev if e.get("ph") == "X" and e["name"] == "allreduce"):
        if c.get("args", {}).get("commName") != "hccl_world_group":
            fails.append(f"collective without its commName: {c.get('args')}")
    for e in ev:
        if e.get("name", "").startswith(("mspti::", "cupti::")):
            fails.append(f"vendor prefix on {e['name']}")
            break
    errors = trace.get("acceltrace", {}).get("errors", [])
    if errors:
        fails.append(f"errors in the trace: {errors}")
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
