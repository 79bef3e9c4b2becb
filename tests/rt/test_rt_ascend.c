/*
 * test_rt_ascend.c -- the "ascend" runtime table against the fake
 * libascendcl built by this folder (fakes/fake_ascendcl.c). The fake's
 * path comes from FAKE_ASCENDCL (the test's own variable); the table finds
 * it through ACCELTRACE_ASCENDCL_PATH or ASCEND_HOME_PATH/lib64, as CTest
 * sets for each mode (argv[1]), one process per mode because loading and
 * initialisation happen once per process:
 *   fake         npurt's calls reach ACL unchanged (CANN flag values),
 *                aclInit runs once and only when the device is needed,
 *                NULL and bad arguments never reach ACL
 *   threads      8 threads racing on the first call: one aclInit
 *   missing-lib  no libascendcl anywhere
 *   missing-sym  a fake without aclrtHostRegisterV2
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

#define GIB                     (1024ull * 1024 * 1024)
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_HOST_REG_MAPPED     0x2u
#define ACL_HOST_REG_PINNED     0x10000000u

static const struct act_rt *rt;
static const char *path;

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

static void test_flag_values_are_cann(void **state)
{
    (void)state;
    assert_int_equal(ACT_RT_HOST_REG_MAPPED, ACL_HOST_REG_MAPPED);
    assert_int_equal(ACT_RT_HOST_REG_PINNED, ACL_HOST_REG_PINNED);
}

static void test_bad_args_never_load(void **state)
{
    (void)state;
    char buf[64];
    size_t f, t;
    assert_ptr_equal(act_rt_for("ascend"), rt);
    assert_null(fake_loaded_handle(path));
    assert_int_equal(rt->host_register(NULL, 64, ACT_RT_HOST_REG_PINNED),
                     ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->host_register(buf, 0, ACT_RT_HOST_REG_PINNED), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->host_register(buf, 64, 0x1), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->host_unregister(NULL), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->stream_create(NULL), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->stream_destroy(NULL), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->mem_get_info(0, NULL, &t), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->mem_get_info(0, &f, NULL), ACT_RT_ERROR_INVALID_PARAM);
    assert_int_equal(rt->device_count(NULL), ACT_RT_ERROR_INVALID_PARAM);
    assert_non_null(strstr(rt->error_string(ACL_ERROR_INVALID_PARAM), "ACL_ERROR_INVALID_PARAM"));
    assert_null(fake_loaded_handle(path));
}

/* Counting devices loads ACL but initialises nothing. */
static void test_device_count_no_init(void **state)
{
    (void)state;
    int n = -1;
    assert_int_equal(rt->device_count(&n), ACT_RT_SUCCESS);
    assert_int_equal(n, 2);
    void *h = lib();
    assert_int_equal(fake_loads(h), 1);
    assert_int_equal(fake_count(h), 1);
    assert_int_equal(fake_named(h, "aclInit"), 0);
    assert_int_equal(fake_named(h, "aclrtSetDevice"), 0);
}

static void test_register_args_unchanged(void **state)
{
    (void)state;
    static char page[8192] __attribute__((aligned(4096)));
    const unsigned flags[] = {ACT_RT_HOST_REG_PINNED, ACT_RT_HOST_REG_MAPPED,
                              ACT_RT_HOST_REG_PINNED | ACT_RT_HOST_REG_MAPPED};
    for (size_t i = 0; i < 3; i++) {
        char *p = page + (i == 1 ? 4096 : 0) + (i == 2 ? 5 : 0);
        size_t size = i == 2 ? 777 : 4096;
        assert_int_equal(rt->host_register(p, size, flags[i]), ACT_RT_SUCCESS);
        assert_call("aclrtHostRegisterV2", (uintptr_t)p, size, flags[i]);
        assert_int_equal(rt->host_unregister(p), ACT_RT_SUCCESS);
        assert_call("aclrtHostUnregister", (uintptr_t)p, 0, 0);
        assert_int_equal(rt->host_unregister(p), ACL_ERROR_INVALID_PARAM);
    }
    void *h = lib();
    /* The first device call initialised ACL, once, and set device 0. */
    assert_int_equal(fake_named(h, "aclInit"), 1);
    assert_call("aclInit", 0, 0, 0);
    assert_int_equal(fake_named(h, "aclrtSetDevice"), 1);
    assert_call("aclrtSetDevice", 0, 0, 0);
}

