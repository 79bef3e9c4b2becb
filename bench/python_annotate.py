#!/usr/bin/env python3
"""python_annotate.py -- what one annotation call from Python costs: the
package's two bindings (the compiled extension acceltrace._native and the
ctypes fallback) beside the `nvtx` package (no tool attached) and torch's
record_function (no profiler running), in the same process and run.

    python_annotate.py [--quick] [--reps=N] [--iters=N]

Method (BENCHMARKS.md, "Python annotations"): each subject is a loop of
--iters calls, timed with perf_counter_ns with the garbage collector off (as
timeit does), against an empty loop of the same length timed in the same
repetition; subjects and the empty loop run in an order rotated per
repetition. A subject's figure is the median over repetitions of
(subject - empty loop) / iters, with the p10..p90 of those differences as
its spread. "off": no session open (start-up found no tool); "recording":
an in-process session (acceltrace.profile) open, one per repetition, sized
so nothing is dropped (checked on the first repetition's trace).

Prints RESULT lines (bench metric value unit baseline ratio p10..p90 target
verdict) for build/bin/act_bench_all, and the machine's load before and
after. A subject whose package is missing (nvtx, torch) is a skip, or with
CI set a failure.
"""

import gc
import json
import os
import statistics
import sys
import tempfile
import time

import acceltrace
from acceltrace import _annotate_ctypes, _binding

BENCH = "python"


def parse_args(argv):
    opts = {"quick": False, "reps": 21, "iters": 100000}
    for a in argv:
        if a == "--quick":
            opts["quick"] = True
        elif a.startswith("--reps="):
            opts["reps"] = int(a.split("=", 1)[1])
        elif a.startswith("--iters="):
            opts["iters"] = int(a.split("=", 1)[1])
        else:
            sys.exit("usage: python_annotate.py [--quick] [--reps=N] [--iters=N]")
    if opts["quick"]:
        opts["reps"], opts["iters"] = 3, 2000
    return opts


# ---- the loops: each subject calls through a local name, as the empty loop
# ---- reads one, so that only the call itself differs.

def loop_empty(n, _):
    for _ in range(n):
        pass


def loop_range(n, api):
    r = api.range
    for _ in range(n):
        with r("r"):
            pass


def loop_push_pop(n, api):
    push, pop = api.push, api.pop
    for _ in range(n):
        push("r")
        pop()


def loop_mark(n, api):
    mark = api.mark
    for _ in range(n):
        mark("m")


def loop_counter(n, api):
    counter = api.counter
    for _ in range(n):
        counter("c", 0.5)


def loop_metadata(n, api):
    metadata_set = api.metadata_set
    for _ in range(n):
        metadata_set("k", "v", False)


def loop_metadata_off(n, api):
    metadata = api.metadata
    for _ in range(n):
        try:
            metadata("k", "v")
        except acceltrace.DisabledError:
            pass


def loop_decorated(n, api):
    f = api.decorated
    for _ in range(n):
        f()


def loop_nvtx_annotate(n, nvtx):
    a = nvtx.annotate
    for _ in range(n):
        with a("r"):
            pass


def loop_nvtx_push_pop(n, nvtx):
    push, pop = nvtx.push_range, nvtx.pop_range
    for _ in range(n):
        push("r")
        pop()


def loop_record_function(n, torch):
    rf = torch.autograd.profiler.record_function
    for _ in range(n):
        with rf("r"):
            pass


class Api:
    """One binding's calls, named alike."""

    def __init__(self, impl):
        self.range, self.push, self.pop = impl.range, impl.push, impl.pop
        self.mark, self.counter, self.metadata_set = impl.mark, impl.counter, impl.metadata_set
        self.metadata = acceltrace.metadata

        @impl.range("f")
        def decorated():
            return None
        self.decorated = decorated


def optional(name):
    """The module `name`, or None and a skip reason (a failure with CI)."""
    try:
        return __import__(name), None
    except ImportError as exc:
        if os.environ.get("CI"):
            sys.exit("python_annotate: CI: %s is needed: %s" % (name, exc))
        return None, "skip: %s not installed (%s)" % (name, exc)


# ---- measuring --------------------------------------------------------------------

def time_loop(loop, n, arg):
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        loop(n, arg)
        return time.perf_counter_ns() - t0
    finally:
        gc.enable()


def measure_round(subjects, n, rep, samples):
    """One repetition: every subject and the empty loop, order rotated by
    `rep`; appends each subject's (subject - empty) / n in ns."""
    order = [("empty", loop_empty, None)] + subjects
    k = rep % len(order)
    order = order[k:] + order[:k]
    times = {name: time_loop(loop, n, arg) for name, loop, arg in order}
    for name, _, _ in subjects:
        samples.setdefault(name, []).append((times[name] - times["empty"]) / n)
    samples.setdefault("empty", []).append(times["empty"] / n)


def spread(xs):
    q = statistics.quantiles(xs, n=10, method="inclusive") if len(xs) > 1 else [xs[0]] * 9
    return q[0], q[-1]


VERDICTS = {"on": True}


def result(metric, xs, baseline="", target="", ok=None):
    """One RESULT line; no verdict with --quick (too few calls to mean anything)."""
    med = statistics.median(xs)
    lo, hi = spread(xs)
    verdict = "info" if ok is None or not VERDICTS["on"] else ("pass" if ok(med) else "SHORT")
    print("RESULT\t%s\t%s\t%.1f\tns/call\t%s\t\t%.1f..%.1f\t%s\t%s"
          % (BENCH, metric, med, baseline, lo, hi, target, verdict))
    return med


