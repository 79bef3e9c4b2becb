/*
 * test_devstream.c -- device ops written while their process runs
 * (src/timeline/devstream.c, docs/architecture.md "Streaming" invariant 8)
 * on a spool built byte by byte: the live build, fed before the spool is
 * read to its end, writes some of the first queue's ops and their flows
 * early, and its events are the batch build's event for event (lanes,
 * flow ids, External ids); when a queue with a lower handle shows up on the
 * same device after that (the group written early was not the first), the
 * live build says its early events are void (ACT_E_STATE).
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

#define T(us)  (2000000ull + (uint64_t)(us)*1000ull)
#define DEV    0xd1ull
#define QA     0x200ull /* the queue of the launches */
#define QLOW   0x100ull /* a later queue with a lower handle (the void case) */
#define LAUNCH 12       /* launches per segment of the launching thread */

/* pid 100: thread 1 (tid 100) pushes "step" and launches; thread 2 (tid
 * 101, PoCL's callback thread) records the ops, in segments the live
 * reader can read past (each followed by a later segment of its thread)
 * except the last. The ops overlap in pairs: two sub-lanes. */
static void scenario(sb *s, uint64_t last_queue)
{
    sb_init(s, 100, 4096, 6);
    uint64_t corr = 0;
    for (uint32_t part = 0; part < 3; part++) {
        sb_open_thread(s, 2 * part, 1, 100);
        sb_str(s, 1, "step");
        sb_str(s, 2, "clEnqueueNDRangeKernel");
        sb_ts(s, ACT_REC_RANGE_PUSH, 1, T(1000 * part));
        uint64_t first = corr + 1;
        for (uint32_t i = 0; i < LAUNCH; i++) {
            corr++;
            sb_api(s, 2, T(1000 * part + 10 * i + 1), T(1000 * part + 10 * i + 5), corr,
                   (uint64_t)1 << 32 | (part + 1), ACT_SOURCE_OPENCL);
        }
        sb_ts(s, ACT_REC_RANGE_POP, 0, T(1000 * part + 900));
        sb_open_thread(s, 2 * part + 1, 2, 101);
        sb_str(s, 1, "inc");
        sb_str(s, 2, "OpenCL");
        sb_str(s, 3, "cpu");
        if (part == 0)
            sb_device(s, 3, DEV, 2, ACT_SOURCE_OPENCL, 0);
        uint64_t q = part == 2 ? last_queue : QA;
        for (uint32_t i = 0; i < LAUNCH; i++) {
            uint64_t st = T(1000 * part + 10 * i + 100);
            sb_op(s, 1, ACT_OP_KERNEL, DEV, q, st, st + (i % 2 ? 8000 : 15000), first + i,
                  ACT_SOURCE_OPENCL);
        }
    }
}

/* The events a build hands its sink, one line each (order kept). */
typedef struct lines {
    char **v;
    size_t n, cap;
} lines;

static void add_line(lines *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->v = realloc(l->v, l->cap * sizeof(*l->v));
        assert_non_null(l->v);
    }
    l->v[l->n++] = strdup(s);
}

static int collect(act_timeline *tl, void *ctx)
{
    char buf[2048];
    for (size_t i = 0; i < tl->n_ev; i++) {
        const act_tl_event *e = &tl->ev[i];
        int n = snprintf(buf, sizeof(buf), "%c %.*s pid=%u tid=%u ts=%llu dur=%llu id=%llu", e->ph,
                         (int)e->name.n, e->name.p, e->pid, e->tid,
                         (unsigned long long)(e->ph == 'M' ? 0 : e->ts - tl->base_ns),
                         (unsigned long long)e->dur, (unsigned long long)e->id);
        for (uint32_t k = 0; k < e->nargs && n < (int)sizeof(buf) - 200; k++) {
            const act_tl_arg *a = &tl->args[e->arg0 + k];
            if (a->type == ACT_ARG_STR)
                n += snprintf(buf + n, sizeof(buf) - (size_t)n, " %.*s=%.*s", (int)a->key.n,
                              a->key.p, (int)a->v.s.n, a->v.s.p);
            else
                n += snprintf(buf + n, sizeof(buf) - (size_t)n, " %.*s:%u=%llx", (int)a->key.n,
                              a->key.p, a->type, (unsigned long long)a->v.u);
        }
        add_line(ctx, buf);
    }
    tl->n_ev = 0;
    tl->n_args = 0;
    return 0;
}

static int line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void lines_free(lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

/* Lines of one lane and kind ("ph pid tid"), in order. */
static size_t lane_of(const lines *l, const char *ph_pid_tid, char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < l->n && n < max; i++) {
        char key[64];
        unsigned pid, tid;
        char ph;
        if (sscanf(l->v[i], "%c %*s pid=%u tid=%u", &ph, &pid, &tid) == 3) {
            snprintf(key, sizeof(key), "%c %u %u", ph, pid, tid);
            if (!strcmp(key, ph_pid_tid))
                out[n++] = l->v[i];
        }
    }
    return n;
}

