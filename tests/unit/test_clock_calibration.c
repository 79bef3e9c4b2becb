/*
 * test_clock_calibration.c -- the fast clock has a rate as soon as it is
 * declared usable: annotation timestamps taken right after the recorder
 * opens must advance with time (they used to stand still for the first
 * ~1.7 ms, every range there getting the same start and zero duration).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include "core/internal.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_known_when_usable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
