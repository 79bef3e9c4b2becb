/*
 * ring.c -- the flight recorder (ACCELTRACE_RING; record.h, invariants
 * R1-R6): once the ring's chunks are all used, a thread that needs a chunk
 * takes the oldest chunk no thread owns and writes over it, instead of
 * dropping records. Everything here runs on the chunk-full slow path
 * (chunks.c, act_rec_chunk_acquire): the append hot path knows nothing of
 * rings.
 *
 * Recycling a chunk: walk what it holds (count the records overwritten,
 * keep a copy of the definitions it holds, R5), mark it odd (R2), start the
 * new segment, write the thread's range state (R4) and the strings the
 * pending record uses (R3), write the definitions again, mark it even.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

static uint64_t ring_request; /* bytes asked for; 0 = ring mode off */

static void surveys_free(void);

void act_recorder_set_ring(uint64_t bytes)
{
    ring_request = bytes;
}

uint64_t act_recorder_ring(void)
{
    return ring_request;
}

/* A ring never grows past its size, so its spool is not sized from the
 * disk (the caller passes ACT_SPOOL_AUTO_MIN for 0), and a ring larger
 * than the capacity makes the spool as large as the ring. */
uint64_t act_rec_ring_capacity(uint64_t capacity)
{
    return ring_request && ring_request + ACT_SPOOL_HEADER_SIZE > capacity
               ? ring_request + ACT_SPOOL_HEADER_SIZE
               : capacity;
}

/* Caller holds act_rec_state.lock; the spool was just mapped and its header
 * is not published yet. 0 or ACT_E_NOMEM. */
int act_rec_ring_setup(act_spool_header *h)
{
    surveys_free();
    free(act_rec_state.ring_order);
    free((void *)act_rec_state.ring_owned);
    act_rec_state.ring_order = NULL;
    act_rec_state.ring_owned = NULL;
    act_rec_state.ring_n = 0;
    act_rec_state.ring_chunks = 0;
    if (!ring_request)
        return 0;
    uint64_t n = ring_request / act_rec_state.chunk_size;
    n = n < 2 ? 2 : n > act_rec_state.chunk_count ? act_rec_state.chunk_count : n;
    act_rec_state.ring_order = calloc(act_rec_state.chunk_count, sizeof(uint32_t));
    act_rec_state.ring_owned = calloc(act_rec_state.chunk_count, 1);
    act_rec_state.ring_surveys = calloc(act_rec_state.chunk_count, sizeof(void *));
    if (!act_rec_state.ring_order || !act_rec_state.ring_owned || !act_rec_state.ring_surveys)
        return ACT_E_NOMEM;
    act_rec_state.ring_survey_count = act_rec_state.chunk_count;
    act_rec_state.ring_chunks = (uint32_t)n;
    h->ring_size = ring_request;
    h->ring_chunks = (uint32_t)n;
    h->flags |= ACT_SPOOL_F_RING;
    return 0;
}

/* How long a thread that needs the oldest chunk waits for the pre-fault
 * helper to finish surveying it (a few microseconds of reading, unless the
 * helper is descheduled) before it takes the next one instead. */
#define RING_SURVEY_WAIT_NS (20u * 1000u * 1000u)

/* Chunk idx's state once the helper is no longer surveying it: the helper
 * ends a survey without the lock (its 2 -> 0), so the caller may wait for
 * it under the lock. A helper that is gone (a forked child's) never ends
 * one: its chunk is free. Past the bound, 2 (the caller skips the chunk). */
static uint8_t survey_wait(uint32_t idx)
{
    uint64_t start = 0;
    uint8_t st;
    while ((st = atomic_load_explicit(&act_rec_state.ring_owned[idx], memory_order_acquire)) == 2) {
        if (!act_rec_prefault_running())
            return 0;
        uint64_t now = act_clock_now();
        if (!start)
            start = now;
        else if (now - start > RING_SURVEY_WAIT_NS)
            return 2;
        sched_yield();
    }
    return st;
}

