/*
 * test_recorder_full.c -- the recorder at the moment its spool runs out:
 * once a record could not get a chunk, no later record of that thread may
 * be written into the chunk it gave up (it may belong to another thread by
 * then), however small the record and however much room that chunk had
 * left. Regression test: the fast path used to write there and
 * act_rec_commit() then crashed on the thread's NULL chunk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include "acceltrace.h"
#include "core/internal.h"
#include "core/record.h"
#include "spool_walk.h"
#include "tmpdir.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    tmpdir_make(dir, sizeof(dir), "full");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tmpdir_remove(dir);
}

/* 48-byte API records leave 16 bytes at the end of the first 4 KiB chunk
 * (after its segment and thread records) and 32 at the end of the second:
 * a 16-byte record would still fit there. */
static void test_small_record_after_full(void **state)
{
    (void)state;
    assert_int_equal(act_recorder_open(dir, 4096 + 2 * 4096, 4096), 0);
    char path[256];
    snprintf(path, sizeof(path), "%s", act_recorder_path());
    uint64_t written = 0;
    int i;
    _Static_assert(sizeof(act_rec_api) == 48, "the arithmetic above");
    for (i = 0; i < 1000; i++) {
        act_rec_api *r = act_rec_reserve(ACT_REC_API, sizeof(*r));
        if (!r)
            break;
        memset((char *)r + sizeof(r->h), 0, sizeof(*r) - sizeof(r->h));
        r->start = (uint64_t)i;
        act_rec_commit();
        written++;
    }
    assert_true(i < 1000); /* the spool ran out */
    /* Smaller records must be dropped too, not written anywhere. */
    for (int k = 0; k < 10; k++)
        assert_null(act_rec_reserve(ACT_REC_MARK, sizeof(act_rec_ts)));
    act_recorder_close();

    walk_stats ws;
    assert_int_equal(spool_walk(path, &ws, NULL, NULL), 0);
    assert_int_equal(ws.by_kind[ACT_REC_API], written);
    assert_int_equal(ws.by_kind[ACT_REC_MARK], 0);
    assert_int_equal(ws.hdr->dropped[ACT_REC_API], 1);
    assert_int_equal(ws.hdr->dropped[ACT_REC_MARK], 10);
    spool_unwalk(&ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_record_after_full),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
