/*
 * test_annotate_concurrency.c -- annotations from many threads at once:
 * 16 threads pushing nested ranges (every thread's ranges balanced, its
 * External ids its own), ranges started on one thread and ended on
 * another, and act_start/act_stop racing with annotating threads (every
 * event either written or counted as outside, never both, never lost).
 * Runs under ThreadSanitizer in CI.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka.h needs the three above first */
#include <cmocka.h>

#include <pthread.h>

#include "acceltrace.h"
#include "annotate_collect.h"
#include "core/internal.h"
#include "tmpdir.h"

#define THREADS 16
#define ITERS   1000
#define DEPTH   4

static char dir[64];
static char spool[512];

static int setup(void **state)
{
    (void)state;
    unsetenv("ACCELTRACE_SPOOL_DIR");
    tmpdir_make(dir, sizeof(dir), "annc");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tmpdir_remove(dir);
}

static void rec_open(int api)
{
    assert_int_equal(act_capture_configure(api, "", 0, 0), ACT_OK);
    assert_int_equal(act_recorder_open(dir, 128ull << 20, 64u << 10), 0);
    snprintf(spool, sizeof(spool), "%s", act_recorder_path());
}

static _Atomic int ext_errors;

static void *nested_worker(void *arg)
{
    char name[DEPTH][32];
    for (int d = 0; d < DEPTH; d++)
        snprintf(name[d], sizeof(name[d]), "t%d-d%d", (int)(intptr_t)arg, d);
    uint64_t serial = 0;
    for (int i = 0; i < ITERS; i++) {
        for (int d = 0; d < DEPTH; d++) {
            if (act_range_push(name[d]) != ACT_OK)
                atomic_fetch_add(&ext_errors, 1);
            uint64_t ext = act_range_current_ext();
            if (!serial)
                serial = ext >> 32;
            /* n-th push of this thread, on this thread's serial */
            if (ext >> 32 != serial || (ext & 0xffffffffu) != (uint64_t)i * DEPTH + d + 1)
                atomic_fetch_add(&ext_errors, 1);
        }
        for (int d = 0; d < DEPTH; d++)
            act_range_pop();
    }
    return NULL;
}

static void test_16_threads_nested(void **state)
{
    (void)state;
    rec_open(0);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, nested_worker, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    act_recorder_close();
    assert_int_equal(atomic_load(&ext_errors), 0);
    collect *c = collect_spool(spool);
    assert_non_null(c);
    assert_int_equal(c->ws.torn, 0);
    assert_int_equal(collect_count(c, ACT_REC_RANGE_PUSH), THREADS * ITERS * DEPTH);
    assert_int_equal(collect_count(c, ACT_REC_RANGE_POP), THREADS * ITERS * DEPTH);
    /* Per thread serial: proper nesting, names from one thread only. */
    static uint32_t depth[COLLECT_MAX_THREADS];
    static int owner[COLLECT_MAX_THREADS];
    memset(depth, 0, sizeof(depth));
    for (size_t i = 0; i < COLLECT_MAX_THREADS; i++)
        owner[i] = -1;
    for (size_t i = 0; i < c->n; i++) {
        cevent *e = &c->ev[i];
        assert_true(e->serial < COLLECT_MAX_THREADS);
        if (e->kind == ACT_REC_RANGE_PUSH) {
            int t = -1, d = -1;
            assert_non_null(e->name.p);
            assert_int_equal(sscanf(e->name.p, "t%d-d%d", &t, &d), 2);
            assert_int_equal((uint32_t)d, depth[e->serial]);
            if (owner[e->serial] < 0)
                owner[e->serial] = t;
            assert_int_equal(owner[e->serial], t);
            depth[e->serial]++;
        } else if (e->kind == ACT_REC_RANGE_POP) {
            assert_true(depth[e->serial] > 0);
            depth[e->serial]--;
        }
    }
    for (size_t i = 0; i < COLLECT_MAX_THREADS; i++)
        assert_int_equal(depth[i], 0);
    collect_free(c);
}

/* Ranges started on one thread, ended on another. */
#define XRANGES 4000
static uint64_t xids[XRANGES];
static _Atomic int xready;

static void *starter(void *arg)
{
    (void)arg;
    for (int i = 0; i < XRANGES; i++) {
        xids[i] = act_range_start("cross");
        atomic_store_explicit(&xready, i + 1, memory_order_release);
    }
    return NULL;
}

static void *ender(void *arg)
{
    (void)arg;
    for (int i = 0; i < XRANGES; i++) {
        while (atomic_load_explicit(&xready, memory_order_acquire) <= i) {
        }
        act_range_end(xids[i]);
    }
    return NULL;
}

static void test_cross_thread_ranges(void **state)
{
    (void)state;
    rec_open(0);
    pthread_t a, b;
    pthread_create(&b, NULL, ender, NULL);
    pthread_create(&a, NULL, starter, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    act_recorder_close();
    collect *c = collect_spool(spool);
    assert_non_null(c);
    assert_int_equal(collect_count(c, ACT_REC_RANGE_START), XRANGES);
    assert_int_equal(collect_count(c, ACT_REC_RANGE_END), XRANGES);
    uint32_t start_serial = 0, end_serial = 0;
    static uint8_t seen[XRANGES];
    memset(seen, 0, sizeof(seen));
    for (size_t i = 0; i < c->n; i++) {
        cevent *e = &c->ev[i];
        if (e->kind == ACT_REC_RANGE_START) {
            start_serial = e->serial;
            assert_true(cstring_eq(e->name, "cross", 5));
        } else if (e->kind == ACT_REC_RANGE_END) {
            end_serial = e->serial;
            int found = 0;
            for (int k = 0; k < XRANGES && !found; k++) {
                if (xids[k] == e->id && !seen[k]) {
                    seen[k] = 1;
                    found = 1;
                }
            }
            assert_true(found);
        }
    }
    assert_true(start_serial != end_serial);
    collect_free(c);
}

/* act_start/act_stop toggled while threads annotate: each mark is either
 * written or counted outside. */

static void *marker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        act_mark("tick");
    return NULL;
}

static void test_window_races(void **state)
{
    (void)state;
    rec_open(1);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, marker, NULL);
    for (int k = 0; k < 200; k++) {
        act_start();
        act_stop();
    }
    act_start();
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    act_recorder_close();
    collect *c = collect_spool(spool);
    assert_non_null(c);
    size_t written = collect_count(c, ACT_REC_MARK);
    assert_int_equal(written + c->ws.hdr->outside_window[ACT_REC_MARK], THREADS * ITERS);
    assert_int_equal(collect_count(c, ACT_REC_CAPTURE), 401);
    collect_free(c);
    assert_int_equal(act_capture_configure(0, "", 0, 0), ACT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_16_threads_nested),
        cmocka_unit_test(test_cross_thread_ranges),
        cmocka_unit_test(test_window_races),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
