/*
 * test_export_golden.c -- the bytes act_trace_export writes for a
 * deterministic, demo-like run, against golden files kept in
 * tests/data/export_golden: the trace as .json, as .json.gz (its inflated
 * bytes: the compressed ones depend on the zlib build) and as written
 * while the program runs (events first), and the summary printed by the
 * export (table, by range) and by `acceltrace summary` of the written
 * trace (table, CSV, JSON). A trace whose events were all written when
 * the program sealed its spool (act_export_live_finish) is the one written
 * at the exit, byte for byte, and is written anew when the spool proves
 * to have changed after, or another process's spool appeared. The goldens were generated on the
 * tree before the writer seam (docs/architecture.md "Adding a writer"), so that the refactor is
 * proved to change no byte. The host's name, boot id and the tool's version differ between machines
 * and builds: they are replaced by placeholders before comparing. ACT_UPDATE_GOLDEN=1 rewrites the
 * goldens instead (only for a change of format that is meant).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "api/export.h"
#include "gunzip.h"
#include "summary_load.h"
#include "timeline_util.h"
#include "writers/summary.h"

#ifndef ACT_TEST_DATA_DIR
#error "ACT_TEST_DATA_DIR must name tests/data"
#endif
#define GOLDEN_DIR ACT_TEST_DATA_DIR "/export_golden"

static void meta(sb *s, uint32_t key, uint32_t value, int is_json)
{
    act_rec_metadata *m = sb_rec(s, ACT_REC_METADATA, key, sizeof(*m));
    m->value = value;
    m->is_json = (uint32_t)is_json;
}

static void arg_u64(sb *s, uint32_t key, uint64_t v)
{
    act_rec_arg *a = sb_rec(s, ACT_REC_ARG, key, sizeof(*a));
    a->type = ACT_RECARG_U64;
    a->v.u = v;
}

/* The launching thread of the demo: an iteration range with an argument,
 * a nested forward range, a kernel launch and every fifth step a copy
 * launched outside any range; a name with invalid UTF-8 (a writer
 * counter). Enough steps that the events span two sink batches. */
static void demo_host(sb *s)
{
    sb_str(s, 1, "step");
    sb_str(s, 2, "clEnqueueNDRangeKernel");
    sb_str(s, 3, "saxpy");
    sb_str(s, 4, "iteration");
    sb_str(s, 5, "forward");
    sb_string(s, 6, "bad\xff name", 9);
    sb_str(s, 7, "clEnqueueWriteBuffer");
    sb_str(s, 8, "copy");
    sb_str(s, 9, "OpenCL");
    sb_str(s, 10, "pthread-cpu");
    sb_str(s, 11, "experiment");
    sb_str(s, 12, "{\"lr\": 0.5, \"tags\": [\"golden\"]}");
    sb_device(s, 10, 1, 9, ACT_SOURCE_OPENCL, 0);
    meta(s, 11, 12, 1);
    uint64_t ts = 2000000;
    for (uint64_t i = 0; i < 900; i++, ts += 10000) {
        sb_ts(s, ACT_REC_RANGE_PUSH, 1, ts);
        arg_u64(s, 4, i);
        sb_ts(s, ACT_REC_RANGE_PUSH, i % 3 ? 1 : 5, ts + 100);
        sb_api(s, 2, ts + 200, ts + 900, 2 * i + 1, ((uint64_t)1 << 32) | (2 * i + 2),
               ACT_SOURCE_OPENCL);
        sb_ts(s, ACT_REC_RANGE_POP, 0, ts + 1000);
        sb_ts(s, ACT_REC_RANGE_POP, 0, ts + 1100);
        sb_op(s, i % 11 ? 3 : 6, ACT_OP_KERNEL, 1, 1, ts + 1200,
              ts + (i % 7 ? 5000 + (i * 37) % 1000 : 15000), 2 * i + 1, ACT_SOURCE_OPENCL);
        if (i % 5 == 0) {
            sb_api(s, 7, ts + 5500, ts + 5600, 2 * i + 2, 0, ACT_SOURCE_OPENCL);
            sb_op(s, 8, ACT_OP_MEMCPY_HTOD, 1, 2, ts + 5700, ts + 5950 + i % 13, 2 * i + 2,
                  ACT_SOURCE_OPENCL);
        }
    }
}

