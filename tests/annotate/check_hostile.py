#!/usr/bin/env python3
"""check_hostile.py -- hostile strings (quotes, backslashes, every control
character, invalid UTF-8, U+2028/9, 64 KiB, JSON-looking) as range names,
marks, counter names, metadata keys and values, and through --metadata.
The spool keeps every byte; the trace parses with Python's json, every
valid-UTF-8 string round-trips exactly, invalid bytes become U+FFFD.

usage: check_hostile.py ACCELTRACE SPOOL_DUMP APP WORKDIR [--expect-trace]
"""
import json
import os
import re
import shutil
import subprocess
import sys

VALID = [
    'quote" and \'single\'',
    "back\\slash \\\\ \\u0041 \\\"",
    "".join(chr(c) for c in range(1, 32)) + "\x7f",
    "line\u2028sep\u2029para",
    '{"traceEvents": [], "ph": "X"}',
    '","ph":"i","x":"',
    "emoji \U0001F600 CJK \u4e2d",
    # exactly 64 KiB of UTF-8 (the 3-byte U+2028 included)
    "ab\"\\\n\x01\u2028" * 7281 + "ab\"\\\n\x01x",
]
INVALID = [b"bad \xff\xfe utf8 \xc0\x80 \xed\xa0\x80 \xe2\x82"]


def main():
    acceltrace, spool_dump, app, workdir = sys.argv[1:5]
    expect_trace = "--expect-trace" in sys.argv[5:]
    os.makedirs(workdir, exist_ok=True)
    raw = [s.encode() for s in VALID] + INVALID
    inp = os.path.join(workdir, "hostile.bin")
    with open(inp, "wb") as f:
        f.write(b"\0".join(raw))
    trace = os.path.join(workdir, "hostile.trace.json")
    meta_key, meta_val = 'k"\\\x01\u2028', 'v"\\\x1f{"x":1}\u2029'
    p = subprocess.run([acceltrace, "run", "--keep-spool", "--no-summary", "-f", "-o", trace,
                        "--metadata", meta_key + "=" + meta_val, "--", app, inp],
                       capture_output=True, timeout=60)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, (p.returncode, err)
    spool = re.search(r"spool kept in (\S+)", err).group(1)
    out = subprocess.run([spool_dump, spool], capture_output=True, check=True)
    shutil.rmtree(spool)
    recs = [json.loads(l) for l in out.stdout.decode().splitlines()][1:]
    # acceltrace's own records (the clock anchor: "acceltrace.*") aside
    recs = [r for r in recs
            if r["kind"] != "metadata" or not bytes.fromhex(r["name"]).startswith(b"acceltrace.")]
    for kind in ("push", "mark", "counter", "metadata"):
        got = [bytes.fromhex(r["name"]) for r in recs if r["kind"] == kind]
        if kind == "metadata":
            got = got[:-1]  # the JSON member
        assert got == raw, (kind, [g[:40] for g in got])
    vals = [bytes.fromhex(r["str"]) for r in recs if r["kind"] == "metadata"]
    assert vals[:-1] == raw

    if expect_trace:
        with open(trace, "rb") as f:
            t = json.loads(f.read().decode("utf-8"))  # strict: fails on bad escapes
        evs = t["traceEvents"]
        fixed = VALID + [b.decode("utf-8", "replace") for b in INVALID]
        ann = [e["name"] for e in evs if e.get("cat") == "user_annotation" and e.get("ph") == "X"]
        marks = [e["name"] for e in evs if e.get("ph") == "i"]
        counters = {e["name"] for e in evs if e.get("ph") == "C"}
        for s in fixed:
            assert s in ann and s in marks and s in counters, repr(s[:40])
            assert t.get(s) == s, repr(s[:40])
        assert t.get(meta_key) == meta_val
        assert t.get("json-member") == {'a"b': ["\u2028", "\\", 1500.0]}
        assert t["acceltrace"]["invalid_utf8"] > 0
    print("ok: hostile strings", "(trace checked)" if expect_trace else "(spool checked)")


if __name__ == "__main__":
    main()
