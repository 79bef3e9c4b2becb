/*
 * test_chrome_writer.c -- the Chrome trace writer and the export entry
 * point: the trace's top-level shape, user metadata (raw JSON after
 * validation, invalid JSON kept as a string, reserved keys refused, last
 * value wins), invalid UTF-8 counted, exact compact timestamps (every
 * nanosecond remainder), writing through a temporary file that never
 * replaces an existing trace without force, and act_trace_export() on a
 * spool directory with a bad spool.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <dirent.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "api/export.h"
#include "timeline_util.h"

static void meta(sb *s, uint32_t key, uint32_t value, int is_json)
{
    act_rec_metadata *m = sb_rec(s, ACT_REC_METADATA, key, sizeof(*m));
    m->value = value;
    m->is_json = (uint32_t)is_json;
}

static void spool_with_metadata(sb *s)
{
    sb_init(s, 800, 4096, 1);
    sb_use_chunk(s, 0);
    sb_segment(s, 1);
    sb_thread(s, 1, 800, 0);
    sb_str(s, 1, "doc");
    sb_str(s, 2, "{\"run\": 7, \"tags\": [\"a\"]}");
    sb_str(s, 3, "bad");
    sb_str(s, 4, "{not json");
    sb_str(s, 5, "traceEvents");
    sb_str(s, 6, "dup");
    sb_str(s, 7, "first");
    sb_str(s, 8, "second");
    sb_str(s, 9, "na\xffme\xe2\x80\xa8");
    meta(s, 1, 2, 1);
    meta(s, 3, 4, 1);
    meta(s, 5, 7, 0);
    meta(s, 6, 7, 0);
    meta(s, 6, 8, 0);
    sb_ts(s, ACT_REC_RANGE_PUSH, 9, 2000000);
    sb_ts(s, ACT_REC_RANGE_POP, 0, 2001500);
    sb_ts(s, ACT_REC_ERROR, 3, 2001600);
}

/* Every number after `key` in text: no fraction ending in '0' (nor a bare
 * '.'), as the compact timestamps promise. */
