#!/usr/bin/env python3
"""check_launcher.py -- what `acceltrace run` guarantees about its output
file, its signals and crashes (docs/reliability.md, "The launcher").

  output   --force replaces regular files only: a directory, FIFO, socket,
           device node or a link to an open descriptor (/dev/stdout) is
           refused, left as it was, and the program is not started; an
           output that cannot be written (empty name, missing or unwritable
           directory) is refused up front with exit 2 and one line.
  late     a trace that cannot be written at the end (a file appeared at the
           path; ENOSPC on a small tmpfs, as root; EFBIG under the
           launcher's RLIMIT_FSIZE) keeps the spool, says why and where,
           exits 74, and the printed `acceltrace export` command writes the
           complete trace from it.
  signals  Ctrl-C on a terminal (a pseudo-terminal) and SIGINT sent to the
           process group reach the program once: its `except
           KeyboardInterrupt:` cleanup completes exactly once; SIGTERM and
           SIGHUP sent to the launcher alone are passed on once; a SIGINT
           the launcher was started with ignored stays ignored in the
           program; SIGINT while the trace is written stops the export
           cleanly (exit 130, no file, the spool kept and exportable).
  crash    a program that dies of a signal has "process N died of SIGSEGV"
           in the trace's errors and in both summaries; a descendant that
           did not finish is named there too.
  template with an output name template (-o 't.%p.json'): a directory part
           that does not exist (also through %q{VAR} in the launcher's
           environment) is refused up front; a trace that cannot be written
           at the end (a file at the expanded name, a %q{VAR} holding '/',
           ENOSPC, EFBIG) keeps the spool of what was not written, says
           why, exits 74 and prints an `acceltrace export` command with the
           template that writes exactly the missing traces.
  nothing  a run that recorded nothing says so in one line instead of an
           empty summary (with a template too); a program that cannot be
           started exits 127 (126) with no trace and no summary.
  export   `acceltrace export` opens nothing that can block: a FIFO named
           *.acts or run.json in the spool directory is named and skipped,
           never waited on; the first SIGTERM ends the command.

usage: check_launcher.py ACCELTRACE CHURN_WORKLOAD LIBACCELTRACE WORKDIR PART...
"""
import json
import os
import pty
import resource
import select
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg)
    return cond


def run(a, args, **kw):
    kw.setdefault("timeout", 120)
    return subprocess.run([a.acceltrace, "run", "--no-summary"] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, **kw)


def lines(r):
    return [l for l in r.stderr.decode(errors="replace").splitlines() if l]


class Args:
    pass


# ---- output: refused up front ------------------------------------------

def refused(a, out, what, force=True):
    """`run [-f] -o out -- marker` exits 2 with one line, program not run."""
    marker = os.path.join(a.work, "started")
    if os.path.exists(marker):
        os.unlink(marker)
    r = run(a, (["-f"] if force else []) + ["-o", out, "--", sys.executable, "-c",
                                               "open(%r, 'w').close()" % marker])
    err = lines(r)
    check(r.returncode == 2, "%s: exit %d, not 2 (%r)" % (what, r.returncode, err))
    check(len(err) == 1, "%s: %d lines on stderr: %r" % (what, len(err), err))
    check(not os.path.exists(marker), "%s: the program was started" % what)
    return err[0] if err else ""


