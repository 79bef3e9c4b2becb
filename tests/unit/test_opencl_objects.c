/*
 * test_opencl_objects.c -- object lifetimes, leaks, the device memory
 * counter and context error callbacks of the OpenCL source, against a
 * fake runtime (act_cl_next filled with fakes) in an in-process session:
 * the things PoCL cannot be made to do (call pfn_notify) or that need
 * exact bookkeeping (retain/release, sub-buffers keeping their parent,
 * handles reused, releases of objects never seen created).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first. */
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sources/opencl/cl_source.h"

static uintptr_t next_handle = 0x1000;
static int app_notes;

static cl_context CL_API_CALL fake_create_context(
    const cl_context_properties *p, cl_uint n, const cl_device_id *d,
    void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *), void *user, cl_int *err)
{
    (void)p;
    (void)n;
    (void)d;
    if (notify)
        notify("boom: out of device memory", NULL, 0, user);
    *err = CL_SUCCESS;
    return (cl_context)(next_handle += 0x10);
}

static cl_mem CL_API_CALL fake_create_buffer(cl_context c, cl_mem_flags f, size_t size, void *h,
                                             cl_int *err)
{
    (void)c;
    (void)f;
    (void)h;
    *err = size ? CL_SUCCESS : CL_INVALID_BUFFER_SIZE;
    return size ? (cl_mem)(next_handle += 0x10) : NULL;
}

static cl_mem CL_API_CALL fake_create_sub(cl_mem m, cl_mem_flags f, cl_buffer_create_type t,
                                          const void *info, cl_int *err)
{
    (void)m;
    (void)f;
    (void)t;
    (void)info;
    *err = CL_SUCCESS;
    return (cl_mem)(next_handle += 0x10);
}

static cl_int CL_API_CALL fake_ok_mem(cl_mem m)
{
    (void)m;
    return CL_SUCCESS;
}

static cl_int CL_API_CALL fake_ok_event(cl_event e)
{
    (void)e;
    return CL_SUCCESS;
}

static cl_int CL_API_CALL fake_ok_ctx(cl_context c)
{
    (void)c;
    return CL_SUCCESS;
}

static void *CL_API_CALL fake_usm_alloc(cl_context c, cl_device_id d,
                                        const cl_mem_properties_intel *p, size_t size,
                                        cl_uint align, cl_int *err)
{
    (void)c;
    (void)d;
    (void)p;
    (void)align;
    *err = CL_SUCCESS;
    return size ? (void *)(next_handle += 0x10) : NULL;
}

static cl_int CL_API_CALL fake_other_ext(cl_context c, void *ptr)
{
    (void)c;
    (void)ptr;
    return CL_SUCCESS;
}

/* cl_khr_command_buffer as PoCL 3.1 has it: CL_COMMAND_BUFFER_QUEUES_KHR
 * answers with a pointer that is no queue. */
static const cl_command_queue bogus_queue = (cl_command_queue)0xdead0;
static int cb_enqueued;

static cl_int CL_API_CALL fake_cb_info(cl_command_buffer_khr cb, cl_command_buffer_info_khr what,
                                       size_t size, void *v, size_t *ret)
{
    (void)cb;
    if (what != CL_COMMAND_BUFFER_QUEUES_KHR || size < sizeof bogus_queue)
        return CL_INVALID_VALUE;
    memcpy(v, &bogus_queue, sizeof bogus_queue);
    if (ret)
        *ret = sizeof bogus_queue;
    return CL_SUCCESS;
}

static cl_int CL_API_CALL fake_cb_enqueue(cl_uint nq, cl_command_queue *qs,
                                          cl_command_buffer_khr cb, cl_uint n, const cl_event *w,
                                          cl_event *ev)
{
    (void)nq;
    (void)qs;
    (void)cb;
    (void)n;
    (void)w;
    assert_null(ev);
    cb_enqueued++;
    return CL_SUCCESS;
}

static cl_int CL_API_CALL fake_queue_info_never(cl_command_queue q, cl_command_queue_info what,
                                                size_t size, void *v, size_t *ret)
{
    (void)what;
    (void)size;
    (void)v;
    (void)ret;
    fail_msg("clGetCommandQueueInfo called on %p, which is no queue", (void *)q);
    return CL_INVALID_COMMAND_QUEUE;
}

