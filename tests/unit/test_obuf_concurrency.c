/*
 * test_obuf_concurrency.c -- the output buffer's background writer
 * (act_obuf_init_bg): what reaches the file is exactly what was put, in
 * order, whatever the sizes (pieces larger than the buffer included); a
 * failed write(2) comes back from act_obuf_flush as ACT_E_IO with its
 * errno; freeing while a write is pending waits for it; through gzip
 * (act_obuf_gzip) the file inflates to exactly what was put, with or
 * without the thread and through a pool of compressors (members in order),
 * and a full disk is ACT_E_IO from act_obuf_flush. Past its threshold a
 * plain file is written with O_DIRECT (act_obuf_direct): the same bytes,
 * whatever the pieces, explicit flushes at odd offsets and pieces larger
 * than the buffer; never through gzip. act_obuf_flush_ready hands what is
 * buffered to the thread only from 64 KiB, and the bytes stay in order
 * between ready and full flushes. An explicit flush writes in the caller,
 * without waking the thread (a handoff at a run's end waits on the
 * scheduler); act_obuf_threads_stop leaves a buffer that writes itself,
 * the same bytes before and after. Named
 * *concurrency* so that CI also runs it under ThreadSanitizer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "core/config.h"
#include "gunzip.h"
#include "writers/obuf.h"

/* Deterministic pieces of 1..300 bytes (the buffer below holds 256). */
static size_t piece(uint32_t *seed, char *out)
{
    *seed = *seed * 1103515245u + 12345u;
    size_t n = 1 + (*seed >> 16) % 300;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)('a' + (*seed + i) % 26);
    return n;
}

/* The file at fd holds exactly what the memory buffer m holds; both
 * buffers are freed and the file removed. */
static void assert_file_is(int fd, const char *path, act_obuf *f, act_obuf *m)
{
    char *got = malloc(m->len + 1);
    assert_non_null(got);
    assert_int_equal(pread(fd, got, m->len + 1, 0), (ssize_t)m->len);
    assert_memory_equal(got, m->buf, m->len);
    free(got);
    act_obuf_free(f);
    act_obuf_free(m);
    close(fd);
    unlink(path);
}

/* A temporary file behind f (a buffer of `cap` with its thread) and m,
 * the memory buffer that keeps a copy of what is put; its descriptor. */
static int temp_pair(char *path, act_obuf *f, act_obuf *m, size_t cap)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(act_obuf_init_bg(f, fd, cap), 0);
    assert_int_equal(act_obuf_init(m, -1, cap), 0);
    return fd;
}

/* `count` pieces from *seed, put in both buffers. */
static void put_pieces(act_obuf *f, act_obuf *m, uint32_t *seed, int count)
{
    char p[300];
    for (int i = 0; i < count; i++) {
        size_t n = piece(seed, p);
        act_obuf_put(f, p, n);
        act_obuf_put(m, p, n);
    }
}

static void test_same_bytes_in_order(void **state)
{
    (void)state;
    char path[] = "/tmp/act_obuf_XXXXXX";
    act_obuf f, m;
    int fd = temp_pair(path, &f, &m, 256);
    uint32_t seed = 7;
    char p[300];
    for (int i = 0; i < 20000; i++) {
        size_t n = piece(&seed, p);
        act_obuf_put(&f, p, n);
        act_obuf_put(&m, p, n);
        if (i % 1000 == 0)
            act_obuf_u64(&f, (uint64_t)i), act_obuf_u64(&m, (uint64_t)i);
    }
    assert_int_equal(act_obuf_flush(&f), 0);
    assert_int_equal(f.written, m.len);
    assert_file_is(fd, path, &f, &m);
}

/* Between bursts (a live trace while the program is quiet): from 64 KiB
 * buffered the thread writes it without a flush; less stays; the file is
 * still exactly what was put, in order, with full flushes in between. */
