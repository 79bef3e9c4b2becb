/*
 * pb.c -- the protobuf wire-format encoder of pb.h (encoding only).
 */
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "json_escape.h"
#include "pb.h"

void act_pb_free(act_pb *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

int act_pb_reserve(act_pb *b, size_t n)
{
    if (b->err)
        return b->err;
    if (b->cap - b->n >= n)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->n < n)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return b->err = ACT_E_NOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void varint_at(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p = (uint8_t)v;
}

void act_pb_i64(act_pb *b, uint32_t field, int64_t v)
{
    act_pb_u64(b, field, (uint64_t)v); /* int64: two's complement, 10 bytes if negative */
}

void act_pb_fixed64(act_pb *b, uint32_t field, uint64_t v)
{
    act_pb_tag(b, field, ACT_PB_FIXED64);
    if (act_pb_reserve(b, 8))
        return;
    for (int i = 0; i < 8; i++)
        b->p[b->n++] = (uint8_t)(v >> (8 * i));
}

void act_pb_double(act_pb *b, uint32_t field, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    act_pb_fixed64(b, field, u);
}

void act_pb_bytes(act_pb *b, uint32_t field, const void *p, size_t n)
{
    act_pb_tag(b, field, ACT_PB_LEN);
    act_pb_varint(b, n);
    if (n && !act_pb_reserve(b, n)) {
        memcpy(b->p + b->n, p, n);
        b->n += n;
    }
}

/* s's length once each invalid sequence is replaced by U+FFFD (3 bytes). */
static size_t utf8_valid_len(const char *s, size_t n, uint64_t *bad)
{
    size_t i = 0, out = 0, skip;
    while (i < n) {
        size_t k = act_utf8_seq((const unsigned char *)s + i, n - i, &skip);
        if (k) {
            i += k;
            out += k;
        } else {
            i += skip ? skip : 1;
            out += 3;
            (*bad)++;
        }
    }
    return out;
}

static void utf8_copy(uint8_t *d, const char *s, size_t n)
{
    size_t i = 0, skip;
    while (i < n) {
        size_t k = act_utf8_seq((const unsigned char *)s + i, n - i, &skip);
        if (k) {
            memcpy(d, s + i, k);
            d += k;
            i += k;
        } else {
            memcpy(d, "\xEF\xBF\xBD", 3);
            d += 3;
            i += skip ? skip : 1;
        }
    }
}

uint64_t act_pb_utf8_bad(const char *s, size_t n)
{
    uint64_t bad = 0;
    utf8_valid_len(s, n, &bad);
    return bad;
}

void act_pb_str(act_pb *b, uint32_t field, const char *s, size_t n)
{
    uint64_t bad = 0;
    size_t len = utf8_valid_len(s, n, &bad);
    if (!bad) {
        act_pb_bytes(b, field, s, n);
        return;
    }
    b->invalid += bad;
    act_pb_tag(b, field, ACT_PB_LEN);
    act_pb_varint(b, len);
    if (!act_pb_reserve(b, len)) {
        utf8_copy(b->p + b->n, s, n);
        b->n += len;
    }
}

size_t act_pb_msg_begin(act_pb *b, uint32_t field)
{
    act_pb_tag(b, field, ACT_PB_LEN);
    size_t at = b->n;
    if (!act_pb_reserve(b, 1))
        b->p[b->n++] = 0;
    return at;
}

void act_pb_msg_end(act_pb *b, size_t at)
{
    if (b->err)
        return;
    size_t len = b->n - at - 1, vs = varint_size(len);
    if (vs > 1) {
        if (act_pb_reserve(b, vs - 1))
            return;
        memmove(b->p + at + vs, b->p + at + 1, len);
        b->n += vs - 1;
    }
    varint_at(b->p + at, len);
}
