/*
 * test_rt_capture.c -- the OpenCL table's profiler_start/stop bound
 * acceltrace's real capture window: in an in-process session with
 * capture_api set, recording is off until profiler_start() and off again
 * after profiler_stop(); with no session both report ACT_E_DISABLED.
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
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_profiler_bounds_capture)};
    return cmocka_run_group_tests_name("rt_capture", tests, NULL, NULL);
}
