#!/usr/bin/env python3
"""check_sqlite.py ACCELTRACE VECOPS ANNOTATE_PROG -- the SQLite writer
against the JSON writer on the same spool: each program is run once with
--keep-spool (JSON trace), and the kept spool exported again to .sqlite.
Every event of the JSON trace (phase, category, name, pid, tid, start,
duration, flow id) must be a row of `events` with the same values, every
arg the same value; every kernel joins its launch by correlation in the
views; the metadata and the devices are there; an invalid UTF-8 name is
stored as the JSON writer wrote it. Also: `-o x.sqlite` straight from
`run`, and a second export without --force refused. The JSON trace
itself exported to SQLite (`export -o x.sqlite t.json`) holds the same
events, args and flows, every top-level member, and gives the same
`stats` reports as the spool's."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

from validate_trace import pointer_arg

tool, vecops, annotate = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)


def spool_of(stderr):
    for line in stderr.splitlines():
        if "spool kept in " in line:
            return line.split("spool kept in ", 1)[1].strip()
    return None




def json_arg(v):
    """A JSON arg value as the SQLite writer stores it (hex strings are
    integers there, booleans 0/1)."""
    return int(v) if isinstance(v, bool) else pointer_arg(v)


def compare(label, doc, db, imported=False):
    con = sqlite3.connect(db)
    con.text_factory = lambda b: b.decode("utf-8")
    ver = con.execute("PRAGMA user_version").fetchone()[0]
    if ver != 2:
        failures.append(f"{label}: schema version {ver}")
    base = int(con.execute("SELECT value FROM meta WHERE key = 'base_ns'").fetchone()[0])
    strings = dict(con.execute("SELECT id, value FROM strings"))
    cats = dict(con.execute("SELECT id, name FROM categories"))
    # every arg through the view users query: arrays come back as JSON text
    args = {}
    for ev, key, value, typ in con.execute(
            "SELECT event, key, value, (SELECT json_type(args, '$.\"' || key || '\"') "
            "FROM events WHERE id = event) FROM arg_values"):
        args.setdefault(ev, {})[key] = json.loads(value) if typ in ("array", "object") \
            else int(value) if typ in ("true", "false") else value
    rows = {}
    for eid, ph, cat, name, pid, tid, start, dur, flow in con.execute(
            "SELECT id, ph, cat, name, pid, tid, start_ns, dur_ns, flow FROM events"):
        key = (ph, cats.get(cat, ""), strings[name], pid, tid if tid is not None else None,
               start - base if ph != "M" else None, dur, flow)
        rows.setdefault(key, []).append(args.get(eid, {}))
    n = 0
    for e in doc["traceEvents"]:
        ph = e["ph"]
        ts = round(float(e["ts"]) * 1000) if ph != "M" else None
        dur = round(float(e["dur"]) * 1000) if ph == "X" else None
        flow = e.get("id") if ph in "sfbe" else None
        key = (ph, e.get("cat", ""), e["name"], e["pid"], e.get("tid"), ts, dur,
               int(flow) if flow is not None else None)
        if ph == "M" and "tid" not in e:
            key = key[:4] + (None,) + key[5:]
        cands = rows.get(key)
        if not cands:
            failures.append(f"{label}: JSON event missing in SQLite: {key}")
            if len(failures) > 20:
                return
            continue
        want = {k: json_arg(v) for k, v in e.get("args", {}).items()}
        got = cands.pop(0)
        if ph != "M" and want != got:
            failures.append(f"{label}: args of {key}: JSON {want} SQLite {got}")
        n += 1
    left = sum(len(v) for v in rows.values())
    if left:
        failures.append(f"{label}: {left} SQLite events not in the JSON trace")
    unlinked = con.execute(
        "SELECT count(*) FROM kernels k WHERE k.correlation IS NULL OR NOT EXISTS "
        "(SELECT 1 FROM api_calls a WHERE a.correlation = k.correlation AND a.pid = "
        "(SELECT pid FROM api_calls WHERE correlation = k.correlation LIMIT 1))").fetchone()[0]
    if unlinked:
        failures.append(f"{label}: {unlinked} kernels join no launch by correlation")
    meta = dict(con.execute("SELECT key, value FROM meta"))
    if imported:  # every member of the JSON trace, with its value
        typed = {k: json.loads(v) if j else v
                 for k, v, j in con.execute("SELECT key, value, is_json FROM meta")}
        for k, v in doc.items():
            if k != "traceEvents" and typed.get(k) != v:
                failures.append(f"{label}: member {k}: JSON {v!r} SQLite {typed.get(k)!r}")
        con.close()
        print(f"{label}: {n} events compared, {len(doc) - 1} members")
        return
    for k in ("command", "exit_status", "clock_method", "schema_version"):
        if k not in meta:
            failures.append(f"{label}: meta lacks {k}")
    for k, v in doc.get("acceltrace", {}).items():
        if k == "command" and meta.get("command") != " ".join(v):
            failures.append(f"{label}: command {meta.get('command')!r} != {v!r}")
    devices = con.execute("SELECT count(*) FROM devices").fetchone()[0]
    if devices != len(doc.get("deviceProperties", [])):
        failures.append(f"{label}: {devices} devices, JSON has "
                        f"{len(doc.get('deviceProperties', []))}")
    for view in ("kernels", "api_calls", "memops", "ranges", "marks", "counters", "flows",
                 "processes", "threads"):
        con.execute(f"SELECT * FROM {view} LIMIT 1").fetchall()
    con.close()
    if n < 10:
        failures.append(f"{label}: only {n} events compared")
    print(f"{label}: {n} events compared")


def same_reports(label, db, imp):
    """`acceltrace stats` says the same of both databases."""
    reports = "kern_sum,api_sum,mem_sum,mem_time_sum,range_sum,kern_trace,api_trace,rank_sum"
    out = []
    for f in (db, imp):
        p = run([tool, "stats", "--report", reports, "--format", "json", f])
        if p.returncode != 0:
            failures.append(f"{label}: stats {f}: rc={p.returncode} {p.stderr[-300:]!r}")
            return
        # as multisets: rows that tie on a report's order (two calls that
        # start in the same ns) may come in either order
        out.append([(r["report"], sorted(json.dumps(x, sort_keys=True) for x in r["rows"]))
                    for r in json.loads(p.stdout)])
    if out[0] != out[1]:
        for a, b in zip(*out):
            if a != b:
                failures.append(f"{label}: report {a[0]} differs from JSON: "
                                f"{str(a[1])[:300]} vs {str(b[1])[:300]}")


with tempfile.TemporaryDirectory() as d:
    for label, prog in (("vecops", vecops), ("annotate", annotate)):
        js = os.path.join(d, f"{label}.json")
        p = run([tool, "run", "--keep-spool", "--no-summary", "-o", js, "--", prog])
        spool = spool_of(p.stderr)
        if p.returncode != 0 or not spool:
            failures.append(f"{label}: run rc={p.returncode} {p.stderr[-400:]!r}")
            continue
        db = os.path.join(d, f"{label}.sqlite")
        p = run([tool, "export", "--no-summary", spool, "-o", db])
        if p.returncode != 0:
            failures.append(f"{label}: export rc={p.returncode} {p.stderr[-400:]!r}")
            continue
        with open(js, encoding="utf-8") as f:
            doc = json.load(f)
        compare(label, doc, db)
        # The JSON trace itself exported to SQLite (issue 33 part 1): the
        # same events, args, flows and members, and the same reports.
        imp = os.path.join(d, f"{label}.imported.sqlite")
        p = run([tool, "export", "-o", imp, js])
        if p.returncode != 0:
            failures.append(f"{label}: export of the JSON rc={p.returncode} {p.stderr[-400:]!r}")
        else:
            compare(label + " (from JSON)", doc, imp, imported=True)
            same_reports(label, db, imp)
        p = run([tool, "export", "--no-summary", spool, "-o", db])
        if p.returncode == 0 or "exists" not in p.stderr or "--force" not in p.stderr:
            failures.append(f"{label}: a second export without --force: rc={p.returncode}")
        subprocess.run(["rm", "-rf", spool])
    db = os.path.join(d, "direct.sqlite")
    p = run([tool, "run", "--no-summary", "-o", db, "--", vecops])
    if p.returncode != 0 or not os.path.exists(db):
        failures.append(f"direct: run rc={p.returncode} {p.stderr[-400:]!r}")
    else:
        con = sqlite3.connect(db)
        k = con.execute("SELECT count(*) FROM kernels").fetchone()[0]
        if k == 0:
            failures.append("direct: no kernels")
        if oct(os.stat(db).st_mode & 0o777) != "0o600":
            failures.append(f"direct: mode {oct(os.stat(db).st_mode & 0o777)}")
        left = [n for n in os.listdir(d) if n.endswith(".tmp")]
        if left:
            failures.append(f"temporary files left: {left}")

for f in failures:
    print("FAIL:", f)
print(f"{0 if failures else 1} passed, {1 if failures else 0} failed")
sys.exit(1 if failures else 0)