static void assert_no_trailing_zeros(const char *text, const char *key)
{
    for (const char *p = strstr(text, key); p; p = strstr(p, key)) {
        p += strlen(key);
        const char *end = p + strspn(p, "-0123456789.");
        if (memchr(p, '.', (size_t)(end - p)))
            assert_true(end[-1] != '0' && end[-1] != '.');
    }
}
static void test_shape_and_metadata(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    spool_with_metadata(&s);
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    act_build_opts o = {0, 0};
    assert_int_equal(act_timeline_build(&b.tl, b.ptr, b.n, &o), 0);
    const char *argv[] = {"/usr/bin/prog", "a\"b"};
    const char *extra[] = {"cli=value", "dup=from cli", "broken", NULL};
    act_chrome_stats stats = {0};
    act_chrome_opts co = {NULL, argv, 2, extra, 3 << 8, &stats, 0};
    /* A writer only reads the timeline (the summary may read it after). */
    act_tl_counts before = b.tl.counts;
    size_t errors_before = b.tl.n_errors;
    size_t len;
    char *text = tu_trace_text(&b.tl, &co, &len);
    assert_non_null(text);
    assert_memory_equal(&before, &b.tl.counts, sizeof(before));
    assert_int_equal(b.tl.n_errors, errors_before);
    assert_int_equal(stats.invalid_utf8, 1);
    assert_int_equal(stats.errors, errors_before + 3); /* reserved key, bad JSON, 'broken' */
    /* Timestamps: microseconds with the fewest decimals that keep the
     * nanoseconds (1000000 ns, 1500 ns). */
    assert_non_null(strstr(text, "\"ts\":1000,\"dur\":1.5"));
    assert_no_trailing_zeros(text, "\"ts\":");
    assert_no_trailing_zeros(text, "\"dur\":");
    json_error_t e;
    b.doc = json_loads(text, 0, &e);
    assert_non_null(b.doc);
    free(text);

    assert_int_equal(json_integer_value(json_object_get(b.doc, "schemaVersion")), 1);
    assert_string_equal(json_string_value(json_object_get(b.doc, "traceName")), "prog");
    assert_string_equal(json_string_value(json_object_get(b.doc, "displayTimeUnit")), "ms");
    assert_int_equal(json_integer_value(json_object_get(b.doc, "baseTimeNanoseconds")),
                     1700000000000000000ll - 1000000 + 1000000);
    assert_true(json_is_array(json_object_get(b.doc, "deviceProperties")));
    assert_true(json_is_array(json_object_get(b.doc, "traceEvents")));
    /* JSON metadata is a value, not a string. */
    json_t *doc = json_object_get(b.doc, "doc");
    assert_int_equal(json_integer_value(json_object_get(doc, "run")), 7);
    /* Invalid JSON metadata is kept as a string and reported. */
    assert_string_equal(json_string_value(json_object_get(b.doc, "bad")), "{not json");
    assert_string_equal(json_string_value(json_object_get(b.doc, "cli")), "value");
    assert_string_equal(json_string_value(json_object_get(b.doc, "dup")), "from cli");
    json_t *at = json_object_get(b.doc, "acceltrace");
    assert_string_equal(json_string_value(json_array_get(json_object_get(at, "command"), 1)),
                        "a\"b");
    assert_int_equal(json_integer_value(json_object_get(at, "exit_status")), 3);
    assert_int_equal(json_integer_value(json_object_get(at, "invalid_utf8")), 1);
    json_t *errors = json_object_get(at, "errors");
    int saw_reserved = 0, saw_json = 0, saw_source = 0, saw_broken = 0;
    size_t i;
    json_t *v;
    json_array_foreach(errors, i, v)
    {
        const char *line = json_string_value(v);
        saw_reserved |= strstr(line, "'traceEvents' is reserved") != NULL;
        saw_json |= strstr(line, "not valid JSON") != NULL;
        saw_source |= !strcmp(line, "pid 800: bad");
        saw_broken |= strstr(line, "'broken'") != NULL;
    }
    assert_true(saw_reserved && saw_json && saw_source && saw_broken);
    assert_true(json_is_object(json_object_get(at, "clock")));
    assert_true(json_is_object(json_object_get(at, "records")));
    assert_true(json_is_object(json_object_get(at, "dropped")));
    assert_true(json_is_object(json_object_get(at, "callbacks")));
    /* U+2028 survives (escaped on the wire), the bad byte became U+FFFD. */
    b.events = json_object_get(b.doc, "traceEvents");
    assert_non_null(tu_find(&b, "X", "na\xef\xbf\xbdme\xe2\x80\xa8", 0));
    sb_free(&s);
    tu_free(&b);
}

/* A trace written with its events first (while the program runs, the
 * other members at the close) is the batch trace's JSON object: the same
 * members and values, the same events in the same order, stats too. */
