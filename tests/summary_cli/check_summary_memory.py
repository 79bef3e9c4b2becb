#!/usr/bin/env python3
"""check_summary_memory.py ACCELTRACE GEN -- `acceltrace summary` of a
400 MB synthetic kineto-style trace peaks under 100 MB (issue 14 item 7:
it used to hold the whole document, 13.7x the file), and shows progress on
stderr when stderr is a terminal, none when it is a pipe (issue 20)."""
import os
import pty
import resource
import subprocess
import sys
import tempfile

tool, gen = sys.argv[1], sys.argv[2]
LIMIT_MB = 100
failures = []
with tempfile.TemporaryDirectory() as d:
    big = os.path.join(d, "big.json")
    subprocess.run([sys.executable, gen, big, "400"], check=True)
    # peak RSS of the child, stderr a pipe: no progress there
    p = subprocess.run([tool, "summary", big], capture_output=True, text=True)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if p.returncode != 0 or "Device ops: 10 names" not in p.stdout:
        failures.append("big trace: rc=%d err=%r" % (p.returncode, p.stderr[-500:]))
    if peak_mb > LIMIT_MB:
        failures.append("peak RSS %.1f MB for a 400 MB trace (limit %d MB)" % (peak_mb, LIMIT_MB))
    if "read " in p.stderr or "\r" in p.stderr:
        failures.append("progress printed into a pipe: %r" % p.stderr[-300:])
    print("summary of a 400 MB trace: peak RSS %.1f MB" % peak_mb)
    # the same with stderr on a pseudo-terminal: progress with a rate
    master, slave = pty.openpty()
    q = subprocess.Popen([tool, "summary", big], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    q.wait()
    os.close(master)
    if q.returncode != 0 or b"MB/s" not in seen or b"events" not in seen:
        failures.append("no progress on a terminal: rc=%d %r" % (q.returncode, seen[-300:]))
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("bounded memory and progress: ok")
