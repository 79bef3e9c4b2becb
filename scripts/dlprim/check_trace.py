"""check_trace.py -- judge a trace of scripts/dlprim/workload.py (the
pytorch_dlprim backend on PoCL) for scripts/dlprim-check.sh.

    python check_trace.py TRACE --kind run|torch --csv BACKEND.csv
                          --kernels-src DLPRIMITIVES/src/kernels --json OUT

TRACE is `acceltrace run`'s trace of the whole program (--kind run) or
torch.profiler's export of the profiled steps with the acceltrace plugin
(--kind torch). Checks, each printed as `ok` or `FAIL`:

- every device op (kernel, copy, fill) in the profiled window is there:
  as many as the backend's own profiler recorded (BACKEND.csv, from the
  same OpenCL events), each kernel named after a __kernel function of the
  dlprimitives sources;
- each is linked to its launch: one flow ending at it, starting on the
  launching thread at an event (clEnqueue* / PRIVATEUSE1_RUNTIME marker)
  that carries the same correlation;
- each kernel carries the External id of the aten op that launched it,
  and that op (cpu_op) encloses the launch;
- HTA's kernel breakdown (per name count and time) and temporal breakdown
  (span, idle, compute time) agree with the trace's own device ops;
- the device times (durations, and starts relative to the first) equal
  the backend's profiler's, op by op in queue order.

Exit status 1 when a check fails; OUT gets the figures.
"""

import argparse
import collections
import contextlib
import csv
import glob
import io
import json
import logging
import math
import os
import re
import shutil
import sys
import tempfile
import warnings

DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
WINDOW = "dlprim.profiled"

failures = []
figures = {}


def check(ok, what, detail=""):
    print("  %-4s %s%s" % ("ok" if ok else "FAIL", what, (": " + detail) if detail else ""))
    if not ok:
        failures.append(what + ((": " + detail) if detail else ""))
    return ok


def kernel_names(src):
    """The __kernel function names of the dlprimitives sources."""
    names = set()
    for path in glob.glob(os.path.join(src, "*.cl")):
        text = open(path, encoding="utf-8", errors="replace").read()
        for m in re.finditer(r"__kernel\b", text):
            v = re.compile(r"\bvoid\s+(\w+)\s*\(").search(text, m.end())
            if v:
                names.add(v.group(1))
    return names


def read_csv(path):
    """The backend profiler's rows: (section, label, start_us, dur_us)."""
    rows, bad = [], []
    with open(path, newline="") as f:
        r = csv.reader(f)
        next(r)
        for row in r:
            if len(row) != 5:
                bad.append(",".join(row))
                continue
            sec, label, start, _end, dur = row
            rows.append((sec, re.sub(r"\[\d+\]$", "", label), float(start) * 1e3, float(dur) * 1e3))
    return rows, bad


def floor_span(evs):
    return [(math.floor(e["ts"]), math.floor(e["ts"] + e["dur"])) for e in evs]


