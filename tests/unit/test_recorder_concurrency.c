/*
 * test_recorder_concurrency.c -- the recorder under several threads: no
 * record lost or torn, chunks published, chunks recycled across short-lived
 * threads, overflow counted per kind. Runs under ThreadSanitizer in CI.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

/* cmocka.h needs the headers above first. */
#include <cmocka.h>

#include "acceltrace.h"
#include "core/internal.h"
#include "spool_walk.h"
#include "tmpdir.h"

#define THREADS 8
#define PAIRS   20000

static char dir[64];

static int setup(void **state)
{
    (void)state;
    tmpdir_make(dir, sizeof(dir), "rec");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tmpdir_remove(dir);
}

static void *ranges_worker(void *arg)
{
    char name[32];
    snprintf(name, sizeof(name), "worker-%d", (int)(intptr_t)arg);
    for (int i = 0; i < PAIRS; i++) {
        assert_int_equal(act_range_push(name), ACT_OK);
        if (i % 1000 == 0)
            act_counter("progress", i);
        assert_int_equal(act_range_pop(), ACT_OK);
    }
    return NULL;
}

typedef struct check {
    uint64_t depth[4096];
    uint64_t bad_nesting;
} check;

static void nest_cb(const act_rec_hdr *r, uint32_t serial, void *arg)
{
    check *c = arg;
    if (serial >= 4096)
        return;
    if (r->kind == ACT_REC_RANGE_PUSH)
        c->depth[serial]++;
    else if (r->kind == ACT_REC_RANGE_POP) {
        if (c->depth[serial] == 0)
            c->bad_nesting++;
        else
            c->depth[serial]--;
    }
}

static void test_threads_no_loss(void **state)
{
    (void)state;
    assert_int_equal(act_recorder_open(dir, 64ull << 20, 64u << 10), 0);
    char path[256];
    snprintf(path, sizeof(path), "%s", act_recorder_path());
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, ranges_worker, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    act_recorder_close();

    walk_stats ws;
    check *c = calloc(1, sizeof(*c));
    assert_int_equal(spool_walk(path, &ws, nest_cb, c), 0);
    assert_int_equal(ws.torn, 0);
    assert_int_equal(ws.by_kind[ACT_REC_RANGE_PUSH], (uint64_t)THREADS * PAIRS);
    assert_int_equal(ws.by_kind[ACT_REC_RANGE_POP], (uint64_t)THREADS * PAIRS);
    assert_int_equal(ws.by_kind[ACT_REC_COUNTER], (uint64_t)THREADS * (PAIRS / 1000));
    assert_int_equal(c->bad_nesting, 0);
    assert_true(ws.hdr->flags & ACT_SPOOL_F_SEALED);
    for (int k = 0; k < ACT_REC_KIND_MAX; k++)
        assert_int_equal(ws.hdr->dropped[k], 0);
    spool_unwalk(&ws);
    free(c);
}

static void *short_worker(void *arg)
{
    (void)arg;
    act_mark("hello");
    return NULL;
}

static void test_thread_churn_recycles_chunks(void **state)
{
    (void)state;
    /* 32 chunks, 2000 threads: only recycling makes this fit. */
    assert_int_equal(act_recorder_open(dir, 4096 + 32 * 16384, 16384), 0);
    char path[256];
    snprintf(path, sizeof(path), "%s", act_recorder_path());
    for (int i = 0; i < 2000; i++) {
        pthread_t t;
        pthread_create(&t, NULL, short_worker, NULL);
        pthread_join(t, NULL);
    }
    act_recorder_close();
    walk_stats ws;
    assert_int_equal(spool_walk(path, &ws, NULL, NULL), 0);
    assert_int_equal(ws.by_kind[ACT_REC_MARK], 2000);
    assert_int_equal(ws.by_kind[ACT_REC_THREAD], 2000);
    assert_true(ws.chunks <= 32);
    assert_int_equal(ws.hdr->dropped[ACT_REC_MARK], 0);
    spool_unwalk(&ws);
}

static void test_overflow_counted(void **state)
{
    (void)state;
    assert_int_equal(act_recorder_open(dir, 4096 + 2 * 4096, 4096), 0);
    char path[256];
    snprintf(path, sizeof(path), "%s", act_recorder_path());
    int ok = 0, full = 0;
    for (int i = 0; i < 5000; i++) {
        int rc = act_range_push("x");
        if (rc == ACT_OK)
            ok++;
        else if (rc == ACT_E_FULL)
            full++;
        act_range_pop();
    }
    act_recorder_close();
    assert_true(full > 0);
    walk_stats ws;
    assert_int_equal(spool_walk(path, &ws, NULL, NULL), 0);
    assert_int_equal(ws.by_kind[ACT_REC_RANGE_PUSH], (uint64_t)ok);
    assert_int_equal(ws.hdr->dropped[ACT_REC_RANGE_PUSH], (uint64_t)full);
    assert_int_equal(ws.by_kind[ACT_REC_RANGE_POP] + ws.hdr->dropped[ACT_REC_RANGE_POP], 5000);
    spool_unwalk(&ws);
}

/* Drop counting reads the spool header without the recorder's lock while
 * open/close replace it (a source refused a record as a session ends):
 * under ThreadSanitizer this is the check that those accesses are atomic. */
static _Atomic int drops_stop;
static _Atomic uint64_t drops_made;

static void *drop_worker(void *arg)
{
    (void)arg;
    while (!atomic_load(&drops_stop)) {
        act_rec_drop(ACT_REC_MARK);
        atomic_fetch_add(&drops_made, 1);
        (void)act_recorder_header();
    }
    return NULL;
}

static void test_drop_races_open_close(void **state)
{
    (void)state;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, drop_worker, NULL), 0);
    uint64_t counted = 0;
    for (int cycle = 0; cycle < 20; cycle++) {
        assert_int_equal(act_recorder_open(dir, 1u << 20, 4096), 0);
        char path[256];
        snprintf(path, sizeof(path), "%s", act_recorder_path());
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
        act_recorder_close();
        walk_stats ws;
        assert_int_equal(spool_walk(path, &ws, NULL, NULL), 0);
        counted += ws.hdr->dropped[ACT_REC_MARK];
        spool_unwalk(&ws);
        unlink(path);
    }
    atomic_store(&drops_stop, 1);
    pthread_join(th, NULL);
    /* Drops made while a spool was open land in it; none is invented. */
    assert_true(counted > 0);
    assert_true(counted <= atomic_load(&drops_made));
}

static void test_disabled_when_closed(void **state)
{
    (void)state;
    assert_int_equal(act_is_enabled(), 0);
    assert_int_equal(act_range_push("x"), ACT_E_DISABLED);
    assert_int_equal(act_range_pop(), ACT_E_DISABLED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disabled_when_closed),
        cmocka_unit_test(test_threads_no_loss),
        cmocka_unit_test(test_thread_churn_recycles_chunks),
        cmocka_unit_test(test_overflow_counted),
        cmocka_unit_test(test_drop_races_open_close),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
