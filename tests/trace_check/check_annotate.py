#!/usr/bin/env python3
"""check_annotate.py ACCELTRACE PROG -- trace the annotation program with
`acceltrace run`, normally and dying by SIGKILL inside a range, and validate
both traces (validate_trace.py) plus what the program recorded: metadata
escaped losslessly, nested ranges on two threads, counters and marks, the
truncated process flagged and its open ranges closed and marked."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validate_trace import validate  # noqa: E402

tool, prog = sys.argv[1], sys.argv[2]
failures = []

with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "ok.json")
    p = subprocess.run([tool, "run", "-o", out, "--", prog], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0 or p.stdout != "done\n":
        failures.append(f"ok run: rc={p.returncode} stdout={p.stdout!r} stderr={p.stderr!r}")
    else:
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
        failures += validate(doc)
        ev = doc["traceEvents"]
        names = [e.get("name") for e in ev if e["ph"] == "X"]
        if names.count("worker \"step\"\n") != 50 or names.count("inner\\path\ufffd") != 50:
            failures.append("worker ranges missing or altered")
        label = doc.get('run "label"')
        if label != "value with \\ and \t and \u2028":
            failures.append(f"string metadata altered: {label!r}")
        if doc.get("config") != {"batch": 8, "tags": ["a", "b"]}:
            failures.append("JSON metadata not emitted as JSON")
        if doc["acceltrace"]["invalid_utf8"] < 50:
            failures.append("invalid UTF-8 not counted")
        if sum(1 for e in ev if e["ph"] == "C") != 50:
            failures.append("counter samples missing")
        if not any(e["ph"] == "b" and e["name"] == "cross-thread" for e in ev):
            failures.append("cross-thread range missing")
        tids = {e["tid"] for e in ev if e["ph"] == "X"}
        if len(tids) != 2:
            failures.append(f"expected ranges on 2 threads, got {tids}")
        if "Host calls" not in p.stderr:
            failures.append("no summary on stderr")

    out = os.path.join(d, "crash.json")
    p = subprocess.run([tool, "run", "-o", out, "--", prog, "crash"], capture_output=True,
                       text=True, timeout=60)
    if p.returncode != 128 + 9:
        failures.append(f"crash run: rc={p.returncode} stderr={p.stderr!r}")
    else:
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
        failures += validate(doc, expect_truncated=True)
        open_ranges = [e for e in doc["traceEvents"] if e["ph"] == "X"
                       and e.get("args", {}).get("truncated")]
        if sorted(e["name"] for e in open_ranges) != ["dies inside", "main"]:
            failures.append(f"open ranges of the killed process: {open_ranges}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("annotation traces valid")
