#!/usr/bin/env python3
"""check_security.py -- security properties of `acceltrace run`
(docs/reliability.md, "Security").

  * the spool directory is private (0700, spool files 0600) and removed
    afterwards;
  * the program is started with execvp, never through a shell: a program
    name with shell syntax is not run, arguments reach it verbatim;
  * the trace is written 0600 (with umask 0) unless --mode asks otherwise;
  * the trace never replaces a file the user did not name: an existing
    output is refused without --force, a file that appears at the output
    path while the program runs is left alone, a symlink named as output
    is replaced itself (its target untouched), and no temporary file is
    left behind;
  * a set-uid program ignores ACCELTRACE_* end to end: run through
    `acceltrace run` it records nothing (skipped, code 77, when not root or
    the file system ignores set-uid).

usage: check_security.py ACCELTRACE CHURN_WORKLOAD WORKDIR [--sanitized]
"""
import os
import pwd
import shutil
import stat
import subprocess
import sys
import time
import json

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg)


def run(acceltrace, args, **kw):
    return subprocess.run([acceltrace, "run", "--no-summary"] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60, **kw)


def spool_dir(a, work):
    probe = ("import os,stat;d=os.environ['ACCELTRACE_SPOOL_DIR'];"
             "print(d, oct(stat.S_IMODE(os.lstat(d).st_mode)), stat.S_ISDIR(os.lstat(d).st_mode))")
    out = os.path.join(work, "spool.json")
    r = run(a.acceltrace, ["-o", out, "--", sys.executable, "-c", probe])
    d, mode, isdir = r.stdout.decode().split()
    check(r.returncode == 0, "spool probe exit %d" % r.returncode)
    check(mode == "0o700" and isdir == "True", "spool directory mode %s" % mode)
    check(not os.path.exists(d), "spool directory %s left behind" % d)
    # Renamed aside at once and removed by a detached child: gone soon.
    deadline = time.monotonic() + 10
    while os.path.exists(d + ".removing") and time.monotonic() < deadline:
        time.sleep(0.01)
    check(not os.path.exists(d + ".removing"), "spool directory %s.removing left behind" % d)
    # The spool files themselves: keep the directory to look at them.
    r = run(a.acceltrace, ["--keep-spool", "-f", "-o", out, "--", a.churn, "child", "k", "10"])
    kept = [l.split("spool kept in ", 1)[1] for l in r.stderr.decode().splitlines()
            if "spool kept in " in l]
    check(len(kept) == 1, "no kept spool reported")
    if kept:
        files = os.listdir(kept[0])
        # Spool files and the run's facts (run.json) for `acceltrace export`
        # of a kept spool: no pid, no trigger channel (they die with run).
        check(any(f.endswith(".acts") for f in files) and
              all(f.endswith(".acts") or f == "run.json" for f in files),
              "spool files %r" % files)
        for f in files:
            m = stat.S_IMODE(os.lstat(os.path.join(kept[0], f)).st_mode)
            check(m == 0o600, "spool file %s mode %o" % (f, m))
        shutil.rmtree(kept[0])


def no_shell(a, work):
    marker = os.path.join(work, "PWNED")
    r = run(a.acceltrace, ["-o", os.path.join(work, "sh1.json"), "--", "true; touch " + marker])
    check(r.returncode == 127, "a program name with shell syntax: exit %d" % r.returncode)
    args = ["$(touch %s)" % marker, "*", "`id`", "a b", "'q'", ";", "|", ""]
    r = run(a.acceltrace, ["-o", os.path.join(work, "sh2.json"), "--", "/bin/echo"] + args)
    check(r.stdout.decode() == " ".join(args) + "\n", "arguments changed: %r" % r.stdout)
    check(not os.path.exists(marker), "a shell ran the command line")


def trace_mode(a, work):
    for opt, want in (([], 0o600), (["--mode=0644"], 0o644), (["--mode=640"], 0o640)):
        out = os.path.join(work, "mode%o.json" % want)
        r = run(a.acceltrace, opt + ["-o", out, "--", a.churn, "child", "m", "3"],
                preexec_fn=lambda: os.umask(0))
        check(r.returncode == 0, "mode %r: exit %d" % (opt, r.returncode))
        m = stat.S_IMODE(os.lstat(out).st_mode)
        check(m == want, "trace mode %o with %r, want %o" % (m, opt, want))
    for bad in ("0400", "4755", "0o644", "rw", "06000"):
        r = run(a.acceltrace, ["--mode=" + bad, "-o", os.path.join(work, "bad.json"), "--", "true"])
        err = r.stderr.decode()
        check(r.returncode == 2 and "ACCELTRACE_TRACE_MODE" in err, "--mode=%s: %d %r" % (bad, r.returncode, err))


