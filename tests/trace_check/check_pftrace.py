#!/usr/bin/env python3
"""check_pftrace.py ACCELTRACE PROTO VECOPS ANNOTATE_PROG -- the Perfetto
protobuf writer against the JSON writer on the same spool, without
Perfetto's own binaries: each program is run once with --keep-spool (JSON
trace) and the kept spool exported again to .pftrace. The output is decoded
against Perfetto's published trace proto (third_party/perfetto, compiled by
protoc into a descriptor set, read with Python's protobuf), and every JSON
event must be there with the same values: slices (name, category, process,
thread, start and duration in ns, every arg), instants, counters, async
slices, process and thread names, sort indexes and labels, every
launch -> device op flow between the same two slices, and every metadata
member. Nothing more may be there. The first two JSON traces are merged
(`merge`) to JSON and to .pftrace, which must hold the same. A third run (70 000 marks of distinct
names from Python) overflows the writer's intern tables, which must be
cleared and refilled on the way. Each JSON trace is also exported itself
(`export -o x.pftrace t.json`) and checked the same way. Also: `-o
x.pftrace` straight from run."""
import json
import os
import subprocess
import sys
import tempfile

from validate_trace import pointer_arg

tool, proto, vecops, annotate = sys.argv[1:5]
failures = []


def need(what):
    print(f"missing: {what}")
    sys.exit(1 if os.environ.get("CI") else 77)


try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError:
    need("Python protobuf (scripts/python-env.sh)")


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)


