/*
 * test_json_escape.c -- RFC 8259 escaping of every string the writers emit
 * (writers/json_escape.c): each control character, quote, backslash, DEL,
 * U+2028/2029, every kind of invalid UTF-8, long strings, and a round
 * trip through jansson's decoder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "writers/json_escape.h"

static char *esc(const char *s, size_t n, size_t *inv)
{
    char *r = act_json_escape_dup(s, n, inv);
    assert_non_null(r);
    return r;
}

static void expect(const char *in, size_t n, const char *want, size_t want_inv)
{
    size_t inv = 99;
    char *r = esc(in, n, &inv);
    assert_string_equal(r, want);
    assert_int_equal(inv, want_inv);
    free(r);
}

static void test_every_control_character(void **state)
{
    (void)state;
    for (unsigned c = 0; c < 0x20; c++) {
        char in[1] = {(char)c};
        char want[8];
        switch (c) {
        case '\b': strcpy(want, "\\b"); break;
        case '\t': strcpy(want, "\\t"); break;
        case '\n': strcpy(want, "\\n"); break;
        case '\f': strcpy(want, "\\f"); break;
        case '\r': strcpy(want, "\\r"); break;
        default: snprintf(want, sizeof(want), "\\u%04x", c); break;
        }
        expect(in, 1, want, 0);
    }
}

static void test_quote_backslash_del(void **state)
{
    (void)state;
    expect("a\"b\\c", 5, "a\\\"b\\\\c", 0);
    expect("\x7f", 1, "\x7f", 0);
    expect("/", 1, "/", 0); /* no needless escaping */
    expect("plain text 123", 14, "plain text 123", 0);
}

static void test_line_separators(void **state)
{
    (void)state;
    expect("a\xe2\x80\xa8"
           "b\xe2\x80\xa9",
           8, "a\\u2028b\\u2029", 0);
    /* Neighbours of U+2028 pass through unchanged. */
    expect("\xe2\x80\xa7\xe2\x80\xaa", 6, "\xe2\x80\xa7\xe2\x80\xaa", 0);
}

static void test_valid_multibyte(void **state)
{
    (void)state;
    expect("\xc3\xa9", 2, "\xc3\xa9", 0);                                 /* é */
    expect("\xe4\xbd\xa0\xe5\xa5\xbd", 6, "\xe4\xbd\xa0\xe5\xa5\xbd", 0); /* 你好 */
    expect("\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80", 0);                 /* U+1F600 */
    expect("\xf4\x8f\xbf\xbf", 4, "\xf4\x8f\xbf\xbf", 0);                 /* U+10FFFF */
    expect("\xef\xbf\xbf", 3, "\xef\xbf\xbf", 0);                         /* U+FFFF */
}

#define FFFD "\xef\xbf\xbd"

