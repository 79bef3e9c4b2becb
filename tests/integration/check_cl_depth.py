#!/usr/bin/env python3
"""check_cl_depth.py -- issue 16's CLIntercept-style checks on PoCL, each
in the trace and in the summary (the one `acceltrace run` prints and the
one `acceltrace summary TRACE` prints from the file).

usage: check_cl_depth.py --acceltrace PATH --program it_cl_depth {fail|clean}

fail:  a failed enqueue (args.error, error colour, sizes as given), a
       failed create (errcode_ret), a
       failed build with its log, a command failed through its wait list,
       a leaked buffer (4096 bytes) and kernel, the memory counter.
clean: an image pipeline, sub-buffer, markers and barriers with and
       without wait lists, compile + link, SVM (skipped with the reason
       when the device has none), and no leak at all.
cmdbuf: cl_khr_command_buffer on PoCL (skipped with the reason when the
       platform lacks it): each clEnqueueCommandBufferKHR a slice with its
       device op linked, the one before finalize failed, create/retain/
       release slices, one command buffer leaked.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trace_check"))
from validate_trace import load, validate  # noqa: E402

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print(f"FAIL: {what}")


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def events(doc, ph=None, name=None, prefix=None):
    out = []
    for e in doc["traceEvents"]:
        if ph and e.get("ph") != ph:
            continue
        n = e.get("name", "")
        if name and n != name:
            continue
        if prefix and not n.startswith(prefix):
            continue
        out.append(e)
    return out


def section(summary):
    """The summary's OpenCL section as text."""
    i = summary.find("OpenCL:\n")
    return summary[i:] if i >= 0 else ""


def check_summary_line(sec, pattern, what):
    check(re.search(pattern, sec, re.M), f"summary: {what} (section was:\n{sec})")


def check_fail(doc, sec):
    bad = [e for e in events(doc, "X", "clEnqueueNDRangeKernel") if "error" in e.get("args", {})]
    check(len(bad) == 1, "one failed clEnqueueNDRangeKernel with args.error")
    if bad:
        a = bad[0]["args"]
        check(a["error"] == "CL_INVALID_WORK_GROUP_SIZE", f"error name: {a['error']}")
        check(bad[0].get("cname") == "terrible", "failed call has the error colour")
        check(a.get("global work size") == [10] and a.get("local work size") == [3],
              f"sizes as given: {a}")
        check(a.get("work dim") == 1 and a.get("global work offset") is None, f"dim/offset: {a}")
        check(a.get("arg sizes") == [8], f"arg sizes: {a}")
    good = [e for e in events(doc, "X", "clEnqueueNDRangeKernel") if "error" not in e["args"]]
    check(any(e["args"].get("local work size", 0) is None and e["args"].get("global work offset")
              == [0] for e in good), "a NULL local size is null, a given offset is [0]")
    k = events(doc, "X", "inc")
    check(k and all(e["args"].get("local size", 0) is None for e in k),
          "device kernel with NULL local size: local size null")

    builds = events(doc, "X", "clBuildProgram")
    failed = [e for e in builds if e["args"].get("error") == "CL_BUILD_PROGRAM_FAILURE"]
    check(len(failed) == 1, "one failed clBuildProgram")
    if failed:
        a = failed[0]["args"]
        check("nope" in a.get("build log", ""), f"build log in the trace: {a.get('build log')!r}")
        check(a.get("options") == "-DACT_BAD=1", "build options")
    ok = [e for e in builds if "error" not in e["args"]]
    check(ok and set(ok[0]["args"].get("kernels", "").split(";")) == {"inc", "twice"},
          "successful build lists its kernels")

    dep = events(doc, "i", prefix="command failed: inc")
    check(len(dep) == 1 and dep[0].get("cname") == "terrible" and "error" in dep[0]["args"],
          f"kernel failed through its wait list is marked: {dep}")

    leaks = doc.get("opencl_leaks", {})
    check(leaks.get("buffer") == {"count": 1, "bytes": 4096}, f"leaked buffer: {leaks}")
    check(leaks.get("kernel") == {"count": 1} and leaks.get("total") == 2, f"leaks: {leaks}")
    mem = events(doc, "C", "OpenCL device memory (context 0)")
    check(mem and list(mem[-1]["args"].values()) == [4096], "device memory counter ends at 4096")

    check_summary_line(sec, r"^\s+failed calls and commands\s+5$", "5 failures")
    check_summary_line(sec, r"^\s+clCreateBuffer\s+CL_INVALID_BUFFER_SIZE\s+1$",
                       "failed create (errcode_ret) by name and error")
    check_summary_line(sec, r"^\s+clEnqueueNDRangeKernel\s+CL_INVALID_WORK_GROUP_SIZE\s+1$",
                       "failed enqueue by name and error")
    check_summary_line(sec, r"^\s+clBuildProgram\s+CL_BUILD_PROGRAM_FAILURE\s+1$", "failed build")
    check_summary_line(sec, r"^\s+command failed: inc\s+execution status -1\s+1$",
                       "failed command")
    check_summary_line(sec, r"^\s+program builds\s+2 \(\d+\.\d+ ms\)$", "build time")
    check_summary_line(sec, r"^\s+objects never released\s+2 \(buffer 1 = 4096 bytes, kernel 1\)$",
                       "leaks per type")
    # The two successful event releases are counted, not drawn.
    check(doc.get("opencl_calls_not_drawn") == {"clRetainEvent": 0, "clReleaseEvent": 2},
          f"calls not drawn: {doc.get('opencl_calls_not_drawn')}")
    check(not events(doc, "X", "clReleaseEvent"), "no slice for a successful clReleaseEvent")
    check_summary_line(sec, r"^\s+calls counted, not drawn\s+2 \(clReleaseEvent 2\)$",
                       "calls not drawn in the summary (the zero counts left out)")


