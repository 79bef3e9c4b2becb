"""acceltrace.recipe.engines -- where a recipe's SQL runs: DuckDB, embedded,
over every rank's Parquet at once; or a Dask distributed cluster, a part
split by rank as one task per rank (the task runs the part's SQL on that
rank's Parquet with DuckDB on the worker), a part split by name as Dask's
shuffle of the kernels by name, then the SQL on each partition. The parts
come back to the caller, where ``finish`` runs the recipe's finals over them
(DuckDB, small tables) in both cases, so both give the same rows.

A Dask worker reads the Parquet tables by path: on a remote cluster they
must be on a file system the workers share with the caller.
"""

import os
from concurrent.futures import ThreadPoolExecutor

import duckdb
import pandas as pd

from . import RecipeError
from .convert import SCHEMAS

TABLES = tuple(SCHEMAS)
# Ranks a DuckDB recipe reads at once: its memory is theirs (64 ranks at
# once took 1.0-1.5 GiB for rank_imbalance and idle, one at a time 0.23).
RANK_WORKERS = max(1, min(4, os.cpu_count() or 1))


def _q(path):
    return "'%s'" % path.replace("'", "''")


def _connect(threads=None):
    con = duckdb.connect()
    if threads:
        con.execute("SET threads TO %d" % threads)
    return con


def _views(con, ranks):
    """Views kernels, api, memops, ranges over ``ranks`` [(rank, dir)]."""
    for t in TABLES:
        con.execute("CREATE VIEW %s AS " % t + " UNION ALL ".join(
            "SELECT %d::BIGINT AS rank, * FROM read_parquet(%s)" % (r, _q("%s/%s.parquet" % (d, t)))
            for r, d in ranks))


def _empty(con):
    """Views of the same columns, no rows (a part's result types)."""
    for t, schema in SCHEMAS.items():
        con.register("_e_" + t, schema.empty_table())
        con.execute("CREATE VIEW %s AS SELECT 0::BIGINT AS rank, * FROM _e_%s" % (t, t))


def rank_task(rank_dir, sql):
    """One Dask task: ``sql`` over one rank's tables."""
    con = _connect(1)
    _views(con, [rank_dir])
    return con.execute(sql).df()


def read_kernels(rank_dir):
    """One Dask task: one rank's kernels, with its rank."""
    con = _connect(1)
    _views(con, [rank_dir])
    return con.execute("SELECT rank, name, start_ns, end_ns FROM kernels").df()


def frame_task(frame, sql):
    """One Dask task: ``sql`` over a partition of the kernels."""
    con = _connect(1)
    con.register("kernels", frame)
    return con.execute(sql).df()


def duckdb_parts(rec, ranks):
    """The parts on DuckDB: a part split by rank one rank a task, RANK_WORKERS
    at a time (its memory is that many ranks', whatever their number; the
    same tasks as Dask's), a part split by name over every rank at once."""
    pairs = [(r.rank, r.dir) for r in ranks]
    out = {}
    for name, p in rec.parts.items():
        if p.by == "rank":
            with ThreadPoolExecutor(RANK_WORKERS) as pool:  # DuckDB lets go of the GIL
                dfs = list(pool.map(lambda pair: rank_task(pair, p.sql), pairs))
            out[name] = pd.concat(dfs, ignore_index=True) if dfs else rank_task_empty(p.sql)
        else:
            con = _connect()
            _views(con, pairs)
            out[name] = con.execute(p.sql).df()
    return out


def rank_task_empty(sql):
    """A part's columns with no rows (no rank)."""
    con = _connect()
    _empty(con)
    return con.execute(sql).df()


def _client(scheduler):
    from distributed import Client, LocalCluster
    if scheduler:
        try:
            return Client(scheduler, timeout="10s"), None
        except (OSError, TimeoutError) as exc:
            raise RecipeError("cannot reach the Dask scheduler %s: %s" % (scheduler, exc)) from None
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                           dashboard_address=None)
    return Client(cluster), cluster


def dask_parts(rec, ranks, scheduler=None):
    import logging

    import dask
    import dask.dataframe as dd
    # Each shuffle logs two WARNING lines of its own bookkeeping.
    logging.getLogger("distributed.shuffle").setLevel(logging.ERROR)
    pairs = [(r.rank, r.dir) for r in ranks]
    empty = _connect()
    _empty(empty)
    with dask.config.set({"dataframe.convert-string": False}):
        frames = {}
        for name, p in rec.parts.items():
            meta = empty.execute(p.sql).df()
            if p.by == "rank":
                frames[name] = dd.from_map(rank_task, pairs, sql=p.sql, meta=meta,
                                           enforce_metadata=False)
            else:
                kmeta = empty.execute("SELECT rank, name, start_ns, end_ns FROM kernels").df()
                k = dd.from_map(read_kernels, pairs, meta=kmeta, enforce_metadata=False)
                k = k.shuffle(on=p.by, npartitions=max(1, min(len(pairs), 32)))
                frames[name] = k.map_partitions(frame_task, p.sql, meta=meta,
                                                enforce_metadata=False)
        client, cluster = _client(scheduler)
        try:
            done = dask.compute(*frames.values())
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    return {name: pd.DataFrame(df).reset_index(drop=True) for name, df in zip(frames, done)}


def finish(rec, parts, ranks):
    """The recipe's output tables from its parts: {title: DataFrame}."""
    con = _connect()
    for name, df in parts.items():
        con.register(name, df)
    con.register("ranks", pd.DataFrame({"rank": pd.Series([r.rank for r in ranks], dtype="int64"),
                                        "file": [r.path for r in ranks]}))
    return {title: con.execute(sql).df() for title, sql in rec.finals.items()}


def run(rec, ranks, engine="duckdb", scheduler=None):
    """(parts, output tables) of recipe ``rec`` over ``ranks`` on ``engine``."""
    if engine == "duckdb":
        if scheduler:
            raise RecipeError("--scheduler is for --engine dask")
        parts = duckdb_parts(rec, ranks)
    elif engine == "dask":
        parts = dask_parts(rec, ranks, scheduler)
    else:
        raise RecipeError("unknown engine '%s' (duckdb, dask)" % engine)
    return parts, finish(rec, parts, ranks)
