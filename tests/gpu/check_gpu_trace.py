#!/usr/bin/env python3
"""check_gpu_trace.py -- the checks scripts/gpu-check.sh makes on a trace of
one of the CUDA programs in tests/gpu/, recorded on a real GPU.

    check_gpu_trace.py streams TRACE      (streams.cu, launched or in-process)
    check_gpu_trace.py nvtx TRACE         (nvtx_threads.cu)

Prints one line per check, "PASS <check>" or "FAIL <check>: <why>", and
exits with the number of failed checks (0: all passed). The general trace
rules come from the project's validator (tests/trace_check/validate_trace.py);
the rest is what a user of the CUDA row looks at first: every launch has its
kernel and a flow, copies carry bytes and direction, each stream is a lane,
NVTX ranges enclose the kernels launched inside them, device time fits in the
host span, and the clock mapping states its error.
"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trace_check"))
import validate_trace  # noqa: E402

DEVICE_PID_MIN = validate_trace.DEVICE_PID_MIN
CHUNK_BYTES = (1 << 20) * 4  # streams.cu: CHUNK floats per stream
NSTREAMS = 4
NVTX_LAUNCHES = 5


class Checks:
    def __init__(self):
        self.failed = 0

    def check(self, name, problems):
        problems = [p for p in problems if p]
        if problems:
            self.failed += 1
            more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
            print(f"FAIL {name}: {'; '.join(str(p) for p in problems[:3])}{more}")
        else:
            print(f"PASS {name}")


def slices(doc, cat=None):
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"
            and (cat is None or e.get("cat") == cat)]


def flows(doc):
    """flow id -> (start, finish)"""
    s, f = {}, {}
    for e in doc["traceEvents"]:
        if e.get("cat") == "ac2g":
            (s if e["ph"] == "s" else f)[e["id"]] = e
    return {i: (s[i], f[i]) for i in s if i in f}


def launches(doc):
    return [e for e in slices(doc) if e["pid"] < DEVICE_PID_MIN
            and e.get("cat") in ("cuda_runtime", "cuda_driver")
            and "Launch" in e["name"]]


def check_common(c, doc, kernels_expected):
    c.check("trace passes the project's validator",
            validate_trace.validate(doc, expect_device_ops=True))
    meta = doc.get("acceltrace", {})
    c.check("no source errors, nothing dropped",
            [f"errors: {meta.get('errors')}" if meta.get("errors") else None] +
            [f"dropped {k}: {v}" for k, v in (meta.get("dropped") or {}).items() if v])
    kernels = slices(doc, "kernel")
    c.check(f"{kernels_expected} kernels recorded",
            [] if len(kernels) == kernels_expected else [f"{len(kernels)} kernels"])
    fl = flows(doc)
    at = {(s["pid"], s["tid"], s["ts"]): f for s, f in fl.values()}
    kernel_at = {(k["pid"], k["tid"], k["ts"]): k for k in kernels}
    probs = []
    ls = launches(doc)
    if len(ls) != kernels_expected:
        probs.append(f"{len(ls)} launch calls for {kernels_expected} kernels")
    for launch in ls:
        f = at.get((launch["pid"], launch["tid"], launch["ts"]))
        if f is None:
            probs.append(f"{launch['name']} at {launch['ts']} has no flow")
        elif (f["pid"], f["tid"], f["ts"]) not in kernel_at:
            probs.append(f"{launch['name']} at {launch['ts']}: its flow ends on no kernel")
    c.check("every launch has its kernel, linked by a flow", probs)

    host = slices(doc)
    host = [e for e in host if e["pid"] < DEVICE_PID_MIN]
    dev = [e for e in slices(doc) if e["pid"] >= DEVICE_PID_MIN]
    probs = []
    if host and dev:
        h0 = min(e["ts"] for e in host)
        h1 = max(e["ts"] + e["dur"] for e in host)
        busy = collections.defaultdict(float)
        for e in dev:
            busy[(e["pid"], e["tid"])] += e["dur"]
            if e["ts"] < h0 or e["ts"] + e["dur"] > h1:
                probs.append(f"{e['name']} [{e['ts']}, {e['ts'] + e['dur']}] outside the host span [{h0}, {h1}]")
        for lane, b in busy.items():
            if b > h1 - h0:
                probs.append(f"lane {lane} busy {b:.1f} us > host span {h1 - h0:.1f} us")
    else:
        probs.append("no host or no device slices")
    c.check("device time within the host span", probs)

    clock = meta.get("clock", {})
    err = clock.get("error_ns") if isinstance(clock, dict) else None
    cupti = meta.get("cupti_clock") or doc.get("cupti_clock")
    c.check(f"clock mapping states its error (method {clock.get('method') if isinstance(clock, dict) else '?'}, "
            f"error_ns {err}, cupti_clock {'present' if cupti else 'absent'})",
            ([] if isinstance(err, (int, float)) else ["acceltrace.clock.error_ns missing"]) +
            ([] if cupti else ["no cupti_clock: the CUPTI source did not map its clock"]))
    return kernels, fl


def lanes_of(evs):
    return {(e["pid"], e["tid"]) for e in evs}


def check_streams(c, doc):
    kernels, _ = check_common(c, doc, NSTREAMS)
    copies = slices(doc, "gpu_memcpy")
    probs = []
    for name, n in (("Memcpy HtoD", 2 * NSTREAMS), ("Memcpy DtoH", NSTREAMS)):
        got = [e for e in copies if e["name"] == name]
        if len(got) != n:
            probs.append(f"{len(got)} '{name}', expected {n}")
        probs += [f"'{name}' bytes {e.get('args', {}).get('bytes')}" for e in got
                  if e.get("args", {}).get("bytes") != CHUNK_BYTES]
    sets = slices(doc, "gpu_memset")
    if len(sets) != 1 or sets[0].get("args", {}).get("bytes") != NSTREAMS * CHUNK_BYTES:
        probs.append(f"memsets: {[(e['name'], e.get('args', {}).get('bytes')) for e in sets]}")
    c.check("copies and the memset carry direction and bytes", probs)
    streams = {k.get("args", {}).get("stream") for k in kernels}
    probs = []
    if len(streams) != NSTREAMS or len(lanes_of(kernels)) != NSTREAMS:
        probs.append(f"kernels on {len(lanes_of(kernels))} lanes, streams {sorted(map(str, streams))}")
    by_stream = collections.defaultdict(set)
    for e in kernels + copies:
        by_stream[e.get("args", {}).get("stream")].add((e["pid"], e["tid"]))
    probs += [f"stream {s} spread over lanes {sorted(l)}" for s, l in by_stream.items() if len(l) > 1]
    c.check(f"{NSTREAMS} streams on {NSTREAMS} separate lanes", probs)


def check_nvtx(c, doc):
    kernels, fl = check_common(c, doc, 2 * NVTX_LAUNCHES)
    ranges = {}
    for e in slices(doc, "user_annotation"):
        xid = e.get("args", {}).get("External id")
        if xid is not None:
            ranges[xid] = e
    start_of = {(f["pid"], f["tid"], f["ts"]): s for s, f in fl.values()}
    probs = []
    for k in kernels:
        r = ranges.get(k.get("args", {}).get("External id"))
        if r is None:
            probs.append(f"kernel at {k['ts']}: External id {k.get('args', {}).get('External id')} is no range")
            continue
        if "/scale " not in r["name"]:
            probs.append(f"kernel at {k['ts']} linked to range '{r['name']}', not its launch's")
        s = start_of.get((k["pid"], k["tid"], k["ts"]))
        if s is None:
            continue  # reported by the launch check
        if s["tid"] != r["tid"] or not (r["ts"] <= s["ts"] <= r["ts"] + r["dur"]):
            probs.append(f"range '{r['name']}' does not enclose the launch at {s['ts']}")
    names = sorted(ranges[k["args"]["External id"]]["name"] for k in kernels
                   if k.get("args", {}).get("External id") in ranges)
    want = sorted(f"{w}/scale {i}" for w in ("main", "worker") for i in range(NVTX_LAUNCHES))
    if names != want:
        probs.append(f"kernels' ranges {names}")
    c.check("NVTX ranges enclose their kernels (External id)", probs)
    tids = {s["tid"] for s, f in fl.values()}
    c.check("launches from two host threads, each on its own stream lane",
            [] if len(tids) == 2 and len(lanes_of(kernels)) == 2
            else [f"launch threads {sorted(tids)}, kernel lanes {sorted(lanes_of(kernels))}"])


def main(argv):
    if len(argv) != 3 or argv[1] not in ("streams", "nvtx"):
        print(__doc__, file=sys.stderr)
        return 2
    c = Checks()
    try:
        with open(argv[2], encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        c.check("trace parses", [exc])
        return c.failed
    (check_streams if argv[1] == "streams" else check_nvtx)(c, doc)
    return c.failed


if __name__ == "__main__":
    sys.exit(main(sys.argv))
