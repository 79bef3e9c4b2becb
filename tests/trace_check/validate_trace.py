#!/usr/bin/env python3
"""validate_trace.py -- the one check of a Chrome trace written by acceltrace
against the conventions every reader relies on (DESIGN.md "Trace shape"),
with nothing but Python's json module. Every test that reads a trace uses
it, as a module (validate(doc, ...) -> list of problems; load(path) raises
Invalid when the file does not parse) or as a command:

    validate_trace.py TRACE.json [--kernels N] [--names a,b] [--ooo]
                      [--expect-truncated] [--expect-device-ops]
                      [--every-launch-linked]

Checks: the top-level members and acceltrace.clock.method; "X" slices have
a numeric ts and a non-negative dur; device work (kernel, copies, fills,
syncs) sits on device processes (pid >= 5000000) and host calls do not, and
device processes sort below every host process; slices on a device lane
never overlap, host lanes are nested-or-disjoint; flows are named ac2g,
their ids unique with exactly one "s" and one "f" ("bp":"e") each; every
device op whose correlation has a host launch in the trace has exactly one
flow pair, its "s" at the launch's start on the launching thread and its
"f" at the op's start on the op's lane; a device op that starts before its
launch is counted in acceltrace.skew. Options: the number of kernel slices,
kernel names that must appear, sub-lanes in use (out-of-order queues),
truncated processes expected or not, at least one device op, every
correlated host launch linked to a device op.

Timestamps carry three decimals, each rounded: comparisons allow EPS.
"""
import argparse
import gzip
import json
import sys
from collections import defaultdict

DEVICE_PID_MIN = 5000000
TOP_LEVEL = ("schemaVersion", "traceName", "displayTimeUnit", "baseTimeNanoseconds",
             "deviceProperties", "traceEvents", "acceltrace")
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_sync", "gpu_op"}
HOST_CATS = {"opencl_runtime", "cpu_op", "user_annotation", "cuda_runtime", "cuda_driver",
             "privateuse1_runtime", "runtime", "python_function"}
EPS = 0.0021  # us


class Invalid(Exception):
    pass


def pointer_arg(v):
    """A JSON arg as the binary writers (SQLite, Perfetto protobuf) store
    it: a "0x.." string is the pointer it stands for."""
    if isinstance(v, str) and v.startswith("0x"):
        try:
            return int(v, 16)
        except ValueError:
            return v
    return v


