"""acceltrace.recipe.recipes -- the recipes, each written once as SQL.

A recipe has *parts*: SQL over the views ``kernels``, ``api``, ``memops``,
``ranges`` (``convert``'s tables with a ``rank`` column), each split either
by rank (its rows for one rank depend on that rank's rows only) or by kernel
name. An engine runs a part over all ranks at once (DuckDB) or one
partition at a time (Dask: one task per rank, or per hash partition of the
names) and concatenates; either way the result is the same rows. Its
*finals* are SQL over the parts (by their names) and ``ranks`` (rank, file):
small tables, run by DuckDB on the caller's side, with the rounding and
ordering that make the output deterministic. Times are integer ns.
"""

import collections

from . import RecipeError

Part = collections.namedtuple("Part", "by sql")
Recipe = collections.namedtuple("Recipe", "name doc parts finals empty")

# HTA's idle breakdown: a gap shorter than this between two ops of a queue
# is "kernel wait" (its consecutive_kernel_delay, 30 ns by default).
KERNEL_WAIT_NS = 30
# A collective: a kernel whose lower-cased name matches this.
COLLECTIVE = ("nccl|hccl|rccl|allreduce|all_reduce|allgather|all_gather|reducescatter|"
              "reduce_scatter|alltoall|all_to_all|broadcast|sendrecv|c10d")


def union_of(src, keys="rank"):
    """SQL of the union of the intervals of ``src`` per ``keys``: disjoint
    (keys, start_ns, end_ns) islands (gaps and islands over a running max)."""
    return """(SELECT {k}, min(start_ns) AS start_ns, max(end_ns) AS end_ns FROM (
      SELECT *, sum(CASE WHEN prev_end IS NULL OR start_ns > prev_end THEN 1 ELSE 0 END)
        OVER (PARTITION BY {k} ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
      FROM (SELECT {k}, start_ns, end_ns, max(end_ns) OVER (PARTITION BY {k}
              ORDER BY start_ns, end_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
              AS prev_end FROM {s}))
    GROUP BY {k}, island)""".format(k=keys, s=src)


DEVICE_OPS = """ops AS (SELECT rank, device, queue, start_ns, end_ns, correlation FROM kernels
      UNION ALL SELECT rank, device, queue, start_ns, end_ns, correlation FROM memops)"""

KERNEL_SUM = Recipe(
    "kernel_sum", "per kernel name across ranks: Time %, Total, Instances, Avg, Med, Min, Max,"
    " StdDev", {
        "by_name": Part("name", """
SELECT name, count(*)::BIGINT AS instances, sum(end_ns - start_ns)::BIGINT AS total_ns,
       min(end_ns - start_ns)::BIGINT AS min_ns, max(end_ns - start_ns)::BIGINT AS max_ns,
       median(end_ns - start_ns)::DOUBLE AS med_ns,
       coalesce(stddev_samp(end_ns - start_ns), 0)::DOUBLE AS std_ns,
       count(DISTINCT rank)::BIGINT AS ranks
FROM kernels GROUP BY name"""),
        "by_rank": Part("rank", """
SELECT rank, name, sum(end_ns - start_ns)::BIGINT AS total_ns FROM kernels GROUP BY rank, name"""),
    }, {
        "kernel_sum": """
SELECT round(100.0 * total_ns / nullif(sum(total_ns) OVER (), 0), 2) AS "Time (%)",
       total_ns AS "Total Time (ns)", instances AS "Instances",
       round(total_ns / instances, 1) AS "Avg (ns)", round(med_ns, 1) AS "Med (ns)",
       min_ns AS "Min (ns)", max_ns AS "Max (ns)", round(std_ns, 1) AS "StdDev (ns)",
       ranks AS "Ranks", name AS "Name"
FROM by_name ORDER BY total_ns DESC, name"""}, "no kernels recorded")

