"""acceltrace.recipe.output -- a recipe's tables as text: an aligned table
(digits grouped by thousands, times in --timeunit), csv (one header per
table, then ``Table,...`` rows) or json (one object: table -> list of rows),
the latter two with the values unrounded by the unit."""

import csv
import io
import json
import math

UNITS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def _scaled(df, unit):
    """Copy of ``df`` with its "(ns)" columns in ``unit``, renamed so."""
    if unit == "ns":
        return df
    df = df.copy()
    for c in list(df.columns):
        if c.endswith("(ns)"):
            df[c] = df[c] / UNITS[unit]
            df = df.rename(columns={c: c[:-4] + "(%s)" % unit})
    return df


def _cell(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return "{:,}".format(int(v))
    if isinstance(v, float):
        return "{:,.3f}".format(v).rstrip("0").rstrip(".")
    return str(v)


def _plain(v):
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def table(title, df, unit):
    df = _scaled(df, unit)
    rows = [[_cell(_plain(v)) for v in r] for r in df.itertuples(index=False)]
    cols = [str(c) for c in df.columns]
    width = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    out = [title, ""]
    # Text columns (names) are left-aligned, numbers right-aligned.
    left = [df[c].dtype == object and df[c].map(lambda v: isinstance(v, str)).any()
            for c in df.columns]
    fmt = lambda r: "  ".join(v.ljust(w) if lf else v.rjust(w)
                              for v, w, lf in zip(r, width, left))
    out.append(fmt(cols).rstrip())
    out.append("  ".join("-" * w for w in width))
    out += [fmt(r).rstrip() for r in rows]
    return "\n".join(out) + "\n"


def render(tables, fmt, unit, recipe):
    if fmt == "json":
        return json.dumps({"recipe": recipe, "timeunit": unit, "tables": {
            t: [{c: _plain(v) for c, v in zip(_scaled(df, unit).columns, r)}
                for r in _scaled(df, unit).itertuples(index=False)]
            for t, df in tables.items()}}, indent=1) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        for t, df in tables.items():
            df = _scaled(df, unit)
            w.writerow(["Table"] + list(df.columns))
            for r in df.itertuples(index=False):
                w.writerow([t] + ["" if _plain(v) is None else _plain(v) for v in r])
        return buf.getvalue()
    return "\n".join(table(t, df, unit) for t, df in tables.items())
