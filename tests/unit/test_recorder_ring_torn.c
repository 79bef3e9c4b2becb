/*
 * test_recorder_ring_torn.c -- a ring spool read while its thread keeps
 * writing (issue 30.5: `unbalanced_pops: 1` in a trigger's trace on a busy
 * machine). The reader copies the ring chunk by chunk (reader.c,
 * ring_copy); a writer that runs between two of those copies leaves the
 * copy torn, each chunk consistent but from a different moment:
 *  - owned: the thread's current chunk is copied early (a prefix), the
 *    thread then fills it and moves on to a chunk copied later: the tail
 *    of the first is missing, records after it are kept;
 *  - stale: the oldest chunk is copied, then recycled twice over: the old
 *    copy is kept while the chunk that followed it is gone.
 * Either way a pop can be kept whose push is lost. The torn copies are
 * made here deterministically (the file as it stood at two moments, one
 * chunk from the first), then read and built: the thread's kept window
 * must be contiguous (what came before a hole is left out and counted as
 * overwritten), so no pop is unbalanced and the open ranges at the start
 * of the window are the ones its first chunk says (R4).
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
#include <sys/stat.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/internal.h"
#include "core/rec_write.h"
#include "core/record.h"
#include "core/recorder/recorder_int.h"
#include "timeline/spool.h"
#include "timeline/timeline.h"
#include "tmpdir.h"

#define CHUNK 4096u
#define RING  (4 * CHUNK)

static char dir[64];
static char path[256];

static int setup(void **state)
{
    (void)state;
    tmpdir_make(dir, sizeof(dir), "ringtorn");
    act_recorder_set_ring(RING);
    assert_int_equal(act_capture_configure(0, "", 0, 0), ACT_OK);
    assert_int_equal(act_recorder_open(dir, ACT_SPOOL_HEADER_SIZE + 64 * (size_t)CHUNK, CHUNK), 0);
    snprintf(path, sizeof(path), "%s", act_recorder_path());
    /* No pre-fault helper: it surveys the chunk to be recycled next and,
     * on a busy machine, can hold it past the writer's wait, which then
     * recycles another (ring.c): the order these cases build on would
     * depend on the scheduler. The writer surveys its chunks itself. */
    pthread_mutex_lock(&act_rec_state.lock);
    act_rec_prefault_stop();
    pthread_mutex_unlock(&act_rec_state.lock);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    act_recorder_close();
    act_recorder_set_ring(0);
    return tmpdir_remove(dir);
}

/* The whole spool file as it stands now (malloc'ed). */
static char *file_image(size_t *len)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    char *buf = malloc((size_t)st.st_size);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return buf;
}

/* Put chunk `idx` of `image` back into the file: the reader's copy of that
 * chunk made at the moment of the image. */
static void chunk_restore(const char *image, size_t len, uint32_t idx)
{
    size_t off = ACT_SPOOL_HEADER_SIZE + (size_t)idx * CHUNK;
    assert_true(off + CHUNK <= len);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, image + off, CHUNK, (off_t)off), CHUNK);
    close(fd);
}

static uint64_t segments_started(void)
{
    return atomic_load((_Atomic uint64_t *)&act_recorder_header()->segment_seq);
}

/* "step" ranges (with a nested "inner") until the thread starts a new
 * chunk `n` times; the ring wraps long before 2000 of them. */
static void steps_until_new_chunks(int n)
{
    uint64_t seq = segments_started() + (uint64_t)n;
    for (int i = 0; i < 100000 && segments_started() < seq; i++) {
        assert_int_equal(act_range_push("step"), ACT_OK);
        assert_int_equal(act_range_push("inner"), ACT_OK);
        assert_int_equal(act_range_pop(), ACT_OK);
        assert_int_equal(act_range_pop(), ACT_OK);
    }
    assert_true(segments_started() >= seq);
}

/* The oldest ring chunk no thread owns (the next to be recycled). */
static uint32_t oldest_chunk(void)
{
    pthread_mutex_lock(&act_rec_state.lock);
    uint32_t idx = UINT32_MAX;
    for (uint32_t k = 0; k < act_rec_state.ring_n && idx == UINT32_MAX; k++)
        if (!atomic_load(&act_rec_state.ring_owned[act_rec_state.ring_order[k]]))
            idx = act_rec_state.ring_order[k];
    pthread_mutex_unlock(&act_rec_state.lock);
    assert_int_not_equal(idx, UINT32_MAX);
    return idx;
}

