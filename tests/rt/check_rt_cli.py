#!/usr/bin/env python3
"""check_rt_cli.py -- `acceltrace rt` against the fake vendor libraries.

usage: check_rt_cli.py ACCELTRACE FAKE_CUDART ASCEND_HOME

With the fakes, cuda and ascend each report their two fake devices with
the fake's memory figures and cuda is the active backend; without them
both are reported unavailable with code and reason, and OpenCL (PoCL)
is active with its total memory and free unknown (null). The JSON is
parsed with Python's json module; options are checked too.
"""
import json
import os
import subprocess
import sys

GIB = 1024 ** 3


def run(tool, env_extra, *args):
    env = {k: v for k, v in os.environ.items()
           if k not in ("ACCELTRACE_CUDART_PATH", "ACCELTRACE_ASCENDCL_PATH", "ASCEND_HOME_PATH")}
    env.update(env_extra)
    return subprocess.run([tool, "rt", *args], env=env, capture_output=True, text=True, timeout=60)


def by_name(report):
    names = [b["name"] for b in report["backends"]]
    assert names == ["cuda", "ascend", "opencl"], names
    return {b["name"]: b for b in report["backends"]}


def check_fake_devices(b):
    assert b["available"] is True, b
    assert b["device_count"] == 2, b
    mem = [(d["index"], d["free_bytes"], d["total_bytes"]) for d in b["devices"]]
    assert mem == [(0, 1 * GIB, 2 * GIB), (1, 2 * GIB, 3 * GIB)], mem


def check_opencl(b):
    assert b["available"] is True, b
    assert b["device_count"] >= 1, b
    d0 = b["devices"][0]
    assert d0["index"] == 0 and d0["total_bytes"] > 0, d0
    assert d0["free_bytes"] is None, d0  # OpenCL cannot tell free memory


def main():
    tool, cudart, ascend_home = sys.argv[1:4]

    p = run(tool, {"ACCELTRACE_CUDART_PATH": cudart, "ASCEND_HOME_PATH": ascend_home}, "--json")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    b = by_name(report)
    check_fake_devices(b["cuda"])
    check_fake_devices(b["ascend"])
    check_opencl(b["opencl"])
    assert report["active"] == "cuda", report["active"]

    nolib = "/nonexistent/acceltrace-test"
    p = run(tool, {"ACCELTRACE_CUDART_PATH": nolib + "/libcudart.so",
                   "ACCELTRACE_ASCENDCL_PATH": nolib + "/libascendcl.so"}, "--json")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    b = by_name(report)
    for name in ("cuda", "ascend"):
        assert b[name]["available"] is False, b[name]
        assert b[name]["code"] == -1006, b[name]  # ACT_RT_ERROR_NO_LIBRARY
        assert b[name]["error"] == "runtime library not found", b[name]
        assert nolib in b[name]["detail"], b[name]
    check_opencl(b["opencl"])
    assert report["active"] == "opencl", report["active"]

    p = run(tool, {"ACCELTRACE_CUDART_PATH": cudart, "ASCEND_HOME_PATH": ascend_home})
    assert p.returncode == 0 and "active: cuda" in p.stdout, p.stdout
    assert "device 1: total 3.0 GiB, free 2.0 GiB" in p.stdout, p.stdout
    assert "free unknown" in p.stdout, p.stdout

    p = run(tool, {}, "--help")
    assert p.returncode == 0 and "usage: acceltrace rt" in p.stdout, p.stdout
    p = run(tool, {}, "--bogus")
    assert p.returncode == 2 and "unknown option '--bogus'" in p.stderr, p.stderr
    print("check_rt_cli: ok")


if __name__ == "__main__":
    main()
