/*
 * test_recorder_prefault.c -- the pre-fault helper's window grows with use:
 * a process that records little has only a couple of chunks populated ahead
 * (it used to be charged the whole 8 MiB window at open, and again when the
 * spool was deleted), one that records a lot gets chunks populated ahead of
 * what it has used, and a steady light one about what it takes in 20 ms.
 * The helper's progress is read directly (act_recorder_prefaulted): the
 * resident size of the mapping depends on the page cache's folio sizes,
 * which vary from run to run.
 *
 * And the helper never maps back pages the recorder gave up: the recording
 * threads may overtake it between its choice of a chunk and the fault-in,
 * take that chunk, fill it and give its region up (chunks.c, region_drop).
 * A test hook stops the helper at each of those points while the test
 * records past the chunk, and the chunk's pages must then not be in the
 * process's page tables (/proc/self/pagemap's present bit).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include <fcntl.h>
#include <semaphore.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/record.h"
#include "core/recorder/recorder_int.h"
#include "tmpdir.h"

#define CHUNK    (128u << 10)
#define CAPACITY (64u << 20) /* 512 chunks: the 8 MiB window is 65 of them */

static void settle(void)
{
    struct timespec ts = {0, 200 * 1000000L}; /* the helper runs on its own */
    nanosleep(&ts, NULL);
}

static void test_window_grows_with_use(void **state)
{
    (void)state;
    char dir[64];
    tmpdir_make(dir, sizeof(dir), "pref");
    assert_int_equal(act_recorder_open(dir, CAPACITY, CHUNK), 0);

    /* One record: one chunk in use, two ahead. */
    assert_int_equal(act_rec_api_emit("light", 1, 2, 0, 0, 0, ACT_SOURCE_OPENCL), 0);
    settle();
    assert_int_equal(act_recorder_header()->chunks_used, 1);
    assert_int_equal(act_recorder_prefaulted(), 3); /* the whole window would be 65 */

    /* ~20 chunks of 144-byte records: populated ahead of the used ones. */
    for (int i = 0; i < 20 * 900; i++) {
        act_rec_device_op *r = act_rec_reserve(ACT_REC_DEVICE_OP, sizeof(*r));
        assert_non_null(r);
        act_rec_commit();
    }
    settle();
    uint64_t used = act_recorder_header()->chunks_used;
    assert_true(used >= 18);
    /* Ahead of the used ones: as many as used when the burst is as fast as
     * it is on a quiet machine; on a loaded one, the recording thread's
     * waits for a CPU make the rate and so the window smaller (prefault.c),
     * but never the bare minimum at this rate. */
    uint32_t done = act_recorder_prefaulted();
    assert_true(done >= used + 4);
    assert_true(done <= 2 * used);

    act_recorder_close();
    assert_int_equal(tmpdir_remove(dir), 0);
}

/* The exit's close leaves the helper to end on its own (prefault.c,
 * act_rec_prefault_leave); a spool opened after it (an exit handler that
 * records) gets a helper of its own, and the one left does not touch it. */
static void test_reopen_after_exit_close(void **state)
{
    (void)state;
    char dir[64];
    tmpdir_make(dir, sizeof(dir), "pref");
    for (int round = 0; round < 3; round++) {
        assert_int_equal(act_recorder_open(dir, CAPACITY, CHUNK), 0);
        for (int i = 0; i < 8 * 900; i++) { /* ~8 chunks: the helper is busy */
            act_rec_device_op *r = act_rec_reserve(ACT_REC_DEVICE_OP, sizeof(*r));
            assert_non_null(r);
            act_rec_commit();
        }
        act_recorder_close_at_exit();
        assert_null(act_recorder_header());
    }
    assert_int_equal(act_recorder_open(dir, CAPACITY, CHUNK), 0);
    assert_int_equal(act_rec_api_emit("after", 1, 2, 0, 0, 0, ACT_SOURCE_OPENCL), 0);
    settle();
    assert_int_equal(act_recorder_header()->chunks_used, 1);
    assert_int_equal(act_recorder_prefaulted(), 3); /* this spool's helper, from 0 */
    act_recorder_close();
    assert_int_equal(tmpdir_remove(dir), 0);
}

/* ---- the helper overtaken ------------------------------------------- */

#define TARGET 20u /* in the 2 MiB region [2, 4) MiB: chunks 15..31 */
#define PAST   33u /* chunks_used once chunk 31 is given up */

static struct {
    sem_t reached, go;
    int stage;
    _Atomic int fired;
    int armed; /* the semaphores are set up */
} stop;

static void stop_hook(uint32_t idx, int stage)
{
    if (idx != TARGET || stage != stop.stage || atomic_exchange(&stop.fired, 1))
        return;
    sem_post(&stop.reached);
    while (sem_wait(&stop.go) != 0) {
    }
}

static void record_one(void)
{
    act_rec_device_op *r = act_rec_reserve(ACT_REC_DEVICE_OP, sizeof(*r));
    assert_non_null(r);
    act_rec_commit();
}

/* How many of chunk idx's pages are in this process's page tables. */
static int chunk_pages_present(uint32_t idx)
{
    const char *c =
        (const char *)act_recorder_header() + ACT_SPOOL_HEADER_SIZE + (size_t)idx * CHUNK;
    long page = sysconf(_SC_PAGESIZE);
    int fd = open("/proc/self/pagemap", O_RDONLY);
    assert_true(fd >= 0);
    int present = 0;
    for (uintptr_t a = (uintptr_t)c; a < (uintptr_t)c + CHUNK; a += (uintptr_t)page) {
        uint64_t e = 0;
        assert_int_equal(pread(fd, &e, sizeof(e), (off_t)(a / (uintptr_t)page * 8)), 8);
        present += (int)(e >> 63);
    }
    close(fd);
    return present;
}

