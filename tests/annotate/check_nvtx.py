#!/usr/bin/env python3
"""check_nvtx.py -- trace an unmodified NVTX program with `acceltrace run`
and check what was captured: in the spool (via spool_dump, always) and in
the Chrome trace (when the trace builder is linked: --expect-trace).

usage: check_nvtx.py ACCELTRACE SPOOL_DUMP APP WORKDIR basic|capture [--expect-trace]
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from collections import defaultdict


def run_traced(acceltrace, app, workdir, mode):
    os.makedirs(workdir, exist_ok=True)
    trace = os.path.join(workdir, "nvtx-%s.trace.json" % mode)
    cmd = [acceltrace, "run", "--keep-spool", "--no-summary", "-f", "-o", trace]
    if mode == "capture":
        cmd.append("--capture-range=nvtx:capture-me")
    cmd += ["--", app] + (["capture"] if mode == "capture" else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, (p.returncode, p.stderr)
    m = re.search(r"spool kept in (\S+)", p.stderr)
    assert m, p.stderr
    return trace, m.group(1)


def load_spool(spool_dump, spool_dir):
    out = subprocess.run([spool_dump, spool_dir], capture_output=True, text=True, check=True)
    shutil.rmtree(spool_dir)
    header, recs = None, []
    for line in out.stdout.splitlines():
        r = json.loads(line)
        for k in ("name", "str"):
            if k in r:
                r[k] = bytes.fromhex(r[k]).decode("utf-8", "replace")
        if r["kind"] == "header":
            assert header is None, "one process, one spool"
            header = r
        else:
            recs.append(r)
    assert header and header["torn"] == 0
    return header, recs


def names(recs, kind):
    return [r["name"] for r in recs if r["kind"] == kind]


def args_after(recs, kind, name):
    """Args (ARG records) that follow the named record on its thread."""
    out, cur = {}, None
    for r in recs:
        if r["kind"] in ("push", "start", "mark"):
            cur = (r["serial"], r["kind"], r["name"])
        elif r["kind"] == "arg" and cur == (r["serial"], kind, name):
            if r["type"] == 3:
                out[r["name"]] = r["str"]
            elif r["type"] == 2:
                out[r["name"]] = struct.unpack("<d", struct.pack("<Q", r["id"]))[0]
            elif r["type"] == 1:
                out[r["name"]] = struct.unpack("<q", struct.pack("<Q", r["id"]))[0]
            else:
                out[r["name"]] = r["id"]
    return out


def check_balanced(recs):
    depth = defaultdict(int)
    for r in recs:
        if r["kind"] == "push":
            depth[r["serial"]] += 1
        elif r["kind"] == "pop":
            depth[r["serial"]] -= 1
            assert depth[r["serial"]] >= 0, "pop before push on thread %d" % r["serial"]
    assert all(v == 0 for v in depth.values()), dict(depth)


def check_basic(header, recs):
    pushes = names(recs, "push")
    for want in ("outer", "inner", "wide-\u00e9\u4e2d", "registered", "worker-range"):
        assert want in pushes, (want, pushes)
    assert pushes.index("outer") < pushes.index("inner")
    check_balanced(recs)
    assert {"mark-a", "mark-payload"} <= set(names(recs, "mark")), names(recs, "mark")
    starts = [r for r in recs if r["kind"] == "start"]
    ends = [r for r in recs if r["kind"] == "end"]
    assert [s["name"] for s in starts] == ["started"]
    assert [e["id"] for e in ends] == [starts[0]["id"]]
    a = args_after(recs, "push", "registered")
    assert a == {"domain": "mydomain", "category": "io", "payload": 2.5}, a
    assert args_after(recs, "mark", "mark-payload") == {"payload": -5}
    assert args_after(recs, "push", "outer") == {}
    named = [r for r in recs if r["kind"] == "thread" and r["aux"] == 0]
    assert [r["name"] for r in named] == ["nvtx-main"], named
    assert named[0]["id"] == header["pid"]  # main thread's tid is the pid
    worker = [r["serial"] for r in recs if r["kind"] == "push" and r["name"] == "worker-range"]
    outer = [r["serial"] for r in recs if r["kind"] == "push" and r["name"] == "outer"]
    assert worker != outer
    assert header["unbalanced_pops"] == 1


def check_capture(header, recs):
    pushes = names(recs, "push")
    assert pushes == ["capture-me", "inside", "capture-me"], pushes
    assert names(recs, "mark") == ["mark-inside", "mark-inside-2"], names(recs, "mark")
    check_balanced(recs)
    assert [r["aux"] for r in recs if r["kind"] == "capture"] == [1, 0, 1, 0]
    out = header["outside"]
    assert out["push"] == 1 and out["pop"] == 1 and out["mark"] == 2, out
    assert header["flags"] & 2, "spool says the capture started closed"


def check_trace(trace, mode):
    with open(trace, "rb") as f:
        t = json.loads(f.read().decode("utf-8"))
    evs = t["traceEvents"]
    ann = [e["name"] for e in evs if e.get("cat") == "user_annotation"]
    every = [e.get("name") for e in evs]
    if mode == "basic":
        for want in ("outer", "inner", "registered", "worker-range", "started"):
            assert want in ann, (want, ann)
        for want in ("mark-a", "mark-payload"):
            assert want in every, want
        reg = [e for e in evs if e.get("name") == "registered"][0]
        args = reg.get("args", {})
        assert (args.get("payload"), args.get("domain"), args.get("category")) == \
            (2.5, "mydomain", "io"), reg
        mp = [e for e in evs if e.get("name") == "mark-payload"][0]
        assert mp.get("args", {}).get("payload") == -5, mp
        names = [e["args"]["name"] for e in evs if e.get("name") == "thread_name"]
        assert "nvtx-main" in names, names
    else:
        assert "before" not in every and "mark-after" not in every
        assert ann.count("capture-me") == 2 and "inside" in ann


def main():
    acceltrace, spool_dump, app, workdir, mode = sys.argv[1:6]
    expect_trace = "--expect-trace" in sys.argv[6:]
    trace, spool_dir = run_traced(acceltrace, app, workdir, mode)
    header, recs = load_spool(spool_dump, spool_dir)
    (check_basic if mode == "basic" else check_capture)(header, recs)
    if expect_trace:
        check_trace(trace, mode)
    print("ok: nvtx", mode, "(trace checked)" if expect_trace else "(spool checked)")


if __name__ == "__main__":
    main()
