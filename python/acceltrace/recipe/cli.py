"""acceltrace.recipe.cli -- the ``acceltrace recipe`` command (also
``python -m acceltrace recipe`` and ``python -m acceltrace.recipe``):

    acceltrace recipe NAME [--engine duckdb|dask] [--scheduler ADDR]
                      [--format table|csv|json] [--timeunit ns|us|ms|s]
                      [-o DIR] INPUT...

Exit status 0, or 2 with one line on stderr for a usage or input error (an
unknown recipe, a corrupt trace, ranks of two runs, a missing rank) or when
the analysis packages are not installed.
"""

import argparse
import sys

from . import RecipeError

NEED = "duckdb, pyarrow, dask[distributed], matplotlib and ijson (pip install acceltrace[analysis])"


def _parser(names):
    p = argparse.ArgumentParser(
        prog="acceltrace recipe",
        description="Run a multi-rank recipe over per-rank traces (files or folders of "
                    ".json, .json.gz, .sqlite). Recipes: " + ", ".join(names) + ".")
    p.add_argument("recipe", metavar="NAME")
    p.add_argument("inputs", metavar="INPUT", nargs="+")
    p.add_argument("--engine", choices=("duckdb", "dask"), default="duckdb",
                   help="DuckDB, embedded (default), or a Dask distributed cluster")
    p.add_argument("--scheduler", metavar="ADDR",
                   help="the Dask scheduler (tcp://host:8786); default: a local cluster of 2 "
                        "workers")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.add_argument("--timeunit", choices=("ns", "us", "ms", "s"), default="ns")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="write the recipe's picture here (NAME.png, NAME.svg)")
    return p


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        import duckdb, pyarrow, matplotlib  # noqa: F401,E401  (present, or say so)
        from . import engines, inputs, output, pictures, recipes
    except ImportError as exc:
        sys.stderr.write("acceltrace recipe: needs %s: %s\n" % (NEED, exc))
        return 2
    args = _parser(list(recipes.RECIPES)).parse_args(argv)
    try:
        rec = recipes.get(args.recipe)
        if args.engine == "dask":
            try:
                import dask.dataframe, distributed  # noqa: F401,E401
            except ImportError as exc:
                raise RecipeError("--engine dask needs %s: %s" % (NEED, exc)) from None
        ranks = inputs.prepare(args.inputs)
        parts, tables = engines.run(rec, ranks, args.engine, args.scheduler)
    except RecipeError as exc:
        sys.stderr.write("acceltrace recipe: %s\n" % exc)
        return 2
    first = next(iter(rec.parts))
    if rec.empty and parts[first].empty:
        sys.stdout.write("%s: %s in %d rank%s\n" % (rec.name, rec.empty, len(ranks),
                                                   "s" if len(ranks) > 1 else ""))
        return 0
    sys.stdout.write(output.render(tables, args.format, args.timeunit, rec.name))
    if args.output:
        for p in pictures.draw(rec.name, parts, tables, args.output):
            sys.stderr.write("acceltrace recipe: wrote %s\n" % p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
