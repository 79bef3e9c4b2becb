#!/usr/bin/env python3
"""check_trigger.py -- traces on demand from a running `acceltrace run`.

usage: check_trigger.py ACCELTRACE TICKER plain|capture

The ticker records a range every 20 ms for 3 s. Two triggers reach the
launcher while it runs: the first through `acceltrace trigger LAUNCHER_PID`,
the second through `acceltrace trigger PROGRAM_PID` (found by the spool
directory in the program's environment).

plain: each trigger writes a trace of everything so far (t.trigger-N.json);
  the second holds more ticks than the first, each holds only ticks that
  ended before its trigger, and the final trace holds them all.
capture (--capture-range=trigger): the first trigger opens the window and
  writes nothing, the second closes it and writes t.trigger-2.json with only
  the ticks inside the window (about 1 s of them); the final trace is that
  window again.
Both: the program's output (including what it sees of SIGUSR2/SIGCHLD) is
the same as untraced (but for the tick count), and its exit status is 0.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

ACT, TICKER, MODE = sys.argv[1], sys.argv[2], sys.argv[3]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def ticks(path):
    with open(path) as f:
        doc = json.load(f)
    return doc, [e for e in doc["traceEvents"] if e.get("name") == "tick" and e.get("ph") == "X"]


def child_of(pid):
    for _ in range(200):
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
        except OSError:
            pass
        time.sleep(0.01)
    fail("the launcher started no program")


def wait_file(path, proc):
    for _ in range(1000):
        if os.path.exists(path):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    fail(f"{path} was not written (launcher stderr: {proc.stderr.read().decode()[-600:]})")


def main():
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELTRACE_")}
    untraced = subprocess.run([TICKER, "3"], env=env, capture_output=True, timeout=30)
    with tempfile.TemporaryDirectory(prefix="act-trigger-") as d:
        out = os.path.join(d, "t.json")
        cmd = [ACT, "run", "--no-summary", "-o", out]
        if MODE == "capture":
            cmd.append("--capture-range=trigger")
        p = subprocess.Popen(cmd + ["--", TICKER, "3"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        prog = child_of(p.pid)
        time.sleep(0.8)
        t1 = time.monotonic_ns()
        if subprocess.run([ACT, "trigger", str(p.pid)], env=env).returncode != 0:
            fail("acceltrace trigger LAUNCHER_PID failed")
        if MODE == "plain":
            wait_file(os.path.join(d, "t.trigger-1.json"), p)
        time.sleep(1.0)
        t2 = time.monotonic_ns()
        if subprocess.run([ACT, "trigger", str(prog)], env=env).returncode != 0:
            fail("acceltrace trigger PROGRAM_PID failed")
        wait_file(os.path.join(d, "t.trigger-2.json"), p)
        stdout, stderr = p.communicate(timeout=30)
        if p.returncode != 0:
            fail(f"traced run exited {p.returncode}: {stderr.decode()[-600:]}")
        # The tick count depends on timing; what the program sees of the
        # signals must be exactly what it sees untraced.
        if stdout.splitlines()[1:] != untraced.stdout.splitlines()[1:]:
            fail(f"program output differs:\n{untraced.stdout.decode()}---\n{stdout.decode()}")
        total = int(stdout.split()[1])
        _, final = ticks(out)
        if MODE == "plain":
            _, a = ticks(os.path.join(d, "t.trigger-1.json"))
            _, b = ticks(os.path.join(d, "t.trigger-2.json"))
            if not (0 < len(a) < len(b) < total):
                fail(f"tick counts: trigger-1 {len(a)}, trigger-2 {len(b)}, program {total}")
            if len(final) != total:
                fail(f"final trace has {len(final)} ticks, the program recorded {total}")
            print(f"ok: plain: trigger-1 {len(a)} ticks, trigger-2 {len(b)}, final {len(final)}")
        else:
            if glob.glob(os.path.join(d, "t.trigger-1*")):
                fail("the opening trigger wrote a trace")
            doc, w = ticks(os.path.join(d, "t.trigger-2.json"))
            window_s = (t2 - t1) / 1e9
            expect = window_s / 0.020
            # Ticks are 20 ms apart and take a little longer than that: the
            # window holds about window_s/0.02 of them, never the whole run.
            if not (0.5 * expect <= len(w) <= expect + 2):
                fail(f"window of {window_s:.2f} s holds {len(w)} ticks, expected ~{expect:.0f}")
            outside = doc["acceltrace"].get("records", {})
            if len(final) != len(w):
                fail(f"final trace holds {len(final)} ticks, the window {len(w)}")
            print(f"ok: capture: window {window_s:.2f} s holds {len(w)} of {total} ticks; "
                  f"records {json.dumps(outside)[:200]}")


if __name__ == "__main__":
    main()
