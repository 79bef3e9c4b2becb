/*
 * test_spool_live.c -- reading a spool while it is written
 * (act_spool_open_live / live_scan / live_next, spool.h): records come out
 * in exactly the order of a batch read of the finished file, however the
 * writing is cut into steps: none of a segment its thread has not ended
 * (record.h S1: its seq is taken when it ends), none of a segment whose
 * predecessor in sequence is not seen ended yet, and a segment ended is
 * read to its last record, though its chunk had gone idle. The file is
 * rewritten in place between the steps, as the recorder's MAP_SHARED
 * writes would change it. What the reader keeps does not grow with the
 * segments it has read (test_live_segments_bounded). A final scan made
 * as the program seals its spool, before it is gone, knows afterwards
 * whether anything was published since (test_live_settled).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "spool_build.h"
#include "timeline/spool.h"

#define LIVE_TRIES 20 /* scans: more than the reader's sweep of idle chunks */

typedef struct seen {
    uint16_t kind;
    uint32_t serial;
    size_t off; /* of the record in the file */
} seen;

/* The file as it stood after each step of the writing (snap[k]: the whole
 * buffer then, not sealed). */
#define STEPS  5
#define CHUNKS 4
static unsigned char *snap[STEPS];

static void note_step(sb *s, int k)
{
    snap[k] = malloc(s->size);
    assert_non_null(snap[k]);
    memcpy(snap[k], s->buf, s->size);
    ((act_spool_header *)(void *)snap[k])->flags = 0;
}

static void snaps_free(void)
{
    for (int k = 0; k < STEPS; k++) {
        free(snap[k]);
        snap[k] = NULL;
    }
}

/* Two threads writing at once. Thread 1 ends segment A (chunk 0) when it
 * moves to chunk 2 (C); thread 2's B (chunk 1) has taken the seq after
 * A's when thread 1 ends C, but has not stored it yet: the walk waits for
 * it, then takes B and C. Thread 1's last segment (D) is never ended. */
static void two_threads(sb *s)
{
    sb_init(s, 900, 1024, CHUNKS);
    sb_open_thread(s, 0, 1, 900); /* A */
    sb_str(s, 1, "a");
    sb_ts(s, ACT_REC_RANGE_PUSH, 1, 2000000);
    note_step(s, 0);              /* nothing ended */
    sb_open_thread(s, 1, 2, 901); /* B */
    sb_str(s, 1, "b");
    sb_ts(s, ACT_REC_RANGE_PUSH, 1, 2000100);
    sb_ts(s, ACT_REC_RANGE_POP, 0, 2000200);
    note_step(s, 1); /* nothing ended */
    sb_use_chunk(s, 0);
    sb_ts(s, ACT_REC_RANGE_POP, 0, 2000300);
    sb_ts(s, ACT_REC_MARK, 1, 2000400);
    sb_open_thread(s, 2, 1, 900); /* C: A ends, seq 0 */
    sb_str(s, 1, "c");
    sb_ts(s, ACT_REC_MARK, 1, 2000500);
    note_step(s, 2);           /* A */
    uint64_t b_seq = s->seq++; /* thread 2 takes seq 1 for B... */
    sb_use_chunk(s, 2);
    sb_ts(s, ACT_REC_MARK, 1, 2000600);
    sb_open_thread(s, 3, 1, 900); /* D: C ends, seq 2 */
    sb_ts(s, ACT_REC_MARK, 1, 2000700);
    note_step(s, 3); /* ... and has not stored it: A only */
    act_rec_segment *b = (act_rec_segment *)(void *)(s->buf + s->open[2] - 1);
    b->seq = b_seq;
    s->open[2] = 0;
    note_step(s, 4); /* A, B, C */
}

/* The file as it stood after step k (k = STEPS: finished, sealed), written
 * over path in place (the live mapping stays valid). */
static void write_step(sb *s, const char *path, int k)
{
    const unsigned char *buf = k < STEPS ? snap[k] : s->buf;
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, buf, s->size, 0), (ssize_t)s->size);
    close(fd);
}

static size_t take(act_spool *sp, seen *v, size_t n, int final)
{
    act_sp_rec r;
    assert_int_equal(act_spool_live_scan(sp, final), 0);
    while (act_spool_live_next(sp, &r, final) > 0) {
        v[n].kind = r.r->kind;
        v[n].serial = r.serial;
        v[n].off = (size_t)((const unsigned char *)r.r - sp->map);
        n++;
    }
    return n;
}