def load(path):
    """The trace at path (.json, or gzip as -o NAME.gz writes); Invalid when
    it is not a JSON object."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        doc = json.loads(data)
    except (ValueError, OSError, EOFError) as e:
        raise Invalid(f"{path}: not JSON: {e}")
    if not isinstance(doc, dict):
        raise Invalid(f"{path}: top level is not an object")
    return doc


def _header(doc, problems):
    for k in TOP_LEVEL:
        if k not in doc:
            problems.append(f"missing top-level member '{k}'")
    clock = doc.get("acceltrace", {}).get("clock")
    if not isinstance(clock, dict) or "method" not in clock:
        problems.append("acceltrace.clock.method missing")
    if not isinstance(doc.get("traceEvents"), list):
        problems.append("traceEvents is not a list")


def _device_pids(events):
    """Device processes: their process_sort_index is at or above
    DEVICE_PID_MIN (their pids are the device numbers 0, 1, ..., kineto's
    GPU convention, or the sort indices themselves)."""
    return {e["pid"] for e in events
            if e.get("ph") == "M" and e.get("name") == "process_sort_index"
            and (e.get("args") or {}).get("sort_index", 0) >= DEVICE_PID_MIN}


def _events(events, problems, dev):
    host_pids, device_pids = set(), set()
    for e in events:
        ph = e.get("ph")
        if ph is None or "pid" not in e:
            problems.append(f"event without ph/pid: {e}")
            continue
        device = e["pid"] in dev
        (device_pids if device else host_pids).add(e["pid"])
        cat = str(e.get("cat", "")).lower()
        if ph == "X":
            if not isinstance(e.get("ts"), (int, float)) or not isinstance(e.get("dur"), (int, float)):
                problems.append(f"X without numeric ts/dur: {e}")
            elif e["dur"] < 0:
                problems.append(f"negative dur: {e}")
            if (cat in DEVICE_CATS and not device) or (cat in HOST_CATS and device):
                problems.append(f"'{e.get('name')}' ({cat}) on the wrong kind of process {e['pid']}")
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_sort_index" and \
                e.get("pid") in dev and host_pids and \
                e["args"]["sort_index"] <= max(host_pids):
            problems.append(f"device pid {e['pid']} does not sort below every host pid")
    return host_pids, device_pids


def _lanes(events):
    lanes = defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            lanes[(e["pid"], e.get("tid"))].append(e)
    for v in lanes.values():
        v.sort(key=lambda e: (e["ts"], -e["dur"]))
    return lanes


def _check_lane(key, slices, device, problems):
    """Host slices nest. Device ops never overlap on their lane; the user
    ranges projected onto it (gpu_user_annotation, as kineto writes them)
    nest like host slices, around the ops."""
    stack = []  # ends of the open slices (host lanes; user ranges on device lanes)
    last_end = None
    for e in slices:
        s, t = e["ts"], e["ts"] + e["dur"]
        while stack and stack[-1] <= s + EPS:
            stack.pop()
        if stack and t > stack[-1] + EPS:
            side = "device" if device else "host"
            problems.append(f"{side} lane {key}: '{e['name']}' at {s} is not nested in its parent")
            continue
        if device and e.get("cat") != "gpu_user_annotation":
            if last_end is not None and s < last_end - EPS:
                problems.append(f"device lane {key}: '{e['name']}' at {s} overlaps the previous slice")
            last_end = t if last_end is None else max(last_end, t)
            continue
        stack.append(t)


def _flows(events, problems):
    starts, finishes = defaultdict(list), defaultdict(list)
    for e in events:
        if e.get("ph") not in ("s", "f"):
            continue
        if e.get("cat") == "ac2g" and e.get("name") != "ac2g":
            problems.append(f"ac2g flow named {e.get('name')!r}")
        if e["ph"] == "s":
            starts[e["id"]].append(e)
        else:
            finishes[e["id"]].append(e)
            if e.get("bp") != "e":
                problems.append(f"flow finish {e['id']} without \"bp\":\"e\"")
    for fid in set(starts) | set(finishes):
        if len(starts[fid]) != 1 or len(finishes[fid]) != 1:
            problems.append(f"flow id {fid}: {len(starts[fid])} starts, {len(finishes[fid])} finishes")
    return starts, finishes


def _links(doc, lanes, starts, finishes, problems, every_launch_linked, dev):
    """Device op <-> launch <-> flow; returns the device ops and the linked ones."""
    launches = defaultdict(list)  # correlation -> host launch slices
    for (pid, _), slices in lanes.items():
        if pid not in dev:
            for e in slices:
                corr = (e.get("args") or {}).get("correlation")
                if corr is not None:
                    launches[corr].append(e)
    finish_at = defaultdict(list)
    for fl in finishes.values():
        for f in fl:
            finish_at[(f["pid"], f["tid"])].append(f)
    skew, device_ops, linked_launches = 0, [], set()
    for (pid, tid), slices in lanes.items():
        if pid not in dev:
            continue
        for op in slices:
            device_ops.append(op)
            corr = (op.get("args") or {}).get("correlation")
            hosts = launches.get(corr, []) if corr is not None else []
            if not hosts:
                continue
            fl = [f for f in finish_at[(pid, tid)] if abs(f["ts"] - op["ts"]) <= EPS and
                  len(starts.get(f["id"], [])) == 1]
            if len(fl) != 1:
                problems.append(f"device op '{op['name']}' corr {corr} has {len(fl)} flow finishes")
                continue
            s = starts[fl[0]["id"]][0]
            launch = [h for h in hosts if (h["pid"], h.get("tid")) == (s["pid"], s["tid"]) and
                      abs(h["ts"] - s["ts"]) <= EPS]
            if not launch:
                problems.append(f"flow {s['id']}: its start is not at a launch of corr {corr} "
                                "on the launching thread")
                continue
            linked_launches.add(id(launch[0]))
            if op["ts"] + EPS < launch[0]["ts"]:
                skew += 1
    counted = doc.get("acceltrace", {}).get("skew", {}).get("device_before_launch", 0)
    if skew > counted:
        problems.append(f"{skew} device ops start before their launch but the trace counts {counted}")
    if every_launch_linked:
        # A command that failed on the device has no times, hence no device
        # op: an instant event with the error and its correlation stands for it.
        failed = {(e.get("args") or {}).get("correlation") for e in doc["traceEvents"]
                  if e.get("ph") == "i" and "error" in (e.get("args") or {})}
        n = sum(len(v) for c, v in launches.items() if c not in failed)
        if len(linked_launches) != n:
            problems.append(f"{n} correlated launches but {len(linked_launches)} linked device ops")
        if len(starts) != len(linked_launches):
            problems.append(f"{len(starts)} flows but {len(linked_launches)} linked device ops")
    return device_ops


def validate(doc, expect_truncated=False, expect_device_ops=False, kernels=None, names=(),
             ooo=False, every_launch_linked=False):
    """Problems found in the trace `doc` (empty when it is valid)."""
    if not isinstance(doc, dict):
        return ["trace is not a JSON object"]
    problems = []
    _header(doc, problems)
    if problems:
        return problems
    events = doc["traceEvents"]
    dev = _device_pids(events)
    _events(events, problems, dev)
    if problems:
        return problems
    lanes = _lanes(events)
    for key, slices in lanes.items():
        _check_lane(key, slices, key[0] in dev, problems)
    starts, finishes = _flows(events, problems)
    device_ops = _links(doc, lanes, starts, finishes, problems, every_launch_linked, dev)
    if expect_device_ops and not device_ops:
        problems.append("no device ops in the trace")
    ks = [e for e in device_ops if e.get("cat") == "kernel"]
    if kernels is not None and len(ks) != kernels:
        problems.append(f"{len(ks)} kernel slices, expected {kernels}")
    for n in names:
        if not any(k["name"] == n for k in ks):
            problems.append(f"no kernel slice named {n}")
    if ooo:
        tids = defaultdict(set)
        for k in ks:
            tids[k["pid"]].add(k["tid"])
        if not any(len(t) > 1 for t in tids.values()):
            problems.append("no queue used sub-lanes")
    truncated = doc["acceltrace"].get("truncated_processes", [])
    if expect_truncated and not truncated:
        problems.append("expected a truncated process")
    if not expect_truncated and truncated:
        problems.append(f"unexpected truncated processes {truncated}")
    return problems


def summary(doc):
    """A one-line description of a valid trace, for test logs."""
    xs = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    pids = _device_pids(doc["traceEvents"])
    dev = [e for e in xs if e["pid"] in pids]
    return dict(slices=len(xs), device=len(dev), kernels=sum(e.get("cat") == "kernel" for e in dev),
                flows=sum(e.get("ph") == "s" for e in doc["traceEvents"]))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--kernels", type=int)
    ap.add_argument("--names", default="")
    ap.add_argument("--ooo", action="store_true")
    ap.add_argument("--expect-truncated", action="store_true")
    ap.add_argument("--expect-device-ops", action="store_true")
    ap.add_argument("--every-launch-linked", action="store_true")
    a = ap.parse_args(argv)
    try:
        doc = load(a.trace)
    except (Invalid, OSError) as e:
        print(f"INVALID: {e}")
        return 1
    problems = validate(doc, a.expect_truncated, a.expect_device_ops, a.kernels,
                        tuple(filter(None, a.names.split(","))), a.ooo, a.every_launch_linked)
    for p in problems:
        print(f"INVALID: {p}")
    if not problems:
        print(f"valid: {summary(doc)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