/* Caller holds the lock. The chunk to write over: the oldest one no thread
 * owns, taken off the ring's order (once the helper has finished surveying
 * it, if it is at it: skipping it would write over a newer chunk and keep
 * an older one, a hole in the kept window); UINT32_MAX while the ring
 * still has fresh chunks, or when every chunk is owned (then a fresh chunk
 * beyond the ring is used, if the spool has one). */
uint32_t act_rec_ring_victim(uint64_t chunks_used)
{
    if (chunks_used < act_rec_state.ring_chunks)
        return UINT32_MAX;
    uint32_t *o = act_rec_state.ring_order;
    for (uint32_t i = 0; i < act_rec_state.ring_n; i++) {
        uint32_t idx = o[i];
        if (!survey_wait(idx)) {
            memmove(o + i, o + i + 1, (act_rec_state.ring_n - i - 1) * sizeof(*o));
            act_rec_state.ring_n--;
            return idx;
        }
    }
    return UINT32_MAX;
}

/* Caller holds the lock: chunk `idx` is now owned, and the newest. */
void act_rec_ring_own(uint32_t idx)
{
    act_rec_state.ring_order[act_rec_state.ring_n++] = idx;
    atomic_store_explicit(&act_rec_state.ring_owned[idx], 1, memory_order_relaxed);
}

/* Caller holds the lock: no thread writes to `idx` any more. */
void act_rec_ring_disown(uint32_t idx)
{
    atomic_store_explicit(&act_rec_state.ring_owned[idx], 0, memory_order_relaxed);
}

/* ---- what a recycled chunk held ------------------------------------- */

/* Records defined once that must outlive their chunk (R5); none is larger
 * than this (a larger one, from a later writer, is not carried over). */
#define ACT_REC_DEF_MAX 256u
static int is_definition(const act_rec_hdr *r)
{
    switch (r->kind) {
    case ACT_REC_DEVICE:
    case ACT_REC_QUEUE:
    case ACT_REC_METADATA:
    case ACT_REC_CLOCK:
    case ACT_REC_CAPTURE: return 1;
    case ACT_REC_THREAD: return r->aux == 0;
    default: return 0;
    }
}

/* The string fields of a definition: up to two ids, by field. */
static int def_strings(act_rec_hdr *r, uint32_t **ids)
{
    switch (r->kind) {
    case ACT_REC_DEVICE: ids[0] = &r->aux, ids[1] = &((act_rec_device *)r)->vendor; return 2;
    case ACT_REC_QUEUE:
    case ACT_REC_CLOCK: ids[0] = &r->aux; return 1;
    case ACT_REC_METADATA: ids[0] = &r->aux, ids[1] = &((act_rec_metadata *)r)->value; return 2;
    case ACT_REC_THREAD: ids[0] = &((act_rec_thread *)r)->name; return 1;
    default: return 0;
    }
}

/* The bytes of string `id` of thread `serial` in chunk data[0, used). */
static const act_rec_string *find_string(const char *data, uint32_t used, uint32_t serial,
                                         uint32_t id)
{
    uint32_t cur = 0;
    for (uint32_t off = 0; off + sizeof(act_rec_hdr) <= used;) {
        const act_rec_hdr *r = (const act_rec_hdr *)(data + off);
        uint32_t size = (uint32_t)r->size8 * 8;
        if (!size || size > used - off)
            break;
        if (r->kind == ACT_REC_SEGMENT)
            cur = r->aux;
        else if (r->kind == ACT_REC_STRING && cur == serial && r->aux == id &&
                 ((const act_rec_string *)r)->len <= size - sizeof(act_rec_string))
            return (const act_rec_string *)r;
        off += size;
    }
    return NULL;
}

/* A saved definition: the record, then each string's bytes (u32 length
 * first), all 8-byte aligned. */
struct act_ring_defs {
    char *buf;
    size_t len, cap;
};

#define ALIGN8(n) (((size_t)(n) + 7) & ~(size_t)7)

/* Room for `n` more bytes: 0, or -1 without memory. */
static int defs_room(act_ring_defs *d, size_t n)
{
    if (d->len + n <= d->cap)
        return 0;
    size_t cap = d->cap ? d->cap * 2 : 4096;
    while (cap < d->len + n)
        cap *= 2;
    char *nb = realloc(d->buf, cap);
    if (!nb)
        return -1;
    d->buf = nb;
    d->cap = cap;
    return 0;
}

