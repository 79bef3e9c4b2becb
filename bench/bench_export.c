/*
 * bench_export.c -- the builder and writer (issue 7, benchmark 4): events
 * per second and MB/s turning 1 M and 10 M recorded events into a Chrome
 * trace with act_trace_export, and that step's peak memory against the
 * spool size; plus trace bytes per device op (benchmark 5).
 *
 * A spool is recorded through the real recorder API, the way sources
 * write it: per launch, a range (PUSH/POP) around an API call whose
 * correlation id a device op carries, so every unit becomes five trace
 * events (range, API call, kernel, and the ac2g flow pair). Generation and
 * export each run in a fresh child process, so the export's peak RSS is
 * its own. The baseline, in the same run and interleaved with the export,
 * is the I/O floor: reading the spool and writing as many bytes as the
 * trace has, in 1 MiB blocks. The gzip rows (-o NAME.gz, compressed by the
 * writer's pool of threads, ACCELTRACE_GZIP_THREADS) are paired with the
 * plain export in each repetition.
 *
 * Streaming (issue 17 item 1): the export that `acceltrace run` does after
 * the program exits, for a 20 000-launch spool, when the spool was read
 * while the program ran (act_export_live, polled until it takes nothing
 * more: what is left is the tail a live reader cannot take before the
 * exit, the last open segment; its settled host events and the device ops
 * of its first queue written into the trace as they were read,
 * act_export_live_output) against the batch
 * export of the same spool, paired in each repetition, each in a fresh
 * child.
 *
 * `--child export-summary SPOOL OUT` is `--child export` with the summary
 * table on, as `acceltrace export` has it by default (issue 32 item 4),
 * printed into OUT.summary (bench/export_ab.py --summary).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acceltrace.h"
#include "api/export.h"
#include "bench_util.h"
#include "internal.h"
#include "timeline/spool.h"

#define EVENTS_PER_UNIT 5

/* ---- child: record a spool of `units` launches ----------------------- */

static void emit_static(void)
{
    uint32_t name = act_str_intern_cstr("bench device");
    uint32_t vendor = act_str_intern_cstr("OpenCL");
    act_rec_device *d = act_rec_reserve(ACT_REC_DEVICE, sizeof(*d));
    if (d) {
        memset((char *)d + sizeof(d->h), 0, sizeof(*d) - sizeof(d->h));
        d->h.aux = name;
        d->device = 1;
        d->vendor = vendor;
        d->source = ACT_SOURCE_OPENCL;
        act_rec_commit();
    }
    act_rec_queue *q = act_rec_reserve(ACT_REC_QUEUE, sizeof(*q));
    if (q) {
        memset((char *)q + sizeof(q->h), 0, sizeof(*q) - sizeof(q->h));
        q->queue = 2;
        q->device = 1;
        act_rec_commit();
    }
}

static void emit_unit(int with_range)
{
    static uint32_t kname;
    if (!kname)
        kname = act_str_intern_cstr("saxpy");
    if (with_range)
        act_range_push("step");
    uint64_t corr = act_corr_next();
    uint64_t s = act_clock_now();
    uint64_t ext = act_range_current_ext();
    uint64_t e = act_clock_now();
    act_rec_api_emit("clEnqueueNDRangeKernel", s, e, corr, ext, 0, ACT_SOURCE_OPENCL);
    if (with_range)
        act_range_pop();
    act_rec_device_op *r = act_rec_reserve(ACT_REC_DEVICE_OP, sizeof(*r));
    if (!r)
        return;
    memset((char *)r + sizeof(r->h), 0, sizeof(*r) - sizeof(r->h));
    r->h.aux = kname;
    r->op = ACT_OP_KERNEL;
    r->source = ACT_SOURCE_OPENCL;
    r->device = 1;
    r->queue = 2;
    r->queued = s;
    r->submit = e;
    r->start = e + 500;
    r->end = e + 2500;
    r->corr = corr;
    r->gsize[0] = 1 << 20;
    act_rec_commit();
}