/* The traced program (pid 960): the launching thread and a worker. */
static void demo_main(sb *s)
{
    sb_init(s, 960, 4u << 20, 1);
    sb_open_thread(s, 0, 1, 960);
    demo_host(s);
    sb_segment(s, 2);
    sb_thread(s, 2, 961, 0);
    sb_str(s, 1, "worker");
    for (uint64_t i = 0; i < 100; i++)
        sb_ts(s, i % 2 ? ACT_REC_RANGE_POP : ACT_REC_RANGE_PUSH, i % 2 ? 0 : 1,
              3000000 + i * 100 + i % 3);
    sb_ts(s, ACT_REC_MARK, 1, 3100000);
}

/* A child process of it that did not finish (no seal): a few ranges. */
static void demo_child(sb *s)
{
    sb_init(s, 970, 1u << 16, 1);
    sb_hdr(s)->ppid = 960;
    sb_hdr(s)->flags = 0;
    sb_hdr(s)->start_ns = 1500000;
    memcpy(sb_hdr(s)->cmdline, "helper\0-q\0", 11);
    sb_open_thread(s, 0, 1, 970);
    sb_str(s, 1, "load");
    for (uint64_t i = 0; i < 6; i++) {
        sb_ts(s, ACT_REC_RANGE_PUSH, 1, 2500000 + i * 1000);
        sb_ts(s, ACT_REC_RANGE_POP, 0, 2500000 + i * 1000 + 333 + i);
    }
}

static void demo_spools(const char *dir)
{
    sb s;
    char path[256];
    demo_main(&s);
    snprintf(path, sizeof(path), "%s/960.acts", dir);
    assert_int_equal(sb_write(&s, path), 0);
    sb_free(&s);
    demo_child(&s);
    snprintf(path, sizeof(path), "%s/970.acts", dir);
    assert_int_equal(sb_write(&s, path), 0);
    sb_free(&s);
}

/* Replace the string value that follows `key` (first occurrence after
 * `after`) by `by`, in place in the malloc'ed *text. */
/* The string value of the key that starts at `k` (in *text), replaced by `by`. */
static void replace_at(char **text, size_t *len, char *k, const char *key, const char *by)
{
    char *v = k + strlen(key);
    assert_true(*v == '"');
    char *end = strchr(v + 1, '"');
    assert_non_null(end);
    size_t head = (size_t)(v + 1 - *text), tail = *len - (size_t)(end - *text);
    size_t bn = strlen(by);
    char *out = malloc(head + bn + tail + 1);
    assert_non_null(out);
    memcpy(out, *text, head);
    memcpy(out + head, by, bn);
    memcpy(out + head + bn, end, tail);
    out[head + bn + tail] = '\0';
    free(*text);
    *text = out;
    *len = head + bn + tail;
}

static void replace_value(char **text, size_t *len, const char *after, const char *key,
                          const char *by)
{
    char *a = strstr(*text, after);
    assert_non_null(a);
    char *k = strstr(a, key);
    assert_non_null(k);
    replace_at(text, len, k, key, by);
}

/* What differs between machines and builds, as placeholders. */
static void normalize(char **text, size_t *len)
{
    replace_value(text, len, "\"acceltrace\":{", "\"version\":", "VERSION");
    replace_value(text, len, "\"host\":{", "\"name\":", "HOST");
    replace_value(text, len, "\"host\":{", "\"boot_id\":", "BOOT");
}

/* The same in the JSON summary (pretty-printed), which carries the
 * trace's metadata: its golden held the host and boot id of the machine
 * that wrote it, and failed on every other (and after a reboot). */
static void normalize_summary(char **text, size_t *len)
{
    /* The metadata's "host" object, not the summary's host table: the one
     * object with a boot id, whose name comes just before it. */
    static const char name_key[] = "\"name\": ";
    char *boot = strstr(*text, "\"boot_id\": ");
    assert_non_null(boot);
    char *name = boot;
    while (name > *text && strncmp(name, name_key, sizeof(name_key) - 1))
        name--;
    assert_true(name > *text);
    replace_at(text, len, name, name_key, "HOST");
    replace_at(text, len, strstr(*text, "\"boot_id\": "), "\"boot_id\": ", "BOOT");
}

