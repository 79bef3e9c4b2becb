/*
 * pftrace_writer.c -- the timeline as Perfetto's native protobuf trace
 * (`-o trace.pftrace`, docs/pftrace.md): a stream of TracePackets, one
 * packet sequence per thread and sequence 1 for the rest, which Perfetto
 * loads at sizes where a JSON trace fails. The same events, links and metadata as the Chrome trace;
 * one more writer on the seam (writer.h).
 *
 * Mapping (the Chrome event -> the packets):
 *  - every process and thread gets a TrackDescriptor the first time an
 *    event uses it; "M" events (process_name, thread_name, *_sort_index,
 *    process_labels) send it again with what they add;
 *  - "X": TYPE_SLICE_BEGIN at ts and TYPE_SLICE_END at ts + dur (held
 *    until its thread's events reach that time), args as debug annotations; "i": TYPE_INSTANT;
 * "b"/"e": a slice on an async track of its own (process, id, name); "C": one counter track per
 *    (process, counter, key), TYPE_COUNTER;
 *  - the launch -> device op links ("s"/"f" pairs): a host runtime call
 *    that can launch (it has a "correlation" arg) carries flow_ids = [a hash of its
 *    thread and start]; the device op an "f" binds to carries that id in
 *    terminating_flow_ids (the "s" says which host slice it is);
 *  - names, categories, arg names and string arg values are interned
 *    (InternedData, per sequence); the tables are cleared
 *    (SEQ_INCREMENTAL_STATE_CLEARED) when they hold PF_INTERN_MAX strings
 *    in all, so memory stays bounded;
 *  - a thread's own sequence sets its track and a delta clock as packet
 *    defaults (TracePacketDefaults, ClockSnapshot with an incremental
 *    clock): its events leave out track_uuid and their timestamps are
 *    deltas;
 *  - the metadata: the members the Chrome writer writes beside
 *    "traceEvents", each a ChromeMetadata of one ChromeEventBundle packet,
 *    made by the Chrome writer itself (into memory) and read with jansson.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "chrome_json.h"
#include "core/vec.h"
#include "obuf.h"
#include "outfile.h"
#include "pb.h"
#include "timeline/u64map.h"
#include "writer.h"

/* Field numbers of perfetto_trace.proto (third_party/perfetto). */
enum {
    TRACE_PACKET = 1,
    TP_TIMESTAMP = 8,
    TP_SEQ_ID = 10,
    TP_TRACK_EVENT = 11,
    TP_INTERNED = 12,
    TP_SEQ_FLAGS = 13,
    TP_CHROME_EVENTS = 5,
    TP_TRACK_DESC = 60,
    TP_FIRST_ON_SEQ = 87,
    TP_CLOCK_SNAPSHOT = 6,
    TP_CLOCK_ID = 58,
    TP_DEFAULTS = 59,
    TPD_CLOCK_ID = 58,
    TPD_TRACK_EVENT = 11,
    TED_TRACK_UUID = 11,
    CS_CLOCKS = 1,
    CS_PRIMARY = 2,
    CLK_ID = 1,
    CLK_TS = 2,
    CLK_INCREMENTAL = 3,
    BOOTTIME = 6,
    CLOCK_DELTA = 64, /* a sequence-scoped clock, incremental (docs/pftrace.md) */
    SEQ_CLEARED = 1,
    SEQ_NEEDS = 2,
    TE_CATEGORY_IIDS = 3,
    TE_ANNOTATIONS = 4,
    TE_TYPE = 9,
    TE_NAME_IID = 10,
    TE_TRACK_UUID = 11,
    TE_NAME = 23,
    TE_COUNTER_VALUE = 30,
    TE_DOUBLE_COUNTER = 44,
    TE_FLOW_IDS = 47,
    TE_TERM_FLOW_IDS = 48,
    TYPE_BEGIN = 1,
    TYPE_END = 2,
    TYPE_INSTANT = 3,
    TYPE_COUNTER = 4,
    ID_CATEGORIES = 1,
    ID_EVENT_NAMES = 2,
    ID_ANNOTATION_NAMES = 3,
    ID_STRING_VALUES = 29,
    DA_NAME_IID = 1,
    DA_BOOL = 2,
    DA_UINT = 3,
    DA_INT = 4,
    DA_DOUBLE = 5,
    DA_POINTER = 7,
    DA_JSON = 9,
    DA_ARRAY = 12,
    DA_STRING_IID = 17,
    TD_UUID = 1,
    TD_NAME = 2,
    TD_PROCESS = 3,
    TD_THREAD = 4,
    TD_PARENT = 5,
    TD_COUNTER = 8,
    TD_SIBLING_RANK = 12,
    PD_PID = 1,
    PD_SORT_INDEX = 3,
    PD_NAME = 6,
    PD_LABELS = 8,
    THD_PID = 1,
    THD_TID = 2,
    THD_NAME = 5,
    CEB_METADATA = 2,
    CM_NAME = 1,
    CM_STRING = 2,
    CM_BOOL = 3,
    CM_INT = 4,
    CM_JSON = 5,
};

#define PF_SEQ_ID     1u
#define PF_INTERN_MAX (1u << 16)
#define PF_MAX_FLOWS  16  /* flow ends bound to one slice (one is usual) */
#define PF_MAX_SEQS   256 /* threads with a sequence of their own; the rest share sequence 1 */

/* ---- the writer's state ------------------------------------------------- */

/* An interned string and its invalid UTF-8 sequences. */
typedef struct pf_istr {
    act_str s;
    uint64_t bad;
} pf_istr;

#define PF_MEMO 256 /* recent strings by address (a power of two) */

/* An interned string table: iid = index + 1. Event strings stay where they
 * are until the close, and one kind of event uses the same name and arg
 * key strings each time: a string seen at an address is found again by
 * its address first, without hashing its bytes. */
typedef struct pf_intern {
    act_u64map ids; /* hash of the string -> iid */
    pf_istr *strs;
    size_t n, cap;
    struct pf_memo {
        const char *p;
        uint32_t n;
        uint64_t iid;
    } memo[PF_MEMO];
} pf_intern;

enum { TRACK_PROCESS, TRACK_THREAD, TRACK_OTHER };