def trace_class(d):
    """Perfetto's Trace message, from the vendored proto."""
    ds = os.path.join(d, "perfetto.desc")
    try:
        p = run(["protoc", "-I", os.path.dirname(proto), "--descriptor_set_out=" + ds,
                 os.path.basename(proto)])
    except FileNotFoundError:
        need("protoc (Debian protobuf-compiler)")
    if p.returncode:
        failures.append(f"protoc: {p.stderr[-400:]}")
        return None
    fds = descriptor_pb2.FileDescriptorSet()
    with open(ds, "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("perfetto.protos.Trace"))


def annotation_value(a, strings):
    k = a.WhichOneof("value")
    if a.array_values:
        return [annotation_value(x, strings) for x in a.array_values]
    if k == "legacy_json_value":
        return json.loads(a.legacy_json_value)
    if k == "string_value_iid":
        if a.string_value_iid not in strings:
            failures.append(f"string value iid {a.string_value_iid} used before it is interned")
        return strings.get(a.string_value_iid)
    return getattr(a, k) if k else None


BOOTTIME = 6


class Sequence:
    """What trace processor keeps per trusted_packet_sequence_id
    (proto_trace_reader.cc, clock_synchronizer.h): the incremental state
    (interned strings, TracePacketDefaults), dropped when a packet sets
    SEQ_INCREMENTAL_STATE_CLEARED, and its sequence-scoped clocks (ids 64 to
    127) from ClockSnapshots: an incremental clock's value moves by each
    packet's timestamp and is reset by a snapshot."""

    def __init__(self):
        self.clear()
        self.clocks = {}  # id -> [value ns, BOOTTIME - value at the snapshot, incremental]
        self.deltas = self.whole = 0  # timestamps on the delta clock, on BOOTTIME
        self.clears = 0

    def clear(self):
        self.names, self.keys, self.values, self.cats = {}, {}, {}, {}
        self.defaults = None

    def timestamp(self, p):
        """The packet's timestamp on BOOTTIME (the trace's clock)."""
        clock = p.timestamp_clock_id or (self.defaults.timestamp_clock_id
                                         if self.defaults is not None else 0)
        if clock in (0, BOOTTIME):
            self.whole += p.timestamp_clock_id == BOOTTIME
            return p.timestamp
        if clock not in self.clocks:
            failures.append(f"timestamp on clock {clock}, never in a ClockSnapshot")
            return p.timestamp
        c = self.clocks[clock]
        self.deltas += 1
        t = p.timestamp - (1 << 64) if p.timestamp >= 1 << 63 else p.timestamp  # int64
        c[0] = c[0] + t if c[2] else t
        return c[0] + c[1]


class Decoded:
    """The packets, resolved: tracks, slices, instants, counters, flows."""

    def __init__(self, trace):
        self.tracks = {}
        self.slices, self.instants, self.counters, self.flows = [], [], [], {}
        self.async_begin, self.async_end = [], []
        self.meta = {}
        self.packets = len(trace.packet)
        self.seqs = {}
        self.late = 0
        open_ = {}
        for p in trace.packet:
            sq = self.seqs.setdefault(p.trusted_packet_sequence_id, Sequence())
            if not p.trusted_packet_sequence_id:
                failures.append("packet without a sequence")
            if p.sequence_flags & 1:
                sq.clear()
                sq.clears += 1
            if p.HasField("trace_packet_defaults"):
                sq.defaults = p.trace_packet_defaults
            names, keys, values, cats = sq.names, sq.keys, sq.values, sq.cats
            for t, n in ((names, "event_names"), (keys, "debug_annotation_names"),
                         (cats, "event_categories")):
                for x in getattr(p.interned_data, n):
                    t[x.iid] = x.name
            for x in p.interned_data.debug_annotation_string_values:
                values[x.iid] = x.str.decode("utf-8")
            if p.HasField("clock_snapshot"):
                cs = {c.clock_id: c for c in p.clock_snapshot.clocks}
                if BOOTTIME not in cs:
                    failures.append("a ClockSnapshot without BOOTTIME")
                    continue
                for cid, c in cs.items():
                    if cid != BOOTTIME:
                        sq.clocks[cid] = [c.timestamp, cs[BOOTTIME].timestamp - c.timestamp,
                                          c.is_incremental]
                continue  # trace processor reads nothing else of it
            if p.HasField("track_descriptor"):
                self.tracks[p.track_descriptor.uuid] = p.track_descriptor
            if p.HasField("chrome_events"):
                for m in p.chrome_events.metadata:
                    k = m.WhichOneof("value")
                    v = json.loads(m.json_value) if k == "json_value" else getattr(m, k)
                    self.meta[m.name] = v
            if not p.HasField("track_event"):
                continue
            if not p.sequence_flags & 2:
                failures.append("a track event without SEQ_NEEDS_INCREMENTAL_STATE")
            te = p.track_event
            ts = sq.timestamp(p)
            track = te.track_uuid if te.HasField("track_uuid") else (
                sq.defaults.track_event_defaults.track_uuid if sq.defaults is not None else 0)
            name = te.name if te.HasField("name") else names.get(te.name_iid)
            if name is None and te.name_iid:
                failures.append(f"event name iid {te.name_iid} used before it is interned")
            cat = cats.get(te.category_iids[0], "") if te.category_iids else ""
            args = {}
            for a in te.debug_annotations:
                if not a.HasField("name") and a.name_iid not in keys:
                    failures.append(f"arg name iid {a.name_iid} used before it is interned")
                args[a.name if a.HasField("name") else keys.get(a.name_iid)] = \
                    annotation_value(a, values)
            tr = self.tracks.get(track)
            if tr is None:
                failures.append(f"event on a track not described yet: {track}")
                continue
            # a thread's track for its slices that came late: the thread's
            late = tr.parent_uuid in self.tracks and \
                self.tracks[tr.parent_uuid].HasField("thread")
            where = self.where(self.tracks[tr.parent_uuid] if late else tr)
            self.late += late
            ev = {"name": name, "cat": cat, "ts": ts, "args": args, "where": where,
                  "flow_out": list(te.flow_ids), "flow_in": list(te.terminating_flow_ids)}
            if te.type == te.TYPE_COUNTER:
                v = te.double_counter_value if te.HasField("double_counter_value") \
                    else te.counter_value
                self.counters.append((tr.parent_uuid and self.where(
                    self.tracks[tr.parent_uuid])[0], tr.name, ts, v))
            elif tr.HasField("process") or tr.HasField("thread") or late:
                if te.type == te.TYPE_INSTANT:
                    self.instants.append(ev)
                else:  # paired below, in trace processor's order
                    open_.setdefault(track, []).append((ts, len(open_.get(track, ())),
                                                        te.type == te.TYPE_SLICE_BEGIN, ev))
            else:  # an async track
                pid = self.where(self.tracks[tr.parent_uuid])[0]
                if te.type == te.TYPE_SLICE_BEGIN:
                    self.async_begin.append((pid, name, cat, ts, json.dumps(args)))
                else:
                    self.async_end.append((pid, tr.name, ts))
        # Trace processor sorts the packets by timestamp (those of equal
        # timestamps stay in file order) and then pairs each SLICE_END with
        # the innermost open SLICE_BEGIN of its track.
        for marks in open_.values():
            stack = []
            for ts, _, begin, ev in sorted(marks, key=lambda m: (m[0], m[1])):
                if begin:
                    stack.append(ev)
                elif not stack:
                    failures.append(f"a slice end at {ts} with no slice open")
                else:
                    b = stack.pop()
                    b["dur"] = ts - b["ts"]
                    self.slices.append(b)
            if stack:
                failures.append(f"{len(stack)} slices never ended")

    @staticmethod
    def where(tr):
        if tr.HasField("thread"):
            return (tr.thread.pid, tr.thread.tid)
        return (tr.process.pid, None)


norm = pointer_arg  # a JSON arg as the protobuf carries it


def take(pool, key, label, what):
    c = pool.get(key)
    if not c:
        failures.append(f"{label}: JSON {what} missing in the pftrace: {key}")
        return None
    return c.pop(0)


def compare_events(label, doc, dec):
    slices, instants = {}, {}
    for s in dec.slices:
        slices.setdefault((s["cat"], s["name"], s["where"], s["ts"], s["dur"]), []).append(s)
    for s in dec.instants:
        instants.setdefault((s["cat"], s["name"], s["where"], s["ts"]), []).append(s)
    counters = {}
    for c in dec.counters:
        counters.setdefault(c, []).append(1)
    abegin = {}
    for b in dec.async_begin:
        abegin.setdefault(b, []).append(1)
    aend = {}
    for e in dec.async_end:
        aend.setdefault(e, []).append(1)
    by_start = {(s["where"], s["ts"]): s for s in dec.slices}
    n, flows_json = 0, {}
    for e in doc["traceEvents"]:
        ph = e["ph"]
        ts = round(float(e["ts"]) * 1000) if ph != "M" else None
        where = (e["pid"], e.get("tid"))
        args = {k: norm(v) for k, v in e.get("args", {}).items()}
        if ph == "X":
            s = take(slices, (e.get("cat", ""), e["name"], where, ts,
                              round(float(e["dur"]) * 1000)), label, "slice")
            if s is not None and s["args"] != args:
                failures.append(f"{label}: args of {e['name']}@{ts}: JSON {args} pf {s['args']}")
        elif ph == "i":
            s = take(instants, (e.get("cat", ""), e["name"], where, ts), label, "instant")
            if s is not None and s["args"] != args:
                failures.append(f"{label}: args of {e['name']}@{ts}: JSON {args} pf {s['args']}")
        elif ph == "C":
            for k, v in e.get("args", {}).items():
                name = e["name"] if k == e["name"] else f"{e['name']} {k}"
                take(counters, (e["pid"], name, ts, v), label, "counter")
        elif ph == "b":
            take(abegin, (e["pid"], e["name"], e.get("cat", ""), ts, json.dumps(args)), label,
                 "async begin")
        elif ph == "e":
            take(aend, (e["pid"], e["name"], ts), label, "async end")
        elif ph in "sf":
            flows_json.setdefault(e["id"], {})[ph] = (where, ts)
        elif ph == "M":
            compare_metadata_event(label, e, dec)
        n += 1
    for what, pool in (("slices", slices), ("instants", instants), ("counters", counters),
                       ("async begins", abegin), ("async ends", aend)):
        left = sum(len(v) for v in pool.values())
        if left:
            failures.append(f"{label}: {left} pftrace {what} not in the JSON trace")
    compare_flows(label, flows_json, dec, by_start)
    return n


def compare_flows(label, flows_json, dec, by_start):
    want = set()
    for fid, sf in flows_json.items():
        if "s" not in sf or "f" not in sf:
            failures.append(f"{label}: JSON flow {fid} is not a pair")
            continue
        want.add((sf["s"], sf["f"]))
    out = {}
    for s in dec.slices:
        for f in s["flow_out"]:
            out[f] = (s["where"], s["ts"])
    got = set()
    for s in dec.slices + dec.instants:
        for f in s["flow_in"]:
            if f not in out:
                failures.append(f"{label}: flow {f} ends on {s['name']} but starts nowhere")
                continue
            got.add((out[f], (s["where"], s["ts"])))
    if want != got:
        failures.append(f"{label}: flows differ: {len(want - got)} JSON only, "
                        f"{len(got - want)} pftrace only")
    for s in dec.instants:
        if s["flow_in"]:
            failures.append(f"{label}: a flow ended on an instant (no slice took it)")
    print(f"{label}: {len(got)} flows compared")


def compare_metadata_event(label, e, dec):
    a = e.get("args", {})
    thread = e["name"].startswith("thread_")
    tr = None
    for t in dec.tracks.values():
        if thread and t.HasField("thread") and (t.thread.pid, t.thread.tid) == (e["pid"],
                                                                                 e["tid"]):
            tr = t
        if not thread and t.HasField("process") and t.process.pid == e["pid"]:
            tr = t
    if tr is None:
        failures.append(f"{label}: no track for {e}")
        return
    got = {"process_name": lambda: tr.process.process_name,
           "thread_name": lambda: tr.thread.thread_name,
           "process_sort_index": lambda: tr.process.legacy_sort_index,
           "thread_sort_index": lambda: tr.sibling_order_rank,
           "process_labels": lambda: ",".join(tr.process.process_labels)}
    want = a.get("name", a.get("sort_index", a.get("labels")))
    if e["name"] not in got or got[e["name"]]() != want:
        failures.append(f"{label}: {e['name']} of {e['pid']}: JSON {want!r}")


def compare(label, doc, dec):
    n = compare_events(label, doc, dec)
    for k, v in doc.items():
        if k == "traceEvents":
            continue
        if k not in dec.meta:
            failures.append(f"{label}: metadata {k} missing")
        elif dec.meta[k] != v:
            failures.append(f"{label}: metadata {k}: JSON {v!r} pf {dec.meta[k]!r}")
    extra = set(dec.meta) - set(doc)
    if extra:
        failures.append(f"{label}: metadata not in the JSON: {sorted(extra)}")
    if n < 10:
        failures.append(f"{label}: only {n} events compared")
    deltas = sum(q.deltas for q in dec.seqs.values())
    whole = sum(q.whole for q in dec.seqs.values())
    print(f"{label}: {n} events, {dec.packets} packets compared, {len(dec.seqs)} sequences, "
          f"{deltas} delta timestamps, {whole} earlier ones written whole")
    return deltas, whole


def decode(trace_cls, path):
    t = trace_cls()
    with open(path, "rb") as f:
        try:
            t.ParseFromString(f.read())
        except Exception as e:  # DecodeError: not Perfetto's Trace
            failures.append(f"{path}: {e}")
    return Decoded(t)


with tempfile.TemporaryDirectory() as d:
    Trace = trace_class(d)
    # "interning": more distinct names than the writer's intern tables hold
    # (PF_INTERN_MAX), so that they are cleared and sent again mid-trace.
    here = os.path.dirname(os.path.abspath(__file__))
    py_env = dict(os.environ,
                  PYTHONPATH=os.path.join(here, "..", "..", "python"),
                  ACCELTRACE_LIBRARY=os.path.join(os.path.dirname(tool), "..", "lib",
                                                  "libacceltrace.so"))
    marks = "import acceltrace\nfor i in range(70000): acceltrace.mark('m%d' % i)\n"
    for label, prog, env in (("vecops", [vecops], None), ("annotate", [annotate], None),
                             ("interning", [sys.executable, "-c", marks], py_env)):
        if Trace is None:
            break
        js = os.path.join(d, f"{label}.json")
        p = run([tool, "run", "--keep-spool", "--no-summary", "-o", js, "--"] + prog, env=env)
        spool = next((ln.split("spool kept in ", 1)[1].strip() for ln in p.stderr.splitlines()
                      if "spool kept in " in ln), None)
        if p.returncode != 0 or not spool:
            failures.append(f"{label}: run rc={p.returncode} {p.stderr[-400:]!r}")
            continue
        pf = os.path.join(d, f"{label}.pftrace")
        p = run([tool, "export", "--no-summary", spool, "-o", pf])
        subprocess.run(["rm", "-rf", spool])
        if p.returncode != 0:
            failures.append(f"{label}: export rc={p.returncode} {p.stderr[-400:]!r}")
            continue
        dec = decode(Trace, pf)
        with open(js, encoding="utf-8") as f:
            doc = json.load(f)
        deltas, whole = compare(label, doc, dec)
        # the encodings the check must have seen (docs/pftrace.md, "Sequences")
        if label == "vecops" and (len(dec.seqs) < 3 or deltas < 100):
            failures.append(f"vecops: {len(dec.seqs)} sequences, {deltas} delta timestamps")
        # The JSON trace itself exported (issue 33 part 1): the same again;
        # a run's JSON has its process-lifetime slice last: it comes late.
        imp = os.path.join(d, f"{label}.imported.pftrace")
        p = run([tool, "export", "-o", imp, js])
        if p.returncode != 0:
            failures.append(f"{label}: export of the JSON rc={p.returncode} {p.stderr[-400:]!r}")
        else:
            idec = decode(Trace, imp)
            compare(label + " (from JSON)", doc, idec)
        again = sum(max(q.clears - 1, 0) for q in dec.seqs.values())
        if label == "interning" and again < 1:
            failures.append("interning: the intern tables were never cleared mid-trace")
    # A slice and an instant that begin at one time on one thread and share
    # strings: the slice's begin is held (begins of one time go out longest
    # first), and the instant, which uses the strings the begin interned,
    # must not be written before it. Then a slice that encloses one written
    # before it, from the same time, coming after a later event (as `run`
    # writes a process's lifetime slice): on the thread's late track.
    tie = os.path.join(d, "tie.json")
    evs = [{"ph": "X", "cat": "cpu_op", "name": "same", "pid": 1, "tid": 1, "ts": 10.0,
            "dur": 5.0, "args": {"k": "v"}},
           {"ph": "i", "cat": "cpu_op", "name": "same", "pid": 1, "tid": 1, "ts": 10.0,
            "s": "t", "args": {"k": "v"}}]
    evs += [{"ph": "X", "cat": "cpu_op", "name": f"n{i}", "pid": 1, "tid": 1,
             "ts": 20.0 + i, "dur": 0.5} for i in range(9)]
    evs += [{"ph": "X", "cat": "cpu_op", "name": "lifetime", "pid": 1, "tid": 1, "ts": 10.0,
             "dur": 30.0}]
    with open(tie, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": evs}, f)
    p = run([tool, "export", "-o", os.path.join(d, "tie.pftrace"), tie])
    if p.returncode != 0:
        failures.append(f"tie: export rc={p.returncode} {p.stderr[-400:]!r}")
    elif Trace is not None:
        tdec = decode(Trace, os.path.join(d, "tie.pftrace"))
        with open(tie, encoding="utf-8") as f:
            compare("tie", json.load(f), tdec)
        if not tdec.late:
            failures.append("tie: the late enclosing slice is not on a late track")
    # merge -o x.pftrace: the merged Perfetto trace holds what the merged
    # JSON of the same inputs holds (the merged JSON, imported as export
    # imports a JSON trace)
    ins = [os.path.join(d, f"{k}.json") for k in ("vecops", "annotate")]
    if Trace is not None and all(os.path.exists(x) for x in ins):
        mj, mp = os.path.join(d, "merged.json"), os.path.join(d, "merged.pftrace")
        pj, pp = run([tool, "merge", "-o", mj] + ins), run([tool, "merge", "-o", mp] + ins)
        if pj.returncode or pp.returncode:
            failures.append(f"merge: rc={pj.returncode}/{pp.returncode} {pp.stderr[-400:]!r}")
        else:
            with open(mj, encoding="utf-8") as f:
                merged = json.load(f)
            dec = decode(Trace, mp)
            compare("merge", merged, dec)
            if len({e["pid"] for e in merged["traceEvents"] if e["ph"] == "X"}) < 3:
                failures.append("merge: the merged trace has fewer than 3 processes")
    pf = os.path.join(d, "direct.pftrace")
    p = run([tool, "run", "--no-summary", "-o", pf, "--", vecops])
    if p.returncode != 0 or not os.path.exists(pf):
        failures.append(f"direct: run rc={p.returncode} {p.stderr[-400:]!r}")
    elif Trace is not None:
        dec = decode(Trace, pf)
        if not any(s["cat"] == "kernel" for s in dec.slices):
            failures.append("direct: no kernels")
        # run streams: the process-lifetime slice, which begins with the
        # first call, is written last; trace processor must still see it
        # enclose every slice of its thread
        life = [s for s in dec.slices if s["args"].get("acceltrace") == "process lifetime"]
        if not life:
            failures.append("direct: no process-lifetime slice")
        for lt in life:
            out = [s["name"] for s in dec.slices if s["where"] == lt["where"] and
                   (s["ts"] < lt["ts"] or s["ts"] + s["dur"] > lt["ts"] + lt["dur"])]
            if out:
                failures.append(f"direct: {len(out)} slices outside the process lifetime "
                                f"({lt['dur']} ns), e.g. {out[0]}")
        if oct(os.stat(pf).st_mode & 0o777) != "0o600":
            failures.append(f"direct: mode {oct(os.stat(pf).st_mode & 0o777)}")
for f in failures[:30]:
    print("FAIL:", f)
print(f"{0 if failures else 1} passed, {1 if failures else 0} failed")
sys.exit(1 if failures else 0)
