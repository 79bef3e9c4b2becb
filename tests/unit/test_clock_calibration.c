/*
 * test_clock_calibration.c -- the fast clock has a rate as soon as it is
 * declared usable: annotation timestamps taken right after the recorder
 * opens must advance with time (they used to stand still for the first
 * ~1.7 ms, every range there getting the same start and zero duration).
 * Calibration is lazy (first use of the fast clock) and never blocks a
 * thread that comes while another calibrates, nor a child forked then.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include "core/internal.h"
#include "tmpdir.h"

static void test_rate_known_when_usable(void **state)
{
    (void)state;
    int usable = act_tsc_calibrate();
    if (usable != 1)
        skip(); /* no invariant TSC as clocksource: clock_gettime is used */
    assert_int_not_equal(act_tsc.mult, 0);
    /* 2 ms of readings through a fresh anchor keep up with the clock. */
    uint64_t t, n;
    act_tsc_pair(&t, &n);
    uint64_t m = act_tsc_refine(t, n);
    assert_int_not_equal(m, 0);
    uint64_t n0 = act_clock_now();
    while (act_clock_now() - n0 < 2000000)
        ;
    uint64_t t1, n1;
    act_tsc_pair(&t1, &n1);
    uint64_t mapped = n + (((t1 - t) * m) >> 32);
    int64_t err = (int64_t)(mapped - n1);
    assert_true(err < 50000 && err > -50000); /* within 50 us over 2 ms */
}

static void *calibrate_thread(void *arg)
{
    (void)arg;
    act_tsc_calibrate();
    return NULL;
}

/* The first test calibrated already; start over as a fresh process would. */
static void tsc_forget(void)
{
    atomic_store(&act_tsc.usable, ACT_TSC_UNKNOWN);
}

/* While one thread calibrates, another gets an answer at once (0: use
 * clock_gettime for now), and a child forked in the middle calibrates
 * for itself instead of waiting on a thread it does not have. */
static void test_concurrent_and_fork(void **state)
{
    (void)state;
    char dir[64];
    tmpdir_make(dir, sizeof(dir), "calib");
    tsc_forget();
    assert_int_equal(act_recorder_open(dir, 4u << 20, 65536), 0); /* registers atfork */
    /* Opening a spool does not calibrate: only the fast clock needs it. */
    assert_int_equal(atomic_load(&act_tsc.usable), ACT_TSC_UNKNOWN);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, calibrate_thread, NULL), 0);
    while (atomic_load(&act_tsc.usable) == ACT_TSC_UNKNOWN)
        ;
    int seen = atomic_load(&act_tsc.usable);
    if (seen == ACT_TSC_CALIBRATING) {
        assert_int_equal(act_tsc_calibrate(), 0); /* not held up */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            alarm(10); /* a hang fails the test instead of stalling it */
            int u = act_tsc_calibrate();
            _exit(u == 1 ? 0 : u == 0 ? 3 : 4);
        }
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        /* 3: the TSC is not usable here (the parent will say so too). */
        assert_true(WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 3);
    }
    pthread_join(th, NULL);
    assert_true(atomic_load(&act_tsc.usable) >= 0);
    act_recorder_close();
    assert_int_equal(tmpdir_remove(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_known_when_usable),
        cmocka_unit_test(test_concurrent_and_fork),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
