/*
 * test_rt_opencl.c -- the "opencl" runtime table for real, on PoCL:
 * registration of page-aligned and unaligned memory with each flag
 * combination, the buffer it makes over the range, size 0, NULL, overlap
 * and double unregister; a stream is a command queue that runs work on
 * registered memory; memory info against clGetDeviceInfo; error strings;
 * registration and streams from several threads at once.
 * The test links OpenCL itself to enqueue work; the library does not.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "acceltrace_rt.h"

static const struct act_rt *rt;

static void test_table_lookup(void **state)
{
    (void)state;
    rt = act_rt_for("opencl");
    assert_non_null(rt);
    assert_ptr_equal(act_rt_for("opencl"), rt);
    assert_string_equal(rt->name, "opencl");
    assert_int_equal(rt->struct_size, sizeof(struct act_rt));
    assert_null(act_rt_for("metal"));
    assert_non_null(strstr(act_rt_last_error(), "unknown backend 'metal'"));
    assert_null(act_rt_for(NULL));
    assert_null(act_rt_for("OpenCL")); /* names are exact */
    /* Here only PoCL is present, so the active table is OpenCL's, and
     * always the same pointer. */
    assert_ptr_equal(act_rt(), rt);
    assert_ptr_equal(act_rt(), act_rt());
}

static void test_device_count_and_meminfo(void **state)
{
    (void)state;
    int n = 0;
    assert_int_equal(rt->device_count(&n), ACT_RT_SUCCESS);
    assert_true(n >= 1);

    cl_platform_id plat;
    cl_device_id dev;
    cl_ulong want = 0;
    assert_int_equal(clGetPlatformIDs(1, &plat, NULL), CL_SUCCESS);
    assert_int_equal(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL), CL_SUCCESS);
    assert_int_equal(clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof want, &want, NULL),
                     CL_SUCCESS);
    size_t f = 0, t = 0;
    assert_int_equal(rt->mem_get_info(0, &f, &t), ACT_RT_SUCCESS);
    assert_int_equal(t, want);
    assert_true(f == ACT_RT_MEM_UNKNOWN);
    assert_int_equal(rt->mem_get_info(n, &f, &t), ACT_RT_ERROR_INVALID_DEVICE);
    assert_int_equal(rt->mem_get_info(-1, &f, &t), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->mem_get_info(0, NULL, &t), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->device_count(NULL), ACT_RT_ERROR_INVALID_PARAM);
}

/* The registered range has a buffer whose host pointer and size are the
 * range's. */
static void assert_buffer_over(void *p, size_t size)
{
    void *mem = NULL;
    assert_int_equal(act_rt_opencl_buffer(p, &mem), ACT_RT_SUCCESS);
    assert_non_null(mem);
    void *host = NULL;
    size_t msize = 0;
    cl_mem_flags mflags = 0;
    assert_int_equal(clGetMemObjectInfo(mem, CL_MEM_HOST_PTR, sizeof host, &host, NULL),
                     CL_SUCCESS);
    assert_int_equal(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof msize, &msize, NULL), CL_SUCCESS);
    assert_int_equal(clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof mflags, &mflags, NULL),
                     CL_SUCCESS);
    assert_ptr_equal(host, p);
    assert_int_equal(msize, size);
    assert_true(mflags & CL_MEM_USE_HOST_PTR);
}

static void test_register_each_flag(void **state)
{
    (void)state;
    const unsigned flags[] = {ACT_RT_HOST_REG_PINNED, ACT_RT_HOST_REG_MAPPED,
                              ACT_RT_HOST_REG_PINNED | ACT_RT_HOST_REG_MAPPED};
    char *page = aligned_alloc(4096, 4 * 4096);
    char *heap = malloc(100 * sizeof(float) + 1);
    assert_non_null(page);
    assert_non_null(heap);
    for (size_t i = 0; i < 3; i++) {
        /* page-aligned, page-sized */
        assert_int_equal(rt->host_register(page, 4 * 4096, flags[i]), ACT_RT_SUCCESS);
        assert_buffer_over(page, 4 * 4096);
        assert_int_equal(rt->host_unregister(page), ACT_RT_SUCCESS);
        /* unaligned start and odd size, like an ordinary small tensor */
        assert_int_equal(rt->host_register(heap + 1, 99, flags[i]), ACT_RT_SUCCESS);
        assert_buffer_over(heap + 1, 99);
        assert_int_equal(rt->host_unregister(heap + 1), ACT_RT_SUCCESS);
        /* gone after unregister */
        void *mem;
        assert_int_equal(act_rt_opencl_buffer(page, &mem), ACT_RT_ERROR_NOT_REGISTERED);
    }
    free(page);
    free(heap);
}