/* What the batch read of the finished file hands out, in order. */
static size_t batch_read(act_spool *batch, const char *path, seen *want)
{
    char err[256];
    assert_int_equal(act_spool_open(batch, path, err, sizeof(err)), 0);
    size_t nw = 0;
    act_spool_iter *it = act_spool_iter_new(batch);
    act_sp_rec r;
    while (act_spool_iter_next(it, &r) > 0) {
        want[nw] = (seen){r.r->kind, r.serial, (size_t)((const unsigned char *)r.r - batch->map)};
        nw++;
    }
    act_spool_iter_free(it);
    return nw;
}

static void same_records(const seen *got, size_t ng, const seen *want, size_t nw)
{
    assert_int_equal(ng, nw);
    for (size_t i = 0; i < nw; i++) {
        assert_int_equal(got[i].kind, want[i].kind);
        assert_int_equal(got[i].serial, want[i].serial);
        assert_int_equal(got[i].off, want[i].off);
    }
}

static void test_live_order(void **state)
{
    (void)state;
    sb s;
    two_threads(&s);
    char dir[] = "/tmp/act_live_XXXXXX", path[64], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/900.acts", dir);
    /* The batch read of the finished file: the order to match. */
    write_step(&s, path, STEPS);
    act_spool batch;
    seen want[64], got[64];
    size_t nw = batch_read(&batch, path, want), ng = 0;

    write_step(&s, path, 0);
    act_spool sp;
    assert_int_equal(act_spool_open_live(&sp, path, err, sizeof(err)), 0);
    ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 0); /* A may grow */
    write_step(&s, path, 1);
    ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 0); /* so may B */
    write_step(&s, path, 2);
    ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 4); /* A ended: THREAD, PUSH, POP, MARK (strings are not handed out) */
    write_step(&s, path, 3);
    for (int i = 0; i < 3; i++)
        ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 4); /* C ended (seq 2), but seq 1 is not seen ended */
    write_step(&s, path, 4);
    ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 4 + 3 + 3); /* B (THREAD, PUSH, POP), then C (THREAD, MARK, MARK) */
    write_step(&s, path, STEPS);
    ng = take(&sp, got, ng, 1);
    act_spool_live_end(&sp);
    same_records(got, ng, want, nw); /* D, never ended, last */
    assert_int_equal(got[ng - 1].serial, 1);
    /* The survey comes out as the batch's. */
    assert_true(sp.sealed);
    assert_int_equal(sp.n_threads, batch.n_threads);
    assert_int_equal(sp.first_ts, batch.first_ts);
    assert_int_equal(sp.last_ts, batch.last_ts);
    for (int k = 0; k < ACT_REC_KIND_MAX; k++)
        assert_int_equal(sp.records[k], batch.records[k]);
    assert_int_equal(sp.n_errors, 0);
    act_spool_close(&sp);
    act_spool_close(&batch);
    unlink(path);
    rmdir(dir);
    sb_free(&s);
    snaps_free();
}

/* Thread 2's chunk stays unchanged long enough to be looked at only now
 * and then; then, in one step, thread 2 writes one more record there and
 * moves on (its segment ends), and thread 1 moves on too. The walk must
 * not take thread 2's segment before a scan of its chunk has read that
 * record. */
static void idle_chunk(sb *s)
{
    sb_init(s, 901, 1024, CHUNKS);
    sb_open_thread(s, 0, 1, 900);
    sb_str(s, 1, "a");
    sb_ts(s, ACT_REC_MARK, 1, 2000000);
    sb_open_thread(s, 1, 2, 901);
    sb_str(s, 1, "b");
    sb_ts(s, ACT_REC_MARK, 1, 2000100);
    note_step(s, 0);
    sb_use_chunk(s, 1);
    sb_ts(s, ACT_REC_MARK, 1, 2000200); /* the record a careless walk would miss */
    sb_open_thread(s, 3, 2, 901);       /* thread 2's first segment ends: seq 0 */
    sb_str(s, 1, "b");
    sb_ts(s, ACT_REC_MARK, 1, 2000300);
    sb_open_thread(s, 2, 1, 900); /* thread 1's: seq 1 */
    sb_str(s, 1, "a");
    sb_ts(s, ACT_REC_MARK, 1, 2000400);
    for (int k = 1; k < STEPS; k++)
        note_step(s, k);
}

