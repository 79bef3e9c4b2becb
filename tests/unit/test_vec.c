/*
 * test_vec.c -- the growing-array helper (src/core/vec.h): capacity
 * doubles from `first`, contents survive growth, an impossible size fails
 * with ACT_E_NOMEM and leaves the array and its capacity as they were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first. */
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>

#include "acceltrace.h"
#include "core/vec.h"

static void test_doubles_and_keeps_contents(void **state)
{
    (void)state;
    uint64_t *v = NULL;
    size_t cap = 0;
    assert_int_equal(act_vec_reserve(v, cap, 1, 4), 0);
    assert_int_equal(cap, 4);
    for (size_t i = 0; i < 100; i++) {
        assert_int_equal(act_vec_reserve(v, cap, i + 1, 4), 0);
        v[i] = i * 3;
    }
    assert_int_equal(cap, 128);
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(v[i], i * 3);
    /* Enough room: nothing moves. */
    uint64_t *before = v;
    assert_int_equal(act_vec_reserve(v, cap, 128, 4), 0);
    assert_ptr_equal(v, before);
    assert_int_equal(cap, 128);
    /* Far more at once: doubles until it fits. */
    assert_int_equal(act_vec_reserve(v, cap, 1000, 4), 0);
    assert_int_equal(cap, 1024);
    free(v);
}

static void test_impossible_size_fails_cleanly(void **state)
{
    (void)state;
    uint64_t *v = NULL;
    size_t cap = 0;
    assert_int_equal(act_vec_reserve(v, cap, 10, 16), 0);
    v[9] = 42;
    uint64_t *before = v;
    assert_int_equal(act_vec_reserve(v, cap, SIZE_MAX / 4, 16), ACT_E_NOMEM);
    assert_ptr_equal(v, before);
    assert_int_equal(cap, 16);
    assert_int_equal(v[9], 42);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doubles_and_keeps_contents),
        cmocka_unit_test(test_impossible_size_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
