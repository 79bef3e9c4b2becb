#!/usr/bin/env python3
"""validate_trace.py -- check a Chrome trace written by acceltrace against the
conventions every reader relies on (DESIGN.md "Trace shape"), using only
Python's json module. Usable as a module (validate(doc) -> list of problems)
by other integration tests, or as a command:

    validate_trace.py TRACE.json [--expect-truncated] [--expect-device-ops]

Checks: the top-level members; "X" slices have ts and a non-negative dur;
slices on device lanes never overlap; host lanes are nested-or-disjoint;
flow ids are unique, each "s" has exactly one "f"; every device op whose
correlation has a host launch has exactly one flow pair, its "s" at the
launch start on the launching thread and its "f" ("bp":"e") at the op's
start on the op's lane; device processes (their process_sort_index at or
above 5000000) sort above every host pid and never share a host's pid
(their pids are the device numbers 0, 1, ..., kineto's GPU convention, or
the sort indices); a device start before its host launch is counted in the trace's skew
counter.
"""
import json
import sys
from collections import defaultdict

DEVICE_PID_MIN = 5000000
TOP_LEVEL = ("schemaVersion", "traceName", "displayTimeUnit", "baseTimeNanoseconds",
             "deviceProperties", "traceEvents", "acceltrace")
EPS = 1e-6


def _lanes(events):
    lanes = defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            lanes[(e["pid"], e.get("tid"))].append(e)
    for v in lanes.values():
        v.sort(key=lambda e: (e["ts"], -e["dur"]))
    return lanes


def _check_lane(key, slices, device, problems):
    stack = []  # ends of open slices
    last_end = None
    for e in slices:
        s, t = e["ts"], e["ts"] + e["dur"]
        if device:
            if last_end is not None and s < last_end - EPS:
                problems.append(f"device lane {key}: '{e['name']}' at {s} overlaps the previous slice")
            last_end = t if last_end is None else max(last_end, t)
            continue
        while stack and stack[-1] <= s + EPS:
            stack.pop()
        if stack and t > stack[-1] + EPS:
            problems.append(f"host lane {key}: '{e['name']}' at {s} is not nested in its parent")
            continue
        stack.append(t)


def validate(doc, expect_truncated=False, expect_device_ops=False):
    problems = []
    if not isinstance(doc, dict):
        return ["trace is not a JSON object"]
    for k in TOP_LEVEL:
        if k not in doc:
            problems.append(f"missing top-level member '{k}'")
    events = doc.get("traceEvents", [])
    meta = doc.get("acceltrace", {})
    host_pids = set()
    device_pids = {e["pid"] for e in events
                   if e.get("ph") == "M" and e.get("name") == "process_sort_index"
                   and e.get("args", {}).get("sort_index", 0) >= DEVICE_PID_MIN}
    for e in events:
        ph = e.get("ph")
        if ph is None or "pid" not in e:
            problems.append(f"event without ph/pid: {e}")
            continue
        if e["pid"] not in device_pids:
            host_pids.add(e["pid"])
        if ph == "X":
            if not isinstance(e.get("ts"), (int, float)) or not isinstance(e.get("dur"), (int, float)):
                problems.append(f"X without numeric ts/dur: {e}")
            elif e["dur"] < 0:
                problems.append(f"negative dur: {e}")
        if ph == "M" and e.get("name") == "process_sort_index" and e["pid"] in device_pids:
            if host_pids and e["args"]["sort_index"] <= max(host_pids):
                problems.append(f"device sort index {e['args']['sort_index']} not above host pids")
    if problems:
        return problems

    lanes = _lanes(events)
    for key, slices in lanes.items():
        _check_lane(key, slices, key[0] in device_pids, problems)

    starts, finishes = defaultdict(list), defaultdict(list)
    for e in events:
        if e["ph"] == "s":
            starts[e["id"]].append(e)
        elif e["ph"] == "f":
            finishes[e["id"]].append(e)
            if e.get("bp") != "e":
                problems.append(f"flow finish {e['id']} without \"bp\":\"e\"")
    for fid in set(starts) | set(finishes):
        if len(starts[fid]) != 1 or len(finishes[fid]) != 1:
            problems.append(f"flow id {fid}: {len(starts[fid])} starts, {len(finishes[fid])} finishes")

    launches = defaultdict(list)  # correlation -> host launch slices
    for (pid, tid), slices in lanes.items():
        if pid not in device_pids:
            for e in slices:
                corr = e.get("args", {}).get("correlation")
                if corr is not None:
                    launches[(pid, corr)].append(e)
    finish_at = defaultdict(list)
    for fl in finishes.values():
        for f in fl:
            finish_at[(f["pid"], f["tid"], f["ts"])].append(f)

    skew = 0
    n_device_ops = 0
    for (pid, tid), slices in lanes.items():
        if pid not in device_pids:
            continue
        for op in slices:
            n_device_ops += 1
            corr = op.get("args", {}).get("correlation")
            fl = finish_at.get((pid, tid, op["ts"]), [])
            linked = [f for f in fl if starts.get(f["id"])]
            # Which host processes launched this correlation (device pids are shared).
            hosts = [h for (hp, c), hs in launches.items() if c == corr for h in hs]
            if corr is None or not hosts:
                continue
            if len(linked) < 1:
                problems.append(f"device op '{op['name']}' corr {corr} has no flow")
                continue
            s = starts[linked[0]["id"]][0]
            launch = [h for h in hosts if h["pid"] == s["pid"] and h.get("tid") == s["tid"]
                      and abs(h["ts"] - s["ts"]) < EPS]
            if not launch:
                problems.append(f"flow {s['id']}: start is not at a launch of corr {corr}")
            elif op["ts"] + EPS < launch[0]["ts"]:
                skew += 1
    counted = meta.get("skew", {}).get("device_before_launch", 0)
    if skew > counted:
        problems.append(f"{skew} device ops start before their launch but the trace counts {counted}")
    if expect_device_ops and n_device_ops == 0:
        problems.append("no device ops in the trace")
    truncated = meta.get("truncated_processes", [])
    if expect_truncated and not truncated:
        problems.append("expected a truncated process")
    if not expect_truncated and truncated:
        problems.append(f"unexpected truncated processes {truncated}")
    return problems


def main(argv):
    path = argv[1]
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    problems = validate(doc, "--expect-truncated" in argv, "--expect-device-ops" in argv)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