static void test_events_first_same_object(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    spool_with_metadata(&s);
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    act_build_opts o = {0, 0};
    assert_int_equal(act_timeline_build(&b.tl, b.ptr, b.n, &o), 0);
    const char *argv[] = {"/usr/bin/prog", "a\"b"};
    const char *extra[] = {"cli=value", "dup=from cli", "broken", NULL};
    act_chrome_stats st[2] = {{0}};
    json_t *doc[2];
    for (int k = 0; k < 2; k++) {
        act_chrome_opts co = {NULL, argv, 2, extra, 3 << 8, &st[k], k};
        size_t len;
        char *text = tu_trace_text(&b.tl, &co, &len);
        assert_non_null(text);
        if (k)
            assert_int_equal(strncmp(text, "{\"traceEvents\":[", 16), 0);
        json_error_t e;
        doc[k] = json_loads(text, 0, &e);
        assert_non_null(doc[k]);
        free(text);
    }
    assert_true(json_equal(doc[0], doc[1]));
    assert_memory_equal(&st[0], &st[1], sizeof(st[0]));
    json_decref(doc[0]);
    json_decref(doc[1]);
    sb_free(&s);
    tu_free(&b);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A trace's events as sorted compact JSON lines, the other members in
 * `rest` (the events removed): the same multiset means the same events. */
static char **sorted_events(const char *path, json_t **rest, size_t *n)
{
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e);
    assert_non_null(doc);
    json_t *ev = json_object_get(doc, "traceEvents");
    *n = json_array_size(ev);
    char **v = calloc(*n ? *n : 1, sizeof(*v));
    assert_non_null(v);
    for (size_t i = 0; i < *n; i++)
        v[i] = json_dumps(json_array_get(ev, i), JSON_SORT_KEYS | JSON_COMPACT);
    qsort(v, *n, sizeof(*v), str_cmp);
    json_object_del(doc, "traceEvents");
    *rest = doc;
    return v;
}

static void spool_settling(sb *s, int capture_at_end)
{
    sb_init(s, 960, 8u << 20, 1);
    sb_open_thread(s, 0, 1, 960);
    sb_str(s, 1, "step");
    sb_str(s, 2, "clEnqueueNDRangeKernel");
    sb_str(s, 3, "saxpy");
    uint64_t ts = 2000000;
    for (size_t i = 0; i < 2000; i++, ts += 10000) {
        sb_ts(s, ACT_REC_RANGE_PUSH, 1, ts);
        sb_api(s, 2, ts + 200, ts + 900, i + 1, ((uint64_t)1 << 32) | (i + 1), ACT_SOURCE_OPENCL);
        sb_ts(s, ACT_REC_RANGE_POP, 0, ts + 1000);
        sb_op(s, 3, ACT_OP_KERNEL, 1, 1, ts + 1200, ts + 5000, i + 1, ACT_SOURCE_OPENCL);
    }
    if (capture_at_end) /* act_stop: what was written early may be outside */
        sb_ts(s, ACT_REC_CAPTURE, 0, ts - 3000);
    sb_end_all(s); /* read while it runs: its segment ended (record.h S1) */
}

/* Events written while the program runs (act_export_live_output; the
 * feed stops after 1 024 records, as when the program exits): the export
 * finishes that file, the batch trace event for event; when a CAPTURE
 * record read later voids them, the export writes anew, byte for byte the
 * batch trace, and no temporary file is left. */
static void test_written_early(void **state)
{
    (void)state;
    for (int capture = 0; capture < 2; capture++) {
        char dir[] = "/tmp/act_early_XXXXXX";
        assert_non_null(mkdtemp(dir));
        sb s;
        spool_settling(&s, capture);
        char path[128], out[2][128];
        snprintf(path, sizeof(path), "%s/960.acts", dir);
        assert_int_equal(sb_write(&s, path), 0);
        for (int k = 0; k < 2; k++) {
            snprintf(out[k], sizeof(out[k]), "%s/trace%d.json", dir, k);
            act_export_opts eo = {.spool_dir = dir, .out_path = out[k], .child_status = -1};
            act_export_live *l = NULL;
            if (k) {
                l = act_export_live_new(dir, 960);
                assert_int_equal(act_export_live_output(l, &eo), 0);
                volatile int stop = 1;
                assert_int_equal(act_export_live_poll(l, &stop), 0);
                assert_true(act_export_live_written(l) > 0);
                eo.live = l;
            }
            assert_int_equal(act_trace_export(&eo), 0);
            act_export_live_free(l);
        }
        size_t na, nb;
        char *a = tu_slurp(out[0], &na), *b = tu_slurp(out[1], &nb);
        if (capture) {
            assert_int_equal(na, nb);
            assert_memory_equal(a, b, na);
        } else {
            json_t *ra, *rb;
            size_t ea, eb;
            char **va = sorted_events(out[0], &ra, &ea), **vb = sorted_events(out[1], &rb, &eb);
            assert_true(json_equal(ra, rb));
            assert_int_equal(ea, eb);
            assert_true(ea > 4 * 2000);
            for (size_t i = 0; i < ea; i++) {
                assert_string_equal(va[i], vb[i]);
                free(va[i]);
                free(vb[i]);
            }
            free(va);
            free(vb);
            json_decref(ra);
            json_decref(rb);
            assert_true(na != nb || memcmp(a, b, na)); /* another order */
        }
        free(a);
        free(b);
        unlink(out[0]);
        unlink(out[1]);
        unlink(path);
        assert_int_equal(rmdir(dir), 0); /* nothing else left */
        sb_free(&s);
    }
}

