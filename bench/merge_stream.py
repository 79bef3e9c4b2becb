#!/usr/bin/env python3
"""merge_stream.py -- what `acceltrace merge` costs on large inputs: the
streaming merge beside a baseline merge (another build's acceltrace, e.g.
the jansson-DOM merge before issue 32) and `summary` of the same inputs.

    python bench/merge_stream.py BASELINE_ACCELTRACE [--reps=N] [--events=N]

Two generated traces (--events each, ~130 bytes an event; 750 000 makes
~100 MB each) are merged by each subject in an order rotated per
repetition. Each run goes through /usr/bin/time (-f '%e %U %S %M'): wall,
CPU (user+sys) and the command's own peak RSS. Prints per subject the
median and min..max over repetitions, each merge's time over summary's of
the same repetition (median, min..max), the load before and after.
"""

import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NEW = os.path.join(os.path.dirname(HERE), "build", "bin", "acceltrace")


def gen(path, events, pid):
    with open(path, "w") as f:
        f.write('{"traceEvents":[')
        for i in range(events):
            f.write('%s{"ph":"X","cat":"kernel","name":"k%d","pid":%d,"tid":7,"ts":%d.5,'
                    '"dur":3.25,"args":{"correlation":%d,"External id":%d}}'
                    % ("," if i else "", i % 50, pid, i * 10, i, i // 10))
        f.write('],"baseTimeNanoseconds":1700000000000000000,'
                '"distributedInfo":{"rank":%d}}' % pid)


def timed(cmd):
    r = subprocess.run(["/usr/bin/time", "-f", "TIME %e %U %S %M"] + cmd, capture_output=True,
                       text=True, timeout=3600)
    if r.returncode:
        sys.exit("merge_stream: %s failed: %s" % (cmd[0], r.stderr[-500:]))
    line = [ln for ln in r.stderr.splitlines() if ln.startswith("TIME ")][-1].split()
    return float(line[1]), float(line[2]) + float(line[3]), int(line[4]) / 1024.0


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit(__doc__)
    base = args[0]
    reps, events = 5, 750000
    for a in sys.argv[1:]:
        k, _, v = a.partition("=")
        if k == "--reps":
            reps = int(v)
        elif k == "--events":
            events = int(v)
    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
        gen(a, events, 1)
        gen(b, events, 2)
        out = os.path.join(tmp, "m.json")
        subjects = {
            "merge (streaming)": [NEW, "merge", "-f", "-o", out, a, b],
            "merge (baseline)": [base, "merge", "-f", "-o", out, a, b],
            "summary": [NEW, "summary", a, b],
        }
        names = list(subjects)
        res = {k: [] for k in names}
        load0 = os.getloadavg()
        for rep in range(reps):
            for k in names[rep % 3:] + names[:rep % 3]:
                res[k].append(timed(subjects[k]))
        load1 = os.getloadavg()
        mb = (os.path.getsize(a) + os.path.getsize(b)) / 1e6
    print("inputs: 2 x %d events, %.0f MB in all; %d reps" % (events, mb, reps))
    for k in names:
        cols = []
        for i, what in enumerate(("wall s", "CPU s", "peak MiB")):
            v = [r[i] for r in res[k]]
            cols.append("%s %.2f (%.2f..%.2f)" % (what, statistics.median(v), min(v), max(v)))
        print("RESULT merge_stream %-18s %s" % (k, "  ".join(cols)))
    # the measure: merge over summary, per repetition (the same load)
    for k in names[:2]:
        cols = []
        for i, what in ((1, "CPU"), (0, "wall")):
            r = [m[i] / s[i] for m, s in zip(res[k], res["summary"])]
            cols.append("%s %.2f (%.2f..%.2f)" % (what, statistics.median(r), min(r), max(r)))
        print("RESULT merge_stream %-18s / summary per rep: %s" % (k, "  ".join(cols)))
    print("load before %.2f %.2f %.2f after %.2f %.2f %.2f" % (load0 + load1))


if __name__ == "__main__":
    main()