static void test_stream_and_rest(void **state)
{
    (void)state;
    void *stream = NULL;
    assert_int_equal(rt->stream_create(&stream), ACT_RT_SUCCESS);
    assert_non_null(stream);
    assert_call("aclrtCreateStream", (uintptr_t)&stream, 0, 0);
    assert_int_equal(rt->stream_destroy(stream), ACT_RT_SUCCESS);
    assert_call("aclrtDestroyStream", (uintptr_t)stream, 0, 0);
    assert_int_equal(rt->synchronize(), ACT_RT_SUCCESS);
    assert_int_equal(fake_named(lib(), "aclrtSynchronizeDevice"), 1);

    size_t f = 0, t = 0;
    assert_int_equal(rt->mem_get_info(1, &f, &t), ACT_RT_SUCCESS);
    assert_int_equal(f, 2 * GIB);
    assert_int_equal(t, 3 * GIB);
    assert_call("aclrtGetMemInfo", 1 /* ACL_HBM_MEM */, (uintptr_t)&f, 1);
    assert_call("aclrtSetDevice", 0, 0, 0); /* put back */
    assert_int_equal(rt->mem_get_info(9, &f, &t), 107001);
    assert_int_equal(fake_named(lib(), "aclInit"), 1);
}

struct job {
    char buf[128];
    int rc;
};

static void *reg_thread(void *arg)
{
    struct job *j = arg;
    j->rc = rt->host_register(j->buf, sizeof j->buf, ACT_RT_HOST_REG_PINNED);
    if (j->rc == 0)
        j->rc = rt->host_unregister(j->buf);
    return NULL;
}

static void test_threads_init_once(void **state)
{
    (void)state;
    enum { N = 8 };
    static struct job jobs[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_create(&th[i], NULL, reg_thread, &jobs[i]), 0);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++)
        assert_int_equal(jobs[i].rc, ACT_RT_SUCCESS);
    void *h = lib();
    assert_int_equal(fake_named(h, "aclInit"), 1);
    assert_int_equal(fake_named(h, "aclrtSetDevice"), 1);
    assert_int_equal(fake_named(h, "aclrtHostRegisterV2"), N);
}

static void test_missing_library(void **state)
{
    (void)state;
    char buf[64];
    int n = -1;
    void *s;
    assert_int_equal(rt->device_count(&n), ACT_RT_ERROR_NO_LIBRARY);
    assert_non_null(strstr(act_rt_last_error(), "libascendcl.so"));
    assert_int_equal(rt->host_register(buf, 64, ACT_RT_HOST_REG_PINNED), ACT_RT_ERROR_NO_LIBRARY);
    assert_int_equal(rt->stream_create(&s), ACT_RT_ERROR_NO_LIBRARY);
    assert_int_equal(rt->synchronize(), ACT_RT_ERROR_NO_LIBRARY);
    assert_non_null(strstr(act_rt_last_error(), "libascendcl.so"));
    assert_int_equal(rt->stream_destroy(NULL), ACT_RT_ERROR_INVALID_PARAM);
}

static void test_missing_symbol(void **state)
{
    (void)state;
    char buf[64];
    void *s = NULL;
    assert_int_equal(rt->host_register(buf, sizeof buf, ACT_RT_HOST_REG_PINNED),
                     ACT_RT_ERROR_NO_SYMBOL);
    assert_non_null(strstr(act_rt_last_error(), "aclrtHostRegisterV2"));
    assert_int_equal(rt->stream_create(&s), ACT_RT_SUCCESS);
    assert_int_equal(rt->stream_destroy(s), ACT_RT_SUCCESS);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "fake";
    path = getenv("FAKE_ASCENDCL");
    rt = act_rt_for("ascend");
    if (!rt || !path) {
        fprintf(stderr, "test_rt_ascend: needs FAKE_ASCENDCL\n");
        return 1;
    }
    if (!strcmp(mode, "fake")) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_flag_values_are_cann),
            cmocka_unit_test(test_bad_args_never_load),
            cmocka_unit_test(test_device_count_no_init),
            cmocka_unit_test(test_register_args_unchanged),
            cmocka_unit_test(test_stream_and_rest),
        };
        return cmocka_run_group_tests_name("rt_ascend_fake", tests, NULL, NULL);
    }
    if (!strcmp(mode, "threads")) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads_init_once)};
        return cmocka_run_group_tests_name("rt_ascend_threads", tests, NULL, NULL);
    }
    if (!strcmp(mode, "missing-lib")) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_missing_library)};
        return cmocka_run_group_tests_name("rt_ascend_missing_lib", tests, NULL, NULL);
    }
    if (!strcmp(mode, "missing-sym")) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_missing_symbol)};
        return cmocka_run_group_tests_name("rt_ascend_missing_sym", tests, NULL, NULL);
    }
    fprintf(stderr, "test_rt_ascend: unknown mode '%s'\n", mode);
    return 1;
}
