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

A JSON trace is read as a stream of events (ijson's C parser; where ijson
is not installed, whole) and the tables written in row groups of
``Sink.CHUNK`` rows: memory is bounded, whatever the trace's size.
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


class Sink:
    """Rows of the four tables, written to ``folder`` as Parquet row groups
    of CHUNK rows: memory is a chunk per table, whatever the trace's size."""

    CHUNK = 131072

    def __init__(self, folder):
        self.folder = folder
        self.cols = {t: {f.name: [] for f in s} for t, s in SCHEMAS.items()}
        self.writers = {}
        self.rows = dict.fromkeys(SCHEMAS, 0)
        self.first = self.last = None

    def add(self, table, row):
        cols = self.cols[table]
        for c, v in zip(cols.values(), row):
            c.append(v)
        self.first = row[0] if self.first is None or row[0] < self.first else self.first
        self.last = row[1] if self.last is None or row[1] > self.last else self.last
        if len(cols["start_ns"]) >= self.CHUNK:
            self.flush(table)

    def flush(self, table):
        cols = self.cols[table]
        if table not in self.writers:
            self.writers[table] = pq.ParquetWriter(
                os.path.join(self.folder, table + ".parquet"), SCHEMAS[table],
                compression="zstd")
        self.rows[table] += len(cols["start_ns"])
        self.writers[table].write_table(pa.Table.from_pydict(cols, schema=SCHEMAS[table]))
        for c in cols.values():
            c.clear()

    def close(self):
        for t in SCHEMAS:
            if self.cols[t]["start_ns"] or t not in self.writers:
                self.flush(t)
            self.writers[t].close()


def _events(f, path):
    """The trace's events, one at a time (ijson's C parser), or all read
    at once where ijson is not installed; and a function giving the
    top-level members ``distributedInfo``, ``traceName``,
    ``baseTimeNanoseconds`` (their own passes, for a streamed file)."""
    try:
        import ijson
    except ImportError:
        doc = json.load(f)
        if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
            raise RecipeError("%s: not a trace (no traceEvents list)" % path)
        events = doc.pop("traceEvents")
        return iter(events), lambda key: doc.get(key)

    def member(key):
        f.seek(0)
        return next(ijson.items(f, key, use_float=True), None)
    return ijson.items(f, "traceEvents.item", use_float=True), member


def read_json(path, sink):
    """Feed ``sink`` the events of a JSON trace; return its facts."""
    try:
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
            events, member = _events(f, path)
            n = _feed(path, events, sink)
            if n == 0:
                f.seek(0)
                head = f.read(4096)
                if b'"traceEvents"' not in head and member("traceEvents") is None:
                    raise RecipeError("%s: not a trace (no traceEvents list)" % path)
            dist, name, base = (member(k) for k in ("distributedInfo", "traceName",
                                                     "baseTimeNanoseconds"))
    except RecipeError:
        raise
    except Exception as exc:  # noqa: BLE001 (JSON, ijson, gzip, UTF-8 and I/O errors alike)
        raise RecipeError("%s: not a readable trace (%s)"
                          % (path, str(exc).splitlines()[0] if str(exc) else
                             type(exc).__name__)) from None
    dist = dist if isinstance(dist, dict) else {}
    return {"rank": _int(dist.get("rank")), "world_size": _int(dist.get("world_size")),
            "trace_name": name if isinstance(name, str) else None, "wall_zero_ns": _int(base)}


def _feed(path, events, sink):
    n = 0
    for e in events:
        n += 1
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        if not isinstance(cat, str):
            continue
        kind = ("kernels" if cat in KERNEL_CATS else "memops" if cat in MEMOP_CATS else
                "api" if is_api_cat(cat) else "ranges" if cat in RANGE_CATS else None)
        if kind is None:
            continue
        try:
            start = round(float(e["ts"]) * 1000)
            end = start + round(float(e.get("dur") or 0) * 1000)
        except (KeyError, TypeError, ValueError):
            raise RecipeError("%s: an event without a numeric ts/dur: %.200s"
                              % (path, json.dumps(e, default=str))) from None
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        name = str(e.get("name", ""))
        corr = _fit(_int(args.get("correlation")))
        if kind in ("kernels", "memops"):
            dev = _int(args.get("device"))
            dev = _int(e.get("pid")) if dev is None else dev
            q = _int(args.get("stream"))
            q = _int(e.get("tid")) if q is None else q
            if kind == "kernels":
                sink.add(kind, (start, end, name, dev, q, corr,
                                _fit(_int(args.get("External id")))))
            else:
                sink.add(kind, (start, end, name, dev, q, MEMOP_CATS[cat],
                                _fit(_int(args.get("bytes"))), corr))
        elif kind == "api":
            sink.add(kind, (start, end, name, _int(e.get("pid")), _int(e.get("tid")), corr))
        else:
            sink.add(kind, (start, end, name, _int(e.get("pid")), _int(e.get("tid")), cat))
    return n


SQLITE_QUERIES = {
    "kernels": "SELECT start_ns - {b}, end_ns - {b}, name, device, coalesce(stream, lane), "
               "correlation, external_id FROM kernels",
    "api": "SELECT start_ns - {b}, end_ns - {b}, name, pid, tid, correlation FROM api_calls",
    "memops": "SELECT start_ns - {b}, end_ns - {b}, name, device, lane, kind, bytes, correlation "
              "FROM memops",
    "ranges": "SELECT start_ns - {b}, end_ns - {b}, name, pid, tid, category FROM slices "
              "WHERE ph = 'X' AND category IN ('user_annotation', 'cpu_op', 'gpu_user_annotation')",
}


def read_sqlite(path, sink):
    """Feed ``sink`` the rows of an acceltrace SQLite trace; return its facts."""
    try:
        con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        try:
            meta = {key: (json.loads(v) if is_json and v is not None else v)
                    for key, v, is_json in con.execute("SELECT key, value, is_json FROM meta")}
            base = _int(meta.get("base_ns")) or 0
            for t, q in SQLITE_QUERIES.items():
                cur = con.execute(q.format(b=base))
                for rows in iter(lambda: cur.fetchmany(65536), []):
                    for row in rows:
                        sink.add(t, row)
        finally:
            con.close()
    except (sqlite3.Error, ValueError) as exc:
        raise RecipeError("%s: not an acceltrace SQLite trace (%s)" % (path, exc)) from None
    dist = meta.get("distributedInfo") if isinstance(meta.get("distributedInfo"), dict) else {}
    name = meta.get("traceName")
    return {"rank": _int(dist.get("rank")), "world_size": _int(dist.get("world_size")),
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
    dest = cache_dir(path)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=os.path.dirname(dest))
    try:
        sink = Sink(tmp)
        facts = (read_sqlite if is_sqlite(path) else read_json)(path, sink)
        sink.close()
        zero = facts.pop("wall_zero_ns")
        known = zero is not None and sink.first is not None
        facts.update(wall_start_ns=zero + sink.first if known else None,
                     wall_end_ns=zero + sink.last if known else None,
                     path=os.path.abspath(path), stamp=stamp, rows=sink.rows)
        with open(os.path.join(tmp, "info.json"), "w") as f:
            json.dump(facts, f)
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return facts
