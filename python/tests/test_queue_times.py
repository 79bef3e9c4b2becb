"""Kernels carry their queued and submitted times, and the summary the
launch-to-start delay (issue 31 part 4).

vecops on PoCL: every kernel and copy of the trace has `queued` <=
`submitted` <= `ts` (us on the trace's axis); `summary --format json`
lists per device op name the queued-to-start delay, one per op, and the
table prints it without a busy column.
"""

import json
import os
import subprocess

from test_analysers import BIN, need_build

ACT = os.path.join(BIN, "acceltrace")


def test_queued_submitted_and_launch_to_start(tmp_path):
    need_build()
    out = str(tmp_path / "v.json")
    r = subprocess.run([ACT, "run", "--no-summary", "-f", "-o", out, "--",
                        os.path.join(BIN, "vecops")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        ev = json.load(f)["traceEvents"]
    dev = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy",
                                                                    "gpu_memset")]
    assert dev and all("queued" in e["args"] for e in dev)
    for e in dev:
        a = e["args"]
        assert a["queued"] <= a["submitted"] <= e["ts"] + 0.001, e
    r = subprocess.run([ACT, "summary", "--format", "json", out], capture_output=True, text=True,
                       timeout=120)
    rows = {row["name"]: row for row in json.loads(r.stdout)["launch_to_start"]}
    by_name = {}
    for e in dev:
        by_name.setdefault(e["name"], []).append(e["ts"] - e["args"]["queued"])
    assert set(rows) == set(by_name)
    for name, d in by_name.items():
        assert rows[name]["count"] == len(d)
        assert abs(rows[name]["max"] - max(d)) < 0.01
    table = subprocess.run([ACT, "summary", out], capture_output=True, text=True,
                           timeout=120).stdout
    head = table[table.index("Launch to start"):].splitlines()[:2]
    assert "busy" not in head[0] and "busy%" not in head[1], head