/* Every nanosecond remainder 0..999 of a time and of a duration (i * 1001
 * ns after the first: remainder i whatever the base's): the
 * text is the exact decimal (fewest digits, no trailing zero), so a
 * reader's ts * 1000 gives back the nanoseconds. */
static void test_time_fractions(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    sb_init(&s, 811, 1u << 20, 1);
    sb_open_thread(&s, 0, 1, 811);
    sb_str(&s, 1, "r");
    const uint64_t base = 2000000;
    for (uint64_t i = 0; i < 1000; i++) {
        /* start i * 1001 ns after the base (remainder i), lasting 3000 + 999 - i ns */
        sb_ts(&s, ACT_REC_RANGE_PUSH, 1, base + i * 1001);
        sb_ts(&s, ACT_REC_RANGE_POP, 0, base + i * 1001 + 3999 - i);
    }
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    act_build_opts o = {0, 0};
    assert_int_equal(act_timeline_build(&b.tl, b.ptr, b.n, &o), 0);
    act_chrome_opts co = {NULL, NULL, 0, NULL, -1, NULL, 0};
    size_t len;
    char *text = tu_trace_text(&b.tl, &co, &len);
    assert_non_null(text);
    assert_no_trailing_zeros(text, "\"ts\":");
    assert_no_trailing_zeros(text, "\"dur\":");
    size_t seen = 0;
    uint64_t first = 0;
    for (const char *p = strstr(text, "\"name\":\"r\""); p; p = strstr(p + 1, "\"name\":\"r\"")) {
        unsigned long long ts_us = 0, dur_us = 0;
        unsigned ts_f = 0, dur_f = 0;
        const char *t = strstr(p, "\"ts\":"), *d = strstr(p, "\"dur\":");
        assert_non_null(t);
        assert_non_null(d);
        assert_true(sscanf(t, "\"ts\":%llu", &ts_us) >= 1);
        assert_true(sscanf(d, "\"dur\":%llu", &dur_us) >= 1);
        /* the fraction's digits, scaled to nanoseconds */
        const char *tf = strchr(t, '.'), *df = strchr(d, '.');
        const char *tend = t + strcspn(t, ",}"), *dend = d + strcspn(d, ",}");
        for (int k = 0; k < 3; k++) {
            ts_f = ts_f * 10 +
                   (tf && tf < tend && tf + 1 + k < tend ? (unsigned)(tf[1 + k] - '0') : 0);
            dur_f = dur_f * 10 +
                    (df && df < dend && df + 1 + k < dend ? (unsigned)(df[1 + k] - '0') : 0);
        }
        assert_true(!tf || tf >= tend || tend - tf <= 4);
        assert_true(!df || df >= dend || dend - df <= 4);
        uint64_t i = seen++, ts = ts_us * 1000 + ts_f;
        if (!i)
            first = ts; /* the time base may differ from the first record */
        assert_true(ts - first == i * 1001);
        assert_true(dur_us * 1000 + dur_f == 3999 - i);
    }
    assert_int_equal(seen, 1000);
    free(text);
    tu_free(&b);
    sb_free(&s);
}

