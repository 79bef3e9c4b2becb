#!/usr/bin/env python3
"""transparency.py -- the transparency suite (issue 21): other projects' own
OpenCL tests, run untraced, under the layer (`acceltrace run`) and under the
preload shim (`acceltrace run --preload`). Per test, the outcome must be the
same in all three modes, and every traced run's trace must parse with no
dropped records and no pending or lost completion callbacks.

Suites:
  pyopencl  pyopencl's own tests from the PyPI source distribution of the
            pyopencl version installed in the venv (downloaded once with
            `pip download --no-binary pyopencl`, cached under BUILD/transparency):
            test_wrapper.py, test_enqueue_copy.py and a part of test_array.py.
            Outcome per test id: passed / failed / skipped (pytest's JUnit XML).
  piglit    Piglit's OpenCL tests (Debian package `piglit`): every cl-api-* and
            cl-custom-* program and a fixed list of cl-program-tester tests.
            Outcome per test: exit status and the PIGLIT result lines.

usage: transparency.py --build BUILD [--suite pyopencl|piglit|all] [--keep DIR]
A suite whose parts are missing is skipped with the reason, or fails when
the environment variable CI is set. Exit 0 when every suite agrees.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET

MODES = ("untraced", "layer", "preload")
PIGLIT = "/usr/lib/x86_64-linux-gnu/piglit"
# Small, quick program tests (each a few seconds on PoCL).
PIGLIT_PROGRAMS = [
    "tests/cl/program/execute/get-local-size.cl",
    "tests/cl/program/execute/get-global-id.cl",
    "tests/cl/program/execute/reference.cl",
    "tests/cl/program/execute/reserved-words.cl",
    "tests/cl/program/execute/vector-conversion.cl",
    "tests/cl/program/execute/scalar-comparison-short.cl",
    "tests/cl/program/execute/get-global-size.cl",
    "tests/cl/program/execute/for-loop.cl",
    "tests/cl/program/execute/global-offset.cl",
    "tests/cl/program/execute/get-work-dim.cl",
]
# Piglit programs that need something PoCL on a CPU has not (EGL interop).
PIGLIT_SKIP = {"cl-interop-egl_khr_cl_event2"}
PYOPENCL_FILES = ["test_wrapper.py", "test_enqueue_copy.py", "test_array.py"]
# The part of test_array.py that runs in seconds (the whole file takes ~8 min).
PYOPENCL_ARRAY_K = ("not test_absrealimag and not test_bitwise and not divide and "
                    "not test_mix_complex and not test_comparisons and not random and "
                    "not test_div_type and not subtract and not clmath and not sort and "
                    "not scan and not reduction and not test_astype and not test_integer_pow and "
                    "not test_nan_arithmetic and not test_diff")


class Missing(Exception):
    pass


def clean_env():
    env = dict(os.environ)
    for v in ("OPENCL_LAYERS", "LD_PRELOAD", "ACCELTRACE_SPOOL_DIR"):
        env.pop(v, None)
    return env


def run_mode(cli, mode, cmd, trace, cwd, timeout):
    """Run `cmd` in `mode`; (exit status, stdout, stderr)."""
    if mode != "untraced":
        cmd = [cli, "run"] + (["--preload"] if mode == "preload" else []) + \
              ["-o", trace, "--"] + cmd
    p = subprocess.run(cmd, cwd=cwd, env=clean_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    code = p.returncode if p.returncode >= 0 else 128 - p.returncode
    return code, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def trace_problems(path):
    """What is wrong with a traced run's trace ([] when nothing)."""
    try:
        with open(path, encoding="utf-8") as f:
            t = json.load(f)
    except (OSError, ValueError) as exc:
        return ["trace %s does not parse: %s" % (path, exc)]
    meta = t.get("acceltrace", {})
    out = []
    dropped = {k: v for k, v in meta.get("dropped", {}).items() if v}
    if dropped:
        out.append("records dropped: %s" % dropped)
    cb = meta.get("callbacks", {})
    if cb.get("pending") or cb.get("lost"):
        out.append("callbacks pending %s, lost %s" % (cb.get("pending"), cb.get("lost")))
    return out


# ---- pyopencl ------------------------------------------------------------------

def pyopencl_tests(build):
    try:
        import pyopencl
    except ImportError as exc:
        raise Missing("pyopencl is not installed in %s (scripts/python-env.sh)" % sys.prefix) \
            from exc
    version = pyopencl.VERSION_TEXT
    cache = os.path.join(build, "transparency")
    os.makedirs(cache, exist_ok=True)
    sdist = os.path.join(cache, "pyopencl-%s.tar.gz" % version)
    if not os.path.exists(sdist):
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "--no-binary", "pyopencl", "pyopencl==%s" % version, "-d", cache],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        if r.returncode or not os.path.exists(sdist):
            raise Missing("cannot download the pyopencl %s sdist: %s"
                          % (version, r.stdout.decode(errors="replace")[-2000:]))
    tests = os.path.join(cache, "pyopencl-%s" % version, "test")
    if not os.path.isdir(tests):
        with tarfile.open(sdist) as tf:
            members = [m for m in tf.getmembers()
                       if m.name.startswith("pyopencl-%s/test/" % version)]
            tf.extractall(cache, members=members)  # noqa: S202 (our own download)
    return version, tests