def part_output(a):
    w = os.path.join(a.work, "out")
    os.makedirs(w)
    # Things --force must never replace, each left exactly as it was.
    d = os.path.join(w, "adir")
    os.mkdir(d)
    fifo = os.path.join(w, "fifo")
    os.mkfifo(fifo)
    sock = os.path.join(w, "sock")
    s = socket.socket(socket.AF_UNIX)
    s.bind(sock)
    objs = [(d, "directory", stat.S_ISDIR), (fifo, "FIFO", stat.S_ISFIFO),
            (sock, "socket", stat.S_ISSOCK)]
    dev = os.path.join(w, "null")
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        objs.append((dev, "character device", stat.S_ISCHR))
    except OSError as e:
        print("note: no device node test (mknod: %s)" % e.strerror)
    for path, kind, is_kind in objs:
        msg = refused(a, path, kind)
        check("regular files only" in msg, "%s: unclear message %r" % (kind, msg))
        check(is_kind(os.lstat(path).st_mode), "%s was replaced" % kind)
    # Links to open descriptors (what /dev/stdout and /dev/fd/N are), and
    # a link to a FIFO: the link stays a link.
    for target in ("/proc/self/fd/1", fifo):
        link = os.path.join(w, "link-" + os.path.basename(target))
        os.symlink(target, link)
        msg = refused(a, link, "link to " + target)
        check(os.path.islink(link) and os.readlink(link) == target, "%s was replaced" % link)
    s.close()
    # Cannot be written: refused before the program starts.
    refused(a, "", "empty output name", force=False)
    refused(a, os.path.join(w, "missing", "t.json"), "missing directory", force=False)
    refused(a, os.path.join(w, "adir") + "/", "name ending in /", force=False)
    refused(a, os.path.join(w, "t.json", "x.json"), "a path through no directory", force=False)
    unwritable = os.path.join(w, "ro")
    os.mkdir(unwritable, 0o555)
    os.chmod(unwritable, 0o555)
    if os.geteuid() != 0:
        refused(a, os.path.join(unwritable, "t.json"), "unwritable directory", force=False)
    else:
        unwritable_as_nobody(a, unwritable)
    # A regular file is still replaced with --force.
    reg = os.path.join(w, "reg.json")
    with open(reg, "w") as f:
        f.write("old")
    # A second name of the old file (a hard link) sees it untouched, and no
    # process is left holding it: the replaced trace is freed by run's
    # detached child once run returned (docs/cli.md), not kept open.
    keep = os.path.join(w, "reg.keep")
    os.link(reg, keep)
    st = os.stat(reg)
    old_ino = (st.st_dev, st.st_ino)
    r = run(a, ["-f", "-o", reg, "--", "true"])
    check(r.returncode == 0 and json.load(open(reg)).get("traceEvents") is not None,
          "--force did not replace a regular file: %r" % lines(r))
    check(open(keep).read() == "old", "the replaced file was written to")
    deadline = time.monotonic() + 10
    while holders(old_ino) and time.monotonic() < deadline:
        time.sleep(0.01)
    check(not holders(old_ino), "the replaced trace is still held open by %r" % holders(old_ino))