def check_not_dropped(trace_path):
    with open(trace_path, encoding="utf-8") as f:
        trace = json.load(f)
    dropped = sum(trace["acceltrace"]["dropped"].values())
    if dropped:
        sys.exit("python_annotate: %d records dropped while recording; the figures "
                 "would be invalid (raise buffer_size)" % dropped)


def main(argv):
    opts = parse_args(argv)
    n, reps = opts["iters"], opts["reps"]
    VERDICTS["on"] = not opts["quick"]
    if _binding.NAME != "extension":
        if os.environ.get("CI"):
            sys.exit("python_annotate: CI: the extension is not loaded: %s"
                     % _binding.WHY_NOT_EXTENSION)
        print("note: the extension is not loaded (%s); its rows measure ctypes"
              % _binding.WHY_NOT_EXTENSION)
    ext, cty = Api(_binding.impl), Api(_annotate_ctypes)
    nvtx, nvtx_skip = optional("nvtx")
    torch, torch_skip = optional("torch")
    load0 = os.getloadavg()
    print("load average before: %.2f %.2f %.2f; %d repetitions of %d calls; cpus %d"
          % (load0 + (reps, n, os.cpu_count())))

    off = [("ext range", loop_range, ext), ("ext push+pop", loop_push_pop, ext),
           ("ext mark", loop_mark, ext), ("ext counter", loop_counter, ext),
           ("ext decorated", loop_decorated, ext), ("ext metadata off", loop_metadata_off, ext),
           ("ctypes range", loop_range, cty), ("ctypes push+pop", loop_push_pop, cty)]
    if nvtx:
        off += [("nvtx annotate", loop_nvtx_annotate, nvtx),
                ("nvtx push+pop", loop_nvtx_push_pop, nvtx)]
    if torch:
        off += [("record_function", loop_record_function, torch)]
    on = [("ext range", loop_range, ext), ("ext push+pop", loop_push_pop, ext),
          ("ext mark", loop_mark, ext), ("ext counter", loop_counter, ext),
          ("ext decorated", loop_decorated, ext), ("ext metadata", loop_metadata, ext),
          ("ctypes range", loop_range, cty), ("ctypes push+pop", loop_push_pop, cty),
          ("ctypes mark", loop_mark, cty), ("ctypes counter", loop_counter, cty)]

    s_off, s_on = {}, {}
    measure_round(off, 100, 0, {})  # warm-up: start-up runs once, nothing kept
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps):
            measure_round(off, n, rep, s_off)
            out = os.path.join(tmp, "check.json") if rep == 0 else None
            # Two records of at most 16 B each per call, 10 subjects: room for all.
            with acceltrace.profile(output=out, buffer_size=max(64 << 20, 64 * n * len(on))):
                measure_round(on, n, rep, s_on)
            if out:
                check_not_dropped(out)
    load1 = os.getloadavg()

    empty = "empty loop %.1f ns" % statistics.median(s_off["empty"])
    nv_cm = statistics.median(s_off["nvtx annotate"]) if nvtx else 600.0
    nv_pp = statistics.median(s_off["nvtx push+pop"]) if nvtx else 350.0
    result("off: range (context manager), extension", s_off["ext range"], empty,
           "<= nvtx annotate (%.0f ns) and <= 600 ns" % nv_cm,
           lambda v: v <= nv_cm and v <= 600)
    result("off: push+pop, extension", s_off["ext push+pop"], empty,
           "<= nvtx push+pop (%.0f ns) and <= 350 ns" % nv_pp,
           lambda v: v <= nv_pp and v <= 350)
    result("off: mark, extension", s_off["ext mark"], empty, "<= 600 ns", lambda v: v <= 600)
    result("off: counter, extension", s_off["ext counter"], empty, "<= 600 ns", lambda v: v <= 600)
    result("off: @range-decorated call, extension", s_off["ext decorated"], empty)
    result("off: metadata (raises DisabledError), extension", s_off["ext metadata off"], empty)
    result("off: range, ctypes fallback", s_off["ctypes range"], empty)
    result("off: push+pop, ctypes fallback", s_off["ctypes push+pop"], empty)
    if nvtx:
        result("off: nvtx.annotate (no tool attached)", s_off["nvtx annotate"], empty)
        result("off: nvtx push_range+pop_range (no tool)", s_off["nvtx push+pop"], empty)
    else:
        print("RESULT\t%s\toff: nvtx\t-\t-\t-\t-\t-\t-\t%s" % (BENCH, nvtx_skip))
    if torch:
        result("off: torch record_function (no profiler)", s_off["record_function"], empty)
    else:
        print("RESULT\t%s\toff: record_function\t-\t-\t-\t-\t-\t-\t%s" % (BENCH, torch_skip))
    empty = "empty loop %.1f ns" % statistics.median(s_on["empty"])
    for key, what in (("range", "range (context manager)"), ("push+pop", "push+pop"),
                      ("mark", "mark"), ("counter", "counter")):
        result("recording: %s, extension" % what, s_on["ext " + key], empty, "<= 1000 ns",
               lambda v: v <= 1000)
    result("recording: @range-decorated call, extension", s_on["ext decorated"], empty)
    result("recording: metadata (str value), extension", s_on["ext metadata"], empty,
           "<= 1000 ns", lambda v: v <= 1000)
    for key in ("range", "push+pop", "mark", "counter"):
        result("recording: %s, ctypes fallback" % key, s_on["ctypes " + key], empty)
    print("load average after: %.2f %.2f %.2f" % load1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
