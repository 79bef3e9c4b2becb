/*
 * test_sanitize.c -- the torch_npu-exact metadata sanitiser
 * (writers/sanitize.c), checked against the behaviour recorded in
 * reference/torch_npu-behaviours.md section 3.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "writers/sanitize.h"

static void check(const char *in, size_t n, const char *want, const char *notes)
{
    act_sanitized r;
    assert_int_equal(act_sanitize_value(in, n, &r), 0);
    assert_int_equal(r.len, strlen(want));
    assert_memory_equal(r.text, want, r.len);
    char *j = act_sanitized_notes_join(&r);
    assert_string_equal(j, notes);
    free(j);
    act_sanitized_free(&r);
}

static void test_examples(void **state)
{
    (void)state;
    check("line\nbreak\tand tab", 18, "line break and tab", "1 tab, 1 newline");
    check("has \"quotes\" inside", 19, "has 'quotes' inside", "2 double quote");
    check("\x00\x1f\x7f", 3, "  \x7f", "1 control character U+0000, 1 control character U+001F");
    check("C:\\temp\\file", 12, "C:/temp/file", "2 backslash");
    check("plain value", 11, "plain value", "");
    check("\xe4\xbd\xa0\xe5\xa5\xbd", 6, "\xe4\xbd\xa0\xe5\xa5\xbd", ""); /* 你好 */
    check("\xe2\x80\xa8", 3, "\xe2\x80\xa8", "");                         /* U+2028 kept */
    check("\r\b\f", 3, "   ", "1 backspace, 1 form feed, 1 carriage return");
    /* Sorted by code point: controls, then '"' (0x22), then '\' (0x5C). */
    check("\\\"\x01", 3, "/' ", "1 control character U+0001, 1 double quote, 1 backslash");
}

static void test_sanitised_value_survives_upstream_wrapping(void **state)
{
    (void)state;
    const char *bad[] = {"a\"b", "C:\\x\\\"y", "tab\there", "\x01\x02"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        act_sanitized r;
        assert_int_equal(act_sanitize_value(bad[i], strlen(bad[i]), &r), 0);
        char wrapped[128];
        snprintf(wrapped, sizeof(wrapped), "\"%s\"", r.text);
        json_error_t e;
        json_t *v = json_loads(wrapped, JSON_DECODE_ANY, &e);
        assert_non_null(v);
        json_decref(v);
        act_sanitized_free(&r);
    }
}

static void test_json_variant(void **state)
{
    (void)state;
    act_sanitized r;
    const char *clean = "{\"run\":7,\"tags\":[\"a\",\"b\"]}";
    assert_int_equal(act_sanitize_json_value(clean, strlen(clean), &r), 0);
    assert_string_equal(r.text, "{\"run\": 7, \"tags\": [\"a\", \"b\"]}");
    assert_int_equal(r.n_notes, 0);
    act_sanitized_free(&r);

    const char *nested = "{\"ou\\\"ter\":{\"inner\":[\"a \\\"quoted\\\" item\"]}}";
    assert_int_equal(act_sanitize_json_value(nested, strlen(nested), &r), 0);
    assert_null(strchr(r.text, '\\'));
    json_error_t e;
    json_t *v = json_loads(r.text, 0, &e);
    assert_non_null(v);
    json_t *inner = json_object_get(json_object_get(v, "ou'ter"), "inner");
    assert_string_equal(json_string_value(json_array_get(inner, 0)), "a 'quoted' item");
    json_decref(v);
    char *j = act_sanitized_notes_join(&r);
    assert_string_equal(j, "1 double quote, 2 double quote"); /* key first, then value */
    free(j);
    act_sanitized_free(&r);

    const char *text = "not json at all";
    assert_int_equal(act_sanitize_json_value(text, strlen(text), &r), 0);
    assert_string_equal(r.text, text);
    act_sanitized_free(&r);

    const char *nonascii = "\"\xc3\xa9\"";
    assert_int_equal(act_sanitize_json_value(nonascii, strlen(nonascii), &r), 0);
    assert_string_equal(r.text, nonascii); /* literal, like ensure_ascii=False */
    act_sanitized_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_examples),
        cmocka_unit_test(test_sanitised_value_survives_upstream_wrapping),
        cmocka_unit_test(test_json_variant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
