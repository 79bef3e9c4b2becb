/*
 * test_spool_reader.c -- the spool reader against files it must survive:
 * empty, too small, wrong magic/version/geometry, truncated, chunks with
 * impossible fill counts, records with impossible sizes, kinds or string
 * ids, records outside any segment, and thousands of randomly corrupted
 * copies of a valid spool (run under ASan by ./build.sh test). It must
 * report a clear error or a list of problems, and never crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "timeline_util.h"

static void valid_spool(sb *s)
{
    sb_init(s, 700, 1024, 3);
    sb_use_chunk(s, 0);
    sb_segment(s, 1);
    sb_thread(s, 1, 700, 0);
    sb_str(s, 1, "range");
    sb_str(s, 2, "api");
    sb_ts(s, ACT_REC_RANGE_PUSH, 1, 2000000);
    sb_api(s, 2, 2000100, 2000200, 1, (1ull << 32) | 1, ACT_SOURCE_OPENCL);
    sb_ts(s, ACT_REC_RANGE_POP, 0, 2000300);
    sb_use_chunk(s, 1);
    sb_segment(s, 2);
    sb_thread(s, 2, 701, 0);
    sb_str(s, 1, "kernel");
    sb_str(s, 2, "OpenCL");
    sb_device(s, 1, 9, 2, ACT_SOURCE_OPENCL, 0);
    sb_op(s, 1, ACT_OP_KERNEL, 9, 3, 2000250, 2000400, 1, ACT_SOURCE_OPENCL);
    act_rec_metadata *m = sb_rec(s, ACT_REC_METADATA, 1, sizeof(*m));
    m->value = 2;
}

/* Write raw bytes as a spool and open it. */
static int open_bytes(const void *p, size_t n, act_spool *sp, char *err, size_t errlen)
{
    char dir[] = "/tmp/act_rd_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof(path), "%s/1.acts", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n)
        assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
    int rc = act_spool_open(sp, path, err, errlen);
    unlink(path);
    rmdir(dir);
    return rc;
}

static int has_problem(const act_spool *sp, const char *needle)
{
    for (size_t i = 0; i < sp->n_errors; i++)
        if (strstr(sp->errors[i], needle))
            return 1;
    return 0;
}

static void test_valid(void **state)
{
    (void)state;
    sb s;
    valid_spool(&s);
    act_spool sp;
    char err[256] = "";
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_int_equal(sp.n_errors, 0);
    assert_int_equal(sp.hdr.pid, 700);
    assert_int_equal(sp.argc, 2);
    assert_string_equal(sp.argv[1], "arg1");
    assert_int_equal(sp.records[ACT_REC_API], 1);
    assert_int_equal(sp.records[ACT_REC_DEVICE_OP], 1);
    assert_int_equal(sp.records[ACT_REC_SEGMENT], 2);
    assert_int_equal(sp.n_threads, 2);
    assert_int_equal(act_spool_thread(&sp, 2)->tid, 701);
    act_spool_close(&sp);
    sb_free(&s);
}

