#!/usr/bin/env python3
"""check_run_vendor.py -- `acceltrace run --cuda` / `--ascend` end to end on
a program that knows nothing of acceltrace, against the fake vendor
libraries (selected by ACCELTRACE_CUPTI_LIB / ACCELTRACE_MSPTI_LIB, set by
CTest). The launcher alone must get the vendor source started in the child:
for CUDA through CUDA_INJECTION64_PATH (the fake cuInit loads it), for
Ascend through LD_PRELOAD and the library's launcher-only autostart.

Checks: the program's exit status is passed through; the trace passes the
integration validator with device ops; exactly N kernels of the expected
name sit on "stream N" lanes of a device process; each is linked (ac2g) to
its launch slice; no error lines in the trace metadata. A negative case
runs the same program without the vendor option, and with the vendor's
hook group excluded (--hooks=all,-activity.X), and expects no kernels.

For CUDA, given LIBACCELTRACE, also: the library preloaded by hand with
ACCELTRACE_SOURCES=cuda starts CUPTI at load (no CUDA_INJECTION64_PATH).

usage: check_run_vendor.py ACCELTRACE APP cuda|ascend WORKDIR KERNELS [LIBACCELTRACE]
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trace_check"))
import validate_trace  # noqa: E402

KERNEL = {"cuda": "injected_kernel", "ascend": "preloaded_kernel"}


def run(acceltrace, app, mode, workdir, vendor_option, extra=(), env=None, tag=""):
    os.makedirs(workdir, exist_ok=True)
    out = os.path.join(workdir, f"run-{mode}-{int(vendor_option)}-{len(extra)}{tag}.trace.json")
    cmd = [acceltrace, "run", "--no-summary", "-f", "-o", out] + list(extra)
    if vendor_option:
        cmd.append("--" + mode)
    cmd += ["--", app]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {p.returncode}\n{p.stderr}")
    with open(out, encoding="utf-8") as f:
        return json.load(f), p.stderr


def kernels_of(trace):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]


def main():
    acceltrace, app, mode, workdir, expected = sys.argv[1:6]
    lib = sys.argv[6] if len(sys.argv) > 6 else None
    expected = int(expected)
    fails = []
    trace, err = run(acceltrace, app, mode, workdir, True)
    fails += validate_trace.validate(trace, expect_device_ops=True)
    ev = trace["traceEvents"]
    kernels = kernels_of(trace)
    named = [k for k in kernels if k["name"] == KERNEL[mode]]
    if len(named) != expected or len(kernels) != expected:
        fails.append(f"{len(named)} '{KERNEL[mode]}' kernels of {len(kernels)}, expected {expected}")
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
               if e.get("ph") == "M" and e["name"] == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e["name"] == "process_name"}
    vendor = {"cuda": "CUDA GPU 0 (device 0)", "ascend": "Ascend NPU 0 (device 0)"}[mode]
    for k in named:
        if not threads.get((k["pid"], k["tid"]), "").startswith("stream "):
            fails.append(f"kernel on lane {threads.get((k['pid'], k['tid']))!r}, not a stream")
            break
        if procs.get(k["pid"], "") != vendor:
            fails.append(f"kernel in process {procs.get(k['pid'])!r}, not a {vendor} process")
            break
    finishes = {e["id"] for e in ev if e.get("cat") == "ac2g" and e["ph"] == "f"}
    linked = sum(1 for k in named if k.get("args", {}).get("correlation") in finishes)
    if linked != len(named):
        fails.append(f"only {linked} of {len(named)} kernels have a flow from their launch")
    errors = trace.get("acceltrace", {}).get("errors", [])
    if errors:
        fails.append(f"errors in the trace metadata: {errors}")

    # Without the option the launcher must not start the vendor source.
    plain, _ = run(acceltrace, app, mode, workdir, False)
    if kernels_of(plain):
        fails.append(f"without --{mode}: {len(kernels_of(plain))} kernels recorded")

    # The start is a hook group: ACCELTRACE_HOOKS can leave it out.
    group = {"cuda": "activity.cupti", "ascend": "activity.mspti"}[mode]
    excluded, _ = run(acceltrace, app, mode, workdir, True, [f"--hooks=all,-{group}"])
    if kernels_of(excluded):
        fails.append(f"--hooks=all,-{group}: {len(kernels_of(excluded))} kernels recorded")

    if mode == "cuda" and lib:
        # ACCELTRACE_SOURCES=cuda with the library preloaded by hand: the
        # load-time start-up starts CUPTI without the driver's injection.
        env = dict(os.environ, LD_PRELOAD=lib, ACCELTRACE_SOURCES="cuda")
        auto, _ = run(acceltrace, app, mode, workdir, False, env=env, tag="-auto")
        n = sum(1 for k in kernels_of(auto) if k["name"] == KERNEL[mode])
        if n != expected:
            fails.append(f"ACCELTRACE_SOURCES=cuda, preloaded: {n} kernels, expected {expected}")

    if mode == "ascend":
        # Nothing names a libmspti: refused before the program starts.
        env = {k: v for k, v in os.environ.items()
               if k not in ("ACCELTRACE_MSPTI_LIB", "ASCEND_HOME_PATH")}
        out = os.path.join(workdir, "run-ascend-nolib.trace.json")
        p = subprocess.run([acceltrace, "run", "--no-summary", "-f", "-o", out, "--ascend", "--",
                            app], env=env, capture_output=True, text=True, timeout=60)
        if p.returncode != 2 or "ASCEND_HOME_PATH" not in p.stderr or "preload_app" in p.stdout:
            fails.append(f"--ascend without a libmspti: exit {p.returncode}, {p.stderr!r}")

    for f in fails:
        print("FAIL:", f)
    if fails:
        print(err)
    else:
        print(f"run --{mode}: {len(named)} kernels, all linked; trace valid")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