/* Append n bytes, zero-padded to 8 (room was made). */
static void defs_put(act_ring_defs *d, const void *p, size_t n)
{
    memcpy(d->buf + d->len, p, n);
    memset(d->buf + d->len + n, 0, ALIGN8(n) - n);
    d->len += ALIGN8(n);
}

/* Save definition `r` with the bytes of its strings, whole or not at all
 * (without memory it is overwritten with the rest of its chunk). */
static void def_save(act_ring_defs *d, const char *data, uint32_t used, uint32_t serial,
                     const act_rec_hdr *r)
{
    uint32_t size = (uint32_t)r->size8 * 8;
    act_rec_hdr copy[ACT_REC_DEF_MAX / sizeof(act_rec_hdr)];
    if (size > sizeof(copy))
        return;
    memcpy(copy, r, size);
    uint32_t *ids[2];
    const act_rec_string *s[2] = {NULL, NULL};
    int n = def_strings(copy, ids);
    size_t need = size;
    for (int i = 0; i < n; i++) {
        s[i] = *ids[i] ? find_string(data, used, serial, *ids[i]) : NULL;
        need += 8 + (s[i] ? ALIGN8(s[i]->len) : 0);
    }
    if (defs_room(d, need) != 0)
        return;
    defs_put(d, copy, size);
    for (int i = 0; i < n; i++) {
        uint32_t len = s[i] ? s[i]->len : UINT32_MAX; /* no string: the id becomes 0 */
        defs_put(d, &len, sizeof(len));
        if (s[i])
            defs_put(d, s[i] + 1, len);
    }
}

/* What a chunk about to be written over held: the records lost, and its
 * definitions (R5). Made by the recording thread that recycles the chunk,
 * or ahead of it by the pre-fault helper (act_rec_ring_survey_ahead). */
typedef struct act_ring_survey {
    uint64_t records;
    uint32_t used;
    act_ring_defs *defs; /* NULL without memory: the definitions are lost (counted) */
} act_ring_survey;

/* Walk chunk `c` (nobody writes to it): count its records, save its
 * definitions. NULL without memory. */
static act_ring_survey *chunk_survey(const act_chunk_header *c)
{
    act_ring_survey *sv = calloc(1, sizeof(*sv));
    if (!sv)
        return NULL;
    act_ring_defs *d = calloc(1, sizeof(*d));
    const char *data = (const char *)(c + 1);
    uint32_t used = atomic_load_explicit((_Atomic uint32_t *)&c->used, memory_order_acquire);
    uint32_t serial = 0;
    const act_rec_hdr *last_capture = NULL;
    for (uint32_t off = 0; off + sizeof(act_rec_hdr) <= used;) {
        const act_rec_hdr *r = (const act_rec_hdr *)(data + off);
        uint32_t size = (uint32_t)r->size8 * 8;
        if (!size || size > used - off)
            break;
        if (r->kind == ACT_REC_SEGMENT)
            serial = r->aux;
        else if (r->kind != ACT_REC_PAD)
            sv->records++;
        if (r->kind == ACT_REC_CAPTURE)
            last_capture = r; /* the window's state at the chunk's end is enough */
        else if (ACT_UNLIKELY(is_definition(r)) && d)
            def_save(d, data, used, serial, r);
        off += size;
    }
    if (last_capture && d)
        def_save(d, data, used, serial, last_capture);
    sv->used = used;
    sv->defs = d;
    return sv;
}

static void survey_free(act_ring_survey *sv)
{
    if (!sv)
        return;
    if (sv->defs)
        free(sv->defs->buf);
    free(sv->defs);
    free(sv);
}

static void surveys_free(void)
{
    for (uint32_t i = 0; act_rec_state.ring_surveys && i < act_rec_state.ring_survey_count; i++)
        survey_free(act_rec_state.ring_surveys[i]);
    free(act_rec_state.ring_surveys);
    act_rec_state.ring_surveys = NULL;
    act_rec_state.ring_survey_count = 0;
}