/* Integers are written digit by digit into place: every length, and the
 * edges around each power of ten, read back as the value written (above
 * INT64_MAX as a decimal string). */
static void test_integer_args(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    sb_init(&s, 810, 1u << 20, 1);
    sb_open_thread(&s, 0, 1, 810);
    sb_str(&s, 1, "r");
    sb_str(&s, 2, "v");
    uint64_t vals[64];
    size_t n = 0;
    vals[n++] = 0;
    for (uint64_t p = 10; n + 3 <= 60; p *= 10) {
        vals[n++] = p - 1;
        vals[n++] = p;
        vals[n++] = p + 1;
        if (p > UINT64_MAX / 10)
            break;
    }
    vals[n++] = (uint64_t)INT64_MAX;
    vals[n++] = (uint64_t)INT64_MAX + 1;
    vals[n++] = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        sb_ts(&s, ACT_REC_RANGE_PUSH, 1, 2000000 + i * 10);
        act_rec_arg *a = sb_rec(&s, ACT_REC_ARG, 2, sizeof(*a));
        a->type = ACT_RECARG_U64;
        a->v.u = vals[i];
        sb_ts(&s, ACT_REC_RANGE_POP, 0, 2000005 + i * 10);
    }
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    act_build_opts o = {0, 0};
    assert_int_equal(act_timeline_build(&b.tl, b.ptr, b.n, &o), 0);
    act_chrome_opts co = {NULL, NULL, 0, NULL, -1, NULL, 0};
    size_t len;
    char *text = tu_trace_text(&b.tl, &co, &len);
    assert_non_null(text);
    json_error_t e;
    b.doc = json_loads(text, 0, &e);
    assert_non_null(b.doc);
    free(text);
    json_t *events = json_object_get(b.doc, "traceEvents"), *ev;
    size_t i, k = 0;
    json_array_foreach(events, i, ev)
    {
        json_t *v = json_object_get(json_object_get(ev, "args"), "v");
        if (!v)
            continue;
        assert_true(k < n);
        if (vals[k] <= (uint64_t)INT64_MAX) {
            assert_true(json_is_integer(v));
            assert_true((uint64_t)json_integer_value(v) == vals[k]);
        } else {
            char want[32];
            snprintf(want, sizeof(want), "%llu", (unsigned long long)vals[k]);
            assert_string_equal(json_string_value(v), want);
        }
        k++;
    }
    assert_int_equal(k, n);
    sb_free(&s);
    tu_free(&b);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, ".."));
    closedir(d);
    return n;
}

/* The writer's file path, as the export drives it (one batch here). */
static int write_file(act_timeline *tl, const act_chrome_opts *co, const char *path, int force,
                      char *err, size_t errlen)
{
    act_chrome_stream *s;
    int rc = act_chrome_stream_open(&s, tl, co, path, force, 0, err, errlen);
    if (!s)
        return rc;
    if (!rc)
        rc = act_chrome_stream_write(s, tl);
    int crc = act_chrome_stream_close(s, !rc, err, errlen);
    return rc ? rc : crc;
}

