/*
 * spool_build.h -- build spool files byte by byte from record.h, for the
 * timeline tests: full control over every field lets the tests describe
 * exact scenarios (joins, recycled chunks, vendor correlation reuse) and
 * hostile files (bad sizes, ids, truncation) that the real recorder would
 * never write.
 */
#ifndef ACT_TEST_SPOOL_BUILD_H
#define ACT_TEST_SPOOL_BUILD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/record.h"

typedef struct sb {
    unsigned char *buf;
    size_t size;
    uint32_t chunk_size, chunk_count;
    uint32_t chunk; /* chunk being written */
    uint64_t seq;   /* next segment sequence */
    /* Per thread serial (< SB_SERIALS): the file offset + 1 of its open
     * segment's SEGMENT record (0: none). record.h S1: a segment's seq is
     * taken when it ends, here when its thread starts the next one
     * (sb_segment) or sb_end ends it; one never ended stays ACT_SEQ_OPEN
     * (a thread that was still writing it). */
    size_t open[64];
} sb;
#define SB_SERIALS 64

static inline act_spool_header *sb_hdr(sb *b)
{
    return (act_spool_header *)b->buf;
}

static inline act_chunk_header *sb_chunk_hdr(sb *b, uint32_t idx)
{
    return (act_chunk_header *)(b->buf + ACT_SPOOL_HEADER_SIZE + (size_t)idx * b->chunk_size);
}

static inline void sb_init(sb *b, uint32_t pid, uint32_t chunk_size, uint32_t chunk_count)
{
    memset(b, 0, sizeof(*b));
    b->chunk_size = chunk_size;
    b->chunk_count = chunk_count;
    b->size = ACT_SPOOL_HEADER_SIZE + (size_t)chunk_size * chunk_count;
    b->buf = calloc(1, b->size);
    act_spool_header *h = sb_hdr(b);
    h->magic = ACT_SPOOL_MAGIC;
    h->version = ACT_SPOOL_VERSION;
    h->header_size = ACT_SPOOL_HEADER_SIZE;
    h->capacity = b->size;
    h->chunk_size = chunk_size;
    h->chunk_count = chunk_count;
    h->pid = pid;
    h->ppid = 1;
    h->clock_kind = ACT_CLOCK_MONOTONIC_RAW;
    h->flags = ACT_SPOOL_F_SEALED;
    h->start_realtime_ns = 1700000000000000000ull;
    h->start_ns = 1000000;
    memcpy(h->cmdline, "prog\0arg1\0", 11);
    b->chunk = UINT32_MAX;
}

/* Start (or continue) writing into chunk idx. */
static inline void sb_use_chunk(sb *b, uint32_t idx)
{
    act_chunk_header *c = sb_chunk_hdr(b, idx);
    if (c->magic != ACT_CHUNK_MAGIC) {
        c->magic = ACT_CHUNK_MAGIC;
        c->index = idx;
        c->used = 0;
    }
    if (sb_hdr(b)->chunks_used < idx + 1u)
        sb_hdr(b)->chunks_used = idx + 1u;
    b->chunk = idx;
}

/* Append a record of `size` bytes (multiple of 8); returns it zeroed with
 * kind/size8/aux set. */
static inline void *sb_rec(sb *b, uint16_t kind, uint32_t aux, size_t size)
{
    act_chunk_header *c = sb_chunk_hdr(b, b->chunk);
    size = (size + 7) & ~(size_t)7;
    if (c->used + size > b->chunk_size - sizeof(*c)) {
        fprintf(stderr, "spool_build: chunk %u full\n", b->chunk);
        abort();
    }
    unsigned char *p = (unsigned char *)(c + 1) + c->used;
    memset(p, 0, size);
    act_rec_hdr *h = (act_rec_hdr *)p;
    h->kind = kind;
    h->size8 = (uint16_t)(size / 8);
    h->aux = aux;
    c->used += (uint32_t)size;
    return p;
}

/* End thread `serial`'s open segment (record.h S1): the next seq. */
static inline void sb_end(sb *b, uint32_t serial)
{
    if (serial >= SB_SERIALS || !b->open[serial])
        return;
    act_rec_segment *s = (act_rec_segment *)(b->buf + b->open[serial] - 1);
    s->seq = b->seq++;
    sb_hdr(b)->segment_seq = b->seq;
    b->open[serial] = 0;
}

