#!/usr/bin/env python3
"""cts-compare.py -- the by-hand OpenCL-CTS transparency check (issue 21):
run a Khronos OpenCL-CTS test binary untraced, under the layer (`acceltrace
run`) and under the preload shim (`acceltrace run --preload`), and compare
per test the outcome (pass / fail / skip, or "incomplete" when the run ended
inside the test) and the exit status; check every traced run's trace with
tests/trace_check/validate_trace.py and for dropped records and pending or
lost completion callbacks. The CTS is not vendored: fetch and build it
yourself (docs/reliability.md says how).

usage:
  cts-compare.py run --acceltrace BUILD/bin/acceltrace --binary CTS_BIN
                     --out DIR [--timeout S] [TEST ...]
      Writes DIR/NAME-MODE.out (stdout), .err, .json (trace) and
      DIR/NAME.summary.json; prints one line per mode and every difference.
      Exit 0 when outcomes, exit statuses and traces are all as they should be
      (when the program dies of a signal untraced, each trace must mark it
      truncated and its errors must say it died).
  cts-compare.py diff A.out B.out
      Per-test difference of two saved CTS outputs (exit 0 when identical).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "trace_check"))
import validate_trace  # noqa: E402  (tests/trace_check, the one trace checker)

MODES = ("untraced", "layer", "preload")
# The CTS harness (test_common/harness/testHarness.cpp) prints "NAME..." when a
# test starts and one of these when it ends, at the end of a line (a test's own
# message without a newline may come first on that line).
ENDINGS = [
    (re.compile(r"(\w+) passed$"), "pass"),
    (re.compile(r"(\w+) FAILED$"), "fail"),
    (re.compile(r"(\w+) test not supported$"), "skip"),
    (re.compile(r"(\w+) test currently not implemented$"), "skip"),
    (re.compile(r"(\w+) skipped \(requires"), "skip"),
    (re.compile(r"Subtest (\w+) tests is not supported"), "skip"),
]
START = re.compile(r"^(\w+)\.\.\.$")


def outcomes(text, names=None):
    """{test name: pass|fail|skip|incomplete} from a CTS binary's stdout: a
    test that started and has no ending is "incomplete". `names`: the
    binary's test names (a test's own "word..." line is then no start)."""
    out = {}
    for line in text.splitlines():
        line = line.rstrip()
        m = START.match(line)
        if m and (names is None or m.group(1) in names):
            out.setdefault(m.group(1), "incomplete")
            continue
        for pat, result in ENDINGS:
            m = pat.search(line)
            if m and out.get(m.group(1)) == "incomplete":
                out[m.group(1)] = result
                break
    return out


def test_names(binary):
    """The test names a CTS binary lists after "Test names:" in --help."""
    p = subprocess.run([binary, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60)
    text = p.stdout.decode(errors="replace")
    if "Test names:" not in text:
        sys.exit("cts-compare: %s --help lists no test names" % binary)
    return {line.strip() for line in text.split("Test names:", 1)[1].splitlines()
            if line.strip()}


def counts(res):
    return {k: list(res.values()).count(k) for k in ("pass", "fail", "skip", "incomplete")}


def diff(base, got):
    """[(test, base outcome, other outcome)] where the two differ."""
    return [(t, base.get(t), got.get(t)) for t in sorted(set(base) | set(got))
            if base.get(t) != got.get(t)]


def trace_problems(path, died):
    """What is wrong with a traced run's trace ([] when nothing). `died`: the
    program died of a signal untraced too, so its process must be marked
    truncated and the errors must say so (checked, not counted a problem)."""
    try:
        doc = validate_trace.load(path)
    except (validate_trace.Invalid, OSError) as exc:
        return [str(exc)]
    problems = validate_trace.validate(doc, expect_truncated=died)
    meta = doc.get("acceltrace", {})
    dropped = {k: v for k, v in meta.get("dropped", {}).items() if v}
    if dropped:
        problems.append("records dropped: %s" % dropped)
    cb = meta.get("callbacks", {})
    if cb.get("pending") or cb.get("lost"):
        problems.append("callbacks pending %s, lost %s" % (cb.get("pending"), cb.get("lost")))
    errors = meta.get("errors", [])
    deaths = [e for e in errors if re.match(r"process \d+ died of SIG", e)]
    if died and not deaths:
        problems.append("the program died of a signal, the trace's errors do not say so")
    problems += ["acceltrace error: %s" % e for e in errors if not (died and e in deaths)]
    return problems


def run_mode(a, mode, name, died=False):
    """Run the binary in `mode` (`died`: untraced, it died of a signal); a
    dict of what happened."""
    base = os.path.join(a.out, "%s-%s" % (name, mode))
    cmd = [os.path.abspath(a.binary)] + a.tests
    if mode != "untraced":
        cmd = [a.acceltrace, "run"] + (["--preload"] if mode == "preload" else []) + \
              ["-o", base + ".json", "--"] + cmd
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENCL_LAYERS", "LD_PRELOAD", "ACCELTRACE_SPOOL_DIR")}
    if os.path.exists(base + ".json"):
        os.unlink(base + ".json")  # never read a trace from an earlier run
    t0 = time.monotonic()
    with open(base + ".out", "wb") as so, open(base + ".err", "wb") as se:
        try:
            p = subprocess.run(cmd, stdout=so, stderr=se, env=env, cwd=a.out,
                               timeout=a.timeout)
            code = p.returncode if p.returncode >= 0 else 128 - p.returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    with open(base + ".out", encoding="utf-8", errors="replace") as f:
        res = outcomes(f.read(), a.names)
    r = {"exit": code, "seconds": round(time.monotonic() - t0, 1), "results": res,
         "counts": counts(res)}
    if mode != "untraced" and code != "timeout":
        r["trace_problems"] = trace_problems(base + ".json", died)
    return r


def cmd_run(a):
    os.makedirs(a.out, exist_ok=True)
    a.out = os.path.abspath(a.out)
    a.acceltrace = os.path.abspath(a.acceltrace)
    name = os.path.basename(a.binary)
    a.names = test_names(os.path.abspath(a.binary))
    runs = {}
    for mode in MODES:
        died = runs.get("untraced", {}).get("exit") in range(129, 160)
        runs[mode] = r = run_mode(a, mode, name, died)
        print("cts-compare: %s %s: exit %s, %s in %.0f s%s"
              % (name, mode, r["exit"], r["counts"], r["seconds"],
                 "" if mode == "untraced" else ", trace problems: %d"
                 % len(r.get("trace_problems", []))), flush=True)
    ok = True
    base = runs["untraced"]
    for mode in MODES[1:]:
        r = runs[mode]
        for t, x, y in diff(base["results"], r["results"]):
            print("cts-compare: %s: %s differs under %s: untraced %s, traced %s"
                  % (name, t, mode, x, y))
            ok = False
        if r["exit"] != base["exit"]:
            print("cts-compare: %s: exit status under %s %s, untraced %s"
                  % (name, mode, r["exit"], base["exit"]))
            ok = False
        for p in r.get("trace_problems", []):
            print("cts-compare: %s: %s trace: %s" % (name, mode, p))
            ok = False
        if r["exit"] == "timeout":
            ok = False
    with open(os.path.join(a.out, name + ".summary.json"), "w", encoding="utf-8") as f:
        json.dump({"binary": a.binary, "tests": a.tests, "runs": runs}, f, indent=1)
    print("cts-compare: %s: %s (%d tests)" % (name, "identical in all modes" if ok
                                             else "DIFFERENT", len(base["results"])))
    return 0 if ok else 1


def cmd_diff(a):
    res = []
    for path in (a.a, a.b):
        with open(path, encoding="utf-8", errors="replace") as f:
            res.append(outcomes(f.read()))
    d = diff(*res)
    for t, x, y in d:
        print("%s: %s -> %s" % (t, x, y))
    print("%d tests, %s" % (len(set(res[0]) | set(res[1])),
                            "identical" if not d else "%d differ" % len(d)))
    return 1 if d else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--acceltrace", required=True)
    r.add_argument("--binary", required=True, help="a CTS test binary, e.g. test_events")
    r.add_argument("--out", required=True, help="directory for outputs and traces")
    r.add_argument("--timeout", type=float, default=600, help="seconds per mode")
    r.add_argument("tests", nargs="*", help="test names (all when none)")
    d = sub.add_parser("diff")
    d.add_argument("a")
    d.add_argument("b")
    a = ap.parse_args()
    sys.exit(cmd_run(a) if a.cmd == "run" else cmd_diff(a))


if __name__ == "__main__":
    main()