static char *slurp_any(const char *path, size_t *len)
{
    size_t n;
    char *raw = tu_slurp(path, &n);
    size_t m = strlen(path);
    if (m < 3 || strcmp(path + m - 3, ".gz"))
        return *len = n, raw;
    char *text = gunzip_mem(raw, n, len, NULL);
    free(raw);
    assert_non_null(text);
    char *z = realloc(text, *len + 1);
    assert_non_null(z);
    z[*len] = '\0';
    return z;
}

static void write_golden(const char *path, const char *text, size_t len)
{
    size_t m = strlen(path);
    if (m > 3 && !strcmp(path + m - 3, ".gz")) {
        gzFile g = gzopen(path, "wb9");
        assert_non_null(g);
        assert_int_equal(gzwrite(g, text, (unsigned)len), (int)len);
        assert_int_equal(gzclose(g), Z_OK);
        return;
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* The output at `got` (a file) against the golden `name`; the first
 * differing byte is shown, with some context, when they differ. */
static void check_golden(const char *got, const char *name, int trace)
{
    char gpath[512];
    snprintf(gpath, sizeof(gpath), "%s/%s", GOLDEN_DIR, name);
    size_t n, gn;
    char *text = slurp_any(got, &n);
    if (trace)
        normalize(&text, &n);
    else if (strstr(name, ".json"))
        normalize_summary(&text, &n);
    if (getenv("ACT_UPDATE_GOLDEN") && !strcmp(getenv("ACT_UPDATE_GOLDEN"), "1")) {
        write_golden(gpath, text, n);
        free(text);
        return;
    }
    char *want = slurp_any(gpath, &gn);
    size_t i = 0;
    while (i < n && i < gn && text[i] == want[i])
        i++;
    if (i < n || i < gn) {
        size_t from = i > 80 ? i - 80 : 0;
        fprintf(stderr,
                "%s differs from %s at byte %zu (%zu vs %zu bytes):\n got: %.160s\nwant: %.160s\n",
                got, gpath, i, n, gn, text + from, want + from);
    }
    assert_int_equal(n, gn);
    assert_memory_equal(text, want, n);
    free(text);
    free(want);
}

typedef struct run {
    char dir[64];
    char out[128];
    char sum[128];
} run;

static const char *const demo_argv[] = {"/opt/demo/saxpy", "--steps", "900", NULL};
static const char *const demo_meta[] = {"run=golden", "distributedInfo={\"rank\": 0}", NULL};

/* Process 960's spool in `dir` read live, its trace begun with eo's
 * output, as while it "runs" (the feed stops early, as at the program's
 * exit); eo->live set to it. */
static act_export_live *live_begin(const char *dir, act_export_opts *eo)
{
    act_export_live *l = act_export_live_new(dir, 960);
    assert_non_null(l);
    assert_int_equal(act_export_live_output(l, eo), 0);
    volatile int stop = 1;
    assert_int_equal(act_export_live_poll(l, &stop), 0);
    eo->live = l;
    return l;
}

/* How export_demo reads the spools: all at the end; the launching
 * process's live first (its trace begun while it "runs"); that, and its
 * events all written when it sealed its spool, the child's spool made only
 * after that (so the trace is written anew at the exit). */
enum { EXPORT_BATCH, EXPORT_LIVE, EXPORT_FINISHED_BEFORE_CHILD };

/* act_trace_export of the demo spools as `acceltrace run` calls it; with
 * live, the launching process's spool is read and its trace begun while
 * it "runs" (the feed stops early, as at the program's exit). */
static void export_demo(run *r, const char *out_name, int by_range, int live)
{
    snprintf(r->dir, sizeof(r->dir), "/tmp/act_golden_XXXXXX");
    assert_non_null(mkdtemp(r->dir));
    demo_spools(r->dir);
    snprintf(r->out, sizeof(r->out), "%s/%s", r->dir, out_name);
    snprintf(r->sum, sizeof(r->sum), "%s/summary.txt", r->dir);
    FILE *sum = fopen(r->sum, "w");
    assert_non_null(sum);
    act_export_opts eo = {.spool_dir = r->dir,
                          .out_path = r->out,
                          .argv = demo_argv,
                          .argc = 3,
                          .summary = sum,
                          .summary_by_range = by_range,
                          .child_status = 0,
                          .extra_metadata = demo_meta,
                          .child_pid = 960};
    act_export_live *l = NULL;
    char child[256], away[256];
    snprintf(child, sizeof(child), "%s/970.acts", r->dir);
    snprintf(away, sizeof(away), "%s/970.away", r->dir);
    if (live == EXPORT_FINISHED_BEFORE_CHILD)
        assert_int_equal(rename(child, away), 0);
    if (live) {
        l = live_begin(r->dir, &eo);
        assert_true(act_export_live_written(l) > 0);
    }
    if (live == EXPORT_FINISHED_BEFORE_CHILD) {
        assert_int_equal(act_export_live_finish(l), 1);
        assert_int_equal(rename(away, child), 0);
    }
    assert_int_equal(act_trace_export(&eo), 0);
    assert_int_equal(act_export_live_voided(l), live == EXPORT_FINISHED_BEFORE_CHILD);
    act_export_live_free(l);
    assert_int_equal(fclose(sum), 0);
}

/* The launching process alone (960), exported to dir/out with its summary
 * at dir/sum: read live or not; with `finish`, its events all written at
 * the seal; `after` (when not NULL) changes the spool before the export,
 * as a thread publishing after the seal would. Returns the export's
 * times. */
static act_export_times export_alone(const char *dir, const char *out, const char *sum_path,
                                     int live, int finish, void (*after)(const char *spool),
                                     int status)
{
    char spool[256];
    snprintf(spool, sizeof(spool), "%s/960.acts", dir);
    sb s;
    demo_main(&s);
    assert_int_equal(sb_write(&s, spool), 0);
    sb_free(&s);
    FILE *sum = fopen(sum_path, "w");
    assert_non_null(sum);
    act_export_times t = {0};
    act_export_opts eo = {.spool_dir = dir,
                          .out_path = out,
                          .force = 1, /* the next case writes the same file */
                          .argv = demo_argv,
                          .argc = 3,
                          .summary = sum,
                          .child_status = status,
                          .child_pid = 960,
                          .times = &t};
    act_export_live *l = NULL;
    if (live)
        l = live_begin(dir, &eo);
    if (finish)
        assert_int_equal(act_export_live_finish(l), 1);
    if (after)
        after(spool);
    assert_int_equal(act_trace_export(&eo), 0);
    assert_int_equal(act_export_live_voided(l), live && after);
    act_export_live_free(l);
    assert_int_equal(fclose(sum), 0);
    assert_int_equal(unlink(spool), 0);
    return t;
}

/* One record more dropped, counted in the header after the seal. */
static void dropped_after_seal(const char *spool)
{
    act_spool_header h;
    int fd = open(spool, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    h.dropped[ACT_REC_API]++;
    assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    close(fd);
}

/* Two outputs of export_alone, byte for byte. */
static void same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp_any(a, &na), *y = slurp_any(b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(x, y, na);
    free(x);
    free(y);
}

static void run_clean(run *r)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/960.acts", r->dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/970.acts", r->dir);
    unlink(path);
    unlink(r->out);
    unlink(r->sum);
    assert_int_equal(rmdir(r->dir), 0); /* nothing else left beside them */
}

static void test_json(void **state)
{
    (void)state;
    run r;
    export_demo(&r, "trace.json", 0, 0);
    check_golden(r.out, "trace.json.gz", 1);
    check_golden(r.sum, "summary.txt", 0);
    run_clean(&r);
}

/* The same trace through gzip; the summary by range. */
static void test_json_gz(void **state)
{
    (void)state;
    run r;
    export_demo(&r, "trace.json.gz", 1, 0);
    check_golden(r.out, "trace.json.gz", 1);
    check_golden(r.sum, "summary_by_range.txt", 0);
    run_clean(&r);
}

/* Written while the program runs: events first, the same summary. */
static void test_live(void **state)
{
    (void)state;
    run r;
    export_demo(&r, "trace.json", 0, 1);
    check_golden(r.out, "trace_live.json.gz", 1);
    check_golden(r.sum, "summary.txt", 0);
    run_clean(&r);
}

/* Every event written when the program sealed its spool: the trace and
 * the summary are those of the export that does it at the exit (the
 * summary made at the seal printed as it is, or made again when the exit
 * brought an error line: the program killed after its seal); when the
 * spool changed after the seal, the export writes anew what a batch
 * export of it writes. */
static void test_live_finished(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_golden_XXXXXX", out[2][128], sum[2][128];
    assert_non_null(mkdtemp(dir));
    for (int k = 0; k < 2; k++) {
        snprintf(out[k], sizeof(out[k]), "%s/trace%d.json", dir, k);
        snprintf(sum[k], sizeof(sum[k]), "%s/summary%d.txt", dir, k);
    }
    act_export_times t = export_alone(dir, out[0], sum[0], 1, 0, NULL, 0);
    assert_int_equal(t.early_ns, 0);
    t = export_alone(dir, out[1], sum[1], 1, 1, NULL, 0);
    assert_true(t.early_ns > 0);
    same_file(out[0], out[1]);
    same_file(sum[0], sum[1]);
    export_alone(dir, out[0], sum[0], 1, 0, NULL, SIGKILL); /* a wait status: killed */
    t = export_alone(dir, out[1], sum[1], 1, 1, NULL, SIGKILL);
    assert_true(t.early_ns > 0);
    same_file(out[0], out[1]);
    same_file(sum[0], sum[1]);
    char *text = slurp_any(sum[1], &(size_t){0});
    assert_non_null(strstr(text, "process 960 died of SIGKILL"));
    free(text);
    export_alone(dir, out[0], sum[0], 1, 1, dropped_after_seal, 0);
    export_alone(dir, out[1], sum[1], 0, 0, dropped_after_seal, 0);
    same_file(out[0], out[1]);
    same_file(sum[0], sum[1]);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(unlink(out[k]), 0);
        assert_int_equal(unlink(sum[k]), 0);
    }
    assert_int_equal(rmdir(dir), 0);
}

