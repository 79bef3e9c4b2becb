/*
 * bench_util.h -- what every benchmark in bench/ shares: a clock, robust
 * statistics over repetitions, the common command line (--quick, --reps),
 * and the one result-line format the driver (act_bench_all) collects.
 *
 * Method (BENCHMARKS.md): a subject is always measured against a baseline
 * in the same process and the same run, interleaved repetition by
 * repetition, so that a noisy neighbour slows both alike. We report the
 * median over repetitions and the p10..p90 spread; never a best case.
 *
 * A result line is tab-separated and starts with "RESULT":
 *   RESULT  bench  metric  value  unit  baseline  ratio  spread  target  verdict
 * `verdict` is pass, SHORT, info (no target) or skip. Benchmarks never
 * fail on a missed target: tests must not assert times.
 */
#ifndef ACT_BENCH_UTIL_H
#define ACT_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

typedef struct bench_opts {
    int quick;           /* CI mode: one tiny round, figures meaningless */
    int reps;            /* repetitions (0 = benchmark's default) */
    const char *variant; /* --variant=NAME: a benchmark-specific condition, or NULL */
} bench_opts;

/* Parse --quick, --reps=N, --variant=NAME; anything else is an error
 * (returns -1). */
int bench_parse_args(int argc, char **argv, bench_opts *o, const char *usage);

/* CLOCK_MONOTONIC_RAW nanoseconds. */
uint64_t bench_now_ns(void);

/* Summary of a sample: median and the 10th/90th percentiles. */
typedef struct bench_stat {
    double median, p10, p90;
} bench_stat;

/* Sorts `v` in place. n >= 1. */
bench_stat bench_stat_of(double *v, size_t n);

/* Print one result line (see above). `baseline`/`ratio` may be NAN when
 * meaningless; `target` is free text ("<= 20 ns", "-"). */
void bench_result(const char *bench, const char *metric, double value, const char *unit,
                  double baseline, double ratio, bench_stat spread, const char *target,
                  const char *verdict);
/* A result line saying why a column was skipped. */
void bench_skip(const char *bench, const char *metric, const char *why);

/* Peak resident set size of this process (VmHWM) and current RSS, bytes. */
uint64_t bench_rss_peak(void);
uint64_t bench_rss_now(void);

/* Make a private temp directory (under $TMPDIR or /tmp); path in `out`. */
int bench_tmpdir(char *out, size_t len, const char *tag);
/* Remove a flat directory and its files (best effort). */
void bench_rmdir_flat(const char *dir);

#endif
