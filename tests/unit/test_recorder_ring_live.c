/*
 * test_recorder_ring_live.c -- reading a ring spool while it is being
 * overwritten (core/record.h R2, R3): three threads record marks with names
 * of their own through a small ring, recycling chunks all the time, while
 * the timeline reader opens the live spool again and again. Every opening
 * must be clean: no torn record, no string used before its definition, and
 * every mark's name the one its thread gave it. A chunk the reader finds
 * busy being recycled is left out and counted as overwritten, never read
 * half-rewritten. Also: a chunk left odd (a process that died while
 * recycling it) is skipped and counted. And a reading of a thread that keeps
 * writing (what `acceltrace trigger` copies) is whole: the copy of the ring
 * is not torn, so nothing of the thread's window is cut off (a torn copy
 * kept only the chunks after the hole: a trigger's trace of ring_app, on a
 * busy machine, held a few hundred steps and none of its marks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/internal.h"
#include "core/rec_write.h"
#include "core/record.h"
#include "timeline/reader_types.h"
#include "timeline/spool.h"
#include "tmpdir.h"

#define CHUNK 4096u

static char dir[64];
static _Atomic int stop;

/* Writer k (arg & 0xff) records marks until `stop`; with arg & SLOW it
 * naps every 64 of its first 8192 marks (about 36 chunks), so that readers
 * are at it when it fills the rest of a ring of 48, at full speed. */
#define SLOW 0x100
static void *writer(void *arg)
{
    int k = (int)(intptr_t)arg & 0xff, slow = ((intptr_t)arg & SLOW) != 0;
    char name[32];
    for (uint64_t i = 0; !atomic_load(&stop); i++) {
        if (slow && i < 8192 && i % 64 == 63)
            nanosleep(&(struct timespec){0, 1000}, NULL);
        snprintf(name, sizeof(name), "w%d-%d", k, (int)(i % 7));
        uint32_t id = act_str_intern_cstr(name);
        act_rec_ts *r = act_rec_reserve(ACT_REC_MARK, sizeof(*r));
        if (!r)
            continue;
        r->h.aux = id;
        r->ts = (uint64_t)k << 56 | i;
        act_rec_commit();
    }
    return NULL;
}

/* Marks must carry the names their writer gave: "w<k>-<i % 7>". */
static uint64_t bad_marks(const act_spool *sp, uint64_t *marks)
{
    act_spool_iter *it = act_spool_iter_new(sp);
    act_sp_rec rec;
    uint64_t bad = 0;
    char want[32];
    while (act_spool_iter_next(it, &rec) > 0) {
        if (rec.r->kind != ACT_REC_MARK)
            continue;
        uint64_t ts = ((const act_rec_ts *)rec.r)->ts;
        snprintf(want, sizeof(want), "w%d-%d", (int)(ts >> 56), (int)((ts & ~(0xffull << 56)) % 7));
        bad += rec.s1.n != strlen(want) || memcmp(rec.s1.p, want, rec.s1.n) != 0;
        (*marks)++;
    }
    act_spool_iter_free(it);
    return bad;
}

/* A spool of 64 chunks of `chunk` bytes with a ring of `ring` of them in
 * a new directory `dir`. */
static void ring_open(const char *name, char *path, size_t n, uint32_t chunk, uint32_t ring)
{
    tmpdir_make(dir, sizeof(dir), name);
    act_recorder_set_ring(ring * chunk);
    assert_int_equal(act_recorder_open(dir, ACT_SPOOL_HEADER_SIZE + 64 * (size_t)chunk, chunk), 0);
    snprintf(path, n, "%s", act_recorder_path());
}