static void test_live_idle_chunk(void **state)
{
    (void)state;
    sb s;
    idle_chunk(&s);
    char dir[] = "/tmp/act_live_XXXXXX", path[64], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/901.acts", dir);
    write_step(&s, path, STEPS);
    act_spool batch;
    seen want[64], got[64];
    size_t nw = batch_read(&batch, path, want), ng = 0;
    write_step(&s, path, 0);
    act_spool sp;
    assert_int_equal(act_spool_open_live(&sp, path, err, sizeof(err)), 0);
    for (int i = 0; i < 8; i++) /* chunk 1 goes idle */
        ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 0); /* neither segment ended */
    write_step(&s, path, 1);
    ng = take(&sp, got, ng, 0);
    /* Thread 2's first segment, its last record included, then thread 1's. */
    assert_int_equal(ng, 3 + 2);
    assert_int_equal(got[2].kind, ACT_REC_MARK);
    assert_int_equal(got[2].serial, 2);
    assert_int_equal(got[2].off, want[2].off);
    for (int i = 0; i < LIVE_TRIES; i++)
        ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 5); /* the last two are never ended */
    ng = take(&sp, got, ng, 1);
    act_spool_live_end(&sp);
    same_records(got, ng, want, nw);
    assert_int_equal(ng, 9);
    static const uint32_t serials[9] = {2, 2, 2, 1, 1, 1, 1, 2, 2};
    for (size_t i = 0; i < 9; i++)
        assert_int_equal(got[i].serial, serials[i]);
    act_spool_close(&sp);
    act_spool_close(&batch);
    unlink(path);
    rmdir(dir);
    sb_free(&s);
    snaps_free();
}

/* A spool not there yet, or not complete enough to have a header: the
 * caller tries again later. */
static void test_live_not_ready(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_live_XXXXXX", path[64], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/1.acts", dir);
    act_spool sp;
    assert_int_equal(act_spool_open_live(&sp, path, err, sizeof(err)), ACT_E_IO);
    act_spool_close(&sp);
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(act_spool_open_live(&sp, path, err, sizeof(err)), ACT_E_IO);
    act_spool_close(&sp);
    unlink(path);
    rmdir(dir);
}

/* A spool that cannot be read while it is written is refused for good
 * (ACT_E_UNSUPPORTED): a ring (its header's flag) recycles chunks under
 * the reader. One whose header is not written yet is only not ready. */
static void test_live_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_live_XXXXXX", path[64], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/900.acts", dir);
    sb s;
    two_threads(&s);
    write_step(&s, path, STEPS);
    act_spool sp;
    assert_int_equal(act_spool_open_live(&sp, path, err, sizeof(err)), 0);
    act_spool_close(&sp);
    sb_hdr(&s)->flags |= ACT_SPOOL_F_RING;
    write_step(&s, path, STEPS);
    assert_int_equal(act_spool_open_live(&sp, path, err, sizeof(err)), ACT_E_UNSUPPORTED);
    assert_non_null(strstr(err, "ring"));
    act_spool_close(&sp);
    memset(s.buf, 0, ACT_SPOOL_HEADER_SIZE); /* no magic yet */
    write_step(&s, path, STEPS);
    int rc = act_spool_open_live(&sp, path, err, sizeof(err));
    assert_true(rc == ACT_E_IO || rc == ACT_E_FORMAT);
    act_spool_close(&sp);
    sb_free(&s);
    snaps_free();
    unlink(path);
    rmdir(dir);
}

/* A long run: one thread moving through LONG_CHUNKS chunks, a segment
 * each, published LONG_STEP chunks at a time. The reader's segment table
 * holds what is unread, not every segment of the run; the records and
 * the counts still come out as the batch read's. */
#define LONG_CHUNKS 12000
#define LONG_STEP   1000

/* A copy of s to change before it is written (write_copy). */
static sb copy_of(const sb *s)
{
    sb copy = *s;
    copy.buf = malloc(s->size);
    assert_non_null(copy.buf);
    memcpy(copy.buf, s->buf, s->size);
    return copy;
}

/* Write the copy over path in place (the live mapping stays valid), and
 * free it. */
static void write_copy(sb *copy, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, copy->buf, copy->size, 0), (ssize_t)copy->size);
    close(fd);
    free(copy->buf);
}

static void write_prefix(const sb *s, const char *path, uint32_t n)
{
    sb copy = copy_of(s);
    if (n < LONG_CHUNKS) {
        memset(sb_chunk_hdr(&copy, n), 0, (size_t)(LONG_CHUNKS - n) * copy.chunk_size);
        sb_hdr(&copy)->chunks_used = n;
        sb_hdr(&copy)->flags = 0;
    }
    write_copy(&copy, path);
}

/* The final scan of a sealed spool whose program has not gone yet
 * (`run` reads it then: api/export.c, act_export_live_finish): afterwards
 * act_spool_live_settled says whether the file still holds just what it
 * gave. Unchanged: 1. Each way a thread caught writing as the spool was
 * sealed can still publish: a record more in its chunk, its open
 * segment's seq stored, a header count (a record dropped), a chunk it
 * had been handed and not begun: 0. */
