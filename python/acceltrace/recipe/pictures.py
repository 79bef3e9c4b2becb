"""acceltrace.recipe.pictures -- each recipe's picture, PNG and SVG
(matplotlib, Agg: no display needed): a per-rank heatmap or bar chart of
what the recipe's tables say, written as DIR/<recipe>.png and .svg."""

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

TOP = 12  # kernels or steps in a heatmap


def _heatmap(ax, frame, title, unit_label):
    im = ax.imshow(frame.values, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.set_yticks(range(len(frame.index)), ["rank %s" % r for r in frame.index]
                  if len(frame.index) <= 32 else None)
    if len(frame.index) > 32:
        ax.set_ylabel("rank")
    ax.set_xticks(range(len(frame.columns)), [str(c)[:28] for c in frame.columns],
                  rotation=40, ha="right", fontsize=8)
    ax.set_title(title)
    ax.figure.colorbar(im, ax=ax, label=unit_label)


def _bars(ax, df, x, cols, title, ylabel, stacked=True):
    labels = [str(v) for v in df[x]]
    bottom = [0.0] * len(df)
    n = len(cols)
    for i, c in enumerate(cols):
        vals = [float(v) if v == v and v is not None else 0.0 for v in df[c]]
        if stacked:
            ax.bar(range(len(df)), vals, bottom=bottom, label=c.replace(" (ns)", ""))
            bottom = [b + v for b, v in zip(bottom, vals)]
        else:
            w = 0.8 / n
            ax.bar([j - 0.4 + w * (i + 0.5) for j in range(len(df))], vals, width=w,
                   label=c.replace(" (ns)", ""))
    ax.set_xticks(range(len(df)), labels if len(df) <= 32 else None, rotation=40, fontsize=8)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)


def _ms(df, cols):
    df = df.copy()
    for c in cols:
        df[c] = df[c] / 1e6
    return df


def kernel_sum(parts, tables, fig):
    by = parts["by_rank"]
    top = list(tables["kernel_sum"]["Name"][:TOP])
    grid = (by[by["name"].isin(top)].pivot_table(index="rank", columns="name", values="total_ns",
                                                  aggfunc="sum", fill_value=0)[top] / 1e6)
    _heatmap(fig.add_subplot(1, 1, 1), grid, "kernel time per rank (top %d kernels)" % TOP, "ms")


def rank_imbalance(parts, tables, fig):
    r = tables["ranks"]
    steps = tables["steps"]
    ax = fig.add_subplot(1, 2 if len(steps) else 1, 1)
    _bars(ax, _ms(r, ["Busy (ns)", "Idle (ns)"]), "Rank", ["Busy (ns)", "Idle (ns)"],
          "device busy and idle per rank", "ms")
    if len(steps):
        s = parts["steps"]
        names = list(steps["Step"][:TOP * 2])
        grid = s[s["name"].isin(names)].pivot_table(index="rank", columns="name",
                                                    values="dur_ns", aggfunc="sum")[names] / 1e6
        _heatmap(fig.add_subplot(1, 2, 2), grid, "step time per rank", "ms")


def idle(parts, tables, fig):
    t = tables["idle"].copy()
    t["where"] = ["r%s q%s" % (a, b) for a, b in zip(t["Rank"], t["Queue"])]
    cols = ["Host Wait (ns)", "Kernel Wait (ns)", "Other (ns)"]
    _bars(fig.add_subplot(1, 1, 1), _ms(t, cols), "where", cols,
          "idle time by cause per rank and queue", "ms")


def launch_delay(parts, tables, fig):
    cols = ["P50 (ns)", "P90 (ns)", "P99 (ns)"]
    t = tables["launch_delay"].copy()
    for c in cols:
        t[c] = t[c] / 1e3
    _bars(fig.add_subplot(1, 1, 1), t, "Rank", cols, "launch delay per rank", "us",
          stacked=False)


def comm_overlap(parts, tables, fig):
    cols = ["Overlapped (ns)", "Exposed (ns)"]
    _bars(fig.add_subplot(1, 1, 1), _ms(tables["comm_overlap"], cols), "Rank", cols,
          "collective time per rank: overlapped by compute, exposed", "ms")


def draw(recipe, parts, tables, out_dir):
    """Write ``out_dir``/<recipe>.png and .svg; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    fig = plt.figure(figsize=(12, 6))
    try:
        globals()[recipe](parts, tables, fig)
        fig.tight_layout()
        paths = [os.path.join(out_dir, "%s.%s" % (recipe, ext)) for ext in ("png", "svg")]
        for p in paths:
            fig.savefig(p, dpi=100)
    finally:
        plt.close(fig)
    return paths