def holders(ino):
    """Processes with a descriptor on the file ino = (st_dev, st_ino)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir("/proc/%s/fd" % pid):
                try:
                    t = os.stat("/proc/%s/fd/%s" % (pid, fd))
                    if (t.st_dev, t.st_ino) == ino:
                        found.append(int(pid))
                except OSError:
                    pass
        except OSError:
            pass
    return found


def unwritable_as_nobody(a, unwritable):
    import pwd
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        print("note: no unwritable-directory test (no user nobody)")
        return

    def drop():
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    try:  # a checkout under a folder nobody may not enter (/root, mktemp -d) cannot exec
        ran = subprocess.run([a.acceltrace, "version"], preexec_fn=drop,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    except OSError:
        ran = False
    if not ran or not os.access(a.work, os.X_OK):
        print("note: no unwritable-directory test (nobody cannot run the build here)")
        return
    os.chmod(a.work, 0o755)
    os.chmod(os.path.dirname(unwritable), 0o755)
    r = subprocess.run([a.acceltrace, "run", "-o", os.path.join(unwritable, "t.json"), "--",
                        "true"], preexec_fn=drop, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    err = lines(r)
    check(r.returncode == 2 and len(err) == 1 and "cannot write" in err[0],
          "unwritable directory (as nobody): exit %d %r" % (r.returncode, err))


# ---- late: the trace cannot be written at the end -----------------------

def export_command(a, r):
    """The `acceltrace export ...` line that run printed, as argv."""
    err = lines(r)
    cmd = [l.split("acceltrace:   ", 1)[1] for l in err if l.startswith("acceltrace:   acceltrace export ")]
    if not check(len(cmd) == 1, "no export command printed: %r" % err):
        return None
    argv = shlex.split(cmd[0])
    return [a.acceltrace] + argv[1:]


def check_kept(a, r, what, out, ranges, status, command0, expect_rc=74):
    err = lines(r)
    check(r.returncode == expect_rc, "%s: exit %d, not %d: %r" % (what, r.returncode, expect_rc, err))
    kept = [l for l in err if "the spool is kept in " in l]
    if not check(kept, "%s: the kept spool is not named: %r" % (what, err)):
        return
    spool = kept[0].split("the spool is kept in ", 1)[1].rsplit(";", 1)[0]
    check(os.path.isdir(spool), "%s: the spool %s is gone" % (what, spool))
    argv = export_command(a, r)
    if not argv:
        return
    # The printed command names the same output; write it elsewhere.
    i = argv.index("-o")
    argv[i + 1] = out
    x = subprocess.run(argv + ["--no-summary"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    if not check(x.returncode == 0, "%s: export exit %d: %r" % (what, x.returncode, lines(x))):
        return
    t = json.load(open(out))
    meta = t["acceltrace"]
    n = sum(1 for e in t["traceEvents"] if e.get("ph") == "X" and e.get("name") == "late")
    check(n == ranges, "%s: %d ranges in the exported trace, not %d" % (what, n, ranges))
    check(meta.get("exit_status") == status, "%s: exit_status %r" % (what, meta.get("exit_status")))
    check(meta.get("command", [None])[0] == command0, "%s: command %r" % (what, meta.get("command")))
    check(not meta["dropped"] or not any(meta["dropped"].values()), "%s: dropped" % what)
    shutil.rmtree(spool)


def part_late(a):
    w = os.path.join(a.work, "late")
    os.makedirs(w)
    out = os.path.join(w, "t.json")
    # The program records, then a file appears at the output path.
    prog = ("import os,subprocess,sys; subprocess.run([%r,'child','late','500']);"
            "open(%r,'w').write('mine'); os.execv(%r, [%r,'child','late','1'])"
            % (a.churn, out, a.churn, a.churn))
    r = run(a, ["-o", out, "--", sys.executable, "-c", prog])
    check(open(out).read() == "mine", "the file that appeared was replaced")
    check_kept(a, r, "file appeared", os.path.join(w, "later.json"), 501, 0, sys.executable)
    export_bad_input(a, w)
    late_enospc(a, w)
    late_efbig(a, w)
    # the same with every whole block written with O_DIRECT (writers/obuf.c)
    direct = dict(os.environ, ACCELTRACE_DIRECT_IO="0")
    late_enospc(a, w, direct, "direct ")
    late_efbig(a, w, direct, "direct ")


def export_bad_input(a, w):
    """`acceltrace export` of what is not a kept spool: exit 2, one line."""
    empty = os.path.join(w, "empty")
    os.mkdir(empty)
    bad = os.path.join(w, "badrun")
    os.mkdir(bad)
    open(os.path.join(bad, "1.acts"), "wb").close()
    with open(os.path.join(bad, "run.json"), "w") as f:
        f.write('{"command": [1, 2], "wait_status": "x"}')
    afile = os.path.join(w, "t.json")
    for args, what in (([os.path.join(w, "nope")], "a missing directory"),
                       ([afile], "a file"), ([empty], "a directory without spools"),
                       ([bad], "a bad run.json"), ([], "no directory")):
        out = os.path.join(w, "bad.json")
        x = subprocess.run([a.acceltrace, "export"] + args + ["-o", out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        err = lines(x)
        check(x.returncode == 2 and err and err[0].startswith("acceltrace: "),
              "export of %s: exit %d %r" % (what, x.returncode, err))
        check(not os.path.exists(out), "export of %s wrote a trace" % what)


def late_enospc(a, w, env=None, tag=""):
    small = os.path.join(w, "small" + tag.strip())
    os.mkdir(small)
    if os.geteuid() != 0:
        print("SKIP: ENOSPC at the end: mounting a tmpfs needs root")
        return
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", small],
                       stderr=subprocess.PIPE)
    if m.returncode != 0:
        print("SKIP: ENOSPC at the end: mounting a tmpfs was refused: %s"
              % m.stderr.decode().strip())
        return
    try:
        out = os.path.join(small, "t.json")
        # The program fills the file system, then records (its spool is
        # elsewhere): the trace does not fit.
        prog = ("import subprocess\nf=open(%r,'wb')\ntry:\n while True: f.write(b'x'*65536); f.flush()\n"
                "except OSError: pass\nsubprocess.run([%r,'child','late','20000'])\nraise SystemExit(3)"
                % (os.path.join(small, "fill"), a.churn))
        r = run(a, ["-o", out, "--", sys.executable, "-c", prog], env=env)
        check(not os.path.exists(out), tag + "ENOSPC: a partial trace was left")
        left = [f for f in os.listdir(small) if f not in ("fill",)]
        check(not left, tag + "ENOSPC: files left behind: %r" % left)
        check(any("No space left on device" in l for l in lines(r)),
              tag + "ENOSPC: the reason is not said: %r" % lines(r))
        check_kept(a, r, tag + "ENOSPC", os.path.join(w, tag.strip() + "enospc.json"), 20000, 3,
                   sys.executable)
    finally:
        subprocess.run(["umount", small])


WAIT_GO = ("import os,subprocess,sys,time\nsubprocess.run(sys.argv[1:])\nopen(%r,'w').close()\n"
           "while not os.path.exists(%r): time.sleep(0.01)\n")


def limited_run(a, args, w, ranges, fsize, env=None):
    """`run ARGS -- (churn child late RANGES)`, the launcher limited to
    fsize bytes of file (RLIMIT_FSIZE, set on its pid once the program has
    recorded): the trace written at the end hits EFBIG."""
    ready, go = os.path.join(w, "ready"), os.path.join(w, "go")
    for f in (ready, go):
        if os.path.exists(f):
            os.unlink(f)
    proc = subprocess.Popen([a.acceltrace, "run", "--no-summary"] + args +
                            ["--", sys.executable, "-c", WAIT_GO % (ready, go), a.churn, "child",
                             "late", str(ranges)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    if check(wait_for(ready, lambda: proc.poll() is None), "EFBIG: the program did not start"):
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (fsize, fsize))
    open(go, "w").close()
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def late_efbig(a, w, env=None, tag=""):
    """The launcher's own RLIMIT_FSIZE (ulimit -f) below the trace's size:
    EFBIG, said, exit 74, never a SIGXFSZ death of the launcher."""
    out = os.path.join(w, tag.strip() + "big.json")
    r = limited_run(a, ["-o", out], w, 20000, 65536, env)
    check(r.returncode != 128 + signal.SIGXFSZ, tag + "EFBIG: the launcher died of SIGXFSZ")
    check(any("File too large" in l for l in lines(r)), tag + "EFBIG: the reason is not said: %r"
          % lines(r))
    check(not os.path.exists(out), tag + "EFBIG: a partial trace was left")
    check_kept(a, r, tag + "EFBIG", os.path.join(w, tag.strip() + "efbig.json"), 20000, 0,
               sys.executable)


# ---- template: one trace per process, the same rules ----------------------

# The program: a first process records FIRST ranges (its trace is
# writable), then the second sets its environment and execs (the same
# pid) into one that records 'late' ranges; it may put a file at the name
# its own trace will have first.
TEMPLATE_PROG = r"""
import os, subprocess, sys
churn, first, n, taken, env = sys.argv[1:6]
subprocess.run([churn, "child", "late", first])
if env:
    k, v = env.split("=", 1)
    os.environ[k] = v