static void test_flush_ready(void **state)
{
    (void)state;
    char path[] = "/tmp/act_obuf_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    act_obuf f, m;
    assert_int_equal(act_obuf_init_bg(&f, fd, 1u << 20), 0);
    assert_int_equal(act_obuf_init(&m, -1, 256), 0);
    char p[300];
    uint32_t seed = 11;
    while (m.len < (60u << 10)) {
        size_t n = piece(&seed, p);
        act_obuf_put(&f, p, n);
        act_obuf_put(&m, p, n);
    }
    assert_int_equal(act_obuf_flush_ready(&f), 0);
    assert_int_equal(f.written, 0); /* under 64 KiB: kept */
    assert_int_equal(f.len, m.len);
    for (int round = 0; round < 40; round++) {
        size_t goal = m.len + (round % 3 != 2 ? 70u << 10 : 3000u << 10);
        while (m.len < goal) {
            size_t n = piece(&seed, p);
            act_obuf_put(&f, p, n);
            act_obuf_put(&m, p, n);
        }
        size_t before = f.written + f.len;
        assert_int_equal(act_obuf_flush_ready(&f), 0);
        assert_int_equal(f.written + f.len, before);
        if (round == 0) /* the thread was free: handed over up to an aligned offset */
            assert_true(f.len < 4096);
    }
    assert_int_equal(act_obuf_flush(&f), 0);
    assert_int_equal(f.written, m.len);
    assert_file_is(fd, path, &f, &m);
}

static void test_write_failure(void **state)
{
    (void)state;
    int fd = open("/dev/null", O_RDONLY); /* write(2) fails: EBADF */
    assert_true(fd >= 0);
    act_obuf f;
    assert_int_equal(act_obuf_init_bg(&f, fd, 64), 0);
    char p[300];
    uint32_t seed = 1;
    for (int i = 0; i < 100; i++) {
        size_t n = piece(&seed, p);
        act_obuf_put(&f, p, n);
    }
    errno = 0;
    assert_int_equal(act_obuf_flush(&f), ACT_E_IO);
    assert_int_equal(errno, EBADF);
    assert_int_equal(f.err, ACT_E_IO); /* sticky */
    act_obuf_free(&f);
    close(fd);
}

static void test_free_while_pending(void **state)
{
    (void)state;
    char path[] = "/tmp/act_obuf_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    act_obuf f;
    assert_int_equal(act_obuf_init_bg(&f, fd, 4096), 0);
    char p[300];
    memset(p, 'x', sizeof(p));
    for (int i = 0; i < 14; i++) /* 4200 bytes: one buffer handed over */
        act_obuf_put(&f, p, sizeof(p));
    uint64_t handed = f.written;
    act_obuf_free(&f); /* joins the thread after its write */
    assert_true(handed > 0);
    assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)handed);
    close(fd);
    unlink(path);
}

/* Inflate the whole gzip file at fd (every member, ending on a member
 * boundary) into a malloc'd buffer; *n its size, *members how many
 * members it held. */
static char *gunzip_fd(int fd, size_t *n, int *members)
{
    off_t sz = lseek(fd, 0, SEEK_END);
    unsigned char *in = malloc((size_t)sz + 1);
    assert_non_null(in);
    assert_int_equal(pread(fd, in, (size_t)sz, 0), (ssize_t)sz);
    char *out = gunzip_mem(in, (size_t)sz, n, members);
    assert_non_null(out);
    free(in);
    return out;
}

/* threads < 0: no writer thread; 0: the default pool. */
static void gzip_round_trip(int threads)
{
    char path[] = "/tmp/act_obuf_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    act_obuf f, m;
    assert_int_equal(threads >= 0 ? act_obuf_init_bg(&f, fd, 256) : act_obuf_init(&f, fd, 256), 0);
    assert_int_equal(act_obuf_gzip_threads(&f, 1, threads), 0);
    assert_int_equal(act_obuf_init(&m, -1, 256), 0);
    uint32_t seed = 11;
    char p[300];
    for (int i = 0; i < 20000; i++) {
        size_t n = piece(&seed, p);
        act_obuf_put(&f, p, n);
        act_obuf_put(&m, p, n);
    }
    assert_int_equal(act_obuf_flush(&f), 0);
    assert_int_equal(f.written, m.len);
    size_t n;
    int members;
    char *got = gunzip_fd(fd, &n, &members);
    assert_int_equal(n, m.len);
    assert_true(members > 1); /* one per flushed buffer */
    assert_memory_equal(got, m.buf, m.len);
    assert_true((size_t)lseek(fd, 0, SEEK_END) < m.len); /* it was compressed */
    free(got);
    act_obuf_free(&f);
    act_obuf_free(&m);
    close(fd);
    unlink(path);
}