def no_replace(a, work):
    out = os.path.join(work, "mine.txt")
    with open(out, "w") as f:
        f.write("mine")
    r = run(a.acceltrace, ["-o", out, "--", "true"])
    check(r.returncode == 2 and open(out).read() == "mine", "an existing file was not refused")
    # A file that appears at the output path while the program runs.
    late = os.path.join(work, "late.json")
    r = run(a.acceltrace, ["-o", late, "--", "/bin/sh", "-c", "echo theirs > " + late])
    check(open(late).read() == "theirs\n", "a file created during the run was replaced")
    # The trace was not written, so its spool was kept for a later export.
    for l in r.stderr.decode().splitlines():
        if "spool is kept in " in l:
            shutil.rmtree(l.split("spool is kept in ", 1)[1].split()[0].rstrip(";"),
                          ignore_errors=True)
    # A symlink named as output (with --force) is replaced, never followed.
    target = os.path.join(work, "target.txt")
    with open(target, "w") as f:
        f.write("target")
    link = os.path.join(work, "link.json")
    os.symlink(target, link)
    r = run(a.acceltrace, ["-o", link, "--", "true"])
    check(r.returncode == 2 and os.path.islink(link), "an existing symlink was not refused")
    r = run(a.acceltrace, ["-f", "-o", link, "--", "true"])
    check(open(target).read() == "target", "the trace was written through a symlink")
    check(not os.path.islink(link) and json.load(open(link)).get("traceEvents") is not None,
          "the named symlink was not replaced by the trace")
    left = [f for f in os.listdir(work) if f.endswith(".tmp")]
    check(not left, "temporary files left behind: %r" % left)


def runs_as(user, argv):
    """Does argv run to a zero exit as `user` (we are root)?"""
    def drop():
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
    try:
        return subprocess.run(argv, preexec_fn=drop, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=30).returncode == 0
    except OSError:
        return False


def setuid(a, work):
    if a.sanitized:
        # LeakSanitizer cannot run in a set-uid process and its runtime
        # ignores ASAN_OPTIONS there: the plain build checks this part.
        print("set-uid: skipped in a sanitizer build")
        return 77
    if os.geteuid() != 0:
        print("set-uid: skipped (needs root to make a set-uid program)")
        return 77
    nobody = pwd.getpwnam("nobody")
    if not runs_as(nobody, [a.churn, "child", "x", "0"]):
        # The set-uid copy runs as nobody and loads libacceltrace through the
        # build's absolute RUNPATH; a checkout under a private directory (a
        # 0700 mktemp folder) is out of nobody's reach, so nothing can be
        # learnt here.
        print("set-uid: skipped (user nobody cannot run the build's programs from this checkout)")
        return 77
    d = os.path.join(os.path.dirname(a.churn), "setuid-reliability")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.chmod(d, 0o755)
    prog = os.path.join(d, "churn_workload")
    shutil.copy(a.churn, prog)
    os.chown(prog, nobody.pw_uid, nobody.pw_gid)
    os.chmod(prog, 0o4755)
    try:
        plain = os.path.join(work, "plain.json")
        r = run(a.acceltrace, ["-o", plain, "--", a.churn, "child", "suid", "25"])
        doc = json.load(open(plain))
        n = sum(1 for e in doc["traceEvents"] if e.get("name") == "suid")
        check(r.returncode == 0 and n == 25, "control run recorded %d ranges" % n)
        probe = subprocess.run(["/bin/sh", "-c", "test -u %s && %s child x 0" % (prog, prog)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        suid = os.path.join(work, "suid.json")
        r = run(a.acceltrace, ["-o", suid, "--", prog, "child", "suid", "25"])
        check(r.returncode == 0, "set-uid program exit %d: %r" % (r.returncode, r.stderr))
        doc = json.load(open(suid))
        n = sum(1 for e in doc["traceEvents"] if e.get("name") == "suid")
        check(n == 0 and not doc["acceltrace"]["processes"],
              "the set-uid program recorded (%d ranges, processes %r)" % (n, doc["acceltrace"]["processes"]))
        check(probe.returncode == 0, "set-uid copy does not run")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return 0


def main():
    class A:
        pass
    a = A()
    a.acceltrace, a.churn, work = sys.argv[1:4]
    a.sanitized = "--sanitized" in sys.argv[4:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    spool_dir(a, work)
    no_shell(a, work)
    trace_mode(a, work)
    no_replace(a, work)
    if setuid(a, work) == 77:
        print("set-uid part skipped")
    if failures:
        sys.exit("%d check(s) failed" % len(failures))
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