/* Open a spool in dir with the helper to stop at TARGET at `stage`, and
 * record until it has (it chooses TARGET once 11 chunks are used). */
static void record_until_stopped(char *dir, size_t len, int stage)
{
    tmpdir_make(dir, len, "pref");
    sem_init(&stop.reached, 0, 0);
    sem_init(&stop.go, 0, 0);
    stop.stage = stage;
    stop.armed = 1;
    atomic_store(&stop.fired, 0);
    act_rec_prefault_test_hook = stop_hook;
    assert_int_equal(act_recorder_open(dir, CAPACITY, CHUNK), 0);
    struct timespec nap = {0, 100 * 1000L};
    while (sem_trywait(&stop.reached) != 0) {
        for (int i = 0; i < 100; i++)
            record_one();
        nanosleep(&nap, NULL);
        assert_true(act_recorder_header()->chunks_used < PAST);
    }
}

static void stop_disarm(void)
{
    act_rec_prefault_test_hook = NULL;
    if (!stop.armed)
        return;
    stop.armed = 0;
    sem_destroy(&stop.reached);
    sem_destroy(&stop.go);
}

static void stop_done(const char *dir)
{
    stop_disarm();
    assert_int_equal(tmpdir_remove(dir), 0);
}

static void overtaken_at(int stage)
{
    char dir[64];
    record_until_stopped(dir, sizeof(dir), stage);
    /* Past the region TARGET lies in. */
    while (act_recorder_header()->chunks_used < PAST)
        record_one();
    if (stage == ACT_PREFAULT_CHOSEN) /* given up already: what the helper must not undo */
        assert_int_equal(chunk_pages_present(TARGET), 0);

    sem_post(&stop.go);
    struct timespec nap = {0, 100 * 1000L};
    for (int i = 0; i < 2000 && act_recorder_prefaulted() <= TARGET; i++)
        nanosleep(&nap, NULL);
    assert_true(act_recorder_prefaulted() > TARGET);
    settle();
    assert_int_equal(chunk_pages_present(TARGET), 0);
    act_recorder_close();
    stop_done(dir);
}

/* Overtaken between the choice and the claim: the chunk is handed out,
 * filled and given up before the helper faults it in. */
static void test_overtaken_before_claim(void **state)
{
    (void)state;
    overtaken_at(ACT_PREFAULT_CHOSEN);
}

/* Overtaken while faulting it in: the region is given up meanwhile. */
static void test_overtaken_while_faulting(void **state)
{
    (void)state;
    overtaken_at(ACT_PREFAULT_CLAIMED);
}

/* The exit's close while the helper is between its choice and its claim:
 * the helper, left running (act_rec_prefault_leave), goes on after the
 * spool's header is gone and must not touch it (it read chunks_used from a
 * NULL header there once: SIGSEGV after the program's last line). */
static void test_exit_close_before_claim(void **state)
{
    (void)state;
    char dir[64];
    record_until_stopped(dir, sizeof(dir), ACT_PREFAULT_CHOSEN);
    act_recorder_close_at_exit();
    assert_null(act_recorder_header());
    sem_post(&stop.go);
    settle(); /* the helper runs on, then ends: the process must still be here */
    stop_done(dir);
}

/* A steady, light recorder (a chunk every 4 ms, as an OpenCL training loop
 * fills them) gets a short window: about the chunks it takes in 20 ms, not
 * as many as it has used. The pages faulted in ahead and never used are
 * zeroed for nothing and unmapped at the exit, on the program's own exit
 * (0.38 us a page: 0.35 ms at 16 000 launches of stream_app). */
static void test_window_follows_the_rate(void **state)
{
    (void)state;
    char dir[64];
    tmpdir_make(dir, sizeof(dir), "pref");
    assert_int_equal(act_recorder_open(dir, CAPACITY, CHUNK), 0);
    struct timespec nap = {0, 4 * 1000000L};
    uint64_t used = 0;
    while ((used = act_recorder_header()->chunks_used) < 40) {
        for (int i = 0; i < 900 && act_recorder_header()->chunks_used == used; i++)
            record_one();
        nanosleep(&nap, NULL);
    }
    settle();
    uint32_t ahead = act_recorder_prefaulted() - (uint32_t)act_recorder_header()->chunks_used;
    print_message("chunks used %u, faulted in ahead %u\n",
                  (unsigned)act_recorder_header()->chunks_used, ahead);
    assert_true(ahead <= 12); /* 5 + 2 at this rate; as many as used (40) before */
    act_recorder_close();
    assert_int_equal(tmpdir_remove(dir), 0);
}

/* A test that failed half-way leaves its spool open and the hook set: the
 * next one starts clean all the same (its own failure, not this one's). */
static int teardown(void **state)
{
    (void)state;
    if (stop.armed) /* a helper stopped in the hook would never be joined */
        sem_post(&stop.go);
    act_recorder_close();
    stop_disarm();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_window_grows_with_use, teardown),
        cmocka_unit_test_teardown(test_reopen_after_exit_close, teardown),
        cmocka_unit_test_teardown(test_window_follows_the_rate, teardown),
        cmocka_unit_test_teardown(test_overtaken_before_claim, teardown),
        cmocka_unit_test_teardown(test_overtaken_while_faulting, teardown),
        cmocka_unit_test_teardown(test_exit_close_before_claim, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
