"""acceltrace.recipe.inputs -- the ranks of a recipe's inputs: trace files and
folders of per-rank traces, converted (``convert``, in parallel, each once),
then checked to be one run with every rank present.

A rank is the trace's ``distributedInfo.rank`` or, where no input states
one, its place in the (naturally sorted) list of inputs. Refused, with one
line naming the files: a rank stated twice, some inputs with a rank and some
without, different world sizes or trace names, traces whose wall-clock spans
do not overlap (the ranks of one run run at the same time), and a missing
rank (every rank below the world size, or below the highest rank, must be
there).
"""

import collections
import os
import re
from concurrent.futures import ProcessPoolExecutor

from . import RecipeError, convert

SUFFIXES = (".json", ".json.gz", ".sqlite")
Rank = collections.namedtuple("Rank", "rank dir path info")


def _natural(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def find(inputs):
    """The trace files named by ``inputs`` (files, or folders scanned one level)."""
    files = []
    for p in inputs:
        if os.path.isdir(p):
            found = sorted((os.path.join(p, n) for n in os.listdir(p)
                            if n.endswith(SUFFIXES) and not n.startswith(".")
                            and os.path.isfile(os.path.join(p, n))), key=_natural)
            if not found:
                raise RecipeError("%s: no traces in this folder (%s)" % (p, ", ".join(SUFFIXES)))
            files += found
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise RecipeError("%s: no such file or folder" % p)
    if not files:
        raise RecipeError("no input traces")
    if len(set(map(os.path.abspath, files))) != len(files):
        raise RecipeError("a trace is named twice in the inputs")
    return files


def _convert(path):
    try:
        return convert.cached_info(path) or convert.convert(path)
    except RecipeError as exc:
        return exc


def _check(ranks):
    by_rank = {}
    for r in ranks:
        if r.rank in by_rank:
            raise RecipeError("rank %d is in two traces, %s and %s: traces of two runs?"
                              % (r.rank, by_rank[r.rank].path, r.path))
        by_rank[r.rank] = r
    for key, what in (("world_size", "world sizes"), ("trace_name", "trace names")):
        seen = {}
        for r in ranks:
            if r.info.get(key) is not None:
                seen.setdefault(r.info[key], r.path)
        if len(seen) > 1:
            (a, pa), (b, pb) = list(seen.items())[:2]
            raise RecipeError("traces of different runs: %s %r (%s) and %r (%s)"
                              % (what, a, pa, b, pb))
    timed = [r for r in ranks if r.info.get("wall_start_ns") is not None]
    if len(timed) > 1:
        late = max(timed, key=lambda r: r.info["wall_start_ns"])
        early = min(timed, key=lambda r: r.info["wall_end_ns"])
        if late.info["wall_start_ns"] > early.info["wall_end_ns"]:
            raise RecipeError("traces of different runs: %s starts %.1f s after %s ended "
                              "(the ranks of one run overlap in time)"
                              % (late.path, (late.info["wall_start_ns"] -
                                             early.info["wall_end_ns"]) / 1e9, early.path))
    ws = next((r.info["world_size"] for r in ranks if r.info.get("world_size")), None)
    want = ws if ws is not None else max(by_rank) + 1
    missing = [i for i in range(want) if i not in by_rank]
    extra = [i for i in by_rank if i < 0 or i >= want]
    if extra:
        raise RecipeError("rank %d is outside world size %d (%s)"
                          % (extra[0], want, by_rank[extra[0]].path))
    if missing:
        raise RecipeError("rank%s %s of world size %d missing (have %s)"
                          % ("s" if len(missing) > 1 else "", ",".join(map(str, missing)), want,
                             ",".join(map(str, sorted(by_rank)))))


def prepare(inputs, jobs=None):
    """Convert what needs it and return the ranks, sorted by rank."""
    files = find(inputs)
    todo = [f for f in files if convert.cached_info(f) is None]
    infos = {f: convert.cached_info(f) for f in files if f not in todo}
    jobs = min(jobs or os.cpu_count() or 1, len(todo))
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            infos.update(zip(todo, pool.map(_convert, todo)))
    else:
        infos.update((f, _convert(f)) for f in todo)
    for f in files:
        if isinstance(infos[f], Exception):
            raise infos[f]
    stated = [f for f in files if infos[f].get("rank") is not None]
    if stated and len(stated) != len(files):
        f = next(f for f in files if infos[f].get("rank") is None)
        raise RecipeError("%s states no rank while %s does: traces of different runs?"
                          % (f, stated[0]))
    ranks = [Rank(infos[f]["rank"] if stated else i, convert.cache_dir(f), f, infos[f])
             for i, f in enumerate(files)]
    _check(ranks)
    return sorted(ranks, key=lambda r: r.rank)
