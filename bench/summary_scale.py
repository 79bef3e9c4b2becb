#!/usr/bin/env python3
"""summary_scale.py -- `acceltrace summary` time and peak memory on the
inputs of issue 30 part 4 (BENCHMARKS.md "Summary at scale"): 10^6
distinct names, 10^6 lanes, 10^6 processes, one 64 MB name in a .json.gz, and the 400 MB
kineto-style trace of summary_cli.bounded_memory, for one or two builds.

Each input is generated once (tests/summary_cli/gen_summary_stress.py,
gen_big_trace.py) into a temporary directory; then each binary summarises
each input REPS times, the binaries alternating run by run. A figure is
the child's own getrusage: peak RSS, user+system CPU seconds, and wall
seconds (a run past 120 s is killed and said); printed as the median and the min..max spread (p10..p90 from 10
repetitions up), with the load average before and after.

usage: summary_scale.py REPS ACCELTRACE [ACCELTRACE...]
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "tests", "summary_cli")
INPUTS = [("1e6 names", ["gen_summary_stress.py", "names", "names.json", "1000000"], "names.json"),
          ("1e6 lanes", ["gen_summary_stress.py", "lanes", "lanes.json", "1000000"], "lanes.json"),
          ("1e6 processes", ["gen_summary_stress.py", "pids", "pids.json", "1000000"], "pids.json"),
          ("64 MB name (.gz)", ["gen_summary_stress.py", "longname", "long.json.gz", "64000000"],
           "long.json.gz"),
          ("400 MB kineto trace", ["gen_big_trace.py", "big.json", "400"], "big.json")]


LIMIT_S = 120  # a run still going then is killed and reported as such


def one(act, path):
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execv(act, [act, "summary", path])
    while True:
        got, status, ru = os.wait4(pid, os.WNOHANG)
        if got:
            break
        if time.monotonic() - t0 > LIMIT_S:
            os.kill(pid, 9)
            os.wait4(pid, 0)
            return None
        time.sleep(0.02)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("%s summary %s: status %d" % (act, path, os.waitstatus_to_exitcode(status)))
    return ru.ru_maxrss / 1024.0, ru.ru_utime + ru.ru_stime, wall


def spread(v):
    v = sorted(v)
    if len(v) >= 10:
        q = statistics.quantiles(v, n=10)
        return "%.2f..%.2f" % (q[0], q[-1])
    return "%.2f..%.2f" % (v[0], v[-1])


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    reps, acts = int(sys.argv[1]), sys.argv[2:]
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    with tempfile.TemporaryDirectory() as d:
        for _, cmd, _ in INPUTS:
            subprocess.run([sys.executable, os.path.join(GEN, cmd[0]),
                            *[os.path.join(d, a) if a.endswith(("json", "gz")) else a
                              for a in cmd[1:]]], check=True)
        print("input\tbinary\tpeak RSS MB (median, spread)\tCPU s\twall s")
        for label, _, name in INPUTS:
            res = {a: [] for a in acts}
            for _ in range(reps):
                for a in acts:
                    if None not in res[a]:
                        res[a].append(one(a, os.path.join(d, name)))
            for a in acts:
                if None in res[a]:
                    print("%s\t%s\tkilled after %d s" % (label, a, LIMIT_S))
                    continue
                cols = list(zip(*res[a]))
                print("%s\t%s\t%s" % (label, a, "\t".join(
                    "%.2f (%s)" % (statistics.median(c), spread(c)) for c in cols)))
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


main()
