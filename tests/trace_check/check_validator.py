#!/usr/bin/env python3
"""check_validator.py -- validate_trace.py must reject what it claims to
check: a valid hand-written trace passes, and each broken variant (overlap on
a device lane, improper host nesting, a duplicated flow id, a device op
without its flow, uncounted skew, missing members) is reported."""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validate_trace import validate  # noqa: E402

H, D = 100, 5000000
good = {
    "schemaVersion": 1, "traceName": "t", "displayTimeUnit": "ms",
    "baseTimeNanoseconds": 1, "deviceProperties": [],
    "acceltrace": {"skew": {"device_before_launch": 0}, "truncated_processes": []},
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

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("validator detects every broken variant")