/* What a track's descriptor says (sent again when an "M" adds to it). */
typedef struct pf_track {
    uint64_t late; /* a thread's track for its slices that come late (0: none yet) */
    uint32_t pid, tid;
    uint32_t seq; /* index in seqs of its events' sequence */
    uint8_t kind, has_rank;
    int32_t rank;
    act_str name, labels;
} pf_track;

/* A packet sequence and what is incremental on it: the intern tables,
 * and for a thread's own sequence its default track and the last
 * timestamp of its delta clock. Sequence 1 (seqs[0]) is shared: track
 * descriptors, counters, async slices, process-scoped events, the
 * metadata and the threads beyond PF_MAX_SEQS; its events name their
 * track and carry absolute timestamps. */
typedef struct pf_seq {
    uint32_t id;    /* trusted_packet_sequence_id */
    uint64_t track; /* its default track (TrackEventDefaults), 0 on sequence 1 */
    pf_intern names, keys, values;
    int cleared;   /* the next event starts its incremental state again */
    int started;   /* first_packet_on_sequence sent */
    uint64_t last; /* the delta clock's value: the last timestamp written with it */
    uint64_t high; /* the latest timestamp written on it (kept when it starts over) */
    /* Ends of its slices not written yet (ns from the base), latest
     * first: a slice's end is written when an event of its thread comes
     * at or after it (or at the close), so that its timestamps rise. */
    uint64_t *ends;
    size_t n_ends, cap_ends;
    /* Slice begins at hold_ts not written yet: written, longest first,
     * when an event of the thread comes after that time, so that a slice
     * that begins with another and encloses it is begun first (trace
     * processor keeps packets of one timestamp in file order). bodies
     * holds each one's packet from its flags on, and its interned strings. */
    struct pf_held {
        size_t at, n, in_at, in_n;
        uint64_t end;
    } * held;
    size_t n_held, cap_held;
    uint64_t hold_ts;
    act_pb bodies;
} pf_seq;

typedef struct pf_writer {
    act_writer base;
    act_writer_facts f;
    act_outfile *file;
    act_obuf out;
    act_pb pkt; /* a descriptor's or the metadata's packet */
    act_pb te;  /* an event's packet, its TrackEvent open at te_at */
    size_t te_at;
    act_pb in;    /* the event's InternedData, added at its end */
    pf_seq *seqs; /* [0]: sequence 1 (shared); then one per thread track */
    size_t n_seqs;
    size_t n_interned;                 /* strings in all intern tables */
    pf_seq *seq;                       /* the current event's */
    int hold;                          /* the event being made is a held begin */
    uint64_t hold_end;                 /* the end of the slice being made */
    const act_timeline *tl;            /* the batch's timeline (its categories) */
    act_u64map procs, threads, others; /* key -> uuid */
    pf_track *tracks;                  /* uuid - 1 -> its descriptor */
    size_t n_tracks, cap_tracks;
    act_u64map flows; /* the Chrome flow id of an "s" -> the flow id written */
    /* invalid UTF-8 sequences replaced by U+FFFD, counted as the Chrome
     * writer counts them: at each use of a string in an event */
    uint64_t bad;
    int err;
    char why[160];
} pf_writer;

static int pf_fail(pf_writer *w, int err, const char *what)
{
    if (!w->err) {
        w->err = err;
        snprintf(w->why, sizeof(w->why), "%s", what);
    }
    return w->err;
}

static uint64_t pf_hash(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 1099511628211ull; /* FNV-1a */
    }
    return h ? h : 1;
}

static uint64_t pf_mix(uint64_t a, uint64_t b)
{
    uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    return h ? h : 1;
}

/* ---- packets ------------------------------------------------------------ */