if taken:
    open(taken.replace("PID", str(os.getpid())), "w").write("mine")
os.execv(churn, [churn, "child", "late", n])
"""


def template_run(a, w, tmpl, n, taken="", env="", extra_env=None):
    prog = os.path.join(w, "prog.py")
    with open(prog, "w") as f:
        f.write(TEMPLATE_PROG)
    full = dict(os.environ, **(extra_env or {}))
    return run(a, ["-o", tmpl, "--", sys.executable, prog, a.churn, "7", str(n), taken, env],
               env=full)


def ranges_in(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        t = json.load(f)
    return sum(1 for e in t["traceEvents"] if e.get("ph") == "X" and e.get("name") == "late")


def check_template_kept(a, r, what, tmpl, missing, n, before_export=None):
    """Exit 74, the reason said, the one trace written, a kept spool
    holding only the process whose trace is missing; the printed export
    command (the template) writes exactly that trace."""
    err = lines(r)
    check(r.returncode == 74, "%s: exit %d, not 74: %r" % (what, r.returncode, err))
    written = [l for l in err if "written to" in l]
    check(len(written) == 1, "%s: not one trace written: %r" % (what, err))
    kept = [l for l in err if "the spool is kept in " in l]
    if not check(kept, "%s: the kept spool is not named: %r" % (what, err)):
        return err
    spool = kept[0].split("the spool is kept in ", 1)[1].rsplit(";", 1)[0]
    spools = sorted(f for f in os.listdir(spool) if f.endswith(".acts"))
    check(len(spools) == 1, "%s: the kept spool holds %r, not the one missing trace" % (what, spools))
    argv = export_command(a, r)
    if not argv:
        return err
    check(argv[argv.index("-o") + 1] == tmpl, "%s: the export command names %r, not the template"
          % (what, argv))
    if before_export:
        before_export()
    x = subprocess.run(argv + ["--no-summary"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    if check(x.returncode == 0, "%s: export exit %d: %r" % (what, x.returncode, lines(x))):
        check(os.path.exists(missing) and ranges_in(missing) == n,
              "%s: the export did not write %s with %d ranges: %r" % (what, missing, n, lines(x)))
    shutil.rmtree(spool)
    return err


def part_template(a):
    w = os.path.join(a.work, "tmpl")
    os.makedirs(w)
    # Up front: the directory part, literal or through the launcher's
    # environment, must exist.
    refused(a, os.path.join(w, "missing", "t.%p.json"), "template in a missing directory",
            force=False)
    old = os.environ.get("SUB")
    os.environ["SUB"] = "a/b"
    try:
        msg = refused(a, os.path.join(w, "t.%q{SUB}.%p.json"), "%q{SUB} holding '/'", force=False)
        check("t.a/" in msg, "%%q{SUB} up front: the directory is not named: %r" % msg)
    finally:
        if old is None:
            del os.environ["SUB"]
        else:
            os.environ["SUB"] = old
    # At the end: a file appeared at one process's expanded name.
    tmpl = os.path.join(w, "t.%p.json")
    r = template_run(a, w, tmpl, 300, taken=os.path.join(w, "t.PID.json"))
    taken = [f for f in os.listdir(w) if f.startswith("t.") and open(os.path.join(w, f)).read() == "mine"]
    if check(len(taken) == 1, "file at the name: %r" % os.listdir(w)):
        path = os.path.join(w, taken[0])
        err = check_template_kept(a, r, "file at the name", tmpl, path, 300,
                                  before_export=lambda: os.unlink(path))
        check(any("already exists" in l for l in err), "file at the name: no reason: %r" % err)
    # At the end: %q{SUB} holding '/' in the process's own environment.
    d = os.path.join(w, "q")
    os.makedirs(d)
    tmpl = os.path.join(d, "t.%q{SUB}.json")
    r = template_run(a, d, tmpl, 200, env="SUB=x/y")
    err = check_template_kept(a, r, "%q{SUB}='x/y'", tmpl, os.path.join(d, "t.x/y.json"), 200,
                              before_export=lambda: os.mkdir(os.path.join(d, "t.x")))
    check(any("No such file or directory" in l for l in err), "%%q{SUB}: no reason: %r" % err)
    template_efbig(a, w)


def template_efbig(a, w):
    """EFBIG at the end with a template: the same rule."""
    d = os.path.join(w, "big")
    os.makedirs(d)
    r = limited_run(a, ["-o", os.path.join(d, "t.%p.json")], d, 20000, 65536)
    err = lines(r)
    check(r.returncode == 74, "template EFBIG: exit %d, not 74: %r" % (r.returncode, err))
    check(any("File too large" in l for l in err), "template EFBIG: no reason: %r" % err)
    check(any("acceltrace:   acceltrace export " in l for l in err),
          "template EFBIG: no export command: %r" % err)
    check(not [f for f in os.listdir(d) if f.endswith(".json")],
          "template EFBIG: a partial trace was left: %r" % os.listdir(d))
    for l in err:
        if "the spool is kept in " in l:
            shutil.rmtree(l.split("the spool is kept in ", 1)[1].rsplit(";", 1)[0])


# ---- nothing: a run that recorded nothing, a program that never ran --------

def part_nothing(a):
    w = os.path.join(a.work, "nothing")
    os.makedirs(w)
    # A program that touches no device: one line says so, no empty table.
    for what, out in (("plain", os.path.join(w, "n.json")),
                      ("template", os.path.join(w, "n.%p.json"))):
        r = subprocess.run([a.acceltrace, "run", "-o", out, "--", "true"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        err = lines(r)
        check(r.returncode == 0, "nothing (%s): exit %d %r" % (what, r.returncode, err))
        said = [l for l in err if "nothing was recorded" in l]
        check(len(said) == 1, "nothing (%s): not said in one line: %r" % (what, err))
        check(not any("Device ops" in l or "Counters" in l for l in err),
              "nothing (%s): an empty summary was printed: %r" % (what, err))
    check(json.load(open(os.path.join(w, "n.json"))).get("traceEvents") is not None,
          "nothing: the plain run's trace is not valid")
    # A program that cannot be started: its exit status, nothing else.
    notexe = os.path.join(w, "notexe")
    open(notexe, "w").close()
    for prog, rc in (("no_such_program_acceltrace", 127), (notexe, 126)):
        out = os.path.join(w, "x%d.json" % rc)
        r = subprocess.run([a.acceltrace, "run", "-o", out, "--", prog], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        err = lines(r)
        check(r.returncode == rc, "%s: exit %d, not %d: %r" % (prog, r.returncode, rc, err))
        check(not os.path.exists(out), "%s: a trace was written" % prog)
        check(len(err) == 1 and "cannot run" in err[0], "%s: not one line: %r" % (prog, err))
    # A program that exits 127 itself is traced as any other.
    out = os.path.join(w, "127.json")
    r = run(a, ["-o", out, "--", "sh", "-c", "exit 127"])
    check(r.returncode == 127 and os.path.exists(out),
          "a program exiting 127: exit %d, trace %s" % (r.returncode, os.path.exists(out)))


# ---- export: nothing that blocks, a signal ends it ------------------------

def export_bounded(a, args, what):
    """`acceltrace export ARGS`, given 30 s before one SIGTERM."""
    proc = subprocess.Popen([a.acceltrace, "export", "--no-summary"] + args,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        check(False, "%s: export still waits after 30 s (a blocking open)" % what)
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            check(False, "%s: export survived the first SIGTERM" % what)
            proc.kill()
            out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def part_export(a):
    w = os.path.join(a.work, "export")
    os.makedirs(w)
    r = run(a, ["--keep-spool", "-o", os.path.join(w, "t.json"), "--", a.churn, "child", "late",
                "100"])
    kept = [l for l in lines(r) if "spool kept in " in l]
    if not check(r.returncode == 0 and kept, "export: no kept spool: %r" % lines(r)):
        return
    spool = kept[0].split("spool kept in ", 1)[1]
    fifo = os.path.join(spool, "1.acts")
    os.mkfifo(fifo)
    out = os.path.join(w, "fifo.json")
    x = export_bounded(a, [spool, "-o", out], "FIFO 1.acts")
    err = lines(x)
    check(x.returncode == 0 and ranges_in(out) == 100, "FIFO 1.acts: exit %d %r"
          % (x.returncode, err))
    check(any("1.acts" in l and "not a regular file" in l for l in err),
          "FIFO 1.acts: not named: %r" % err)
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "FIFO 1.acts was replaced")
    os.unlink(fifo)
    info = os.path.join(spool, "run.json")
    if os.path.exists(info):
        os.unlink(info)
    os.mkfifo(info)
    out = os.path.join(w, "info.json")
    x = export_bounded(a, [spool, "-o", out], "FIFO run.json")
    err = lines(x)
    check(x.returncode == 2 and any("run.json" in l and "not a regular file" in l for l in err),
          "FIFO run.json: exit %d %r" % (x.returncode, err))
    check(not os.path.exists(out), "FIFO run.json: a trace was written")
    shutil.rmtree(spool)


# ---- signals --------------------------------------------------------------

PROG = r'''
import os, signal, sys, time
ready, log = sys.argv[1], sys.argv[2]
def note(s):
    with open(log, "a") as f:
        f.write(s + "\n")
def on_term(sig, frame):
    note(signal.Signals(sig).name)
    time.sleep(0.5)  # a second one would be noted twice
    sys.exit(6)
signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGHUP, on_term)
note("sigint " + ("ignored" if signal.getsignal(signal.SIGINT) == signal.SIG_IGN else "other"))
try:
    open(ready, "w").close()
    time.sleep(60)
    note("timeout")
except KeyboardInterrupt:
    note("interrupt")
    time.sleep(1.0)  # the cleanup: a second SIGINT here would break it
    note("cleanup done")
    sys.exit(5)
'''


def prog_files(a, name):
    w = os.path.join(a.work, "sig", name)
    os.makedirs(w)
    p = os.path.join(w, "prog.py")
    with open(p, "w") as f:
        f.write(PROG)
    return w, p, os.path.join(w, "ready"), os.path.join(w, "log")


def wait_for(path, proc_alive, timeout=30):
    end = time.time() + timeout
    while time.time() < end and not os.path.exists(path) and proc_alive():
        time.sleep(0.01)
    return os.path.exists(path)


def read_log(log):
    try:
        return [l for l in open(log).read().splitlines() if not l.startswith("sigint ")]
    except FileNotFoundError:
        return []


def sig_pty(a):
    """Ctrl-C typed on a terminal: the program's cleanup runs once."""
    w, p, ready, log = prog_files(a, "pty")
    out = os.path.join(w, "t.json")
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(a.acceltrace, [a.acceltrace, "run", "--no-summary", "-o", out, "--",
                                sys.executable, p, ready, log])
    buf = b""

    def drain(t):
        nonlocal buf
        r, _, _ = select.select([fd], [], [], t)
        if r:
            try:
                buf += os.read(fd, 65536)
            except OSError:
                pass
    end = time.time() + 30
    while time.time() < end and not os.path.exists(ready):
        drain(0.01)
    check(os.path.exists(ready), "pty: the program did not start")
    os.write(fd, b"\x03")
    status = None
    end = time.time() + 60
    while time.time() < end:
        drain(0.05)
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    os.close(fd)
    rc = os.waitstatus_to_exitcode(status) if status is not None else None
    check(read_log(log) == ["interrupt", "cleanup done"],
          "pty Ctrl-C: the program saw %r (output %r)" % (read_log(log), buf[-600:]))
    check(rc == 5, "pty Ctrl-C: exit %r, not the program's 5" % rc)
    check(os.path.exists(out), "pty Ctrl-C: no trace written")