/* Pre-fault helper: survey the oldest chunk no thread owns and nobody
 * surveyed since it was last written, so that the thread that recycles it
 * only reads the result. Never waits for act_rec_state.lock (the helper
 * is joined under it at close). */
int act_rec_ring_survey_ahead(void)
{
    if (!act_rec_state.ring_chunks || pthread_mutex_trylock(&act_rec_state.lock) != 0)
        return 0;
    uint32_t idx = UINT32_MAX;
    for (uint32_t i = 0; i < act_rec_state.ring_n && idx == UINT32_MAX; i++) {
        uint32_t k = act_rec_state.ring_order[i];
        if (!atomic_load_explicit(&act_rec_state.ring_owned[k], memory_order_relaxed) &&
            !act_rec_state.ring_surveys[k])
            idx = k;
    }
    if (idx != UINT32_MAX)
        atomic_store_explicit(&act_rec_state.ring_owned[idx], 2, memory_order_relaxed);
    pthread_mutex_unlock(&act_rec_state.lock);
    if (idx == UINT32_MAX)
        return 0;
    act_ring_survey *sv = chunk_survey(act_rec_chunk_at(idx));
    act_rec_state.ring_surveys[idx] = sv;
    atomic_store_explicit(&act_rec_state.ring_owned[idx], 0, memory_order_release);
    return sv != NULL;
}

/* Start writing over chunk `c` (owned by the caller): its survey (the
 * helper's, or made now), R2's odd mark, then an empty chunk. Its
 * definitions are handed back in `defs`. */
void act_rec_ring_recycle(act_chunk_header *c, act_ring_defs **defs)
{
    act_ring_survey *sv = act_rec_state.ring_surveys[c->index];
    act_rec_state.ring_surveys[c->index] = NULL;
    if (!sv)
        sv = chunk_survey(c);
    act_spool_header *h = act_rec_hdr_get();
    if (h && sv) {
        atomic_fetch_add((_Atomic uint64_t *)&h->chunks_overwritten, 1);
        atomic_fetch_add((_Atomic uint64_t *)&h->bytes_overwritten, sv->used);
        atomic_fetch_add((_Atomic uint64_t *)&h->records_overwritten, sv->records);
    }
    *defs = sv ? sv->defs : NULL;
    if (sv)
        sv->defs = NULL;
    survey_free(sv);
    _Atomic uint32_t *gen = (_Atomic uint32_t *)&c->gen;
    /* Odd before anything in the chunk changes: the read-modify-write's
     * acquire half keeps every later store after it (no fence, which
     * ThreadSanitizer does not support). */
    atomic_fetch_or_explicit(gen, 1u, memory_order_acq_rel);
    atomic_store_explicit((_Atomic uint32_t *)&c->used, 0, memory_order_relaxed);
}

/* ---- the top of a ring segment ------------------------------------------ */

/* The bytes of this thread's string `id`, from its cache (NULL if gone). */
static const act_str_slot *slot_by_id(act_thread *t, uint32_t id)
{
    for (size_t i = 0; id && i < ACT_STR_CACHE; i++)
        if (t->strs[i].id == id && t->strs[i].copy)
            return &t->strs[i];
    return NULL;
}

/* Forget which strings the thread defined: the new chunk defines them again
 * on first use (R3). The byte copies stay, for slot_by_id. */
static void strings_forget(act_thread *t)
{
    for (size_t i = 0; i < ACT_STR_CACHE; i++)
        t->strs[i].hash = 0;
    memset(t->ptrs, 0, sizeof(t->ptrs));
}

/* STRING record `id` written straight into the chunk (room was checked). */
static void put_string_id(act_thread *t, uint32_t id, const char *s, uint32_t len)
{
    size_t size = (sizeof(act_rec_string) + len + 7) & ~(size_t)7;
    act_rec_string *r = (act_rec_string *)(t->data + t->pos);
    r->h = (act_rec_hdr){ACT_REC_STRING, (uint16_t)(size / 8), id};
    r->len = len;
    r->pad = 0;
    memcpy(r + 1, s, len);
    memset((char *)(r + 1) + len, 0, size - sizeof(*r) - len);
    t->pos += (uint32_t)size;
}

