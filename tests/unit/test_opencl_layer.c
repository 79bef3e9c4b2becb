/*
 * test_opencl_layer.c -- the OpenCL source's dispatch plumbing, without a
 * real OpenCL runtime: clGetLayerInfo answers as the layer API requires;
 * clInitLayer hands back a table with our wrappers for the intercepted
 * entries and the target's own functions for the rest, and starts nothing;
 * an unarmed wrapper (no tool attached) forwards to the target unchanged;
 * once this process is traced through the layer, the preload shim gets a
 * pure pass-through table (no double recording); every hook is registered
 * under one of the four opencl.* groups.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first. */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "init/hooks.h"
#include "sources/opencl/cl_source.h"

const struct _cl_icd_dispatch *act__cl_preload_table(void *(*resolve)(const char *));

static int finish_calls;
static cl_command_queue finish_queue;

static cl_int CL_API_CALL fake_finish(cl_command_queue q)
{
    finish_calls++;
    finish_queue = q;
    return -1234;
}

static cl_int CL_API_CALL fake_platforms(cl_uint n, cl_platform_id *p, cl_uint *np)
{
    (void)n;
    (void)p;
    if (np)
        *np = 0;
    return CL_SUCCESS;
}

static cl_int CL_API_CALL fake_finish_preload(cl_command_queue q)
{
    (void)q;
    return -4321;
}

static void *fake_resolve(const char *name)
{
    void *p = NULL;
    if (!strcmp(name, "clFinish")) {
        cl_int(CL_API_CALL * f)(cl_command_queue) = fake_finish_preload;
        memcpy(&p, &f, sizeof p);
    }
    return p;
}

static void test_layer_info(void **state)
{
    (void)state;
    cl_layer_api_version v = 0;
    size_t len = 0;
    assert_int_equal(clGetLayerInfo(CL_LAYER_API_VERSION, sizeof v, &v, &len), CL_SUCCESS);
    assert_int_equal(v, CL_LAYER_API_VERSION_100);
    assert_int_equal(len, sizeof v);
    char name[32];
    assert_int_equal(clGetLayerInfo(CL_LAYER_NAME, sizeof name, name, &len), CL_SUCCESS);
    assert_string_equal(name, "acceltrace");
    assert_int_equal(len, strlen("acceltrace") + 1);
    assert_int_equal(clGetLayerInfo(CL_LAYER_NAME, 3, name, NULL), CL_INVALID_VALUE);
    assert_int_equal(clGetLayerInfo(0x1234, sizeof name, name, NULL), CL_INVALID_VALUE);
    assert_int_equal(clGetLayerInfo(CL_LAYER_NAME, 0, NULL, &len), CL_SUCCESS);
}

static void test_init_layer_table(void **state)
{
    (void)state;
    static struct _cl_icd_dispatch target;
    target.clFinish = fake_finish;
    target.clGetPlatformIDs = fake_platforms;
    const cl_uint n = (cl_uint)(sizeof target / sizeof(void *));
    cl_uint nret = 0;
    const cl_icd_dispatch *table = NULL;
    assert_int_equal(clInitLayer(n, &target, NULL, &table), CL_INVALID_VALUE);
    assert_int_equal(clInitLayer(n, &target, &nret, &table), CL_SUCCESS);
    assert_int_equal(nret, n);
    assert_non_null(table);
    /* Intercepted entries are ours; the others are the target's own. */
    assert_ptr_equal(table->clFinish, act_cl_w_clFinish);
    assert_ptr_equal(table->clEnqueueNDRangeKernel, act_cl_w_clEnqueueNDRangeKernel);
    assert_ptr_equal(table->clGetPlatformIDs, fake_platforms);
    /* Initialising the layer started nothing. */
    assert_int_equal(atomic_load(&act_cl_started), 0);
    assert_int_equal(atomic_load(&act_cl_mode), ACT_CL_MODE_LAYER);

    /* No tool attached: the wrapper starts the library lazily, finds its
     * hook unarmed and forwards the call unchanged. */
    unsetenv("ACCELTRACE_SPOOL_DIR");
    cl_command_queue q = (cl_command_queue)(uintptr_t)0x5a5a;
    assert_int_equal(table->clFinish(q), -1234);
    assert_int_equal(finish_calls, 1);
    assert_ptr_equal(finish_queue, q);
    assert_int_equal(atomic_load(&act_cl_started), 1);
    assert_int_equal(atomic_load(&act_cl_armed_clFinish), 0);
}

static void test_preload_after_layer_passes_through(void **state)
{
    (void)state;
    const struct _cl_icd_dispatch *t = act__cl_preload_table(fake_resolve);
    assert_non_null(t);
    assert_ptr_equal(t->clFinish, fake_finish_preload);
    assert_int_equal(t->clFinish(NULL), -4321);
    /* The layer's next table was not replaced by the shim's lookups. */
    assert_ptr_equal(act_cl_next.clFinish, fake_finish);
}

static void test_hook_groups(void **state)
{
    (void)state;
    static const char *const groups[] = {"opencl.queue", "opencl.kernel",  "opencl.transfer",
                                         "opencl.sync",  "opencl.objects", "opencl.build",
                                         "opencl.ext"};
    enum { NG = sizeof groups / sizeof groups[0] };
    extern const act_hook __start_act_hooks[] __attribute__((weak));
    extern const act_hook __stop_act_hooks[] __attribute__((weak));
    int count[NG] = {0}, total = 0;
    for (const act_hook *h = __start_act_hooks; h && h < __stop_act_hooks; h++) {
        if (strncmp(h->group, "opencl.", 7))
            continue;
        int found = 0;
        for (int i = 0; i < NG; i++)
            if (!strcmp(h->group, groups[i])) {
                count[i]++;
                found = 1;
            }
        assert_true(found);
        total++;
    }
    int expected = 0;
#define X(group, ret, name, params, args) expected++;
#include "sources/opencl/cl_api.def"
#undef X
    assert_int_equal(total, expected);
    for (int i = 0; i < NG; i++)
        assert_true(count[i] > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layer_info),
        cmocka_unit_test(test_init_layer_table),
        cmocka_unit_test(test_preload_after_layer_passes_through),
        cmocka_unit_test(test_hook_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
