#!/usr/bin/env python3
"""check_init.py -- start-up behaviour seen from outside the process.

  no_device_call  loading libacceltrace (preloaded, and named in
                  OPENCL_LAYERS) into a program that never uses OpenCL
                  makes no call into the OpenCL driver (a fake ICD logs
                  every load and call) and prints nothing, attached or not;
                  a control run that does use OpenCL proves the fake ICD
                  is wired in.
  conflict        two copies of libacceltrace in one process (two paths,
                  or preload + dlopen): one records, the other stands down
                  with exactly one line on stderr; one spool, sealed.
  secure          a set-uid program ignores every ACCELTRACE_* variable.
  run_config      every ACCELTRACE_* variable, as an environment variable
                  and as its `acceltrace run` option: invalid, empty and
                  out-of-range values make run exit 2 with
                  "Invalid value for ACCELTRACE_X: 'v'. Allowed: ..." before
                  the program starts; valid and boundary values start it.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

SPOOL_MAGIC = 0x4C4F4F5053544341  # "ACTSPOOL", record.h
SPOOL_F_SEALED = 0x1
# act_spool_header: magic u64, version u32, header_size u32, capacity u64,
# chunk_size u32, chunk_count u32, pid u32, ppid u32, clock_kind u32, flags u32
HEADER = struct.Struct("<QIIQIIIIII")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ACCELTRACE_") and k not in ("OPENCL_LAYERS", "LD_PRELOAD")}
    env.update(extra)
    return env


def spools(d):
    """(total, sealed) spool files in directory d."""
    total = sealed = 0
    for name in os.listdir(d):
        total += 1
        with open(os.path.join(d, name), "rb") as f:
            head = f.read(HEADER.size)
        if len(head) == HEADER.size:
            fields = HEADER.unpack(head)
            if fields[0] == SPOOL_MAGIC and fields[9] & SPOOL_F_SEALED:
                sealed += 1
    return total, sealed


def no_device_call(a):
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "icd.log")
        base = dict(OCL_ICD_VENDORS=a.icd_dir, FAKE_ICD_LOG=log, OPENCL_LAYERS=a.lib)
        for mode in ("query", "annot"):
            for attached in (False, True):
                spool = tempfile.mkdtemp(dir=tmp)
                env = clean_env(LD_PRELOAD=a.lib, **base)
                if attached:
                    env["ACCELTRACE_SPOOL_DIR"] = spool
                p = subprocess.run([a.prog_nocl, mode], env=env, capture_output=True, text=True)
                what = f"mode={mode} attached={attached}"
                check(p.returncode == 0, f"{what}: exit {p.returncode}")
                check(p.stderr == "", f"{what}: stderr {p.stderr!r}")
                check(p.stdout == "", f"{what}: stdout {p.stdout!r}")
                check(not os.path.exists(log),
                      f"{what}: the OpenCL driver saw {open(log).read().split() if os.path.exists(log) else ''}")
                total, sealed = spools(spool)
                if attached and mode == "annot":
                    check((total, sealed) == (1, 1), f"{what}: spools {total}, sealed {sealed}")
                elif mode == "query":
                    check(total == 0, f"{what}: a query started recording ({total} spools)")
        # Control: the same set-up with a program that does use OpenCL.
        env = clean_env(**base)
        p = subprocess.run([a.prog_nocl, "opencl"], env=env, capture_output=True, text=True)
        check(p.returncode == 0, f"control: exit {p.returncode} {p.stderr}")
        seen = open(log).read().split() if os.path.exists(log) else []
        check("loaded" in seen and len(seen) > 1, f"control: fake ICD not used ({seen})")


def conflict(a):
    cases = [([a.lib, a.lib_copy, "seq"], {}), ([a.lib, a.lib_copy, "rev"], {}),
             ([a.lib, a.lib_copy, "threads"], {}), (["-", a.lib_copy, "seq"], {"LD_PRELOAD": a.lib}),
             (["-", a.lib_copy, "rev"], {"LD_PRELOAD": a.lib})]
    for _ in range(5):  # the racy case a few more times
        cases.append(([a.lib, a.lib_copy, "threads"], {}))
    for args, extra in cases:
        with tempfile.TemporaryDirectory() as spool:
            env = clean_env(ACCELTRACE_SPOOL_DIR=spool, **extra)
            p = subprocess.run([a.prog_two] + args, env=env, capture_output=True, text=True)
            what = f"{args} {extra}"
            check(p.returncode == 0, f"{what}: exit {p.returncode} {p.stderr}")
            rcs = sorted(int(x) for x in p.stdout.split()) if p.returncode == 0 else []
            check(rcs == [-1, 0], f"{what}: results {p.stdout!r} (want one 0 and one -1)")
            lines = p.stderr.splitlines()
            check(len(lines) == 1, f"{what}: stderr {p.stderr!r}")
            if lines:
                line = lines[0]
                check(line.startswith("acceltrace: start-up stage 'check conflicts' failed: "
                                      "another copy of acceltrace (") and
                      line.endswith("stands down; tracing is off"), f"{what}: line {line!r}")
                check(os.path.basename(a.lib).split(".so")[0] in line and a.lib_copy in line,
                      f"{what}: line does not name both copies: {line!r}")
            total, sealed = spools(spool)
            check((total, sealed) == (1, 1), f"{what}: spools {total}, sealed {sealed}")


# Variable, its `run` option (None: no option), invalid values, valid values.
VARIABLES = [
    ("ACCELTRACE_BUFFER_SIZE", "buffer-size",
     ["", " 64M", "64M ", "64m", "1048575", "65G", "lots", "-1"], ["1M", "64M", "1048576"]),
    ("ACCELTRACE_CHUNK_SIZE", "chunk-size",
     ["", " 64K", "4095", "6000", "17M", "0", "64k"], ["4K", "64K", "16M"]),
    ("ACCELTRACE_HOOKS", "hooks",
     ["", "ALL", " all", "opencl.kernel,", "a..b", "opencl.kernel, opencl.sync",
      # well formed, but naming no group the library has
      "opencl.kernal", "all,-opencl.kernal", "openclx"],
     ["all", "opencl.kernel,opencl.sync", "all,-opencl.transfer", "-opencl.transfer"]),
    ("ACCELTRACE_CAPTURE_RANGE", "capture-range", ["", "API", "nvtx:", "nvtx: x", " none"],
     ["none", "api", "nvtx:step"]),
    ("ACCELTRACE_DELAY", "delay", ["", "-1", "1s", "86401", "0.0000000001", " 1", "1."],
     ["0", "0.5", "86400"]),
    ("ACCELTRACE_DURATION", "duration", ["", "-1", "1s", "86400.5", " 1"], ["0", "1.5", "86400"]),
    ("ACCELTRACE_DRAIN_TIMEOUT", "drain-timeout", ["", "-1", "600001", "10s", "1.5", " 5"],
     ["0", "250", "600000"]),
    ("ACCELTRACE_LOG", "log", ["", "Debug", "verbose", "2", "info "], ["quiet", "error", "info", "debug"]),
    ("ACCELTRACE_LIBRARY_DIR", None, ["", "lib", " /x"], []),
    ("ACCELTRACE_SPOOL_DIR", None, ["", "relative", "/tmp/x "], []),
    ("ACCELTRACE_SOURCES", None, ["", "Ascend", "ascend,", " cuda", "npu", "ascend, cuda"],
     ["ascend", "cuda,ascend"]),
    ("ACCELTRACE_PYTHON_BINDING", None, ["", "native", "Ctypes", " auto"],
     ["auto", "extension", "ctypes"]),
] + [(v, None, ["", " libx.so", "libx.so "], ["libx.so", "/opt/lib/libx.so.1"])
     for v in ("ACCELTRACE_LIBRARY", "ACCELTRACE_TORCH_PLUGIN", "ACCELTRACE_CUDART_LIB",
               "ACCELTRACE_ASCENDCL_LIB", "ACCELTRACE_CUDART_PATH", "ACCELTRACE_ASCENDCL_PATH",
               "ACCELTRACE_CUPTI_LIB", "ACCELTRACE_MSPTI_LIB")]


def run_config(a):
    with tempfile.TemporaryDirectory() as tmp:
        marker = os.path.join(tmp, "ran")
        out = os.path.join(tmp, "trace.json")
        prog = ["--", "/bin/sh", "-c", f"touch {marker}"]

        def run(opts, env):
            if os.path.exists(marker):
                os.unlink(marker)
            p = subprocess.run([a.cli, "run", "-f", "-o", out, "--no-summary"] + opts + prog,
                               env=clean_env(**env), capture_output=True, text=True)
            return p, os.path.exists(marker)

        for var, opt, bad, good in VARIABLES:
            forms = [("env", lambda v: ([], {var: v}))]
            if opt:
                forms.append(("option", lambda v, o=opt: ([f"--{o}={v}"], {})))
            for form, make in forms:
                for v in bad:
                    p, ran = run(*make(v))
                    what = f"{var} {form} {v!r}"
                    check(p.returncode == 2, f"{what}: exit {p.returncode}, want 2")
                    check(not ran, f"{what}: the program was started")
                    want = f"acceltrace: run: Invalid value for {var}: '{v}'. Allowed: "
                    check(p.stderr.startswith(want) and p.stderr.count("\n") == 1,
                          f"{what}: stderr {p.stderr!r}")
                    if var == "ACCELTRACE_HOOKS" and "kern" in v:
                        check("opencl.kernel" in p.stderr, f"{what}: groups not listed: "
                              f"{p.stderr!r}")
                for v in good:
                    p, ran = run(*make(v))
                    what = f"{var} {form} {v!r}"
                    check(ran, f"{what}: the program did not start ({p.returncode}, {p.stderr!r})")
                    check("Invalid value" not in p.stderr, f"{what}: {p.stderr!r}")
        # A misspelt variable is refused too.
        p, ran = run([], {"ACCELTRACE_BUFER_SIZE": "64M"})
        check(p.returncode == 2 and not ran and
              p.stderr.startswith("acceltrace: run: Unknown variable ACCELTRACE_BUFER_SIZE."),
              f"misspelt variable: {p.returncode} {p.stderr!r}")
        # The cross-field rule.
        p, ran = run(["--buffer-size=16M", "--chunk-size=16M"], {})
        check(p.returncode == 2 and not ran and "ACCELTRACE_CHUNK_SIZE" in p.stderr,
              f"chunk > buffer/4: {p.returncode} {p.stderr!r}")


def secure(a):
    """A set-uid program ignores every ACCELTRACE_* variable."""
    import pwd
    import shutil
    if os.geteuid() != 0:
        print("skipped: needs root to make a set-uid program")
        sys.exit(77)
    nobody = pwd.getpwnam("nobody")
    with tempfile.TemporaryDirectory(dir=os.path.dirname(a.prog_secure)) as tmp:
        os.chmod(tmp, 0o755)
        prog = os.path.join(tmp, "prog_secure")
        shutil.copy(a.prog_secure, prog)
        os.chown(prog, nobody.pw_uid, nobody.pw_gid)
        os.chmod(prog, 0o4755)
        env = clean_env(ACCELTRACE_SPOOL_DIR=tmp, ACCELTRACE_BUFFER_SIZE="bad")
        plain = subprocess.run([a.prog_secure], env=env, capture_output=True, text=True)
        check(plain.stdout.startswith("secure=0 rc=-9 "), f"not set-uid: {plain.stdout!r}")
        p = subprocess.run([prog], env=env, capture_output=True, text=True)
        if p.stdout.startswith("secure=0"):
            print("skipped: the file system does not honour set-uid")
            sys.exit(77)
        # The defaults, the environment ignored (buffer 0: automatic).
        check(p.stdout == "secure=1 rc=0 init=-1 spool='' buffer=0\n",
              f"set-uid: {p.stdout!r} {p.stderr!r}")
        check(p.stderr == "", f"set-uid stderr: {p.stderr!r}")
        check(os.listdir(tmp) == ["prog_secure"], f"set-uid program recorded: {os.listdir(tmp)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--lib", required=True)
    ap.add_argument("--lib-copy", required=True)
    ap.add_argument("--icd-dir", required=True)
    ap.add_argument("--prog-nocl", required=True)
    ap.add_argument("--prog-two", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--prog-secure")
    a = ap.parse_args()
    {"no_device_call": no_device_call, "conflict": conflict, "run_config": run_config,
     "secure": secure}[a.case](a)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