static uint32_t put_string(act_thread *t, const char *s, uint32_t len)
{
    uint32_t id = t->next_str++;
    put_string_id(t, id, s, len);
    return id;
}

/* The bytes of a string the thread finds by its pointer (a literal, or
 * one its caller keeps unchanged; literals.c): the pointer cache outlives
 * the string cache's copy, which another string may have taken the slot
 * of since (NULL if gone). */
static const char *ptr_by_id(act_thread *t, uint32_t id, uint32_t *len)
{
    for (size_t i = 0; id && i < ACT_PTR_CACHE; i++) {
        if (t->ptrs[i].ptr && t->ptrs[i].id == id) {
            size_t n = strlen(t->ptrs[i].ptr);
            *len = (uint32_t)(n < UINT32_MAX ? n : UINT32_MAX);
            return t->ptrs[i].ptr;
        }
    }
    return NULL;
}

/* The bytes of the thread's string `id`: an open range's name kept from the
 * previous chunk, the string cache, or the pointer cache (a record about to
 * be written may use an id found by its pointer whose copy the string
 * cache lost: it must be defined again all the same, R3). */
static const char *string_bytes(act_thread *t, uint32_t id, uint32_t *len)
{
    for (uint32_t i = 0; id && i < t->n_ring_names; i++) {
        if (t->ring_names[i].id == id) {
            *len = t->ring_names[i].len;
            return t->ring_names[i].copy;
        }
    }
    const act_str_slot *s = slot_by_id(t, id);
    if (s) {
        *len = s->len;
        return s->copy;
    }
    *len = 0;
    return ptr_by_id(t, id, len);
}

/* Define string `id` again in this chunk if its bytes are known and fit in
 * `*budget`; 1 if it was. */
static int redefine(act_thread *t, uint32_t id, uint32_t *budget)
{
    uint32_t len;
    const char *b = string_bytes(t, id, &len);
    uint32_t size = b ? (uint32_t)((sizeof(act_rec_string) + len + 7) & ~7u) : 0;
    if (!b || size > *budget)
        return 0;
    *budget -= size;
    put_string_id(t, id, b, len);
    return 1;
}

/* The thread's range state (R4): the open ranges' names defined again in
 * this chunk (same ids), then the record. The names are kept for the next
 * chunk (the string cache may lose them). */
static void put_thread_ring(act_thread *t, uint32_t *budget)
{
    uint32_t depth = t->range_depth < ACT_RANGE_STACK ? t->range_depth : ACT_RANGE_STACK;
    act_rec_ring_open open[ACT_RING_OPEN_MAX] = {{0, 0}};
    act_ring_name names[ACT_RING_OPEN_MAX] = {{0, 0, NULL}};
    uint32_t n = 0;
    for (uint32_t i = 0; i < depth && n < ACT_RING_OPEN_MAX; i++) {
        uint64_t e = t->range_stack[i];
        uint32_t seq = (uint32_t)e, name = (uint32_t)(e >> 32), len = 0;
        if (seq == RANGE_MARK_OUTSIDE || seq == RANGE_MARK_DROPPED)
            continue;
        const char *b = string_bytes(t, name, &len);
        char *copy = b ? malloc(len + 1) : NULL;
        if (copy && redefine(t, name, budget)) {
            memcpy(copy, b, len);
            names[n] = (act_ring_name){name, len, copy};
        } else {
            free(copy);
            names[n] = (act_ring_name){0, 0, NULL};
            name = 0;
        }
        open[n++] = (act_rec_ring_open){seq, name};
    }
    act_rec_ring_thread_free(t);
    memcpy(t->ring_names, names, n * sizeof(*names));
    t->n_ring_names = n;
    size_t size = sizeof(act_rec_thread_ring) + n * sizeof(act_rec_ring_open);
    act_rec_thread_ring *r = (act_rec_thread_ring *)(t->data + t->pos);
    r->t.h = (act_rec_hdr){ACT_REC_THREAD, (uint16_t)(size / 8), t->serial};
    r->t.tid = t->tid;
    r->t.name = 0;
    r->range_seq = t->range_seq;
    r->n_open = n;
    r->depth = t->range_depth;
    r->before = t->ring_before + 1u;
    memcpy(r + 1, open, n * sizeof(*open));
    t->pos += (uint32_t)size;
}