def sig_sent(a, name, how, want_log, want_rc, ignore_int=False):
    w, p, ready, log = prog_files(a, name)
    out = os.path.join(w, "t.json")

    def pre():
        if ignore_int:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    proc = subprocess.Popen([a.acceltrace, "run", "--no-summary", "-o", out, "--",
                             sys.executable, p, ready, log], start_new_session=True,
                            preexec_fn=pre, stderr=subprocess.PIPE)
    if check(wait_for(ready, lambda: proc.poll() is None), "%s: the program did not start" % name):
        how(proc)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
    check(read_log(log) == want_log, "%s: the program saw %r, not %r (%r)"
          % (name, read_log(log), want_log, err.decode(errors="replace")[-400:]))
    check(proc.returncode == want_rc, "%s: exit %r, not %r" % (name, proc.returncode, want_rc))
    return log


def writing_trace(pid, w):
    """The launcher `pid` has its trace file open in w: a named temporary
    file, or an unnamed one (O_TMPFILE: /proc shows "w/#INODE (deleted)")."""
    if any(f.endswith(".tmp") for f in os.listdir(w)):
        return True
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith(w + "/#"):
                return True
        except OSError:
            pass
    return False


def program_running(pid):
    """The launcher `pid` still has its program (a child process)."""
    try:
        return bool(open("/proc/%d/task/%d/children" % (pid, pid)).read().split())
    except OSError:
        return False


