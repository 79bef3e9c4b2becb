/*
 * bench_footprint.c -- what recording costs in space (issue 7, benchmark
 * 5): spool bytes per record by kind, measured through the recorder (so
 * segment, thread, string and chunk headers are paid for), against the
 * format's own record size; and the traced program's resident memory
 * growth per recording thread, against the same threads untraced.
 * (Trace bytes per device op come from bench_export: they need the
 * builder and writer.)
 *
 * Every figure comes from a fresh child process, so one measurement's
 * pages never count in another's.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acceltrace.h"
#include "bench_util.h"
#include "config.h"
#include "internal.h"

/* Chunk size: the ACCELTRACE_CHUNK_SIZE default (config.h). */
static uint32_t chunk_default(void)
{
    static act_config c;
    act_config_defaults(&c);
    return c.chunk_size;
}
#define CHUNK chunk_default()

static uint64_t spool_bytes_used(void)
{
    act_spool_header *h = act_recorder_header();
    uint64_t n = h->chunks_used < h->chunk_count ? h->chunks_used : h->chunk_count, sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        const act_chunk_header *c =
            (const act_chunk_header *)((const char *)h + ACT_SPOOL_HEADER_SIZE + i * h->chunk_size);
        if (c->magic == ACT_CHUNK_MAGIC)
            sum += c->used;
    }
    return sum;
}

static void emit_device_op(uint64_t i)
{
    static uint32_t name;
    if (!name)
        name = act_str_intern_cstr("saxpy");
    act_rec_device_op *r = act_rec_reserve(ACT_REC_DEVICE_OP, sizeof(*r));
    if (!r)
        return;
    memset((char *)r + sizeof(r->h), 0, sizeof(*r) - sizeof(r->h));
    r->h.aux = name;
    r->op = ACT_OP_KERNEL;
    r->source = ACT_SOURCE_OPENCL;
    r->device = 1;
    r->queue = 2;
    r->start = act_clock_now();
    r->end = r->start + 1000;
    r->corr = i + 1;
    r->gsize[0] = 1024;
    act_rec_commit();
}

typedef struct kind_case {
    const char *name;
    size_t format_size; /* the record's size in record.h */
    int records_per_call;
} kind_case;

static const kind_case cases[] = {
    {"host slice (PUSH+POP)", 2 * sizeof(act_rec_ts), 2},
    {"API call", sizeof(act_rec_api), 1},
    {"device op", sizeof(act_rec_device_op), 1},
    {"mark", sizeof(act_rec_ts), 1},
    {"counter", sizeof(act_rec_counter), 1},
};

static void emit_case(int k, uint64_t i)
{
    switch (k) {
    case 0:
        act_range_push("step");
        act_range_pop();
        break;
    case 1:
        act_rec_api_emit("clEnqueueNDRangeKernel", act_clock_now(), act_clock_now(), i + 1, 0, 0,
                         ACT_SOURCE_OPENCL);
        break;
    case 2: emit_device_op(i); break;
    case 3: act_mark("tick"); break;
    default: act_counter("queue depth", (double)i); break;
    }
}

/* Child: bytes per call of one case, amortised over n calls. */
static int child_bytes(int k, long n, const char *dir)
{
    if (act_recorder_open(dir, (uint64_t)n * 256 + (16u << 20), CHUNK) != 0)
        return 1;
    emit_case(k, 0); /* the thread's first segment and strings */
    uint64_t before = spool_bytes_used();
    for (long i = 0; i < n; i++)
        emit_case(k, (uint64_t)i);
    uint64_t after = spool_bytes_used();
    act_spool_header *h = act_recorder_header();
    uint64_t dropped = 0;
    for (int i = 0; i < ACT_REC_KIND_MAX; i++)
        dropped += h->dropped[i];
    act_recorder_close();
    printf("%.3f %llu\n", (double)(after - before) / (double)n, (unsigned long long)dropped);
    return 0;
}

/* ---- resident memory per thread -------------------------------------- */

static pthread_barrier_t ready, finish;

static void *rss_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++) {
        act_range_push("work");
        act_range_pop();
    }
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&finish);
    return NULL;
}

/* Child: RSS growth (bytes) from starting `threads` threads that each
 * record 100 pairs and stay alive. */
static int child_rss(int threads, int traced, const char *dir)
{
    if (traced && act_recorder_open(dir, 256ull << 20, CHUNK) != 0)
        return 1;
    if (!traced) {
        unsetenv("ACCELTRACE_SPOOL_DIR");
        act_range_push("warm"); /* start-up finds no tool */
    } else {
        act_range_push("warm");
        act_range_pop();
        usleep(200000); /* let the pre-fault helper finish its window */
    }
    uint64_t before = bench_rss_now();
    pthread_barrier_init(&ready, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&finish, NULL, (unsigned)threads + 1);
    pthread_t th[64];
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, rss_worker, NULL);
    pthread_barrier_wait(&ready);
    usleep(100000);
    uint64_t after = bench_rss_now();
    pthread_barrier_wait(&finish);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    if (traced)
        act_recorder_close();
    printf("%.0f 0\n", (double)(after - before));
    return 0;
}

