#!/usr/bin/env python3
"""validator_selftest.py -- shows that validate_trace.py can fail: a small
trace in DESIGN.md's shape must validate, and each mutation that breaks
one rule (duplicate flow id, flow start outside its launch slice, flow on
another thread, missing bp, device op before its enqueue, overlapping
device slices, partial overlap on a host lane, wrong kernel count, device
process sorting above a host process, unparsable file) must be rejected.
"""
import copy
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validate_trace import Invalid, load, validate  # noqa: E402

HOST, DEV = 4242, 5000000


def base():
    ev = [
        {"ph": "M", "pid": HOST, "name": "process_name", "args": {"name": "app (pid 4242)"}},
        {"ph": "M", "pid": HOST, "name": "process_sort_index", "args": {"sort_index": HOST}},
        {"ph": "M", "pid": DEV, "name": "process_name", "args": {"name": "OpenCL dev"}},
        {"ph": "M", "pid": DEV, "name": "process_sort_index", "args": {"sort_index": DEV}},
        {"ph": "X", "cat": "user_annotation", "name": "step", "pid": HOST, "tid": HOST,
         "ts": 10.0, "dur": 900.0},
    ]
    for i, (t, kts) in enumerate([(12.5, 40.1), (20.0, 200.0)]):
        corr, fid = 17 + i, 1 + i
        ev += [
            {"ph": "X", "cat": "opencl_runtime", "name": "clEnqueueNDRangeKernel", "pid": HOST,
             "tid": HOST, "ts": t, "dur": 1.25, "args": {"correlation": corr}},
            {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": fid, "pid": HOST, "tid": HOST,
             "ts": t},
            {"ph": "X", "cat": "kernel", "name": "saxpy", "pid": DEV, "tid": 1, "ts": kts,
             "dur": 120.3, "args": {"correlation": corr}},
            {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": fid, "pid": DEV, "tid": 1,
             "ts": kts, "bp": "e"},
        ]
    return {"schemaVersion": 1, "traceName": "t", "displayTimeUnit": "ms",
            "baseTimeNanoseconds": 1, "acceltrace": {"clock": {"method": "monotonic_raw"}},
            "traceEvents": ev}


def find(doc, **kw):
    return [e for e in doc["traceEvents"] if all(e.get(k) == v for k, v in kw.items())]


def mutations():
    def dup_flow(d):
        find(d, ph="s")[1]["id"] = 1
        find(d, ph="f")[1]["id"] = 1

    def flow_outside(d):
        find(d, ph="s")[0]["ts"] = 15.0

    def flow_other_thread(d):
        find(d, ph="s")[0]["tid"] = 7

    def no_bp(d):
        del find(d, ph="f")[0]["bp"]

    def early_device(d):
        k = find(d, cat="kernel")[0]
        k["ts"] = find(d, ph="f")[0]["ts"] = 11.0

    def device_overlap(d):
        k = find(d, cat="kernel")[1]
        k["ts"] = find(d, ph="f")[1]["ts"] = 100.0

    def host_partial(d):
        find(d, cat="user_annotation")[0]["dur"] = 10.5

    def sort_above(d):
        find(d, pid=DEV, name="process_sort_index")[0]["args"]["sort_index"] = 1

    def missing_flow(d):
        d["traceEvents"].remove(find(d, ph="f")[0])
        d["traceEvents"].remove(find(d, ph="s")[0])

    return [dup_flow, flow_outside, flow_other_thread, no_bp, early_device, device_overlap,
            host_partial, sort_above, missing_flow]


def main():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        with open(path, "w") as f:
            json.dump(base(), f)
        validate(load(path), kernels=2, names=("saxpy",))
        for bad_kernels in (1, 3):
            try:
                validate(load(path), kernels=bad_kernels)
                print(f"FAIL: kernel count {bad_kernels} accepted")
                return 1
            except Invalid:
                pass
        with open(path, "w") as f:
            f.write('{"traceEvents": [')
        try:
            load(path)
            print("FAIL: truncated file accepted")
            return 1
        except Invalid:
            pass
    for m in mutations():
        doc = copy.deepcopy(base())
        m(doc)
        try:
            validate(doc, kernels=2)
        except Invalid as e:
            print(f"ok: {m.__name__} rejected: {e}")
            continue
        print(f"FAIL: {m.__name__} was accepted")
        return 1
    print("ok: the valid trace validates and every broken one is rejected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
