/*
 * pb.h -- a protobuf wire-format encoder, just enough for the Perfetto
 * writer (pftrace_writer.c): varints, fixed64, length-delimited strings
 * and nested messages into a growing buffer. It only encodes; nothing in
 * the library parses protobuf. Why hand-written and not protobuf-c or
 * nanopb: docs/pftrace.md "The encoder".
 */
#ifndef ACT_PB_H
#define ACT_PB_H

#include <stddef.h>
#include <stdint.h>

/* A message being built; err is sticky (ACT_E_NOMEM). */
typedef struct act_pb {
    uint8_t *p;
    size_t n, cap;
    int err;
    uint64_t invalid; /* invalid UTF-8 sequences replaced by U+FFFD */
} act_pb;

enum { ACT_PB_VARINT = 0, ACT_PB_FIXED64 = 1, ACT_PB_LEN = 2 };

void act_pb_free(act_pb *b);
/* Make room for n more bytes; 0 or ACT_E_NOMEM (sticky). */
int act_pb_reserve(act_pb *b, size_t n);
void act_pb_i64(act_pb *b, uint32_t field, int64_t v);
void act_pb_fixed64(act_pb *b, uint32_t field, uint64_t v);
void act_pb_double(act_pb *b, uint32_t field, double v);
void act_pb_bytes(act_pb *b, uint32_t field, const void *p, size_t n);
/* A string field, each invalid UTF-8 sequence written as U+FFFD (as the
 * Chrome writer writes it), counted in b->invalid. */
void act_pb_str(act_pb *b, uint32_t field, const char *s, size_t n);
/* How many invalid UTF-8 sequences s has (what act_pb_str replaces). */
uint64_t act_pb_utf8_bad(const char *s, size_t n);
/* A nested message: _begin returns where it starts, _end writes its
 * length there (the body moves when the length takes more than a byte). */
size_t act_pb_msg_begin(act_pb *b, uint32_t field);
void act_pb_msg_end(act_pb *b, size_t at);

/* The hot ones inline: a writer calls them for every field of every
 * packet (act_pb_varint was 14 % of a pftrace export as a call). */
static inline uint8_t *act_pb_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline void act_pb_varint(act_pb *b, uint64_t v)
{
    if (b->cap - b->n < 10 && act_pb_reserve(b, 10))
        return;
    b->n = (size_t)(act_pb_put_varint(b->p + b->n, v) - b->p);
}

static inline void act_pb_tag(act_pb *b, uint32_t field, int wire)
{
    act_pb_varint(b, ((uint64_t)field << 3) | (unsigned)wire);
}

static inline void act_pb_u64(act_pb *b, uint32_t field, uint64_t v)
{
    if (b->cap - b->n < 20 && act_pb_reserve(b, 20))
        return;
    uint8_t *p = act_pb_put_varint(b->p + b->n, ((uint64_t)field << 3) | ACT_PB_VARINT);
    b->n = (size_t)(act_pb_put_varint(p, v) - b->p);
}

#endif