def sig_export_interrupted(a):
    """SIGINT to the group while the trace is written: a clean stop."""
    w = os.path.join(a.work, "sig", "export")
    os.makedirs(w)
    out = os.path.join(w, "t.json")
    n = 600000
    for attempt in range(3):
        proc = subprocess.Popen([a.acceltrace, "run", "--no-summary", "-o", out, "--", a.churn,
                                 "child", "late", str(n)], start_new_session=True,
                                stderr=subprocess.PIPE)
        sent = False
        while proc.poll() is None:
            # After the program's exit: a streaming launcher opens the trace
            # file while the program still runs (what SIGINT then stops is
            # the program, sig_sent's case).
            if writing_trace(proc.pid, w) and not program_running(proc.pid):
                os.killpg(proc.pid, signal.SIGINT)
                sent = True
                break
            time.sleep(0.002)
        _, err = proc.communicate(timeout=120)
        if sent:
            break
        os.unlink(out)  # finished before the signal: try a larger one
        n *= 2
    r = subprocess.CompletedProcess(proc.args, proc.returncode, b"", err)
    check(any("interrupted by SIGINT" in l for l in lines(r)), "export: no clear message: %r"
          % lines(r))
    check(not os.path.exists(out), "export interrupted: a trace was written")
    left = [f for f in os.listdir(w) if f.endswith(".tmp")]
    check(not left, "export interrupted: temporary files left: %r" % left)
    check_kept(a, r, "export interrupted", os.path.join(w, "later.json"), n, 0, a.churn,
               expect_rc=130)