static void test_register_errors(void **state)
{
    (void)state;
    char *buf = malloc(8192);
    assert_non_null(buf);
    assert_int_equal(rt->host_register(buf, 0, ACT_RT_HOST_REG_PINNED), ACT_RT_ERROR_INVALID_PARAM);
    assert_non_null(strstr(act_rt_last_error(), "size 0"));
    assert_int_equal(rt->host_register(NULL, 64, ACT_RT_HOST_REG_PINNED),
                     ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->host_register(buf, 64, 0), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->host_register(buf, 64, 0x1), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->host_unregister(NULL), ACT_RT_ERROR_INVALID_PARAM);
    /* never registered */
    assert_int_equal(rt->host_unregister(buf), ACT_RT_ERROR_NOT_REGISTERED);
    /* overlap, and unregistering from inside the range */
    assert_int_equal(rt->host_register(buf, 4096, ACT_RT_HOST_REG_PINNED), ACT_RT_SUCCESS);
    assert_int_equal(rt->host_register(buf + 100, 64, ACT_RT_HOST_REG_PINNED),
                     ACT_RT_ERROR_ALREADY_REGISTERED);
    assert_int_equal(rt->host_register(buf, 4096, ACT_RT_HOST_REG_MAPPED),
                     ACT_RT_ERROR_ALREADY_REGISTERED);
    assert_int_equal(rt->host_unregister(buf + 100), ACT_RT_ERROR_NOT_REGISTERED);
    /* adjacent is fine */
    assert_int_equal(rt->host_register(buf + 4096, 4096, ACT_RT_HOST_REG_PINNED), ACT_RT_SUCCESS);
    assert_int_equal(rt->host_unregister(buf + 4096), ACT_RT_SUCCESS);
    /* double unregister is an error, not a crash */
    assert_int_equal(rt->host_unregister(buf), ACT_RT_SUCCESS);
    assert_int_equal(rt->host_unregister(buf), ACT_RT_ERROR_NOT_REGISTERED);
    assert_string_equal(rt->error_string(ACT_RT_ERROR_NOT_REGISTERED),
                        "host memory not registered");
    free(buf);
}

