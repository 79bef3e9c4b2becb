/*
 * obuf.c -- buffered output and hand-rolled number formatting for the
 * writers (see obuf.h).
 */
#include "obuf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "acceltrace.h"

int act_obuf_init(act_obuf *b, int fd, size_t cap)
{
    memset(b, 0, sizeof(*b));
    b->fd = fd;
    b->cap = cap ? cap : 4096;
    b->buf = malloc(b->cap);
    if (!b->buf) {
        b->cap = 0;
        b->err = ACT_E_NOMEM;
        return b->err;
    }
    return 0;
}

int act_obuf_flush(act_obuf *b)
{
    if (b->fd < 0 || b->err)
        return b->err;
    size_t off = 0;
    while (off < b->len) {
        ssize_t w = write(b->fd, b->buf + off, b->len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            b->err = ACT_E_IO;
            return b->err;
        }
        off += (size_t)w;
    }
    b->written += b->len;
    b->len = 0;
    return 0;
}

int act_obuf_reserve_slow(act_obuf *b, size_t n)
{
    if (b->err)
        return b->err;
    if (b->fd >= 0) {
        if (act_obuf_flush(b))
            return b->err;
        if (b->cap - b->len >= n)
            return 0;
    }
    size_t ncap = b->cap ? b->cap : 4096;
    while (ncap - b->len < n) {
        if (ncap > SIZE_MAX / 2) {
            b->err = ACT_E_NOMEM;
            return b->err;
        }
        ncap *= 2;
    }
    char *nb = realloc(b->buf, ncap);
    if (!nb) {
        b->err = ACT_E_NOMEM;
        return b->err;
    }
    b->buf = nb;
    b->cap = ncap;
    return 0;
}

void act_obuf_free(act_obuf *b)
{
    free(b->buf);
    b->buf = NULL;
    b->len = b->cap = 0;
}

static const char digits2[201] = "00010203040506070809101112131415161718192021222324252627282930"
                                 "31323334353637383940414243444546474849505152535455565758596061"
                                 "62636465666768697071727374757677787980818283848586878889909192"
                                 "93949596979899";

/* Digits are produced backwards, two at a time, into a small stack buffer. */
static size_t u64_digits(char tmp[20], uint64_t v)
{
    int i = 20;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        tmp[--i] = digits2[d + 1];
        tmp[--i] = digits2[d];
    }
    if (v >= 10) {
        unsigned d = (unsigned)v * 2;
        tmp[--i] = digits2[d + 1];
        tmp[--i] = digits2[d];
    } else {
        tmp[--i] = (char)('0' + v);
    }
    return (size_t)i;
}

void act_obuf_u64(act_obuf *b, uint64_t v)
{
    char tmp[20];
    size_t i = u64_digits(tmp, v);
    act_obuf_put(b, tmp + i, 20 - i);
}

void act_obuf_i64(act_obuf *b, int64_t v)
{
    if (v < 0) {
        act_obuf_putc(b, '-');
        act_obuf_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        act_obuf_u64(b, (uint64_t)v);
    }
}

void act_obuf_us3(act_obuf *b, int64_t ns)
{
    uint64_t u;
    if (ns < 0) {
        act_obuf_putc(b, '-');
        u = (uint64_t)0 - (uint64_t)ns;
    } else {
        u = (uint64_t)ns;
    }
    /* integer microseconds, '.', exactly three digits of nanoseconds */
    char tmp[24];
    unsigned f = (unsigned)(u % 1000);
    tmp[23] = (char)('0' + f % 10);
    tmp[22] = (char)('0' + f / 10 % 10);
    tmp[21] = (char)('0' + f / 100);
    tmp[20] = '.';
    size_t i = u64_digits(tmp, u / 1000);
    act_obuf_put(b, tmp + i, 24 - i);
}

void act_obuf_f64(act_obuf *b, double v)
{
    if (!isfinite(v)) {
        act_obuf_lit(b, "null");
        return;
    }
    /* Range first: converting a double beyond int64 is undefined (a
     * counter value of 1e300 from a hostile spool reached it). */
    if (fabs(v) < 9e15 && v == (double)(int64_t)v) {
        act_obuf_i64(b, (int64_t)v);
        return;
    }
    char tmp[32];
    /* Shortest of %.15g/%.17g that reads back exactly. */
    int n = snprintf(tmp, sizeof(tmp), "%.15g", v);
    if (strtod(tmp, NULL) != v)
        n = snprintf(tmp, sizeof(tmp), "%.17g", v);
    act_obuf_put(b, tmp, (size_t)n);
}

void act_obuf_hex(act_obuf *b, uint64_t v)
{
    static const char hexd[] = "0123456789abcdef";
    char tmp[18];
    int i = 18;
    do {
        tmp[--i] = hexd[v & 15];
        v >>= 4;
    } while (v);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    act_obuf_put(b, tmp + i, (size_t)(18 - i));
}
