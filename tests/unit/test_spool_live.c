/*
 * test_spool_live.c -- reading a spool while it is written
 * (act_spool_open_live / live_scan / live_next, spool.h): records come out
 * in exactly the order of a batch read of the finished file, however the
 * writing is cut into steps: none of a later segment while an earlier one
 * may still grow, none of a segment whose predecessor in sequence is not
 * published yet. The file is rewritten in place between the steps, as the
 * recorder's MAP_SHARED writes would change it. What the reader keeps
 * does not grow with the segments it has read (test_live_segments_bounded).
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

/* Two threads writing at once: thread 1 in chunk 0 (segment 0, still
 * growing after thread 2 began segment 1 in chunk 1), then thread 1 moves
 * to chunk 2 (segment 2). used[] records each chunk's fill after each
 * step of the writing. */
#define STEPS  4
#define CHUNKS 4
static uint32_t used[STEPS][CHUNKS], chunks[STEPS];

static void note_step(sb *s, int k)
{
    for (uint32_t c = 0; c < CHUNKS; c++)
        used[k][c] = sb_chunk_hdr(s, c)->magic ? sb_chunk_hdr(s, c)->used : 0;
    chunks[k] = (uint32_t)sb_hdr(s)->chunks_used;
}

static void two_threads(sb *s)
{
    sb_init(s, 900, 1024, CHUNKS);
    sb_open_thread(s, 0, 1, 900);
    sb_str(s, 1, "a");
    sb_ts(s, ACT_REC_RANGE_PUSH, 1, 2000000);
    note_step(s, 0); /* thread 1 alone */
    sb_open_thread(s, 1, 2, 901);
    sb_str(s, 1, "b");
    sb_ts(s, ACT_REC_RANGE_PUSH, 1, 2000100);
    sb_ts(s, ACT_REC_RANGE_POP, 0, 2000200);
    note_step(s, 1); /* thread 2's segment 1 is complete so far; segment 0 may grow */
    sb_use_chunk(s, 0);
    sb_ts(s, ACT_REC_RANGE_POP, 0, 2000300);
    sb_ts(s, ACT_REC_MARK, 1, 2000400);
    sb_open_thread(s, 2, 1, 900); /* thread 1 leaves chunk 0 */
    sb_str(s, 1, "c");
    sb_ts(s, ACT_REC_MARK, 1, 2000500);
    note_step(s, 2);
    sb_use_chunk(s, 1);
    sb_ts(s, ACT_REC_MARK, 1, 2000600);
    note_step(s, 3);
}

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

/* The file as it stood after step k (k = STEPS: finished, sealed). */
static void write_step(sb *s, const char *path, int k)
{
    sb copy = copy_of(s);
    if (k < STEPS) {
        for (uint32_t c = 0; c < CHUNKS; c++) {
            sb_chunk_hdr(&copy, c)->used = used[k][c];
            if (!used[k][c] && c >= chunks[k])
                memset(sb_chunk_hdr(&copy, c), 0, copy.chunk_size);
        }
        sb_hdr(&copy)->chunks_used = chunks[k];
        sb_hdr(&copy)->flags = 0;
    }
    write_copy(&copy, path);
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
    assert_int_equal(act_spool_open(&batch, path, err, sizeof(err)), 0);
    seen want[64], got[64];
    size_t nw = 0, ng = 0;
    act_spool_iter *it = act_spool_iter_new(&batch);
    act_sp_rec r;
    while (act_spool_iter_next(it, &r) > 0) {
        want[nw] = (seen){r.r->kind, r.serial, (size_t)((const unsigned char *)r.r - batch.map)};
        nw++;
    }
    act_spool_iter_free(it);

    write_step(&s, path, 0);
    act_spool sp;
    assert_int_equal(act_spool_open_live(&sp, path, err, sizeof(err)), 0);
    ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 2); /* THREAD and PUSH of thread 1 (strings are not handed out) */
    write_step(&s, path, 1);
    ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 2); /* segment 1 waits: segment 0 may still grow */
    write_step(&s, path, 2);
    ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 4); /* the rest of segment 0; segment 2 showed it ended, next round */
    ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 4 + 3); /* segment 1 as published; it may grow, so segment 2 waits */
    write_step(&s, path, 3);
    ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 8);
    write_step(&s, path, STEPS);
    ng = take(&sp, got, ng, 1);
    act_spool_live_end(&sp);
    assert_int_equal(ng, nw);
    for (size_t i = 0; i < nw; i++) {
        assert_int_equal(got[i].kind, want[i].kind);
        assert_int_equal(got[i].serial, want[i].serial);
        assert_int_equal(got[i].off, want[i].off);
    }
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
}

/* Thread 2's chunk stays unchanged long enough to be looked at only now
 * and then; then, in one step, thread 2 writes one more record there and
 * moves on, and thread 1 moves on too. The walk must not pass thread 2's
 * segment before a scan of its chunk has read that record. */
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
    sb_open_thread(s, 3, 2, 901);
    sb_str(s, 1, "b");
    sb_ts(s, ACT_REC_MARK, 1, 2000300);
    sb_open_thread(s, 2, 1, 900);
    sb_str(s, 1, "a");
    sb_ts(s, ACT_REC_MARK, 1, 2000400);
    note_step(s, 1);
    note_step(s, 2);
    note_step(s, 3);
}

static void test_live_idle_chunk(void **state)
{
    (void)state;
    sb s;
    idle_chunk(&s);
    char dir[] = "/tmp/act_live_XXXXXX", path[64], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/901.acts", dir);
    write_step(&s, path, 0);
    act_spool sp;
    assert_int_equal(act_spool_open_live(&sp, path, err, sizeof(err)), 0);
    seen got[64];
    size_t ng = 0;
    for (int i = 0; i < 8; i++) /* chunk 1 goes idle */
        ng = take(&sp, got, ng, 0);
    assert_int_equal(ng, 2); /* segment 0 (THREAD, MARK); segment 1 waits behind it */
    write_step(&s, path, 1);
    for (int i = 0; i < 3; i++)
        ng = take(&sp, got, ng, 0);
    /* Segment 0 and all of segment 1, its last record included: 2 + 3. */
    assert_true(ng >= 5);
    assert_int_equal(got[4].kind, ACT_REC_MARK);
    assert_int_equal(got[4].serial, 2);
    for (int i = 0; i < LIVE_TRIES; i++)
        ng = take(&sp, got, ng, 0);
    ng = take(&sp, got, ng, 1);
    act_spool_live_end(&sp);
    assert_int_equal(ng, 9); /* 4 segments: THREAD + MARK each, and segment 1's second MARK */
    static const uint32_t serials[9] = {1, 1, 2, 2, 2, 2, 2, 1, 1};
    for (size_t i = 0; i < 9; i++)
        assert_int_equal(got[i].serial, serials[i]);
    act_spool_close(&sp);
    unlink(path);
    rmdir(dir);
    sb_free(&s);
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
    unlink(path);
    rmdir(dir);
}

/* A long run: one thread moving through LONG_CHUNKS chunks, a segment
 * each, published LONG_STEP chunks at a time. The reader's segment table
 * holds what is unread, not every segment of the run; the records and
 * the counts still come out as the batch read's. */
#define LONG_CHUNKS 12000
#define LONG_STEP   1000

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