static int settled_after(sb *s, const char *path, void (*change)(sb *))
{
    char err[256];
    seen got[64];
    write_step(s, path, STEPS);
    act_spool sp;
    assert_int_equal(act_spool_open_live(&sp, path, err, sizeof(err)), 0);
    assert_int_equal(act_spool_live_settled(&sp), 0); /* no final scan yet */
    assert_true(act_spool_live_sealed(&sp));
    size_t ng = take(&sp, got, 0, 1);
    assert_true(ng > 0);
    act_spool_live_end(&sp);
    unsigned char *keep = malloc(s->size);
    assert_non_null(keep);
    memcpy(keep, s->buf, s->size);
    if (change) {
        change(s);
        write_step(s, path, STEPS);
    }
    int settled = act_spool_live_settled(&sp);
    memcpy(s->buf, keep, s->size); /* as it was, for the next case */
    free(keep);
    act_spool_close(&sp);
    return settled;
}

static void one_more_record(sb *s)
{
    sb_use_chunk(s, 3); /* thread 1's D, still open */
    sb_ts(s, ACT_REC_MARK, 1, 2000800);
}

static void open_seq_stored(sb *s)
{
    sb_end(s, 1);
}

static void one_dropped(sb *s)
{
    sb_hdr(s)->dropped[ACT_REC_API]++;
}

static void handed_chunk_begun(sb *s)
{
    sb_open_thread(s, 4, 3, 902); /* chunk 4: handed out before, begun now */
}

static void test_live_settled(void **state)
{
    (void)state;
    sb s;
    two_threads(&s);
    /* A fifth chunk handed out (chunks_used) and not begun at the seal. */
    sb s5;
    sb_init(&s5, 900, 1024, CHUNKS + 1);
    memcpy(s5.buf, s.buf, s.size);
    memcpy(s5.open, s.open, sizeof(s.open));
    s5.seq = s.seq;
    sb_hdr(&s5)->capacity = s5.size;
    sb_hdr(&s5)->chunk_count = CHUNKS + 1;
    sb_hdr(&s5)->chunks_used = CHUNKS + 1;
    char dir[] = "/tmp/act_live_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/900.acts", dir);
    assert_int_equal(settled_after(&s5, path, NULL), 1);
    assert_int_equal(settled_after(&s5, path, one_more_record), 0);
    assert_int_equal(settled_after(&s5, path, open_seq_stored), 0);
    assert_int_equal(settled_after(&s5, path, one_dropped), 0);
    assert_int_equal(settled_after(&s5, path, handed_chunk_begun), 0);
    assert_int_equal(settled_after(&s5, path, NULL), 1);
    unlink(path);
    rmdir(dir);
    sb_free(&s5);
    sb_free(&s);
    snaps_free();
}

static void test_live_segments_bounded(void **state)
{
    (void)state;
    sb s;
    sb_init(&s, 902, 1024, LONG_CHUNKS);
    sb_open_thread(&s, 0, 1, 902);
    sb_str(&s, 1, "m");
    for (uint32_t c = 1; c < LONG_CHUNKS; c++) {
        sb_use_chunk(&s, c);
        sb_segment(&s, 1);
        sb_ts(&s, ACT_REC_MARK, 1, 2000000 + c);
    }
    char dir[] = "/tmp/act_live_XXXXXX", path[64], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/902.acts", dir);
    write_prefix(&s, path, LONG_CHUNKS);
    act_spool batch;
    assert_int_equal(act_spool_open(&batch, path, err, sizeof(err)), 0);
    write_prefix(&s, path, LONG_STEP);
    act_spool sp;
    assert_int_equal(act_spool_open_live(&sp, path, err, sizeof(err)), 0);
    static seen got[2 * LONG_CHUNKS];
    size_t ng = 0, most = 0;
    for (uint32_t n = LONG_STEP; n <= LONG_CHUNKS; n += LONG_STEP) {
        write_prefix(&s, path, n);
        for (int i = 0; i < 3; i++)
            ng = take(&sp, got, ng, 0);
        most = sp.n_segs > most ? sp.n_segs : most;
    }
    ng = take(&sp, got, ng, 1);
    most = sp.n_segs > most ? sp.n_segs : most;
    act_spool_live_end(&sp);
    assert_true(most < LONG_CHUNKS / 2);         /* was LONG_CHUNKS: every segment kept */
    assert_int_equal(ng, 1 + (LONG_CHUNKS - 1)); /* THREAD, then a MARK a chunk */
    for (int k = 0; k < ACT_REC_KIND_MAX; k++)
        assert_int_equal(sp.records[k], batch.records[k]);
    assert_int_equal(sp.n_errors, 0);
    assert_int_equal(sp.last_ts, batch.last_ts);
    act_spool_close(&sp);
    act_spool_close(&batch);
    unlink(path);
    rmdir(dir);
    sb_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live_order),
        cmocka_unit_test(test_live_idle_chunk),
        cmocka_unit_test(test_live_not_ready),
        cmocka_unit_test(test_live_refused),
        cmocka_unit_test(test_live_segments_bounded),
        cmocka_unit_test(test_live_settled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