def union(iv):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(iv):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def hta_check(path, dev_ops):
    from hta.utils.utils import get_kernel_type
    from acceltrace.hta import TraceAnalysis
    d = tempfile.mkdtemp(prefix="dlprim-hta-")
    noise = io.StringIO()  # HTA's progress lines and pandas' warnings
    try:
        shutil.copy(path, os.path.join(d, "trace.json"))
        with contextlib.redirect_stdout(noise), contextlib.redirect_stderr(noise), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logging.disable(logging.WARNING)
            a = TraceAnalysis(d, include_last_profiler_step=True)
            _by_type, by_name = a.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0,
                                                           num_kernels=100000)
            temporal = a.get_temporal_breakdown(visualize=False)
    finally:
        logging.disable(logging.NOTSET)
        shutil.rmtree(d, ignore_errors=True)
    want = collections.OrderedDict()
    for e in dev_ops:
        n, t = want.get(e["name"], (0, 0.0))
        want[e["name"]] = (n + 1, t + e["dur"])
    got = {}
    for _, r in by_name.iterrows():
        n = round(r["sum (us)"] / r["mean (us)"]) if r["mean (us)"] else want.get(r["name"], (0,))[0]
        got[r["name"]] = (n, float(r["sum (us)"]))
    check(set(got) == set(want), "HTA kernel breakdown: the trace's %d device op names" % len(want),
          "missing %s, extra %s" % (sorted(set(want) - set(got))[:5], sorted(set(got) - set(want))[:5])
          if set(got) != set(want) else "")
    bad = [(k, got.get(k), v) for k, v in want.items()
           if k in got and (got[k][0] != v[0] or abs(got[k][1] - v[1]) > 2 * v[0] + 1)]
    check(not bad, "HTA kernel breakdown: count and time per name (whole-us rounding)",
          str(bad[:3]) if bad else "%d names, %d ops" % (len(want), sum(v[0] for v in want.values())))
    row = temporal.iloc[0]
    iv = floor_span(dev_ops)
    span = max(e for _, e in iv) - min(s for s, _ in iv)
    busy = union(iv)
    comp = union([v for v, e in zip(iv, dev_ops) if get_kernel_type(e["name"]) == "COMPUTATION"])
    tb = {k: float(row[k]) for k in ("kernel_time(us)", "idle_time(us)", "compute_time(us)",
                                     "non_compute_time(us)")}
    ok = (abs(tb["kernel_time(us)"] - span) <= 1 and abs(tb["idle_time(us)"] - (span - busy)) <= 1
          and abs(tb["compute_time(us)"] - comp) <= 1
          and abs(tb["non_compute_time(us)"] - (busy - comp)) <= 1)
    check(ok, "HTA temporal breakdown: span, idle, compute, non-compute",
          "HTA %s, trace span %d idle %d compute %d non-compute %d" % (
              {k: round(v) for k, v in tb.items()}, span, span - busy, comp, busy - comp))
    figures["hta_temporal_us"] = tb
    figures["hta_names"] = len(got)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--kind", choices=("run", "torch"), required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--kernels-src", required=True)
    ap.add_argument("--json")
    args = ap.parse_args()
    print("%s trace %s" % (args.kind, args.trace))
    with open(args.trace) as f:
        trace = json.load(f)
    ev = trace["traceEvents"]
    dev_ops = [e for e in ev if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS]
    kernels = [e for e in dev_ops if e["cat"] == "kernel"]
    known = kernel_names(args.kernels_src)

    # -- the profiled window's device ops against the backend's profiler
    if args.kind == "run":
        win = [e for e in ev if e.get("ph") == "X" and e.get("name") == WINDOW]
        check(len(win) >= 1, "the window marker %r is in the trace" % WINDOW)
        if not win:
            return
        w0 = min(e["ts"] for e in win)
        w1 = max(e["ts"] + e["dur"] for e in win)
        in_win = [e for e in dev_ops if w0 <= e["ts"] and e["ts"] + e["dur"] <= w1]
    else:
        in_win = list(dev_ops)
    in_win.sort(key=lambda e: e["ts"])
    rows, bad_rows = read_csv(args.csv)
    check(not bad_rows, "the backend's profiler read every event", "; ".join(bad_rows[:3]))
    figures["window_ops"] = len(in_win)
    figures["window_kernels"] = sum(e["cat"] == "kernel" for e in in_win)
    figures["backend_events"] = len(rows)
    check(len(in_win) == len(rows),
          "every device op of the profiled steps is there (as many as the backend's profiler)",
          "trace %d (%d kernels), backend %d" % (len(in_win), figures["window_kernels"], len(rows)))
    unknown = sorted({e["name"] for e in kernels} - known)
    check(not unknown, "every kernel is a dlprimitives __kernel (%d names of %d in the sources)"
          % (len({e["name"] for e in kernels}), len(known)), str(unknown[:5]))
    figures["kernel_names"] = sorted({e["name"] for e in kernels})
    streams = {(e["pid"], e["tid"]) for e in in_win}
    check(len(streams) == 1, "one in-order queue in the window", str(sorted(streams)))
    if len(in_win) == len(rows) and rows:
        t0, c0 = in_win[0]["ts"], rows[0][2]
        ddur = [abs(e["dur"] - r[3]) for e, r in zip(in_win, rows)]
        dstart = [abs((e["ts"] - t0) - (r[2] - c0)) for e, r in zip(in_win, rows)]
        # the CSV has 6 significant digits: durations in ms (sub-ns here),
        # starts in ms from the first (~0.1-1 us once past 100 ms)
        tol_dur = [max(0.002, 1e-5 * r[3]) for r in rows]
        tol_start = [max(0.002, 1e-5 * abs(r[2] - c0)) + 0.002 for r in rows]
        check(all(d <= t for d, t in zip(ddur, tol_dur)),
              "device durations equal the backend profiler's, op by op",
              "max |diff| %.4f us over %d ops" % (max(ddur), len(rows)))
        check(all(d <= t for d, t in zip(dstart, tol_start)),
              "device start times equal the backend profiler's (from the first op)",
              "max |diff| %.4f us" % max(dstart))
        labels = collections.defaultdict(collections.Counter)
        for e, r in zip(in_win, rows):
            labels[r[1]][e["name"] if e["cat"] == "kernel" else e["cat"]] += 1
        figures["backend_label_to_trace_name"] = {k: dict(v) for k, v in labels.items()}
        figures["max_dur_diff_us"] = max(ddur)
        figures["max_start_diff_us"] = max(dstart)
        figures["window_device_us"] = sum(e["dur"] for e in in_win)
        figures["backend_device_us"] = sum(r[3] for r in rows)

    # -- launch links: flow from the launch (same correlation) to each op
    starts = {e["id"]: e for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    finish = {}
    for e in ev:
        if e.get("ph") == "f" and e.get("cat") == "ac2g":
            finish.setdefault((e["pid"], e["tid"], e["ts"]), []).append(e)
    host = collections.defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") not in DEVICE_CATS:
            host[(e["pid"], e["tid"])].append(e)
    for v in host.values():
        v.sort(key=lambda e: e["ts"])
    launch_names = collections.Counter()

    def launch_of(op):
        fs = finish.get((op["pid"], op["tid"], op["ts"]), [])
        for f in fs:
            s = starts.get(f["id"])
            if s is None:
                continue
            corr = op.get("args", {}).get("correlation")
            for h in host.get((s["pid"], s["tid"]), ()):
                if h["ts"] > s["ts"]:
                    break
                if (h["ts"] <= s["ts"] <= h["ts"] + h.get("dur", 0)
                        and h.get("args", {}).get("correlation") == corr):
                    return s, h
        return None, None

    unlinked, launch = [], {}
    for op in dev_ops:
        s, h = launch_of(op)
        if h is None:
            unlinked.append(op)
        else:
            launch[id(op)] = s
            launch_names[h["name"]] += 1
    check(not unlinked, "every device op linked to its launch (flow, same correlation)",
          "%d of %d unlinked, e.g. %s" % (len(unlinked), len(dev_ops), unlinked[0]["name"])
          if unlinked else "%d ops, launches %s" % (len(dev_ops), dict(launch_names)))
    figures["device_ops"] = len(dev_ops)
    figures["kernels"] = len(kernels)
    figures["launch_names"] = dict(launch_names)

    # -- the aten op that launched each kernel (External id)
    ops_by_ext = collections.defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation"):
            x = e.get("args", {}).get("External id")
            if x is not None:
                ops_by_ext[x].append(e)
    no_ext, not_enclosing, by_op = [], [], collections.Counter()
    name_ops = collections.defaultdict(collections.Counter)
    for k in kernels:
        x = k.get("args", {}).get("External id")
        cands = ops_by_ext.get(x, []) if x is not None else []
        if not cands:
            no_ext.append(k)
            continue
        s = launch.get(id(k))
        op = next((o for o in cands if s is None or
                   (o["tid"] == s["tid"] and o["ts"] <= s["ts"] <= o["ts"] + o["dur"])), None)
        if op is None:
            not_enclosing.append(k)
            continue
        by_op[op["name"]] += 1
        name_ops[k["name"]][op["name"]] += 1
    check(not no_ext, "every kernel carries the External id of an op",
          "%d of %d without, e.g. %s" % (len(no_ext), len(kernels), no_ext[0]["name"])
          if no_ext else "")
    check(not not_enclosing, "that op encloses the kernel's launch",
          "%d of %d not" % (len(not_enclosing), len(kernels)) if not_enclosing else
          "%d aten ops launched kernels" % len(by_op))
    figures["kernels_by_op_top"] = dict(by_op.most_common(8))
    # One kernel name, several programs: dlprimitives builds a program per
    # operation and parameter set, and many share a kernel name (every
    # pointwise op's kernel is "exec"). acceltrace's kernels carry their
    # program ("program N"), so the same name from two programs is told
    # apart (the torch.profiler trace carries kineto's fields only).
    labels = figures.get("backend_label_to_trace_name", {})
    programs = collections.defaultdict(set)
    for k in kernels:
        programs[k["name"]].add(k.get("args", {}).get("program"))
    if args.kind == "run":
        no_prog = [k for k in kernels if not k.get("args", {}).get("program")]
        check(not no_prog, "every kernel carries its program",
              "%d of %d without" % (len(no_prog), len(kernels)) if no_prog else
              "%d programs" % len({p for v in programs.values() for p in v}))
    shared = {}
    for name, ops in name_ops.items():
        blabels = sorted(lb for lb, v in labels.items() if name in v)
        if len(ops) > 1 or len(blabels) > 1:
            shared[name] = {"launches": sum(ops.values()), "aten_ops": len(ops),
                            "backend_labels": blabels,
                            "programs": len(programs[name] - {None})}
    figures["shared_names"] = shared

    # -- HTA
    try:
        hta_check(args.trace, dev_ops)
    except Exception as exc:  # an HTA failure is a check failure
        check(False, "HTA reads the trace", "%s: %s" % (type(exc).__name__, exc))

    if args.json:
        figures["failures"] = failures
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
