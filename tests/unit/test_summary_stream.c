/*
 * test_summary_stream.c -- the summary of `acceltrace run` computed from
 * the streamed event batches (export.c feeds each batch to
 * act_summary_add_events before the Chrome writer empties it) must print
 * byte for byte what act_summary_from_timeline prints on the whole
 * timeline, built and written as the export did before it streamed with
 * a summary, and the trace file must be the same too. The constructed
 * spool spans several sink batches and has nested ranges carrying
 * External ids (--by-range attribution), host calls on two threads,
 * overlapping kernels (sub-lanes), device ops with no launching range,
 * and a name with invalid UTF-8 (a counter the writer fills in).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "api/export.h"
#include "timeline/timeline.h"
#include "writers/chrome_json.h"
#include "writers/summary.h"

#include "timeline_util.h"

/* Enough units that the events fill more than two sink batches. */
static size_t units_for_batches(void)
{
    return (ACT_TL_SINK_BATCH / 5) * 2 + 777;
}

static void build_spool(const char *path)
{
    sb s;
    sb_init(&s, 960, 16u << 20, 1);
    sb_open_thread(&s, 0, 1, 960);
    sb_str(&s, 1, "step");
    sb_str(&s, 2, "clEnqueueNDRangeKernel");
    sb_str(&s, 3, "saxpy");
    sb_str(&s, 4, "iteration");
    sb_str(&s, 5, "forward");
    sb_string(&s, 6, "bad\xff name", 9);
    sb_str(&s, 7, "clEnqueueWriteBuffer");
    sb_str(&s, 8, "copy");
    size_t units = units_for_batches();
    uint64_t ts = 2000000;
    for (size_t i = 0; i < units; i++, ts += 10000) {
        sb_ts(&s, ACT_REC_RANGE_PUSH, 1, ts);
        act_rec_arg *a = sb_rec(&s, ACT_REC_ARG, 4, sizeof(*a));
        a->type = ACT_RECARG_U64;
        a->v.u = i;
        /* nested; names alternate so --by-range has several rows */
        sb_ts(&s, ACT_REC_RANGE_PUSH, i % 3 ? 1 : 5, ts + 100);
        sb_api(&s, 2, ts + 200, ts + 900, 2 * i + 1, ((uint64_t)1 << 32) | (2 * i + 2),
               ACT_SOURCE_OPENCL);
        sb_ts(&s, ACT_REC_RANGE_POP, 0, ts + 1000);
        sb_ts(&s, ACT_REC_RANGE_POP, 0, ts + 1100);
        /* every 7th op overlaps the next one: sub-lanes; durations vary
         * so totals are not round numbers */
        sb_op(&s, i % 11 ? 3 : 6, ACT_OP_KERNEL, 1, 1, ts + 1200,
              ts + (i % 7 ? 5000 + (i * 37) % 1000 : 15000), 2 * i + 1, ACT_SOURCE_OPENCL);
        if (i % 5 == 0) { /* a copy launched outside any range */
            sb_api(&s, 7, ts + 5500, ts + 5600, 2 * i + 2, 0, ACT_SOURCE_OPENCL);
            sb_op(&s, 8, ACT_OP_MEMCPY_HTOD, 1, 2, ts + 5700, ts + 5950 + i % 13, 2 * i + 2,
                  ACT_SOURCE_OPENCL);
        }
    }
    sb_segment(&s, 2);
    sb_thread(&s, 2, 961, 0);
    sb_str(&s, 1, "worker");
    for (size_t i = 0; i < 100; i++)
        sb_ts(&s, i % 2 ? ACT_REC_RANGE_POP : ACT_REC_RANGE_PUSH, i % 2 ? 0 : 1,
              3000000 + i * 100 + i % 3);
    assert_int_equal(sb_write(&s, path), 0);
    sb_free(&s);
}

/* The export as it was before the summary streamed: the whole timeline
 * built, the trace written from it, then the summary of it. */
static char *summary_whole(const char *spool, const char *out, int by_range, size_t *n_ev)
{
    char err[512];
    act_spool sp;
    act_spool *ptr = &sp;
    assert_int_equal(act_spool_open(&sp, spool, err, sizeof(err)), 0);
    act_timeline tl;
    act_tl_build *bs = NULL;
    act_build_opts bo = {0, 0};
    assert_int_equal(act_timeline_build_start(&tl, &ptr, 1, &bo, &bs), 0);
    assert_int_equal(act_timeline_build_events(bs), 0);
    *n_ev = tl.n_ev;
    act_chrome_stats stats = {0};
    act_chrome_opts co = {NULL, NULL, 0, NULL, -1, &stats, 0};
    act_chrome_stream *cs;
    assert_int_equal(act_chrome_stream_open(&cs, &tl, &co, out, 1, 0, err, sizeof(err)), 0);
    assert_int_equal(act_chrome_stream_write(cs, &tl), 0);
    assert_int_equal(act_chrome_stream_close(cs, 1, err, sizeof(err)), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(act_summary_from_timeline(&tl, stats.invalid_utf8, stats.errors, f, by_range),
                     0);
    fclose(f);
    act_timeline_build_finish(bs);
    act_timeline_free(&tl);
    act_spool_close(&sp);
    return text;
}

static char *summary_export(const char *dir, const char *out, int by_range)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    act_export_opts eo = {.spool_dir = dir,
                          .out_path = out,
                          .force = 1,
                          .summary = f,
                          .summary_by_range = by_range,
                          .child_status = -1};
    assert_int_equal(act_trace_export(&eo), 0);
    fclose(f);
    return text;
}

static int same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = tu_slurp(a, &na), *y = tu_slurp(b, &nb);
    int same = na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

static void test_streamed_summary_matches(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_ss_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char spool[128], out[2][128];
    snprintf(spool, sizeof(spool), "%s/960.acts", dir);
    snprintf(out[0], sizeof(out[0]), "%s/whole.json", dir);
    snprintf(out[1], sizeof(out[1]), "%s/stream.json", dir);
    build_spool(spool);
    for (int by_range = 0; by_range < 2; by_range++) {
        size_t n_ev = 0;
        char *whole = summary_whole(spool, out[0], by_range, &n_ev);
        char *streamed = summary_export(dir, out[1], by_range);
        /* the stream really had several batches to combine */
        assert_true(n_ev > 2 * ACT_TL_SINK_BATCH);
        /* the tables are there and not trivial */
        assert_non_null(strstr(whole, "Device ops: 3 names"));
        assert_non_null(strstr(whole, "saxpy"));
        /* the counters that are not 0 are listed, the others are not */
        assert_null(strstr(whole, "invalid UTF-8 sequences replaced   0\n"));
        assert_null(strstr(whole, "dropped records"));
        assert_null(strstr(whole, "errors                             0\n"));
        if (by_range) {
            assert_non_null(strstr(whole, "Device time by launching range: 3 names"));
            assert_non_null(strstr(whole, "(no range)"));
        } else {
            assert_null(strstr(whole, "Device time by launching range"));
        }
        if (strcmp(whole, streamed)) /* show both when they differ */
            fprintf(stderr, "whole:\n%s\nstreamed:\n%s\n", whole, streamed);
        assert_string_equal(whole, streamed);
        /* and taking the batches for the summary leaves the trace as the
         * whole-timeline writer writes it */
        assert_true(same_file(out[0], out[1]));
        free(whole);
        free(streamed);
    }
    unlink(spool);
    unlink(out[0]);
    unlink(out[1]);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_streamed_summary_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
