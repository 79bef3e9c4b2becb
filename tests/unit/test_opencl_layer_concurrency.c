/*
 * test_opencl_layer_concurrency.c -- the OpenCL layer's table made by the
 * ICD loader's clInitLayer (the program's first OpenCL call) while another
 * thread's first annotation starts the library and arms the opencl.* hooks
 * (`stream_app idle` does that: its second thread marks as the main thread
 * makes its context). Both write the layer's table; run under
 * ThreadSanitizer in CI, where unordered plain writes of one entry are a
 * data race. Whatever the interleaving, every intercepted entry ends up
 * our wrapper and every other one the target's own.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first. */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "init/hooks.h"
#include "sources/opencl/cl_source.h"

/* The target's own functions: one intercepted entry, one not. */
static cl_int CL_API_CALL target_finish(cl_command_queue q)
{
    return q ? CL_SUCCESS : CL_INVALID_COMMAND_QUEUE;
}

static cl_int CL_API_CALL target_platforms(cl_uint n, cl_platform_id *p, cl_uint *np)
{
    return n || p || np ? CL_SUCCESS : CL_INVALID_VALUE;
}

static struct _cl_icd_dispatch target;
static pthread_barrier_t go;
static const cl_icd_dispatch *table;

static void *loader(void *arg)
{
    (void)arg;
    const cl_uint n = (cl_uint)(sizeof target / sizeof(void *));
    cl_uint nret = 0;
    pthread_barrier_wait(&go);
    return (void *)(intptr_t)(clInitLayer(n, &target, &nret, &table) != CL_SUCCESS || nret != n);
}

static void *annotator(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&go);
    return (void *)(intptr_t)(act_hooks_apply_all() < 0);
}

static void test_layer_table_while_hooks_apply(void **state)
{
    (void)state;
    target.clFinish = target_finish;
    target.clGetPlatformIDs = target_platforms;
    assert_int_equal(pthread_barrier_init(&go, NULL, 2), 0);
    pthread_t a, b;
    assert_int_equal(pthread_create(&a, NULL, loader, NULL), 0);
    assert_int_equal(pthread_create(&b, NULL, annotator, NULL), 0);
    void *ra, *rb;
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    pthread_barrier_destroy(&go);
    assert_null(ra);
    assert_null(rb);
    assert_non_null(table);
    assert_ptr_equal(table->clFinish, act_cl_w_clFinish);
    assert_ptr_equal(table->clEnqueueNDRangeKernel, act_cl_w_clEnqueueNDRangeKernel);
    assert_ptr_equal(table->clGetPlatformIDs, target_platforms);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layer_table_while_hooks_apply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
