/*
 * test_rt_profiler.c -- profiler_start/stop of every backend drive
 * acceltrace's capture range through act_start()/act_stop(). This program
 * defines its own act_start/act_stop and exports them (ENABLE_EXPORTS), so
 * they interpose on the library's: the test sees each call and chooses
 * what it returns. (test_rt_capture.c checks the real capture window.)
 * The cuda table runs against the fake libcudart (ACCELTRACE_CUDART_PATH)
 * and calls cudaProfilerStart first; the ascend table needs no ACL at all
 * for this (ACCELTRACE_ASCENDCL_PATH names no file).
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
#include "fake_access.h"

static int starts, stops, result;

int act_start(void)
{
    starts++;
    return result;
}

int act_stop(void)
{
    stops++;
    return result;
}

static void check_passthrough(const struct act_rt *rt)
{
    starts = stops = 0;
    result = ACT_OK;
    assert_int_equal(rt->profiler_start(), ACT_RT_SUCCESS);
    assert_int_equal(starts, 1);
    assert_int_equal(stops, 0);
    assert_int_equal(rt->profiler_stop(), ACT_RT_SUCCESS);
    assert_int_equal(stops, 1);
    result = ACT_E_STATE;
    assert_int_equal(rt->profiler_start(), ACT_E_STATE);
    assert_int_equal(rt->profiler_stop(), ACT_E_STATE);
    assert_int_equal(starts, 2);
    assert_int_equal(stops, 2);
    assert_true(strlen(rt->error_string(ACT_E_STATE)) > 0);
}

static void test_opencl(void **state)
{
    (void)state;
    const struct act_rt *rt = act_rt_for("opencl");
    check_passthrough(rt);
    /* No tool attached: the caller learns nothing is being captured. */
    result = ACT_E_DISABLED;
    assert_int_equal(rt->profiler_start(), ACT_E_DISABLED);
}

static void test_ascend(void **state)
{
    (void)state;
    const struct act_rt *rt = act_rt_for("ascend");
    check_passthrough(rt);
    /* ACL was never needed (its library does not even exist here). */
    int n;
    assert_int_equal(rt->device_count(&n), ACT_RT_ERROR_NO_LIBRARY);
}

static void test_cuda(void **state)
{
    (void)state;
    const struct act_rt *rt = act_rt_for("cuda");
    check_passthrough(rt);
    void *h = fake_loaded_handle(getenv("ACCELTRACE_CUDART_PATH"));
    assert_non_null(h);
    assert_int_equal(fake_named(h, "cudaProfilerStart"), 2);
    assert_int_equal(fake_named(h, "cudaProfilerStop"), 2);
    /* cudaProfilerStart marks an external profiler's range; with no
     * acceltrace attached that is still a success. */
    result = ACT_E_DISABLED;
    assert_int_equal(rt->profiler_start(), ACT_RT_SUCCESS);
    assert_int_equal(rt->profiler_stop(), ACT_RT_SUCCESS);
    assert_int_equal(starts, 3);
    assert_int_equal(fake_named(h, "cudaProfilerStart"), 3);
}

int main(void)
{
    if (!getenv("ACCELTRACE_CUDART_PATH")) {
        fprintf(stderr, "test_rt_profiler: needs ACCELTRACE_CUDART_PATH\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opencl),
        cmocka_unit_test(test_ascend),
        cmocka_unit_test(test_cuda),
    };
    return cmocka_run_group_tests_name("rt_profiler", tests, NULL, NULL);
}
