/*
 * test_init_concurrency.c -- many threads hit start-up at once (run under
 * ThreadSanitizer in CI): the stages run once, every caller sees the same
 * result, the hooks are applied exactly once.
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "init/hooks.h"
#include "init/init.h"
#include "internal.h"

#define THREADS 8

static _Atomic int hook_runs, go;
static int results[THREADS];

static int counted_hook(void)
{
    atomic_fetch_add(&hook_runs, 1);
    return 0;
}
ACT_HOOK("t.conc", counted_hook, counted_hook);

static void *starter(void *arg)
{
    int i = (int)(intptr_t)arg;
    while (!atomic_load(&go)) {
    }
    results[i] = act_init();
    act_range_push("t");
    act_range_pop();
    return NULL;
}

static void test_concurrent_start(void **state)
{
    (void)state;
    char dir[] = "/tmp/act-init-conc-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("ACCELTRACE_SPOOL_DIR", dir, 1);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, starter, (void *)(intptr_t)i), 0);
    atomic_store(&go, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(results[i], 0);
    assert_int_equal(atomic_load(&hook_runs), 1);
    assert_int_equal(act_init_state(NULL), ACT_INIT_OK);
    act_lifecycle_stop();
    assert_null(act_recorder_header());
    DIR *d = opendir(dir);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
        files++;
    }
    closedir(d);
    rmdir(dir);
    assert_int_equal(files, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