static void *CL_API_CALL fake_ext_address(cl_platform_id plat, const char *name)
{
    void *p = NULL;
    if (!strcmp(name, "clEnqueueCommandBufferKHR")) {
        clEnqueueCommandBufferKHR_fn f = fake_cb_enqueue;
        memcpy(&p, &f, sizeof p);
    } else if (!strcmp(name, "clGetCommandBufferInfoKHR")) {
        clGetCommandBufferInfoKHR_fn f = fake_cb_info;
        memcpy(&p, &f, sizeof p);
    } else if (!strcmp(name, "clDeviceMemAllocINTEL") && plat != (cl_platform_id)2) {
        clDeviceMemAllocINTEL_fn f = fake_usm_alloc;
        memcpy(&p, &f, sizeof p);
    } else {
        clMemFreeINTEL_fn f = fake_other_ext;
        memcpy(&p, &f, sizeof p);
    }
    return p;
}

static void CL_CALLBACK app_notify(const char *msg, const void *info, size_t cb, void *user)
{
    (void)info;
    (void)cb;
    assert_ptr_equal(user, &app_notes);
    assert_string_equal(msg, "boom: out of device memory");
    app_notes++;
}

static json_t *session_trace(const char *path)
{
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e);
    assert_non_null(doc);
    return doc;
}

/* An in-process session whose spool goes to a fresh directory ($TMPDIR). */
static void session_open(char *dir)
{
    assert_non_null(mkdtemp(dir));
    setenv("TMPDIR", dir, 1);
    assert_int_equal(act_session_begin(NULL), ACT_OK);
}

/* End it and return its trace (json_decref it); the directory is removed. */
static json_t *session_close(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/t.json", dir);
    assert_int_equal(act_session_end(path), ACT_OK);
    json_t *doc = session_trace(path);
    unlink(path);
    rmdir(dir);
    unsetenv("TMPDIR");
    return doc;
}

/* Counter samples of `name`, in trace order. */
static size_t counter_values(json_t *doc, const char *name, double *v, size_t max)
{
    size_t n = 0, i;
    json_t *ev;
    json_array_foreach(json_object_get(doc, "traceEvents"), i, ev)
    {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *nm = json_string_value(json_object_get(ev, "name"));
        if (ph && nm && !strcmp(ph, "C") && !strcmp(nm, name) && n < max)
            v[n++] = json_number_value(json_object_get(json_object_get(ev, "args"), name));
    }
    return n;
}

