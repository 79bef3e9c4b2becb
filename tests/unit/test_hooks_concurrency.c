/*
 * test_hooks_concurrency.c -- hook registration and apply from several
 * threads at once (run under ThreadSanitizer in CI): every hook runs
 * exactly once, whatever the interleaving.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "init/hooks.h"

#define THREADS 4
#define HOOKS   200

static _Atomic int runs;
static char names[THREADS][HOOKS][16];

static int count(void)
{
    atomic_fetch_add(&runs, 1);
    return 0;
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    static const char *groups[] = {"c.a", "c.b", "c.c"};
    for (int k = 0; k < HOOKS; k++) {
        snprintf(names[t][k], sizeof(names[t][k]), "h%d_%d", t, k);
        act_hook h = {groups[k % 3], names[t][k], count};
        if (act_hooks_register(&h) != 0)
            return (void *)1;
        if (k % 7 == 0)
            act_hooks_apply_all();
        if (k % 11 == 0)
            act_hooks_apply(groups[(k + t) % 3]);
    }
    return NULL;
}

static void test_concurrent_register_and_apply(void **state)
{
    (void)state;
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t), 0);
    for (int t = 0; t < THREADS; t++) {
        void *rc;
        pthread_join(th[t], &rc);
        assert_null(rc);
    }
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(atomic_load(&runs), THREADS * HOOKS);
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(atomic_load(&runs), THREADS * HOOKS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_register_and_apply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