def part_signals(a):
    sig_pty(a)
    sig_sent(a, "killpg", lambda p: os.killpg(p.pid, signal.SIGINT),
             ["interrupt", "cleanup done"], 5)
    sig_sent(a, "term", lambda p: os.kill(p.pid, signal.SIGTERM), ["SIGTERM"], 6)
    sig_sent(a, "hup", lambda p: os.kill(p.pid, signal.SIGHUP), ["SIGHUP"], 6)
    # Started with SIGINT ignored (a background job): ignored in the
    # program too, as without acceltrace.
    log = sig_sent(a, "ignored", lambda p: os.kill(p.pid, signal.SIGTERM), ["SIGTERM"], 6,
                   ignore_int=True)
    first = open(log).read().splitlines()[0]
    check(first == "sigint ignored", "ignored SIGINT: the program saw %r" % first)
    sig_export_interrupted(a)


# ---- crash: visible in errors ------------------------------------------

CRASH = r'''
import ctypes, os, signal, sys
lib = ctypes.CDLL(sys.argv[1])
child = os.fork()
if child == 0:
    lib.act_range_push(b"child")
    os.kill(os.getpid(), signal.SIGKILL)
os.waitpid(child, 0)
print(os.getpid(), child, flush=True)
lib.act_range_push(b"parent")
os.kill(os.getpid(), signal.SIGSEGV)
'''


