#!/usr/bin/env python3
"""check_summary_limits.py ACCELTRACE GEN CASE -- `acceltrace summary` on
figures and sizes at the edge (issue 30 part 4). CASE is one of:

  not_finite  durations of 1e308 whose sums overflow a double, 1e400, a
              negative duration, counters holding 1e400: exit 0; the JSON
              parses with a strict reader (no NaN/Infinity), keeps every row
              and section, names each figure that overflowed ("overflow")
              where the table and the CSV say the same; slices whose
              duration was not a finite non-negative number are counted.
  long_name   one 128 MiB kernel name in a small .json.gz, under a CPU-time
              limit (RLIMIT_CPU 30 s; it took minutes when a string's cost
              was quadratic) and an address-space limit of 512 MiB: the name
              is kept truncated with a marker, and the truncation is said.
  many        2*10^5 distinct names, 2*10^5 lanes, 2*10^5 processes, each
              under an address-space limit of 256 MiB and 20 s of CPU (it
              took ~4.3 KiB a name, ~2.1 KiB a lane, 718 MB and 14 s of CPU
              for the processes, found by a linear scan): every name, lane
              and process is counted, the top rows and one "other" row shown.

Limits are on CPU time and address space, never on wall time, so a busy
machine does not fail the test."""
import json
import os
import resource
import subprocess
import sys
import tempfile

tool, gen, case = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def fail(msg):
    failures.append(msg)


def limited(cpu_s=None, as_mb=None):
    def pre():
        if cpu_s:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
        if as_mb:
            resource.setrlimit(resource.RLIMIT_AS, (as_mb << 20, as_mb << 20))
    return pre


def summary(*args, cpu_s=None, as_mb=None):
    return subprocess.run([tool, "summary", *args], capture_output=True, text=True,
                          env=dict(os.environ, COLUMNS="100"), timeout=600,
                          preexec_fn=limited(cpu_s, as_mb))


def strict_json(text, what):
    def bad_constant(c):
        raise ValueError("non-JSON constant %s" % c)
    try:
        return json.loads(text, parse_constant=bad_constant)
    except ValueError as e:
        fail("%s: not strict JSON: %s: %r" % (what, e, text[:300]))
        return None


def X(cat, name, ts, dur, pid=1, tid=1):
    return ('{"ph":"X","cat":"%s","name":"%s","pid":%d,"tid":%d,"ts":%s,"dur":%s}'
            % (cat, name, pid, tid, ts, dur))