/* Read and build the (torn) spool: no unbalanced pop, `held` closed once
 * (begun before the window), and what was left out counted. */
static void check_window(const char *held)
{
    act_recorder_close();
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    act_spool_header file_hdr;
    assert_int_equal(pread(fd, &file_hdr, sizeof(file_hdr), 0), sizeof(file_hdr));
    close(fd);
    act_spool sp;
    char err[256];
    assert_int_equal(act_spool_open(&sp, path, err, sizeof(err)), 0);
    for (size_t e = 0; e < sp.n_errors; e++)
        fprintf(stderr, "%s\n", sp.errors[e]);
    act_spool *ptr[1] = {&sp};
    act_timeline tl;
    act_build_opts o = {0, 0};
    assert_int_equal(act_timeline_build(&tl, ptr, 1, &o), 0);
    assert_int_equal(tl.counts.unbalanced_pops, 0);
    assert_true(sp.hdr.chunks_overwritten > file_hdr.chunks_overwritten);
    size_t n_held = 0, n_steps = 0;
    for (size_t i = 0; i < tl.n_ev; i++) {
        const act_tl_event *e = &tl.ev[i];
        if (e->ph != 'X')
            continue;
        n_held += e->name.n == strlen(held) && !memcmp(e->name.p, held, e->name.n);
        n_steps += e->name.n == 4 && !memcmp(e->name.p, "step", 4);
    }
    assert_int_equal(n_held, 1);
    assert_true(n_steps > 0);
    assert_true(tl.counts.ranges_before_window >= 2); /* "run" and `held` */
    act_timeline_free(&tl);
    act_spool_close(&sp);
}

/* The thread's own chunk copied before it filled it: its tail (the push
 * of "held") is missing, the pop in the next chunk is kept. */
static void test_owned_chunk_copied_early(void **state)
{
    (void)state;
    assert_int_equal(act_range_push("run"), ACT_OK);
    steps_until_new_chunks(10); /* wrapped; the thread just took a chunk */
    uint32_t owned = act_rec_tls->chunk->index;
    size_t len;
    char *image = file_image(&len); /* the reader copies the owned chunk */
    assert_int_equal(act_range_push("held"), ACT_OK);
    steps_until_new_chunks(1);
    assert_int_equal(act_range_pop(), ACT_OK); /* "held", in the next chunk */
    steps_until_new_chunks(0);
    chunk_restore(image, len, owned);
    free(image);
    check_window("held");
}

/* The oldest chunk copied, then recycled and the next one too: the old
 * copy is kept, the chunk holding the push of "held" is gone. */
static void test_stale_chunk_kept(void **state)
{
    (void)state;
    assert_int_equal(act_range_push("run"), ACT_OK);
    steps_until_new_chunks(10);
    uint32_t oldest = oldest_chunk();
    size_t len;
    char *image = file_image(&len); /* the reader copies the oldest chunk */
    steps_until_new_chunks(1);      /* it is recycled: the thread's now */
    assert_int_equal(act_range_push("held"), ACT_OK);
    steps_until_new_chunks(1);
    assert_int_equal(act_range_pop(), ACT_OK);
    chunk_restore(image, len, oldest); /* the reader's stale copy */
    free(image);
    check_window("held");
}

/* A copy that is not torn loses nothing: every thread's chunks add up. */
static void test_whole_ring_cut_nothing(void **state)
{
    (void)state;
    assert_int_equal(act_range_push("run"), ACT_OK);
    steps_until_new_chunks(10);
    assert_int_equal(act_range_push("held"), ACT_OK);
    steps_until_new_chunks(2);
    assert_int_equal(act_range_pop(), ACT_OK);
    act_recorder_close();
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    act_spool_header file_hdr;
    assert_int_equal(pread(fd, &file_hdr, sizeof(file_hdr), 0), sizeof(file_hdr));
    close(fd);
    act_spool sp;
    char err[256];
    assert_int_equal(act_spool_open(&sp, path, err, sizeof(err)), 0);
    assert_int_equal(sp.hdr.chunks_overwritten, file_hdr.chunks_overwritten);
    assert_int_equal(sp.hdr.records_overwritten, file_hdr.records_overwritten);
    act_spool_close(&sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_owned_chunk_copied_early, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_chunk_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_whole_ring_cut_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