/* Append the packet in b to the output as Trace.packet. */
static void pf_packet_put_from(pf_writer *w, const act_pb *b)
{
    if (b->err)
        pf_fail(w, b->err, "out of memory");
    if (w->err || act_obuf_reserve(&w->out, b->n + 12))
        return;
    uint8_t head[12];
    size_t h = 0;
    uint64_t v = b->n;
    head[h++] = (TRACE_PACKET << 3) | ACT_PB_LEN;
    while (v >= 0x80) {
        head[h++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    head[h++] = (uint8_t)v;
    act_obuf_put(&w->out, head, h);
    act_obuf_put(&w->out, b->p, b->n);
}

static void pf_packet_put(pf_writer *w)
{
    pf_packet_put_from(w, &w->pkt);
}

static void pf_packet_start(pf_writer *w)
{
    w->pkt.n = 0;
    act_pb_u64(&w->pkt, TP_SEQ_ID, PF_SEQ_ID);
}

/* ---- interned strings ------------------------------------------------------ */

static void pf_intern_clear(pf_intern *t)
{
    act_u64map_free(&t->ids);
    memset(t->memo, 0, sizeof(t->memo));
    free(t->strs); /* a table refills from small: memory follows what is used */
    t->strs = NULL;
    t->n = t->cap = 0;
}

static struct pf_memo *pf_memo_slot(pf_intern *t, act_str s)
{
    uintptr_t a = (uintptr_t)s.p;
    return &t->memo[((a >> 3) ^ (a >> 11) ^ s.n) & (PF_MEMO - 1)];
}

static void pf_intern_free(pf_intern *t)
{
    act_u64map_free(&t->ids);
    free(t->strs);
}

/* The iid of s in t, added (and written to w->in under `field`) on first
 * use; 0: write it inline (a hash collision, or out of memory). */
static uint64_t pf_intern_id(pf_writer *w, pf_intern *t, uint32_t field, act_str s)
{
    struct pf_memo *m = pf_memo_slot(t, s);
    if (m->p == s.p && m->n == s.n && m->iid) {
        w->bad += t->strs[m->iid - 1].bad;
        return m->iid;
    }
    uint64_t h = pf_hash(s.p, s.n, 1469598103934665603ull), iid;
    if (act_u64map_get(&t->ids, h, &iid)) {
        const pf_istr *o = &t->strs[iid - 1];
        if (o->s.n != s.n || memcmp(o->s.p, s.p, s.n))
            return 0;
        w->bad += o->bad;
        *m = (struct pf_memo){s.p, s.n, iid};
        return iid;
    }
    if (act_vec_reserve(t->strs, t->cap, t->n + 1, 256) || act_u64map_put(&t->ids, h, t->n + 1)) {
        pf_fail(w, ACT_E_NOMEM, "out of memory");
        return 0;
    }
    uint64_t before = w->in.invalid;
    size_t at = act_pb_msg_begin(&w->in, field);
    act_pb_u64(&w->in, 1, t->n + 1);
    act_pb_str(&w->in, 2, s.p, s.n);
    act_pb_msg_end(&w->in, at);
    t->strs[t->n++] = (pf_istr){s, w->in.invalid - before};
    w->n_interned++;
    *m = (struct pf_memo){s.p, s.n, t->n};
    w->bad += w->in.invalid - before;
    return t->n;
}

static void pf_held_release(pf_writer *w, pf_seq *q);

/* Before an event's packet: when the tables of all sequences together
 * hold PF_INTERN_MAX strings, every sequence starts over (its next event
 * clears its incremental state), so memory stays bounded. */
static void pf_intern_bound(pf_writer *w)
{
    if (w->n_interned < PF_INTERN_MAX)
        return;
    for (size_t i = 0; i < w->n_seqs; i++) /* they use the strings of now */
        pf_held_release(w, &w->seqs[i]);
    for (size_t i = 0; i < w->n_seqs; i++) {
        pf_intern_clear(&w->seqs[i].names);
        pf_intern_clear(&w->seqs[i].keys);
        pf_intern_clear(&w->seqs[i].values);
        w->seqs[i].cleared = 1;
    }
    w->n_interned = 0;
}

/* The categories, interned once per incremental state: iid = the
 * category's number (one byte; an imported trace's own ones after enum
 * act_cat's, act_tl_cat_name). */
static void pf_intern_categories(pf_writer *w, act_pb *b)
{
    const act_timeline *tl = w->tl;
    for (int c = 1; c < ACT_CAT_MAX + (int)(tl ? tl->n_cat_extra : 0); c++) {
        const char *n = act_tl_cat_name(tl, c);
        size_t at = act_pb_msg_begin(b, ID_CATEGORIES);
        act_pb_u64(b, 1, (unsigned)c);
        act_pb_str(b, 2, n, strlen(n));
        act_pb_msg_end(b, at);
    }
    (void)w;
}

/* A sequence's incremental state starts (again): one packet that clears
 * it, interns the categories and, on a thread's own sequence, sets the
 * packet defaults (its track, the delta clock) and starts the delta clock
 * at 0 with a ClockSnapshot (docs/pftrace.md, "Sequences"). */
static void pf_seq_start(pf_writer *w, pf_seq *q)
{
    act_pb *b = &w->pkt;
    b->n = 0;
    act_pb_u64(b, TP_SEQ_ID, q->id);
    act_pb_u64(b, TP_SEQ_FLAGS, SEQ_CLEARED);
    if (!q->started)
        act_pb_u64(b, TP_FIRST_ON_SEQ, 1);
    q->started = 1;
    size_t in = act_pb_msg_begin(b, TP_INTERNED);
    pf_intern_categories(w, b);
    act_pb_msg_end(b, in);
    if (q->track) {
        size_t d = act_pb_msg_begin(b, TP_DEFAULTS);
        act_pb_u64(b, TPD_CLOCK_ID, CLOCK_DELTA);
        size_t ted = act_pb_msg_begin(b, TPD_TRACK_EVENT);
        act_pb_u64(b, TED_TRACK_UUID, q->track);
        act_pb_msg_end(b, ted);
        act_pb_msg_end(b, d);
        /* BOOTTIME 0 = delta clock 0: the timestamps are the other
         * sequences' (ns from the time base) */
        size_t cs = act_pb_msg_begin(b, TP_CLOCK_SNAPSHOT);
        size_t c = act_pb_msg_begin(b, CS_CLOCKS);
        act_pb_u64(b, CLK_ID, BOOTTIME);
        act_pb_u64(b, CLK_TS, 0);
        act_pb_msg_end(b, c);
        c = act_pb_msg_begin(b, CS_CLOCKS);
        act_pb_u64(b, CLK_ID, CLOCK_DELTA);
        act_pb_u64(b, CLK_TS, 0);
        act_pb_u64(b, CLK_INCREMENTAL, 1);
        act_pb_msg_end(b, c);
        act_pb_u64(b, CS_PRIMARY, BOOTTIME);
        act_pb_msg_end(b, cs);
        q->last = 0;
    }
    pf_packet_put(w);
    q->cleared = 0;
}

/* The timestamp of a packet on q: on a thread's own sequence a delta
 * from the last one (the delta clock of its defaults); one earlier than
 * that is written whole, on BOOTTIME. */
static void pf_timestamp(act_pb *b, pf_seq *q, uint64_t t)
{
    if (!q->track) {
        act_pb_u64(b, TP_TIMESTAMP, t);
    } else if (t >= q->last) {
        act_pb_u64(b, TP_TIMESTAMP, t - q->last);
        q->last = t;
        if (t > q->high)
            q->high = t;
    } else {
        act_pb_u64(b, TP_TIMESTAMP, t);
        act_pb_u64(b, TP_CLOCK_ID, BOOTTIME);
    }
}

/* A slice's end at t on q, written now (TYPE_SLICE_END on its default track). */
static void pf_end_put(pf_writer *w, pf_seq *q, uint64_t t)
{
    if (q->cleared)
        pf_seq_start(w, q);
    act_pb *b = &w->te;
    b->n = 0;
    act_pb_u64(b, TP_SEQ_ID, q->id);
    pf_timestamp(b, q, t);
    act_pb_u64(b, TP_SEQ_FLAGS, SEQ_NEEDS);
    size_t at = act_pb_msg_begin(b, TP_TRACK_EVENT);
    act_pb_u64(b, TE_TYPE, TYPE_END);
    act_pb_msg_end(b, at);
    pf_packet_put_from(w, b);
}

/* The ends on q at or before t, written in their order (UINT64_MAX: all);
 * while begins are held at t, only those before t (the held slices' own
 * ends come after their begins). */
static void pf_ends_flush(pf_writer *w, pf_seq *q, uint64_t t)
{
    while (q->n_ends && (q->ends[q->n_ends - 1] < t ||
                         (q->ends[q->n_ends - 1] == t && !(q->n_held && q->hold_ts == t))))
        pf_end_put(w, q, q->ends[--q->n_ends]);
}

/* The held begins of q written, longest slice first (of equal ones, in the
 * order they came); the first carries the interned strings of all. */
static void pf_held_release(pf_writer *w, pf_seq *q)
{
    if (!q->n_held)
        return;
    for (size_t i = 1; i < q->n_held; i++) { /* insertion sort: a few at most */
        struct pf_held h = q->held[i];
        size_t j = i;
        for (; j > 0 && q->held[j - 1].end < h.end; j--)
            q->held[j] = q->held[j - 1];
        q->held[j] = h;
    }
    act_pb *b = &w->pkt;
    for (size_t i = 0; i < q->n_held; i++) {
        const struct pf_held *h = &q->held[i];
        b->n = 0;
        act_pb_u64(b, TP_SEQ_ID, q->id);
        pf_timestamp(b, q, q->hold_ts);
        if (!act_pb_reserve(b, h->n)) {
            memcpy(b->p + b->n, q->bodies.p + h->at, h->n);
            b->n += h->n;
        }
        if (i == 0) {
            size_t in = act_pb_msg_begin(b, TP_INTERNED);
            for (size_t k = 0; k < q->n_held; k++)
                if (q->held[k].in_n && !act_pb_reserve(b, q->held[k].in_n)) {
                    memcpy(b->p + b->n, q->bodies.p + q->held[k].in_at, q->held[k].in_n);
                    b->n += q->held[k].in_n;
                }
            if (b->n == in + 1) /* none: no empty InternedData */
                b->n = in - 1;  /* its one-byte tag and its length */
            else
                act_pb_msg_end(b, in);
        }
        pf_packet_put(w);
    }
    q->n_held = 0;
    q->bodies.n = 0;
}

/* Every sequence's held begins, then its ends: all written. */
static void pf_seqs_flush(pf_writer *w)
{
    for (size_t i = 0; i < w->n_seqs && !w->err; i++) {
        pf_held_release(w, &w->seqs[i]);
        pf_ends_flush(w, &w->seqs[i], UINT64_MAX);
    }
}

/* A slice's end at t on q, kept until pf_ends_flush passes it; the array
 * stays sorted, latest first (of two equal ends the later pushed, an inner
 * slice, comes out first). */
static void pf_end_push(pf_writer *w, pf_seq *q, uint64_t t)
{
    if (act_vec_reserve(q->ends, q->cap_ends, q->n_ends + 1, 16)) {
        pf_fail(w, ACT_E_NOMEM, "out of memory");
        return;
    }
    size_t i = q->n_ends++;
    for (; i > 0 && q->ends[i - 1] < t; i--)
        q->ends[i] = q->ends[i - 1];
    q->ends[i] = t;
}

/* ---- tracks ---------------------------------------------------------------- */

static void pf_track_send(pf_writer *w, uint64_t uuid)
{
    const pf_track *t = &w->tracks[uuid - 1];
    pf_packet_start(w);
    size_t td = act_pb_msg_begin(&w->pkt, TP_TRACK_DESC);
    act_pb_u64(&w->pkt, TD_UUID, uuid);
    if (t->has_rank && t->kind == TRACK_THREAD)
        act_pb_i64(&w->pkt, TD_SIBLING_RANK, t->rank);
    size_t d = act_pb_msg_begin(&w->pkt, t->kind == TRACK_PROCESS ? TD_PROCESS : TD_THREAD);
    act_pb_u64(&w->pkt, PD_PID, t->pid); /* THD_PID too */
    if (t->kind == TRACK_PROCESS) {
        if (t->has_rank)
            act_pb_i64(&w->pkt, PD_SORT_INDEX, t->rank);
        if (t->name.p)
            act_pb_str(&w->pkt, PD_NAME, t->name.p, t->name.n);
        if (t->labels.p)
            act_pb_str(&w->pkt, PD_LABELS, t->labels.p, t->labels.n);
    } else {
        act_pb_u64(&w->pkt, THD_TID, t->tid);
        if (t->name.p)
            act_pb_str(&w->pkt, THD_NAME, t->name.p, t->name.n);
    }
    act_pb_msg_end(&w->pkt, d);
    act_pb_msg_end(&w->pkt, td);
    pf_packet_put(w);
}

/* A new track's uuid, under key in map; 0 on error. */
static uint64_t pf_track_new(pf_writer *w, act_u64map *map, uint64_t key, pf_track t)
{
    if (act_vec_reserve(w->tracks, w->cap_tracks, w->n_tracks + 1, 64) ||
        act_u64map_put(map, key, w->n_tracks + 1)) {
        pf_fail(w, ACT_E_NOMEM, "out of memory");
        return 0;
    }
    w->tracks[w->n_tracks++] = t;
    return w->n_tracks;
}

static uint64_t pf_process_track(pf_writer *w, uint32_t pid)
{
    uint64_t uuid, key = (uint64_t)pid + 1;
    if (act_u64map_get(&w->procs, key, &uuid))
        return uuid;
    uuid = pf_track_new(w, &w->procs, key, (pf_track){.pid = pid, .kind = TRACK_PROCESS});
    if (uuid)
        pf_track_send(w, uuid);
    return uuid;
}

static uint64_t pf_thread_track(pf_writer *w, uint32_t pid, uint32_t tid)
{
    uint64_t uuid, key = ((uint64_t)pid << 32 | tid) + 1;
    if (!key)
        key = 1ull << 63; /* pid and tid 0xFFFFFFFF: 0 is no key */
    if (act_u64map_get(&w->threads, key, &uuid))
        return uuid;
    if (!pf_process_track(w, pid))
        return 0;
    uuid =
        pf_track_new(w, &w->threads, key, (pf_track){.pid = pid, .tid = tid, .kind = TRACK_THREAD});
    if (!uuid)
        return 0;
    pf_track_send(w, uuid);
    /* a sequence of its own while there are fewer than PF_MAX_SEQS */
    if (w->n_seqs <= PF_MAX_SEQS) {
        pf_seq *q = realloc(w->seqs, (w->n_seqs + 1) * sizeof(*q));
        if (!q) {
            pf_fail(w, ACT_E_NOMEM, "out of memory");
            return 0;
        }
        w->seqs = q;
        q[w->n_seqs] = (pf_seq){.id = (uint32_t)w->n_seqs + 1, .track = uuid, .cleared = 1};
        w->tracks[uuid - 1].seq = (uint32_t)w->n_seqs++;
    }
    return uuid;
}

static uint64_t pf_event_track(pf_writer *w, const act_tl_event *e)
{
    return (e->flags & ACT_EVF_NO_TID) ? pf_process_track(w, e->pid)
                                       : pf_thread_track(w, e->pid, e->tid);
}

/* A named track under a process (counters, async slices); key says whose. */
static uint64_t pf_named_track(pf_writer *w, uint32_t pid, uint64_t key, act_str name, int counter)
{
    uint64_t uuid, parent = pf_process_track(w, pid);
    if (!parent || act_u64map_get(&w->others, key, &uuid))
        return parent ? uuid : 0;
    uuid = pf_track_new(w, &w->others, key, (pf_track){.pid = pid, .kind = TRACK_OTHER});
    if (!uuid)
        return 0;
    pf_packet_start(w);
    size_t td = act_pb_msg_begin(&w->pkt, TP_TRACK_DESC);
    act_pb_u64(&w->pkt, TD_UUID, uuid);
    act_pb_u64(&w->pkt, TD_PARENT, parent);
    act_pb_str(&w->pkt, TD_NAME, name.p, name.n);
    if (counter)
        act_pb_bytes(&w->pkt, TD_COUNTER, "", 0);
    act_pb_msg_end(&w->pkt, td);
    pf_packet_put(w);
    return uuid;
}

/* The track under a thread's for its slices that come after a later event
 * of the thread was written (docs/pftrace.md, "Sequences"): on sequence 1,
 * where they nest among themselves. */
static uint64_t pf_late_track(pf_writer *w, uint64_t thread)
{
    if (w->tracks[thread - 1].late)
        return w->tracks[thread - 1].late;
    uint32_t pid = w->tracks[thread - 1].pid;
    if (act_vec_reserve(w->tracks, w->cap_tracks, w->n_tracks + 1, 64)) {
        pf_fail(w, ACT_E_NOMEM, "out of memory");
        return 0;
    }
    w->tracks[w->n_tracks++] = (pf_track){.pid = pid, .kind = TRACK_OTHER};
    uint64_t uuid = w->n_tracks;
    w->tracks[thread - 1].late = uuid;
    pf_packet_start(w);
    size_t td = act_pb_msg_begin(&w->pkt, TP_TRACK_DESC);
    act_pb_u64(&w->pkt, TD_UUID, uuid);
    act_pb_u64(&w->pkt, TD_PARENT, thread);
    act_pb_str(&w->pkt, TD_NAME, "late slices", 11);
    act_pb_msg_end(&w->pkt, td);
    pf_packet_put(w);
    return uuid;
}

/* An "M" event: what it says of its process or thread, sent again. */
static void pf_metadata_event(pf_writer *w, act_timeline *tl, const act_tl_event *e)
{
    int thread = !strncmp(e->name.p, "thread_", e->name.n < 7 ? e->name.n : 7);
    w->bad += act_pb_utf8_bad(e->name.p, e->name.n);
    uint64_t uuid = thread ? pf_thread_track(w, e->pid, e->tid) : pf_process_track(w, e->pid);
    if (!uuid)
        return;
    pf_track *t = &w->tracks[uuid - 1];
    for (uint32_t i = 0; i < e->nargs; i++) {
        const act_tl_arg *a = &tl->args[e->arg0 + i];
        w->bad += act_pb_utf8_bad(a->key.p, a->key.n) +
                  (a->type == ACT_ARG_STR ? act_pb_utf8_bad(a->v.s.p, a->v.s.n) : 0);
        if (a->type == ACT_ARG_STR && a->key.n == 4 && !memcmp(a->key.p, "name", 4))
            t->name = a->v.s;
        else if (a->type == ACT_ARG_STR && a->key.n == 6 && !memcmp(a->key.p, "labels", 6))
            t->labels = a->v.s;
        else if (a->type == ACT_ARG_I64 || a->type == ACT_ARG_U64) {
            t->rank = (int32_t)a->v.i;
            t->has_rank = 1;
        }
    }
    pf_track_send(w, uuid);
}

/* ---- events ------------------------------------------------------------------ */

static void pf_arg_value(pf_writer *w, const act_tl_arg *a)
{
    act_pb *b = &w->te;
    switch (a->type) {
    case ACT_ARG_U64: act_pb_u64(b, DA_UINT, a->v.u); break;
    case ACT_ARG_I64: act_pb_i64(b, DA_INT, a->v.i); break;
    case ACT_ARG_F64: act_pb_double(b, DA_DOUBLE, a->v.d); break;
    case ACT_ARG_BOOL: act_pb_u64(b, DA_BOOL, a->v.u != 0); break;
    case ACT_ARG_HEX: act_pb_u64(b, DA_POINTER, a->v.u); break;
    case ACT_ARG_STR: {
        uint64_t iid = pf_intern_id(w, &w->seq->values, ID_STRING_VALUES, a->v.s);
        if (iid)
            act_pb_u64(b, DA_STRING_IID, iid);
        else
            act_pb_str(b, 6, a->v.s.p, a->v.s.n); /* DebugAnnotation.string_value */
        break;
    }
    case ACT_ARG_U64X3:
    case ACT_ARG_U64V: {
        uint32_t n = act_tl_arg_vec_len(a);
        for (uint32_t i = 0; i < n; i++) {
            size_t at = act_pb_msg_begin(b, DA_ARRAY);
            act_pb_u64(b, DA_UINT, act_tl_arg_vec_at(a, i));
            act_pb_msg_end(b, at);
        }
        if (!n) /* an empty array: no element says it is one */
            act_pb_bytes(b, DA_JSON, "[]", 2);
        break;
    }
    case ACT_ARG_JSON: act_pb_bytes(b, DA_JSON, a->v.s.p, a->v.s.n); break;
    default: /* ACT_ARG_NULL: a name and no value (docs/pftrace.md: 6 bytes less than
              * legacy_json_value "null", the same in trace processor: no arg) */
        break;
    }
}

static void pf_args(pf_writer *w, act_timeline *tl, const act_tl_event *e)
{
    for (uint32_t i = 0; i < e->nargs; i++) {
        const act_tl_arg *a = &tl->args[e->arg0 + i];
        size_t at = act_pb_msg_begin(&w->te, TE_ANNOTATIONS);
        uint64_t iid = pf_intern_id(w, &w->seq->keys, ID_ANNOTATION_NAMES, a->key);
        if (iid)
            act_pb_u64(&w->te, DA_NAME_IID, iid);
        else
            act_pb_str(&w->te, 10, a->key.p, a->key.n); /* DebugAnnotation.name */
        pf_arg_value(w, a);
        act_pb_msg_end(&w->te, at);
    }
}

/* Start an event's packet in w->te, its TrackEvent open: the interned
 * strings it adds go to w->in and join it at pf_event_put. The event's
 * track is made before (its descriptor is a packet of its own). */
/* hold: a slice's begin on a thread's own sequence, held (pf_held_release). */
static void pf_event_start(pf_writer *w, act_timeline *tl, uint64_t track, int type, uint64_t ts)
{
    pf_intern_bound(w);
    w->tl = tl;
    pf_seq *q = w->seq = &w->seqs[w->tracks[track - 1].seq];
    if (q->cleared)
        pf_seq_start(w, q);
    /* Timestamps are the Chrome trace's, in ns: from the time base
     * (baseTimeNanoseconds in the metadata), which also keeps their
     * varints short. Nothing is before the base (the builder sets it to
     * the first time it saw); were something, it would be put at the base. */
    uint64_t t = ts > tl->base_ns ? ts - tl->base_ns : 0;
    /* Held begins go out before an event of another time, and before any
     * other packet of theirs: it may use a string they interned. */
    if (q->n_held && (t != q->hold_ts || !(q->track && type == TYPE_BEGIN)))
        pf_held_release(w, q);
    pf_ends_flush(w, q, t);
    w->te.n = w->in.n = 0;
    w->hold = q->track && type == TYPE_BEGIN;
    if (w->hold) { /* its sequence id and timestamp when it is written */
        q->hold_ts = t;
    } else {
        act_pb_u64(&w->te, TP_SEQ_ID, q->id);
        pf_timestamp(&w->te, q, t);
    }
    act_pb_u64(&w->te, TP_SEQ_FLAGS, SEQ_NEEDS);
    w->te_at = act_pb_msg_begin(&w->te, TP_TRACK_EVENT);
    act_pb_u64(&w->te, TE_TYPE, (uint64_t)type);
    if (track != q->track)
        act_pb_u64(&w->te, TE_TRACK_UUID, track);
}

static void pf_event_name(pf_writer *w, const act_timeline *tl, const act_tl_event *e)
{
    uint64_t iid = pf_intern_id(w, &w->seq->names, ID_EVENT_NAMES, e->name);
    if (iid)
        act_pb_u64(&w->te, TE_NAME_IID, iid);
    else
        act_pb_str(&w->te, TE_NAME, e->name.p, e->name.n);
    if (e->cat > 0 && e->cat < ACT_CAT_MAX + tl->n_cat_extra)
        act_pb_u64(&w->te, TE_CATEGORY_IIDS, e->cat);
}

static void pf_event_put(pf_writer *w)
{
    if (w->in.err)
        pf_fail(w, ACT_E_NOMEM, "out of memory");
    act_pb_msg_end(&w->te, w->te_at);
    if (w->hold) { /* kept with its interned strings until its time has passed */
        pf_seq *q = w->seq;
        w->hold = 0;
        w->bad += w->te.invalid;
        w->te.invalid = 0;
        if (w->te.err || act_vec_reserve(q->held, q->cap_held, q->n_held + 1, 4) ||
            act_pb_reserve(&q->bodies, w->te.n + w->in.n)) {
            pf_fail(w, ACT_E_NOMEM, "out of memory");
            return;
        }
        struct pf_held *h = &q->held[q->n_held++];
        *h = (struct pf_held){q->bodies.n, w->te.n, q->bodies.n + w->te.n, w->in.n, w->hold_end};
        memcpy(q->bodies.p + q->bodies.n, w->te.p, w->te.n);
        memcpy(q->bodies.p + q->bodies.n + w->te.n, w->in.p, w->in.n);
        q->bodies.n += w->te.n + w->in.n;
        return;
    }
    if (w->in.n)
        act_pb_bytes(&w->te, TP_INTERNED, w->in.p, w->in.n);
    w->bad += w->te.invalid;
    w->te.invalid = 0;
    pf_packet_put_from(w, &w->te);
}

/* The flow id a host slice at (pid, tid, ts) carries: what an "s" there
 * names, whichever comes first. */
static uint64_t pf_flow_id(uint32_t pid, uint32_t tid, uint64_t ts)
{
    return pf_mix(pf_mix((uint64_t)pid << 32 | tid, ts), 0x61633267); /* "ac2g" */
}

static int pf_has_arg(act_timeline *tl, const act_tl_event *e, const char *key)
{
    size_t n = strlen(key);
    for (uint32_t i = 0; i < e->nargs; i++) {
        const act_str *k = &tl->args[e->arg0 + i].key;
        if (k->n == n && !memcmp(k->p, key, n))
            return 1;
    }
    return 0;
}

/* A slice (or instant) with the flow ends bound to it. */
static void pf_slice(pf_writer *w, act_timeline *tl, const act_tl_event *e, const uint64_t *term,
                     size_t n_term)
{
    uint64_t track = pf_event_track(w, e);
    if (!track)
        return;
    /* A slice that begins before the latest time written on its thread's
     * sequence could begin with a slice written there and enclose it, and
     * trace processor keeps packets of one time in file order: it nests
     * them the wrong way round. It goes on the thread's late track. */
    const pf_seq *q = &w->seqs[w->tracks[track - 1].seq];
    if (e->ph == 'X' && q->track && (e->ts > tl->base_ns ? e->ts - tl->base_ns : 0) < q->high &&
        !(track = pf_late_track(w, track)))
        return;
    pf_event_start(w, tl, track, e->ph == 'X' ? TYPE_BEGIN : TYPE_INSTANT, e->ts);
    uint64_t end = e->ts + e->dur;
    w->hold_end = end > tl->base_ns ? end - tl->base_ns : 0;
    pf_event_name(w, tl, e);
    pf_args(w, tl, e);
    if (e->ph == 'X' && e->cat >= ACT_CAT_OPENCL_RUNTIME && e->cat <= ACT_CAT_RUNTIME &&
        !(e->flags & ACT_EVF_NO_TID) && pf_has_arg(tl, e, "correlation"))
        act_pb_fixed64(&w->te, TE_FLOW_IDS, pf_flow_id(e->pid, e->tid, e->ts));
    for (size_t i = 0; i < n_term; i++)
        act_pb_fixed64(&w->te, TE_TERM_FLOW_IDS, term[i]);
    pf_event_put(w);
    if (e->ph != 'X')
        return;
    if (w->seq->track) { /* a thread's own sequence: its end when its time comes */
        pf_end_push(w, w->seq, w->hold_end);
        return;
    }
    pf_event_start(w, tl, track, TYPE_END, e->ts + e->dur);
    pf_event_put(w);
}

/* An "s": remember which host slice its flow starts on. */
static void pf_flow_start(pf_writer *w, const act_tl_event *e)
{
    if (act_u64map_put(&w->flows, e->id ? e->id : UINT64_MAX, pf_flow_id(e->pid, e->tid, e->ts)))
        pf_fail(w, ACT_E_NOMEM, "out of memory");
}

/* An "f": the flow id it ends (0: its "s" was not seen). */
static uint64_t pf_flow_end(pf_writer *w, const act_tl_event *e)
{
    uint64_t key = e->id ? e->id : UINT64_MAX, id = 0;
    if (act_u64map_get(&w->flows, key, &id))
        act_u64map_del(&w->flows, key);
    return id;
}

/* An "f" that binds to no slice written with it: an instant on its track
 * carries the flow's end (docs/pftrace.md). */
static void pf_flow_alone(pf_writer *w, act_timeline *tl, const act_tl_event *e, uint64_t id)
{
    uint64_t track = pf_event_track(w, e);
    if (!track || !id)
        return;
    pf_event_start(w, tl, track, TYPE_INSTANT, e->ts);
    pf_event_name(w, tl, e);
    act_pb_fixed64(&w->te, TE_TERM_FLOW_IDS, id);
    pf_event_put(w);
}

/* An "X" and the "s"/"f" run after it (the builder writes a device op's
 * flow pair right after its slice): the ends that bind to it go with it.
 * Returns the index after the run. */
static size_t pf_slice_run(pf_writer *w, act_timeline *tl, size_t i)
{
    const act_tl_event *x = &tl->ev[i];
    uint64_t term[PF_MAX_FLOWS];
    size_t n_term = 0, j = i + 1;
    for (; j < tl->n_ev && (tl->ev[j].ph == 's' || tl->ev[j].ph == 'f'); j++) {
        const act_tl_event *e = &tl->ev[j];
        if (e->ph == 's') {
            pf_flow_start(w, e);
            continue;
        }
        uint64_t id = pf_flow_end(w, e);
        if (id && n_term < PF_MAX_FLOWS && e->pid == x->pid && e->tid == x->tid && e->ts >= x->ts &&
            e->ts <= x->ts + x->dur)
            term[n_term++] = id;
        else
            pf_flow_alone(w, tl, e, id);
    }
    pf_slice(w, tl, x, term, n_term);
    return j;
}

static void pf_counter(pf_writer *w, act_timeline *tl, const act_tl_event *e)
{
    for (uint32_t i = 0; i < e->nargs && !w->err; i++) {
        const act_tl_arg *a = &tl->args[e->arg0 + i];
        w->bad +=
            (i ? 0 : act_pb_utf8_bad(e->name.p, e->name.n)) + act_pb_utf8_bad(a->key.p, a->key.n);
        char buf[512];
        act_str name = e->name;
        if (a->key.n != e->name.n || memcmp(a->key.p, e->name.p, e->name.n)) {
            int n = snprintf(buf, sizeof(buf), "%.*s %.*s", (int)e->name.n, e->name.p,
                             (int)a->key.n, a->key.p);
            name = (act_str){buf, (uint32_t)(n < (int)sizeof(buf) ? n : (int)sizeof(buf) - 1)};
        }
        uint64_t key = pf_hash(name.p, name.n, pf_mix(e->pid, 0x434e5452)); /* "CNTR" */
        uint64_t track = pf_named_track(w, e->pid, key, name, 1);
        if (!track)
            return;
        pf_event_start(w, tl, track, TYPE_COUNTER, e->ts);
        if (a->type == ACT_ARG_F64)
            act_pb_double(&w->te, TE_DOUBLE_COUNTER, a->v.d);
        else
            act_pb_i64(&w->te, TE_COUNTER_VALUE,
                       a->type == ACT_ARG_BOOL ? (int64_t)(a->v.u != 0) : a->v.i);
        pf_event_put(w);
    }
}

/* "b"/"e": a slice on the async track of (process, id, name). */
static void pf_async(pf_writer *w, act_timeline *tl, const act_tl_event *e)
{
    uint64_t key = pf_hash(e->name.p, e->name.n, pf_mix(pf_mix(e->pid, e->id), 0x4153594e));
    uint64_t track = pf_named_track(w, e->pid, key, e->name, 0);
    if (!track)
        return;
    pf_event_start(w, tl, track, e->ph == 'b' ? TYPE_BEGIN : TYPE_END, e->ts);
    if (e->ph == 'b') {
        pf_event_name(w, tl, e);
        pf_args(w, tl, e);
    } else { /* the Chrome writer writes the name of an "e" too */
        w->bad += act_pb_utf8_bad(e->name.p, e->name.n);
    }
    pf_event_put(w);
}

static size_t pf_event(pf_writer *w, act_timeline *tl, size_t i)
{
    const act_tl_event *e = &tl->ev[i];
    switch (e->ph) {
    case 'X': return pf_slice_run(w, tl, i);
    case 'i': pf_slice(w, tl, e, NULL, 0); break;
    case 'M': pf_metadata_event(w, tl, e); break;
    case 'C': pf_counter(w, tl, e); break;
    case 'b':
    case 'e': pf_async(w, tl, e); break;
    case 's': pf_flow_start(w, e); break;
    case 'f': pf_flow_alone(w, tl, e, pf_flow_end(w, e)); break;
    default: break;
    }
    return i + 1;
}

/* ---- the metadata ---------------------------------------------------------- */

static void pf_meta_member(pf_writer *w, const char *key, json_t *v)
{
    size_t at = act_pb_msg_begin(&w->pkt, CEB_METADATA);
    act_pb_str(&w->pkt, CM_NAME, key, strlen(key));
    if (json_is_string(v)) {
        act_pb_str(&w->pkt, CM_STRING, json_string_value(v), json_string_length(v));
    } else if (json_is_integer(v)) {
        act_pb_i64(&w->pkt, CM_INT, (int64_t)json_integer_value(v));
    } else if (json_is_boolean(v)) {
        act_pb_u64(&w->pkt, CM_BOOL, json_is_true(v));
    } else {
        char *t = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        if (!t)
            pf_fail(w, ACT_E_NOMEM, "out of memory");
        else
            act_pb_str(&w->pkt, CM_JSON, t, strlen(t));
        free(t);
    }
    act_pb_msg_end(&w->pkt, at);
}

/* The Chrome writer's members beside "traceEvents", made by that writer
 * (with no events) so that both formats say the same. */
static int pf_metadata(pf_writer *w, act_timeline *tl)
{
    act_chrome_opts o = {.trace_name = w->f.trace_name,
                         .argv = w->f.argv,
                         .argc = w->f.argc,
                         .extra_metadata = w->f.extra_metadata,
                         .child_status = w->f.child_status,
                         .stats = w->f.found,
                         .events_first = 1};
    act_chrome_stream *s;
    char *text = NULL;
    size_t len = 0;
    int rc = act_chrome_stream_open_mem(&s, tl, &o);
    int crc = act_chrome_stream_close_mem(s, &text, &len);
    if (rc || crc)
        return pf_fail(w, rc ? rc : crc, "cannot make the metadata");
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!json_is_object(root)) {
        json_decref(root);
        return pf_fail(w, ACT_E_NOMEM, "cannot read back the metadata");
    }
    /* The Chrome writer made it without events: add what the events had. */
    json_t *tool = json_object_get(root, "acceltrace");
    json_t *bad = json_object_get(tool, "invalid_utf8");
    if (json_is_integer(bad))
        json_integer_set(bad, json_integer_value(bad) + (json_int_t)w->bad);
    if (w->f.found)
        w->f.found->invalid_utf8 += w->bad;
    pf_packet_start(w);
    size_t at = act_pb_msg_begin(&w->pkt, TP_CHROME_EVENTS);
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (strcmp(key, "traceEvents"))
            pf_meta_member(w, key, v);
    }
    act_pb_msg_end(&w->pkt, at);
    json_decref(root);
    pf_packet_put(w);
    return w->err;
}

