#!/usr/bin/env python3
"""run_spool_test.py -- run a program under the OpenCL source (layer or
preload mode) with a private spool directory, and check what the source
recorded straight from the spool (spool_read.py over spool_dump), independently of the
timeline builder and the writer.

usage: run_spool_test.py --mode layer|preload|none --lib PATH [checks] -- PROGRAM [ARGS]

Always checked: the exit status is the expected one (a signal death counts
as 128+N); stdout is byte-identical to an untraced run; the spool parses;
nothing was dropped; every device op has a correlation id shared with
exactly one host API record, and every launching API record has its device
op unless its callback is still counted as pending (a crash); timestamps
are ordered QUEUED <= SUBMIT <= START <= END and START >= the host
enqueue's start; every op's queue and device were recorded; a clean exit
leaves a sealed spool with no pending or lost callbacks.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spool_read import OPF_NO_TIMES, OPF_OOO, Spool  # noqa: E402


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    code = p.returncode if p.returncode >= 0 else 128 - p.returncode
    return code, p.stdout, p.stderr


def sanitizer_runtime(lib):
    """The ASan runtime a sanitized build of `lib` needs loaded first (an
    LD_PRELOAD'ed library comes before the program's own libasan otherwise)."""
    try:
        out = subprocess.run(["ldd", lib], stdout=subprocess.PIPE, text=True).stdout
    except OSError:
        return None
    for line in out.splitlines():
        if "libasan.so" in line and "=>" in line:
            return line.split("=>")[1].split()[0]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["layer", "preload", "none"], required=True)
    ap.add_argument("--lib", required=True, help="libacceltrace.so or libacceltrace_preload.so")
    ap.add_argument("--exit", type=int, default=0, help="expected exit status")
    ap.add_argument("--kernels", type=int, help="expected number of kernel device ops")
    ap.add_argument("--no-spool", action="store_true", help="expect no spool at all")
    ap.add_argument("--no-tool", action="store_true",
                    help="inject the library but attach no tool (no spool dir)")
    ap.add_argument("--names", default="", help="comma list of kernel names that must appear")
    ap.add_argument("--apis", default="", help="comma list of API names that must appear")
    ap.add_argument("--ops", default="", help="comma list of op kinds that must appear")
    ap.add_argument("--ooo", action="store_true", help="expect out-of-order ops")
    ap.add_argument("--clock", default="", help="expected clock method")
    ap.add_argument("--threads", type=int, default=0, help="min distinct launching threads")
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for the traced run")
    ap.add_argument("--absent-apis", default="", help="comma list of APIs that must not appear")
    ap.add_argument("--lost", type=int, default=0, help="expected lost completion callbacks")
    ap.add_argument("--source-error", default="",
                    help="the one source error line expected (a substring of it)")
    ap.add_argument("--outside-ops", type=int, default=0,
                    help="device ops expected to be counted outside the capture window")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.program[1:] if a.program and a.program[0] == "--" else a.program
    if not prog:
        fail("no program given")

    base = dict(os.environ)
    for v in ("OPENCL_LAYERS", "LD_PRELOAD", "ACCELTRACE_SPOOL_DIR"):
        base.pop(v, None)
    code0, out0, err0 = run(prog, base)
    if code0 != a.exit:
        fail(f"untraced run exited {code0}, expected {a.exit}; stderr: {err0.decode()[-800:]}")

    with tempfile.TemporaryDirectory(prefix="act-spool-") as spool:
        env = dict(base)
        if not a.no_tool:
            env["ACCELTRACE_SPOOL_DIR"] = spool
        for kv in a.env:
            k, _, v = kv.partition("=")
            env[k] = v
        if a.mode == "layer":
            env["OPENCL_LAYERS"] = a.lib
        elif a.mode == "preload":
            rt = sanitizer_runtime(a.lib)
            env["LD_PRELOAD"] = f"{rt}:{a.lib}" if rt else a.lib
        code, out, err = run(prog, env)
        if code != a.exit:
            fail(f"traced run exited {code}, expected {a.exit}; stderr: {err.decode()[-800:]}")
        if out != out0:
            fail(f"stdout differs with tracing:\n--- untraced\n{out0.decode()}--- traced\n"
                 f"{out.decode()}")
        files = sorted(f for f in os.listdir(spool) if f.endswith(".acts"))
        if a.no_spool or a.no_tool:
            if files:
                fail(f"expected no spool, found {files}")
            print(f"ok: exit {code}, stdout identical, no spool")
            return
        spools = [Spool(os.path.join(spool, f)) for f in files]
        # The program's own spool (PoCL's linker child processes record none).
        spools = [s for s in spools if s.ops or s.apis or s.errors]
        if len(spools) != 1:
            fail(f"expected one spool with records, found {len(spools)} of {files}")
        check(spools[0], a, code)


def check(sp, a, code):
    crashed = code >= 128
    if sum(sp.dropped):
        fail(f"records dropped: {sp.dropped}")
    if not crashed:
        if not sp.sealed:
            fail("spool not sealed after a normal exit")
        if sp.callbacks_lost != a.lost or sp.callbacks_pending != a.lost:
            fail(f"callbacks pending {sp.callbacks_pending}, lost {sp.callbacks_lost}, "
                 f"expected {a.lost} of each")
    lost_lines = [e for e in sp.errors if "did not arrive" in e]
    said = [e for e in sp.errors if a.source_error and a.source_error in e]
    if a.source_error and len(said) != 1:
        fail(f"expected one source error with {a.source_error!r}, got {sp.errors}")
    if (len(lost_lines) != (1 if a.lost else 0) or
            len(sp.errors) != len(lost_lines) + len(said)):
        fail(f"source errors recorded: {sp.errors}")
    by_corr = {}
    for api in sp.apis:
        if api["corr"]:
            if api["corr"] in by_corr:
                fail(f"correlation id {api['corr']} on two API records")
            by_corr[api["corr"]] = api
    seen = set()
    queues = {q["queue"] for q in sp.queues}
    devices = {d["device"]: d for d in sp.devices}
    for op in sp.ops:
        c = op["corr"]
        if c not in by_corr:
            fail(f"device op {op['name']} has no launching API record (corr {c})")
        if c in seen:
            fail(f"two device ops share correlation id {c}")
        seen.add(c)
        # A command that failed on the device has no times: it is recorded
        # with its (negative) status; any other op must have them.
        if op["flags"] & OPF_NO_TIMES:
            if op["status"] >= 0:
                fail(f"device op {op['name']} has no timestamps (status {op['status']})")
            continue
        if not (op["queued"] <= op["submit"] <= op["start"] <= op["end"]):
            fail(f"unordered timestamps on {op['name']}: {op}")
        host = by_corr[c]
        if op["start"] < host["start"]:
            fail(f"{op['name']} starts {host['start'] - op['start']} ns before its enqueue")
        if op["queue"] not in queues:
            fail(f"queue {op['queue']:#x} of {op['name']} was never recorded")
        if op["device"] not in devices or devices[op["device"]]["vendor"] != "OpenCL":
            fail(f"device {op['device']:#x} not recorded as an OpenCL device")
        if op["op"] == "KERNEL" and not op["name"]:
            fail(f"kernel without a name: {op}")
    missing = len(by_corr) - len(seen)
    if missing != (sp.callbacks_pending if crashed else a.lost):
        fail(f"{missing} launched commands have no device op "
             f"(pending {sp.callbacks_pending}, lost {sp.callbacks_lost})")
    if sp.outside_window[11] != a.outside_ops:  # ACT_REC_DEVICE_OP
        fail(f"{sp.outside_window[11]} device ops counted outside the window, "
             f"expected {a.outside_ops}")
    kernels = [o for o in sp.ops if o["op"] == "KERNEL"]
    if a.kernels is not None and len(kernels) != a.kernels:
        fail(f"{len(kernels)} kernel ops, expected {a.kernels}")
    for n in filter(None, a.names.split(",")):
        if n not in {k["name"] for k in kernels}:
            fail(f"kernel {n} not recorded (have {sorted({k['name'] for k in kernels})})")
    for n in filter(None, a.apis.split(",")):
        if n not in {x["name"] for x in sp.apis}:
            fail(f"API {n} not recorded (have {sorted({x['name'] for x in sp.apis})})")
    for n in filter(None, a.absent_apis.split(",")):
        if n in {x["name"] for x in sp.apis}:
            fail(f"API {n} recorded although its hook group is off")
    for n in filter(None, a.ops.split(",")):
        if n not in {o["op"] for o in sp.ops}:
            fail(f"no {n} device op (have {sorted({o['op'] for o in sp.ops})})")
    if a.ooo and not any(o["flags"] & OPF_OOO for o in sp.ops):
        fail("no op flagged out-of-order")
    if a.clock:
        methods = {c["method"] for c in sp.clocks}
        if methods != {a.clock}:
            fail(f"clock methods {methods}, expected {a.clock}")
    if not sp.clocks and sp.ops:
        fail("no clock mapping recorded")
    launch_threads = {by_corr[o["corr"]]["thread"] for o in sp.ops}
    if len(launch_threads) < a.threads:
        fail(f"launches from {len(launch_threads)} threads, expected >= {a.threads}")
    print(f"ok: exit {code}, stdout identical, {len(sp.apis)} API records, {len(sp.ops)} device "
          f"ops ({len(kernels)} kernels), pending {sp.callbacks_pending}, clock "
          f"{[c['method'] for c in sp.clocks]}")


if __name__ == "__main__":
    main()
