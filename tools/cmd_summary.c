/*
 * cmd_summary.c -- `acceltrace summary [OPTIONS] TRACE...`: the summary of
 * existing Chrome traces, acceltrace's own or torch.profiler's (object or
 * bare-array form, plain or gzip, "-" for standard input), read as a
 * stream in bounded memory. Several traces give one row per rank. Any
 * unreadable input is one line on stderr and exit status 2.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acceltrace.h"
#include "cmd.h"
#include "core/config.h"
#include "help.h"
#include "summary_load.h"
#include "writers/summary.h"

#define MAX_TRACES 4096

static int usage_error(const char *fmt, const char *arg)
{
    return act_help_usage_error("summary", fmt, arg);
}

static int pick(const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i]))
            return i;
    return -1;
}

/* --rows: a positive count, or "all" (every name, however many). */
static int parse_rows(const char *v, size_t *rows)
{
    if (!strcmp(v, "all")) {
        *rows = SIZE_MAX;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || n == 0 || n > SIZE_MAX / 4)
        return -1;
    *rows = (size_t)n;
    return 0;
}

/* ---- progress on a terminal ------------------------------------------- */

typedef struct progress {
    double start, last;
    int shown;
    const char *path;
} progress;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_progress(void *ctx, unsigned long long bytes, unsigned long long events)
{
    progress *p = ctx;
    double t = now_s();
    if (t - p->start < 1.0 || t - p->last < 0.2)
        return;
    p->last = t;
    p->shown = 1;
    fprintf(stderr, "\racceltrace: summary: read %.1f MB, %llu events (%.1f MB/s)\033[K",
            (double)bytes / 1e6, events, (double)bytes / 1e6 / (t - p->start));
    fflush(stderr);
}

static int load_all(act_summary *s, char **paths, int n)
{
    int tty = isatty(2);
    for (int i = 0; i < n; i++) {
        char err[1024];
        progress p = {now_s(), 0, 0, paths[i]};
        int rc = act_summary_load_json(s, paths[i], err, sizeof(err), tty ? on_progress : NULL, &p);
        if (p.shown)
            fprintf(stderr, "\r\033[K");
        if (rc) {
            fprintf(stderr, "acceltrace: summary: %s\n", err);
            return 2;
        }
    }
    return 0;
}

int act_cmd_summary(int argc, char **argv)
{
    static const char *const formats[] = {"table", "csv", "json"};
    static const char *const namesm[] = {"base", "full", "mangled"};
    static const char *const units[] = {"ns", "us", "ms", "s"};
    static const struct option longs[] = {
        {"by-range", no_argument, NULL, 'r'},       {"by-python-line", no_argument, NULL, 'P'},
        {"format", required_argument, NULL, 'F'},   {"names", required_argument, NULL, 'N'},
        {"timeunit", required_argument, NULL, 'U'}, {"rows", required_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    act_summary_fmt fmt = {.unit = ACT_SUM_US};
    int c, range_opt = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", longs, NULL)) != -1) {
        switch (c) {
        case 'r': fmt.by_range = range_opt = 1; break;
        case 'P': fmt.by_range = fmt.by_python_line = 1; break;
        case 'F':
            if ((fmt.format = pick(optarg, formats, 3)) < 0)
                return usage_error("--format wants table, csv or json, not '%s'", optarg);
            break;
        case 'N':
            if ((fmt.names = pick(optarg, namesm, 3)) < 0)
                return usage_error("--names wants base, full or mangled, not '%s'", optarg);
            break;
        case 'U':
            if ((fmt.unit = pick(optarg, units, 4)) < 0)
                return usage_error("--timeunit wants ns, us, ms or s, not '%s'", optarg);
            break;
        case 'R':
            if (parse_rows(optarg, &fmt.rows))
                return usage_error("--rows wants a number from 1 or 'all', not '%s'", optarg);
            break;
        case 'h': act_help_print("summary", stdout); return 0;
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (range_opt && fmt.by_python_line)
        return usage_error("%s", "--by-range and --by-python-line attribute device time in two "
                                 "ways: give one");
    int n = argc - optind;
    if (n <= 0)
        return usage_error("%s", "missing TRACE (a trace file, or - for standard input)");
    if (n > MAX_TRACES)
        return usage_error("%s", "too many traces");
    char err[512];
    if (act_config_check_env(err, sizeof(err)) != 0) {
        fprintf(stderr, "acceltrace: summary: %s\n", err);
        return 2;
    }
    act_summary *s = act_summary_new();
    if (!s) {
        fprintf(stderr, "acceltrace: summary: out of memory\n");
        return 2;
    }
    act_summary_want_ranges(s, fmt.by_range);
    if (fmt.by_python_line)
        act_summary_want_python_lines(s, 1);
    int rc = load_all(s, argv + optind, n);
    if (!rc)
        act_summary_print_fmt(s, stdout, &fmt);
    act_summary_free(s);
    if (!rc && fflush(stdout) != 0)
        rc = 2;
    return rc;
}