static int child_generate(const char *dir, long units, int with_range)
{
    uint64_t cap = (uint64_t)units * 256 + (32u << 20);
    if (act_recorder_open(dir, cap, 256u << 10) != 0)
        return 1;
    emit_static();
    for (long i = 0; i < units; i++)
        emit_unit(with_range);
    act_spool_header *h = act_recorder_header();
    uint64_t dropped = 0;
    for (int i = 0; i < ACT_REC_KIND_MAX; i++)
        dropped += h->dropped[i];
    uint64_t used = h->chunks_used * h->chunk_size + ACT_SPOOL_HEADER_SIZE;
    act_recorder_close();
    printf("%llu %llu\n", (unsigned long long)used, (unsigned long long)dropped);
    return dropped ? 3 : 0;
}

/* ---- child: export ----------------------------------------------------- */

/* The export's options, the same for every arm. */
static void export_opts(act_export_opts *o, const char *dir, const char *out)
{
    memset(o, 0, sizeof(*o));
    o->spool_dir = dir;
    o->out_path = out;
    o->force = 1;
    o->trace_name = "bench";
    o->child_status = -1;
}

/* summary: also the summary table (what `acceltrace export` prints by
 * default), into OUT.summary, so that two builds' tables can be compared. */
static int child_export(const char *dir, const char *out, int summary)
{
    act_export_opts o;
    export_opts(&o, dir, out);
    char sum_path[4096];
    snprintf(sum_path, sizeof(sum_path), "%s.summary", out);
    if (summary && !(o.summary = fopen(sum_path, "w")))
        return 1;
    /* The previous repetition's trace goes before the timer, as the floor's
     * file goes after its timer: both time writing a fresh file. Replacing
     * a trace costs the kernel freeing the old file and (ext4's rename
     * heuristic) starting writeback of the new one -- 50 ms at 1 M events,
     * 0.6 s at 10 M here -- which is the file system's, not the export's. */
    unlink(out);
    struct timespec c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    uint64_t t0 = bench_now_ns();
    int rc = act_trace_export(&o);
    uint64_t t1 = bench_now_ns();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    if (o.summary)
        fclose(o.summary);
    if (rc != 0) {
        printf("error %d\n", rc);
        return rc == ACT_E_UNSUPPORTED ? 4 : 1;
    }
    struct stat st;
    if (stat(out, &st) != 0)
        return 1;
    /* third: the CPU time of this, the exporting, thread (the builder and
     * the formatter; writes and compression run on the writer's threads) */
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
    printf("%.9f %lld %.9f\n", (double)(t1 - t0) / 1e9, (long long)st.st_size, cpu);
    return 0;
}

/* The pid of the one spool in dir (<pid>.acts); 0 when none. */
static long spool_pid(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    long pid = 0;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".acts"))
            pid = atol(e->d_name);
    if (d)
        closedir(d);
    return pid;
}

/* The export at exit after the spool was read while it was written. */
static int child_export_live(const char *dir, const char *out, int early)
{
    act_export_opts o;
    export_opts(&o, dir, out);
    unlink(out);
    act_export_live *live = act_export_live_new(dir, spool_pid(dir));
    /* As `run` does: the settled events are written as they are read. */
    if (live && early && act_export_live_output(live, &o) != 0)
        return 1;
    uint64_t prev = UINT64_MAX, now = 0;
    while (live && now != prev) { /* until a poll takes nothing more */
        prev = now;
        if (act_export_live_poll(live, NULL) != 0)
            return 1;
        now = act_export_live_records(live);
    }
    o.live = live;
    uint64_t t0 = bench_now_ns();
    int rc = act_trace_export(&o);
    uint64_t t1 = bench_now_ns();
    act_export_live_free(live);
    /* Which share of the records was read before "the exit". */
    char path[4200], err[256];
    snprintf(path, sizeof(path), "%s/%ld.acts", dir, spool_pid(dir));
    act_spool sp;
    uint64_t all = 0;
    if (act_spool_open(&sp, path, err, sizeof(err)) == 0)
        for (int k = 0; k < ACT_REC_KIND_MAX; k++)
            all += sp.records[k];
    act_spool_close(&sp);
    struct stat st;
    if (rc != 0 || stat(out, &st) != 0 || !all)
        return 1;
    printf("%.9f %.4f\n", (double)(t1 - t0) / 1e9, (double)now / (double)all);
    return 0;
}