static void test_empty_small_and_bad_headers(void **state)
{
    (void)state;
    act_spool sp;
    char err[256];
    assert_int_equal(open_bytes("", 0, &sp, err, sizeof(err)), ACT_E_FORMAT);
    assert_non_null(strstr(err, "too small"));
    act_spool_close(&sp);
    char junk[100] = "not a spool";
    assert_int_equal(open_bytes(junk, sizeof(junk), &sp, err, sizeof(err)), ACT_E_FORMAT);
    act_spool_close(&sp);

    sb s;
    valid_spool(&s);
    sb_hdr(&s)->magic ^= 1;
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), ACT_E_FORMAT);
    assert_non_null(strstr(err, "magic"));
    act_spool_close(&sp);
    sb_hdr(&s)->magic ^= 1;

    sb_hdr(&s)->version = 99;
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), ACT_E_FORMAT);
    assert_non_null(strstr(err, "version 99"));
    act_spool_close(&sp);
    sb_hdr(&s)->version = ACT_SPOOL_VERSION;

    uint32_t cs = sb_hdr(&s)->chunk_size;
    sb_hdr(&s)->chunk_size = 12;
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), ACT_E_FORMAT);
    assert_non_null(strstr(err, "chunk size"));
    act_spool_close(&sp);
    sb_hdr(&s)->chunk_size = cs;

    sb_hdr(&s)->header_size = 0xfffffff0u;
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), ACT_E_FORMAT);
    act_spool_close(&sp);
    sb_hdr(&s)->header_size = ACT_SPOOL_HEADER_SIZE;

    sb_hdr(&s)->clock_kind = ACT_CLOCK_TSC; /* no calibration pairs */
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), ACT_E_FORMAT);
    assert_non_null(strstr(err, "calibration"));
    act_spool_close(&sp);
    sb_free(&s);

    /* Missing file: an I/O error naming the path. */
    assert_int_equal(act_spool_open(&sp, "/nonexistent/9.acts", err, sizeof(err)), ACT_E_IO);
    assert_non_null(strstr(err, "/nonexistent/9.acts"));
    act_spool_close(&sp);
}

static void test_truncated_file(void **state)
{
    (void)state;
    sb s;
    valid_spool(&s);
    act_spool sp;
    char err[256];
    /* Cut in the middle of chunk 1: chunk 0 is still read. */
    size_t cut = ACT_SPOOL_HEADER_SIZE + 1024 + 100;
    assert_int_equal(open_bytes(s.buf, cut, &sp, err, sizeof(err)), 0);
    assert_true(has_problem(&sp, "truncated"));
    assert_int_equal(sp.records[ACT_REC_API], 1);
    assert_int_equal(sp.records[ACT_REC_DEVICE_OP], 0);
    act_spool_close(&sp);
    sb_free(&s);
}

static void test_hostile_chunks_and_records(void **state)
{
    (void)state;
    act_spool sp;
    char err[256];
    sb s;

    valid_spool(&s);
    sb_chunk_hdr(&s, 1)->used = 5000; /* more than the chunk holds */
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_true(has_problem(&sp, "fill count"));
    assert_int_equal(sp.records[ACT_REC_DEVICE_OP], 0);
    act_spool_close(&sp);
    sb_free(&s);

    valid_spool(&s);
    sb_chunk_hdr(&s, 1)->index = 7;
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_true(has_problem(&sp, "index 7"));
    act_spool_close(&sp);
    sb_free(&s);

    valid_spool(&s);
    /* A record of size 0 in chunk 0 after the segment + thread records. */
    act_rec_hdr *h = (act_rec_hdr *)((unsigned char *)(sb_chunk_hdr(&s, 0) + 1) +
                                     sizeof(act_rec_segment) + sizeof(act_rec_thread));
    h->size8 = 0;
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_true(has_problem(&sp, "invalid record size"));
    act_spool_close(&sp);
    h->size8 = 0xffff; /* runs past the published fill */
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_true(has_problem(&sp, "invalid record size"));
    act_spool_close(&sp);
    /* A STRING whose length runs past its record. */
    h->size8 = 3;
    ((act_rec_string *)h)->len = 1000;
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_true(has_problem(&sp, "STRING"));
    /* ... and the records naming string 1 get a placeholder, counted. */
    assert_true(has_problem(&sp, "string id 1"));
    act_spool_close(&sp);
    /* Unknown kind. */
    ((act_rec_string *)h)->len = 5;
    h->kind = 77;
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_true(has_problem(&sp, "unknown record kind 77"));
    act_spool_close(&sp);
    /* An API record too short for its structure. */
    h->kind = ACT_REC_API;
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_true(has_problem(&sp, "needs"));
    act_spool_close(&sp);
    sb_free(&s);

    /* Records before any SEGMENT. */
    sb_init(&s, 1, 1024, 1);
    sb_use_chunk(&s, 0);
    sb_ts(&s, ACT_REC_MARK, 0, 5);
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_true(has_problem(&sp, "before any SEGMENT"));
    act_spool_close(&sp);
    sb_free(&s);

    /* An unterminated command line stays inside its field. */
    valid_spool(&s);
    memset(sb_hdr(&s)->cmdline, 'x', ACT_SPOOL_CMDLINE_MAX);
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_int_equal(sp.argc, 1);
    assert_int_equal(strlen(sp.argv[0]), ACT_SPOOL_CMDLINE_MAX);
    act_spool_close(&sp);
    sb_free(&s);
}

