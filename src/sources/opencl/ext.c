/*
 * ext.c -- extension entry points. clGetExtensionFunctionAddressForPlatform
 * hands out our wrapper for the names listed with E(), A(), EQ() and EO()
 * in cl_api.def (USM commands, allocations and frees of
 * cl_intel_unified_shared_memory; clEnqueueCommandBufferKHR and the
 * lifetime of command buffers of cl_khr_command_buffer) and the runtime's
 * own pointer for every other name. Commands are traced like the core
 * clEnqueue* calls (device op, bytes), allocations count like SVM in the
 * leak report and the device memory counter, command buffers are counted
 * in the leak report.
 *
 * One real pointer is kept per name: the first platform's. A second
 * platform that answers with another pointer gets its own, unwrapped (its
 * calls are then not traced) -- never a wrapper that would call into the
 * wrong platform.
 */
#include <string.h>

#include "cl_source.h"

#define NOOP(...)

/* The real pointers, one per wrapped name. */
#define E(kind, label, ret, name, params, args)  static void *_Atomic act_cl_ext_##name;
#define A(ret, name, params, args)               static void *_Atomic act_cl_ext_##name;
#define EQ(kind, label, ret, name, params, args) static void *_Atomic act_cl_ext_##name;
#define EO(type, ret, name, params, args)        static void *_Atomic act_cl_ext_##name;
#define X                                        NOOP
#include "cl_api.def"
#undef X
#undef EO
#undef EQ
#undef A
#undef E
/* Not wrapped, but asked for where a command buffer's queue is needed:
 * the same platform's, looked up when clEnqueueCommandBufferKHR is. */
static void *_Atomic act_cl_ext_clGetCommandBufferInfoKHR;

