#!/usr/bin/env python3
"""check_validator.py -- validate_trace.py (the one trace validator) must
reject what it claims to check: valid hand-written traces pass, and each
broken variant (overlap on a device lane, improper host nesting, duplicated
or missing flows, a flow start off its launch or on another thread, a flow
finish without bp, uncounted skew, missing members, negative durations,
a device process sorting above a host, device work on a host process, a
wrong kernel count, an unparsable file) is reported."""
import copy
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validate_trace import Invalid, load, validate  # noqa: E402

H, D = 100, 5000000
good = {
    "schemaVersion": 1, "traceName": "t", "displayTimeUnit": "ms",
    "baseTimeNanoseconds": 1, "deviceProperties": [],
    "acceltrace": {"clock": {"method": "monotonic_raw"}, "skew": {"device_before_launch": 0},
                   "truncated_processes": []},
    "traceEvents": [
        {"ph": "M", "pid": D, "name": "process_sort_index", "args": {"sort_index": D}},
        {"ph": "X", "cat": "user_annotation", "name": "r", "pid": H, "tid": H, "ts": 0.0, "dur": 100.0},
        {"ph": "X", "cat": "opencl_runtime", "name": "launch", "pid": H, "tid": H, "ts": 10.0,
         "dur": 5.0, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": D, "tid": 1, "ts": 20.0, "dur": 10.0,
         "args": {"correlation": 1}},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": H, "tid": H, "ts": 10.0},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": D, "tid": 1, "ts": 20.0, "bp": "e"},
    ],
}
failures = []
if validate(good):
    failures.append(f"valid trace rejected: {validate(good)}")


def broken(label, mutate):
    doc = copy.deepcopy(good)
    mutate(doc)
    if not validate(doc):
        failures.append(f"not detected: {label}")


ev = lambda d: d["traceEvents"]  # noqa: E731
broken("device overlap", lambda d: ev(d).append(
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": D, "tid": 1, "ts": 25.0, "dur": 10.0}))
broken("host nesting", lambda d: ev(d).append(
    {"ph": "X", "cat": "cpu_op", "name": "x", "pid": H, "tid": H, "ts": 90.0, "dur": 20.0}))
broken("duplicate flow start", lambda d: ev(d).append(dict(ev(d)[4])))
broken("missing flow", lambda d: d.update(traceEvents=ev(d)[:4]))
broken("uncounted skew", lambda d: ev(d)[3].update(ts=5.0) or ev(d)[5].update(ts=5.0))
broken("missing member", lambda d: d.pop("deviceProperties"))
broken("negative dur", lambda d: ev(d)[1].update(dur=-1.0))
broken("flow finish without bp", lambda d: ev(d)[5].pop("bp"))

broken("no clock method", lambda d: d["acceltrace"].pop("clock"))
broken("kernel on a host process", lambda d: ev(d)[3].update(pid=H + 1))

# A trace in DESIGN.md's shape with two launches, and what breaks it.
HOST, DEV = 4242, 5000000


def shaped():
    events = [
        {"ph": "M", "pid": HOST, "name": "process_sort_index", "args": {"sort_index": HOST}},
        {"ph": "M", "pid": DEV, "name": "process_sort_index", "args": {"sort_index": DEV}},
        {"ph": "X", "cat": "user_annotation", "name": "step", "pid": HOST, "tid": HOST,
         "ts": 10.0, "dur": 900.0},
    ]
    for i, (t, kts) in enumerate([(12.5, 40.1), (20.0, 200.0)]):
        corr, fid = 17 + i, 1 + i
        events += [
            {"ph": "X", "cat": "opencl_runtime", "name": "clEnqueueNDRangeKernel", "pid": HOST,
             "tid": HOST, "ts": t, "dur": 1.25, "args": {"correlation": corr}},
            {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": fid, "pid": HOST, "tid": HOST, "ts": t},
            {"ph": "X", "cat": "kernel", "name": "saxpy", "pid": DEV, "tid": 1, "ts": kts,
             "dur": 120.3, "args": {"correlation": corr}},
            {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": fid, "pid": DEV, "tid": 1,
             "ts": kts, "bp": "e"},
        ]
    return {"schemaVersion": 1, "traceName": "t", "displayTimeUnit": "ms",
            "baseTimeNanoseconds": 1, "deviceProperties": [],
            "acceltrace": {"clock": {"method": "monotonic_raw"}}, "traceEvents": events}


def find(d, **kw):
    return [e for e in d["traceEvents"] if all(e.get(k) == v for k, v in kw.items())]


STRICT = dict(kernels=2, names=("saxpy",), every_launch_linked=True)
if validate(shaped(), **STRICT):
    failures.append(f"valid shaped trace rejected: {validate(shaped(), **STRICT)}")


def shaped_broken(label, mutate, **kw):
    doc = shaped()
    mutate(doc)
    if not validate(doc, **dict(STRICT, **kw)):
        failures.append(f"not detected: {label}")


def dup_flow(d):
    find(d, ph="s")[1]["id"] = 1
    find(d, ph="f")[1]["id"] = 1


def early_device(d):
    k = find(d, cat="kernel")[0]
    k["ts"] = find(d, ph="f")[0]["ts"] = 11.0


def device_overlap(d):
    k = find(d, cat="kernel")[1]
    k["ts"] = find(d, ph="f")[1]["ts"] = 100.0


def missing_flow(d):
    d["traceEvents"].remove(find(d, ph="f")[0])
    d["traceEvents"].remove(find(d, ph="s")[0])


shaped_broken("duplicate flow id", dup_flow)
shaped_broken("flow start off its launch", lambda d: find(d, ph="s")[0].update(ts=15.0))
shaped_broken("flow start on another thread", lambda d: find(d, ph="s")[0].update(tid=7))
shaped_broken("device op before its enqueue", early_device)
shaped_broken("overlapping device slices", device_overlap)
shaped_broken("host partial overlap",
              lambda d: find(d, cat="user_annotation")[0].update(dur=10.5))
shaped_broken("device sorting above host",
              lambda d: find(d, pid=DEV, name="process_sort_index")[0]["args"].update(sort_index=1))
shaped_broken("launch without its flow", missing_flow)
shaped_broken("too few kernels", lambda d: None, kernels=1)
shaped_broken("too many kernels", lambda d: None, kernels=3)
shaped_broken("no sub-lanes", lambda d: None, ooo=True)
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "t.json")
    with open(path, "w") as f:
        json.dump(shaped(), f)
    if validate(load(path), **STRICT):
        failures.append("the shaped trace read from a file is rejected")
    with open(path, "w") as f:
        f.write('{"traceEvents": [')
    try:
        load(path)
        failures.append("not detected: truncated file")
    except Invalid:
        pass

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("validator detects every broken variant")
