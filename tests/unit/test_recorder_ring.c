/*
 * test_recorder_ring.c -- the recorder in ring mode (flight recorder,
 * core/record.h R1-R6), checked with the independent walker (spool_walk.h):
 * chunks are recycled oldest first, so the kept records are exactly the
 * most recent ones, in order, with none dropped and the rest counted as
 * overwritten; and every chunk defines every string its records use (the
 * strings are interned again per chunk), definitions (metadata) survive the
 * chunk they were written in, and the seqlock marks end even.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include "acceltrace.h"
#include "core/internal.h"
#include "core/rec_write.h"
#include "core/record.h"
#include "core/recorder/recorder_int.h"
#include "spool_walk.h"
#include "tmpdir.h"

#define CHUNK 4096u
#define RING  (4 * CHUNK)

static char dir[64];

static int setup(void **state)
{
    (void)state;
    tmpdir_make(dir, sizeof(dir), "ring");
    act_recorder_set_ring(RING);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    act_recorder_close(); /* after a failed assertion too: the next test opens its own */
    act_recorder_set_ring(0);
    return tmpdir_remove(dir);
}

static void mark(uint32_t name, uint64_t ts)
{
    act_rec_ts *r = act_rec_reserve(ACT_REC_MARK, sizeof(*r));
    assert_non_null(r);
    r->h.aux = name;
    r->ts = ts;
    act_rec_commit();
}

/* Open a ring spool of 64 chunks of `chunk` bytes; its path into path. */
static void ring_open(uint32_t chunk, char *path, size_t len)
{
    assert_int_equal(act_recorder_open(dir, ACT_SPOOL_HEADER_SIZE + 64 * (size_t)chunk, chunk), 0);
    snprintf(path, len, "%s", act_recorder_path());
}

typedef struct order {
    uint64_t n, first, last;
    int out_of_order;
} order;

static void on_order(const act_rec_hdr *r, uint32_t serial, void *arg)
{
    (void)serial;
    order *o = arg;
    if (r->kind != ACT_REC_MARK)
        return;
    uint64_t ts = ((const act_rec_ts *)r)->ts;
    if (o->n && ts != o->last + 1)
        o->out_of_order++;
    if (!o->n)
        o->first = ts;
    o->last = ts;
    o->n++;
}

/* 16-byte marks numbered 0..N-1 through a 4-chunk ring: the walk in
 * segment order sees one run of consecutive numbers ending at N-1. */
static void test_recycling_order(void **state)
{
    (void)state;
    const uint64_t n = 5000;
    char path[256];
    ring_open(CHUNK, path, sizeof(path));
    for (uint64_t i = 0; i < n; i++)
        mark(0, i);
    act_recorder_close();

    walk_stats ws;
    order o = {0};
    assert_int_equal(spool_walk(path, &ws, on_order, &o), 0);
    assert_int_equal(ws.torn, 0);
    assert_true(ws.hdr->flags & ACT_SPOOL_F_RING);
    assert_int_equal(ws.hdr->ring_chunks, 4);
    assert_int_equal(ws.hdr->chunks_used, 4); /* the spool never grew past the ring */
    assert_int_equal(o.out_of_order, 0);
    assert_int_equal(o.last, n - 1);
    assert_true(o.n > 3 * CHUNK / 16 - 64); /* about three chunks' worth (one is the newest) */
    assert_int_equal(ws.hdr->dropped[ACT_REC_MARK], 0);
    assert_true(ws.hdr->chunks_overwritten > 10);
    /* Overwritten records: every mark not kept, plus the chunks' THREAD records. */
    assert_int_equal(ws.hdr->records_overwritten, (n - o.n) + ws.hdr->chunks_overwritten);
    for (uint32_t i = 0; i < 4; i++) {
        const act_chunk_header *c =
            (const act_chunk_header *)((const char *)ws.map + ACT_SPOOL_HEADER_SIZE + i * CHUNK);
        assert_int_equal(c->gen % 2, 0); /* R2: no chunk left mid-recycle */
    }
    spool_unwalk(&ws);
}