/* ---- the seam ---------------------------------------------------------------- */

static void pf_free(pf_writer *w)
{
    act_pb_free(&w->pkt);
    act_pb_free(&w->te);
    act_pb_free(&w->in);
    for (size_t i = 0; i < w->n_seqs; i++) {
        pf_intern_free(&w->seqs[i].names);
        pf_intern_free(&w->seqs[i].keys);
        pf_intern_free(&w->seqs[i].values);
        free(w->seqs[i].ends);
        free(w->seqs[i].held);
        act_pb_free(&w->seqs[i].bodies);
    }
    free(w->seqs);
    act_u64map_free(&w->procs);
    act_u64map_free(&w->threads);
    act_u64map_free(&w->others);
    act_u64map_free(&w->flows);
    free(w->tracks);
    free(w);
}

static int pftrace_writer_open(act_writer **out, act_timeline *tl, const act_writer_facts *f,
                               char *err, size_t errlen)
{
    (void)tl;
    *out = NULL;
    pf_writer *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(err, errlen, "%s: out of memory", f->path);
        return ACT_E_NOMEM;
    }
    w->base.ops = &act_writer_pftrace;
    w->f = *f;
    *out = &w->base;
    w->seqs = calloc(1, sizeof(*w->seqs));
    if (!w->seqs) {
        snprintf(err, errlen, "%s: out of memory", f->path);
        return ACT_E_NOMEM;
    }
    w->seqs[0] = (pf_seq){.id = PF_SEQ_ID, .cleared = 1};
    w->n_seqs = 1;
    int rc = act_outfile_open(&w->file, f->path, f->force, f->mode, 0, err, errlen);
    if (rc)
        return rc;
    /* The Chrome writer's buffer: the same reasons (chrome_json.c). */
    act_obuf_init_bg(&w->out, act_outfile_fd(w->file), 1u << 20);
    if (f->options & ACT_WRITER_GZIP)
        act_obuf_gzip(&w->out, 1);
    return w->out.err;
}