/* ---- child: I/O floor ------------------------------------------------ */

static int child_floor(const char *dir, long long out_bytes)
{
    static char buf[1 << 20];
    char path[4200];
    uint64_t t0 = bench_now_ns();
    snprintf(path, sizeof(path), "%s/floor.out", dir);
    /* Read every spool file in the directory. */
    char cmd[4300];
    snprintf(cmd, sizeof(cmd), "ls '%s'/*.acts", dir);
    FILE *ls = popen(cmd, "r");
    char f[4200];
    while (ls && fgets(f, sizeof(f), ls)) {
        f[strcspn(f, "\n")] = '\0';
        int fd = open(f, O_RDONLY);
        while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
            ;
        if (fd >= 0)
            close(fd);
    }
    if (ls)
        pclose(ls);
    FILE *o = fopen(path, "w");
    if (!o)
        return 1;
    for (long long left = out_bytes; left > 0; left -= (long long)sizeof(buf))
        fwrite(buf, 1, left < (long long)sizeof(buf) ? (size_t)left : sizeof(buf), o);
    fclose(o);
    uint64_t t1 = bench_now_ns();
    unlink(path);
    printf("%.9f 0\n", (double)(t1 - t0) / 1e9);
    return 0;
}

/* ---- parent -------------------------------------------------------------- */

/* Run "self --child ARGS", read two numbers (and a third into *c when c
 * is not NULL and the child printed one), and the child's peak RSS. */
