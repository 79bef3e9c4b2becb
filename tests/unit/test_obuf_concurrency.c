/*
 * test_obuf_concurrency.c -- the output buffer's background writer
 * (act_obuf_init_bg): what reaches the file is exactly what was put, in
 * order, whatever the sizes (pieces larger than the buffer included); a
 * failed write(2) comes back from act_obuf_flush as ACT_E_IO with its
 * errno; freeing while a write is pending waits for it. Named
 * *concurrency* so that CI also runs it under ThreadSanitizer.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "acceltrace.h"
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

static void test_same_bytes_in_order(void **state)
{
    (void)state;
    char path[] = "/tmp/act_obuf_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    act_obuf f, m;
    assert_int_equal(act_obuf_init_bg(&f, fd, 256), 0);
    assert_int_equal(act_obuf_init(&m, -1, 256), 0);
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
    char *got = malloc(m.len + 1);
    assert_non_null(got);
    assert_int_equal(pread(fd, got, m.len + 1, 0), (ssize_t)m.len);
    assert_memory_equal(got, m.buf, m.len);
    free(got);
    act_obuf_free(&f);
    act_obuf_free(&m);
    close(fd);
    unlink(path);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes_in_order),
        cmocka_unit_test(test_write_failure),
        cmocka_unit_test(test_free_while_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
