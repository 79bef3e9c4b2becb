#!/usr/bin/env python3
"""check_session_sources.py -- in-process sessions start the vendor sources
of the runtimes a program already uses, and only those (session_app.c).

For each mode, run session_app and check its trace: the integration
validator passes; exactly 5 "session_kernel" kernels (0 in mode none) on a
device lane, each linked by a flow from its launch and, through the launch,
to the range "session_range"; no error lines in the trace metadata.

usage: check_session_sources.py SESSION_APP FAKE_LIBMSPTI [FAKE_LIBCUPTI]
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trace_check"))
import validate_trace  # noqa: E402


def run(app, mode, env_extra, args, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELTRACE_")}
    env.update(env_extra, FAKE_MSPTI_DELAY_MS="10")
    out = os.path.join(tmp, f"{mode}.trace.json")
    p = subprocess.run([app, mode, out] + args, env=env, capture_output=True, text=True,
                       timeout=60)
    if p.returncode == 3 and mode == "cudart_loaded":
        print(f"{mode}: no libcudart on this machine, nothing to probe")
        return "absent", []
    if p.returncode != 0:
        return None, [f"{mode}: session_app exited {p.returncode}: {p.stderr.strip()}"]
    if p.stderr.strip() and mode in ("none", "rt_then_session", "cudart_loaded"):
        return None, [f"{mode}: the session printed on stderr: {p.stderr.strip()}"]
    with open(out, encoding="utf-8") as f:
        return json.load(f), []


def check(trace, mode, expected):
    fails = [f"{mode}: {p}" for p in validate_trace.validate(trace, expect_device_ops=expected > 0)]
    ev = trace["traceEvents"]
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    if len(kernels) != expected or any(k["name"] != "session_kernel" for k in kernels):
        fails.append(f"{mode}: {len(kernels)} kernels, expected {expected} 'session_kernel'")
    ranges = {e["args"]["External id"] for e in ev if e.get("cat") == "user_annotation"
              and e["name"] == "session_range" and "External id" in e.get("args", {})}
    finishes = {e["id"] for e in ev if e.get("cat") == "ac2g" and e["ph"] == "f"}
    for k in kernels:
        a = k.get("args", {})
        if a.get("correlation") not in finishes or a.get("External id") not in ranges:
            fails.append(f"{mode}: kernel not linked to its launch and range: {a}")
            break
    errors = trace.get("acceltrace", {}).get("errors", [])
    if errors:
        fails.append(f"{mode}: errors in the trace metadata: {errors}")
    return fails


def main():
    app, mspti = sys.argv[1], sys.argv[2]
    cupti = sys.argv[3] if len(sys.argv) > 3 else None
    cases = [("mspti_override", {"ACCELTRACE_MSPTI_LIB": mspti}, [], 5),
             ("mspti_loaded", {}, [mspti], 5),
             ("none", {}, [], 0),
             ("rt_then_session", {}, [], 0),
             ("cudart_loaded", {}, [], 0)]
    if cupti:
        cases.append(("cupti_override", {"ACCELTRACE_CUPTI_LIB": cupti}, [], 5))
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        for mode, env, args, expected in cases:
            trace, f = run(app, mode, env, args, tmp)
            if trace == "absent":
                continue
            if mode == "cudart_loaded" and not f:
                # A GPU may be there (kernels none, errors none) or not (a
                # cupti error line in the trace); either way stderr was quiet.
                f = [f"{mode}: {p}" for p in validate_trace.validate(trace, expect_device_ops=False)]
            else:
                f = f or check(trace, mode, expected)
            print(f"{mode}: {'FAIL' if f else 'ok'}")
            fails += f
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
