"""acceltrace.recipe.convert -- one rank's trace into Parquet tables, once.

A trace (acceltrace JSON, .json.gz, a torch.profiler JSON trace, an
acceltrace .sqlite trace) becomes four tables with fixed columns, times in
integer nanoseconds from the trace's own time zero:

  kernels  start_ns, end_ns, name, device, queue, correlation, external_id
  api      start_ns, end_ns, name, pid, tid, correlation     (runtime calls)
  memops   start_ns, end_ns, name, device, queue, kind, bytes, correlation
  ranges   start_ns, end_ns, name, pid, tid, cat  (user ranges, torch ops)

and ``info.json``: the rank facts (rank, world size, trace name, wall-clock
start and end) and the source's size and mtime. They are kept in
``.acceltrace-cache/<file name>/`` beside the trace (or under
``~/.cache/acceltrace/recipe`` where that folder is not writable) and made
again when the trace's size or mtime changes. The rank column is not stored:
the engines add it (a rank may come from file order).

A JSON trace is read whole, one rank at a time, and dropped once its
tables are written: memory is one rank's trace, whatever the number of ranks.
"""

import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

from . import RecipeError

VERSION = 1  # of this layout; a cache of another version is made again
I64, STR = pa.int64(), pa.string()
SCHEMAS = {
    "kernels": pa.schema([("start_ns", I64), ("end_ns", I64), ("name", STR), ("device", I64),
                          ("queue", I64), ("correlation", I64), ("external_id", I64)]),
    "api": pa.schema([("start_ns", I64), ("end_ns", I64), ("name", STR), ("pid", I64),
                      ("tid", I64), ("correlation", I64)]),
    "memops": pa.schema([("start_ns", I64), ("end_ns", I64), ("name", STR), ("device", I64),
                         ("queue", I64), ("kind", STR), ("bytes", I64), ("correlation", I64)]),
    "ranges": pa.schema([("start_ns", I64), ("end_ns", I64), ("name", STR), ("pid", I64),
                         ("tid", I64), ("cat", STR)]),
}
KERNEL_CATS = {"kernel", "Kernel"}
MEMOP_CATS = {"gpu_memcpy": "copy", "Memcpy": "copy", "gpu_memset": "fill", "Memset": "fill"}
RANGE_CATS = {"user_annotation", "cpu_op", "gpu_user_annotation"}


def is_api_cat(cat):
    return cat.endswith("_runtime") or cat.endswith("_driver") or cat == "runtime"


