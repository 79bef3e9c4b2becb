/*
 * ext.c -- extension entry points. clGetExtensionFunctionAddressForPlatform
 * hands out our wrapper for the names listed with E() and A() in
 * cl_api.def (USM commands, allocations and frees of
 * cl_intel_unified_shared_memory) and the runtime's own pointer for every
 * other name. Commands are traced like the core clEnqueue* calls (device
 * op, bytes), allocations count like SVM in the leak report and the
 * device memory counter.
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
#define E(kind, label, ret, name, params, args) static void *_Atomic act_cl_ext_##name;
#define A(ret, name, params, args)              static void *_Atomic act_cl_ext_##name;
#define X                                       NOOP
#include "cl_api.def"
#undef X
#undef A
#undef E

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
#define X NOOP
#include "cl_api.def"
#undef X
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

#define ACT_CL_USM_GATE(name, args)                                                                \
    if (!act_cl_gate(&act_cl_armed_clGetExtensionFunctionAddressForPlatform, ACT_CL_SETUP))        \
        return ACT_CL_EXT_REAL(name) args;                                                         \
    uint64_t t0 = act_clock_now();                                                                 \
    cl_int rc = CL_SUCCESS

static void *CL_API_CALL act_cl_x_clHostMemAllocINTEL(cl_context ctx,
                                                      const cl_mem_properties_intel *props,
                                                      size_t size, cl_uint align, cl_int *err)
{
    ACT_CL_USM_GATE(clHostMemAllocINTEL, (ctx, props, size, align, err));
    void *p = ACT_CL_EXT_REAL(clHostMemAllocINTEL)(ctx, props, size, align, &rc);
    return act_cl_usm_done("clHostMemAllocINTEL", t0, p, ctx, size, rc, err);
}

static void *CL_API_CALL act_cl_x_clDeviceMemAllocINTEL(cl_context ctx, cl_device_id dev,
                                                        const cl_mem_properties_intel *props,
                                                        size_t size, cl_uint align, cl_int *err)
{
    ACT_CL_USM_GATE(clDeviceMemAllocINTEL, (ctx, dev, props, size, align, err));
    void *p = ACT_CL_EXT_REAL(clDeviceMemAllocINTEL)(ctx, dev, props, size, align, &rc);
    return act_cl_usm_done("clDeviceMemAllocINTEL", t0, p, ctx, size, rc, err);
}

static void *CL_API_CALL act_cl_x_clSharedMemAllocINTEL(cl_context ctx, cl_device_id dev,
                                                        const cl_mem_properties_intel *props,
                                                        size_t size, cl_uint align, cl_int *err)
{
    ACT_CL_USM_GATE(clSharedMemAllocINTEL, (ctx, dev, props, size, align, err));
    void *p = ACT_CL_EXT_REAL(clSharedMemAllocINTEL)(ctx, dev, props, size, align, &rc);
    return act_cl_usm_done("clSharedMemAllocINTEL", t0, p, ctx, size, rc, err);
}

static cl_int CL_API_CALL act_cl_x_clMemFreeINTEL(cl_context ctx, void *ptr)
{
    ACT_CL_USM_GATE(clMemFreeINTEL, (ctx, ptr));
    act_cl_obj_released(ptr);
    rc = ACT_CL_EXT_REAL(clMemFreeINTEL)(ctx, ptr);
    act_cl_host_slice("clMemFreeINTEL", t0, rc);
    return rc;
}

static cl_int CL_API_CALL act_cl_x_clMemBlockingFreeINTEL(cl_context ctx, void *ptr)
{
    ACT_CL_USM_GATE(clMemBlockingFreeINTEL, (ctx, ptr));
    act_cl_obj_released(ptr);
    rc = ACT_CL_EXT_REAL(clMemBlockingFreeINTEL)(ctx, ptr);
    act_cl_host_slice("clMemBlockingFreeINTEL", t0, rc);
    return rc;
}

/* Our wrapper for `real` of `fname`, or `real` itself. */
static void *act_cl_ext_wrap(const char *fname, void *real)
{
    void *expected = NULL;
#define ACT_CL_EXT_CASE(name)                                                                      \
    if (!strcmp(fname, #name)) {                                                                   \
        if (atomic_compare_exchange_strong(&act_cl_ext_##name, &expected, real) ||                 \
            expected == real) {                                                                    \
            name##_fn w = act_cl_x_##name;                                                         \
            void *wp;                                                                              \
            memcpy(&wp, &w, sizeof wp);                                                            \
            return wp;                                                                             \
        }                                                                                          \
        return real;                                                                               \
    }
#define E(kind, label, ret, name, params, args) ACT_CL_EXT_CASE(name)
#define A(ret, name, params, args)              ACT_CL_EXT_CASE(name)
#define X                                       NOOP
#include "cl_api.def"
#undef X
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
    return act_cl_ext_wrap(fname, real);
}