/* Run `self --child ...` and read "value dropped" from its stdout. */
static int run_child(char **argv0, const char *mode, int a, int b, const char *dir, double *value,
                     uint64_t *dropped)
{
    char sa[32], sb[32], cmd[8192];
    snprintf(sa, sizeof(sa), "%d", a);
    snprintf(sb, sizeof(sb), "%d", b);
    snprintf(cmd, sizeof(cmd), "'%s' --child %s %s %s '%s'", argv0[0], mode, sa, sb, dir);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    unsigned long long d = 0;
    int got = fscanf(p, "%lf %llu", value, &d);
    int st = pclose(p);
    *dropped = d;
    return got == 2 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "--child") == 0) {
        unsetenv("ACCELTRACE_SPOOL_DIR");
        int a = atoi(argv[3]), b = atoi(argv[4]);
        if (strcmp(argv[2], "bytes") == 0)
            return child_bytes(a, b, argv[5]);
        return child_rss(a, b, argv[5]);
    }
    bench_opts o;
    if (bench_parse_args(argc, argv, &o, "[--quick] [--reps=N]") != 0)
        return 2;
    long n = o.quick ? 2000 : 200000;
    int reps = o.reps ? o.reps : o.quick ? 1 : 5;
    char dir[4096];
    if (bench_tmpdir(dir, sizeof(dir), "footprint") != 0)
        return 1;
    bench_stat none = {NAN, NAN, NAN};
    int rc = 0;

    for (int k = 0; k < (int)ACT_ARRAY_SIZE(cases); k++) {
        double v;
        uint64_t dropped;
        if (run_child(argv, "bytes", k, (int)n, dir, &v, &dropped) != 0) {
            fprintf(stderr, "bench_footprint: child for '%s' failed\n", cases[k].name);
            rc = 1;
            continue;
        }
        char metric[96];
        snprintf(metric, sizeof(metric), "spool bytes per %s", cases[k].name);
        const char *verdict = dropped ? "invalid (drops)" : "info";
        bench_result("footprint", metric, v, "B", (double)cases[k].format_size,
                     v / (double)cases[k].format_size, none, "-", verdict);
        if (k == 0) {
            /* The target is per host-slice record: a PUSH or a POP. */
            double per = v / cases[k].records_per_call;
            bench_result("footprint", "spool bytes per host-slice record (PUSH or POP)", per, "B",
                         (double)sizeof(act_rec_ts), per / (double)sizeof(act_rec_ts), none,
                         "<= 32 B",
                         dropped       ? "invalid (drops)"
                         : per <= 32.0 ? "pass"
                                       : "SHORT");
        }
    }

    /* Per-thread RSS: (8 threads - 1 thread) / 7, traced and untraced,
     * interleaved over the repetitions. */
    double per_thread[2][64];
    for (int r = 0; r < reps; r++) {
        for (int traced = 0; traced < 2; traced++) {
            double r1, r8;
            uint64_t d;
            if (run_child(argv, "rss", 1, traced, dir, &r1, &d) != 0 ||
                run_child(argv, "rss", 8, traced, dir, &r8, &d) != 0) {
                fprintf(stderr, "bench_footprint: rss child failed\n");
                bench_rmdir_flat(dir);
                return 1;
            }
            per_thread[traced][r] = (r8 - r1) / 7.0;
        }
        bench_rmdir_flat(dir);
        mkdir(dir, 0700);
    }
    double diff[64];
    for (int r = 0; r < reps; r++)
        diff[r] = per_thread[1][r] - per_thread[0][r];
    bench_stat base = bench_stat_of(per_thread[0], (size_t)reps);
    bench_stat traced = bench_stat_of(per_thread[1], (size_t)reps);
    bench_stat d = bench_stat_of(diff, (size_t)reps);
    bench_result("footprint", "RSS growth per recording thread (added)", d.median / 1024, "KiB",
                 base.median / 1024, traced.median / base.median,
                 (bench_stat){d.median / 1024, d.p10 / 1024, d.p90 / 1024}, "-", "info");
    printf("# footprint: chunk size %u KiB (the ACCELTRACE_CHUNK_SIZE default); a recording thread "
           "holds one chunk, faulted in whole\n",
           CHUNK >> 10);
    bench_rmdir_flat(dir);
    return rc;
}