static void test_gzip_with_thread(void **state)
{
    (void)state;
    gzip_round_trip(1);
}

/* Four compressors finishing in any order: the members still come out in
 * the order the buffers were filled (thousands of 256-byte buffers through
 * six slots). */
static void test_gzip_pool_in_order(void **state)
{
    (void)state;
    gzip_round_trip(4);
    gzip_round_trip(0);
}

static void test_gzip_without_thread(void **state)
{
    (void)state;
    gzip_round_trip(-1);
}

static void test_gzip_empty(void **state)
{
    (void)state;
    char path[] = "/tmp/act_obuf_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    act_obuf f;
    assert_int_equal(act_obuf_init_bg(&f, fd, 64), 0);
    assert_int_equal(act_obuf_gzip(&f, 1), 0);
    assert_int_equal(act_obuf_flush(&f), 0); /* one empty member */
    size_t n;
    int members;
    free(gunzip_fd(fd, &n, &members));
    assert_int_equal(n, 0);
    assert_int_equal(members, 1);
    act_obuf_free(&f);
    close(fd);
    unlink(path);
}

static void test_gzip_disk_full(void **state)
{
    (void)state;
    int fd = open("/dev/full", O_WRONLY); /* write(2) fails: ENOSPC */
    if (fd < 0)
        skip();
    act_obuf f;
    assert_int_equal(act_obuf_init_bg(&f, fd, 64), 0);
    assert_int_equal(act_obuf_gzip(&f, 1), 0);
    act_obuf_lit(&f, "{}");
    errno = 0;
    assert_int_equal(act_obuf_flush(&f), ACT_E_IO);
    assert_int_equal(errno, ENOSPC);
    act_obuf_free(&f);
    close(fd);
}

/* A full disk under a pool of four with many buffers in flight: the
 * failure comes back (no hang waiting for members that are never
 * written), and the puts after it are refused. */
static void test_gzip_pool_disk_full(void **state)
{
    (void)state;
    int fd = open("/dev/full", O_WRONLY);
    if (fd < 0)
        skip();
    act_obuf f;
    assert_int_equal(act_obuf_init_bg(&f, fd, 64), 0);
    assert_int_equal(act_obuf_gzip_threads(&f, 1, 4), 0);
    char p[300];
    uint32_t seed = 3;
    for (int i = 0; i < 2000; i++) {
        size_t n = piece(&seed, p);
        act_obuf_put(&f, p, n);
    }
    errno = 0;
    assert_int_equal(act_obuf_flush(&f), ACT_E_IO);
    assert_int_equal(errno, ENOSPC);
    assert_int_equal(f.err, ACT_E_IO);
    act_obuf_free(&f);
    close(fd);
}

