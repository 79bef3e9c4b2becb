/*
 * test_summary_window.c -- the summary's reorder window
 * (writers/summary_window.h): slices that come in a few sorted runs (the
 * builder's batches) take the fast path, joining a run and never the
 * heap; slices in any order (ties in start and duration included) fill
 * the heap too; either way they leave in exactly the order a plain
 * priority queue releases them, holding at most `window` slots.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "writers/summary_window.h"

/* The reference: the earliest of what is held, by a scan. */
typedef struct ref_q {
    act_sum_pend *v;
    size_t n;
} ref_q;

static act_sum_pend ref_pop(ref_q *q)
{
    size_t best = 0;
    for (size_t i = 1; i < q->n; i++)
        if (act_sum_pend_before(&q->v[i], &q->v[best]))
            best = i;
    act_sum_pend out = q->v[best];
    q->v[best] = q->v[--q->n];
    return out;
}

static void expect_same(const act_sum_pend *a, const act_sum_pend *b)
{
    assert_true(a->ts == b->ts);
    assert_true(a->dur == b->dur);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->name, b->name);
}

/* Feed in[0..n) through a window of `window` slices as the summary does
 * (the earliest leaves while it is full, then the new one goes in; the
 * rest leaves at the end), checking every release against the reference. */
static void run_through(act_sum_win *w, const act_sum_pend *in, size_t n, size_t window)
{
    ref_q q = {calloc(window + 1, sizeof(act_sum_pend)), 0};
    assert_non_null(q.v);
    for (size_t i = 0; i < n; i++) {
        while (w->n >= window) {
            act_sum_pend got = act_sum_win_pop(w), want = ref_pop(&q);
            expect_same(&got, &want);
        }
        assert_int_equal(act_sum_win_push(w, &in[i]), 0);
        q.v[q.n++] = in[i];
        assert_int_equal(w->n, q.n);
    }
    while (w->n) {
        act_sum_pend got = act_sum_win_pop(w), want = ref_pop(&q);
        expect_same(&got, &want);
    }
    assert_int_equal(q.n, 0);
    assert_true(w->cap <= 64 || w->cap < 2 * window); /* slots: the window's, rounded up */
    free(q.v);
}

static act_sum_pend pend(double ts, double dur, uint64_t seq)
{
    return (act_sum_pend){ts, dur, seq, 0, (uint32_t)seq, 0};
}

/* Batches of ranges, then calls, then device ops, each in start order
 * (an enclosing range: the same start as its call, longer): all runs. */
static void test_sorted_runs_skip_the_heap(void **state)
{
    (void)state;
    enum { BATCHES = 40, PER = 300 };
    act_sum_pend *in = calloc(BATCHES * PER * 3, sizeof(*in));
    assert_non_null(in);
    size_t n = 0;
    for (int b = 0; b < BATCHES; b++)
        for (int kind = 0; kind < 3; kind++)
            for (int i = 0; i < PER; i++) {
                double ts = (b * PER + i) * 10.0 + (kind == 2 ? 4 : 0);
                in[n] = pend(ts, kind == 0 ? 3 : kind == 1 ? 1 : 2, n);
                n++;
            }
    act_sum_win w;
    act_sum_win_init(&w);
    run_through(&w, in, n, 512);
    assert_int_equal(w.in_runs, n);
    assert_int_equal(w.cap_heap, 0);
    act_sum_win_free(&w);
    free(in);
}

/* Any order, with equal starts and durations (the arrival decides):
 * runs and heap both hold slices, and the order is still exact. */
static void test_any_order_exact(void **state)
{
    (void)state;
    enum { N = 20000 };
    act_sum_pend *in = calloc(N, sizeof(*in));
    assert_non_null(in);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        in[i] = pend((double)(x % 500), (double)((x >> 40) % 4), i);
    }
    size_t windows[] = {1, 3, 64, 1000, N};
    for (size_t k = 0; k < sizeof(windows) / sizeof(windows[0]); k++) {
        act_sum_win w;
        act_sum_win_init(&w);
        run_through(&w, in, N, windows[k]);
        if (windows[k] >= 64) {
            assert_true(w.in_runs > 0);
            assert_true(w.in_runs < N);
        }
        act_sum_win_free(&w);
    }
    free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sorted_runs_skip_the_heap),
        cmocka_unit_test(test_any_order_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