#define ACT_CL_EXT_REAL(name)                                                                      \
    ((name##_fn)atomic_load_explicit(&act_cl_ext_##name, memory_order_acquire))

/* Commands: traced like enqueue.c's wrappers. */
#define E(kind, label, ret, name, params, args)                                                    \
    static ret CL_API_CALL act_cl_x_##name params                                                  \
    {                                                                                              \
        act_cl_op *op;                                                                             \
        if (!act_cl_gate(&act_cl_armed_clGetExtensionFunctionAddressForPlatform, ACT_CL_CMD) ||    \
            !(op = act_cl_op_begin(q, kind, label)))                                               \
            return ACT_CL_EXT_REAL(name) args;                                                     \
        op->bytes = size;                                                                          \
        cl_event *app_ev = ev;                                                                     \
        ev = act_cl_op_event(op, app_ev);                                                          \
        cl_int rc = ACT_CL_EXT_REAL(name) args;                                                    \
        act_cl_op_end(op, #name, rc, app_ev);                                                      \
        return rc;                                                                                 \
    }
#define A(ret, name, params, args)
#define EQ(kind, label, ret, name, params, args)
#define EO(type, ret, name, params, args)
#define X NOOP
#include "cl_api.def"
#undef X
#undef EO
#undef EQ
#undef A
#undef E

/* Allocations and frees: host slices, lifetimes like SVM. */
static void *act_cl_usm_done(const char *api, uint64_t t0, void *p, cl_context ctx, size_t size,
                             cl_int rc, cl_int *err)
{
    if (err)
        *err = rc;
    if (p)
        act_cl_obj_created(ACT_CL_OBJ_SVM, p, ctx, NULL, size);
    act_cl_host_slice(api, t0, rc);
    return p;
}

#define ACT_CL_EXT_GATE(name, args)                                                                \
    if (!act_cl_gate(&act_cl_armed_clGetExtensionFunctionAddressForPlatform, ACT_CL_SETUP))        \
        return ACT_CL_EXT_REAL(name) args;                                                         \
    uint64_t t0 = act_clock_now();                                                                 \
    cl_int rc = CL_SUCCESS

static void *CL_API_CALL act_cl_x_clHostMemAllocINTEL(cl_context ctx,
                                                      const cl_mem_properties_intel *props,
                                                      size_t size, cl_uint align, cl_int *err)
{
    ACT_CL_EXT_GATE(clHostMemAllocINTEL, (ctx, props, size, align, err));
    void *p = ACT_CL_EXT_REAL(clHostMemAllocINTEL)(ctx, props, size, align, &rc);
    return act_cl_usm_done("clHostMemAllocINTEL", t0, p, ctx, size, rc, err);
}

static void *CL_API_CALL act_cl_x_clDeviceMemAllocINTEL(cl_context ctx, cl_device_id dev,
                                                        const cl_mem_properties_intel *props,
                                                        size_t size, cl_uint align, cl_int *err)
{
    ACT_CL_EXT_GATE(clDeviceMemAllocINTEL, (ctx, dev, props, size, align, err));
    void *p = ACT_CL_EXT_REAL(clDeviceMemAllocINTEL)(ctx, dev, props, size, align, &rc);
    return act_cl_usm_done("clDeviceMemAllocINTEL", t0, p, ctx, size, rc, err);
}

static void *CL_API_CALL act_cl_x_clSharedMemAllocINTEL(cl_context ctx, cl_device_id dev,
                                                        const cl_mem_properties_intel *props,
                                                        size_t size, cl_uint align, cl_int *err)
{
    ACT_CL_EXT_GATE(clSharedMemAllocINTEL, (ctx, dev, props, size, align, err));
    void *p = ACT_CL_EXT_REAL(clSharedMemAllocINTEL)(ctx, dev, props, size, align, &rc);
    return act_cl_usm_done("clSharedMemAllocINTEL", t0, p, ctx, size, rc, err);
}

static cl_int CL_API_CALL act_cl_x_clMemFreeINTEL(cl_context ctx, void *ptr)
{
    ACT_CL_EXT_GATE(clMemFreeINTEL, (ctx, ptr));
    act_cl_obj_released(ptr);
    rc = ACT_CL_EXT_REAL(clMemFreeINTEL)(ctx, ptr);
    act_cl_host_slice("clMemFreeINTEL", t0, rc);
    return rc;
}

static cl_int CL_API_CALL act_cl_x_clMemBlockingFreeINTEL(cl_context ctx, void *ptr)
{
    ACT_CL_EXT_GATE(clMemBlockingFreeINTEL, (ctx, ptr));
    act_cl_obj_released(ptr);
    rc = ACT_CL_EXT_REAL(clMemBlockingFreeINTEL)(ctx, ptr);
    act_cl_host_slice("clMemBlockingFreeINTEL", t0, rc);
    return rc;
}

/* ---- cl_khr_command_buffer ------------------------------------------------ */

/* The queue a command buffer runs on: the first given, else the first it
 * was created for (noted at creation). For one created behind our back,
 * the runtime is asked, and its answer used only if it is a queue we know:
 * PoCL 3.1 answers CL_COMMAND_BUFFER_QUEUES_KHR with a pointer that is no
 * queue, and calling anything on that would crash. NULL: not known. */
static cl_command_queue act_cl_cmdbuf_queue(cl_uint nq, cl_command_queue *qs,
                                            cl_command_buffer_khr cb)
{
    if (nq && qs)
        return qs[0];
    cl_command_queue q[8];
    if ((q[0] = act_cl_obj_queue(cb)))
        return q[0];
    clGetCommandBufferInfoKHR_fn info = ACT_CL_EXT_REAL(clGetCommandBufferInfoKHR);
    size_t len = 0;
    if (!info || info(cb, CL_COMMAND_BUFFER_QUEUES_KHR, sizeof q, q, &len) != CL_SUCCESS ||
        len < sizeof q[0] || !act_cl_queue_find(q[0]))
        return NULL;
    return q[0];
}

/* A command, like the core enqueues; when its queue cannot be known, a
 * host slice only (the call is still recorded, with its error). */
static cl_int CL_API_CALL act_cl_x_clEnqueueCommandBufferKHR(cl_uint nq, cl_command_queue *qs,
                                                             cl_command_buffer_khr cb, cl_uint n,
                                                             const cl_event *w, cl_event *ev)
{
    clEnqueueCommandBufferKHR_fn real = ACT_CL_EXT_REAL(clEnqueueCommandBufferKHR);
    if (!act_cl_gate(&act_cl_armed_clGetExtensionFunctionAddressForPlatform, ACT_CL_CMD))
        return real(nq, qs, cb, n, w, ev);
    cl_command_queue q = act_cl_cmdbuf_queue(nq, qs, cb);
    act_cl_op *op = q ? act_cl_op_begin(q, ACT_OP_OTHER, "Command buffer") : NULL;
    if (!op) {
        uint64_t t0 = act_clock_now();
        cl_int rc = real(nq, qs, cb, n, w, ev);
        act_cl_host_slice("clEnqueueCommandBufferKHR", t0, rc);
        return rc;
    }
    cl_int rc = real(nq, qs, cb, n, w, act_cl_op_event(op, ev));
    act_cl_op_end(op, "clEnqueueCommandBufferKHR", rc, ev);
    return rc;
}

static cl_command_buffer_khr CL_API_CALL
act_cl_x_clCreateCommandBufferKHR(cl_uint nq, const cl_command_queue *qs,
                                  const cl_command_buffer_properties_khr *props, cl_int *err)
{
    ACT_CL_EXT_GATE(clCreateCommandBufferKHR, (nq, qs, props, err));
    cl_command_buffer_khr cb = ACT_CL_EXT_REAL(clCreateCommandBufferKHR)(nq, qs, props, &rc);
    if (err)
        *err = rc;
    if (cb) {
        act_cl_obj_created(ACT_CL_OBJ_COMMAND_BUFFER, cb, NULL, NULL, 0);
        if (nq && qs)
            act_cl_obj_set_queue(cb, qs[0]);
    }
    act_cl_host_slice("clCreateCommandBufferKHR", t0, cb ? rc : (rc ? rc : CL_INVALID_VALUE));
    return cb;
}

static cl_int CL_API_CALL act_cl_x_clRetainCommandBufferKHR(cl_command_buffer_khr cb)
{
    ACT_CL_EXT_GATE(clRetainCommandBufferKHR, (cb));
    rc = ACT_CL_EXT_REAL(clRetainCommandBufferKHR)(cb);
    if (rc == CL_SUCCESS)
        act_cl_obj_retained(cb);
    act_cl_host_slice("clRetainCommandBufferKHR", t0, rc);
    return rc;
}

static cl_int CL_API_CALL act_cl_x_clReleaseCommandBufferKHR(cl_command_buffer_khr cb)
{
    ACT_CL_EXT_GATE(clReleaseCommandBufferKHR, (cb));
    act_cl_obj_released(cb); /* before: the handle may be reused once released */
    rc = ACT_CL_EXT_REAL(clReleaseCommandBufferKHR)(cb);
    act_cl_host_slice("clReleaseCommandBufferKHR", t0, rc);
    return rc;
}

/* What a wrapper of `fname` needs besides its own real pointer. */
static void act_cl_ext_companions(cl_platform_id plat, const char *fname)
{
    if (strcmp(fname, "clEnqueueCommandBufferKHR") != 0)
        return;
    void *info =
        act_cl_next.clGetExtensionFunctionAddressForPlatform(plat, "clGetCommandBufferInfoKHR");
    void *expected = NULL;
    atomic_compare_exchange_strong(&act_cl_ext_clGetCommandBufferInfoKHR, &expected, info);
}

/* Our wrapper for `real` of `fname`, or `real` itself. */
static void *act_cl_ext_wrap(cl_platform_id plat, const char *fname, void *real)
{
    void *expected = NULL;
#define ACT_CL_EXT_CASE(name)                                                                      \
    if (!strcmp(fname, #name)) {                                                                   \
        if (atomic_compare_exchange_strong(&act_cl_ext_##name, &expected, real) ||                 \
            expected == real) {                                                                    \
            act_cl_ext_companions(plat, fname);                                                    \
            name##_fn w = act_cl_x_##name;                                                         \
            void *wp;                                                                              \
            memcpy(&wp, &w, sizeof wp);                                                            \
            return wp;                                                                             \
        }                                                                                          \
        return real;                                                                               \
    }
#define E(kind, label, ret, name, params, args)  ACT_CL_EXT_CASE(name)
#define A(ret, name, params, args)               ACT_CL_EXT_CASE(name)
#define EQ(kind, label, ret, name, params, args) ACT_CL_EXT_CASE(name)
#define EO(type, ret, name, params, args)        ACT_CL_EXT_CASE(name)
#define X                                        NOOP
#include "cl_api.def"
#undef X
#undef EO
#undef EQ
#undef A
#undef E
    return real;
}

void *CL_API_CALL act_cl_w_clGetExtensionFunctionAddressForPlatform(cl_platform_id plat,
                                                                    const char *fname)
{
    void *real = act_cl_next.clGetExtensionFunctionAddressForPlatform(plat, fname);
    if (!real || !fname ||
        !act_cl_gate(&act_cl_armed_clGetExtensionFunctionAddressForPlatform, ACT_CL_QUERY))
        return real;
    return act_cl_ext_wrap(plat, fname, real);
}
