#!/usr/bin/env python3
"""check_trigger_safety.py -- `acceltrace trigger` never harms a process that
is not our launcher, and answers every request (docs/reliability.md,
"acceltrace trigger"; issue 30 part 1).

usage: check_trigger_safety.py ACCELTRACE TICKER MODE

A "victim" below is an unrelated process with SIGUSR2 at its default action
(terminate): a Python script named `run`, so that its command line is
`python3 run`, like `docker run`, `uv run` or `flask run`. It waits for its
standard input to end and then exits 0; a signal from us would kill it
(status -12). Every refusal must be exit status 2 with one line on stderr
and nothing on stdout.

foreign:     `trigger PID` of `python3 run`, of a process whose whole command
             line is `acceltrace run`, of a pid that does not exist: refused,
             the victims survive.
forged:      a process of ours whose environment names a forged spool
             directory holding a launcher.pid with the victim's pid (0700,
             0755, a symbolic link to it): `trigger PROCESS` and
             `trigger DIR` are refused, the victim survives.
forged_root: (root) the same directory owned by another user (nobody), named
             by a process of that user: root's trigger is refused (the
             confused deputy), root's victim survives.
stale:       a kept spool (--keep-spool) holds no pid and no channel; with a
             launcher.pid of the victim written into it (a pid since reused)
             trigger is refused; the spool of a launcher killed by SIGKILL
             while its program still runs: `trigger SPOOL` and
             `trigger PROGRAM` are refused; the victim survives.
other_user:  (root) an `acceltrace run` of user nobody: root's
             `trigger LAUNCHER|PROGRAM|SPOOL` is refused and writes nothing;
             nobody's own trigger writes a trace.
burst:       100 `acceltrace trigger` started at once at a running launcher:
             each exits 0 printing the trace it caused (a distinct file that
             exists and parses), or 75 saying "busy"; the trace files are
             exactly the answered ones, the launcher reports each, and the
             program's output and exit status are those of an untraced run.
"""
import glob
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time

ACT, TICKER, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
ENV = {k: v for k, v in os.environ.items() if not k.startswith("ACCELTRACE_")}
VICTIM = 'import sys\nprint("ready", flush=True)\nsys.stdin.read()\nprint("bye")\n'


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def skip(msg):
    print("skipped:", msg)
    sys.exit(77)


def victim(d, argv0="python3", env=None, **kw):
    """An unrelated process, `python3 run` (or ARGV0 run), blocked on stdin."""
    with open(os.path.join(d, "run"), "w") as f:
        f.write(VICTIM)
    os.chmod(os.path.join(d, "run"), 0o644)
    p = subprocess.Popen([argv0, "run"], executable=sys.executable, cwd=d, env=env or ENV,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, **kw)
    if p.stdout.readline().strip() != "ready":
        fail("the victim did not start")
    return p


def survived(p, what):
    out, _ = p.communicate("", timeout=30)
    if p.returncode != 0 or "bye" not in out:
        fail(f"{what} was harmed: exit status {p.returncode}")


def trigger(target, **kw):
    return subprocess.run([ACT, "trigger", str(target)], env=ENV, capture_output=True,
                          text=True, timeout=60, **kw)


def refused(target, what):
    r = trigger(target)
    lines = r.stderr.splitlines()
    if r.returncode != 2 or r.stdout or len(lines) != 1 or "trigger" not in lines[0]:
        fail(f"{what}: exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}; "
             "want exit 2 and one line")
    print(f"ok: {what}: {lines[0]}")


def child_of(pid):
    for _ in range(3000):
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
        except OSError:
            pass
        time.sleep(0.01)
    fail("the launcher started no program")


def gone(pid):
    """Wait until pid has exited (a zombie whoever its parent is counts)."""
    for _ in range(3000):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in "ZX":
                    return
        except OSError:
            return
        time.sleep(0.01)
    fail(f"process {pid} did not end")