static void test_invalid_utf8(void **state)
{
    (void)state;
    expect("\x80", 1, FFFD, 1); /* lone continuation */
    expect("a\xbf"
           "b",
           3, "a" FFFD "b", 1);
    expect("\xc0\xaf", 2, FFFD FFFD, 2); /* overlong '/' (C0 never valid) */
    expect("\xc1\xbf", 2, FFFD FFFD, 2);
    expect("\xe0\x80\xaf", 3, FFFD FFFD FFFD, 3);          /* overlong 3-byte */
    expect("\xf0\x80\x80\xaf", 4, FFFD FFFD FFFD FFFD, 4); /* overlong 4-byte */
    expect("\xed\xa0\x80", 3, FFFD FFFD FFFD, 3);          /* surrogate U+D800 */
    expect("\xed\xbf\xbf", 3, FFFD FFFD FFFD, 3);          /* surrogate U+DFFF */
    expect("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD, 4); /* U+110000 */
    expect("\xf5\x80\x80\x80", 4, FFFD FFFD FFFD FFFD, 4);
    expect("\xff", 1, FFFD, 1);
    expect("\xe2\x82", 2, FFFD, 1); /* truncated at end */
    expect("\xe2\x82"
           "x",
           3, FFFD "x", 1); /* truncated mid-string */
    expect("\xf0\x9f\x98", 3, FFFD, 1);
    expect("\xc3", 1, FFFD, 1);
    expect("\xc3\xc3\xa9", 3, FFFD "\xc3\xa9", 1);
}

static void test_embedded_nul(void **state)
{
    (void)state;
    expect("a\0b", 3, "a\\u0000b", 0);
}

static void test_long_string(void **state)
{
    (void)state;
    size_t n = 64 * 1024;
    char *in = malloc(n);
    for (size_t i = 0; i < n; i++)
        in[i] = (char)(i % 7 == 0 ? '"' : 'a' + i % 26);
    size_t inv;
    char *r = esc(in, n, &inv);
    assert_int_equal(inv, 0);
    size_t quotes = (n + 6) / 7;
    assert_int_equal(strlen(r), n + quotes);
    free(r);
    free(in);
}

/* Wrap the escaped text in quotes, decode with jansson, compare. */
static void roundtrip(const char *in, size_t n, const char *want, size_t wn)
{
    act_obuf b;
    assert_int_equal(act_obuf_init(&b, -1, 16), 0);
    act_json_string(&b, in, n);
    json_error_t e;
    json_t *v = json_loadb(b.buf, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    assert_non_null(v);
    assert_true(json_is_string(v));
    assert_int_equal(json_string_length(v), wn);
    assert_memory_equal(json_string_value(v), want, wn);
    json_decref(v);
    act_obuf_free(&b);
}

static void test_roundtrip_jansson(void **state)
{
    (void)state;
    char all[256];
    for (int i = 0; i < 128; i++)
        all[i] = (char)i;
    roundtrip(all, 128, all, 128); /* every ASCII byte, controls included */
    roundtrip("\xe2\x80\xa8\xe2\x80\xa9", 6, "\xe2\x80\xa8\xe2\x80\xa9", 6);
    roundtrip("x\xed\xa0\x80y", 5, "x" FFFD FFFD FFFD "y", 11);
    /* Random bytes: always decodable, never a parse error. */
    srand(42);
    for (int round = 0; round < 500; round++) {
        unsigned char rnd[64];
        for (size_t i = 0; i < sizeof(rnd); i++)
            rnd[i] = (unsigned char)rand();
        act_obuf b;
        assert_int_equal(act_obuf_init(&b, -1, 16), 0);
        act_json_string(&b, (const char *)rnd, sizeof(rnd));
        json_error_t e;
        json_t *v = json_loadb(b.buf, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
        assert_non_null(v);
        json_decref(v);
        act_obuf_free(&b);
    }
}

static void test_numbers(void **state)
{
    (void)state;
    act_obuf b;
    assert_int_equal(act_obuf_init(&b, -1, 4), 0);
    act_obuf_us3(&b, 0);
    act_obuf_putc(&b, ' ');
    act_obuf_us3(&b, 1234567);
    act_obuf_putc(&b, ' ');
    act_obuf_us3(&b, -5);
    act_obuf_putc(&b, ' ');
    act_obuf_u64(&b, UINT64_MAX);
    act_obuf_putc(&b, ' ');
    act_obuf_i64(&b, INT64_MIN);
    act_obuf_putc(&b, ' ');
    act_obuf_hex(&b, 0x55aa);
    act_obuf_putc(&b, ' ');
    act_obuf_f64(&b, 0.1);
    act_obuf_putc(&b, ' ');
    act_obuf_f64(&b, 3.0);
    act_obuf_putc(&b, '\0');
    assert_string_equal(b.buf, "0.000 1234.567 -0.005 18446744073709551615 "
                               "-9223372036854775808 0x55aa 0.1 3");
    act_obuf_free(&b);
}

/* What act_obuf_f64 has always written: the shortest of %.15g / %.17g
 * that reads back exactly (the golden traces hold these bytes). */
static void f64_reference(char *out, size_t n, double v)
{
    if (!isfinite(v)) {
        snprintf(out, n, "null");
        return;
    }
    if (fabs(v) < 9e15 && v == (double)(int64_t)v) {
        snprintf(out, n, "%lld", (long long)(int64_t)v);
        return;
    }
    snprintf(out, n, "%.15g", v);
    if (strtod(out, NULL) != v)
        snprintf(out, n, "%.17g", v);
}

static void f64_expect(double v)
{
    char want[40];
    f64_reference(want, sizeof(want), v);
    act_obuf b;
    assert_int_equal(act_obuf_init(&b, -1, 64), 0);
    act_obuf_f64(&b, v);
    act_obuf_putc(&b, '\0');
    if (strcmp(b.buf, want))
        fail_msg("%.17g: wrote %s, want %s", v, b.buf, want);
    act_obuf_free(&b);
}

/* Microsecond timestamps from nanoseconds (queued/submitted args, issue
 * 32's export speed) take a fast path; its bytes are the reference's, for
 * those and for values near them that only look like them. */
static void test_f64_as_before(void **state)
{
    (void)state;
    static const double fixed[] = {0.001,
                                   -0.001,
                                   0.5,
                                   1.25,
                                   1234.567,
                                   -1234.567,
                                   0.0001,
                                   0.00012345,
                                   1e-5,
                                   0.1 + 0.2,
                                   999999999999.999,
                                   1e12 + 0.5,
                                   123456789012.345,
                                   4503599627370.495,
                                   1e15 + 0.5,
                                   1e300,
                                   -1e-300,
                                   5e-324,
                                   0.3333333333333333,
                                   2.5e-4,
                                   1.0005,
                                   17.1,
                                   99.995,
                                   1e11 / 3.0};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        f64_expect(fixed[i]);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t ns = x >> (i % 40 + 4);
        double us = (double)ns / 1000.0;
        f64_expect(us);
        f64_expect(-us);
        uint64_t bits;
        memcpy(&bits, &us, sizeof(bits));
        for (int d = -1; d <= 1; d += 2) { /* the neighbouring doubles */
            uint64_t nb = bits + (uint64_t)(int64_t)d;
            double near;
            memcpy(&near, &nb, sizeof(near));
            f64_expect(near);
        }
        f64_expect((double)ns / 1e6);
        double r;
        memcpy(&r, &x, sizeof(r));
        f64_expect(r);
    }
}

/* act_obuf_hex writes in place: every length, the same bytes as "0x%llx". */
static void test_hex_as_printf(void **state)
{
    (void)state;
    act_obuf b;
    assert_int_equal(act_obuf_init(&b, -1, 16), 0);
    for (int bit = -1; bit < 64; bit++) {
        uint64_t v = bit < 0 ? 0 : (uint64_t)1 << bit;
        const uint64_t vs[3] = {v, v ? v - 1 : 0, v | (v >> 1) | 0x5};
        for (int k = 0; k < 3; k++) {
            char want[24];
            snprintf(want, sizeof(want), "0x%llx", (unsigned long long)vs[k]);
            b.len = 0;
            act_obuf_hex(&b, vs[k]);
            act_obuf_putc(&b, '\0');
            assert_string_equal(b.buf, want);
        }
    }
    b.len = 0;
    act_obuf_hex(&b, UINT64_MAX);
    act_obuf_putc(&b, '\0');
    assert_string_equal(b.buf, "0xffffffffffffffff");
    act_obuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_control_character),
        cmocka_unit_test(test_quote_backslash_del),
        cmocka_unit_test(test_line_separators),
        cmocka_unit_test(test_valid_multibyte),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_embedded_nul),
        cmocka_unit_test(test_long_string),
        cmocka_unit_test(test_roundtrip_jansson),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_f64_as_before),
        cmocka_unit_test(test_hex_as_printf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