static void test_lifetimes(void **state)
{
    (void)state;
    char dir[] = "/tmp/act-clobj-XXXXXX";
    session_open(dir);
    act_cl_next.clCreateContext = fake_create_context;
    act_cl_next.clCreateBuffer = fake_create_buffer;
    act_cl_next.clCreateSubBuffer = fake_create_sub;
    act_cl_next.clReleaseMemObject = fake_ok_mem;
    act_cl_next.clRetainMemObject = fake_ok_mem;
    act_cl_next.clReleaseContext = fake_ok_ctx;
    act_cl_next.clGetExtensionFunctionAddressForPlatform = fake_ext_address;

    cl_int rc;
    cl_context ctx = act_cl_w_clCreateContext(NULL, 0, NULL, app_notify, &app_notes, &rc);
    assert_int_equal(app_notes, 1); /* the program's callback still runs */
    cl_mem a = act_cl_w_clCreateBuffer(ctx, 0, 1000, NULL, &rc);
    cl_mem b = act_cl_w_clCreateBuffer(ctx, 0, 24, NULL, &rc);
    assert_null(act_cl_w_clCreateBuffer(ctx, 0, 0, NULL, &rc));
    assert_int_equal(rc, CL_INVALID_BUFFER_SIZE);
    cl_buffer_region r = {0, 500};
    cl_mem s = act_cl_w_clCreateSubBuffer(a, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &rc);
    assert_int_equal(act_cl_w_clRetainMemObject(a), CL_SUCCESS);
    assert_int_equal(act_cl_w_clReleaseMemObject(a), CL_SUCCESS);
    assert_int_equal(act_cl_w_clReleaseMemObject(a), CL_SUCCESS); /* s still holds a */
    assert_int_equal(act_cl_w_clReleaseMemObject(s), CL_SUCCESS); /* a's 1000 bytes go */
    /* A release of something never seen created changes nothing. */
    assert_int_equal(act_cl_w_clReleaseMemObject((cl_mem)0x42), CL_SUCCESS);
    (void)b; /* leaked on purpose */

    /* Extension entry points: ours for the listed names, theirs for the rest;
     * a second platform answering with another function gets its own. */
    void *raw = fake_ext_address((cl_platform_id)1, "clDeviceMemAllocINTEL");
    void *got = act_cl_w_clGetExtensionFunctionAddressForPlatform((cl_platform_id)1,
                                                                  "clDeviceMemAllocINTEL");
    assert_non_null(got);
    assert_ptr_not_equal(got, raw);
    assert_ptr_equal(
        act_cl_w_clGetExtensionFunctionAddressForPlatform((cl_platform_id)1, "clSomethingElseEXT"),
        fake_ext_address((cl_platform_id)1, "clSomethingElseEXT"));
    assert_ptr_equal(act_cl_w_clGetExtensionFunctionAddressForPlatform((cl_platform_id)2,
                                                                       "clDeviceMemAllocINTEL"),
                     fake_ext_address((cl_platform_id)2, "clDeviceMemAllocINTEL"));
    clDeviceMemAllocINTEL_fn alloc;
    memcpy(&alloc, &got, sizeof alloc);
    assert_non_null(alloc(ctx, NULL, NULL, 333, 0, &rc));         /* leaked USM: counted as svm */
    assert_int_equal(act_cl_w_clReleaseContext(ctx), CL_SUCCESS); /* b keeps its counter */

    json_t *doc = session_close(dir);

    json_t *leaks = json_object_get(doc, "opencl_leaks");
    assert_non_null(leaks);
    assert_int_equal(json_integer_value(json_object_get(leaks, "total")), 2);
    json_t *svm = json_object_get(leaks, "svm");
    assert_int_equal(json_integer_value(json_object_get(svm, "count")), 1);
    assert_int_equal(json_integer_value(json_object_get(svm, "bytes")), 333);
    json_t *buf = json_object_get(leaks, "buffer");
    assert_int_equal(json_integer_value(json_object_get(buf, "count")), 1);
    assert_int_equal(json_integer_value(json_object_get(buf, "bytes")), 24);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(leaks, "context"), "count")), 0);

    double v[16];
    size_t n = counter_values(doc, "OpenCL device memory (context 0)", v, 16);
    assert_int_equal(n, 4);
    assert_true(v[0] == 1000 && v[1] == 1024 && v[2] == 24 && v[3] == 24 + 333);

    /* The callback's message is an instant event; the failed create an error. */
    int notes = 0, failed = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(doc, "traceEvents"), i, ev)
    {
        const char *nm = json_string_value(json_object_get(ev, "name"));
        json_t *args = json_object_get(ev, "args");
        if (nm && !strcmp(nm, "OpenCL context error")) {
            notes++;
            assert_string_equal(json_string_value(json_object_get(args, "message")),
                                "boom: out of device memory");
        }
        const char *err = json_string_value(json_object_get(args, "error"));
        if (nm && !strcmp(nm, "clCreateBuffer") && err) {
            failed++;
            assert_string_equal(err, "CL_INVALID_BUFFER_SIZE");
            assert_string_equal(json_string_value(json_object_get(ev, "cname")), "terrible");
        }
    }
    assert_int_equal(notes, 1);
    assert_int_equal(failed, 1);
    json_decref(doc);
}

/* A command buffer created behind our back, enqueued without a queue: the
 * runtime's answer for its queue is no queue we know, so the call is a
 * host slice only (no device op), and nothing is called on that pointer. */