static void test_write_file_no_overwrite(void **state)
{
    (void)state;
    act_timeline tl;
    act_build_opts o = {0, 0};
    assert_int_equal(act_timeline_build(&tl, NULL, 0, &o), 0);
    char dir[] = "/tmp/act_wr_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], err[512];
    snprintf(path, sizeof(path), "%s/out.json", dir);
    act_chrome_opts co = {"t", NULL, 0, NULL, -1, NULL, 0};
    assert_int_equal(write_file(&tl, &co, path, 0, err, sizeof(err)), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(count_entries(dir), 1); /* no temporary left behind */

    FILE *f = fopen(path, "w");
    fputs("precious", f);
    fclose(f);
    assert_int_equal(write_file(&tl, &co, path, 0, err, sizeof(err)), ACT_E_IO);
    assert_non_null(strstr(err, "already exists"));
    f = fopen(path, "r");
    char buf[16] = "";
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "precious");
    assert_int_equal(count_entries(dir), 1);

    assert_int_equal(write_file(&tl, &co, path, 1, err, sizeof(err)), 0);
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e);
    assert_non_null(doc);
    json_decref(doc);

    /* A symlink at the destination is not followed. */
    char link_path[160];
    snprintf(link_path, sizeof(link_path), "%s/link.json", dir);
    assert_int_equal(symlink(path, link_path), 0);
    assert_int_equal(write_file(&tl, &co, link_path, 0, err, sizeof(err)), ACT_E_IO);
    /* Unwritable directory: a clear error, nothing left behind. */
    assert_int_equal(write_file(&tl, &co, "/nonexistent-dir/x.json", 1, err, sizeof(err)),
                     ACT_E_IO);
    assert_non_null(strstr(err, "/nonexistent-dir/x.json"));
    unlink(link_path);
    unlink(path);
    rmdir(dir);
    act_timeline_free(&tl);
}

static void test_export_entry_point(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_ex_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], out[128];
    sb s;
    sb_init(&s, 900, 4096, 2);
    sb_open_thread(&s, 0, 1, 900);
    sb_str(&s, 1, "enqueue");
    sb_str(&s, 2, "vadd");
    sb_api(&s, 1, 2000000, 2001000, 1, 0, ACT_SOURCE_OPENCL);
    sb_op(&s, 2, ACT_OP_KERNEL, 1, 1, 2002000, 2005000, 1, ACT_SOURCE_OPENCL);
    snprintf(path, sizeof(path), "%s/900.acts", dir);
    assert_int_equal(sb_write(&s, path), 0);
    snprintf(path, sizeof(path), "%s/901.acts", dir); /* garbage spool */
    FILE *f = fopen(path, "w");
    fputs("garbage", f);
    fclose(f);
    snprintf(out, sizeof(out), "%s/trace.json", dir);

    char *sum = NULL;
    size_t sum_len = 0;
    FILE *mem = open_memstream(&sum, &sum_len);
    act_export_opts eo = {.spool_dir = dir, .out_path = out, .summary = mem, .child_status = 0};
    assert_int_equal(act_trace_export(&eo), ACT_E_FORMAT);
    fclose(mem);
    assert_non_null(strstr(sum, "vadd"));
    assert_non_null(strstr(sum, "enqueue"));
    free(sum);
    json_error_t e;
    json_t *doc = json_load_file(out, 0, &e);
    assert_non_null(doc);
    json_t *errors = json_object_get(json_object_get(doc, "acceltrace"), "errors");
    assert_true(json_array_size(errors) >= 1);
    assert_non_null(strstr(json_string_value(json_array_get(errors, 0)), "901.acts"));
    json_decref(doc);
    /* The trace exists now: a second export without force is refused. */
    assert_int_equal(act_trace_export(&eo), ACT_E_IO);
    unlink(out);
    unlink(path);
    snprintf(path, sizeof(path), "%s/900.acts", dir);
    unlink(path);
    rmdir(dir);
    sb_free(&s);
}

/* The export streams events to the writer in batches (ACT_TL_SINK_BATCH)
 * and releases the spool's record list early; with a summary the summary
 * also takes each batch (test_summary_stream.c compares it with the
 * whole-timeline summary). Both must write the same trace bytes,
 * over several batches, with args, counters, marks, thread names, nested
 * ranges on two threads and linked device ops. */
