#!/usr/bin/env python3
"""check_capture.py -- the capture window through `acceltrace run`:
--capture-range=api (act_start/act_stop, twice) and --delay/--duration.
Events outside the window are absent and counted; a range opened inside
and closed outside is kept; metadata is kept whatever the window.

usage: check_capture.py ACCELTRACE SPOOL_DUMP APP WORKDIR api|timed [--expect-trace]
"""
import json
import os
import re
import shutil
import subprocess
import sys


def main():
    acceltrace, spool_dump, app, workdir, mode = sys.argv[1:6]
    expect_trace = "--expect-trace" in sys.argv[6:]
    os.makedirs(workdir, exist_ok=True)
    trace = os.path.join(workdir, "capture-%s.trace.json" % mode)
    opts = ["--capture-range=api"] if mode == "api" else ["--delay=0.2", "--duration=0.2"]
    p = subprocess.run([acceltrace, "run", "--keep-spool", "--no-summary", "-f", "-o", trace]
                       + opts + ["--", app, mode], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    spool = re.search(r"spool kept in (\S+)", p.stderr).group(1)
    out = subprocess.run([spool_dump, spool], capture_output=True, text=True, check=True)
    shutil.rmtree(spool)
    recs = [json.loads(l) for l in out.stdout.splitlines()]
    hdr, recs = recs[0], recs[1:]
    marks = sum(r["kind"] == "mark" for r in recs)
    counters = sum(r["kind"] == "counter" for r in recs)
    windows = [r["aux"] for r in recs if r["kind"] == "capture"]
    assert hdr["flags"] & 2, "the spool must say the window starts closed"
    assert marks + hdr["outside"]["mark"] == 50, (marks, hdr["outside"])
    assert counters + hdr["outside"]["counter"] == 50
    # the user's one (acceltrace's own, "acceltrace.*" such as the clock anchor, aside)
    assert sum(r["kind"] == "metadata" and not bytes.fromhex(r["name"]).startswith(b"acceltrace.")
               for r in recs) == 1
    if mode == "api":
        assert marks == 15 and windows == [1, 0, 1, 0], (marks, windows)
        assert [r["kind"] for r in recs if r["kind"] in ("push", "pop")] == ["push", "pop"]
    else:
        # 200 ms of 10 ms ticks: about 20; wide bounds, this is no timing test.
        assert 3 <= marks <= 40 and windows == [1, 0], (marks, windows)
    if expect_trace:
        with open(trace, "rb") as f:
            t = json.loads(f.read().decode("utf-8"))
        ticks = [e for e in t["traceEvents"] if e.get("name") == "tick"]
        assert len(ticks) == marks, (len(ticks), marks)
        assert t.get("scenario") == mode
        if mode == "api":
            assert any(e.get("name") == "straddling" for e in t["traceEvents"])
    print("ok: capture", mode, marks, "marks inside")


if __name__ == "__main__":
    main()