def part_crash(a):
    w = os.path.join(a.work, "crash")
    os.makedirs(w)
    out = os.path.join(w, "t.json")
    r = subprocess.run([a.acceltrace, "run", "-o", out, "--", sys.executable, "-c", CRASH, a.lib],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    check(r.returncode == 128 + signal.SIGSEGV, "crash: exit %d" % r.returncode)
    pid, child = (int(x) for x in r.stdout.split())
    errors = json.load(open(out))["acceltrace"]["errors"]
    want = "process %d died of SIGSEGV" % pid
    check(want in errors, "crash: %r not in the errors %r" % (want, errors))
    desc = [e for e in errors if e.startswith("process %d did not finish" % child)]
    check(len(desc) == 1, "crash: the descendant %d is not named in %r" % (child, errors))
    check(want in r.stderr.decode(), "crash: run's summary does not print %r" % want)
    s = subprocess.run([a.acceltrace, "summary", out], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    check(want in s.stdout.decode(), "crash: 'acceltrace summary' does not print %r" % want)


def main():
    a = Args()
    a.acceltrace, a.churn, a.lib, a.work = sys.argv[1:5]
    parts = sys.argv[5:] or ["output", "late", "signals", "crash"]
    a.work = os.path.abspath(a.work)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    for part in parts:
        globals()["part_" + part](a)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    shutil.rmtree(a.work, ignore_errors=True)
    print("ok: " + " ".join(parts))


if __name__ == "__main__":
    main()
