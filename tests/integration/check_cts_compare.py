#!/usr/bin/env python3
"""check_cts_compare.py -- scripts/cts-compare.py (the by-hand OpenCL-CTS
transparency check, docs/reliability.md) must read CTS output right and
must be able to fail. Its parser on hand-written CTS output (a result on the
line of a test's own message, every kind of skip, a test the run died in, a test's own
"word..." line that is no test);
`diff` on two outputs; `run` on a stand-in CTS binary (a shell script that
runs a small OpenCL program on PoCL and prints CTS-style results) that
behaves the same traced -> exit 0, one that fails a test when traced ->
exit 1 naming the test, one that dies of SIGSEGV in a test in every mode ->
exit 0 (the traces must mark it truncated and say it died).

usage: check_cts_compare.py ACCELTRACE OPENCL_PROGRAM SEGV_PROGRAM
"""
import importlib.util
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "cts-compare.py")
spec = importlib.util.spec_from_file_location("cts_compare", SCRIPT)
cts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cts)

OUTPUT = """Initializing random seed to 1.
alpha...
alpha passed
beta...
WARNING: Events completed before they could be released.beta passed
gamma...
uint...
gamma FAILED
delta...
delta test not supported
eps...
eps skipped (requires at least OpenCL version 2.0, but the device reports 1.2)
zeta...
Subtest zeta tests is not supported in offline compiler execution path!
omega passed
theta...
"""
EXPECTED = {"alpha": "pass", "beta": "pass", "gamma": "fail", "delta": "skip",
            "eps": "skip", "zeta": "skip", "theta": "incomplete"}

FAKE = """#!/bin/sh
if [ "$1" = --help ]; then printf 'Test names:\n\talpha\n\tbeta\n'; exit 0; fi
"$CTS_FAKE_PROGRAM" > /dev/null || exit 99
echo "alpha..."; echo "alpha passed"
echo "beta..."
if [ -n "$CTS_FAKE_DIFFER" ] && [ -n "$LD_PRELOAD$OPENCL_LAYERS" ]; then
  echo "beta FAILED"; exit 1
fi
echo "beta passed"
exit 0
"""
CRASH = """#!/bin/sh
if [ "$1" = --help ]; then printf 'Test names:\n\talpha\n\tbeta\n'; exit 0; fi
echo "alpha..."; echo "alpha passed"
echo "beta..."
exec "$CTS_FAKE_PROGRAM"
"""

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(args, env=None):
    p = subprocess.run([sys.executable, SCRIPT] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=env, timeout=300)
    return p.returncode, p.stdout.decode(errors="replace")


def main():
    acceltrace, program, segv = (os.path.abspath(p) for p in sys.argv[1:4])
    got = cts.outcomes(OUTPUT, set(EXPECTED))
    check(got == EXPECTED, "outcomes: %r" % got)
    got = cts.outcomes(OUTPUT)  # without the names, "uint..." looks like a start
    check(got.get("uint") == "incomplete", "outcomes without names: %r" % got)
    with tempfile.TemporaryDirectory(prefix="act-cts-") as tmp:
        a, b = os.path.join(tmp, "a.out"), os.path.join(tmp, "b.out")
        with open(a, "w") as f:
            f.write(OUTPUT)
        with open(b, "w") as f:
            f.write(OUTPUT.replace("gamma FAILED", "gamma passed"))
        code, out = run(["diff", a, a])
        check(code == 0 and "identical" in out, "diff of equal outputs: %d %s" % (code, out))
        code, out = run(["diff", a, b])
        check(code == 1 and "gamma: fail -> pass" in out, "diff: %d %s" % (code, out))
        fake, crash = os.path.join(tmp, "fake_cts"), os.path.join(tmp, "crash_cts")
        for path, text in ((fake, FAKE), (crash, CRASH)):
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        env = dict(os.environ, CTS_FAKE_PROGRAM=program)
        base = ["run", "--acceltrace", acceltrace, "--binary", fake, "--timeout", "120"]
        code, out = run(base + ["--out", os.path.join(tmp, "same")], env)
        check(code == 0 and "identical in all modes (2 tests)" in out, "same: %d %s" % (code, out))
        env["CTS_FAKE_DIFFER"] = "1"
        code, out = run(base + ["--out", os.path.join(tmp, "differ")], env)
        check(code == 1 and "beta differs under layer: untraced pass, traced fail" in out
              and "exit status under preload 1, untraced 0" in out, "differ: %d %s" % (code, out))
        env = dict(os.environ, CTS_FAKE_PROGRAM=segv)
        code, out = run(["run", "--acceltrace", acceltrace, "--binary", crash, "--timeout", "120",
                         "--out", os.path.join(tmp, "crash")], env)
        check(code == 0 and "preload: exit 139" in out and "identical in all modes" in out,
              "crash: %d %s" % (code, out))
    for f in failures:
        print("FAIL:", f)
    print("check_cts_compare: %s" % ("ok" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