static void test_command_buffer_unknown_queue(void **state)
{
    (void)state;
    char dir[] = "/tmp/act-clcb-XXXXXX";
    session_open(dir);
    act_cl_next.clGetExtensionFunctionAddressForPlatform = fake_ext_address;
    act_cl_next.clGetCommandQueueInfo = fake_queue_info_never;
    void *got = act_cl_w_clGetExtensionFunctionAddressForPlatform((cl_platform_id)1,
                                                                  "clEnqueueCommandBufferKHR");
    assert_ptr_not_equal(got, fake_ext_address((cl_platform_id)1, "clEnqueueCommandBufferKHR"));
    clEnqueueCommandBufferKHR_fn enq;
    memcpy(&enq, &got, sizeof enq);
    assert_int_equal(enq(0, NULL, (cl_command_buffer_khr)0x7000, 0, NULL, NULL), CL_SUCCESS);
    assert_int_equal(cb_enqueued, 1);

    json_t *doc = session_close(dir);
    int slices = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(doc, "traceEvents"), i, ev)
    {
        const char *nm = json_string_value(json_object_get(ev, "name"));
        if (nm && !strcmp(nm, "clEnqueueCommandBufferKHR")) {
            slices++;
            assert_null(json_object_get(json_object_get(ev, "args"), "correlation"));
        }
        assert_false(nm && !strcmp(nm, "Command buffer"));
    }
    assert_int_equal(slices, 1);
    json_decref(doc);
}

/* Events' references without a lock (evtab.c), past the table's room
 * (those go to the locked table): retains, releases and the leak report. */
static void test_event_refs(void **state)
{
    (void)state;
    char dir[] = "/tmp/act-clev-XXXXXX";
    session_open(dir);
    act_cl_next.clRetainEvent = fake_ok_event;
    act_cl_next.clReleaseEvent = fake_ok_event;
    enum { N = 10000 };
    for (uintptr_t i = 0; i < N; i++)
        act_cl_event_created((cl_event)(0x100000 + 16 * i), NULL);
    for (uintptr_t i = 0; i < 10; i++)
        assert_int_equal(act_cl_w_clRetainEvent((cl_event)(0x100000 + 16 * i)), CL_SUCCESS);
    for (uintptr_t i = 0; i < N - 5; i++)
        assert_int_equal(act_cl_w_clReleaseEvent((cl_event)(0x100000 + 16 * i)), CL_SUCCESS);
    /* A handle never seen created changes nothing; a freed one comes back. */
    assert_int_equal(act_cl_w_clReleaseEvent((cl_event)0x42), CL_SUCCESS);
    act_cl_event_created((cl_event)(0x100000 + 16 * 20), NULL);
    assert_int_equal(act_cl_w_clReleaseEvent((cl_event)(0x100000 + 16 * 20)), CL_SUCCESS);

    json_t *doc = session_close(dir);
    json_t *leaks = json_object_get(doc, "opencl_leaks");
    /* The 10 retained once more and the 5 never released. */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(leaks, "event"), "count")),
                     15);
    json_decref(doc);
}

static cl_int CL_API_CALL fake_bad_event(cl_event e)
{
    (void)e;
    return CL_INVALID_EVENT;
}

/* One session: a retain (failed, or ok), a release (ok), a failed
 * release; returns the names of its OpenCL slices in order, checks each
 * is marked failed, and returns the metadata's count of calls not drawn. */
static void event_session(int retain_fails, char names[4][32], int *n, json_int_t *undrawn)
{
    char dir[] = "/tmp/act-clevn-XXXXXX";
    session_open(dir);
    act_cl_next.clRetainEvent = retain_fails ? fake_bad_event : fake_ok_event;
    act_cl_next.clReleaseEvent = fake_ok_event;
    assert_int_equal(act_cl_w_clRetainEvent((cl_event)0x5000),
                     retain_fails ? CL_INVALID_EVENT : CL_SUCCESS);
    assert_int_equal(act_cl_w_clReleaseEvent((cl_event)0x5000), CL_SUCCESS);
    act_cl_next.clReleaseEvent = fake_bad_event;
    assert_int_equal(act_cl_w_clReleaseEvent((cl_event)0x5000), CL_INVALID_EVENT);
    json_t *doc = session_close(dir);
    size_t i;
    json_t *ev;
    *n = 0;
    json_array_foreach(json_object_get(doc, "traceEvents"), i, ev)
    {
        const char *nm = json_string_value(json_object_get(ev, "name"));
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        if (!nm || !ph || strcmp(ph, "X") || strncmp(nm, "cl", 2) || *n == 4)
            continue;
        snprintf(names[(*n)++], 32, "%s", nm);
        const char *err = json_string_value(json_object_get(json_object_get(ev, "args"), "error"));
        assert_string_equal(err ? err : "", "CL_INVALID_EVENT");
    }
    json_t *nd = json_object_get(doc, "opencl_calls_not_drawn");
    undrawn[0] = json_integer_value(json_object_get(nd, "clRetainEvent"));
    undrawn[1] = json_integer_value(json_object_get(nd, "clReleaseEvent"));
    json_decref(doc);
}