static void test_streamed_export_matches(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_st_XXXXXX";
    assert_non_null(mkdtemp(dir));
    sb s;
    sb_init(&s, 950, 8u << 20, 1);
    sb_open_thread(&s, 0, 1, 950);
    sb_str(&s, 1, "step");
    sb_str(&s, 2, "clEnqueueNDRangeKernel");
    sb_str(&s, 3, "saxpy");
    sb_str(&s, 4, "iteration");
    sb_str(&s, 5, "mem");
    sb_str(&s, 6, "tick");
    sb_str(&s, 7, "main thread");
    act_rec_thread *t = sb_rec(&s, ACT_REC_THREAD, 0, sizeof(*t));
    t->tid = 950;
    t->name = 7;
    size_t units = (ACT_TL_SINK_BATCH / 5) * 2 + 777;
    uint64_t ts = 2000000;
    for (size_t i = 0; i < units; i++, ts += 10000) {
        sb_ts(&s, ACT_REC_RANGE_PUSH, 1, ts);
        act_rec_arg *a = sb_rec(&s, ACT_REC_ARG, 4, sizeof(*a));
        a->type = ACT_RECARG_U64;
        a->v.u = i;
        sb_ts(&s, ACT_REC_RANGE_PUSH, 1, ts + 100); /* nested */
        sb_api(&s, 2, ts + 200, ts + 900, i + 1, ((uint64_t)1 << 32) | (2 * i + 2),
               ACT_SOURCE_OPENCL);
        sb_ts(&s, ACT_REC_RANGE_POP, 0, ts + 1000);
        sb_ts(&s, ACT_REC_RANGE_POP, 0, ts + 1100);
        /* every 7th op overlaps the next one: sub-lanes */
        sb_op(&s, 3, ACT_OP_KERNEL, 1, 1, ts + 1200, ts + (i % 7 ? 5000 : 15000), i + 1,
              ACT_SOURCE_OPENCL);
        if (i % 1000 == 0) {
            act_rec_counter *c = sb_rec(&s, ACT_REC_COUNTER, 5, sizeof(*c));
            c->ts = ts + 50;
            c->value = (double)i / 3;
            sb_ts(&s, ACT_REC_MARK, 6, ts + 60);
        }
    }
    sb_segment(&s, 2);
    sb_thread(&s, 2, 951, 0);
    sb_str(&s, 1, "worker");
    for (size_t i = 0; i < 100; i++)
        sb_ts(&s, i % 2 ? ACT_REC_RANGE_POP : ACT_REC_RANGE_PUSH, i % 2 ? 0 : 1, 3000000 + i * 100);
    char path[128], out[2][128];
    snprintf(path, sizeof(path), "%s/950.acts", dir);
    assert_int_equal(sb_write(&s, path), 0);
    char *sum = NULL;
    size_t sum_len = 0;
    for (int k = 0; k < 2; k++) {
        snprintf(out[k], sizeof(out[k]), "%s/trace%d.json", dir, k);
        FILE *mem = k ? open_memstream(&sum, &sum_len) : NULL;
        act_export_opts eo = {
            .spool_dir = dir, .out_path = out[k], .summary = mem, .child_status = -1};
        assert_int_equal(act_trace_export(&eo), 0);
        if (mem)
            fclose(mem);
    }
    size_t n0, n1;
    char *a = tu_slurp(out[0], &n0), *b = tu_slurp(out[1], &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(a, b, n0);
    /* and it is the trace: every unit's events are there */
    json_error_t e;
    json_t *doc = json_loadb(a, n0, 0, &e);
    assert_non_null(doc);
    size_t n_ev = json_array_size(json_object_get(doc, "traceEvents"));
    assert_true(n_ev > 2 * ACT_TL_SINK_BATCH);
    assert_true(n_ev >= units * 6);
    json_decref(doc);
    free(a);
    free(b);
    free(sum);
    unlink(out[0]);
    unlink(out[1]);
    unlink(path);
    rmdir(dir);
    sb_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_and_metadata),
        cmocka_unit_test(test_time_fractions),
        cmocka_unit_test(test_integer_args),
        cmocka_unit_test(test_write_file_no_overwrite),
        cmocka_unit_test(test_export_entry_point),
        cmocka_unit_test(test_streamed_export_matches),
        cmocka_unit_test(test_events_first_same_object),
        cmocka_unit_test(test_written_early),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
