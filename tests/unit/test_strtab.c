/*
 * test_strtab.c -- the table of distinct strings (src/timeline/strtab.h):
 * numbers from 1 in the order first seen, each string found again by its
 * bytes (embedded NULs and the empty string too), an absent one is 0, and
 * strings whose hashes clash (forced: another string put at the key of
 * one's hash) keep apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first. */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeline/strtab.h"

static void test_numbers_in_order_and_found_again(void **state)
{
    (void)state;
    act_strtab t = {0};
    enum { N = 50000 };
    char(*b)[16] = calloc(N, sizeof(*b));
    assert_non_null(b);
    for (int i = 0; i < N; i++) {
        int n = snprintf(b[i], sizeof(b[i]), "s%d", i);
        assert_int_equal(act_strtab_find(&t, b[i], (size_t)n), 0);
        assert_int_equal(act_strtab_add(&t, (act_str){b[i], (uint32_t)n}), i + 1);
    }
    for (int i = 0; i < N; i++) {
        uint64_t id = act_strtab_find(&t, b[i], strlen(b[i]));
        assert_int_equal(id, i + 1);
        assert_ptr_equal(act_strtab_get(&t, id).p, b[i]);
    }
    assert_int_equal(act_strtab_find(&t, "s", 1), 0);
    assert_int_equal(act_strtab_find(&t, "s1\0", 3), 0); /* the bytes, not a C string */
    act_strtab_free(&t);
    free(b);
}

static void test_empty_and_nul_bytes(void **state)
{
    (void)state;
    act_strtab t = {0};
    assert_int_equal(act_strtab_add(&t, (act_str){"", 0}), 1);
    assert_int_equal(act_strtab_add(&t, (act_str){"a\0b", 3}), 2);
    assert_int_equal(act_strtab_add(&t, (act_str){"a\0c", 3}), 3);
    assert_int_equal(act_strtab_find(&t, "", 0), 1);
    assert_int_equal(act_strtab_find(&t, "a\0c", 3), 3);
    assert_int_equal(act_strtab_find(&t, "a", 1), 0);
    act_strtab_free(&t);
    assert_int_equal(t.n, 0);
}

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* A clash: "y" is put by hand at the key "x" hashes to, as if their hashes
 * were equal; "x" then takes the next key and both are found. */
static void test_clash_probes_on(void **state)
{
    (void)state;
    act_strtab t = {0};
    assert_int_equal(act_strtab_add(&t, (act_str){"y", 1}), 1);
    assert_int_equal(act_u64map_put(&t.ids, fnv1a("x", 1), 1), 0); /* "y" at x's key */
    assert_int_equal(act_strtab_find(&t, "x", 1), 0);
    assert_int_equal(act_strtab_add(&t, (act_str){"x", 1}), 2);
    uint64_t v;
    assert_true(act_u64map_get(&t.ids, fnv1a("x", 1) + 1, &v));
    assert_int_equal(v, 2);
    assert_int_equal(act_strtab_find(&t, "x", 1), 2);
    assert_int_equal(act_strtab_find(&t, "y", 1), 1);
    assert_int_equal(act_strtab_find(&t, "z", 1), 0);
    act_strtab_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbers_in_order_and_found_again),
        cmocka_unit_test(test_empty_and_nul_bytes),
        cmocka_unit_test(test_clash_probes_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