def junit_outcomes(path):
    """{test id: passed|failed|skipped} from pytest's JUnit XML."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        tid = "%s::%s" % (case.get("classname"), case.get("name"))
        tags = {child.tag for child in case}
        if tags & {"failure", "error"}:
            out[tid] = "failed"
        elif "skipped" in tags:
            out[tid] = "skipped"
        else:
            out[tid] = "passed"
    return out


def suite_pyopencl(cli, build, work):
    version, tests = pyopencl_tests(build)
    results, problems = {}, []
    for mode in MODES:
        xml = os.path.join(work, "pyopencl-%s.xml" % mode)
        trace = os.path.join(work, "pyopencl-%s.json" % mode)
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-o", "junit_family=xunit2", "--junitxml", xml] + PYOPENCL_FILES + \
              ["-k", "not test_array.py or (%s)" % PYOPENCL_ARRAY_K]
        t0 = time.monotonic()
        code, _, err = run_mode(cli, mode, cmd, trace, tests, 1800)
        if not os.path.exists(xml):
            problems.append("%s: pytest wrote no results (exit %d): %s" % (mode, code, err[-1500:]))
            continue
        results[mode] = junit_outcomes(xml)
        counts = {k: list(results[mode].values()).count(k) for k in ("passed", "failed", "skipped")}
        print("transparency: pyopencl %s %s: exit %d, %s in %.0f s"
              % (version, mode, code, counts, time.monotonic() - t0), flush=True)
        if mode != "untraced":
            problems += ["%s: %s" % (mode, p) for p in trace_problems(trace)]
    return compare("pyopencl", results, problems)


# ---- piglit --------------------------------------------------------------------

def piglit_tests():
    binaries = sorted(glob.glob(os.path.join(PIGLIT, "bin", "cl-api-*")) +
                      glob.glob(os.path.join(PIGLIT, "bin", "cl-custom-*")))
    tester = os.path.join(PIGLIT, "bin", "cl-program-tester")
    if not binaries or not os.access(tester, os.X_OK):
        raise Missing("piglit's OpenCL tests are not installed (Debian package piglit)")
    cases = [(os.path.basename(b), [b]) for b in binaries
             if os.path.basename(b) not in PIGLIT_SKIP]
    for rel in PIGLIT_PROGRAMS:
        path = os.path.join(PIGLIT, rel)
        if not os.path.exists(path):  # our list: a missing entry is no silent skip
            raise Missing(f"piglit has no {rel} (update PIGLIT_PROGRAMS)")
        cases.append((rel, [tester, path]))
    return cases


def piglit_outcome(code, stdout):
    lines = sorted(line.strip() for line in stdout.splitlines() if line.startswith("PIGLIT:"))
    return "exit %d; %s" % (code, " | ".join(lines))


def suite_piglit(cli, build, work):
    del build
    cases = piglit_tests()
    results = {m: {} for m in MODES}
    problems = []
    for mode in MODES:
        t0 = time.monotonic()
        for name, cmd in cases:
            trace = os.path.join(work, "piglit-%s-%s.json" % (mode, name.replace("/", "_")))
            try:
                code, out, _ = run_mode(cli, mode, cmd, trace, work, 300)
            except subprocess.TimeoutExpired:
                code, out = "timeout", ""
            results[mode][name] = piglit_outcome(code, out) if code != "timeout" else "timeout"
            if mode != "untraced" and code != "timeout":
                problems += ["%s %s: %s" % (mode, name, p) for p in trace_problems(trace)]
        passed = sum('"pass"' in v for v in results[mode].values())
        print("transparency: piglit %s: %d tests, %d with a pass result, in %.0f s"
              % (mode, len(cases), passed, time.monotonic() - t0), flush=True)
    return compare("piglit", results, problems)


# ---- comparison ------------------------------------------------------------------

def compare(suite, results, problems):
    ok = not problems
    for p in problems:
        print("transparency: %s: %s" % (suite, p))
    base = results.get("untraced")
    if base is None:
        print("transparency: %s: no untraced results" % suite)
        return False
    for mode in MODES[1:]:
        got = results.get(mode)
        if got is None:
            ok = False
            continue
        diff = sorted(set(base) | set(got))
        diff = [t for t in diff if base.get(t) != got.get(t)]
        for t in diff[:40]:
            print("transparency: %s: %s differs under %s: untraced %r, traced %r"
                  % (suite, t, mode, base.get(t), got.get(t)))
        ok = ok and not diff
    print("transparency: %s: %s (%d tests)" % (suite, "identical in all modes" if ok
                                              else "DIFFERENT", len(base)))
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="the build tree (bin/acceltrace)")
    ap.add_argument("--suite", choices=["pyopencl", "piglit", "all"], default="all")
    ap.add_argument("--keep", help="keep traces and results in this directory")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    cli = os.path.join(build, "bin", "acceltrace")
    if not os.access(cli, os.X_OK):
        sys.exit("transparency: %s is not built" % cli)
    work = a.keep or tempfile.mkdtemp(prefix="act-transparency-")
    os.makedirs(work, exist_ok=True)
    suites = {"pyopencl": suite_pyopencl, "piglit": suite_piglit}
    ok = True
    for name, fn in suites.items():
        if a.suite not in ("all", name):
            continue
        try:
            ok = fn(cli, build, work) and ok
        except Missing as exc:
            print("transparency: %s: %s: %s" % (name, "FAILED" if os.environ.get("CI")
                                                 else "skipped", exc))
            ok = ok and not os.environ.get("CI")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
