/*
 * live_build.h -- the streamed build of a spool, as `acceltrace run` does
 * it, for the streaming tests: open the spool live, feed the builder
 * `feeds` times (with the host events written early through `sink`), then
 * continue to the end as the export at the exit does; and the batch build
 * of the same spool to compare it with.
 */
#ifndef ACT_TEST_LIVE_BUILD_H
#define ACT_TEST_LIVE_BUILD_H

#include <stdint.h>

#include "timeline/spool.h"
#include "timeline/timeline.h"

/* Returns act_timeline_build_continue's (then _events') result; *early:
 * the device ops the feeds wrote; *nest: the nesting violations counted
 * (either may be NULL). */
static inline int lb_build_live(const char *path, int (*sink)(act_timeline *, void *), void *ctx,
                                int feeds, uint64_t *early, uint64_t *nest)
{
    act_spool sp;
    char err[256];
    assert_int_equal(act_spool_open_live(&sp, path, err, sizeof(err)), 0);
    act_timeline tl;
    act_tl_build *s;
    assert_int_equal(act_timeline_build_live(&tl, &sp, NULL, &s), 0);
    tl.sink = sink;
    tl.sink_ctx = ctx;
    act_timeline_build_online(s);
    for (int i = 0; i < feeds; i++)
        assert_int_equal(act_timeline_build_feed(s, NULL), 0);
    if (early)
        *early = act_timeline_build_devops_early(s);
    act_spool *const spools[1] = {&sp};
    int rc = act_timeline_build_continue(s, spools, 1);
    if (!rc)
        rc = act_timeline_build_events(s);
    if (nest)
        *nest = tl.counts.nesting_violations;
    act_timeline_build_finish(s);
    act_timeline_free(&tl);
    act_spool_close(&sp);
    return rc;
}

/* The batch build of the same spool, for comparison; *nest as above. */
static inline void lb_build_batch(const char *path, int (*sink)(act_timeline *, void *), void *ctx,
                                  uint64_t *nest)
{
    act_spool sp;
    char err[256];
    assert_int_equal(act_spool_open(&sp, path, err, sizeof(err)), 0);
    act_spool *const spools[1] = {&sp};
    act_timeline tl;
    act_tl_build *s;
    assert_int_equal(act_timeline_build_start(&tl, spools, 1, NULL, &s), 0);
    tl.sink = sink;
    tl.sink_ctx = ctx;
    assert_int_equal(act_timeline_build_events(s), 0);
    if (nest)
        *nest = tl.counts.nesting_violations;
    act_timeline_build_finish(s);
    act_timeline_free(&tl);
    act_spool_close(&sp);
}

#endif