def spool_of(pid):
    """The spool directory in the program's environment. Until the forked
    child has exec'd the program, /proc shows the launcher's environment,
    which names none (a busy machine stretches that moment): wait for it."""
    for _ in range(3000):
        with open(f"/proc/{pid}/environ", "rb") as f:
            for var in f.read().split(b"\0"):
                if var.startswith(b"ACCELTRACE_SPOOL_DIR="):
                    return var.split(b"=", 1)[1].decode()
        time.sleep(0.01)
    fail(f"process {pid} names no spool directory")


def launch(d, *opts, **kw):
    """`acceltrace run ... -- TICKER -` (ticks until its stdin ends)."""
    cmd = [ACT, "run", "--no-summary", *opts, "-o", os.path.join(d, "t.json"), "--", TICKER, "-"]
    p = subprocess.Popen(cmd, env=kw.pop("env", ENV), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    return p, child_of(p.pid)


def nobody_or_skip():
    if os.geteuid() != 0:
        skip(f"{MODE} needs root (a second user to play the other side)")
    nb = pwd.getpwnam("nobody")
    try:  # a checkout under a folder nobody may not enter (/root, mktemp -d) cannot exec
        r = subprocess.run([ACT, "version"], user=nb.pw_uid, group=nb.pw_gid, extra_groups=[],
                           capture_output=True)
        ok = r.returncode == 0
    except OSError:
        ok = False
    if not ok:
        skip("user nobody cannot run the build's programs from this checkout")
    return nb


def forged_dir(d, name, pid, mode=0o700):
    f = os.path.join(d, name)
    os.mkdir(f)
    with open(os.path.join(f, "launcher.pid"), "w") as fp:
        fp.write(f"{pid}\n")
    os.chmod(f, mode)
    return f


def mode_foreign(d):
    v = victim(d)
    refused(v.pid, "python3 run")
    w = victim(d, argv0="acceltrace")
    refused(w.pid, "a process whose command line is 'acceltrace run'")
    gone = subprocess.Popen(["true"])
    gone.wait()
    refused(gone.pid, "a pid that does not exist")
    survived(v, "python3 run")
    survived(w, "the 'acceltrace run' look-alike")


def mode_forged(d):
    v = victim(d)
    f = forged_dir(d, "forged", v.pid)
    attacker = victim(d, env=dict(ENV, ACCELTRACE_SPOOL_DIR=f))
    refused(attacker.pid, "a process naming a forged spool directory")
    refused(f, "a forged spool directory")
    open_dir = forged_dir(d, "forged-0755", v.pid, 0o755)
    refused(open_dir, "a forged spool directory of mode 0755")
    link = os.path.join(d, "link")
    os.symlink(f, link)
    refused(link, "a symbolic link to a spool directory")
    survived(attacker, "the process naming the forged directory")
    survived(v, "the victim named in launcher.pid")


def mode_forged_root(d):
    nb = nobody_or_skip()
    os.chmod(d, 0o755)
    v = victim(d)  # root's
    f = forged_dir(d, "forged", v.pid)
    os.chown(f, nb.pw_uid, nb.pw_gid)
    os.chown(os.path.join(f, "launcher.pid"), nb.pw_uid, nb.pw_gid)
    # cat: waits for its stdin to end (a program any user can run).
    attacker = subprocess.Popen(["cat"], env=dict(ENV, ACCELTRACE_SPOOL_DIR=f), user=nb.pw_uid,
                                group=nb.pw_gid, extra_groups=[], cwd="/",
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    refused(attacker.pid, "another user's process naming its directory")
    refused(f, "a spool directory owned by another user")
    attacker.communicate(b"", timeout=30)
    survived(v, "root's victim named in the other user's launcher.pid")


def mode_stale(d):
    v = victim(d)
    r = subprocess.run([ACT, "run", "--keep-spool", "--no-summary", "-o",
                        os.path.join(d, "k.json"), "--", TICKER, "0.1"], env=ENV,
                       capture_output=True, text=True, timeout=60)
    m = re.search(r"spool kept in (\S+)", r.stderr)
    if r.returncode != 0 or not m:
        fail(f"--keep-spool run: exit {r.returncode}: {r.stderr}")
    kept = m.group(1)
    try:
        extra = [f for f in os.listdir(kept) if not f.endswith(".acts") and f != "run.json"]
        if extra:
            fail(f"the kept spool holds {extra}: a pid or channel outlives the launcher")
        with open(os.path.join(kept, "launcher.pid"), "w") as fp:
            fp.write(f"{v.pid}\n")  # what a pid reused since reads like
        refused(kept, "a kept spool (with a reused pid in launcher.pid)")
    finally:
        shutil.rmtree(kept, ignore_errors=True)
    p, prog = launch(d)
    spool = spool_of(prog)
    p.kill()  # the launcher dies; its program goes on
    p.wait()
    try:
        with open(os.path.join(spool, "launcher.pid"), "w") as fp:
            fp.write(f"{v.pid}\n")
        refused(spool, "the spool of a launcher killed by SIGKILL")
        refused(prog, "a program whose launcher was killed")
    finally:
        p.stdin.close()  # the orphaned program ends
        gone(prog)
        shutil.rmtree(spool, ignore_errors=True)
    survived(v, "the victim")


def mode_other_user(d):
    nb = nobody_or_skip()
    os.chmod(d, 0o755)
    out = os.path.join(d, "out")
    os.mkdir(out)
    os.chown(out, nb.pw_uid, nb.pw_gid)
    p, prog = launch(out, env=dict(ENV, TMPDIR=out), user=nb.pw_uid, group=nb.pw_gid,
                     extra_groups=[], cwd="/")
    try:
        spool = spool_of(prog)
        refused(p.pid, "another user's launcher")
        refused(prog, "a program of another user's launcher")
        refused(spool, "another user's spool directory")
        if glob.glob(os.path.join(out, "t.trigger-*")):
            fail("a refused trigger wrote a trace")
        r = trigger(p.pid, user=nb.pw_uid, group=nb.pw_gid, extra_groups=[], cwd="/")
        path = r.stdout.strip()
        if r.returncode != 0 or not os.path.isfile(path):
            fail(f"the launcher's own user: exit {r.returncode}: {r.stdout}{r.stderr}")
        print(f"ok: its own user's trigger wrote {path}")
    finally:
        _, err = p.communicate("", timeout=60)
    if p.returncode != 0:
        fail(f"nobody's run exited {p.returncode}: {err}")


def mode_burst(d):
    untraced = subprocess.run([TICKER, "0.1"], env=ENV, capture_output=True, text=True)
    p, _ = launch(d)
    procs = [subprocess.Popen([ACT, "trigger", str(p.pid)], env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(100)]
    answers = []
    for q in procs:
        o, e = q.communicate(timeout=120)
        answers.append((q.returncode, o, e))
    written, busy = [], 0
    for rc, out, err in answers:
        if rc == 0 and out.count("\n") == 1 and os.path.isfile(out.strip()):
            written.append(out.strip())
        elif rc == 75 and "busy" in err:
            busy += 1
        else:
            fail(f"a trigger of the burst: exit {rc}, stdout {out!r}, stderr {err!r}")
    out, err = p.communicate("", timeout=120)
    if p.returncode != 0:
        fail(f"traced run exited {p.returncode}: {err[-600:]}")
    if out.splitlines()[1:] != untraced.stdout.splitlines()[1:]:
        fail(f"program output differs:\n{untraced.stdout}---\n{out}")
    files = sorted(glob.glob(os.path.join(d, "t.trigger-*.json")))
    if not written or len(set(written)) != len(written) or sorted(written) != files:
        fail(f"{len(written)} answered traces ({len(set(written))} distinct), "
             f"{len(files)} trace files")
    for f in files:
        with open(f) as fp:
            json.load(fp)
    said = len(re.findall(r"trigger \d+: trace written to", err))
    if said != len(written):
        fail(f"the launcher reported {said} traces, the triggers were answered {len(written)}")
    print(f"ok: burst of 100: {len(written)} traces written and answered, {busy} busy")


def main():
    modes = {"foreign": mode_foreign, "forged": mode_forged, "forged_root": mode_forged_root,
             "stale": mode_stale, "other_user": mode_other_user, "burst": mode_burst}
    with tempfile.TemporaryDirectory(prefix="act-trigger-safety-") as d:
        modes[MODE](d)
    print("ok")


if __name__ == "__main__":
    main()