RANK_IMBALANCE = Recipe(
    "rank_imbalance", "per rank: span, busy, idle, kernel time; per step (ProfilerStep#N, else"
    " each user range): the slowest rank, the straggler", {
        "rank_time": Part("rank", """
WITH """ + DEVICE_OPS + """,
busy AS (SELECT rank, sum(end_ns - start_ns) AS busy_ns FROM """ + union_of("ops") + """
         GROUP BY rank),
span AS (SELECT rank, min(start_ns) AS first_ns, max(end_ns) AS last_ns FROM ops GROUP BY rank),
kern AS (SELECT rank, count(*) AS n, sum(end_ns - start_ns) AS kt FROM kernels GROUP BY rank)
SELECT s.rank, (last_ns - first_ns)::BIGINT AS span_ns, busy_ns::BIGINT AS busy_ns,
       coalesce(n, 0)::BIGINT AS kernels, coalesce(kt, 0)::BIGINT AS kernel_ns
FROM span s JOIN busy USING (rank) LEFT JOIN kern USING (rank)"""),
        "steps": Part("rank", """
SELECT rank, name, count(*)::BIGINT AS n, sum(end_ns - start_ns)::BIGINT AS dur_ns,
       (name LIKE 'ProfilerStep#%') AS is_step
FROM ranges WHERE cat = 'user_annotation' GROUP BY rank, name"""),
    }, {
        "steps": """
WITH s AS (SELECT * FROM steps WHERE is_step OR NOT EXISTS (SELECT 1 FROM steps WHERE is_step)),
o AS (SELECT *, row_number() OVER (PARTITION BY name ORDER BY dur_ns DESC, rank) AS slow FROM s)
SELECT name AS "Step", count(*) AS "Ranks", min(dur_ns) AS "Min (ns)",
       round(median(dur_ns), 1) AS "Med (ns)", max(dur_ns) AS "Max (ns)",
       min(rank) FILTER (WHERE slow = 1) AS "Slowest Rank",
       round(100.0 * (max(dur_ns) - min(dur_ns)) / nullif(max(dur_ns), 0), 2) AS "Spread (%)"
FROM o GROUP BY name
ORDER BY try_cast(regexp_extract(name, '#([0-9]+)$', 1) AS BIGINT) NULLS LAST, name""",
        "ranks": """
WITH s AS (SELECT * FROM steps WHERE is_step OR NOT EXISTS (SELECT 1 FROM steps WHERE is_step)),
o AS (SELECT *, row_number() OVER (PARTITION BY name ORDER BY dur_ns DESC, rank) AS slow FROM s),
w AS (SELECT rank, count(*) FILTER (WHERE slow = 1) AS slowest, sum(dur_ns) AS step_ns
      FROM o GROUP BY rank)
SELECT r.rank AS "Rank", coalesce(span_ns, 0) AS "Span (ns)", coalesce(busy_ns, 0) AS "Busy (ns)",
       coalesce(span_ns - busy_ns, 0) AS "Idle (ns)",
       round(100.0 * busy_ns / nullif(span_ns, 0), 2) AS "Busy (%)",
       coalesce(kernel_ns, 0) AS "Kernel Time (ns)", coalesce(kernels, 0) AS "Kernels",
       coalesce(step_ns, 0) AS "Step Time (ns)", coalesce(slowest, 0) AS "Slowest In"
FROM ranks r LEFT JOIN rank_time USING (rank) LEFT JOIN w USING (rank) ORDER BY r.rank"""},
    None)

IDLE = Recipe(
    "idle", "per rank and queue: idle time by cause (HTA's breakdown: host wait, kernel wait,"
    " other)", {
        "idle": Part("rank", """
WITH launches AS (SELECT rank, correlation, min(start_ns) AS launch_ns FROM api
                  WHERE correlation IS NOT NULL GROUP BY rank, correlation),
""" + DEVICE_OPS + """,
g AS (SELECT o.rank, o.device, o.queue, o.start_ns, o.end_ns, l.launch_ns,
             lag(o.end_ns) OVER (PARTITION BY o.rank, o.device, o.queue
                                 ORDER BY o.start_ns, o.end_ns, o.correlation, l.launch_ns)
             AS prev_end
      FROM ops o LEFT JOIN launches l ON l.rank = o.rank AND l.correlation = o.correlation),
c AS (SELECT *, start_ns - prev_end AS gap,
             CASE WHEN launch_ns > prev_end THEN 'host'
                  WHEN start_ns - prev_end < """ + str(KERNEL_WAIT_NS) + """ THEN 'kernel'
                  ELSE 'other' END AS cause FROM g)
SELECT rank, coalesce(device, -1)::BIGINT AS device, coalesce(queue, -1)::BIGINT AS queue,
       count(*)::BIGINT AS ops, (max(end_ns) - min(start_ns))::BIGINT AS span_ns,
       coalesce(sum(gap) FILTER (WHERE gap > 0), 0)::BIGINT AS idle_ns,
       coalesce(sum(gap) FILTER (WHERE gap > 0 AND cause = 'host'), 0)::BIGINT AS host_ns,
       coalesce(sum(gap) FILTER (WHERE gap > 0 AND cause = 'kernel'), 0)::BIGINT AS kernel_ns,
       coalesce(sum(gap) FILTER (WHERE gap > 0 AND cause = 'other'), 0)::BIGINT AS other_ns
FROM c GROUP BY rank, device, queue"""),
    }, {
        "idle": """
SELECT rank AS "Rank", device AS "Device", queue AS "Queue", ops AS "Ops",
       span_ns AS "Span (ns)", idle_ns AS "Idle (ns)",
       round(100.0 * idle_ns / nullif(span_ns, 0), 2) AS "Idle (%)",
       host_ns AS "Host Wait (ns)", kernel_ns AS "Kernel Wait (ns)", other_ns AS "Other (ns)",
       round(100.0 * host_ns / nullif(idle_ns, 0), 2) AS "Host Wait (%)"
FROM idle ORDER BY rank, device, queue"""}, "no device operations recorded")