def linked_ops(doc, api):
    """Device ops launched by the host slices named `api`."""
    corr = {e["args"]["correlation"] for e in events(doc, "X", api) if "correlation" in e["args"]}
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"
            and e.get("args", {}).get("correlation") in corr and e.get("name") != api]


def check_clean(doc, sec, out):
    for api in ("clEnqueueWriteImage", "clEnqueueCopyImage", "clEnqueueCopyImageToBuffer",
                "clEnqueueFillImage", "clEnqueueCopyBufferToImage", "clEnqueueMapImage",
                "clEnqueueReadImage", "clEnqueueFillBuffer", "clEnqueueMigrateMemObjects"):
        check(len(linked_ops(doc, api)) == 1, f"image pipeline: {api} has its device op")
    check(len(events(doc, "X", "clCreateImage")) == 2, "two clCreateImage slices")
    for api, op in (("clEnqueueMarkerWithWaitList", "Marker"),
                    ("clEnqueueBarrierWithWaitList", "Barrier")):
        check(len(events(doc, "X", api)) == 2, f"{api} with and without a wait list")
        check([e["name"] for e in linked_ops(doc, api)] == [op, op], f"{api}: two {op} ops")
    check(any(e["args"].get("options") == "-DACT_COMPILE=1"
              for e in events(doc, "X", "clCompileProgram")), "clCompileProgram options")
    links = events(doc, "X", "clLinkProgram")
    check(links and "inc" in links[0]["args"].get("kernels", ""), "clLinkProgram kernels")
    check(not any("error" in e.get("args", {}) for e in doc["traceEvents"]), "no call failed")

    if "svm: ok" in out:
        for api in ("clEnqueueSVMMemFill", "clEnqueueSVMMemcpy", "clEnqueueSVMMap",
                    "clEnqueueSVMUnmap", "clEnqueueSVMFree"):
            check(len(linked_ops(doc, api)) == 1, f"SVM: {api} has its device op")
        check(len(events(doc, "X", "clSVMAlloc")) == 2 and events(doc, "X", "clSVMFree"),
              "SVM alloc/free slices")
        vals = [list(e["args"].values())[0]
                for e in events(doc, "C", "OpenCL device memory (context 0)")]
        check(max(vals) >= 4096 + 8192, f"SVM allocations count as device memory: {vals}")
    else:
        print("SKIP svm: the PoCL device reports no coarse-grain SVM")
    mem = events(doc, "C", "OpenCL device memory (context 0)")
    vals = [list(e["args"].values())[0] for e in mem]
    check(vals and vals[-1] == 0, f"device memory back to 0: {vals}")
    check(1024 in vals, f"the sub-buffer's parent stays counted until both are released: {vals}")

    leaks = doc.get("opencl_leaks", {})
    check(leaks.get("total") == 0 and all(v.get("count") == 0 for k, v in leaks.items()
                                          if k != "total"), f"no leak reported: {leaks}")
    # nothing failed, nothing leaked: one line says so, no zero counters
    check_summary_line(sec, r"^\s+all clean: no call or command failed, every object released$",
                       "no leak and no failure in the summary")
    check(not re.search(r"^\s+(objects never released|failed calls and commands)\s+0$", sec,
                        re.M), f"summary: zero counters listed (section was:\n{sec})")
    nd = doc.get("opencl_calls_not_drawn", {})
    check(nd.get("clRetainEvent", 0) >= 1 and nd.get("clReleaseEvent", 0) >= 3,
          f"event retains and releases counted, not drawn: {nd}")
    check(not events(doc, "X", "clRetainEvent") and not events(doc, "X", "clReleaseEvent"),
          "no slice for a successful event retain or release")
    check_summary_line(sec, r"^\s+calls counted, not drawn\s+%d \(clRetainEvent %d, "
                       r"clReleaseEvent %d\)$" % (nd.get("clRetainEvent", 0)
                                                   + nd.get("clReleaseEvent", 0),
                                                   nd.get("clRetainEvent", 0),
                                                   nd.get("clReleaseEvent", 0)),
                       "calls not drawn in the summary")
    table = sec.split("\nacceltrace:", 1)[0]  # not run's own last line, which names the path
    check(all(len(ln) <= 80 for ln in table.splitlines()), f"summary wider than 80:\n{sec}")