/* Live build of `path` (live_build.h), fed until a feed takes nothing
 * more; *early: device ops written by the feeds. */
static int build_live(const char *path, lines *out, uint64_t *early)
{
    return lb_build_live(path, collect, out, 20, early, NULL);
}

static void build_batch(const char *path, lines *out)
{
    lb_build_batch(path, collect, out, NULL);
}

static void spool_file(uint64_t last_queue, char *dir, char *path, size_t len)
{
    assert_non_null(mkdtemp(dir));
    snprintf(path, len, "%s/100.acts", dir);
    sb s;
    scenario(&s, last_queue);
    assert_int_equal(sb_write(&s, path), 0);
    sb_free(&s);
}

static void test_equals_batch(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_devstream_XXXXXX", path[64];
    spool_file(QA, dir, path, sizeof(path));
    lines live = {0}, batch = {0};
    uint64_t early = 0;
    assert_int_equal(build_live(path, &live, &early), 0);
    build_batch(path, &batch);
    /* Some ops were written early, not all (the last segment waited). */
    assert_true(early > 0);
    assert_true(early < 3 * LAUNCH);
    /* The same events... */
    assert_int_equal(live.n, batch.n);
    char **a = malloc(live.n * sizeof(*a)), **b = malloc(batch.n * sizeof(*b));
    assert_non_null(a);
    assert_non_null(b);
    memcpy(a, live.v, live.n * sizeof(*a));
    memcpy(b, batch.v, batch.n * sizeof(*b));
    qsort(a, live.n, sizeof(*a), line_cmp);
    qsort(b, batch.n, sizeof(*b), line_cmp);
    for (size_t i = 0; i < live.n; i++)
        assert_string_equal(a[i], b[i]);
    /* ... those of each lane and kind in the same order: the device's two
     * sub-lanes, the flows' ends there and their starts on the launching
     * thread. */
    static const char *const lanes[] = {"X 0 1", "X 0 2", "f 0 1", "f 0 2", "s 100 100"};
    char *la[64], *lb[64];
    for (size_t k = 0; k < sizeof(lanes) / sizeof(lanes[0]); k++) {
        size_t na = lane_of(&live, lanes[k], la, 64), nb = lane_of(&batch, lanes[k], lb, 64);
        assert_int_equal(na, nb);
        assert_true(na > 0);
        for (size_t i = 0; i < na; i++)
            assert_string_equal(la[i], lb[i]);
    }
    free(a);
    free(b);
    lines_free(&live);
    lines_free(&batch);
    unlink(path);
    rmdir(dir);
}

static void test_void_lower_queue(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_devstream_XXXXXX", path[64];
    spool_file(QLOW, dir, path, sizeof(path));
    lines live = {0};
    uint64_t early = 0;
    assert_int_equal(build_live(path, &live, &early), ACT_E_STATE);
    assert_true(early > 0);
    lines_free(&live);
    unlink(path);
    rmdir(dir);
}

/* PoCL's in-order queue: a kernel's START can come before the previous
 * kernel's (2 582 of 40 000 launches of stream_app, by up to 13.5 us). The
 * live reader has read the first four launches and their ops (thread 2,
 * PoCL's callback thread), but not the app thread's newest segment: the
 * fifth launch and its op, recorded inline by the app thread (its callback
 * ran inside clSetEventCallback), which starts between the first and the
 * second op. Nothing may be written early that it sorts before: only what
 * starts before the fifth launch, none here. Writing up to the latest op
 * read (ops 1-3) voided the early events at the exit, and the whole trace
 * was written anew there. */
static void scenario_inverted(sb *s)
{
    sb_init(s, 100, 4096, 3);
    sb_open_thread(s, 0, 1, 100);
    sb_str(s, 1, "step");
    sb_str(s, 2, "clEnqueueNDRangeKernel");
    sb_str(s, 3, "inc");
    sb_ts(s, ACT_REC_RANGE_PUSH, 1, T(0));
    for (uint32_t i = 0; i < 4; i++)
        sb_api(s, 2, T(10 * i + 1), T(10 * i + 5), i + 1, (uint64_t)1 << 32 | 1, ACT_SOURCE_OPENCL);
    sb_ts(s, ACT_REC_RANGE_POP, 0, T(90));
    sb_open_thread(s, 1, 2, 101);
    sb_str(s, 1, "inc");
    sb_str(s, 2, "OpenCL");
    sb_str(s, 3, "cpu");
    sb_device(s, 3, DEV, 2, ACT_SOURCE_OPENCL, 0);
    for (uint32_t i = 0; i < 4; i++)
        sb_op(s, 1, ACT_OP_KERNEL, DEV, QA, T(100 + 10 * i), T(105 + 10 * i), i + 1,
              ACT_SOURCE_OPENCL);
    sb_open_thread(s, 2, 1, 100);
    sb_str(s, 1, "step");
    sb_str(s, 2, "clEnqueueNDRangeKernel");
    sb_str(s, 3, "inc");
    sb_ts(s, ACT_REC_RANGE_PUSH, 1, T(95));
    sb_op(s, 3, ACT_OP_KERNEL, DEV, QA, T(106), T(108), 5, ACT_SOURCE_OPENCL);
    sb_api(s, 2, T(96), T(109), 5, (uint64_t)1 << 32 | 2, ACT_SOURCE_OPENCL);
    sb_ts(s, ACT_REC_RANGE_POP, 0, T(110));
}