def case_not_finite(d):
    path = os.path.join(d, "nf.json")
    ev = [X("kernel", "big", 1, "1e308", tid=7), X("kernel", "big", 2, "1e308", tid=7),
          X("kernel", "small", 2, 3, tid=8), X("kernel", "bad", 3, "1e400", tid=8),
          X("kernel", "bad", 9, -5, tid=8), X("cpu_op", "op", 2, "1e300"),
          X("cpu_op", "op2", 2, 1, pid=2)]
    with open(path, "w") as f:
        f.write('{"acceltrace":{"skew":{"device_before_launch":1,"max_ns":1e400},'
                '"errors":[]},"traceEvents":[%s]}' % ",\n".join(ev))
    for unit in ("us", "ns"):
        js = summary("--format=json", "--timeunit=" + unit, path)
        tb = summary("--timeunit=" + unit, path)
        cs = summary("--format=csv", "--timeunit=" + unit, path)
        for name, p in (("json", js), ("table", tb), ("csv", cs)):
            if p.returncode != 0:
                fail("%s %s: rc=%d %r" % (name, unit, p.returncode, p.stderr[-300:]))
        o = strict_json(js.stdout, "json " + unit)
        if o is None:
            continue
        dev = {r["name"]: r for r in o.get("device", {}).get("rows", [])}
        host = {r["name"]: r for r in o.get("host", {}).get("rows", [])}
        if set(dev) != {"big", "small", "bad"} or set(host) != {"op", "op2"}:
            fail("json %s: rows dropped: device %s host %s" % (unit, sorted(dev), sorted(host)))
        if dev.get("big", {}).get("total") != "overflow" or dev.get("big", {}).get("count") != 2:
            fail("json %s: big's total not named as overflow: %r" % (unit, dev.get("big")))
        if len(o.get("processes", [])) != 2:
            fail("json %s: process rows dropped: %r" % (unit, o.get("processes")))
        if not isinstance(o.get("overflowed"), int) or o["overflowed"] < 1:
            fail("json %s: no count of overflowed figures: %r" % (unit, o.get("overflowed")))
        if o.get("bad_durations") != 2:
            fail("json %s: 1e400 and -5 not counted: %r" % (unit, o.get("bad_durations")))
        sk = (o.get("counters") or {}).get("skew", {})
        if sk.get("device_before_launch") != 1 or sk.get("max_ns") != "1e400":
            fail("json %s: counters lost or changed: %r" % (unit, o.get("counters")))
        # the table says the same: the row is there, its total named
        rows = [l for l in tb.stdout.splitlines() if l.strip().startswith("big ")]
        if len(rows) != 1 or "overflow" not in rows[0]:
            fail("table %s: big's row %r" % (unit, rows))
        if "overflow" not in tb.stdout.split("Counters")[0].split("\n")[-2] and \
                "overflowed" not in tb.stdout:
            fail("table %s: the overflow is not said: %r" % (unit, tb.stdout[-600:]))
        if "2 slices" not in tb.stdout or "duration" not in tb.stdout:
            fail("table %s: bad durations not said: %r" % (unit, tb.stdout[-600:]))
        if len(tb.stdout) > 8000 or any(len(l) > 200 for l in tb.stdout.splitlines()):
            fail("table %s: figures of hundreds of digits: %r" % (unit, tb.stdout[:400]))
        big_csv = [l for l in cs.stdout.splitlines() if l.startswith('device,"big"')]
        if len(big_csv) != 1 or ",overflow," not in big_csv[0]:
            fail("csv %s: big's row %r" % (unit, big_csv))