/* Events' retains and releases are drawn only when they fail (with the
 * error); those that succeed are counted in "opencl_calls_not_drawn",
 * per session. Their names keep their string ids per thread: a new spool
 * starts the ids again, so the second session (release interned first
 * there, where it came second before) must not reuse the first one's. */
static void test_event_slice_names(void **state)
{
    (void)state;
    char names[4][32];
    int n;
    json_int_t undrawn[2];
    event_session(1, names, &n, undrawn);
    assert_int_equal(n, 2);
    assert_string_equal(names[0], "clRetainEvent");
    assert_string_equal(names[1], "clReleaseEvent");
    assert_int_equal(undrawn[0], 0);
    assert_int_equal(undrawn[1], 1);
    event_session(0, names, &n, undrawn);
    assert_int_equal(n, 1);
    assert_string_equal(names[0], "clReleaseEvent");
    assert_int_equal(undrawn[0], 1);
    assert_int_equal(undrawn[1], 1);
}

/* A fake clGetKernelInfo: kernel handle 1 is named "k_short", 2 has a
 * name longer than the first buffer the layer offers, 3 has none. */
static char long_name[301];

static cl_int CL_API_CALL fake_kernel_info(cl_kernel k, cl_kernel_info what, size_t size,
                                           void *value, size_t *ret)
{
    const char *name = (uintptr_t)k == 1 ? "k_short" : (uintptr_t)k == 2 ? long_name : NULL;
    if (what != CL_KERNEL_FUNCTION_NAME || !name)
        return CL_INVALID_KERNEL;
    size_t need = strlen(name) + 1;
    if (ret)
        *ret = need;
    if (value && size < need)
        return CL_INVALID_VALUE;
    if (value)
        memcpy(value, name, need);
    return CL_SUCCESS;
}

/* Kernel names are kept once per distinct name, whole whatever their
 * length (names.c): a command carries the pointer past the kernel's
 * release, and equal names share one copy. */
static void test_kept_names(void **state)
{
    (void)state;
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    act_cl_next.clGetKernelInfo = fake_kernel_info;
    const char *a = act_cl_kernel_name((cl_kernel)1);
    assert_non_null(a);
    assert_string_equal(a, "k_short");
    assert_ptr_equal(act_cl_kernel_name((cl_kernel)1), a);
    assert_ptr_equal(act_cl_name_keep("k_short", 7), a);
    assert_ptr_not_equal(act_cl_name_keep("k_shor", 6), a);
    const char *l = act_cl_kernel_name((cl_kernel)2);
    assert_non_null(l);
    assert_string_equal(l, long_name);
    assert_null(act_cl_kernel_name((cl_kernel)3));
}

static void test_error_names(void **state)
{
    (void)state;
    assert_string_equal(act_cl_error_name(CL_INVALID_WORK_GROUP_SIZE),
                        "CL_INVALID_WORK_GROUP_SIZE");
    assert_string_equal(act_cl_error_name(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE");
    assert_string_equal(act_cl_error_name(-1138), "CL_INVALID_COMMAND_BUFFER_KHR");
    assert_null(act_cl_error_name(-9999));
    assert_null(act_cl_error_name(CL_SUCCESS));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_names),
        cmocka_unit_test(test_lifetimes),
        cmocka_unit_test(test_command_buffer_unknown_queue),
        cmocka_unit_test(test_event_refs),
        cmocka_unit_test(test_event_slice_names),
        cmocka_unit_test(test_kept_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