void act_rec_ring_thread_free(act_thread *t)
{
    for (uint32_t i = 0; i < t->n_ring_names; i++)
        free(t->ring_names[i].copy);
    t->n_ring_names = 0;
}

/* Room the top of a ring segment may take at most, beyond the pending
 * record: the THREAD record, the open ranges' names, the recent strings
 * (a quarter of a chunk, at most 8 KiB). */
#define RING_THREAD_MAX                                                                            \
    (sizeof(act_rec_thread_ring) + ACT_RING_OPEN_MAX * sizeof(act_rec_ring_open))
uint32_t act_rec_ring_top_room(void)
{
    uint32_t q = (act_rec_state.chunk_size - (uint32_t)sizeof(act_chunk_header)) / 4;
    return q < 8192u ? q : 8192u;
}

/* Written after the SEGMENT record of every chunk a thread takes in ring
 * mode: the range state, then the strings interned last (a record about to
 * be written may use them; same ids). The thread's string cache forgets
 * the rest (R3). */
void act_rec_ring_segment_top(act_thread *t)
{
    uint32_t room = act_rec_ring_top_room();
    uint32_t names = room > RING_THREAD_MAX ? (room - (uint32_t)RING_THREAD_MAX) / 2 : 0;
    uint32_t recent = names;
    put_thread_ring(t, &names);
    for (uint32_t i = 0; i < ACT_RECENT_STRS; i++) {
        uint32_t id = t->recent[i], dup = 0;
        for (uint32_t j = 0; j < i; j++)
            dup |= t->recent[j] == id;
        for (uint32_t j = 0; j < t->n_ring_names; j++)
            dup |= t->ring_names[j].id == id;
        if (id && !dup)
            redefine(t, id, &recent);
    }
    strings_forget(t);
}

/* Write the saved definitions again (R5) with their strings, leaving
 * `keep` bytes of the chunk for the pending record; what does not fit is
 * counted as dropped. Then the chunk is valid again (R2's even mark). */
void act_rec_ring_finish(act_thread *t, act_chunk_header *c, act_ring_defs *d, size_t keep)
{
    for (size_t off = 0; d && off < d->len;) {
        act_rec_hdr *r = (act_rec_hdr *)(d->buf + off);
        size_t size = (size_t)r->size8 * 8, need = size;
        off += size;
        uint32_t *ids[2];
        const char *bytes[2];
        uint32_t lens[2];
        int n = def_strings(r, ids);
        for (int i = 0; i < n; i++) {
            memcpy(&lens[i], d->buf + off, sizeof(uint32_t));
            off += 8;
            bytes[i] = d->buf + off;
            if (lens[i] != UINT32_MAX) {
                off += (lens[i] + 7) & ~(size_t)7;
                need += sizeof(act_rec_string) + lens[i] + 8;
            }
        }
        uint32_t cap = atomic_load_explicit(&t->cap, memory_order_relaxed);
        if (t->pos + need + keep > cap) {
            act_rec_drop(r->kind);
            continue;
        }
        for (int i = 0; i < n; i++)
            *ids[i] = lens[i] == UINT32_MAX ? 0 : put_string(t, bytes[i], lens[i]);
        memcpy(t->data + t->pos, r, size);
        t->pos += (uint32_t)size;
    }
    if (d) {
        free(d->buf);
        free(d);
    }
    atomic_store_explicit((_Atomic uint32_t *)&c->used, t->pos, memory_order_release);
    _Atomic uint32_t *gen = (_Atomic uint32_t *)&c->gen;
    uint32_t g = atomic_load_explicit(gen, memory_order_relaxed);
    if (g & 1u)
        atomic_store_explicit(gen, g + 1u, memory_order_release);
}
