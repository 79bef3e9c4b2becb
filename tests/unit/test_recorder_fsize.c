/*
 * test_recorder_fsize.c -- the program's RLIMIT_FSIZE is the program's
 * (docs/reliability.md "Resource limits of the program"): a spool opened
 * under a limit smaller than it is made within the limit, fills up like a
 * full spool (records dropped and counted, EFBIG in the header), and no
 * SIGXFSZ reaches the program; the one call that grows the file takes back
 * a SIGXFSZ it raised without touching one the program already had. The
 * trace writer's output (an in-process session writes in the program)
 * fails with EFBIG past the limit, the program's handler never called.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include "acceltrace.h"
#include "core/internal.h"
#include "core/record.h"
#include "core/recorder/recorder_int.h"
#include "spool_walk.h"
#include "tmpdir.h"
#include "writers/obuf.h"

#define CHUNK 4096u

static char dir[64];
static struct rlimit saved_limit;
static volatile sig_atomic_t caught;

static void on_xfsz(int sig)
{
    (void)sig;
    caught++;
}

static int setup(void **state)
{
    (void)state;
    tmpdir_make(dir, sizeof(dir), "fsize");
    getrlimit(RLIMIT_FSIZE, &saved_limit);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    setrlimit(RLIMIT_FSIZE, &saved_limit);
    return tmpdir_remove(dir);
}

static void fsize_limit(rlim_t bytes)
{
    struct rlimit rl = {bytes, saved_limit.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

static void xfsz_handle(void)
{
    struct sigaction sa = {.sa_handler = on_xfsz};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGXFSZ, &sa, NULL);
    caught = 0;
}

static void xfsz_mask(int how)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGXFSZ);
    pthread_sigmask(how, &s, NULL);
}

/* How many SIGXFSZ are pending (0, 1 or 2: this thread's and the
 * process's); takes them all. */
static int xfsz_take_all(void)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGXFSZ);
    struct timespec zero = {0, 0};
    int n = 0;
    while (n < 4 && sigtimedwait(&s, NULL, &zero) == SIGXFSZ)
        n++;
    return n;
}

static int xfsz_blocked(void)
{
    sigset_t s;
    pthread_sigmask(SIG_BLOCK, NULL, &s);
    return sigismember(&s, SIGXFSZ);
}

/* A spool asked for 64 chunks under a limit of the header and 3.5 chunks:
 * made with 3, the records beyond dropped and counted, EFBIG kept. */
static void test_spool_within_limit(void **state)
{
    (void)state;
    xfsz_handle();
    fsize_limit(ACT_SPOOL_HEADER_SIZE + 3 * CHUNK + CHUNK / 2);
    assert_int_equal(act_recorder_open(dir, ACT_SPOOL_HEADER_SIZE + 64 * CHUNK, CHUNK), 0);
    char path[256];
    snprintf(path, sizeof(path), "%s", act_recorder_path());
    uint64_t written = 0, dropped = 0;
    for (int i = 0; i < 1000; i++) {
        act_rec_ts *r = act_rec_reserve(ACT_REC_MARK, sizeof(*r));
        if (!r) {
            dropped++;
            continue;
        }
        r->ts = (uint64_t)i + 1;
        act_rec_commit();
        written++;
    }
    act_recorder_close();
    setrlimit(RLIMIT_FSIZE, &saved_limit);
    assert_int_equal(caught, 0);
    assert_true(written > 0 && dropped > 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, ACT_SPOOL_HEADER_SIZE + 3 * CHUNK);
    assert_int_equal(st.st_mode & 07777, 0600);
    walk_stats ws;
    assert_int_equal(spool_walk(path, &ws, NULL, NULL), 0);
    assert_int_equal(ws.hdr->chunk_count, 3);
    assert_int_equal(ws.by_kind[ACT_REC_MARK], written);
    assert_int_equal(ws.hdr->dropped[ACT_REC_MARK], dropped);
    assert_int_equal(ws.hdr->space_errno, EFBIG);
    spool_unwalk(&ws);
    signal(SIGXFSZ, SIG_DFL);
}

/* Past the limit (lowered after it was read): EFBIG, and the program's
 * handler sees nothing, its mask as it was. */
static void test_truncate_takes_its_signal_back(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/grow", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    xfsz_handle();
    fsize_limit(CHUNK);
    assert_int_equal(act_rec_spool_truncate(fd, 2 * CHUNK), EFBIG);
    assert_int_equal(act_rec_spool_truncate(fd, CHUNK), 0);
    setrlimit(RLIMIT_FSIZE, &saved_limit);
    assert_int_equal(caught, 0);
    assert_false(xfsz_blocked());
    close(fd);
    signal(SIGXFSZ, SIG_DFL);
}

/* The program blocks SIGXFSZ and already has one pending, on this thread
 * or process-wide: afterwards it still has exactly that one. */
static void test_truncate_leaves_the_programs_pending(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/pending", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    xfsz_mask(SIG_BLOCK);
    fsize_limit(CHUNK);
    for (int process_wide = 0; process_wide < 2; process_wide++) {
        if (process_wide)
            kill(getpid(), SIGXFSZ); /* one thread: process-directed, pending process-wide */
        else
            pthread_kill(pthread_self(), SIGXFSZ);
        assert_int_equal(act_rec_spool_truncate(fd, 2 * CHUNK), EFBIG);
        assert_true(xfsz_blocked());
        assert_int_equal(xfsz_take_all(), 1);
    }
    /* None pending: ours is taken back, none left. */
    assert_int_equal(act_rec_spool_truncate(fd, 2 * CHUNK), EFBIG);
    assert_int_equal(xfsz_take_all(), 0);
    setrlimit(RLIMIT_FSIZE, &saved_limit);
    xfsz_mask(SIG_UNBLOCK);
    close(fd);
}

/* 3 KiB of trace under a 1 KiB limit, written on this thread. */
static void test_trace_write_past_limit(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/trace", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    xfsz_handle();
    fsize_limit(1024);
    act_obuf b;
    assert_int_equal(act_obuf_init(&b, fd, 4096), 0);
    char line[64];
    memset(line, 'x', sizeof(line));
    for (int i = 0; i < 48; i++)
        act_obuf_put(&b, line, sizeof(line));
    assert_int_equal(act_obuf_flush(&b), ACT_E_IO);
    assert_int_equal(b.sys_errno, EFBIG);
    act_obuf_free(&b);
    setrlimit(RLIMIT_FSIZE, &saved_limit);
    assert_int_equal(caught, 0);
    assert_false(xfsz_blocked());
    close(fd);
    signal(SIGXFSZ, SIG_DFL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spool_within_limit),
        cmocka_unit_test(test_truncate_takes_its_signal_back),
        cmocka_unit_test(test_truncate_leaves_the_programs_pending),
        cmocka_unit_test(test_trace_write_past_limit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
