/*
 * reader_int.h -- what the spool reader's files share (reader.c: the batch
 * decoder and the public open/close; reader_live.c: the live reader;
 * spool_dir.c lists a directory's spools): the segment and walk state,
 * the checks every walk makes, and the record decoder of the hot loop,
 * inline so that the batch and live walks each get their own copy
 * (what the decoder calls, and the walk state, are reader_types.h's).
 * Internal to those files: nothing else includes it.
 */
#ifndef ACT_TIMELINE_READER_INT_H
#define ACT_TIMELINE_READER_INT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "acceltrace.h"
#include "reader_types.h"
#include "spool.h"

void act_rd_drop_pages(const act_spool *sp);   /* the mapping's pages let go */
void act_rd_live_untouch(const act_spool *sp); /* reader_live.c: sp->live_untouch */
void act_rd_note_read(reader *rd, size_t bytes);
void act_rd_set_err(char *err, size_t errlen, const char *path, const char *what);
int act_rd_parse_cmdline(act_spool *sp);
/* Map `len` bytes of spool file `fd` read-only and check its header. */
int act_rd_map_spool(act_spool *sp, int fd, size_t len, const char *path, char *err, size_t errlen);
int act_rd_seg_add(reader *rd, const segment *s);
/* The order of segments (reader.c): by seq, ended ones first. */
int act_rd_seg_cmp(const segment *x, const segment *y);
void act_rd_reader_free(reader *rd);
/* What every read of a spool ends with, batch or live: its time span, the
 * undefined string ids in all, and the reader's memory and pages let go. */
void act_rd_reader_finish(act_spool *sp, reader *rd);

/* Where the program could still publish after a final scan made before it
 * was gone (act_spool_live_settled, reader_live.c): the header, every chunk that is not
 * done (its fill as parsed; 0 and no magic: handed out, not begun) and
 * every segment left open (the file offset of its seq). */
typedef struct settle_chunk {
    uint32_t idx, used;
} settle_chunk;

struct act_sp_settle {
    act_spool_header hdr;
    settle_chunk *chunks;
    size_t n_chunks, cap_chunks;
    size_t *seqs;
    size_t n_seqs, cap_seqs;
    int unsure; /* a chunk found broken: its later state is not compared */
    int fd;     /* the spool, read with pread(2) (-1: none, nothing is settled) */
};
void act_rd_settle_free(act_spool *sp); /* reader.c: at act_spool_close */

static inline act_str str_get(reader *rd, uint32_t serial, uint32_t id)
{
    if (!id)
        return (act_str){"", 0};
    /* A few names recur record after record: a small cache before the map
     * (str_define clears the slot of an id it (re)defines). */
    uint64_t key = (uint64_t)serial << 32 | id;
    struct str_hit *c = &rd->hits[id & (STR_HITS - 1)];
    if (c->key == key)
        return rd->strs[c->idx];
    return act_rd_str_get_slow(rd, serial, id, key, c);
}

/* Raw times are compared and converted once at the end: act_spool_ns is
 * non-decreasing (the header check ensures a positive TSC rate), so the
 * earliest and latest raw times give the earliest and latest ns. */
static inline void note_ts(reader *rd, uint64_t raw)
{
    if (!raw)
        return;
    if (raw < rd->raw_min)
        rd->raw_min = raw;
    if (raw > rd->raw_max)
        rd->raw_max = raw;
}

/* Timestamps a record carries, for the process's first/last time. */
static inline void note_times(reader *rd, const act_rec_hdr *h)
{
    switch (h->kind) {
    case ACT_REC_RANGE_PUSH:
    case ACT_REC_RANGE_POP:
    case ACT_REC_MARK:
    case ACT_REC_ERROR:
    case ACT_REC_CAPTURE: note_ts(rd, ((const act_rec_ts *)h)->ts); break;
    case ACT_REC_RANGE_START:
    case ACT_REC_RANGE_END: note_ts(rd, ((const act_rec_range_id *)h)->ts); break;
    case ACT_REC_COUNTER: note_ts(rd, ((const act_rec_counter *)h)->ts); break;
    case ACT_REC_API:
        note_ts(rd, ((const act_rec_api *)h)->start);
        note_ts(rd, ((const act_rec_api *)h)->end);
        break;
    case ACT_REC_DEVICE_OP:
        note_ts(rd, ((const act_rec_device_op *)h)->start);
        note_ts(rd, ((const act_rec_device_op *)h)->end);
        break;
    default: break;
    }
}

