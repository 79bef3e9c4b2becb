/*
 * test_evtab_concurrency.c -- the OpenCL source's table of events'
 * references (evtab.c) under several threads at once, against a fake
 * runtime in an in-process session: events made and released at once
 * (the thread's own line, handles reused), events held past the own line
 * (the hashed lines), references taken and dropped by another thread than
 * the one that made the event, and a leak report that counts exactly the
 * events left held. Runs under ThreadSanitizer in CI (label concurrency).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first. */
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sources/opencl/cl_source.h"

enum { THREADS = 4, CHURN = 2000, HELD = 100 };

/* The events each thread leaves held: its first three (its own line) and
 * one in the hashed lines. */
static int left_held(int j)
{
    return j < 3 || j == HELD / 2;
}

static pthread_barrier_t barrier;

static cl_int CL_API_CALL fake_ok_event(cl_event e)
{
    (void)e;
    return CL_SUCCESS;
}

static cl_event handle(int thread, int j)
{
    return (cl_event)(uintptr_t)(0x10000000u + ((uintptr_t)thread << 20) + 16u * (uintptr_t)j);
}

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg, next = (me + 1) % THREADS;
    /* Made and released at once, a few handles reused over and over. */
    for (int i = 0; i < CHURN; i++) {
        cl_event e = handle(me, 1000 + i % 8);
        act_cl_event_created(e, NULL);
        if (i % 3 == 0) {
            assert_int_equal(act_cl_w_clRetainEvent(e), CL_SUCCESS);
            assert_int_equal(act_cl_w_clReleaseEvent(e), CL_SUCCESS);
        }
        assert_int_equal(act_cl_w_clReleaseEvent(e), CL_SUCCESS);
    }
    /* Held: two references each (create + retain). */
    for (int j = 0; j < HELD; j++) {
        act_cl_event_created(handle(me, j), NULL);
        assert_int_equal(act_cl_w_clRetainEvent(handle(me, j)), CL_SUCCESS);
    }
    pthread_barrier_wait(&barrier);
    /* The neighbour's retains dropped by this thread. */
    for (int j = 0; j < HELD; j++)
        assert_int_equal(act_cl_w_clReleaseEvent(handle(next, j)), CL_SUCCESS);
    pthread_barrier_wait(&barrier);
    for (int j = 0; j < HELD; j++)
        if (!left_held(j))
            assert_int_equal(act_cl_w_clReleaseEvent(handle(me, j)), CL_SUCCESS);
    return NULL;
}

static void test_events_across_threads(void **state)
{
    (void)state;
    char dir[] = "/tmp/act-evtab-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("TMPDIR", dir, 1);
    assert_int_equal(act_session_begin(NULL), ACT_OK);
    act_cl_next.clRetainEvent = fake_ok_event;
    act_cl_next.clReleaseEvent = fake_ok_event;
    pthread_barrier_init(&barrier, NULL, THREADS);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    int held = 0;
    for (int j = 0; j < HELD; j++)
        held += left_held(j);

    char path[256];
    snprintf(path, sizeof path, "%s/t.json", dir);
    assert_int_equal(act_session_end(path), ACT_OK);
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    assert_non_null(doc);
    json_t *leaks = json_object_get(doc, "opencl_leaks");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(leaks, "event"), "count")),
                     THREADS * held);
    json_decref(doc);
    unlink(path);
    rmdir(dir);
    unsetenv("TMPDIR");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_across_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