/* O_DIRECT works where the tests write (the build tree's file system)? */
static int direct_supported(const char *path)
{
    int fd = open(path, O_WRONLY | O_DIRECT);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

/* Put ~6 MiB through a 64 KiB buffer made direct past `after`, with an
 * explicit flush every `flush_every` pieces (0: never) and a piece of 200
 * KiB (larger than the buffer) now and then; the file must hold exactly
 * the bytes put. Returns the bytes written direct. */
static uint64_t direct_round(uint64_t after, int flush_every, int gzip)
{
    char path[] = "act_obuf_direct_XXXXXX"; /* in the build tree, not a tmpfs */
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    act_obuf f, m;
    assert_int_equal(act_obuf_init_bg(&f, fd, 64 * 1024), 0);
    act_obuf_direct(&f, after);
    if (gzip)
        assert_int_equal(act_obuf_gzip(&f, 1), 0);
    assert_int_equal(act_obuf_init(&m, -1, 4096), 0);
    uint32_t seed = 11;
    char p[300];
    static char big[200 * 1024];
    for (int i = 0; m.len < 6u << 20; i++) {
        size_t n = piece(&seed, p);
        act_obuf_put(&f, p, n);
        act_obuf_put(&m, p, n);
        if (i % 5000 == 4999) {
            memset(big, 'A' + i % 26, sizeof(big));
            act_obuf_put(&f, big, sizeof(big));
            act_obuf_put(&m, big, sizeof(big));
        }
        if (flush_every && i % flush_every == flush_every - 1)
            assert_int_equal(act_obuf_flush(&f), 0);
    }
    assert_int_equal(act_obuf_flush(&f), 0);
    uint64_t direct = act_obuf_direct_bytes(&f);
    act_obuf_free(&f);
    if (!gzip) {
        char *got = malloc(m.len + 1);
        assert_non_null(got);
        assert_int_equal(pread(fd, got, m.len + 1, 0), (ssize_t)m.len);
        assert_memory_equal(got, m.buf, m.len);
        free(got);
    } else {
        size_t zlen;
        char *z = gunzip_fd(fd, &zlen, NULL);
        assert_non_null(z);
        assert_int_equal(zlen, m.len);
        assert_memory_equal(z, m.buf, m.len);
        free(z);
    }
    if (!direct_supported(path))
        direct = UINT64_MAX; /* the file system refuses: checked bytes only */
    act_obuf_free(&m);
    close(fd);
    unlink(path);
    return direct;
}

static void test_direct_same_bytes(void **state)
{
    (void)state;
    uint64_t d = direct_round(0, 0, 0);
    if (d != UINT64_MAX)
        assert_true(d > (4u << 20)); /* nearly all of ~6 MiB */
}

static void test_direct_after_threshold(void **state)
{
    (void)state;
    uint64_t d = direct_round(5u << 20, 0, 0);
    if (d != UINT64_MAX) {
        assert_true(d > 0);
        assert_true(d < (2u << 20)); /* only past the first 5 MiB */
    }
}

static void test_direct_odd_flushes(void **state)
{
    (void)state;
    /* explicit flushes leave the file at unaligned offsets: the next
     * full buffer realigns it, and direct writes resume */
    uint64_t d = direct_round(0, 3001, 0);
    if (d != UINT64_MAX)
        assert_true(d > (2u << 20));
}

/* The close's flush goes through the cache (obuf.c rule 6): a direct
 * write returns once the device has the bytes, and at the close that wait
 * was on `run`'s tail (1.0-1.3 ms for the last buffers of a 1.6 M-launch
 * trace). 16 aligned buffers of 64 KiB, direct from the first byte: the
 * last, written by the flush, is not direct; the others are. */
static void test_direct_not_at_close(void **state)
{
    (void)state;
    char path[] = "act_obuf_close_XXXXXX"; /* in the build tree, not a tmpfs */
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    act_obuf f;
    assert_int_equal(act_obuf_init_bg(&f, fd, 64 * 1024), 0);
    act_obuf_direct(&f, 0);
    static char block[64 * 1024];
    for (int i = 0; i < 16; i++) {
        memset(block, 'a' + i, sizeof(block));
        act_obuf_put(&f, block, sizeof(block));
    }
    assert_int_equal(act_obuf_flush(&f), 0);
    uint64_t direct = act_obuf_direct_bytes(&f);
    act_obuf_free(&f);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, 16 * sizeof(block));
    if (direct_supported(path)) {
        assert_true(direct >= 14 * sizeof(block));
        assert_true(direct <= 15 * sizeof(block));
    }
    close(fd);
    unlink(path);
}

static void test_direct_off(void **state)
{
    (void)state;
    assert_int_equal(direct_round(ACT_DIRECT_IO_OFF, 0, 0) % UINT64_MAX, 0);
}

static void test_direct_never_gzip(void **state)
{
    (void)state;
    assert_int_equal(direct_round(0, 0, 1) % UINT64_MAX, 0);
}

/* The threads of this process other than the caller: how many, and the
 * context switches they made so far (voluntary: each wake-up of a
 * thread that waits is one), taken once each of them sleeps: a thread
 * that has just handed its last write back may not have blocked yet, and
 * its going to sleep would count as a switch after the caller's look. */
