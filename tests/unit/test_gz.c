/*
 * test_gz.c -- the gzip member compressor (writers/gz.h) with each engine:
 * what zlib inflates is exactly what went in, for empty, tiny, trace-like
 * and incompressible buffers; act_gz_bound is always enough (incompressible
 * input included, where ISA-L writes stored blocks itself, handing
 * nothing to libdeflate); a buffer that cannot
 * fit gives 0, not a short member; members of both engines concatenated
 * read as one stream; ACT_GZ_AUTO takes ISA-L at level 1 where it is
 * installed and libdeflate above level 3. ISA-L missing skips its half,
 * except under CI, where it fails (./build.sh installs it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gunzip.h"
#include "writers/gz.h"

enum { BIG = 1 << 20 };

/* Trace-like text (repetitive JSON) and incompressible bytes. */
static void fill_json(unsigned char *p, size_t n)
{
    size_t k = 0;
    for (unsigned i = 0; k < n; i++) {
        char ev[160];
        int m =
            snprintf(ev, sizeof(ev),
                     ",\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"vadd\",\"pid\":%u,\"tid\":7,"
                     "\"ts\":%u.%03u,\"dur\":%u}",
                     100 + i % 3, i * 37, i % 1000, 1 + i % 91);
        for (int j = 0; j < m && k < n; j++)
            p[k++] = (unsigned char)ev[j];
    }
}

static void fill_random(unsigned char *p, size_t n)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
}

/* Round trip one buffer through c with exactly act_gz_bound(n) of room. */
static void round_trip(act_gz *c, const unsigned char *in, size_t n)
{
    size_t cap = act_gz_bound(n);
    unsigned char *z = malloc(cap);
    assert_non_null(z);
    size_t zn = act_gz_compress(c, in, n, z, cap);
    assert_true(zn > 0 && zn <= cap);
    assert_int_equal(z[0], 0x1f);
    assert_int_equal(z[1], 0x8b);
    size_t got;
    int members;
    char *back = gunzip_mem(z, zn, &got, &members);
    assert_non_null(back);
    assert_int_equal(members, 1);
    assert_int_equal(got, n);
    if (n)
        assert_memory_equal(back, in, n);
    free(z);
    free(back);
}

static void engine_round_trips(act_gz_engine e, int level)
{
    act_gz *c = act_gz_new(level, e);
    assert_non_null(c);
    assert_int_equal(act_gz_engine_of(c), e);
    unsigned char *buf = malloc(BIG);
    assert_non_null(buf);
    round_trip(c, buf, 0);
    round_trip(c, (const unsigned char *)"{}", 2);
    fill_json(buf, BIG);
    round_trip(c, buf, BIG);
    round_trip(c, buf, 12345); /* the same compressor again, another size */
    fill_random(buf, BIG);
    round_trip(c, buf, BIG); /* incompressible: stored blocks, within the bound */
    round_trip(c, buf, 70000);
    assert_int_equal(act_gz_fallbacks(c), 0); /* ISA-L took every one */
    free(buf);
    act_gz_free(c);
}

static int isal_or_skip(void)
{
    if (act_gz_isal_available())
        return 1;
    if (getenv("CI"))
        fail_msg("libisal.so.2 not loadable: ISA-L is required under CI (./build.sh installs it)");
    print_message("ISA-L not installed: its half skipped\n");
    return 0;
}

static void test_libdeflate_round_trips(void **state)
{
    (void)state;
    engine_round_trips(ACT_GZ_LIBDEFLATE, 1);
    engine_round_trips(ACT_GZ_LIBDEFLATE, 6);
}

static void test_isal_round_trips(void **state)
{
    (void)state;
    if (!isal_or_skip())
        return;
    engine_round_trips(ACT_GZ_ISAL, 1);
    engine_round_trips(ACT_GZ_ISAL, 3);
}

/* What ACT_GZ_AUTO takes, and what cannot be had. */
static void test_engine_choice(void **state)
{
    (void)state;
    assert_null(act_gz_new(0, ACT_GZ_AUTO));
    assert_null(act_gz_new(13, ACT_GZ_AUTO));
    assert_null(act_gz_new(6, ACT_GZ_ISAL)); /* ISA-L stops at level 3 */
    act_gz *c = act_gz_new(6, ACT_GZ_AUTO);
    assert_non_null(c);
    assert_int_equal(act_gz_engine_of(c), ACT_GZ_LIBDEFLATE);
    act_gz_free(c);
    c = act_gz_new(1, ACT_GZ_AUTO);
    assert_non_null(c);
    assert_int_equal(act_gz_engine_of(c),
                     act_gz_isal_available() ? ACT_GZ_ISAL : ACT_GZ_LIBDEFLATE);
    act_gz_free(c);
    if (!isal_or_skip())
        return;
    c = act_gz_new(1, ACT_GZ_ISAL);
    assert_non_null(c);
    assert_int_equal(act_gz_engine_of(c), ACT_GZ_ISAL);
    act_gz_free(c);
}

/* Too little room: 0 from either engine, never a cut member. */
static void test_no_room(void **state)
{
    (void)state;
    unsigned char *buf = malloc(BIG), out[64];
    assert_non_null(buf);
    fill_random(buf, BIG);
    act_gz_engine engines[2] = {ACT_GZ_LIBDEFLATE, ACT_GZ_ISAL};
    for (int i = 0; i < 2; i++) {
        if (engines[i] == ACT_GZ_ISAL && !isal_or_skip())
            break;
        act_gz *c = act_gz_new(1, engines[i]);
        assert_non_null(c);
        assert_int_equal(act_gz_compress(c, buf, BIG, out, sizeof(out)), 0);
        act_gz_free(c);
    }
    free(buf);
}

/* A file whose members come from both engines inflates as one stream
 * (a trace is written by a pool of compressors, each its own). */
static void test_mixed_members(void **state)
{
    (void)state;
    if (!isal_or_skip())
        return;
    enum { N = 300000 };
    unsigned char *in = malloc(N);
    size_t cap = 2 * act_gz_bound(N / 2);
    unsigned char *z = malloc(cap);
    assert_non_null(in);
    assert_non_null(z);
    fill_json(in, N);
    act_gz *a = act_gz_new(1, ACT_GZ_ISAL), *b = act_gz_new(1, ACT_GZ_LIBDEFLATE);
    size_t z1 = act_gz_compress(a, in, N / 2, z, cap);
    size_t z2 = act_gz_compress(b, in + N / 2, N - N / 2, z + z1, cap - z1);
    assert_true(z1 && z2);
    size_t got;
    int members;
    char *back = gunzip_mem(z, z1 + z2, &got, &members);
    assert_non_null(back);
    assert_int_equal(members, 2);
    assert_int_equal(got, N);
    assert_memory_equal(back, in, N);
    act_gz_free(a);
    act_gz_free(b);
    free(in);
    free(back);
    free(z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_libdeflate_round_trips), cmocka_unit_test(test_isal_round_trips),
        cmocka_unit_test(test_engine_choice),          cmocka_unit_test(test_no_room),
        cmocka_unit_test(test_mixed_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
