/*
 * test_recorder_capacity.c -- the spool's automatic capacity (a spool
 * asked with capacity 0: no --buffer-size, docs/reliability.md "Memory"):
 * a quarter of the space free on its file system, from ACT_SPOOL_AUTO_MIN
 * to ACT_SPOOL_AUTO_MAX; the file as large as that (sparse); within an
 * address-space limit that cannot map it, the minimum; and a size given
 * is taken as given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include "acceltrace.h"
#include "core/internal.h"
#include "core/recorder/recorder_int.h"
#include "tmpdir.h"

#define CHUNK (128u << 10)

static char dir[64];

static int setup(void **state)
{
    (void)state;
    tmpdir_make(dir, sizeof(dir), "capacity");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tmpdir_remove(dir);
}

/* The size of this process's spool file in dir. */
static uint64_t spool_file_size(void)
{
    struct stat st;
    assert_int_equal(stat(act_rec_state.path, &st), 0);
    return (uint64_t)st.st_size;
}

static uint64_t dir_avail(void)
{
    struct statvfs v;
    assert_int_equal(statvfs(dir, &v), 0);
    return (uint64_t)v.f_bavail * v.f_frsize;
}

static void test_auto_size_rule(void **state)
{
    (void)state;
    assert_int_equal(act_rec_spool_auto_size(0), ACT_SPOOL_AUTO_MIN);
    assert_int_equal(act_rec_spool_auto_size(4 * ACT_SPOOL_AUTO_MIN - 4), ACT_SPOOL_AUTO_MIN);
    assert_int_equal(act_rec_spool_auto_size(4 * ACT_SPOOL_AUTO_MIN + 400),
                     ACT_SPOOL_AUTO_MIN + 100);
    assert_int_equal(act_rec_spool_auto_size(4 * ACT_SPOOL_AUTO_MAX), ACT_SPOOL_AUTO_MAX);
    assert_int_equal(act_rec_spool_auto_size(UINT64_MAX), ACT_SPOOL_AUTO_MAX);
}

/* Capacity 0: the file is as large as the rule says for its file system
 * (whole chunks after the header), and the header says so. */
static void test_open_auto(void **state)
{
    (void)state;
    uint64_t want = act_rec_spool_auto_size(dir_avail());
    assert_int_equal(act_recorder_open(dir, 0, CHUNK), 0);
    uint64_t size = spool_file_size();
    assert_true(size <= want && size + CHUNK > want);
    assert_int_equal(act_recorder_header()->capacity, size);
    assert_true(size >= ACT_SPOOL_AUTO_MIN - CHUNK);
    act_recorder_close();
}

/* A size given is the size, whatever the disk has. */
static void test_open_given(void **state)
{
    (void)state;
    assert_int_equal(act_recorder_open(dir, 8u << 20, CHUNK), 0);
    assert_int_equal(spool_file_size(), 8u << 20);
    act_recorder_close();
}

/* An address space that cannot take the automatic mapping (ulimit -v)
 * gets the minimum, not a refusal. */
static void test_open_auto_as_limited(void **state)
{
    (void)state;
    if (act_rec_spool_auto_size(dir_avail()) <= ACT_SPOOL_AUTO_MIN) {
        skip(); /* the disk is too full for more than the minimum anyway */
        return;
    }
    struct rlimit saved, rl;
    assert_int_equal(getrlimit(RLIMIT_AS, &saved), 0);
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    /* Room for the minimum and then some, not for the automatic size. */
    rl.rlim_cur = (rlim_t)pages * 4096 + ACT_SPOOL_AUTO_MIN + (64u << 20);
    rl.rlim_max = saved.rlim_max;
    assert_true(rl.rlim_cur - pages * 4096 < act_rec_spool_auto_size(dir_avail()));
    assert_int_equal(setrlimit(RLIMIT_AS, &rl), 0);
    int rc = act_recorder_open(dir, 0, CHUNK);
    uint64_t size = rc == 0 ? spool_file_size() : 0;
    if (rc == 0)
        act_recorder_close();
    setrlimit(RLIMIT_AS, &saved);
    assert_int_equal(rc, 0);
    assert_int_equal(size, ACT_SPOOL_AUTO_MIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_size_rule),
        cmocka_unit_test(test_open_auto),
        cmocka_unit_test(test_open_given),
        cmocka_unit_test(test_open_auto_as_limited),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
