#!/usr/bin/env python3
"""check_summary_cli.py ACCELTRACE -- `acceltrace summary` on missing, empty,
truncated, non-JSON and non-trace files must print exactly one line on stderr
and exit with status 2 (never crash); on a valid trace it exits 0."""
import json
import os
import subprocess
import sys
import tempfile

tool = sys.argv[1]
failures = []


def run(*args):
    return subprocess.run([tool, "summary", *args], capture_output=True, text=True, timeout=30)


def expect_error(label, *args):
    p = run(*args)
    lines = p.stderr.splitlines()
    if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith("acceltrace: summary: "):
        failures.append(f"{label}: rc={p.returncode} stderr={p.stderr!r}")


with tempfile.TemporaryDirectory() as d:
    def path_with(name, data):
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    expect_error("missing", os.path.join(d, "missing.json"))
    expect_error("empty", path_with("empty.json", b""))
    expect_error("truncated", path_with("trunc.json", b'{"traceEvents":[{"ph":"X","name":"k"'))
    expect_error("not json", path_with("text.json", b"hello world\n"))
    expect_error("binary", path_with("bin.json", bytes(range(256))))
    expect_error("no traceEvents", path_with("obj.json", b'{"a": 1}'))
    # jansson quotes the bytes it choked on: a newline must not split the reason
    expect_error("bad escape before a newline", path_with("esc.json", b'[{"ph\\\n": 1}]'))
    expect_error("directory", d)
    expect_error("no argument")
    expect_error("unknown option", "--bogus", "x.json")

    good = path_with("good.json", json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 5000000, "tid": 1, "ts": 1.0, "dur": 2.0},
        {"ph": "X", "cat": "opencl_runtime", "name": "clEnqueueNDRangeKernel", "pid": 1,
         "tid": 1, "ts": 0.5, "dur": 0.25}]}).encode())
    p = run("--by-range", good)
    if p.returncode != 0 or "Device ops: 1 names" not in p.stdout or "Host calls: 1 names" not in p.stdout:
        failures.append(f"good trace: rc={p.returncode} out={p.stdout!r} err={p.stderr!r}")
    p = run("--help")
    if p.returncode != 0 or "--by-range" not in p.stdout:
        failures.append(f"--help: rc={p.returncode}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("summary CLI: all cases behave")
