#!/usr/bin/env python3
"""check_ocl_ranges.py -- PoCL kernels launched inside nested ranges.

nested: every kernel carries the External id of the innermost range open
        at its launch, and `--summary-by-range` attributes the device time
        of each kernel to that range.
window: (--capture-range=api) a kernel launched inside the window and
        finishing after act_stop() is present; kernels launched outside are
        absent and counted.

usage: check_ocl_ranges.py ACCELTRACE APP WORKDIR nested|window
"""
import json
import os
import re
import subprocess
import sys


def run(acceltrace, app, workdir, mode):
    os.makedirs(workdir, exist_ok=True)
    trace = os.path.join(workdir, "ocl-%s.trace.json" % mode)
    opts = ["--summary-by-range"] if mode == "nested" else ["--capture-range=api"]
    p = subprocess.run([acceltrace, "run", "-f", "-o", trace] + opts + ["--", app, mode],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    with open(trace, "rb") as f:
        return json.loads(f.read().decode("utf-8")), p.stderr


def by_range_table(stderr):
    """name -> (count, total us) from the 'Device time by launching range' table."""
    rows, inside = {}, False
    for line in stderr.splitlines():
        if line.startswith("Device time by launching range"):
            inside = True
            continue
        if inside:
            m = re.match(r"^  (.+?)\s+([\d,]+)\s+([\d.,]+)\s+[\d.,]+\s+[\d.,]+\s+[\d.,]+\s+"
                         r"[\d.,]+%$", line)  # figures grouped by thousands
            if not m:
                if line.startswith("  name") or not line.startswith("  "):
                    if not line.startswith("  name"):
                        inside = False
                    continue
                continue
            rows[m.group(1).strip()] = (int(m.group(2).replace(",", "")),
                                        float(m.group(3).replace(",", "")))
    return rows


def check_nested(t, stderr):
    evs = t["traceEvents"]
    ranges = {e["args"]["External id"]: e for e in evs
              if e.get("cat") == "user_annotation" and e.get("ph") == "X"}
    kernels = [e for e in evs if e.get("cat") == "kernel"]
    by_name = {}
    for k in kernels:
        by_name.setdefault(k["name"], []).append(k)
    assert len(by_name.get("k_outer", [])) == 3 and len(by_name.get("k_inner", [])) == 3, by_name.keys()
    expect = {"k_outer": "outer", "k_inner": "inner"}
    for kname, rname in expect.items():
        for k in by_name[kname]:
            ext = k["args"].get("External id")
            assert ext in ranges, (kname, ext)
            assert ranges[ext]["name"] == rname, (kname, ranges[ext]["name"])
    ids = {k["args"]["External id"] for k in by_name["k_inner"]}
    assert len(ids) == 3, "each inner range has its own id"
    assert "External id" not in by_name["k_free"][0].get("args", {})
    rows = by_range_table(stderr)
    for kname, rname in expect.items():
        total = sum(k["dur"] for k in by_name[kname])
        count, got = rows[rname]
        assert count == 3, rows
        assert abs(got - total) <= 0.002 * 3 + 1e-6 * total, (rname, got, total)
    # k_free and the initial fill were launched outside every range.
    device = [e for e in evs if e.get("ph") == "X" and e.get("cat") in
              ("kernel", "gpu_memcpy", "gpu_memset")]
    free = [e for e in device if "External id" not in e.get("args", {})]
    assert "k_free" in [e["name"] for e in free]
    assert rows["(no range)"][0] == len(free), (rows, [e["name"] for e in free])


def check_window(t):
    names = [e.get("name") for e in t["traceEvents"] if e.get("cat") == "kernel"]
    assert names == ["k_late"], names
    ann = [e.get("name") for e in t["traceEvents"] if e.get("cat") == "user_annotation"]
    assert ann == ["win"], ann
    late = [e for e in t["traceEvents"] if e.get("name") == "k_late"][0]
    win = [e for e in t["traceEvents"] if e.get("name") == "win"][0]
    assert late["args"]["External id"] == win["args"]["External id"]
    meta = json.dumps(t.get("acceltrace", {}))
    assert "outside" in meta, "outside-window counts are in the metadata"


def main():
    acceltrace, app, workdir, mode = sys.argv[1:5]
    t, stderr = run(acceltrace, app, workdir, mode)
    check_nested(t, stderr) if mode == "nested" else check_window(t)
    print("ok: opencl ranges", mode)


if __name__ == "__main__":
    main()
