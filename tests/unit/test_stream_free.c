/*
 * test_stream_free.c -- what the live build frees once written early
 * (src/timeline/stream_free.c, docs/architecture.md "Streaming", memory)
 * on a spool built byte by byte: thousands of ranges and API calls, enough
 * for blocks of them to be freed between feeds, still give the batch's
 * events and the batch's nesting count (the check run lane by lane as
 * slices settle); an API call recorded at its end that began before slices
 * already checked voids the early events (ACT_E_STATE).
 */
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
#include "live_build.h"
#include "spool_build.h"
#include "timeline/spool.h"
#include "timeline/timeline.h"

#define T(us) (2000000ull + (uint64_t)(us)*1000ull)
#define PARTS 8   /* segments of the one thread, one chunk each */
#define STEPS 400 /* ranges (each with an API call inside) per segment */

/* Thread 1 (tid 100): STEPS ranges "step" per segment, each with an API
 * call; every 50th call outlasts its range (a nesting violation). With
 * `outer`, the last segment ends with a call that began before everything
 * (recorded at its end, after slices that were checked already). */
static void scenario(sb *s, int outer)
{
    sb_init(s, 100, 64 << 10, PARTS);
    for (uint32_t part = 0; part < PARTS; part++) {
        sb_open_thread(s, part, 1, 100);
        sb_str(s, 1, "step");
        sb_str(s, 2, "clGetPlatformIDs");
        for (uint32_t i = 0; i < STEPS; i++) {
            uint64_t t = 100 * (part * STEPS + i) + 10;
            sb_ts(s, ACT_REC_RANGE_PUSH, 1, T(t));
            sb_ts(s, ACT_REC_RANGE_POP, 0, T(t + 50));
            sb_api(s, 2, T(t + 10), T(i % 50 ? t + 40 : t + 60), 0, 0, ACT_SOURCE_OPENCL);
        }
        if (outer && part == PARTS - 1)
            sb_api(s, 2, T(1), T(100 * PARTS * STEPS + 5), 0, 0, ACT_SOURCE_OPENCL);
    }
}

static void spool_file(int outer, char *dir, char *path, size_t len)
{
    assert_non_null(mkdtemp(dir));
    snprintf(path, len, "%s/100.acts", dir);
    sb s;
    scenario(&s, outer);
    assert_int_equal(sb_write(&s, path), 0);
    sb_free(&s);
}

typedef struct tally {
    uint64_t events, slices;
} tally;

static int count(act_timeline *tl, void *ctx)
{
    tally *t = ctx;
    for (size_t i = 0; i < tl->n_ev; i++) {
        t->events++;
        t->slices += tl->ev[i].ph == 'X';
    }
    tl->n_ev = 0;
    tl->n_args = 0;
    return 0;
}

/* Live build (live_build.h), fed until the feeds take nothing more; the
 * nesting count in *nest. */
static int build_live(const char *path, tally *out, uint64_t *nest)
{
    return lb_build_live(path, count, out, 4, NULL, nest);
}

static void build_batch(const char *path, tally *out, uint64_t *nest)
{
    lb_build_batch(path, count, out, nest);
}

static void test_freed_equals_batch(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_stream_free_XXXXXX", path[64];
    spool_file(0, dir, path, sizeof(path));
    tally live = {0}, batch = {0};
    uint64_t nl = 0, nb = 0;
    assert_int_equal(build_live(path, &live, &nl), 0);
    build_batch(path, &batch, &nb);
    assert_int_equal(live.events, batch.events);
    assert_int_equal(live.slices, batch.slices);
    assert_true(live.slices >= 2 * PARTS * STEPS);
    assert_int_equal(nb, PARTS * STEPS / 50); /* the calls that outlast their range */
    assert_int_equal(nl, nb);
    unlink(path);
    rmdir(dir);
}

static void test_void_outer_call(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_stream_free_XXXXXX", path[64];
    spool_file(1, dir, path, sizeof(path));
    tally live = {0}, batch = {0};
    uint64_t nl = 0, nb = 0;
    assert_int_equal(build_live(path, &live, &nl), ACT_E_STATE);
    build_batch(path, &batch, &nb);
    assert_int_equal(nb, PARTS * STEPS / 50);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_freed_equals_batch),
        cmocka_unit_test(test_void_outer_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