static int other_threads(unsigned long *switches)
{
    for (int tries = 0;; tries++) {
        DIR *d = opendir("/proc/self/task");
        assert_non_null(d);
        int n = 0, awake = 0;
        *switches = 0;
        long self = (long)gettid();
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.' || atol(e->d_name) == self)
                continue;
            char path[300], line[128];
            snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
            FILE *f = fopen(path, "re");
            if (!f)
                continue; /* gone since */
            n++;
            while (fgets(line, sizeof(line), f)) {
                if (!strncmp(line, "State:", 6))
                    awake |= !strchr(line, 'S');
                if (!strncmp(line, "voluntary_ctxt_switches:", 24))
                    *switches += strtoul(line + 24, NULL, 10);
            }
            fclose(f);
        }
        closedir(d);
        if (!awake || tries >= 5000)
            return n;
        usleep(1000);
    }
}

/* An explicit flush writes what is buffered itself: before any buffer
 * was full, no thread is started for it; with the thread idle, the
 * thread is not woken (its context switches do not move). */
static void test_flush_in_caller(void **state)
{
    (void)state;
    char path[] = "/tmp/act_obuf_XXXXXX";
    act_obuf f, m;
    int fd = temp_pair(path, &f, &m, 256);
    unsigned long base_sw, before, after;
    int base = other_threads(&base_sw);
    act_obuf_put(&f, "head", 4);
    act_obuf_put(&m, "head", 4);
    assert_int_equal(act_obuf_flush(&f), 0);
    assert_int_equal(other_threads(&before), base); /* none started */
    uint32_t seed = 7;
    put_pieces(&f, &m, &seed, 20);           /* full buffers: the thread starts and writes */
    assert_int_equal(act_obuf_flush(&f), 0); /* the thread idle after it */
    assert_int_equal(other_threads(&before), base + 1);
    act_obuf_put(&f, "tail", 4);
    act_obuf_put(&m, "tail", 4);
    assert_int_equal(act_obuf_flush(&f), 0);
    assert_int_equal(other_threads(&after), base + 1);
    assert_int_equal(after, before);
    assert_file_is(fd, path, &f, &m);
}

/* act_obuf_threads_stop: the threads are gone, and what is put after is
 * written by the caller; the file (plain, or gzip through a pool) is
 * what was put, in order. */
static void threads_stop_round(int gzip)
{
    char path[] = "/tmp/act_obuf_XXXXXX";
    act_obuf f, m;
    int fd = temp_pair(path, &f, &m, 256);
    if (gzip)
        assert_int_equal(act_obuf_gzip_threads(&f, 1, 3), 0);
    unsigned long sw;
    int base = other_threads(&sw);
    uint32_t seed = 11;
    for (int half = 0; half < 2; half++) {
        put_pieces(&f, &m, &seed, 40);
        if (half == 0) {
            assert_true(other_threads(&sw) > base);
            assert_int_equal(act_obuf_threads_stop(&f), 0);
            assert_int_equal(other_threads(&sw), base);
            assert_null(f.bg);
        }
    }
    assert_int_equal(act_obuf_flush(&f), 0);
    if (!gzip) {
        assert_file_is(fd, path, &f, &m);
        return;
    }
    size_t n = 0;
    int members = 0;
    char *got = gunzip_fd(fd, &n, &members);
    assert_int_equal(n, m.len);
    assert_memory_equal(got, m.buf, m.len);
    free(got);
    act_obuf_free(&f);
    act_obuf_free(&m);
    close(fd);
    unlink(path);
}

static void test_threads_stop(void **state)
{
    (void)state;
    threads_stop_round(0);
    threads_stop_round(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes_in_order), cmocka_unit_test(test_write_failure),
        cmocka_unit_test(test_flush_ready),         cmocka_unit_test(test_free_while_pending),
        cmocka_unit_test(test_gzip_with_thread),    cmocka_unit_test(test_gzip_without_thread),
        cmocka_unit_test(test_gzip_empty),          cmocka_unit_test(test_gzip_disk_full),
        cmocka_unit_test(test_gzip_pool_in_order),  cmocka_unit_test(test_gzip_pool_disk_full),
        cmocka_unit_test(test_direct_same_bytes),   cmocka_unit_test(test_direct_after_threshold),
        cmocka_unit_test(test_direct_odd_flushes),  cmocka_unit_test(test_direct_off),
        cmocka_unit_test(test_direct_never_gzip),   cmocka_unit_test(test_direct_not_at_close),
        cmocka_unit_test(test_flush_in_caller),     cmocka_unit_test(test_threads_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