/* Build `scenario`'s spool live and in a batch: the live build is not
 * void and makes the batch's events (in another order); returns the
 * device ops it wrote early. */
static uint64_t live_matches_batch(void (*scenario)(sb *))
{
    char dir[] = "/tmp/act_devstream_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/100.acts", dir);
    sb s;
    scenario(&s);
    assert_int_equal(sb_write(&s, path), 0);
    sb_free(&s);
    lines live = {0}, batch = {0};
    uint64_t early = 0;
    assert_int_equal(build_live(path, &live, &early), 0); /* not void */
    build_batch(path, &batch);
    assert_int_equal(live.n, batch.n);
    qsort(live.v, live.n, sizeof(*live.v), line_cmp);
    qsort(batch.v, batch.n, sizeof(*batch.v), line_cmp);
    for (size_t i = 0; i < live.n; i++)
        assert_string_equal(live.v[i], batch.v[i]);
    lines_free(&live);
    lines_free(&batch);
    unlink(path);
    rmdir(dir);
    return early;
}

static void test_start_before_the_last_written(void **state)
{
    (void)state;
    assert_int_equal(live_matches_batch(scenario_inverted), 0);
}

/* A thread that launched once and then made no call (it set something
 * up, then waited) must not hold back what the others launch: its next
 * launch, if any, starts after the ops read since, which started long
 * after its last call. Thread 1 launches at 1 us; thread 3 launches
 * twelve kernels two seconds later; their ops are read. Some of them are
 * written early (none were, and the launcher kept every op of a long run
 * in memory, while only the first thread's last call bounded what could
 * be written). */
static void scenario_idle_launcher(sb *s)
{
    sb_init(s, 100, 4096, 7);
    sb_open_thread(s, 0, 1, 100);
    sb_str(s, 2, "clEnqueueNDRangeKernel");
    sb_api(s, 2, T(1), T(5), 1, 0, ACT_SOURCE_OPENCL);
    sb_open_thread(s, 1, 2, 101);
    sb_str(s, 1, "inc");
    sb_str(s, 2, "OpenCL");
    sb_str(s, 3, "cpu");
    sb_device(s, 3, DEV, 2, ACT_SOURCE_OPENCL, 0);
    sb_op(s, 1, ACT_OP_KERNEL, DEV, QA, T(10), T(15), 1, ACT_SOURCE_OPENCL);
    sb_open_thread(s, 2, 3, 102);
    sb_str(s, 2, "clEnqueueNDRangeKernel");
    for (uint32_t i = 0; i < 12; i++)
        sb_api(s, 2, T(2000000 + 10 * i), T(2000000 + 10 * i + 5), i + 2, 0, ACT_SOURCE_OPENCL);
    sb_open_thread(s, 3, 2, 101);
    sb_str(s, 1, "inc");
    for (uint32_t i = 0; i < 12; i++)
        sb_op(s, 1, ACT_OP_KERNEL, DEV, QA, T(2000000 + 10 * i + 100), T(2000000 + 10 * i + 105),
              i + 2, ACT_SOURCE_OPENCL);
    sb_open_thread(s, 4, 3, 102); /* thread 3 goes on */
    sb_str(s, 2, "clFinish");
    sb_api(s, 2, T(2000300), T(2000400), 0, 0, ACT_SOURCE_OPENCL);
    /* Thread 1's next segment (a mark, no call): its first one ended, and
     * no call of it after 5 us is read. */
    sb_open_thread(s, 5, 1, 100);
    sb_str(s, 1, "tick");
    sb_ts(s, ACT_REC_MARK, 1, T(2000500));
    /* Thread 2 goes on too: its segment of the twelve ops ended (record.h
     * S1), they can be read while the program runs. */
    sb_open_thread(s, 6, 2, 101);
    sb_str(s, 1, "tock");
    sb_ts(s, ACT_REC_MARK, 1, T(2000600));
}

static void test_idle_launcher(void **state)
{
    (void)state;
    assert_true(live_matches_batch(scenario_idle_launcher) > 1); /* op 1 and some of thread 3's */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equals_batch),
        cmocka_unit_test(test_void_lower_queue),
        cmocka_unit_test(test_start_before_the_last_written),
        cmocka_unit_test(test_idle_launcher),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
