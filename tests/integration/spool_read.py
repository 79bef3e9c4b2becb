#!/usr/bin/env python3
"""spool_read.py -- the OpenCL source's tests' view of a spool file
(src/core/record.h), before (and independently of) the timeline builder.

The bytes are decoded by the suite's one independent spool walker
(tests/unit/spool_walk.h) through `spool_dump --records FILE` (tests/
annotate/spool_dump.c); this module only turns its JSON lines into the
lists the tests ask about: header counters, API calls, device ops,
devices, queues, clock records and error lines, strings as text. The
spool_dump program is found through ACT_SPOOL_DUMP or next to the build's
other test programs.
"""
import json
import os
import subprocess
import sys

OP_NAMES = ["KERNEL", "MEMCPY_HTOD", "MEMCPY_DTOH", "MEMCPY_DTOD", "MEMSET", "MAP", "UNMAP",
            "MARKER", "BARRIER", "COLLECTIVE", "SYNC", "OTHER"]
F_SEALED = 0x1
OPF_NO_TIMES, OPF_OOO = 0x1, 0x2


def _text(h):
    return bytes.fromhex(h).decode("utf-8", "replace")


def _dump_tool():
    tool = os.environ.get("ACT_SPOOL_DUMP")
    if not tool:
        raise RuntimeError("ACT_SPOOL_DUMP (the spool_dump test program) is not set")
    return tool


class Spool:
    def __init__(self, path):
        self.path = path
        r = subprocess.run([_dump_tool(), "--records", path], capture_output=True, text=True)
        if r.returncode != 0:
            raise ValueError(f"{path}: {r.stderr.strip()}")
        lines = [json.loads(x) for x in r.stdout.splitlines()]
        hdr = lines[0]
        if hdr["torn"]:
            raise ValueError(f"{path}: {hdr['torn']} torn records")
        self.pid, self.flags = hdr["pid"], hdr["flags"]
        self.sealed = bool(self.flags & F_SEALED)
        self.dropped, self.outside_window = hdr["dropped"], hdr["outside"]
        self.callbacks_pending, self.callbacks_lost = hdr["pending"], hdr["lost"]
        self.apis, self.ops, self.devices, self.queues, self.clocks, self.errors = (
            [], [], [], [], [], [])
        for rec in lines[1:]:
            kind, name = rec.pop("kind"), _text(rec.pop("name"))
            if kind == "api":
                self.apis.append(dict(rec, name=name))
            elif kind == "device_op":
                op = rec["op"]
                self.ops.append(dict(rec, name=name, detail=_text(rec["detail"]),
                                     op=OP_NAMES[op] if op < len(OP_NAMES) else op))
            elif kind == "device":
                self.devices.append(dict(rec, name=name, vendor=_text(rec["vendor"])))
            elif kind == "queue":
                self.queues.append(rec)
            elif kind == "clock":
                self.clocks.append(dict(rec, method=name))
            elif kind == "error":
                self.errors.append(name)


if __name__ == "__main__":
    for p in sys.argv[1:]:
        sp = Spool(p)
        print(json.dumps(dict(pid=sp.pid, sealed=sp.sealed, pending=sp.callbacks_pending,
                              lost=sp.callbacks_lost, dropped=sum(sp.dropped), apis=len(sp.apis),
                              ops=len(sp.ops), devices=sp.devices, queues=len(sp.queues),
                              clocks=sp.clocks, errors=sp.errors), indent=1))
