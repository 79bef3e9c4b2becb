/*
 * test_oppool_concurrency.c -- the OpenCL source's per-thread pools of
 * command records (oppool.c) across thread exits.
 *
 * A command still in flight when its thread exits (or when the process
 * calls exit() with other threads enqueuing) is referenced only by the
 * runtime's callback record, which the runtime may itself leak at exit.
 * Every op must therefore stay reachable from the pools for the life of
 * the process: LeakSanitizer must find no leak even when the only other
 * reference to an op is memory it does not scan (an anonymous mapping
 * stands in for the runtime's leaked block). A thread that starts after
 * another exited takes over the dead pool with its ops, so thread churn
 * does not grow memory. Runs under ThreadSanitizer in CI (label
 * concurrency) and under LeakSanitizer in the ASan build.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first. */
#include <cmocka.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "sources/opencl/cl_source.h"

#if defined(__SANITIZE_ADDRESS__)
#define ACT_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ACT_TEST_LSAN 1
#endif
#endif
#ifdef ACT_TEST_LSAN
#include <sanitizer/lsan_interface.h>
#endif

enum { IN_FLIGHT = 4, THREADS = 4, ROUNDS = 200 };

/* Where the "runtime" keeps its callback records: not a LeakSanitizer root. */
static act_cl_op **hidden;
/* The ops made by the first test: none was free then, so each was malloc'ed. */
static act_cl_op *made[THREADS * IN_FLIGHT];

/* A thread that enqueues IN_FLIGHT commands and exits before any completes:
 * the ops' only references are in the hidden mapping. */
static void *enqueue_and_exit(void *arg)
{
    size_t base = (size_t)(uintptr_t)arg;
    for (size_t i = 0; i < IN_FLIGHT; i++) {
        act_cl_op *op = act_cl_op_alloc();
        assert_non_null(op);
        hidden[base + i] = op;
    }
    return NULL;
}

static void run_exiting_threads(size_t n)
{
    pthread_t t[THREADS];
    for (size_t i = 0; i < n; i++)
        assert_int_equal(
            pthread_create(&t[i], NULL, enqueue_and_exit, (void *)(uintptr_t)(i * IN_FLIGHT)), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
}

static void in_flight_ops_stay_reachable(void **state)
{
    (void)state;
    run_exiting_threads(THREADS);
#ifdef ACT_TEST_LSAN
    /* Exit with commands in flight: nothing of ours may count as leaked. */
    assert_int_equal(__lsan_do_recoverable_leak_check(), 0);
#endif
    /* The "callbacks" run now, after their threads exited. */
    memcpy(made, hidden, sizeof made);
    for (size_t i = 0; i < THREADS * IN_FLIGHT; i++) {
        act_cl_op_release(hidden[i]);
        hidden[i] = NULL;
    }
#ifdef ACT_TEST_LSAN
    assert_int_equal(__lsan_do_recoverable_leak_check(), 0);
#endif
}

/* Threads that start after others exited take over their pools, with the
 * ops they left: every pool holds at least IN_FLIGHT ops, all free now, so
 * a thread that needs IN_FLIGHT never mallocs, however many threads come
 * and go (no growth with churn). */
static void exited_pools_are_taken_over(void **state)
{
    (void)state;
    for (int r = 0; r < ROUNDS; r++) {
        run_exiting_threads(1);
        for (size_t i = 0; i < IN_FLIGHT; i++) {
            int found = 0;
            for (size_t j = 0; j < THREADS * IN_FLIGHT && !found; j++)
                found = hidden[i] == made[j];
            assert_true(found);
            act_cl_op_release(hidden[i]);
        }
    }
}

int main(void)
{
    hidden = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hidden == MAP_FAILED)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(in_flight_ops_stay_reachable),
        cmocka_unit_test(exited_pools_are_taken_over),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