static void test_stream_runs_work_on_registered_memory(void **state)
{
    (void)state;
    enum { N = 1024 };
    cl_uint *host = aligned_alloc(4096, N * sizeof *host);
    assert_non_null(host);
    memset(host, 0, N * sizeof *host);
    void *stream = NULL;
    assert_int_equal(rt->stream_create(&stream), ACT_RT_SUCCESS);
    assert_non_null(stream);
    cl_command_queue q = stream;
    assert_int_equal(rt->host_register(host, N * sizeof *host, ACT_RT_HOST_REG_MAPPED),
                     ACT_RT_SUCCESS);
    void *mem = NULL;
    assert_int_equal(act_rt_opencl_buffer(host, &mem), ACT_RT_SUCCESS);

    /* Work on the stream: fill the registered range, read it back. */
    const cl_uint pattern = 0xAC7ACE00u;
    assert_int_equal(
        clEnqueueFillBuffer(q, mem, &pattern, sizeof pattern, 0, N * sizeof *host, 0, NULL, NULL),
        CL_SUCCESS);
    cl_uint back[N];
    assert_int_equal(clEnqueueReadBuffer(q, mem, CL_FALSE, 0, sizeof back, back, 0, NULL, NULL),
                     CL_SUCCESS);
    assert_int_equal(rt->synchronize(), ACT_RT_SUCCESS);
    for (int i = 0; i < N; i++)
        assert_int_equal(back[i], pattern);
    /* The buffer is the host memory itself: mapping shows the pattern there. */
    cl_int err = CL_SUCCESS;
    cl_uint *m =
        clEnqueueMapBuffer(q, mem, CL_TRUE, CL_MAP_READ, 0, N * sizeof *host, 0, NULL, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    assert_ptr_equal(m, host);
    assert_int_equal(host[0], pattern);
    assert_int_equal(host[N - 1], pattern);
    assert_int_equal(clEnqueueUnmapMemObject(q, mem, m, 0, NULL, NULL), CL_SUCCESS);
    assert_int_equal(clFinish(q), CL_SUCCESS);

    assert_int_equal(rt->host_unregister(host), ACT_RT_SUCCESS);
    assert_int_equal(rt->stream_destroy(stream), ACT_RT_SUCCESS);
    /* destroyed, or never ours: refused without touching the runtime */
    assert_int_equal(rt->stream_destroy(stream), ACT_RT_ERROR_INVALID_HANDLE);
    int not_a_queue;
    assert_int_equal(rt->stream_destroy(&not_a_queue), ACT_RT_ERROR_INVALID_HANDLE);
    assert_int_equal(rt->stream_create(NULL), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->stream_destroy(NULL), ACT_RT_ERROR_INVALID_PARAM);
    free(host);
}

static void test_error_strings(void **state)
{
    (void)state;
    assert_string_equal(rt->error_string(ACT_RT_SUCCESS), "success");
    assert_string_equal(rt->error_string(-CL_INVALID_VALUE), "CL_INVALID_VALUE");
    assert_string_equal(rt->error_string(-CL_INVALID_HOST_PTR), "CL_INVALID_HOST_PTR");
    const int codes[] = {ACT_RT_ERROR_INVALID_PARAM,
                         ACT_RT_ERROR_NOT_REGISTERED,
                         ACT_RT_ERROR_ALREADY_REGISTERED,
                         ACT_RT_ERROR_INVALID_HANDLE,
                         ACT_RT_ERROR_INVALID_DEVICE,
                         ACT_RT_ERROR_NO_LIBRARY,
                         ACT_RT_ERROR_NO_SYMBOL,
                         ACT_RT_ERROR_NO_DEVICE,
                         ACT_RT_ERROR_NOMEM,
                         ACT_RT_ERROR_UNSUPPORTED,
                         ACT_RT_ERROR_CONFIG,
                         -5000,
                         12345,
                         -1};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *s = rt->error_string(codes[i]);
        assert_non_null(s);
        assert_true(strlen(s) > 0);
    }
}

struct job {
    int rc;
};

static void *worker(void *arg)
{
    struct job *j = arg;
    char *buf = malloc(64 * 256);
    j->rc = buf ? 0 : -1;
    for (int round = 0; round < 20 && j->rc == 0; round++) {
        void *s = NULL;
        if ((j->rc = rt->stream_create(&s)) != 0)
            break;
        for (int i = 0; i < 64 && j->rc == 0; i++)
            j->rc = rt->host_register(buf + 256 * i, 256, ACT_RT_HOST_REG_PINNED);
        if (j->rc == 0)
            j->rc = rt->synchronize();
        for (int i = 0; i < 64 && j->rc == 0; i++)
            j->rc = rt->host_unregister(buf + 256 * i);
        if (j->rc == 0)
            j->rc = rt->stream_destroy(s);
    }
    free(buf);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    enum { T = 4 };
    pthread_t th[T];
    struct job jobs[T];
    for (int i = 0; i < T; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker, &jobs[i]), 0);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++)
        assert_int_equal(jobs[i].rc, ACT_RT_SUCCESS);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    const struct CMUnitTest all[] = {
        cmocka_unit_test(test_table_lookup),
        cmocka_unit_test(test_device_count_and_meminfo),
        cmocka_unit_test(test_register_each_flag),
        cmocka_unit_test(test_register_errors),
        cmocka_unit_test(test_stream_runs_work_on_registered_memory),
        cmocka_unit_test(test_error_strings),
    };
    const struct CMUnitTest threads[] = {
        cmocka_unit_test(test_table_lookup),
        cmocka_unit_test(test_threads),
    };
    if (!strcmp(mode, "threads"))
        return cmocka_run_group_tests_name("rt_opencl_threads", threads, NULL, NULL);
    return cmocka_run_group_tests_name("rt_opencl", all, NULL, NULL);
}