#define IDS 4096 /* string ids these tests may use */

typedef struct strings_seen {
    const char *def[IDS]; /* string id -> bytes, this segment only */
    uint32_t len[IDS];
    const char *(*want)(uint64_t ts); /* the name of the mark at ts */
    uint64_t marks, unresolved, wrong, metadata;
} strings_seen;

static int is(const strings_seen *s, uint32_t id, const char *want)
{
    return id < IDS && s->def[id] && s->len[id] == strlen(want) &&
           !memcmp(s->def[id], want, s->len[id]);
}

/* Strings must resolve within their own segment (R3). */
static void on_strings(const act_rec_hdr *r, uint32_t serial, void *arg)
{
    (void)serial;
    strings_seen *s = arg;
    if (r->kind == ACT_REC_SEGMENT) {
        memset(s->def, 0, sizeof(s->def));
    } else if (r->kind == ACT_REC_STRING && r->aux < IDS) {
        s->def[r->aux] = (const char *)((const act_rec_string *)r + 1);
        s->len[r->aux] = ((const act_rec_string *)r)->len;
    } else if (r->kind == ACT_REC_MARK) {
        s->marks++;
        if (r->aux >= IDS || !s->def[r->aux])
            s->unresolved++;
        else if (!is(s, r->aux, s->want(((const act_rec_ts *)r)->ts)))
            s->wrong++;
    } else if (r->kind == ACT_REC_METADATA) {
        const act_rec_metadata *m = (const act_rec_metadata *)r;
        assert_true(is(s, r->aux, "dataset"));
        assert_true(is(s, m->value, "imagenet"));
        s->metadata++;
    }
}

/* The spool at path walked with on_strings (free the result). */
static strings_seen *walk_strings(const char *path, walk_stats *ws,
                                  const char *(*want)(uint64_t ts))
{
    strings_seen *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->want = want;
    assert_int_equal(spool_walk(path, ws, on_strings, s), 0);
    return s;
}

static const char *abc(uint64_t i)
{
    return i % 3 == 0 ? "alpha" : i % 3 == 1 ? "beta" : "gamma-long-name";
}

/* Names interned before the ring wrapped are defined again in each chunk
 * that uses them; ids stay below 256 here (3 names, a few per chunk). */
static void test_strings_reinterned(void **state)
{
    (void)state;
    char path[256];
    ring_open(CHUNK, path, sizeof(path));
    uint32_t k = act_str_intern_cstr("dataset"), v = act_str_intern_cstr("imagenet");
    act_rec_metadata *m = act_rec_reserve(ACT_REC_METADATA, sizeof(*m));
    assert_non_null(m);
    m->h.aux = k;
    m->value = v;
    m->is_json = 0;
    act_rec_commit();
    static const char *const names[] = {"alpha", "beta", "gamma-long-name"};
    for (uint64_t i = 0; i < 3000; i++)
        mark(act_str_intern_cstr(names[i % 3]), i);
    act_recorder_close();

    walk_stats ws;
    strings_seen *s = walk_strings(path, &ws, abc);
    assert_true(ws.hdr->chunks_overwritten > 3);
    assert_true(s->marks > 100);
    assert_int_equal(s->unresolved, 0);
    assert_int_equal(s->wrong, 0);
    assert_true(s->metadata >= 1); /* R5: carried from chunk to chunk */
    spool_unwalk(&ws);
    free(s);
}

static const char *inner(uint64_t i)
{
    (void)i;
    return "inner";
}

/* A literal found by its pointer (act_str_intern_literal) whose bytes the
 * string cache has since lost (other strings took its slot) is still
 * defined again atop the next chunk when the record that ran out of room
 * uses it (R3). longrun.ring_trigger saw "string id used before it was
 * defined" for a range push that started a chunk. */