def check_cmdbuf(doc, sec, out):
    if "command buffer: none" in out:
        print("SKIP cmdbuf: the platform does not report cl_khr_command_buffer")
        return
    enq = events(doc, "X", "clEnqueueCommandBufferKHR")
    bad = [e for e in enq if "error" in e["args"]]
    check(len(enq) == 3 and len(bad) == 1, f"three clEnqueueCommandBufferKHR, one failed: {enq}")
    if bad:
        check(bad[0]["args"]["error"] == "CL_INVALID_OPERATION" and
              bad[0].get("cname") == "terrible", f"enqueue before finalize: {bad[0]}")
    ops = linked_ops(doc, "clEnqueueCommandBufferKHR")
    check([e["name"] for e in ops] == ["Command buffer"] * 2,
          f"two linked device ops 'Command buffer': {ops}")
    for api, n in (("clCreateCommandBufferKHR", 2), ("clRetainCommandBufferKHR", 1),
                   ("clReleaseCommandBufferKHR", 2)):
        check(len(events(doc, "X", api)) == n, f"{n} {api} slices")
    check(not events(doc, "X", "clCommandNDRangeKernelKHR"),
          "recording calls pass through unrecorded")
    leaks = doc.get("opencl_leaks", {})
    check(leaks.get("command_buffer") == {"count": 1} and leaks.get("total") == 1,
          f"one command buffer leaked: {leaks}")
    check_summary_line(sec, r"^\s+objects never released\s+1 \(command_buffer 1\)$",
                       "leaked command buffer in the summary")
    check_summary_line(sec, r"^\s+clEnqueueCommandBufferKHR\s+CL_INVALID_OPERATION\s+1$",
                       "failed command buffer enqueue by name and error")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--acceltrace", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("mode", choices=["fail", "clean", "cmdbuf"])
    a = ap.parse_args()
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENCL_LAYERS", "LD_PRELOAD", "ACCELTRACE_SPOOL_DIR")}
    code0, out0, err0 = run([a.program, a.mode], env)
    check(code0 == 0, f"untraced run exits 0: {err0[-400:]}")
    with tempfile.TemporaryDirectory(prefix="act-cldepth-") as d:
        trace = os.path.join(d, "t.json")
        code, out, err = run([a.acceltrace, "run", "-o", trace, "--", a.program, a.mode], env)
        check(code == 0, f"traced run exits 0: {err[-800:]}")
        check(out == out0, f"stdout unchanged:\n{out0}---\n{out}")
        if not os.path.exists(trace):
            return 1
        doc = load(trace)
        problems = validate(doc, expect_device_ops=True, every_launch_linked=True)
        check(not problems, f"trace valid: {problems[:5]}")
        _, sum_out, sum_err = run([a.acceltrace, "summary", trace], env)
        for label, text in (("run", err), ("summary", sum_out + sum_err)):
            sec = section(text)
            check(sec, f"{label}: the summary has an OpenCL section")
            if a.mode == "fail":
                check_fail(doc, sec)
            elif a.mode == "cmdbuf":
                check_cmdbuf(doc, sec, out)
            else:
                check_clean(doc, sec, out)
    if FAILS:
        return 1
    print(f"ok: cl_depth {a.mode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
