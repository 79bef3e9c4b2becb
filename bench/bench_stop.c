/*
 * bench_stop.c -- stop latency (issue 7, benchmark 6): time from "stop"
 * to the trace being written, with a quiet device.
 *
 *   session   in-process: act_session_begin, 1000 ranges, then the time
 *             act_session_end(path) takes (stop, drain, build, write);
 *   launcher  `acceltrace run -- /bin/true` against /bin/true alone,
 *             alternating: what the launcher adds around a program that
 *             records nothing (spool set-up, drain, export).
 *
 * The session API is looked up in libacceltrace.so with dlsym, so this
 * program builds and reports a clear skip while sessions or the exporter
 * are not in the build.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acceltrace.h"
#include "bench_util.h"

#ifndef ACT_BENCH_LIB
#error "ACT_BENCH_LIB must be defined by the build"
#endif
#ifndef ACT_BENCH_TOOL
#error "ACT_BENCH_TOOL must be defined by the build"
#endif

typedef int (*begin_fn)(const act_options *);
typedef int (*end_fn)(const char *);
typedef int (*push_fn)(const char *);
typedef int (*pop_fn)(void);

static void bench_session(int reps, const char *dir)
{
    void *lib = dlopen(ACT_BENCH_LIB, RTLD_NOW | RTLD_LOCAL);
    begin_fn begin = lib ? (begin_fn)dlsym(lib, "act_session_begin") : NULL;
    end_fn end = lib ? (end_fn)dlsym(lib, "act_session_end") : NULL;
    push_fn push = lib ? (push_fn)dlsym(lib, "act_range_push") : NULL;
    pop_fn pop = lib ? (pop_fn)dlsym(lib, "act_range_pop") : NULL;
    if (!begin || !end || !push || !pop) {
        bench_skip("stop", "session end latency",
                   "act_session_begin/end not in libacceltrace.so (sessions not merged)");
        return;
    }
    double ms[64];
    char trace[4200];
    snprintf(trace, sizeof(trace), "%s/session.json", dir);
    for (int r = 0; r < reps; r++) {
        act_options o;
        memset(&o, 0, sizeof(o));
        o.struct_size = sizeof(o);
        int rc = begin(&o);
        if (rc != 0) {
            char why[128];
            snprintf(why, sizeof(why), "act_session_begin returned %d", rc);
            bench_skip("stop", "session end latency", why);
            return;
        }
        for (int i = 0; i < 1000; i++) {
            push("work");
            pop();
        }
        unlink(trace);
        uint64_t t0 = bench_now_ns();
        rc = end(trace);
        uint64_t t1 = bench_now_ns();
        struct stat st;
        if (rc != 0 || stat(trace, &st) != 0) {
            char why[128];
            snprintf(why, sizeof(why), "act_session_end returned %d (no trace written)", rc);
            bench_skip("stop", "session end latency", why);
            return;
        }
        ms[r] = (double)(t1 - t0) / 1e6;
    }
    bench_stat s = bench_stat_of(ms, (size_t)reps);
    bench_result("stop", "session end: stop -> trace written (quiet device)", s.median, "ms", NAN,
                 NAN, s, "<= quiet period + 50 ms", s.median <= 50 ? "pass" : "SHORT");
}

static double wall_ms(const char *cmd, int *status)
{
    uint64_t t0 = bench_now_ns();
    int st = system(cmd);
    uint64_t t1 = bench_now_ns();
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    return (double)(t1 - t0) / 1e6;
}

static void bench_launcher(int reps, const char *dir)
{
    char traced[16384];
    snprintf(
        traced, sizeof(traced),
        "'%s' run --force --no-summary -o '%s/run.json' -- /bin/true >/dev/null 2>'%s/run.err'",
        ACT_BENCH_TOOL, dir, dir);
    double d[64], base[64];
    for (int r = 0; r < reps; r++) {
        int st;
        base[r] = wall_ms("/bin/true", &st);
        double t = wall_ms(traced, &st);
        char path[4200];
        snprintf(path, sizeof(path), "%s/run.json", dir);
        struct stat sb;
        if (st != 0 || stat(path, &sb) != 0) {
            bench_skip("stop", "acceltrace run overhead",
                       "acceltrace run wrote no trace (exporter not merged?)");
            return;
        }
        unlink(path);
        d[r] = t - base[r];
    }
    bench_stat b = bench_stat_of(base, (size_t)reps), s = bench_stat_of(d, (size_t)reps);
    bench_result("stop", "acceltrace run -- /bin/true: added wall time", s.median, "ms", b.median,
                 NAN, s, "<= quiet period + 50 ms", s.median <= 50 ? "pass" : "SHORT");
}

int main(int argc, char **argv)
{
    bench_opts o;
    if (bench_parse_args(argc, argv, &o, "[--quick] [--reps=N]") != 0)
        return 2;
    int reps = o.reps ? o.reps : o.quick ? 1 : 9;
    if (reps > 64)
        reps = 64;
    unsetenv("ACCELTRACE_SPOOL_DIR");
    char dir[4096];
    if (bench_tmpdir(dir, sizeof(dir), "stop") != 0)
        return 1;
    bench_session(reps, dir);
    bench_launcher(reps, dir);
    bench_rmdir_flat(dir);
    return 0;
}
