/*
 * test_range_fast_path.c -- correctness of the recorder's range hot path
^ * (recorder/): the TSC-based fast clock stays on CLOCK_MONOTONIC_RAW and
 * never runs backwards within a thread; the pointer cache never gives a
 * changed buffer the old name; NULL and unbalanced calls are refused and
 * counted; with no tool the inline wrappers stop entering the library and
 * resume when recording starts. And its sibling for API records
 * (act_rec_api_emit, act_rec_api_here): the same records, names and range
 * links as the general path, across chunk switches. Speed is measured in
 * bench/, never here.
 */
/* cmocka.h needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>
#include <time.h>

#include "acceltrace.h"
#include "core/internal.h"
#include "core/recorder/recorder_int.h"
#include "spool_walk.h"
#include "tmpdir.h"

#define PAIRS        4000
#define TOLERANCE_NS 1000 /* far above the expected error (a few ns), far below a bug */

static char dir[64];
static uint64_t before[PAIRS], after[PAIRS];

static int setup(void **state)
{
    (void)state;
    tmpdir_make(dir, sizeof(dir), "fast");
    assert_int_equal(act_recorder_open(dir, 64u << 20, 64u << 10), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    act_recorder_close();
    return tmpdir_remove(dir);
}

typedef struct seen {
    char names[64][16]; /* string id -> bytes (main thread only) */
    uint64_t push_ts[PAIRS + 16];
    char push_name[PAIRS + 16][16];
    size_t pushes;
    uint64_t last_ts;
    uint64_t backwards;
} seen;

static void collect(const act_rec_hdr *r, uint32_t serial, void *arg)
{
    (void)serial;
    seen *s = arg;
    if (r->kind == ACT_REC_STRING) {
        const act_rec_string *str = (const act_rec_string *)r;
        if (r->aux < 64 && str->len < 16)
            memcpy(s->names[r->aux], str + 1, str->len);
        return;
    }
    if (r->kind != ACT_REC_RANGE_PUSH && r->kind != ACT_REC_RANGE_POP)
        return;
    uint64_t ts = ((const act_rec_ts *)r)->ts;
    if (ts < s->last_ts)
        s->backwards++;
    s->last_ts = ts;
    if (r->kind == ACT_REC_RANGE_PUSH && s->pushes < PAIRS + 16) {
        s->push_ts[s->pushes] = ts;
        if (r->aux < 64)
            memcpy(s->push_name[s->pushes], s->names[r->aux], 16);
        s->pushes++;
    }
}

/* No tool attached: the inline wrappers learn it on the first call and
 * stop entering the library; opening a recorder turns them back on. */
static void test_off_then_on(void **state)
{
    (void)state;
    unsetenv("ACCELTRACE_SPOOL_DIR");
    assert_int_equal(act_range_push("off"), ACT_E_DISABLED);
    assert_int_equal(*act__idle_ptr, 1);
    assert_int_equal(act_range_pop(), ACT_E_DISABLED);
    assert_int_equal(setup(NULL), 0);
    assert_int_equal(*act__idle_ptr, 0);
    assert_int_equal(act_range_push("on"), ACT_OK);
    assert_int_equal(act_range_pop(), ACT_OK);
    assert_int_equal(teardown(NULL), 0);
}

static void test_clock_names_and_errors(void **state)
{
    (void)state;
    /* Spread the pairs over ~40 ms so that threads re-anchor many times. */
    for (int i = 0; i < PAIRS; i++) {
        before[i] = act_clock_now();
        assert_int_equal(act_range_push("fast.literal"), ACT_OK);
        assert_int_equal(act_range_pop(), ACT_OK);
        after[i] = act_clock_now();
        if (i % 100 == 0) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    /* A buffer whose bytes change must be recorded with its new bytes. */
    char buf[16];
    strcpy(buf, "alpha");
    assert_int_equal(act_range_push(buf), ACT_OK);
    assert_int_equal(act_range_pop(), ACT_OK);
    strcpy(buf, "beta");
    assert_int_equal(act_range_push(buf), ACT_OK);
    assert_int_equal(act_range_pop(), ACT_OK);
    strcpy(buf, "alpha");
    assert_int_equal(act_range_push(buf), ACT_OK);
    assert_int_equal(act_range_pop(), ACT_OK);

    assert_int_equal(act_range_push(NULL), ACT_E_INVAL);
    uint64_t unbalanced = act_recorder_header()->unbalanced_pops;
    assert_int_equal(act_range_pop(), ACT_E_UNBALANCED);
    assert_int_equal(act_recorder_header()->unbalanced_pops, unbalanced + 1);

    walk_stats ws;
    static seen s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(spool_walk(act_recorder_path(), &ws, collect, &s), 0);
    assert_int_equal(ws.torn, 0);
    assert_int_equal(s.pushes, PAIRS + 3);
    assert_int_equal(s.backwards, 0);
    for (int i = 0; i < PAIRS; i++) {
        assert_true(s.push_ts[i] + TOLERANCE_NS >= before[i]);
        assert_true(s.push_ts[i] <= after[i] + TOLERANCE_NS);
        assert_string_equal(s.push_name[i], "fast.literal");
    }
    assert_string_equal(s.push_name[PAIRS], "alpha");
    assert_string_equal(s.push_name[PAIRS + 1], "beta");
    assert_string_equal(s.push_name[PAIRS + 2], "alpha");
    spool_unwalk(&ws);
}

/* API records, written in place when the name is a literal already in
 * the chunk: every field as given, the enclosing range (its sequence
 * number, 0 outside any), names right for a buffer whose bytes change. */
#define APIS 3000 /* 48 B each: several 64 KiB chunks */

typedef struct api_seen {
    char names[64][16];
    uint32_t pushes; /* RANGE_PUSH records so far: the open range's number */
    uint32_t serial;
    size_t n, bad;
    char last_name[16];
} api_seen;

static void collect_api(const act_rec_hdr *r, uint32_t serial, void *arg)
{
    api_seen *s = arg;
    if (r->kind == ACT_REC_STRING) {
        const act_rec_string *str = (const act_rec_string *)r;
        if (r->aux < 64 && str->len < 16)
            memcpy(s->names[r->aux], str + 1, str->len);
    } else if (r->kind == ACT_REC_RANGE_PUSH) {
        s->pushes++;
    } else if (r->kind == ACT_REC_API) {
        const act_rec_api *a = (const act_rec_api *)r;
        size_t i = s->n++;
        /* Records i < APIS: name "fast.api", start i, end i + 1, result -i,
         * corr i for the act_rec_api_emit ones (odd i), inside a range for
         * i % 4 == 1 or 2. */
        uint64_t ext = (i % 4 == 1 || i % 4 == 2) ? ((uint64_t)serial << 32) | s->pushes : 0;
        if (i < APIS &&
            (strcmp(s->names[r->aux & 63], "fast.api") != 0 || a->start != i || a->end != i + 1 ||
             a->result != -(int32_t)i || a->corr != (i % 2 ? i : 0) || a->ext != ext ||
             a->source != ACT_SOURCE_OPENCL))
            s->bad++;
        memcpy(s->last_name, s->names[r->aux & 63], 16);
    }
}

static void test_api_records(void **state)
{
    (void)state;
    for (uint64_t i = 0; i < APIS; i++) {
        int in_range = i % 4 == 1 || i % 4 == 2;
        if (i % 4 == 1)
            assert_int_equal(act_range_push("fast.range"), ACT_OK);
        if (i % 2)
            assert_int_equal(act_rec_api_emit("fast.api", i, i + 1, i,
                                              in_range ? act_range_current_ext() : 0, -(int32_t)i,
                                              ACT_SOURCE_OPENCL),
                             0);
        else
            assert_int_equal(act_rec_api_here("fast.api", i, i + 1, -(int32_t)i, ACT_SOURCE_OPENCL),
                             0);
        if (i % 4 == 2)
            assert_int_equal(act_range_pop(), ACT_OK);
    }
    char buf[16];
    strcpy(buf, "first");
    assert_int_equal(act_rec_api_here(buf, 0, 1, 0, ACT_SOURCE_OPENCL), 0);
    strcpy(buf, "second");
    assert_int_equal(act_rec_api_here(buf, 0, 1, 0, ACT_SOURCE_OPENCL), 0);

    walk_stats ws;
    static api_seen s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(spool_walk(act_recorder_path(), &ws, collect_api, &s), 0);
    assert_int_equal(ws.torn, 0);
    assert_true(ws.chunks > 2);
    assert_int_equal(s.n, APIS + 2);
    assert_int_equal(s.bad, 0);
    assert_string_equal(s.last_name, "second");
    spool_unwalk(&ws);
}

/* Literals whose pointers share a place in the thread's pointer cache:
 * two names used in turn (clEnqueueNDRangeKernel and clFinish, say) must
 * both stay cached, or every call pays a full intern and a walk of the
 * loaded objects' segments (dl_iterate_phdr, ~3 200 instructions with
 * PoCL's libraries loaded: 1 600 per launch of clpeak --kernel-latency). */
#define S8(p) p "0", p "1", p "2", p "3", p "4", p "5", p "6", p "7"
#define S64(p)                                                                                     \
    S8(p "0"), S8(p "1"), S8(p "2"), S8(p "3"), S8(p "4"), S8(p "5"), S8(p "6"), S8(p "7")
static const char lits[128][16] = {S64("lit.a"), S64("lit.b")};

/* Is `s` in the calling thread's pointer cache (any slot)? */
static int ptr_cached(const char *s)
{
    act_thread *t = act_rec_tls;
    for (size_t i = 0; t && i < ACT_PTR_CACHE; i++)
        if (t->ptrs[i].ptr == s)
            return 1;
    return 0;
}

/* Ranges read the thread's fast clock, OpenCL calls the true one
 * (act_clock_now); the two disagree by a nanosecond or so either way. A
 * call between a push and a pop must still be inside its range as
 * recorded: the pop stamped 1 ns before the call's end made the call
 * stick out (2 322 "host nesting violations" in 200 000 launches of
 * bench_export's spool), and a push 1 ns after the call's start too. */
#define NESTED 100000

typedef struct nest_seen {
    uint64_t push, start, end;
    uint64_t calls, outside, worst;
} nest_seen;

static void collect_nest(const act_rec_hdr *r, uint32_t serial, void *arg)
{
    (void)serial;
    nest_seen *s = arg;
    if (r->kind == ACT_REC_RANGE_PUSH) {
        s->push = ((const act_rec_ts *)r)->ts;
    } else if (r->kind == ACT_REC_API) {
        s->start = ((const act_rec_api *)r)->start;
        s->end = ((const act_rec_api *)r)->end;
    } else if (r->kind == ACT_REC_RANGE_POP) {
        uint64_t pop = ((const act_rec_ts *)r)->ts;
        s->calls++;
        uint64_t by = s->start < s->push ? s->push - s->start : pop < s->end ? s->end - pop : 0;
        s->outside += by != 0;
        s->worst = by > s->worst ? by : s->worst;
    }
}

static void test_calls_inside_their_ranges(void **state)
{
    (void)state;
    for (int i = 0; i < NESTED; i++) {
        assert_int_equal(act_range_push("r"), ACT_OK);
        uint64_t s = act_clock_now(), e = act_clock_now();
        if (i % 2)
            assert_int_equal(act_rec_api_emit("clEnqueueNDRangeKernel", s, e, (uint64_t)i + 1,
                                              act_range_current_ext(), 0, ACT_SOURCE_OPENCL),
                             0);
        else
            assert_int_equal(act_rec_api_here("clFinish", s, e, 0, ACT_SOURCE_OPENCL), 0);
        assert_int_equal(act_range_pop(), ACT_OK);
    }
    walk_stats ws;
    nest_seen seen = {0};
    assert_int_equal(spool_walk(act_recorder_path(), &ws, collect_nest, &seen), 0);
    spool_unwalk(&ws);
    if (seen.outside)
        print_error("%llu of %llu calls outside their range (by up to %llu ns)\n",
                    (unsigned long long)seen.outside, (unsigned long long)seen.calls,
                    (unsigned long long)seen.worst);
    assert_int_equal(seen.calls, NESTED);
    assert_int_equal(seen.outside, 0);
}

static void test_two_literals_in_turn(void **state)
{
    (void)state;
    assert_int_equal(act_range_push("warm"), ACT_OK); /* the thread's chunk */
    assert_int_equal(act_range_pop(), ACT_OK);
    for (size_t j = 1; j < 128; j++) {
        for (int round = 0; round < 2; round++) {
            assert_true(act_str_intern_literal(lits[0]) != 0);
            assert_true(act_str_intern_literal(lits[j]) != 0);
        }
        if (!ptr_cached(lits[0]) || !ptr_cached(lits[j]))
            fail_msg("%s and %s, used in turn, are not both cached", lits[0], lits[j]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_then_on),
        cmocka_unit_test_setup_teardown(test_clock_names_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_literals_in_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calls_inside_their_ranges, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
