#!/usr/bin/env python3
"""run_trace_test.py -- trace a program end to end with `acceltrace run`
and validate the Chrome trace (tests/trace_check/validate_trace.py).

usage: run_trace_test.py --acceltrace PATH [--preload] [--exit N] [--kernels N]
                         [--names a,b] [--ooo] [--gzip] -- PROGRAM [ARGS]

Also checks that the exit status is passed through (a signal death is
128+N) and that the program's stdout is byte-identical to an untraced run.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trace_check"))
from validate_trace import Invalid, load, summary, validate  # noqa: E402


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return (p.returncode if p.returncode >= 0 else 128 - p.returncode), p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--acceltrace", required=True)
    ap.add_argument("--preload", action="store_true")
    ap.add_argument("--exit", type=int, default=0)
    ap.add_argument("--kernels", type=int)
    ap.add_argument("--names", default="")
    ap.add_argument("--ooo", action="store_true")
    ap.add_argument("--gzip", action="store_true", help="write trace.json.gz and check it is gzip")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.program[1:] if a.program and a.program[0] == "--" else a.program
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENCL_LAYERS", "LD_PRELOAD", "ACCELTRACE_SPOOL_DIR")}
    code0, out0, err0 = run(prog, env)
    if code0 != a.exit:
        print(f"FAIL: untraced run exited {code0}, expected {a.exit}: {err0.decode()[-500:]}")
        return 1
    with tempfile.TemporaryDirectory(prefix="act-trace-") as d:
        trace = os.path.join(d, "t.trace.json" + (".gz" if a.gzip else ""))
        cmd = [a.acceltrace, "run", "--no-summary", "-o", trace]
        if a.preload:
            cmd.append("--preload")
        code, out, err = run(cmd + ["--"] + prog, env)
        if code != a.exit:
            print(f"FAIL: traced run exited {code}, expected {a.exit}: {err.decode()[-800:]}")
            return 1
        if out != out0:
            print(f"FAIL: stdout differs with tracing:\n{out0.decode()}---\n{out.decode()}")
            return 1
        # The closing line tells the program's run from what tracing adds after it.
        done = re.search(rb"acceltrace: run: trace written to (.+) in (\d+) ms \(program ran (\d+\.\d{3}) s\)\n",
                         err)
        if not done or done.group(1).decode() != trace:
            print(f"FAIL: no 'trace written to {trace} in N ms (program ran S s)' line: {err.decode()[-800:]}")
            return 1
        if a.gzip:
            with open(trace, "rb") as f:
                if f.read(2) != b"\x1f\x8b":
                    print(f"FAIL: {trace} is not gzip")
                    return 1
        try:
            doc = load(trace)
            # A program killed by a signal leaves its process truncated.
            problems = validate(doc, expect_truncated=a.exit > 128, expect_device_ops=True,
                                kernels=a.kernels,
                                names=tuple(filter(None, a.names.split(","))), ooo=a.ooo,
                                every_launch_linked=True)
        except (Invalid, OSError) as e:
            problems = [str(e)]
        if problems:
            print("FAIL: " + "\n".join(problems) + f"\nacceltrace stderr: {err.decode()[-800:]}")
            return 1
    print(f"ok: exit {code}, stdout identical, {summary(doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