static void test_literal_redefined_after_eviction(void **state)
{
    (void)state;
    enum { BIG = 64 * 1024 };
    act_recorder_set_ring(4 * BIG);
    char path[256];
    ring_open(BIG, path, sizeof(path));
    mark(act_str_intern_literal("inner"), 0);
    /* 1 500 other names in the same chunk: the cache's slot of "inner" is
     * taken (its pointer is still cached). */
    char buf[32];
    for (int i = 0; i < 1500; i++) {
        snprintf(buf, sizeof(buf), "evict-%d", i);
        (void)act_str_intern_cstr(buf);
    }
    /* Marks of "inner" (found by its pointer) past the chunk's end: the
     * mark that starts the second chunk is the one to check, so the ring
     * (four chunks) must not have recycled that chunk yet. */
    for (uint64_t i = 1; i < 3000; i++)
        mark(act_str_intern_literal("inner"), i);
    act_recorder_close();

    walk_stats ws;
    strings_seen *s = walk_strings(path, &ws, inner);
    assert_true(ws.hdr->chunks_used >= 2);
    assert_true(s->marks == 3000);
    assert_int_equal(s->unresolved, 0);
    assert_int_equal(s->wrong, 0);
    spool_unwalk(&ws);
    free(s);
}

/* The pre-fault helper surveying the oldest chunk (ring.c's state 2) at
 * the moment a thread needs a chunk, played by the test: the oldest chunk
 * is marked surveyed for 30 ms, records go on meanwhile, then the
 * survey ends. The ring must still recycle oldest first (the writer waits
 * for the survey), not write over a newer chunk and keep the oldest. */
static _Atomic uint32_t surveyed_chunk;

static void *survey_ends_later(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 30 * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_store_explicit(&act_rec_state.ring_owned[atomic_load(&surveyed_chunk)], 0,
                          memory_order_release);
    return NULL;
}

static void test_oldest_recycled_while_surveyed(void **state)
{
    (void)state;
    const uint64_t n = 4000;
    char path[256];
    ring_open(CHUNK, path, sizeof(path));
    uint64_t i = 0;
    for (; i < n / 2; i++) /* every ring chunk used, some recycled */
        mark(0, i);
    /* Take the oldest chunk no thread owns, once the real helper is not
     * surveying it (it may be descheduled mid-survey on a busy machine:
     * up to 5 s of 1 ms retries). */
    uint32_t idx = UINT32_MAX;
    for (int tries = 0; idx == UINT32_MAX && tries < 5000; tries++) {
        if (tries) {
            struct timespec ms = {0, 1000 * 1000};
            nanosleep(&ms, NULL);
        }
        pthread_mutex_lock(&act_rec_state.lock);
        for (uint32_t k = 0; k < act_rec_state.ring_n && idx == UINT32_MAX; k++) {
            uint32_t c = act_rec_state.ring_order[k];
            uint8_t st = atomic_load(&act_rec_state.ring_owned[c]);
            if (st == 2)
                break; /* the real helper is at it: try again */
            if (st == 0)
                idx = c;
        }
        if (idx != UINT32_MAX)
            atomic_store(&act_rec_state.ring_owned[idx], 2);
        pthread_mutex_unlock(&act_rec_state.lock);
    }
    assert_int_not_equal(idx, UINT32_MAX);
    atomic_store(&surveyed_chunk, idx);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, survey_ends_later, NULL), 0);
    for (; i < n; i++) /* two chunks' worth and more: recycles meanwhile */
        mark(0, i);
    pthread_join(t, NULL);
    act_recorder_close();

    walk_stats ws;
    order o = {0};
    assert_int_equal(spool_walk(path, &ws, on_order, &o), 0);
    assert_int_equal(ws.torn, 0);
    assert_int_equal(o.out_of_order, 0); /* the kept records: one run, the newest */
    assert_int_equal(o.last, n - 1);
    spool_unwalk(&ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_recycling_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oldest_recycled_while_surveyed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strings_reinterned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_literal_redefined_after_eviction, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
