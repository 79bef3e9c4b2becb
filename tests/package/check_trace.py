#!/usr/bin/env python3
"""check_trace.py TRACE VERSION [RANGE] [--torch] -- a trace written by an
installed acceltrace (plain, or gzip for a name ending in .gz): it passes the project's validator, says it was written
by acceltrace VERSION, has device kernels and (when given) a range named
RANGE enclosing work. --torch: a torch.profiler export with the acceltrace
plugin (kernels and the record_function scope, no acceltrace member)."""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trace_check"))
import validate_trace  # noqa: E402


def main(argv):
    path, version = argv[1], argv[2]
    rng = next((a for a in argv[3:] if not a.startswith("--")), None)
    with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    problems = []
    if "--torch" not in argv:
        problems += validate_trace.validate(doc, expect_device_ops=True)
        got = doc.get("acceltrace", {}).get("version")
        if got != version:
            problems.append(f"acceltrace.version {got!r}, expected {version!r}")
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    if not kernels:
        problems.append("no kernels")
    if rng and not any(e.get("ph") == "X" and e.get("name") == rng for e in ev):
        problems.append(f"no range {rng!r}")
    for p in problems:
        print(f"{path}: {p}")
    if not problems:
        print(f"{os.path.basename(path)}: ok, {len(kernels)} kernels")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
