/*
 * test_recorder_split_concurrency.c -- segment ends and splits (record.h
 * S1): a thread ends its segment every ACT_SEG_SPLIT_BYTES (starting the
 * next in the same chunk), so a live reader, which reads ended segments
 * in seq order, has each thread's records in 4 KiB steps, and a thread
 * that recorded and went idle holds back nothing but its own last
 * records. Each thread's records keep their order and count. Named
 * *concurrency*: it also runs under ThreadSanitizer.
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

/* A thread that records one mark, then waits until released. */
static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static int idle_state; /* 1: it recorded; 2: released */

static void *idle_mark(void *arg)
{
    (void)arg;
    put_mark(1);
    pthread_mutex_lock(&idle_lock);
    idle_state = 1;
    pthread_cond_broadcast(&idle_cond);
    while (idle_state != 2)
        pthread_cond_wait(&idle_cond, &idle_lock);
    pthread_mutex_unlock(&idle_lock);
    return NULL;
}

/* Thread Q (this one) records, thread M records one mark and waits, idle,
 * its segment open; Q goes on: what Q writes after M's mark must reach a
 * live reader while M waits (when a segment's seq was taken at its start,
 * M's open segment held every later one back until the exit), and M's
 * mark comes out at the end. */
static void test_idle_thread_holds_nothing_back(void **state)
{
    (void)state;
    char dir[64], err[256];
    tmpdir_make(dir, sizeof(dir), "split");
    assert_int_equal(act_recorder_open(dir, SPOOL_SIZE, CHUNK_SIZE), 0);
    put_mark(0);
    uint32_t q_serial = act_rec_tls->serial, m_serial = q_serial + 1; /* handed out in order */
    idle_state = 0;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, idle_mark, NULL), 0);
    pthread_mutex_lock(&idle_lock);
    while (idle_state != 1)
        pthread_cond_wait(&idle_cond, &idle_lock);
    pthread_mutex_unlock(&idle_lock);
    uint32_t n = 4 * ACT_SEG_SPLIT_BYTES / sizeof(act_rec_ts);
    for (uint32_t i = 0; i < n; i++)
        put_mark(i + 2);

    act_spool sp;
    assert_int_equal(act_spool_open_live(&sp, act_recorder_path(), err, sizeof(err)), 0);
    size_t q = live_read(&sp, q_serial);
    assert_true(q >= n - ACT_SEG_SPLIT_BYTES / sizeof(act_rec_ts)); /* all but the last 4 KiB */
    assert_true(q <= n + 1);
    assert_int_equal(live_read(&sp, m_serial), 0); /* M's open segment */
    pthread_mutex_lock(&idle_lock);
    idle_state = 2;
    pthread_cond_broadcast(&idle_cond);
    pthread_mutex_unlock(&idle_lock);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(live_read(&sp, m_serial), 1); /* ended with its thread */
    act_spool_live_end(&sp);
    act_spool_close(&sp);
    act_recorder_close();
    assert_int_equal(tmpdir_remove(dir), 0);
}

/* A thread alone ends a segment every ACT_SEG_SPLIT_BYTES too: a live
 * reader has all but its last few KiB; one chunk holds them all. */
static void test_alone_splits(void **state)
{
    (void)state;
    char dir[64], err[256];
    tmpdir_make(dir, sizeof(dir), "split1");
    assert_int_equal(act_recorder_open(dir, SPOOL_SIZE, CHUNK_SIZE), 0);
    uint32_t n = 4 * ACT_SEG_SPLIT_BYTES / sizeof(act_rec_ts);
    for (uint32_t i = 0; i < n; i++)
        put_mark(i);
    act_spool sp;
    assert_int_equal(act_spool_open_live(&sp, act_recorder_path(), err, sizeof(err)), 0);
    size_t got = live_read(&sp, act_rec_tls->serial);
    assert_true(got >= n - ACT_SEG_SPLIT_BYTES / sizeof(act_rec_ts) && got < n);
    act_spool_live_end(&sp);
    act_spool_close(&sp);
    walk_stats ws;
    assert_int_equal(spool_walk(act_recorder_path(), &ws, NULL, NULL), 0);
    assert_int_equal(ws.chunks, 1);
    assert_true(ws.segments >= 4);
    assert_int_equal(ws.by_kind[ACT_REC_MARK], n);
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

/* act_rec_seg_idle (a source's batch of device work delivered): the
 * thread's few records so far are a live reader's at once, not when it
 * has written 4 KiB more; a second call with nothing new ends nothing;
 * what it records next starts a segment, and every record comes out once,
 * in order. */
static void test_idle_ends_segment(void **state)
{
    (void)state;
    char dir[64], err[256];
    tmpdir_make(dir, sizeof(dir), "split2");
    assert_int_equal(act_recorder_open(dir, SPOOL_SIZE, CHUNK_SIZE), 0);
    for (uint32_t i = 0; i < 5; i++)
        put_mark(i + 1);
    act_spool sp;
    assert_int_equal(act_spool_open_live(&sp, act_recorder_path(), err, sizeof(err)), 0);
    uint32_t me = act_rec_tls->serial;
    assert_int_equal(live_read(&sp, me), 0); /* its segment may grow */
    act_rec_seg_idle();
    act_rec_seg_idle(); /* nothing since: no empty segment */
    assert_int_equal(live_read(&sp, me), 5);
    for (uint32_t i = 5; i < 8; i++)
        put_mark(i + 1);
    act_rec_seg_idle();
    assert_int_equal(live_read(&sp, me), 3);
    act_spool_live_end(&sp);
    act_spool_close(&sp);
    order o = {{0}, 0, 0};
    walk_stats ws;
    assert_int_equal(spool_walk(act_recorder_path(), &ws, check_order, &o), 0);
    assert_int_equal(o.n, 8);
    assert_int_equal(o.bad, 0);
    assert_int_equal(ws.segments, 2);
    spool_unwalk(&ws);
    act_recorder_close();
    assert_int_equal(tmpdir_remove(dir), 0);
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
        cmocka_unit_test(test_idle_thread_holds_nothing_back),
        cmocka_unit_test(test_alone_splits),
        cmocka_unit_test(test_idle_ends_segment),
        cmocka_unit_test(test_concurrent_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