/* Resolve the strings of a record that is handed out. */
static inline __attribute__((always_inline)) void rec_decode(reader *rd, const act_rec_hdr *h,
                                                             uint32_t serial, act_sp_rec *r)
{
    r->r = h;
    r->serial = serial;
    r->s1 = (act_str){"", 0};
    r->s2 = (act_str){"", 0};
    switch (h->kind) {
    case ACT_REC_RANGE_PUSH:
    case ACT_REC_MARK:
    case ACT_REC_ERROR:
    case ACT_REC_COUNTER:
    case ACT_REC_API:
    case ACT_REC_RANGE_START:
    case ACT_REC_CLOCK: r->s1 = str_get(rd, serial, h->aux); break;
    case ACT_REC_DEVICE_OP:
        r->s1 = str_get(rd, serial, h->aux);
        r->s2 = str_get(rd, serial, ((const act_rec_device_op *)h)->detail);
        break;
    case ACT_REC_DEVICE:
        r->s1 = str_get(rd, serial, h->aux);
        r->s2 = str_get(rd, serial, ((const act_rec_device *)h)->vendor);
        break;
    case ACT_REC_QUEUE: r->s1 = str_get(rd, serial, h->aux); break;
    case ACT_REC_METADATA:
        r->s1 = str_get(rd, serial, h->aux);
        r->s2 = str_get(rd, serial, ((const act_rec_metadata *)h)->value);
        break;
    case ACT_REC_THREAD: r->s2 = str_get(rd, serial, ((const act_rec_thread *)h)->name); break;
    case ACT_REC_ARG: {
        const act_rec_arg *a = (const act_rec_arg *)h;
        r->s1 = str_get(rd, serial, h->aux);
        if (a->type == ACT_RECARG_STR)
            r->s2 = a->v.u <= UINT32_MAX ? str_get(rd, serial, (uint32_t)a->v.u)
                                         : str_get(rd, serial, UINT32_MAX);
        break;
    }
    default: break;
    }
}

/* Records kept from a cut segment (reader.c, ring_cut): what R5 carries
 * over. */
static inline int act_rd_ring_cut_keeps(const act_rec_hdr *h)
{
    switch (h->kind) {
    case ACT_REC_STRING:
    case ACT_REC_DEVICE:
    case ACT_REC_QUEUE:
    case ACT_REC_METADATA:
    case ACT_REC_CLOCK:
    case ACT_REC_CAPTURE: return 1;
    case ACT_REC_THREAD: return h->aux == 0;
    default: return 0;
    }
}

/* The next record of segment `sg` from *off: 1 with *out filled, 0 at the
 * end of the segment, or ACT_E_NOMEM. The survey also counts, notes times
 * and threads, and reports problems; both walks skip the same records and
 * define the same strings, so the iterator resolves what the survey did.
 * Sizes were checked by scan_chunk, and are checked again: the iterator
 * reads the file a second time. */
static inline __attribute__((always_inline)) int
seg_next_impl(reader *rd, const segment *sg, size_t *off, act_sp_rec *out, const int survey)
{
    act_spool *sp = rd->sp;
    while (*off + sizeof(act_rec_hdr) <= sg->end) {
        const act_rec_hdr *h = (const act_rec_hdr *)(sp->map + *off);
        size_t size = (size_t)h->size8 * 8;
        if (!size || size > sg->end - *off) {
            if (survey)
                act_rd_problem(
                    sp, "chunk %u: record size changed while reading; rest of segment skipped",
                    sg->chunk);
            *off = sg->end;
            return 0;
        }
        *off += size;
        assert(*off <= sg->end); /* a record never crosses its segment's end */
        if (h->kind >= ACT_REC_KIND_MAX) {
            if (survey)
                act_rd_problem(sp, "chunk %u: unknown record kind %u; skipped", sg->chunk, h->kind);
            continue;
        }
        if (size < act_rd_min_size[h->kind]) {
            if (survey)
                act_rd_problem(sp, "chunk %u: record of kind %u is %zu bytes, needs %u; skipped",
                               sg->chunk, h->kind, size, act_rd_min_size[h->kind]);
            continue;
        }
        if (h->kind == ACT_REC_PAD || h->kind == ACT_REC_SEGMENT)
            continue;
        if (sg->cut && !act_rd_ring_cut_keeps(h)) {
            if (survey)
                sp->hdr.records_overwritten++;
            continue;
        }
        if (survey)
            sp->records[h->kind]++;
        if (h->kind == ACT_REC_STRING) {
            const act_rec_string *s = (const act_rec_string *)h;
            if (s->len > size - sizeof(*s) || !h->aux) {
                if (survey)
                    act_rd_problem(
                        sp, "chunk %u: STRING record with length %u in %zu bytes (id %u); skipped",
                        sg->chunk, s->len, size, h->aux);
                continue;
            }
            if (act_rd_str_define(rd, sg->serial, h->aux, (const char *)(s + 1), s->len))
                return ACT_E_NOMEM;
            continue;
        }
        if (survey && h->kind == ACT_REC_THREAD && h->aux) {
            /* aux 0 names some OS thread of the process (nvtxNameOsThread);
             * the builder reads it from the records. */
            const act_rec_thread *t = (const act_rec_thread *)h;
            if (act_rd_thread_set(sp, h->aux, t->tid, str_get(rd, sg->serial, t->name)))
                return ACT_E_NOMEM;
        }
        rec_decode(rd, h, sg->serial, out);
        if (survey)
            note_times(rd, h);
        return 1;
    }
    return 0;
}

/* Two copies, so that the iterator's walk carries none of the survey's
 * tests (this loop runs twice per record). */
static inline int seg_next(reader *rd, const segment *sg, size_t *off, act_sp_rec *out)
{
    return rd->survey ? seg_next_impl(rd, sg, off, out, 1) : seg_next_impl(rd, sg, off, out, 0);
}

#endif
