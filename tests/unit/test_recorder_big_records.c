/*
 * test_recorder_big_records.c -- records larger than the recycling
 * threshold (device ops are 144 bytes) must survive chunk switches: a
 * chunk given up because a record did not fit used to be recycled and
 * handed straight back to the same thread, which then dropped the record.
 */
/* cmocka.h needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "acceltrace.h"
#include "core/internal.h"
#include "spool_walk.h"
#include "tmpdir.h"

#define OPS 5000

static void test_device_ops_across_chunks(void **state)
{
    (void)state;
    char dir[64];
    tmpdir_make(dir, sizeof(dir), "big");
    assert_int_equal(act_recorder_open(dir, 16u << 20, 64u << 10), 0);
    for (int i = 0; i < OPS; i++) {
        act_rec_device_op *r = act_rec_reserve(ACT_REC_DEVICE_OP, sizeof(*r));
        assert_non_null(r);
        memset((char *)r + sizeof(r->h), 0, sizeof(*r) - sizeof(r->h));
        r->corr = (uint64_t)i + 1;
        act_rec_commit();
    }
    act_spool_header *h = act_recorder_header();
    assert_int_equal(h->dropped[ACT_REC_DEVICE_OP], 0);
    walk_stats ws;
    assert_int_equal(spool_walk(act_recorder_path(), &ws, NULL, NULL), 0);
    assert_int_equal(ws.by_kind[ACT_REC_DEVICE_OP], OPS);
    assert_true(ws.chunks > 5); /* the records did cross chunk boundaries */
    spool_unwalk(&ws);
    act_recorder_close();
    assert_int_equal(tmpdir_remove(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_ops_across_chunks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