/* The child's spool made after the launching process's events were all
 * written at its seal: written anew at the exit, both processes. */
static void test_live_finished_then_child(void **state)
{
    (void)state;
    run r;
    export_demo(&r, "trace.json", 0, EXPORT_FINISHED_BEFORE_CHILD);
    check_golden(r.out, "trace.json.gz", 1);
    check_golden(r.sum, "summary.txt", 0);
    run_clean(&r);
}

/* `acceltrace summary` of the written trace in each format. */
static void test_summary_formats(void **state)
{
    (void)state;
    static const char *const names[] = {"summary_table.txt", "summary.csv", "summary.json"};
    static const int formats[] = {ACT_SUM_TABLE, ACT_SUM_CSV, ACT_SUM_JSON};
    run r;
    export_demo(&r, "trace.json", 0, 0);
    for (int k = 0; k < 3; k++) {
        act_summary *s = act_summary_new();
        assert_non_null(s);
        char err[512];
        assert_int_equal(act_summary_load_json(s, r.out, err, sizeof(err), NULL, NULL), 0);
        FILE *f = fopen(r.sum, "w");
        assert_non_null(f);
        act_summary_fmt fmt = {
            .by_range = 1, .format = formats[k], .unit = ACT_SUM_US, .width = 100};
        act_summary_print_fmt(s, f, &fmt);
        assert_int_equal(fclose(f), 0);
        act_summary_free(s);
        check_golden(r.sum, names[k], 0);
    }
    run_clean(&r);
}

int main(void)
{
    unsetenv("COLUMNS"); /* the export's table is 80 wide then */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_json_gz),
        cmocka_unit_test(test_live),
        cmocka_unit_test(test_live_finished),
        cmocka_unit_test(test_live_finished_then_child),
        cmocka_unit_test(test_summary_formats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
