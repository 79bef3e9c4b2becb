"""acceltrace.recipe -- multi-rank recipes: questions asked of every rank of a
distributed run at once, on an embedded engine (DuckDB, the default) or a
Dask cluster (``--engine dask``).

    acceltrace recipe kernel_sum traces/            # or: python -m acceltrace recipe ...
    acceltrace recipe idle --engine dask --scheduler tcp://host:8786 traces/

Each rank's trace (acceltrace JSON, .json.gz, torch.profiler JSON, acceltrace
.sqlite) is converted once into Parquet tables kept beside it
(``convert``); a recipe (``recipes``) is SQL over those tables, split by rank
or by kernel name, that an engine (``engines``) runs over all ranks at once
or one partition per Dask task. ``cli`` is the command, ``output`` prints the
tables, ``pictures`` draws them. Needs the ``analysis`` extra
(``pip install acceltrace[analysis]``: duckdb, pyarrow, dask[distributed],
matplotlib, ijson).
"""


class RecipeError(Exception):
    """An input or usage error the command reports as one line, exit 2."""


def run(name, inputs, engine="duckdb", scheduler=None):
    """Run recipe ``name`` over ``inputs`` (trace files or folders); returns
    (recipe, ranks, parts, {title: pandas.DataFrame}). ``cli`` is the command."""
    from . import engines, inputs as inputs_, recipes
    rec = recipes.get(name)
    ranks = inputs_.prepare(inputs)
    parts, tables = engines.run(rec, ranks, engine, scheduler)
    return rec, ranks, parts, tables