LAUNCH_DELAY = Recipe(
    "launch_delay", "per rank: kernel start - end of its launch call (HTA's launch delay,"
    " clipped at 0): count, p50, p90, p99, max, mean", {
        "delay": Part("rank", """
WITH launches AS (SELECT rank, correlation, min(end_ns) AS launched_ns FROM api
                  WHERE correlation IS NOT NULL GROUP BY rank, correlation),
d AS (SELECT k.rank, greatest(0, k.start_ns - l.launched_ns) AS delay FROM kernels k
      JOIN launches l ON l.rank = k.rank AND l.correlation = k.correlation)
SELECT rank, count(*)::BIGINT AS n, quantile_disc(delay, 0.5)::BIGINT AS p50,
       quantile_disc(delay, 0.9)::BIGINT AS p90, quantile_disc(delay, 0.99)::BIGINT AS p99,
       max(delay)::BIGINT AS max_ns, sum(delay)::BIGINT AS total_ns
FROM d GROUP BY rank"""),
    }, {
        "launch_delay": """
SELECT r.rank AS "Rank", coalesce(n, 0) AS "Launches", p50 AS "P50 (ns)", p90 AS "P90 (ns)",
       p99 AS "P99 (ns)", max_ns AS "Max (ns)", round(total_ns / n, 1) AS "Mean (ns)"
FROM ranks r LEFT JOIN delay USING (rank) ORDER BY r.rank"""},
    "no kernel is linked to its launch call (no correlation ids)")

COMM_OVERLAP = Recipe(
    "comm_overlap", "per rank: collective kernels' time (nccl, hccl, allreduce, ...) and how"
    " much of it compute kernels overlap (|comm| + |compute| - |both|, each a union)", {
        "overlap": Part("rank", """
WITH comm AS (SELECT rank, start_ns, end_ns FROM kernels
              WHERE regexp_matches(lower(name), '{c}')),
comp AS (SELECT rank, start_ns, end_ns FROM kernels
         WHERE NOT regexp_matches(lower(name), '{c}')),
every AS (SELECT rank, start_ns, end_ns FROM kernels),
cu AS (SELECT rank, sum(end_ns - start_ns) AS comm_ns FROM {cu} GROUP BY rank),
pu AS (SELECT rank, sum(end_ns - start_ns) AS comp_ns FROM {pu} GROUP BY rank),
au AS (SELECT rank, sum(end_ns - start_ns) AS all_ns FROM {au} GROUP BY rank),
n AS (SELECT rank, count(*) AS n, sum(end_ns - start_ns) AS sum_ns FROM comm GROUP BY rank)
SELECT rank, n::BIGINT AS n, sum_ns::BIGINT AS sum_ns, comm_ns::BIGINT AS comm_ns,
       (comm_ns + coalesce(comp_ns, 0) - all_ns)::BIGINT AS ov_ns
FROM n JOIN cu USING (rank) JOIN au USING (rank) LEFT JOIN pu USING (rank)""".format(
            c=COLLECTIVE, cu=union_of("comm"), pu=union_of("comp"), au=union_of("every"))),
    }, {
        "comm_overlap": """
SELECT rank AS "Rank", n AS "Collectives", sum_ns AS "Collective Time (ns)",
       comm_ns AS "Comm Busy (ns)", ov_ns AS "Overlapped (ns)",
       comm_ns - ov_ns AS "Exposed (ns)", round(100.0 * ov_ns / nullif(comm_ns, 0), 2)
       AS "Overlap (%)"
FROM overlap ORDER BY rank"""},
    "no collectives recorded (no kernel name matches %s)" % COLLECTIVE.replace("|", ", "))

RECIPES = {r.name: r for r in (KERNEL_SUM, RANK_IMBALANCE, IDLE, LAUNCH_DELAY, COMM_OVERLAP)}


def get(name):
    try:
        return RECIPES[name]
    except KeyError:
        raise RecipeError("unknown recipe '%s' (%s)" % (name, ", ".join(RECIPES))) from None