def case_long_name(d):
    path = os.path.join(d, "long.json.gz")
    n = 128 << 20
    subprocess.run([sys.executable, gen, "longname", path, str(n)], check=True)
    p = summary("--format=json", path, cpu_s=30, as_mb=512)
    if p.returncode != 0:
        fail("long name: rc=%d (killed: out of CPU time or memory) %r"
             % (p.returncode, p.stderr[-300:]))
        return
    o = strict_json(p.stdout, "long name")
    if o is None:
        return
    rows = o["device"]["rows"]
    names = [r["name"] for r in rows]
    if "short" not in names or len(rows) != 2:
        fail("long name: rows %r" % [x[:40] for x in names])
    longn = [x for x in names if x != "short"]
    if longn:
        x = longn[0]
        if not x.startswith("k" * 1000) or len(x) > 70000 or "truncated" not in x:
            fail("long name: kept %d bytes, ends %r" % (len(x), x[-80:]))
        if str(n - 65536) not in x and str(n) not in x:
            fail("long name: the marker does not say how long it was: %r" % x[-80:])
    if o.get("truncated_strings") != 1:
        fail("long name: truncation not counted: %r" % o.get("truncated_strings"))
    t = summary(path, cpu_s=30, as_mb=512)
    if t.returncode != 0 or "truncated" not in t.stdout:
        fail("long name: the table does not say so: rc=%d %r" % (t.returncode, t.stdout[-500:]))
    # what is cut is still checked: a file yajl refuses is refused
    body = "k" * 100000
    for what, bad in (("control byte", "\x01"), ("invalid UTF-8", "\udcff"),
                      ("bad escape", "\\q"), ("unterminated", None)):
        p2 = os.path.join(d, "bad.json")
        name = body + (bad or "") + "k" * 1000 + ('"' if bad else "")
        with open(p2, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write('{"traceEvents":[{"ph":"X","cat":"kernel","ts":1,"dur":1,"name":"%s}]}'
                    % name if bad else '{"traceEvents":[{"name":"%s' % name)
        r = summary(p2)
        if r.returncode != 2 or "not valid JSON" not in r.stderr:
            fail("long name with %s past the cap: rc=%d %r" % (what, r.returncode, r.stderr))
    # a run of UTF-8 continuation bytes (never a character boundary) past
    # the cap and from the cap on: refused, not a crash, not held whole
    for lead in (100000, 65530):
        p4 = os.path.join(d, "cont.json")
        with open(p4, "wb") as f:
            f.write(b'{"traceEvents":[{"ph":"X","cat":"kernel","ts":1,"dur":1,"name":"'
                    + b"k" * lead + b"\x80" * 300000 + b'"}]}')
        r = summary(p4, cpu_s=30, as_mb=512)
        if r.returncode != 2 or "not valid JSON" not in r.stderr:
            fail("continuation bytes after %d: rc=%d %r" % (lead, r.returncode, r.stderr))
    # escapes and multi-byte characters across the cap are kept whole
    p3 = os.path.join(d, "edge.json")
    name = r"\u00e9" * 10 + "\u00e9" * 40000 + r"\\" * 3  # escapes, 2-byte chars
    with open(p3, "w", encoding="utf-8") as f:
        f.write('{"traceEvents":[{"ph":"X","cat":"kernel","ts":1,"dur":1,"name":"%s"}]}' % name)
    r = summary("--format=json", p3)
    o = strict_json(r.stdout, "edge") if r.returncode == 0 else None
    if o is None or "truncated" not in o["device"]["rows"][0]["name"] \
            or not o["device"]["rows"][0]["name"].startswith("é" * 1000):
        fail("multi-byte name past the cap: rc=%d %r" % (r.returncode, r.stderr[-300:]))


def case_many(d):
    n = 200000
    for kind, section in (("names", "device"), ("lanes", "host"), ("pids", "host")):
        path = os.path.join(d, kind + ".json")
        subprocess.run([sys.executable, gen, kind, path, str(n)], check=True)
        p = summary("--format=json", path, as_mb=256, cpu_s=20)
        if p.returncode != 0:
            fail("%s: rc=%d %r" % (kind, p.returncode, p.stderr[-300:]))
            continue
        o = strict_json(p.stdout, kind)
        if not isinstance(o, dict) or section not in o:
            fail("%s: no %s section: %r" % (kind, section, p.stdout[:300]))
            continue
        sec = o[section]
        total = sum(r["count"] for r in sec["rows"]) + sec.get("other", {}).get("count", 0)
        if total != n:
            fail("%s: %d slices counted of %d" % (kind, total, n))
        if kind == "names" and sec.get("names") != n:
            fail("names: %r distinct names said, %d in the trace" % (sec.get("names"), n))
        if kind in ("lanes", "pids") and sec.get("lanes") != n:
            fail("%s: %r lanes said, %d in the trace" % (kind, sec.get("lanes"), n))
        if kind == "pids":
            procs = o.get("processes", [])
            if len(procs) != 1001 or procs[-1].get("other") != n - 1000 or \
                    sum(x["host_slices"] for x in procs) != n:
                fail("pids: %d process rows, last %r" % (len(procs), procs[-1:]))
        r5 = strict_json(summary("--format=json", "--rows=5", path).stdout, kind + " --rows=5")
        if kind == "names" and r5 and (len(r5["device"]["rows"]) != 5
                                       or r5["device"].get("other", {}).get("names") != n - 5):
            fail("--rows=5: %r" % {k: v for k, v in r5["device"].items() if k != "rows"})
        t = summary(path, as_mb=256)
        if t.returncode != 0 or ("%d names" % n) not in t.stdout and kind == "names":
            fail("%s table: rc=%d %r" % (kind, t.returncode, t.stdout[:300]))


if case == "many":
    for bad in ("0", "-1", "x", "1e3"):
        b = summary("--rows=" + bad, "-")
        if b.returncode != 2 or "--rows" not in b.stderr:
            fail("--rows=%s: rc=%d %r" % (bad, b.returncode, b.stderr))
with tempfile.TemporaryDirectory() as d:
    {"not_finite": case_not_finite, "long_name": case_long_name, "many": case_many}[case](d)
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("summary limits (%s): ok" % case)