def _int(v):
    """An integer arg (kineto writes some as strings), else None."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v
    try:
        return int(v, 0) if isinstance(v, str) else int(v)
    except (ValueError, TypeError, OverflowError):
        return None


def _fit(v):
    """An integer that fits int64 (an OpenCL handle may not), else None."""
    return v if v is not None and -(1 << 63) <= v < (1 << 63) else None


def read_json(path):
    """(columns per table, facts) of a JSON trace."""
    try:
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
            doc = json.load(f)
    except (OSError, EOFError, ValueError) as exc:  # JSONDecodeError, bad gzip, bad UTF-8
        raise RecipeError("%s: not a readable trace (%s)" % (path, exc)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise RecipeError("%s: not a trace (no traceEvents list)" % path)
    cols = {t: {f.name: [] for f in s} for t, s in SCHEMAS.items()}
    k, a, m, r = cols["kernels"], cols["api"], cols["memops"], cols["ranges"]
    for e in doc.pop("traceEvents"):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        if not isinstance(cat, str):
            continue
        try:
            start = round(float(e["ts"]) * 1000)
            end = start + round(float(e.get("dur") or 0) * 1000)
        except (KeyError, TypeError, ValueError):
            raise RecipeError("%s: an event without a numeric ts/dur: %.200s"
                              % (path, json.dumps(e))) from None
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        name = str(e.get("name", ""))
        if cat in KERNEL_CATS or cat in MEMOP_CATS:
            dev = _int(args.get("device"))
            dev = _int(e.get("pid")) if dev is None else dev
            q = _int(args.get("stream"))
            q = _int(e.get("tid")) if q is None else q
            t = k if cat in KERNEL_CATS else m
            for c, v in (("start_ns", start), ("end_ns", end), ("name", name), ("device", dev),
                         ("queue", q), ("correlation", _fit(_int(args.get("correlation"))))):
                t[c].append(v)
            if t is k:
                k["external_id"].append(_fit(_int(args.get("External id"))))
            else:
                m["kind"].append(MEMOP_CATS[cat])
                m["bytes"].append(_fit(_int(args.get("bytes"))))
        elif is_api_cat(cat):
            for c, v in (("start_ns", start), ("end_ns", end), ("name", name),
                         ("pid", _int(e.get("pid"))), ("tid", _int(e.get("tid"))),
                         ("correlation", _fit(_int(args.get("correlation"))))):
                a[c].append(v)
        elif cat in RANGE_CATS:
            for c, v in (("start_ns", start), ("end_ns", end), ("name", name),
                         ("pid", _int(e.get("pid"))), ("tid", _int(e.get("tid"))), ("cat", cat)):
                r[c].append(v)
    dist = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
    base = _int(doc.get("baseTimeNanoseconds"))
    return cols, {"rank": _int(dist.get("rank")), "world_size": _int(dist.get("world_size")),
                  "trace_name": doc.get("traceName") if isinstance(doc.get("traceName"), str)
                  else None, "wall_zero_ns": base}


SQLITE_QUERIES = {
    "kernels": "SELECT start_ns - {b}, end_ns - {b}, name, device, coalesce(stream, lane), "
               "correlation, external_id FROM kernels",
    "api": "SELECT start_ns - {b}, end_ns - {b}, name, pid, tid, correlation FROM api_calls",
    "memops": "SELECT start_ns - {b}, end_ns - {b}, name, device, lane, kind, bytes, correlation "
              "FROM memops",
    "ranges": "SELECT start_ns - {b}, end_ns - {b}, name, pid, tid, category FROM slices "
              "WHERE ph = 'X' AND category IN ('user_annotation', 'cpu_op', 'gpu_user_annotation')",
}


def read_sqlite(path):
    """(columns per table, facts) of an acceltrace SQLite trace."""
    try:
        con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        try:
            meta = {key: (json.loads(v) if is_json and v is not None else v)
                    for key, v, is_json in con.execute("SELECT key, value, is_json FROM meta")}
            base = _int(meta.get("base_ns")) or 0
            cols = {}
            for t, q in SQLITE_QUERIES.items():
                rows = con.execute(q.format(b=base)).fetchall()
                names = SCHEMAS[t].names
                cols[t] = {n: [row[i] for row in rows] for i, n in enumerate(names)}
        finally:
            con.close()
    except (sqlite3.Error, ValueError) as exc:
        raise RecipeError("%s: not an acceltrace SQLite trace (%s)" % (path, exc)) from None
    dist = meta.get("distributedInfo") if isinstance(meta.get("distributedInfo"), dict) else {}
    name = meta.get("traceName")
    return cols, {"rank": _int(dist.get("rank")), "world_size": _int(dist.get("world_size")),
                  "trace_name": name if isinstance(name, str) else None,
                  "wall_zero_ns": _int(meta.get("base_wall_ns"))}


def is_sqlite(path):
    with open(path, "rb") as f:
        return f.read(16) == b"SQLite format 3\x00"


def cache_dir(path):
    """The folder that holds (or will hold) ``path``'s tables."""
    d, base = os.path.split(os.path.abspath(path))
    here = os.path.join(d, ".acceltrace-cache", base)
    if os.access(d, os.W_OK) or os.path.isdir(here):
        return here
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()
    return os.path.join(home, "acceltrace", "recipe", key)


def _stamp(path):
    st = os.stat(path)
    return {"version": VERSION, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def cached_info(path):
    """The facts of ``path``'s up-to-date cache, or None when it must be made."""
    try:
        with open(os.path.join(cache_dir(path), "info.json")) as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    return info if info.get("stamp") == _stamp(path) else None


def convert(path):
    """Make ``path``'s tables (atomically: a temporary folder renamed);
    returns its facts (info.json's content)."""
    stamp = _stamp(path)
    cols, facts = (read_sqlite if is_sqlite(path) else read_json)(path)
    starts = [min(c["start_ns"]) for c in cols.values() if c["start_ns"]]
    ends = [max(c["end_ns"]) for c in cols.values() if c["end_ns"]]
    zero = facts.pop("wall_zero_ns")
    facts["wall_start_ns"] = zero + min(starts) if zero is not None and starts else None
    facts["wall_end_ns"] = zero + max(ends) if zero is not None and ends else None
    facts.update(path=os.path.abspath(path), stamp=stamp,
                 rows={t: len(c["start_ns"]) for t, c in cols.items()})
    dest = cache_dir(path)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=os.path.dirname(dest))
    try:
        for t, c in cols.items():
            pq.write_table(pa.Table.from_pydict(c, schema=SCHEMAS[t]),
                           os.path.join(tmp, t + ".parquet"), compression="zstd")
        with open(os.path.join(tmp, "info.json"), "w") as f:
            json.dump(facts, f)
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return facts
