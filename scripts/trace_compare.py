#!/usr/bin/env python3
"""trace_compare.py -- do two Chrome traces of two runs of one program say
the same thing? For checking that a change leaves trace bytes alone.

Times (ts, dur, baseTimeNanoseconds, clock error), pids, tids, correlation
and flow ids (renumbered in order of first appearance), addresses ("0x..." strings) and the tool's
version are normalised; everything else must match: the top-level members,
and the trace events as an ordered list. Prints the first differences and
exits 1 when there are any.

usage: trace_compare.py A.json B.json
"""
import json
import re
import sys

TIME_KEYS = {"ts", "dur", "baseTimeNanoseconds", "error_ns"}
HEX = re.compile(r"0x[0-9a-fA-F]+")
PID_IN_TEXT = re.compile(r"\b(pid|thread) \d+")


class Norm:
    def __init__(self):
        self.ids = {}

    def renumber(self, kind, v):
        return self.ids.setdefault((kind, v), len([k for k in self.ids if k[0] == kind]))

    def value(self, key, v):
        if key in TIME_KEYS and isinstance(v, (int, float)):
            return 0
        if key in ("pid", "tid", "sort_index") and isinstance(v, int) and v < 5000000:
            return self.renumber("pid" if key != "tid" else "tid", v)
        if key in ("correlation", "id", "ppid") and isinstance(v, int):
            return self.renumber(key, v)
        if isinstance(v, str):
            return PID_IN_TEXT.sub(r"\1 N", HEX.sub("0xADDR", v))
        if isinstance(v, dict):
            return {k: self.value(k, x) for k, x in v.items() if k not in ("version", "command")}
        if isinstance(v, list):
            return [self.value(key, x) for x in v]
        return v


def load(path):
    with open(path, encoding="utf-8") as f:
        t = json.load(f)
    n = Norm()
    events = [json.dumps(n.value("", e), sort_keys=True) for e in t.pop("traceEvents")]
    return json.dumps(n.value("", t), sort_keys=True, indent=1).splitlines(), events


def main():
    (ha, ea), (hb, eb) = load(sys.argv[1]), load(sys.argv[2])
    diffs = [("header", a, b) for a, b in zip(ha, hb) if a != b]
    if len(ha) != len(hb):
        diffs.append(("header", "%d lines" % len(ha), "%d lines" % len(hb)))
    diffs += [("event %d" % i, a, b) for i, (a, b) in enumerate(zip(ea, eb)) if a != b]
    if len(ea) != len(eb):
        diffs.append(("events", "%d events" % len(ea), "%d events" % len(eb)))
    for where, a, b in diffs[:10]:
        print("%s:\n  - %s\n  + %s" % (where, a, b))
    print("%s: %d events, %d differences" % (sys.argv[2], len(eb), len(diffs)))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
