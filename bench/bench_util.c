/*
 * bench_util.c -- shared helpers of the benchmarks (see bench_util.h).
 */
#include "bench_util.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* --quick: figures are meaningless, so no verdict is printed. */
static int quick_mode;

int bench_parse_args(int argc, char **argv, bench_opts *o, const char *usage)
{
    memset(o, 0, sizeof(*o));
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            o->quick = 1;
            quick_mode = 1;
        } else if (strncmp(argv[i], "--reps=", 7) == 0) {
            char *end;
            long v = strtol(argv[i] + 7, &end, 10);
            if (*end || v < 1 || v > 100000) {
                fprintf(stderr, "%s: invalid --reps value '%s' (1..100000)\n", argv[0],
                        argv[i] + 7);
                return -1;
            }
            o->reps = (int)v;
        } else if (strncmp(argv[i], "--variant=", 10) == 0 && argv[i][10]) {
            o->variant = argv[i] + 10;
        } else {
            fprintf(stderr, "%s: unknown argument '%s'\nusage: %s %s\n", argv[0], argv[i], argv[0],
                    usage);
            return -1;
        }
    }
    return 0;
}

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *v, size_t n, double p)
{
    double pos = p * (double)(n - 1);
    size_t i = (size_t)pos;
    double f = pos - (double)i;
    return i + 1 < n ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}

bench_stat bench_stat_of(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    bench_stat s = {pct(v, n, 0.5), pct(v, n, 0.1), pct(v, n, 0.9)};
    return s;
}

static void put_num(double v)
{
    if (isnan(v))
        printf("\t-");
    else
        printf("\t%.4g", v);
}

void bench_result(const char *bench, const char *metric, double value, const char *unit,
                  double baseline, double ratio, bench_stat spread, const char *target,
                  const char *verdict)
{
    printf("RESULT\t%s\t%s", bench, metric);
    put_num(value);
    printf("\t%s", unit);
    put_num(baseline);
    put_num(ratio);
    if (isnan(spread.p10))
        printf("\t-");
    else
        printf("\t%.4g..%.4g", spread.p10, spread.p90);
    if (quick_mode && verdict &&
        (strcmp(verdict, "pass") == 0 || strncmp(verdict, "pass ", 5) == 0 ||
         strcmp(verdict, "SHORT") == 0))
        verdict = "(quick: no verdict)";
    printf("\t%s\t%s\n", target ? target : "-", verdict ? verdict : "info");
    fflush(stdout);
}

void bench_skip(const char *bench, const char *metric, const char *why)
{
    printf("RESULT\t%s\t%s\t-\t-\t-\t-\t-\t-\tskip: %s\n", bench, metric, why);
    fflush(stdout);
}

static uint64_t status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    size_t kl = strlen(key);
    uint64_t kb = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            kb = strtoull(line + kl + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb * 1024;
}

uint64_t bench_rss_peak(void)
{
    return status_kb("VmHWM");
}

uint64_t bench_rss_now(void)
{
    return status_kb("VmRSS");
}

int bench_tmpdir(char *out, size_t len, const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    int n = snprintf(out, len, "%s/act-bench-%s-XXXXXX", tmp, tag);
    if (n < 0 || (size_t)n >= len || !mkdtemp(out))
        return -1;
    return 0;
}

void bench_rmdir_flat(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[4096];
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}
