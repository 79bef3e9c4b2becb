/*
 * test_rt_cuda.c -- the "cuda" runtime table against the fake libcudart
 * built by this folder (fakes/fake_cudart.c), pointed at with
 * ACCELTRACE_CUDART_PATH. One program, several modes (argv[1]), each run
 * as its own CTest test because loading happens once per process:
 *   fake         arguments reach cudart unchanged, loading is lazy, NULL
 *                and bad arguments never reach cudart
 *   threads      8 threads racing on the first call all succeed
 *   missing-lib  ACCELTRACE_CUDART_PATH names no file
 *   missing-sym  a fake without cudaProfilerStart
 *   empty-env    ACCELTRACE_CUDART_PATH set but empty
 */
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
#include "fake_access.h"

#define GIB (1024ull * 1024 * 1024)

static const struct act_rt *rt;
static const char *path, *var; /* the fake library, and the variable naming it */

static void *lib(void)
{
    void *h = fake_loaded_handle(path);
    assert_non_null(h);
    return h;
}

static void assert_call(const char *name, uint64_t a0, uint64_t a1, uint64_t a2)
{
    fake_call c;
    assert_int_equal(fake_last(lib(), name, &c), 0);
    assert_int_equal(c.arg[0], a0);
    assert_int_equal(c.arg[1], a1);
    assert_int_equal(c.arg[2], a2);
}

/* Everything rejected before the runtime: the library is not even loaded
 * afterwards, so none of these calls can have reached it. */
static void test_bad_args_never_load(void **state)
{
    (void)state;
    char buf[64];
    void *slot = NULL;
    size_t f, t;
    assert_ptr_equal(act_rt_for("cuda"), rt);
    assert_null(fake_loaded_handle(path));
    assert_int_equal(rt->host_register(NULL, 64, ACT_RT_HOST_REG_PINNED),
                     ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->host_register(buf, 0, ACT_RT_HOST_REG_PINNED), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->host_register(buf, 64, 0), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->host_register(buf, 64, 0x4), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->host_register((void *)(UINTPTR_MAX - 8), 64, ACT_RT_HOST_REG_PINNED),
                     ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->host_unregister(NULL), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->stream_create(NULL), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->stream_destroy(NULL), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->mem_get_info(0, NULL, &t), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->mem_get_info(0, &f, NULL), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->mem_get_info(-1, &f, &t), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->device_count(NULL), ACT_RT_ERROR_INVALID_PARAM);
    assert_non_null(strstr(rt->error_string(ACT_RT_ERROR_INVALID_PARAM), "invalid parameter"));
    assert_non_null(strstr(act_rt_last_error(), "device_count"));
    assert_null(fake_loaded_handle(path));
    (void)slot;
}

static void test_device_count_loads_once(void **state)
{
    (void)state;
    int n = -1;
    assert_int_equal(rt->device_count(&n), ACT_RT_SUCCESS);
    assert_int_equal(n, 2);
    void *h = lib();
    assert_int_equal(fake_loads(h), 1);
    /* Only the count reached cudart: no device was touched. */
    assert_int_equal(fake_count(h), 1);
    assert_int_equal(fake_named(h, "cudaGetDeviceCount"), 1);
    assert_call("cudaGetDeviceCount", (uintptr_t)&n, 0, 0);
}

static void test_register_args_unchanged(void **state)
{
    (void)state;
    static char page[8192] __attribute__((aligned(4096)));
    static const struct {
        unsigned act;
        unsigned cuda;
    } flags[] = {
        {ACT_RT_HOST_REG_PINNED, 0},
        {ACT_RT_HOST_REG_MAPPED, 2},
        {ACT_RT_HOST_REG_PINNED | ACT_RT_HOST_REG_MAPPED, 2},
    };
    for (size_t i = 0; i < 3; i++) {
        char *p = page + 4096 * (i & 1) + (i == 2 ? 3 : 0); /* aligned and not */
        size_t size = i == 2 ? 1000 : 4096;
        assert_int_equal(rt->host_register(p, size, flags[i].act), ACT_RT_SUCCESS);
        assert_call("cudaHostRegister", (uintptr_t)p, size, flags[i].cuda);
        assert_int_equal(rt->host_unregister(p), ACT_RT_SUCCESS);
        assert_call("cudaHostUnregister", (uintptr_t)p, 0, 0);
        /* The second unregister reaches cudart, whose code comes back. */
        int rc = rt->host_unregister(p);
        assert_int_equal(rc, 713);
        assert_non_null(strstr(act_rt_last_error(), "cudaHostUnregister returned 713"));
        assert_non_null(strstr(rt->error_string(rc), "not registered"));
    }
}

static void test_stream_args_unchanged(void **state)
{
    (void)state;
    void *stream = NULL;
    assert_int_equal(rt->stream_create(&stream), ACT_RT_SUCCESS);
    assert_non_null(stream);
    assert_call("cudaStreamCreate", (uintptr_t)&stream, 0, 0);
    assert_int_equal(rt->stream_destroy(stream), ACT_RT_SUCCESS);
    assert_call("cudaStreamDestroy", (uintptr_t)stream, 0, 0);
    assert_int_equal(rt->synchronize(), ACT_RT_SUCCESS);
    assert_int_equal(fake_named(lib(), "cudaDeviceSynchronize"), 1);
}

