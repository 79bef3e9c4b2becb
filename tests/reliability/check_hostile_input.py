#!/usr/bin/env python3
"""check_hostile_input.py -- `acceltrace summary` given a malformed,
truncated or hostile file exits 2 with exactly one line on stderr and
nothing on stdout, and does not hang (docs/reliability.md, "Hostile input").

usage: check_hostile_input.py ACCELTRACE WORKDIR VALID_TRACE_SEED
VALID_TRACE_SEED is a real trace (fuzz/summary/corpus/acceltrace_opencl.json):
its truncations must be refused, the whole file accepted (exit 0).
"""
import os
import shutil
import subprocess
import sys


def fail(msg):
    sys.exit("FAIL: " + msg)


def main():
    acceltrace, work, seed = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(seed, "rb") as f:
        good = f.read()
    cases = {
        "missing": None,
        "empty": b"",
        "garbage": bytes(range(256)) * 8,
        "nul": b"\0" * 100,
        "not_json": b"hello\nworld\n",
        "newline_in_error": b'{"traceEvents": [\n"unterminated\n',
        "control_in_string": b'{"traceEvents":["a\x01\x1b[31mred"]}',
        "number": b"42",
        "string": b'"traceEvents"',
        "object_without_events": b'{"schemaVersion": 1}',
        "events_not_array": b'{"traceEvents": {"ph": "X"}}',
        "deep": b"[" * 100000 + b"]" * 100000,
        "spool_file": b"ACTSPOOL" + b"\0" * 4088,
        "utf16": "{\"traceEvents\": []}".encode("utf-16"),
        "trailing": good + b"\n{}",
    }
    for cut in (1, len(good) // 3, len(good) // 2, len(good) - 2):
        cases["truncated_%d" % cut] = good[:cut]
    paths = {}
    for name, data in cases.items():
        p = os.path.join(work, name + ".json")
        if data is not None:
            with open(p, "wb") as f:
                f.write(data)
        paths[name] = p
    paths["directory"] = work
    fifo = os.path.join(work, "fifo.json")
    os.mkfifo(fifo)
    paths["fifo"] = fifo  # nobody writes it: reading would hang
    paths["dev_zero"] = "/dev/zero"  # endless
    paths["newline\nin name"] = os.path.join(work, "new\nline.json")

    for name, p in paths.items():
        try:
            r = subprocess.run([acceltrace, "summary", p], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
        except subprocess.TimeoutExpired:
            fail("%s: summary hung" % name)
        err = r.stderr.decode(errors="replace")
        if r.returncode != 2:
            fail("%s: exit %d, want 2 (stderr %r)" % (name, r.returncode, err[:300]))
        if r.stdout:
            fail("%s: printed on stdout: %r" % (name, r.stdout[:200]))
        if err.count("\n") != 1 or not err.endswith("\n") or len(err) < 20:
            fail("%s: want one line on stderr, got %r" % (name, err[:500]))
        if any(ord(c) < 0x20 for c in err[:-1]):
            fail("%s: control characters in the reason %r" % (name, err))
        print("%-22s %s" % (name, err.strip()[:150]))
    good_path = os.path.join(work, "good.json")
    with open(good_path, "wb") as f:
        f.write(good)
    r = subprocess.run([acceltrace, "summary", good_path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    if r.returncode != 0 or not r.stdout:
        fail("the valid trace was refused: %r" % r.stderr)
    print("ok")


if __name__ == "__main__":
    main()
