/*
 * test_recorder_split_concurrency.c -- segment splitting (record.h S1): a
 * thread whose segment is open while other threads start segments closes
 * it and starts a new one in the same chunk every ACT_SEG_SPLIT_BYTES, so
 * a live reader (which hands segments out in sequence order and waits on
 * one that may grow) is held back by a slow thread only for about its last
 * few KiB of records. Without another thread's segment nothing is split;
 * each thread's records keep their order and count. Named *concurrency*:
 * it also runs under ThreadSanitizer.
 */
/* cmocka.h needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "acceltrace.h"
#include "core/internal.h"
#include "core/recorder/recorder_int.h"
#include "spool_walk.h"
#include "timeline/spool.h"
#include "tmpdir.h"

#define SPOOL_SIZE (16u << 20)
#define CHUNK_SIZE (128u << 10)

/* One MARK record whose ts carries `v` (no clock needed). */
static void put_mark(uint64_t v)
{
    act_rec_ts *r = act_rec_reserve(ACT_REC_MARK, sizeof(*r));
    assert_non_null(r);
    r->ts = v;
    act_rec_commit();
}

static void *one_mark(void *arg)
{
    (void)arg;
    put_mark(1);
    return NULL;
}

/* Scans until nothing new comes out; the records of thread `serial` read. */
static size_t live_read(act_spool *sp, uint32_t serial)
{
    size_t n = 0;
    act_sp_rec r;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(act_spool_live_scan(sp, 0), 0);
        while (act_spool_live_next(sp, &r, 0) > 0)
            n += r.r->kind == ACT_REC_MARK && r.serial == serial;
    }
    return n;
}

/* Thread Q (this one) begins a segment, thread M begins a later one, Q
 * keeps writing in its chunk: M's record must reach a live reader once Q
 * has written ACT_SEG_SPLIT_BYTES more, not only when Q's chunk fills. */
static void test_slow_thread_does_not_hold_back(void **state)
{
    (void)state;
    char dir[64], err[256];
    tmpdir_make(dir, sizeof(dir), "split");
    assert_int_equal(act_recorder_open(dir, SPOOL_SIZE, CHUNK_SIZE), 0);
    put_mark(0);
    uint32_t m_serial = act_rec_tls->serial + 1; /* serials are handed out in order */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, one_mark, NULL), 0);
    assert_int_equal(pthread_join(th, NULL), 0);

    act_spool sp;
    assert_int_equal(act_spool_open_live(&sp, act_recorder_path(), err, sizeof(err)), 0);
    assert_int_equal(live_read(&sp, m_serial), 0); /* Q's segment may grow: M waits */
    for (uint32_t i = 0; i < 2 * ACT_SEG_SPLIT_BYTES / sizeof(act_rec_ts); i++)
        put_mark(i + 2);
    assert_int_equal(live_read(&sp, m_serial), 1);
    act_spool_live_end(&sp);
    act_spool_close(&sp);

    walk_stats ws;
    assert_int_equal(spool_walk(act_recorder_path(), &ws, NULL, NULL), 0);
    assert_int_equal(ws.chunks, 2);
    assert_true(ws.segments >= 3); /* Q's chunk holds two segments of Q */
    spool_unwalk(&ws);
    act_recorder_close();
    assert_int_equal(tmpdir_remove(dir), 0);
}

/* A thread alone never splits: one segment, however much it writes. */
static void test_alone_no_split(void **state)
{
    (void)state;
    char dir[64];
    tmpdir_make(dir, sizeof(dir), "split1");
    assert_int_equal(act_recorder_open(dir, SPOOL_SIZE, CHUNK_SIZE), 0);
    for (uint32_t i = 0; i < 4 * ACT_SEG_SPLIT_BYTES / sizeof(act_rec_ts); i++)
        put_mark(i);
    walk_stats ws;
    assert_int_equal(spool_walk(act_recorder_path(), &ws, NULL, NULL), 0);
    assert_int_equal(ws.segments, 1);
    assert_int_equal(ws.by_kind[ACT_REC_MARK], 4 * ACT_SEG_SPLIT_BYTES / sizeof(act_rec_ts));
    spool_unwalk(&ws);
    act_recorder_close();
    assert_int_equal(tmpdir_remove(dir), 0);
}

/* Threads writing at once: every record once, in its thread's order. */
#define WRITERS 3
#define PER     30000u
static void *writer(void *arg)
{
    (void)arg;
    for (uint64_t i = 1; i <= PER; i++)
        put_mark(i);
    return NULL;
}

typedef struct order {
    uint64_t last[64];
    uint64_t n, bad;
} order;

static void check_order(const act_rec_hdr *r, uint32_t serial, void *arg)
{
    order *o = arg;
    if (r->kind != ACT_REC_MARK || serial >= 64)
        return;
    uint64_t v = ((const act_rec_ts *)r)->ts;
    o->bad += v != o->last[serial] + 1;
    o->last[serial] = v;
    o->n++;
}

static void test_concurrent_order(void **state)
{
    (void)state;
    char dir[64];
    tmpdir_make(dir, sizeof(dir), "split3");
    assert_int_equal(act_recorder_open(dir, SPOOL_SIZE, CHUNK_SIZE), 0);
    pthread_t th[WRITERS];
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, writer, NULL), 0);
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    order o = {{0}, 0, 0};
    walk_stats ws;
    assert_int_equal(spool_walk(act_recorder_path(), &ws, check_order, &o), 0);
    assert_int_equal(ws.torn, 0);
    assert_int_equal(o.n, (uint64_t)WRITERS * PER);
    assert_int_equal(o.bad, 0);
    assert_int_equal(act_recorder_header()->dropped[ACT_REC_MARK], 0);
    spool_unwalk(&ws);
    act_recorder_close();
    assert_int_equal(tmpdir_remove(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_thread_does_not_hold_back),
        cmocka_unit_test(test_alone_no_split),
        cmocka_unit_test(test_concurrent_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