static int run_child3(const char *self, const char *args, double *a, double *b, double *c,
                      long *maxrss_kb, int *status)
{
    char cmd[8192];
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    snprintf(cmd, sizeof(cmd), "exec '%s' --child %s", self, args);
    pid_t p = fork();
    if (p == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    char line[256] = "";
    if (!fgets(line, sizeof(line), in))
        line[0] = '\0';
    fclose(in);
    struct rusage ru;
    int st = 0;
    wait4(p, &st, 0, &ru);
    *maxrss_kb = ru.ru_maxrss;
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    double third = NAN;
    int n = sscanf(line, "%lf %lf %lf", a, b, &third);
    if (c)
        *c = third;
    return n >= 2 && *status == 0 ? 0 : -1;
}

static int run_child(const char *self, const char *args, double *a, double *b, long *maxrss_kb,
                     int *status)
{
    return run_child3(self, args, a, b, NULL, maxrss_kb, status);
}

/* A gzip export (args) with ACCELTRACE_GZIP_THREADS=1 in its environment;
 * the variable is restored after. */
static int gzip_one_thread(const char *self, const char *args, double *secs)
{
    const char *was = getenv("ACCELTRACE_GZIP_THREADS");
    char *saved = was ? strdup(was) : NULL;
    setenv("ACCELTRACE_GZIP_THREADS", "1", 1);
    double bytes;
    long rss;
    int st, rc = run_child(self, args, secs, &bytes, &rss, &st);
    if (saved)
        setenv("ACCELTRACE_GZIP_THREADS", saved, 1);
    else
        unsetenv("ACCELTRACE_GZIP_THREADS");
    free(saved);
    if (rc != 0)
        fprintf(stderr, "bench_export: gzip export with one thread failed (status %d)\n", st);
    return rc;
}

static int bench_size(const char *self, const char *dir, long events, int reps)
{
    long units = events / EVENTS_PER_UNIT;
    char args[4400], label[64];
    double spool_bytes, dropped, secs, out_bytes, fsecs, dummy;
    long rss, frss;
    int st;
    snprintf(label, sizeof(label), "%ldk events", events / 1000);
    snprintf(args, sizeof(args), "generate '%s' %ld 1", dir, units);
    if (run_child(self, args, &spool_bytes, &dropped, &rss, &st) != 0) {
        fprintf(stderr, "bench_export: generating %ld events failed (status %d)\n", events, st);
        return 1;
    }
    double es[64], mbs[64], ratio[64], mem[64], gz_es[64], gz_ratio[64], gz_bytes = 0;
    double gz1_es[64], gz1_speedup[64], cpu_es[64], gz_cpu_es[64], cpu;
    for (int r = 0; r < reps; r++) {
        snprintf(args, sizeof(args), "export '%s' '%s/trace.json.gz'", dir, dir);
        if (run_child3(self, args, &secs, &gz_bytes, &cpu, &rss, &st) != 0) {
            fprintf(stderr, "bench_export: gzip export failed (status %d)\n", st);
            return 1;
        }
        gz_es[r] = (double)events / secs;
        gz_cpu_es[r] = (double)events / cpu;
        gz_ratio[r] = secs;
        /* the same with one compressor thread: what the pool buys */
        double pool_secs = secs;
        if (gzip_one_thread(self, args, &secs) != 0)
            return 1;
        gz1_es[r] = (double)events / secs;
        gz1_speedup[r] = secs / pool_secs;
        snprintf(args, sizeof(args), "export '%s' '%s/trace.json'", dir, dir);
        if (run_child3(self, args, &secs, &out_bytes, &cpu, &rss, &st) != 0) {
            if (st == 4) {
                bench_skip("export", label,
                           "act_trace_export not in this build (timeline builder not merged)");
                return 0;
            }
            fprintf(stderr, "bench_export: export failed (status %d)\n", st);
            return 1;
        }
        snprintf(args, sizeof(args), "floor '%s' %.0f", dir, out_bytes);
        if (run_child(self, args, &fsecs, &dummy, &frss, &st) != 0)
            return 1;
        gz_ratio[r] /= secs; /* gzip time / plain time, same repetition */
        cpu_es[r] = (double)events / cpu;
        es[r] = (double)events / secs;
        mbs[r] = out_bytes / secs / 1e6;
        ratio[r] = secs / fsecs;
        mem[r] = (double)rss * 1024.0 / spool_bytes;
    }
    bench_stat s_es = bench_stat_of(es, (size_t)reps), s_mb = bench_stat_of(mbs, (size_t)reps);
    bench_stat s_r = bench_stat_of(ratio, (size_t)reps), s_m = bench_stat_of(mem, (size_t)reps);
    char metric[256];
    snprintf(metric, sizeof(metric), "%s: events/s", label);
    bench_stat s_mev = {s_es.median / 1e6, s_es.p10 / 1e6, s_es.p90 / 1e6};
    bench_result("export", metric, s_mev.median, "M ev/s", NAN, s_r.median, s_mev, ">= 5 M/s",
                 s_es.median >= 5e6 ? "pass" : "SHORT");
    snprintf(metric, sizeof(metric), "%s: trace MB/s (ratio: time / I/O floor)", label);
    bench_result("export", metric, s_mb.median, "MB/s", NAN, s_r.median, s_mb, ">= 400 MB/s",
                 s_mb.median >= 400 ? "pass" : "SHORT");
    snprintf(metric, sizeof(metric), "%s: peak RSS / spool size (%.0f MB spool)", label,
             spool_bytes / 1e6);
    bench_result("export", metric, s_m.median, "x", spool_bytes / 1e6, s_m.median, s_m, "<= 2x",
                 s_m.median <= 2.0 ? "pass" : "SHORT");
    bench_stat s_gz = bench_stat_of(gz_es, (size_t)reps),
               s_gr = bench_stat_of(gz_ratio, (size_t)reps);
    bench_stat s_gzm = {s_gz.median / 1e6, s_gz.p10 / 1e6, s_gz.p90 / 1e6};
    snprintf(metric, sizeof(metric), "%s, gzip: events/s (ratio: time / plain export)", label);
    bench_result("export", metric, s_gzm.median, "M ev/s", NAN, s_gr.median, s_gzm, ">= 5 M/s",
                 s_gz.median >= 5e6 ? "pass" : "SHORT");
    bench_stat s_g1 = bench_stat_of(gz1_es, (size_t)reps),
               s_gs = bench_stat_of(gz1_speedup, (size_t)reps);
    bench_stat s_g1m = {s_g1.median / 1e6, s_g1.p10 / 1e6, s_g1.p90 / 1e6};
    snprintf(metric, sizeof(metric),
             "%s, gzip with one compressor thread: events/s (ratio: its time / the pool's)", label);
    bench_result("export", metric, s_g1m.median, "M ev/s", NAN, s_gs.median, s_g1m, "-", "info");
    /* The exporting thread's own rate, its CPU time (issue 17: compression
     * must not slow the export below 5 M events/s on one core): what the
     * wall rates above become once the pool has free cores to run on. */
    bench_stat s_gc = bench_stat_of(gz_cpu_es, (size_t)reps),
               s_pc = bench_stat_of(cpu_es, (size_t)reps);
    bench_stat s_gcm = {s_gc.median / 1e6, s_gc.p10 / 1e6, s_gc.p90 / 1e6};
    snprintf(metric, sizeof(metric),
             "%s, gzip: events per CPU-second of the exporting thread (baseline: plain)", label);
    bench_result("export", metric, s_gcm.median, "M ev/s", s_pc.median / 1e6,
                 s_gc.median / s_pc.median, s_gcm, ">= 5 M/s",
                 s_gc.median >= 5e6 ? "pass" : "SHORT");
    const char *pool = getenv("ACCELTRACE_GZIP_THREADS");
    printf("# export %s: trace %.1f MB (gzip %.1f MB), spool %.1f MB, %d repetitions; "
           "%ld online CPUs, compressor threads %s\n",
           label, out_bytes / 1e6, gz_bytes / 1e6, spool_bytes / 1e6, reps,
           sysconf(_SC_NPROCESSORS_ONLN), pool ? pool : "default (CPUs - 1, 1..4)");
    bench_rmdir_flat(dir);
    mkdir(dir, 0700);
    return 0;
}

/* Trace bytes per device op: launches without ranges, so each op brings
 * its kernel event, its API event and its flow pair. */
static int bench_bytes_per_op(const char *self, const char *dir, long units)
{
    char args[4400];
    double spool_bytes, dropped, secs, out_small, out_big;
    long rss;
    int st;
    double out[2], gz[2];
    long n[2] = {units / 10, units};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof(args), "generate '%s' %ld 0", dir, n[i]);
        if (run_child(self, args, &spool_bytes, &dropped, &rss, &st) != 0)
            return 1;
        snprintf(args, sizeof(args), "export '%s' '%s/trace.json.gz'", dir, dir);
        if (run_child(self, args, &secs, &gz[i], &rss, &st) != 0)
            return 1;
        snprintf(args, sizeof(args), "export '%s' '%s/trace.json'", dir, dir);
        if (run_child(self, args, &secs, &out[i], &rss, &st) != 0) {
            bench_rmdir_flat(dir);
            mkdir(dir, 0700);
            if (st == 4) {
                bench_skip("export", "trace bytes per device op",
                           "act_trace_export not in this build (timeline builder not merged)");
                return 0;
            }
            return 1;
        }
        bench_rmdir_flat(dir);
        mkdir(dir, 0700);
    }
    out_small = out[0];
    out_big = out[1];
    /* The difference cancels the fixed part (metadata, lane names). */
    double per = (out_big - out_small) / (double)(n[1] - n[0]);
    bench_stat none = {NAN, NAN, NAN};
    bench_result("export", "trace bytes per device op (kernel+launch+flow pair)", per, "B", 220,
                 per / 220, none, "- (CLIntercept ~220 B/enqueue)", "info");
    double gper = (gz[1] - gz[0]) / (double)(n[1] - n[0]);
    bench_result("export", "trace bytes per device op, -o NAME.gz", gper, "B", per, gper / per,
                 none, "<= 60 B", gper <= 60 ? "pass" : "SHORT");
    return 0;
}

