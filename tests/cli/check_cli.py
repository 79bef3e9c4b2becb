#!/usr/bin/env python3
"""check_cli.py BUILD_DIR SOURCE_DIR CHECK -- the command line as issue 20
asks: one-line usage errors pointing at --help, "did you mean", `help run`,
help within 80 columns with the right defaults, --log=quiet silencing
run's own lines, summary, rt and merge checking ACCELTRACE_* (exit 2), the bash
and zsh completions (syntax and answers), the man page (man -l) and what
cmake --install puts in place. CHECK = all | docs (run every command shown
in docs/cli.md)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

build, src, check = sys.argv[1], sys.argv[2], sys.argv[3]
tool = os.path.join(build, "bin", "acceltrace")
failures = []
CI = bool(os.environ.get("CI"))


def fail(msg):
    failures.append(msg)


def ac(*args, env=None, **kw):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([tool, *args], capture_output=True, text=True, env=e, timeout=120, **kw)


def check_usage():
    cases = [
        (["run", "--bogus", "true"], "acceltrace: run: unknown option '--bogus'"),
        (["run"], "acceltrace: run: no program given"),
        (["run", "--chunk-size"], "acceltrace: run: option '--chunk-size' needs a value"),
        (["summary"], "acceltrace: summary: missing TRACE"),
        (["summary", "--format=xml", "t.json"], "acceltrace: summary: --format wants"),
        (["rt", "--bad"], "acceltrace: rt: unknown option '--bad'"),
        (["sumary", "t.json"], "did you mean 'summary'?"),
        (["rnu"], "did you mean 'run'?"),
    ]
    for args, want in cases:
        p = ac(*args)
        lines = p.stderr.splitlines()
        if p.returncode != 2 or len(lines) != 1 or want not in lines[0] or "--help')" not in lines[0]:
            fail("usage %r: rc=%d stderr=%r" % (args, p.returncode, p.stderr))


def check_bare():
    """`acceltrace` alone: exit 2, and every command listed with what it does."""
    p = ac()
    cmds = [ln.split()[0] for ln in ac("--help").stdout.split("commands:\n", 1)[1].splitlines()
            if ln.startswith("  ")]
    listed = [ln.split()[0] for ln in p.stderr.splitlines() if ln.startswith("  ")]
    if p.returncode != 2 or not p.stderr.startswith("acceltrace: a command is needed") \
            or listed != cmds or len(cmds) < 8:
        fail("bare: rc=%d stderr=%r (commands %r)" % (p.returncode, p.stderr, cmds))


def check_help():
    for cmd in ("run", "summary", "rt", "version", "help"):
        a, b = ac("help", cmd), ac(cmd, "--help") if cmd not in ("version", "help") else ac("help", cmd)
        if a.returncode != 0 or a.stdout != b.stdout or not a.stdout.startswith("usage: "):
            fail("help %s differs from %s --help" % (cmd, cmd))
        long_lines = [ln for ln in a.stdout.splitlines() if len(ln) > 80]
        if long_lines:
            fail("help %s: lines over 80 columns: %r" % (cmd, long_lines))
    top = ac("--help").stdout
    run = ac("run", "--help").stdout
    if run.splitlines()[0][len("usage: "):] not in top:
        fail("top-level synopsis differs from run --help's")
    if "--chunk-size=SIZE" not in run or "default 128K" not in run or "256K" in run:
        fail("run --help: --chunk-size metavar/default wrong")
    for meta in ("--delay=SECONDS", "--drain-timeout=MS", "--hooks=LIST", "--output=FILE"):
        if meta not in run:
            fail("run --help lacks %s" % meta)


def check_quiet_and_config():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.json")
        p = ac("run", "--log=quiet", "-o", out, "--", "true")
        if p.returncode != 0 or p.stderr:
            fail("run --log=quiet printed %r" % p.stderr)
        p = ac("run", "-o", out, "-f", "--", "true")
        if "acceltrace: run: trace written to" not in p.stderr:
            fail("run at the default level lost its line: %r" % p.stderr[-300:])
        merged = os.path.join(d, "m.json.gz")
        for args in (["summary", out], ["rt"], ["merge", "-o", merged, out]):
            p = ac(*args, env={"ACCELTRACE_CHUNK_SIZE": "huge"})
            if p.returncode != 2 or "ACCELTRACE_CHUNK_SIZE" not in p.stderr:
                fail("%s with an invalid ACCELTRACE_CHUNK_SIZE: rc=%d %r"
                     % (args[0], p.returncode, p.stderr))
        # merge writes gzip through the pool ACCELTRACE_GZIP_THREADS sizes:
        # a value the check refuses is an error, not silently another pool
        p = ac("merge", "-o", merged, out, env={"ACCELTRACE_GZIP_THREADS": " 3"})
        if p.returncode != 2 or "ACCELTRACE_GZIP_THREADS" not in p.stderr or os.path.exists(merged):
            fail("merge with ACCELTRACE_GZIP_THREADS=' 3': rc=%d %r" % (p.returncode, p.stderr))


def check_completion():
    bash_c = os.path.join(src, "tools", "completion", "acceltrace.bash")
    zsh_c = os.path.join(src, "tools", "completion", "_acceltrace")
    p = subprocess.run(["bash", "-n", bash_c], capture_output=True, text=True)
    if p.returncode != 0:
        fail("bash -n: %s" % p.stderr)
    script = ('source %s; COMP_WORDS=(acceltrace summary --f); COMP_CWORD=2; _acceltrace; '
              'echo "${COMPREPLY[@]}"; COMP_WORDS=(acceltrace su); COMP_CWORD=1; _acceltrace; '
              'echo "${COMPREPLY[@]}"' % bash_c)
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                       env=dict(os.environ, PATH=os.path.dirname(tool) + ":" + os.environ["PATH"]))
    if p.stdout.split("\n")[:2] != ["--format=", "summary"]:
        fail("bash completion answers %r" % p.stdout)
    zsh = shutil.which("zsh")
    if zsh:
        p = subprocess.run([zsh, "-n", zsh_c], capture_output=True, text=True)
        if p.returncode != 0:
            fail("zsh -n: %s" % p.stderr)
    elif CI:
        fail("zsh is not installed (needed to check the zsh completion)")
    else:
        print("note: zsh not installed; zsh completion syntax not checked")


def check_man_and_install():
    man = os.path.join(build, "acceltrace.1")
    p = subprocess.run(["man", "--warnings", "-l", man], capture_output=True, text=True,
                       env=dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat"))
    if p.returncode != 0 or "acceltrace run [OPTIONS]" not in p.stdout or p.stderr.strip():
        fail("man -l: rc=%d err=%r" % (p.returncode, p.stderr[-500:]))
    for opt in ("--chunk-size", "--timeunit", "--names"):
        if opt not in p.stdout:
            fail("man page lacks %s" % opt)
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run(["cmake", "--install", build, "--prefix", d], capture_output=True,
                           text=True)
        want = ["share/man/man1/acceltrace.1", "share/bash-completion/completions/acceltrace",
                "share/zsh/site-functions/_acceltrace"]
        missing = [w for w in want if not os.path.exists(os.path.join(d, w))]
        if p.returncode != 0 or missing:
            fail("cmake --install: rc=%d missing %r %s" % (p.returncode, missing, p.stderr[-300:]))


def check_docs():
    text = open(os.path.join(src, "docs", "cli.md")).read()
    blocks = re.findall(r"```console\n(.*?)```", text, re.S)
    cmds = [ln[2:] for b in blocks for ln in b.splitlines() if ln.startswith("$ ")]
    if len(cmds) < 5:
        fail("docs/cli.md shows only %d commands" % len(cmds))
    env = dict(os.environ, PATH=os.path.dirname(tool) + ":" + os.path.join(build, "bin") + ":"
               + os.environ["PATH"])
    with tempfile.TemporaryDirectory() as d:
        for c in cmds:
            p = subprocess.run(["bash", "-c", c], cwd=d, env=env, capture_output=True, text=True,
                               timeout=120)
            if p.returncode != 0:
                fail("docs/cli.md: '%s' exited %d: %s" % (c, p.returncode, p.stderr[-400:]))


if check == "docs":
    check_docs()
else:
    check_usage()
    check_bare()
    check_help()
    check_quiet_and_config()
    check_completion()
    check_man_and_install()
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("cli %s: all checks pass" % check)