/* TSC spools: every timestamp maps through the calibration pairs. */
static void test_tsc_conversion(void **state)
{
    (void)state;
    sb s;
    valid_spool(&s);
    act_spool_header *h = sb_hdr(&s);
    h->clock_kind = ACT_CLOCK_TSC;
    h->calib_ts[0] = 1000;
    h->calib_ts[1] = 3000;
    h->calib_ns[0] = 1000000;
    h->calib_ns[1] = 2000000; /* 500 ns per tick */
    act_spool sp;
    char err[256];
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_int_equal(act_spool_ns(&sp, 1000), 1000000);
    assert_int_equal(act_spool_ns(&sp, 3000), 2000000);
    assert_int_equal(act_spool_ns(&sp, 5000), 3000000);          /* extrapolated */
    assert_int_equal(act_spool_ns(&sp, 0), 0);                   /* unknown stays unknown */
    assert_int_equal(act_spool_ns(&sp, 2001000), 1001000000ull); /* 2e6 ticks on */
    assert_int_equal(act_spool_ns(&sp, 600), 800000);            /* before the origin */
    assert_int_equal(act_spool_ns(&sp, 1), 1000000 - 999 * 500);
    act_spool_close(&sp);
    sb_free(&s);
}

/* Hostile calibration and timestamps (found by fuzz_spool): a rate near
 * 2^64 ns per tick times a timestamp near 2^64 saturates; it used to
 * overflow a signed 128-bit product (undefined behaviour). */
static void test_tsc_conversion_extremes(void **state)
{
    (void)state;
    sb s;
    valid_spool(&s);
    act_spool_header *h = sb_hdr(&s);
    h->clock_kind = ACT_CLOCK_TSC;
    h->calib_ts[0] = 1;
    h->calib_ts[1] = 2;
    h->calib_ns[0] = 1;
    h->calib_ns[1] = UINT64_MAX - 0xffffff;
    act_spool sp;
    char err[256];
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_int_equal(act_spool_ns(&sp, UINT64_MAX - 31), UINT64_MAX);
    assert_int_equal(act_spool_ns(&sp, 2), UINT64_MAX - 0xffffff);
    act_spool_close(&sp);
    h->calib_ts[0] = UINT64_MAX - 1; /* every reading before the origin */
    h->calib_ts[1] = UINT64_MAX;
    h->calib_ns[0] = 5;
    h->calib_ns[1] = UINT64_MAX;
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_int_equal(act_spool_ns(&sp, 1), 1); /* kept "known" */
    act_spool_close(&sp);
    sb_free(&s);
}

/* Random corruption: every outcome is an error or a readable spool, and a
 * readable one always builds and writes a trace that parses. */