/* Exit latency of `run` for 20 000 launches: streamed (events written
 * while it ran) vs batch, and vs the spool only read while it ran, the
 * three rotated in each repetition. */
static int bench_stream(const char *self, const char *dir, long units, int reps)
{
    char args[4400];
    double spool_bytes, dropped, secs, bytes, taken = 0;
    double t_live[64], t_batch[64], t_read[64], diff[64], diff_read[64];
    static const char *const arm[3] = {"export", "export-live", "export-read"};
    long rss;
    int st;
    snprintf(args, sizeof(args), "generate '%s' %ld 1", dir, units);
    if (run_child(self, args, &spool_bytes, &dropped, &rss, &st) != 0)
        return 1;
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < 3; k++) { /* rotate which goes first */
            int a = (r + k) % 3;
            snprintf(args, sizeof(args), "%s '%s' '%s/trace.json'", arm[a], dir, dir);
            if (run_child(self, args, &secs, a ? &taken : &bytes, &rss, &st) != 0)
                return 1;
            (a == 0 ? t_batch : a == 1 ? t_live : t_read)[r] = secs * 1e3;
        }
        diff[r] = t_live[r] - t_batch[r];
        diff_read[r] = t_live[r] - t_read[r];
    }
    bench_stat sl = bench_stat_of(t_live, (size_t)reps), sb = bench_stat_of(t_batch, (size_t)reps);
    bench_stat sd = bench_stat_of(diff, (size_t)reps);
    bench_stat sr = bench_stat_of(t_read, (size_t)reps);
    bench_stat sdr = bench_stat_of(diff_read, (size_t)reps);
    char metric[160];
    snprintf(metric, sizeof(metric),
             "%ldk launches: export after exit, spool read while it ran (%.0f%% of records)",
             units / 1000, 100.0 * taken);
    bench_result("export", metric, sl.median, "ms", sb.median, sl.median / sb.median, sl, "-",
                 "info");
    snprintf(metric, sizeof(metric), "%ldk launches: export after exit, batch (--no-stream)",
             units / 1000);
    bench_result("export", metric, sb.median, "ms", NAN, NAN, sb, "-", "info");
    snprintf(metric, sizeof(metric), "%ldk launches: streamed - batch, paired", units / 1000);
    bench_result("export", metric, sd.median, "ms", NAN, NAN, sd, "-", "info");
    snprintf(metric, sizeof(metric),
             "%ldk launches: export after exit, spool only read while it ran", units / 1000);
    bench_result("export", metric, sr.median, "ms", sb.median, sr.median / sb.median, sr, "-",
                 "info");
    snprintf(metric, sizeof(metric), "%ldk launches: events written early - only read, paired",
             units / 1000);
    bench_result("export", metric, sdr.median, "ms", NAN, NAN, sdr, "-", "info");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--child") == 0) {
        unsetenv("ACCELTRACE_SPOOL_DIR");
        if (strcmp(argv[2], "generate") == 0 && argc == 6)
            return child_generate(argv[3], atol(argv[4]), atoi(argv[5]));
        if (strcmp(argv[2], "export") == 0 && argc == 5)
            return child_export(argv[3], argv[4], 0);
        if (strcmp(argv[2], "export-summary") == 0 && argc == 5)
            return child_export(argv[3], argv[4], 1);
        if (strcmp(argv[2], "export-live") == 0 && argc == 5)
            return child_export_live(argv[3], argv[4], 1);
        if (strcmp(argv[2], "export-read") == 0 && argc == 5)
            return child_export_live(argv[3], argv[4], 0);
        if (strcmp(argv[2], "floor") == 0 && argc == 5)
            return child_floor(argv[3], atoll(argv[4]));
        return 2;
    }
    bench_opts o;
    if (bench_parse_args(argc, argv, &o, "[--quick] [--reps=N] [--variant=stream]") != 0)
        return 2;
    int reps = o.reps ? o.reps : o.quick ? 1 : 3;
    if (reps > 64)
        reps = 64;
    char dir[4096];
    if (bench_tmpdir(dir, sizeof(dir), "export") != 0)
        return 1;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return 1;
    self[n] = '\0';
    int rc = 0;
    if (o.variant && strcmp(o.variant, "stream") == 0) {
        rc |= bench_stream(self, dir, 20000, o.reps ? reps : 21);
    } else if (o.quick) {
        rc |= bench_stream(self, dir, 1000, 1);
        rc |= bench_size(self, dir, 1000, reps);
        rc |= bench_bytes_per_op(self, dir, 1000);
    } else {
        rc |= bench_bytes_per_op(self, dir, 20000);
        rc |= bench_stream(self, dir, 20000, 21);
        rc |= bench_size(self, dir, 1000000, reps);
        rc |= bench_size(self, dir, 10000000, reps);
    }
    bench_rmdir_flat(dir);
    return rc;
}