static int pftrace_writer_batch(act_writer *aw, act_timeline *tl)
{
    pf_writer *w = (pf_writer *)aw;
    for (size_t i = 0; i < tl->n_ev && !w->err && !w->out.err;)
        i = pf_event(w, tl, i);
    return w->err ? w->err : w->out.err;
}

static void pftrace_writer_set_facts(act_writer *aw, const act_writer_facts *f)
{
    ((pf_writer *)aw)->f = *f;
}

static int pftrace_writer_close(act_writer *aw, act_timeline *tl, int ok, char *err, size_t errlen)
{
    pf_writer *w = (pf_writer *)aw;
    w->tl = tl;
    int write_errno = !ok && w->out.err == ACT_E_IO ? w->out.sys_errno : 0;
    if (ok)
        pf_seqs_flush(w);
    if (ok && !w->err)
        pf_metadata(w, tl);
    int rc = ok ? (w->err ? w->err : w->out.err) : ACT_E_INVAL;
    if (rc && ok && w->err)
        snprintf(err, errlen, "%s: %s", w->f.path, w->why);
    if (!rc && w->file)
        rc = act_obuf_flush(&w->out);
    int saved = ok ? (rc == ACT_E_IO ? w->out.sys_errno : 0) : write_errno;
    act_obuf_free(&w->out);
    act_outfile_keep_replaced(w->file, w->f.replaced_fd);
    int crc = w->file ? act_outfile_close(w->file, ok, rc, saved, err, errlen) : rc;
    pf_free(w);
    return crc;
}

static int pftrace_writer_idle(act_writer *aw)
{
    return act_obuf_flush_ready(&((pf_writer *)aw)->out);
}

const act_writer_ops act_writer_pftrace = {
    .name = "pftrace",
    .flags = ACT_WRITER_EARLY,
    .open = pftrace_writer_open,
    .batch = pftrace_writer_batch,
    .set_facts = pftrace_writer_set_facts,
    .close = pftrace_writer_close,
    .idle = pftrace_writer_idle,
};
