/*
 * test_stream_layout.c -- the pieces the streamed device layout rests on
 * (src/timeline/devstream.c): act_lanes_next gives each op the sub-lane
 * act_lanes_partition gives it, however the items are split into feeds,
 * and act_u64map_del leaves every other key reachable (backward shift)
 * while the table keeps working through many inserts and deletes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "timeline/timeline.h"
#include "timeline/u64map.h"

/* xorshift: the same sequence on every run. */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_lanes_incremental(void **state)
{
    (void)state;
    enum { N = 5000 };
    static uint64_t st[N], en[N];
    static uint32_t lane[N];
    uint64_t seed = 88172645463325252ull, t = 0;
    for (int round = 0; round < 4; round++) {
        /* Sorted starts; overlap from none (round 0) to heavy (round 3). */
        for (size_t i = 0; i < N; i++) {
            t += rnd(&seed) % 100;
            st[i] = t;
            en[i] = t + (round ? rnd(&seed) % (100u << (2 * round)) : 50);
        }
        size_t used = act_lanes_partition(st, en, N, lane);
        assert_true(used > 0);
        act_lanes s = {0};
        for (size_t i = 0; i < N; i++)
            assert_int_equal(act_lanes_next(&s, st[i], en[i]), lane[i]);
        assert_int_equal(s.used, used);
        act_lanes_free(&s);
    }
}

static void test_u64map_delete(void **state)
{
    (void)state;
    enum { K = 4096 };
    static uint8_t in[K];
    act_u64map m = {0};
    uint64_t seed = 0x9e3779b97f4a7c15ull, v;
    for (int step = 0; step < 200000; step++) {
        /* Keys that collide often: a small range, every slot probed. */
        uint64_t k = 1 + rnd(&seed) % K;
        if (rnd(&seed) & 1) {
            assert_int_equal(act_u64map_put(&m, k, k * 3), 0);
            in[k - 1] = 1;
        } else {
            act_u64map_del(&m, k);
            in[k - 1] = 0;
        }
        if (step % 10000 == 0) {
            size_t n = 0;
            for (uint64_t j = 1; j <= K; j++) {
                int found = act_u64map_get(&m, j, &v);
                assert_int_equal(found, in[j - 1]);
                if (found)
                    assert_int_equal(v, j * 3);
                n += in[j - 1];
            }
            assert_int_equal(m.n, n);
        }
    }
    size_t cap = m.cap;
    act_u64map_del(&m, 0); /* nothing */
    for (uint64_t j = 1; j <= K; j++)
        act_u64map_del(&m, j);
    assert_int_equal(m.n, 0);
    assert_int_equal(m.cap, cap);
    assert_false(act_u64map_get(&m, 1, &v));
    act_u64map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lanes_incremental),
        cmocka_unit_test(test_u64map_delete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