/* A new segment of thread `serial`: its open one ends first, and so does
 * the one it follows in the chunk (record.h S2: a thread takes a chunk
 * another one left). */
static inline void sb_segment(sb *b, uint32_t serial)
{
    size_t lo = (size_t)((unsigned char *)sb_chunk_hdr(b, b->chunk) - b->buf);
    for (uint32_t i = 0; i < SB_SERIALS; i++)
        if (b->open[i] > lo && b->open[i] <= lo + b->chunk_size)
            sb_end(b, i);
    act_rec_segment *s = sb_rec(b, ACT_REC_SEGMENT, serial, sizeof(*s));
    if (serial >= SB_SERIALS) { /* a hostile serial: ended at once */
        s->seq = b->seq++;
        sb_hdr(b)->segment_seq = b->seq;
        return;
    }
    sb_end(b, serial);
    s->seq = ACT_SEQ_OPEN;
    b->open[serial] = (size_t)((unsigned char *)s - b->buf) + 1;
}

/* Every open segment ended, threads in serial order (a process whose
 * threads all ended). */
static inline void sb_end_all(sb *b)
{
    for (uint32_t i = 0; i < SB_SERIALS; i++)
        sb_end(b, i);
}

static inline void sb_thread(sb *b, uint32_t serial, uint32_t tid, uint32_t name)
{
    act_rec_thread *t = sb_rec(b, ACT_REC_THREAD, serial, sizeof(*t));
    t->tid = tid;
    t->name = name;
}

/* The usual start of a test spool: chunk `chunk`, a segment of thread
 * `serial` and its THREAD record (tid, no name). */
static inline void sb_open_thread(sb *b, uint32_t chunk, uint32_t serial, uint32_t tid)
{
    sb_use_chunk(b, chunk);
    sb_segment(b, serial);
    sb_thread(b, serial, tid, 0);
}

static inline void sb_string(sb *b, uint32_t id, const char *s, size_t len)
{
    act_rec_string *r = sb_rec(b, ACT_REC_STRING, id, sizeof(*r) + len);
    r->len = (uint32_t)len;
    memcpy(r + 1, s, len);
}

static inline void sb_str(sb *b, uint32_t id, const char *s)
{
    sb_string(b, id, s, strlen(s));
}

static inline void sb_ts(sb *b, uint16_t kind, uint32_t aux, uint64_t ts)
{
    act_rec_ts *r = sb_rec(b, kind, aux, sizeof(*r));
    r->ts = ts;
}

static inline void sb_api(sb *b, uint32_t name, uint64_t start, uint64_t end, uint64_t corr,
                          uint64_t ext, uint32_t source)
{
    act_rec_api *r = sb_rec(b, ACT_REC_API, name, sizeof(*r));
    r->start = start;
    r->end = end;
    r->corr = corr;
    r->ext = ext;
    r->source = source;
}

static inline act_rec_device_op *sb_op(sb *b, uint32_t name, uint8_t op, uint64_t device,
                                       uint64_t queue, uint64_t start, uint64_t end, uint64_t corr,
                                       uint32_t source)
{
    act_rec_device_op *r = sb_rec(b, ACT_REC_DEVICE_OP, name, sizeof(*r));
    r->op = op;
    r->source = (uint8_t)source;
    r->device = device;
    r->queue = queue;
    r->queued = r->submit = start ? start - 1 : 0;
    r->start = start;
    r->end = end;
    r->corr = corr;
    return r;
}

static inline void sb_device(sb *b, uint32_t name, uint64_t device, uint32_t vendor,
                             uint32_t source, uint32_t index)
{
    act_rec_device *r = sb_rec(b, ACT_REC_DEVICE, name, sizeof(*r));
    r->device = device;
    r->vendor = vendor;
    r->source = source;
    r->index = index;
}

static inline int sb_write(sb *b, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(b->buf, 1, b->size, f);
    fclose(f);
    return w == b->size ? 0 : -1;
}

static inline void sb_free(sb *b)
{
    free(b->buf);
    b->buf = NULL;
}

#endif