static void test_profiler_and_meminfo(void **state)
{
    (void)state;
    void *h = lib();
    assert_int_equal(rt->profiler_start(), ACT_RT_SUCCESS);
    assert_int_equal(rt->profiler_stop(), ACT_RT_SUCCESS);
    assert_int_equal(fake_named(h, "cudaProfilerStart"), 1);
    assert_int_equal(fake_named(h, "cudaProfilerStop"), 1);

    size_t f = 0, t = 0;
    assert_int_equal(rt->mem_get_info(1, &f, &t), ACT_RT_SUCCESS);
    assert_int_equal(f, 2 * GIB);
    assert_int_equal(t, 3 * GIB);
    assert_call("cudaMemGetInfo", (uintptr_t)&f, (uintptr_t)&t, 1);
    /* ... and the current device is put back. */
    assert_call("cudaSetDevice", 0, 0, 0);
    assert_int_equal(rt->mem_get_info(0, &f, &t), ACT_RT_SUCCESS);
    assert_int_equal(f, 1 * GIB);
    /* A device cudart rejects comes back as cudart's code. */
    assert_int_equal(rt->mem_get_info(7, &f, &t), 101);
    assert_int_equal(fake_loads(h), 1);
}

struct reg_job {
    char buf[256];
    int rc;
};

static void *reg_thread(void *arg)
{
    struct reg_job *j = arg;
    const struct act_rt *t = act_rt_for("cuda");
    j->rc = t->host_register(j->buf, sizeof j->buf, ACT_RT_HOST_REG_MAPPED);
    if (j->rc == 0)
        j->rc = t->host_unregister(j->buf);
    return NULL;
}

static void test_threads_first_call(void **state)
{
    (void)state;
    enum { N = 8 };
    static struct reg_job jobs[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_create(&th[i], NULL, reg_thread, &jobs[i]), 0);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++)
        assert_int_equal(jobs[i].rc, ACT_RT_SUCCESS);
    void *h = lib();
    assert_int_equal(fake_loads(h), 1);
    assert_int_equal(fake_named(h, "cudaHostRegister"), N);
    assert_int_equal(fake_named(h, "cudaHostUnregister"), N);
}

static void test_missing_library(void **state)
{
    (void)state;
    char buf[64];
    int n = -1;
    void *s;
    assert_int_equal(rt->device_count(&n), ACT_RT_ERROR_NO_LIBRARY);
    assert_non_null(strstr(act_rt_last_error(), path));
    assert_non_null(strstr(act_rt_last_error(), var)); /* the variable that named it */
    assert_int_equal(rt->host_register(buf, 64, ACT_RT_HOST_REG_PINNED), ACT_RT_ERROR_NO_LIBRARY);
    assert_int_equal(rt->stream_create(&s), ACT_RT_ERROR_NO_LIBRARY);
    assert_int_equal(rt->profiler_start(), ACT_RT_ERROR_NO_LIBRARY);
    assert_int_equal(rt->synchronize(), ACT_RT_ERROR_NO_LIBRARY);
    /* Bad arguments are still reported as such. */
    assert_int_equal(rt->host_unregister(NULL), ACT_RT_ERROR_INVALID_PARAM);
    assert_string_equal(rt->error_string(ACT_RT_ERROR_NO_LIBRARY), "runtime library not found");
    assert_non_null(strstr(rt->error_string(713), "libcudart not available"));
    /* With no cuda, the active table is another backend. */
    assert_ptr_not_equal(act_rt(), rt);
}

static void test_missing_symbol(void **state)
{
    (void)state;
    char buf[64];
    assert_int_equal(rt->profiler_start(), ACT_RT_ERROR_NO_SYMBOL);
    assert_non_null(strstr(act_rt_last_error(), "cudaProfilerStart"));
    /* The rest of the library still works. */
    assert_int_equal(rt->profiler_stop(), ACT_RT_SUCCESS);
    assert_int_equal(rt->host_register(buf, sizeof buf, ACT_RT_HOST_REG_PINNED), ACT_RT_SUCCESS);
    assert_int_equal(rt->host_unregister(buf), ACT_RT_SUCCESS);
    assert_int_equal(fake_named(lib(), "cudaProfilerStop"), 1);
}

static void test_empty_env(void **state)
{
    (void)state;
    int n;
    assert_int_equal(rt->device_count(&n), ACT_RT_ERROR_CONFIG);
    assert_non_null(strstr(act_rt_last_error(), "Invalid value for ACCELTRACE_CUDART_PATH"));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "fake";
    var = getenv("ACCELTRACE_CUDART_LIB") ? "ACCELTRACE_CUDART_LIB" : "ACCELTRACE_CUDART_PATH";
    path = getenv(var);
    rt = act_rt_for("cuda");
    if (!rt || !path) {
        fprintf(stderr, "test_rt_cuda: needs ACCELTRACE_CUDART_LIB (or _PATH)\n");
        return 1;
    }
    if (!strcmp(mode, "fake")) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_bad_args_never_load),
            cmocka_unit_test(test_device_count_loads_once),
            cmocka_unit_test(test_register_args_unchanged),
            cmocka_unit_test(test_stream_args_unchanged),
            cmocka_unit_test(test_profiler_and_meminfo),
        };
        return cmocka_run_group_tests_name("rt_cuda_fake", tests, NULL, NULL);
    }
    if (!strcmp(mode, "threads")) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads_first_call)};
        return cmocka_run_group_tests_name("rt_cuda_threads", tests, NULL, NULL);
    }
    if (!strcmp(mode, "missing-lib")) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_missing_library)};
        return cmocka_run_group_tests_name("rt_cuda_missing_lib", tests, NULL, NULL);
    }
    if (!strcmp(mode, "missing-sym")) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_missing_symbol)};
        return cmocka_run_group_tests_name("rt_cuda_missing_sym", tests, NULL, NULL);
    }
    if (!strcmp(mode, "empty-env")) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_empty_env)};
        return cmocka_run_group_tests_name("rt_cuda_empty_env", tests, NULL, NULL);
    }
    fprintf(stderr, "test_rt_cuda: unknown mode '%s'\n", mode);
    return 1;
}