static void test_fuzz(void **state)
{
    (void)state;
    sb s;
    valid_spool(&s);
    unsigned char *copy = malloc(s.size);
    srand(1234);
    int opened = 0;
    for (int round = 0; round < 1500; round++) {
        memcpy(copy, s.buf, s.size);
        int flips = 1 + rand() % 8;
        for (int k = 0; k < flips; k++) {
            size_t at;
            if (rand() % 4 == 0)
                at = (size_t)rand() % sizeof(act_spool_header); /* header fields */
            else
                at = ACT_SPOOL_HEADER_SIZE + (size_t)rand() % (2 * 1024); /* chunk data */
            copy[at] = (unsigned char)rand();
        }
        size_t len = rand() % 10 == 0 ? (size_t)rand() % s.size : s.size;
        act_spool sp;
        char err[256];
        if (open_bytes(copy, len, &sp, err, sizeof(err)) == 0) {
            opened++;
            act_spool *ptr = &sp;
            act_timeline tl;
            act_build_opts o = {0, 0};
            assert_int_equal(act_timeline_build(&tl, &ptr, 1, &o), 0);
            act_chrome_opts co = {NULL, NULL, 0, NULL, -1, NULL, 0};
            size_t len;
            char *text = tu_trace_text(&tl, &co, &len);
            assert_non_null(text);
            json_error_t e;
            json_t *doc = json_loadb(text, len, JSON_ALLOW_NUL, &e);
            if (!doc)
                fprintf(stderr, "round %d: %s at %d:%d\n%.*s\n", round, e.text, e.line, e.column,
                        (int)len, text);
            assert_non_null(doc);
            json_decref(doc);
            free(text);
            act_timeline_free(&tl);
        } else {
            assert_true(strlen(err) > 0);
        }
        act_spool_close(&sp);
    }
    assert_true(opened > 100);
    free(copy);
    sb_free(&s);
}

/* The iterator hands out the records the survey counted, in segment
 * order, each string as defined at that point (an id redefined later
 * keeps its old meaning for earlier records), and its pointers stay valid
 * after the mapping's pages are dropped. */
static void test_iterator(void **state)
{
    (void)state;
    sb s;
    valid_spool(&s);
    sb_use_chunk(&s, 2);
    sb_segment(&s, 1); /* thread 1 again, after thread 2's segment */
    sb_str(&s, 1, "range2");
    sb_ts(&s, ACT_REC_RANGE_PUSH, 1, 2000500);
    sb_ts(&s, ACT_REC_RANGE_POP, 0, 2000600);
    act_spool sp;
    char err[256] = "";
    assert_int_equal(open_bytes(s.buf, s.size, &sp, err, sizeof(err)), 0);
    assert_int_equal(sp.n_errors, 0);
    static const uint16_t kinds[] = {ACT_REC_THREAD,    ACT_REC_RANGE_PUSH, ACT_REC_API,
                                     ACT_REC_RANGE_POP, ACT_REC_THREAD,     ACT_REC_DEVICE,
                                     ACT_REC_DEVICE_OP, ACT_REC_METADATA,   ACT_REC_RANGE_PUSH,
                                     ACT_REC_RANGE_POP};
    const char *push_names[2] = {"range", "range2"};
    for (int pass = 0; pass < 2; pass++) {
        act_spool_iter *it = act_spool_iter_new(&sp);
        assert_non_null(it);
        act_sp_rec rec;
        size_t n = 0, pushes = 0;
        while (act_spool_iter_next(it, &rec) == 1) {
            assert_true(n < sizeof(kinds) / sizeof(kinds[0]));
            assert_int_equal(rec.r->kind, kinds[n]);
            if (rec.r->kind == ACT_REC_RANGE_PUSH) {
                act_spool_drop_pages(&sp);
                assert_int_equal(rec.s1.n, strlen(push_names[pushes]));
                assert_memory_equal(rec.s1.p, push_names[pushes], rec.s1.n);
                pushes++;
            }
            if (rec.r->kind == ACT_REC_DEVICE_OP)
                assert_memory_equal(rec.s1.p, "kernel", 6);
            n++;
        }
        assert_int_equal(n, sizeof(kinds) / sizeof(kinds[0]));
        assert_int_equal(pushes, 2);
        assert_int_equal(act_spool_iter_next(it, &rec), 0); /* stays at the end */
        act_spool_iter_free(it);
    }
    assert_int_equal(sp.records[ACT_REC_RANGE_PUSH], 2);
    assert_int_equal(sp.records[ACT_REC_STRING], 5);
    act_spool_close(&sp);
    sb_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),          cmocka_unit_test(test_empty_small_and_bad_headers),
        cmocka_unit_test(test_truncated_file), cmocka_unit_test(test_hostile_chunks_and_records),
        cmocka_unit_test(test_tsc_conversion), cmocka_unit_test(test_tsc_conversion_extremes),
        cmocka_unit_test(test_fuzz),           cmocka_unit_test(test_iterator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