static void test_live_reads(void **state)
{
    (void)state;
    char path[256];
    ring_open("ringlive", path, sizeof(path), CHUNK, 8);
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, writer, (void *)(intptr_t)i);
    uint64_t marks = 0, bad = 0, problems = 0, wrapped = 0;
    /* 200 readings at least, and until the ring wrapped often and the
     * readings saw enough marks (a busy machine may hold the writers back
     * while the readings run: 200 of them can end before the writers
     * filled a chunk), for 20 s at most. */
    time_t t0 = time(NULL);
    for (int n = 0; (n < 200 || wrapped <= 10 || marks <= 1000) && time(NULL) - t0 < 20; n++) {
        act_spool sp;
        char err[256];
        assert_int_equal(act_spool_open(&sp, path, err, sizeof(err)), 0);
        for (size_t e = 0; e < sp.n_errors; e++)
            fprintf(stderr, "%s\n", sp.errors[e]);
        problems += sp.n_problems;
        bad += bad_marks(&sp, &marks);
        wrapped = sp.hdr.chunks_overwritten;
        act_spool_close(&sp);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    act_recorder_close();
    act_recorder_set_ring(0);
    assert_true(wrapped > 10);
    assert_true(marks > 1000);
    assert_int_equal(problems, 0);
    assert_int_equal(bad, 0);

    /* A chunk left mid-recycle (odd) is skipped and counted. */
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    act_chunk_header ch;
    assert_int_equal(pread(fd, &ch, sizeof(ch), ACT_SPOOL_HEADER_SIZE), sizeof(ch));
    ch.gen |= 1u;
    assert_int_equal(pwrite(fd, &ch, sizeof(ch), ACT_SPOOL_HEADER_SIZE), sizeof(ch));
    close(fd);
    act_spool sp;
    char err[256];
    assert_int_equal(act_spool_open(&sp, path, err, sizeof(err)), 0);
    assert_int_equal(sp.n_problems, 0);
    act_spool_header h;
    fd = open(path, O_RDONLY);
    assert_int_equal(pread(fd, &h, sizeof(h), 0), sizeof(h));
    close(fd);
    /* Skipped and counted; the chunks its thread wrote before it are cut
     * off by the hole and counted too (test_recorder_ring_torn.c): at
     * most the rest of the 8-chunk ring. */
    assert_true(sp.hdr.chunks_overwritten >= h.chunks_overwritten + 1);
    assert_true(sp.hdr.chunks_overwritten <= h.chunks_overwritten + 8);
    assert_int_equal(sp.n_segs, h.chunks_used - 1); /* one segment per ring chunk */
    act_spool_close(&sp);
    tmpdir_remove(dir);
}

/* One reading of the spool at `path`: 1 when it cut a hole in a thread's
 * window (reader.c, ring_cut); the chunks it says were recycled. */
static int reading_cut(const char *path, uint64_t *wrapped)
{
    act_spool sp;
    char err[256];
    assert_int_equal(act_spool_open(&sp, path, err, sizeof(err)), 0);
    int cut = 0;
    for (size_t i = 0; i < sp.n_segs; i++)
        cut |= sp.segs[i].cut != 0;
    *wrapped = sp.hdr.chunks_overwritten;
    act_spool_close(&sp);
    return cut;
}

static void ring_close(pthread_t th)
{
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    act_recorder_close();
    act_recorder_set_ring(0);
    tmpdir_remove(dir);
}

/* Readings of a ring one thread keeps writing, for 2 s at least: none may
 * cut a hole in the thread's window. */
static void test_live_copy_whole(void **state)
{
    (void)state;
    char path[256];
    ring_open("ringwhole", path, sizeof(path), CHUNK, 8);
    atomic_store(&stop, 0);
    pthread_t th;
    pthread_create(&th, NULL, writer, (void *)(intptr_t)0);
    int readings = 0, torn = 0;
    uint64_t wrapped = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        torn += reading_cut(path, &wrapped);
        readings++;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - t0.tv_sec < 2 || wrapped <= 100) && now.tv_sec - t0.tv_sec < 20);
    ring_close(th);
    fprintf(stderr, "%d readings, %d torn, %llu chunks recycled\n", readings, torn,
            (unsigned long long)wrapped);
    assert_true(wrapped > 100);
    assert_int_equal(torn, 0);
}

/* The same while the ring fills: a reading that began before the thread
 * took the ring's last fresh chunk and copies the chunks it recycles next
 * must copy those fresh chunks too (they were not used when the reading
 * read the header). 200 rounds, each a new ring of 48 chunks read until it
 * wrapped. */
static void test_live_copy_filling(void **state)
{
    (void)state;
    int readings = 0, torn = 0;
    for (int round = 0; round < 200; round++) {
        char path[256];
        ring_open("ringfill", path, sizeof(path), CHUNK, 48);
        atomic_store(&stop, 0);
        pthread_t th;
        pthread_create(&th, NULL, writer, (void *)(intptr_t)SLOW);
        uint64_t wrapped = 0;
        for (int k = 0; wrapped < 64 && k < 100000; k++, readings++)
            torn += reading_cut(path, &wrapped);
        ring_close(th);
    }
    fprintf(stderr, "%d readings while rings filled, %d torn\n", readings, torn);
    assert_int_equal(torn, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live_reads),
        cmocka_unit_test(test_live_copy_whole),
        cmocka_unit_test(test_live_copy_filling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
