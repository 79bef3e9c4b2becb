/*
 * test_recorder_prefault.c -- the pre-fault helper's window grows with use:
 * a process that records little has only a couple of chunks populated ahead
 * (it used to be charged the whole 8 MiB window at open, and again when the
 * spool was deleted), and one that records a lot gets chunks populated
 * ahead of what it has used. The helper's progress is read directly
 * (act_recorder_prefaulted): the resident size of the mapping depends on
 * the page cache's folio sizes, which vary from run to run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include <time.h>

#include "core/internal.h"
#include "core/record.h"
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
    assert_int_equal(act_recorder_prefaulted(), 2 * used); /* as many ahead as used */

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_grows_with_use),
        cmocka_unit_test(test_reopen_after_exit_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
