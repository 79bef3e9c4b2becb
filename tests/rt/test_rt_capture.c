/*
 * test_rt_capture.c -- the OpenCL table's profiler_start/stop bound
 * acceltrace's real capture window: in an in-process session with
 * capture_api set, recording is off until profiler_start() and off again
 * after profiler_stop(); with no session both report ACT_E_DISABLED.
 * The capture window and sessions (src/core/capture.c, session.c) come
 * from another part of the tree; until they are in the build this test
 * reports itself skipped (exit 77) rather than passing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "acceltrace_rt.h"

#pragma weak act_start
#pragma weak act_session_begin
#pragma weak act_session_end
#pragma weak act_is_enabled

static void test_profiler_bounds_capture(void **state)
{
    (void)state;
    const struct act_rt *rt = act_rt_for("opencl");
    assert_non_null(rt);
    assert_int_equal(act_is_enabled(), 0);
    assert_int_equal(rt->profiler_start(), ACT_E_DISABLED);

    act_options opts = {.struct_size = sizeof opts, .capture_api = 1};
    assert_int_equal(act_session_begin(&opts), ACT_OK);
    assert_int_equal(act_is_enabled(), 0); /* capture_api: closed until started */

    void *stream = NULL;
    assert_int_equal(rt->stream_create(&stream), ACT_RT_SUCCESS);
    assert_int_equal(rt->profiler_start(), ACT_RT_SUCCESS);
    assert_int_equal(act_is_enabled(), 1);
    assert_int_equal(act_range_push("inside"), ACT_OK);
    assert_int_equal(act_range_pop(), ACT_OK);
    assert_int_equal(rt->synchronize(), ACT_RT_SUCCESS);
    assert_int_equal(rt->profiler_stop(), ACT_RT_SUCCESS);
    assert_int_equal(act_is_enabled(), 0);
    /* and again: the range can be reopened */
    assert_int_equal(rt->profiler_start(), ACT_RT_SUCCESS);
    assert_int_equal(act_is_enabled(), 1);
    assert_int_equal(rt->profiler_stop(), ACT_RT_SUCCESS);
    assert_int_equal(act_is_enabled(), 0);
    assert_int_equal(rt->stream_destroy(stream), ACT_RT_SUCCESS);

    assert_int_equal(act_session_end(NULL), ACT_OK);
    assert_int_equal(rt->profiler_start(), ACT_E_DISABLED);
    assert_int_equal(act_is_enabled(), 0);
}

int main(void)
{
    if (!act_start || !act_session_begin || !act_session_end || !act_is_enabled) {
        printf("test_rt_capture: capture window / sessions not in this build: %s\n",
               getenv("CI") ? "FAIL (CI)" : "skipped");
        return getenv("CI") ? 1 : 77; /* under CI a missing part fails */
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_profiler_bounds_capture)};
    return cmocka_run_group_tests_name("rt_capture", tests, NULL, NULL);
}
