/*
 * lifetime.c -- wrappers of the calls that create, retain and release
 * OpenCL objects (contexts, memory objects, SVM, programs, kernels, user
 * events, samplers; queues are created in queue.c) and the SVM commands
 * that free or migrate allocations. Each records a host slice (with the
 * error name when it failed; an event's retain or release only when it
 * failed, else it is counted) and tells objects.c what the app now holds.
 *
 * Context error callbacks: when the app passes pfn_notify, we pass our
 * own, which records each message as an instant event "OpenCL context
 * error" (args: message) and then calls the app's with its user data.
 * The pair lives as long as the process, on a list (contexts are few).
 */
#include <stdlib.h>

#include "cl_source.h"

typedef void(CL_CALLBACK *act_cl_notify_fn)(const char *, const void *, size_t, void *);

/* ---- object creation ------------------------------------------------------ */

/* Gate, start time and the errcode the real call writes. */
#define ACT_CL_OBJ_BEGIN(name_, args_)                                                             \
    if (!act_cl_gate(&act_cl_armed_##name_, ACT_CL_SETUP))                                         \
        return act_cl_next.name_ args_;                                                            \
    uint64_t t0 = act_clock_now();                                                                 \
    cl_int rc = CL_SUCCESS;                                                                        \
    cl_int *app_err = err;                                                                         \
    err = &rc

#define ACT_CL_OBJ_END(name_, handle_)                                                             \
    if (app_err)                                                                                   \
        *app_err = rc;                                                                             \
    act_cl_host_slice(#name_, t0, (handle_) ? rc : (rc ? rc : CL_INVALID_VALUE));                  \
    return handle_

/* Retain/release: the app's count moves only when the call succeeded. */
#define ACT_CL_REFCALL(name_, h_, track_)                                                          \
    if (!act_cl_gate(&act_cl_armed_##name_, ACT_CL_SETUP))                                         \
        return act_cl_next.name_(h_);                                                              \
    uint64_t t0 = act_clock_now();                                                                 \
    if (track_ == act_cl_obj_released)                                                             \
        track_(h_); /* before: the handle may be reused once released */                           \
    cl_int rc = act_cl_next.name_(h_);                                                             \
    if (rc == CL_SUCCESS && track_ == act_cl_obj_retained)                                         \
        track_(h_);                                                                                \
    act_cl_host_slice(#name_, t0, rc);                                                             \
    return rc

typedef struct act_cl_notify {
    act_cl_notify_fn fn;
    void *user;
    struct act_cl_notify *next;
} act_cl_notify;

/* Every pair made, kept reachable: the runtime may call until it frees the
 * context, which we do not see. */
static act_cl_notify *_Atomic act_cl_notifies;

static void CL_CALLBACK act_cl_on_notify(const char *msg, const void *info, size_t cb, void *user)
{
    const act_cl_notify *n = user;
    if (atomic_load_explicit(&act__recording, memory_order_relaxed)) {
        uint32_t id = act_str_intern_literal("OpenCL context error");
        act_rec_ts *r = act_rec_reserve(ACT_REC_MARK, sizeof *r);
        if (r) {
            r->h.aux = id;
            r->ts = act_clock_now();
            act_rec_commit();
            act_rec_arg_emit("message", ACT_RECARG_STR, 0, msg ? msg : "");
            act_rec_arg_emit("error", ACT_RECARG_STR, 0, "context error callback");
        }
    }
    n->fn(msg, info, cb, n->user);
}

/* Our callback in place of the app's (NULL stays NULL). */
static act_cl_notify_fn act_cl_notify_wrap(act_cl_notify_fn fn, void **user)
{
    act_cl_notify *n = fn ? malloc(sizeof *n) : NULL;
    if (!n)
        return fn;
    n->fn = fn;
    n->user = *user;
    n->next = atomic_load(&act_cl_notifies);
    while (!atomic_compare_exchange_weak(&act_cl_notifies, &n->next, n))
        ;
    *user = n;
    return act_cl_on_notify;
}

cl_context CL_API_CALL act_cl_w_clCreateContext(const cl_context_properties *cprops, cl_uint ndev,
                                                const cl_device_id *devs, act_cl_notify_fn notify,
                                                void *user, cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateContext, (cprops, ndev, devs, notify, user, err));
    void *u = user;
    act_cl_notify_fn fn = act_cl_notify_wrap(notify, &u);
    cl_context c = act_cl_next.clCreateContext(cprops, ndev, devs, fn, u, err);
    if (c) /* (a pair made for a failed create stays on the list, unused) */
        act_cl_obj_created(ACT_CL_OBJ_CONTEXT, c, NULL, NULL, 0);
    ACT_CL_OBJ_END(clCreateContext, c);
}

cl_context CL_API_CALL act_cl_w_clCreateContextFromType(const cl_context_properties *cprops,
                                                        cl_device_type dtype,
                                                        act_cl_notify_fn notify, void *user,
                                                        cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateContextFromType, (cprops, dtype, notify, user, err));
    void *u = user;
    act_cl_notify_fn fn = act_cl_notify_wrap(notify, &u);
    cl_context c = act_cl_next.clCreateContextFromType(cprops, dtype, fn, u, err);
    if (c) /* (a pair made for a failed create stays on the list, unused) */
        act_cl_obj_created(ACT_CL_OBJ_CONTEXT, c, NULL, NULL, 0);
    ACT_CL_OBJ_END(clCreateContextFromType, c);
}

cl_int CL_API_CALL act_cl_w_clRetainContext(cl_context ctx)
{
    ACT_CL_REFCALL(clRetainContext, ctx, act_cl_obj_retained);
}

cl_int CL_API_CALL act_cl_w_clReleaseContext(cl_context ctx)
{
    ACT_CL_REFCALL(clReleaseContext, ctx, act_cl_obj_released);
}

/* ---- memory objects --------------------------------------------------------- */

/* A memory object's size as the runtime reports it (images, pipes). */
static uint64_t act_cl_mem_size(cl_mem m)
{
    size_t size = 0;
    if (!act_cl_next.clGetMemObjectInfo ||
        act_cl_next.clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL) != CL_SUCCESS)
        return 0;
    return size;
}

cl_mem CL_API_CALL act_cl_w_clCreateBuffer(cl_context ctx, cl_mem_flags flags, size_t size,
                                           void *host, cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateBuffer, (ctx, flags, size, host, err));
    cl_mem m = act_cl_next.clCreateBuffer(ctx, flags, size, host, err);
    if (m)
        act_cl_obj_created(ACT_CL_OBJ_BUFFER, m, ctx, NULL, size);
    ACT_CL_OBJ_END(clCreateBuffer, m);
}

cl_mem CL_API_CALL act_cl_w_clCreateBufferWithProperties(cl_context ctx,
                                                         const cl_mem_properties *mprops,
                                                         cl_mem_flags flags, size_t size,
                                                         void *host, cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateBufferWithProperties, (ctx, mprops, flags, size, host, err));
    cl_mem m = act_cl_next.clCreateBufferWithProperties(ctx, mprops, flags, size, host, err);
    if (m)
        act_cl_obj_created(ACT_CL_OBJ_BUFFER, m, ctx, NULL, size);
    ACT_CL_OBJ_END(clCreateBufferWithProperties, m);
}

cl_mem CL_API_CALL act_cl_w_clCreateSubBuffer(cl_mem m, cl_mem_flags flags,
                                              cl_buffer_create_type btype, const void *binfo,
                                              cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateSubBuffer, (m, flags, btype, binfo, err));
    cl_mem s = act_cl_next.clCreateSubBuffer(m, flags, btype, binfo, err);
    if (s) {
        const cl_buffer_region *r = btype == CL_BUFFER_CREATE_TYPE_REGION ? binfo : NULL;
        act_cl_obj_created(ACT_CL_OBJ_BUFFER, s, NULL, m, r ? r->size : 0);
    }
    ACT_CL_OBJ_END(clCreateSubBuffer, s);
}

cl_mem CL_API_CALL act_cl_w_clCreateImage(cl_context ctx, cl_mem_flags flags,
                                          const cl_image_format *fmt, const cl_image_desc *desc,
                                          void *host, cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateImage, (ctx, flags, fmt, desc, host, err));
    cl_mem m = act_cl_next.clCreateImage(ctx, flags, fmt, desc, host, err);
    if (m)
        act_cl_obj_created(ACT_CL_OBJ_IMAGE, m, ctx, NULL, act_cl_mem_size(m));
    ACT_CL_OBJ_END(clCreateImage, m);
}

cl_mem CL_API_CALL act_cl_w_clCreateImageWithProperties(
    cl_context ctx, const cl_mem_properties *mprops, cl_mem_flags flags, const cl_image_format *fmt,
    const cl_image_desc *desc, void *host, cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateImageWithProperties, (ctx, mprops, flags, fmt, desc, host, err));
    cl_mem m = act_cl_next.clCreateImageWithProperties(ctx, mprops, flags, fmt, desc, host, err);
    if (m)
        act_cl_obj_created(ACT_CL_OBJ_IMAGE, m, ctx, NULL, act_cl_mem_size(m));
    ACT_CL_OBJ_END(clCreateImageWithProperties, m);
}

cl_mem CL_API_CALL act_cl_w_clCreateImage2D(cl_context ctx, cl_mem_flags flags,
                                            const cl_image_format *fmt, size_t iw, size_t ih,
                                            size_t row, void *host, cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateImage2D, (ctx, flags, fmt, iw, ih, row, host, err));
    cl_mem m = act_cl_next.clCreateImage2D(ctx, flags, fmt, iw, ih, row, host, err);
    if (m)
        act_cl_obj_created(ACT_CL_OBJ_IMAGE, m, ctx, NULL, act_cl_mem_size(m));
    ACT_CL_OBJ_END(clCreateImage2D, m);
}

cl_mem CL_API_CALL act_cl_w_clCreateImage3D(cl_context ctx, cl_mem_flags flags,
                                            const cl_image_format *fmt, size_t iw, size_t ih,
                                            size_t id, size_t row, size_t slice, void *host,
                                            cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateImage3D, (ctx, flags, fmt, iw, ih, id, row, slice, host, err));
    cl_mem m = act_cl_next.clCreateImage3D(ctx, flags, fmt, iw, ih, id, row, slice, host, err);
    if (m)
        act_cl_obj_created(ACT_CL_OBJ_IMAGE, m, ctx, NULL, act_cl_mem_size(m));
    ACT_CL_OBJ_END(clCreateImage3D, m);
}

cl_mem CL_API_CALL act_cl_w_clCreatePipe(cl_context ctx, cl_mem_flags flags, cl_uint psize,
                                         cl_uint pmax, const cl_pipe_properties *pprops,
                                         cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreatePipe, (ctx, flags, psize, pmax, pprops, err));
    cl_mem m = act_cl_next.clCreatePipe(ctx, flags, psize, pmax, pprops, err);
    if (m)
        act_cl_obj_created(ACT_CL_OBJ_PIPE, m, ctx, NULL, (uint64_t)psize * pmax);
    ACT_CL_OBJ_END(clCreatePipe, m);
}

cl_int CL_API_CALL act_cl_w_clRetainMemObject(cl_mem m)
{
    ACT_CL_REFCALL(clRetainMemObject, m, act_cl_obj_retained);
}

cl_int CL_API_CALL act_cl_w_clReleaseMemObject(cl_mem m)
{
    ACT_CL_REFCALL(clReleaseMemObject, m, act_cl_obj_released);
}

/* ---- shared virtual memory ---------------------------------------------------- */

void *CL_API_CALL act_cl_w_clSVMAlloc(cl_context ctx, cl_svm_mem_flags sflags, size_t size,
                                      cl_uint align)
{
    if (!act_cl_gate(&act_cl_armed_clSVMAlloc, ACT_CL_SETUP))
        return act_cl_next.clSVMAlloc(ctx, sflags, size, align);
    uint64_t t0 = act_clock_now();
    void *p = act_cl_next.clSVMAlloc(ctx, sflags, size, align);
    if (p)
        act_cl_obj_created(ACT_CL_OBJ_SVM, p, ctx, NULL, size);
    /* clSVMAlloc has no error code: NULL is its failure. */
    act_cl_host_slice("clSVMAlloc", t0, p ? CL_SUCCESS : CL_OUT_OF_RESOURCES);
    return p;
}

void CL_API_CALL act_cl_w_clSVMFree(cl_context ctx, void *ptr)
{
    if (!act_cl_gate(&act_cl_armed_clSVMFree, ACT_CL_SETUP)) {
        act_cl_next.clSVMFree(ctx, ptr);
        return;
    }
    uint64_t t0 = act_clock_now();
    act_cl_obj_released(ptr);
    act_cl_next.clSVMFree(ctx, ptr);
    act_cl_host_slice("clSVMFree", t0, CL_SUCCESS);
}

cl_int CL_API_CALL act_cl_w_clEnqueueSVMFree(cl_command_queue q, cl_uint nptr, void *ptrs[],
                                             void(CL_CALLBACK *pfn)(cl_command_queue, cl_uint,
                                                                    void *[], void *),
                                             void *user, cl_uint n, const cl_event *w, cl_event *ev)
{
    act_cl_op *op;
    if (!act_cl_gate(&act_cl_armed_clEnqueueSVMFree, ACT_CL_CMD) ||
        !(op = act_cl_op_begin(q, ACT_OP_OTHER, "SVM free")))
        return act_cl_next.clEnqueueSVMFree(q, nptr, ptrs, pfn, user, n, w, ev);
    cl_int rc =
        act_cl_next.clEnqueueSVMFree(q, nptr, ptrs, pfn, user, n, w, act_cl_op_event(op, ev));
    /* The allocations are the runtime's to free from now on. */
    for (cl_uint i = 0; rc == CL_SUCCESS && ptrs && i < nptr; i++)
        act_cl_obj_released(ptrs[i]);
    act_cl_op_end(op, "clEnqueueSVMFree", rc, ev);
    return rc;
}

cl_int CL_API_CALL act_cl_w_clEnqueueSVMMigrateMem(cl_command_queue q, cl_uint nptr,
                                                   const void **ptrs, const size_t *sizes,
                                                   cl_mem_migration_flags flags, cl_uint n,
                                                   const cl_event *w, cl_event *ev)
{
    act_cl_op *op;
    if (!act_cl_gate(&act_cl_armed_clEnqueueSVMMigrateMem, ACT_CL_CMD) ||
        !(op = act_cl_op_begin(q, ACT_OP_OTHER, "Migrate SVM")))
        return act_cl_next.clEnqueueSVMMigrateMem(q, nptr, ptrs, sizes, flags, n, w, ev);
    for (cl_uint i = 0; sizes && i < nptr; i++)
        op->bytes += sizes[i];
    cl_int rc = act_cl_next.clEnqueueSVMMigrateMem(q, nptr, ptrs, sizes, flags, n, w,
                                                   act_cl_op_event(op, ev));
    act_cl_op_end(op, "clEnqueueSVMMigrateMem", rc, ev);
    return rc;
}

/* ---- programs, kernels, events, samplers ------------------------------------- */

cl_program CL_API_CALL act_cl_w_clCreateProgramWithSource(cl_context ctx, cl_uint count,
                                                          const char **strs, const size_t *lens,
                                                          cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateProgramWithSource, (ctx, count, strs, lens, err));
    cl_program p = act_cl_next.clCreateProgramWithSource(ctx, count, strs, lens, err);
    if (p)
        act_cl_obj_created(ACT_CL_OBJ_PROGRAM, p, ctx, NULL, 0);
    ACT_CL_OBJ_END(clCreateProgramWithSource, p);
}

cl_program CL_API_CALL act_cl_w_clCreateProgramWithBinary(cl_context ctx, cl_uint ndev,
                                                          const cl_device_id *devs,
                                                          const size_t *lens,
                                                          const unsigned char **bins,
                                                          cl_int *bstatus, cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateProgramWithBinary, (ctx, ndev, devs, lens, bins, bstatus, err));
    cl_program p = act_cl_next.clCreateProgramWithBinary(ctx, ndev, devs, lens, bins, bstatus, err);
    if (p)
        act_cl_obj_created(ACT_CL_OBJ_PROGRAM, p, ctx, NULL, 0);
    ACT_CL_OBJ_END(clCreateProgramWithBinary, p);
}

cl_program CL_API_CALL act_cl_w_clCreateProgramWithBuiltInKernels(cl_context ctx, cl_uint ndev,
                                                                  const cl_device_id *devs,
                                                                  const char *names, cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateProgramWithBuiltInKernels, (ctx, ndev, devs, names, err));
    cl_program p = act_cl_next.clCreateProgramWithBuiltInKernels(ctx, ndev, devs, names, err);
    if (p)
        act_cl_obj_created(ACT_CL_OBJ_PROGRAM, p, ctx, NULL, 0);
    ACT_CL_OBJ_END(clCreateProgramWithBuiltInKernels, p);
}

cl_program CL_API_CALL act_cl_w_clCreateProgramWithIL(cl_context ctx, const void *il, size_t len,
                                                      cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateProgramWithIL, (ctx, il, len, err));
    cl_program p = act_cl_next.clCreateProgramWithIL(ctx, il, len, err);
    if (p)
        act_cl_obj_created(ACT_CL_OBJ_PROGRAM, p, ctx, NULL, 0);
    ACT_CL_OBJ_END(clCreateProgramWithIL, p);
}

cl_int CL_API_CALL act_cl_w_clRetainProgram(cl_program p)
{
    ACT_CL_REFCALL(clRetainProgram, p, act_cl_obj_retained);
}

cl_int CL_API_CALL act_cl_w_clReleaseProgram(cl_program p)
{
    ACT_CL_REFCALL(clReleaseProgram, p, act_cl_obj_released);
}

cl_kernel CL_API_CALL act_cl_w_clCreateKernel(cl_program p, const char *name, cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateKernel, (p, name, err));
    cl_kernel k = act_cl_next.clCreateKernel(p, name, err);
    if (k) {
        act_cl_obj_created(ACT_CL_OBJ_KERNEL, k, NULL, NULL, 0);
        act_cl_obj_kernel_program(k, p);
    }
    ACT_CL_OBJ_END(clCreateKernel, k);
}

cl_int CL_API_CALL act_cl_w_clCreateKernelsInProgram(cl_program p, cl_uint nk, cl_kernel *ks,
                                                     cl_uint *nk_ret)
{
    if (!act_cl_gate(&act_cl_armed_clCreateKernelsInProgram, ACT_CL_SETUP))
        return act_cl_next.clCreateKernelsInProgram(p, nk, ks, nk_ret);
    uint64_t t0 = act_clock_now();
    cl_uint made = 0;
    cl_int rc = act_cl_next.clCreateKernelsInProgram(p, nk, ks, &made);
    if (nk_ret)
        *nk_ret = made;
    for (cl_uint i = 0; rc == CL_SUCCESS && ks && i < made && i < nk; i++) {
        act_cl_obj_created(ACT_CL_OBJ_KERNEL, ks[i], NULL, NULL, 0);
        act_cl_obj_kernel_program(ks[i], p);
    }
    act_cl_host_slice("clCreateKernelsInProgram", t0, rc);
    return rc;
}

cl_kernel CL_API_CALL act_cl_w_clCloneKernel(cl_kernel k, cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCloneKernel, (k, err));
    cl_kernel c = act_cl_next.clCloneKernel(k, err);
    if (c) {
        act_cl_obj_created(ACT_CL_OBJ_KERNEL, c, NULL, NULL, 0);
        act_cl_obj_kernel_program(c, k);
        const act_cl_kinfo *ki = act_cl_obj_kernel(k);
        uint32_t n = ki ? ki->n : 0;
        uint64_t copy[ACT_CL_KARGS_CACHED];
        if (n)
            memcpy(copy, ki->sizes, n * sizeof copy[0]);
        for (uint32_t i = 0; i < n; i++)
            act_cl_obj_kernel_arg(c, i, copy[i]);
    }
    ACT_CL_OBJ_END(clCloneKernel, c);
}

cl_int CL_API_CALL act_cl_w_clRetainKernel(cl_kernel k)
{
    ACT_CL_REFCALL(clRetainKernel, k, act_cl_obj_retained);
}

cl_int CL_API_CALL act_cl_w_clReleaseKernel(cl_kernel k)
{
    ACT_CL_REFCALL(clReleaseKernel, k, act_cl_obj_released);
}

cl_event CL_API_CALL act_cl_w_clCreateUserEvent(cl_context ctx, cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateUserEvent, (ctx, err));
    cl_event e = act_cl_next.clCreateUserEvent(ctx, err);
    if (e)
        act_cl_event_created(e, ctx);
    ACT_CL_OBJ_END(clCreateUserEvent, e);
}

/* ---- events' references: the per-command path ------------------------------
 *
 * A program that asks for an event per enqueue releases one per enqueue:
 * the table of events' references is evtab.c's (no lock, the thread's own
 * line), and a call that succeeded is only counted (oppool.c), not drawn. */

/* An event's retain or release that succeeded is counted, not drawn
 * (cl_source.h); one that failed is drawn with its error, as a slice of
 * no length when it returned (the clock is not read before the call: a
 * failed release is a bug to point at, its duration says nothing). Either
 * way the leak report follows the app's count. */
static cl_int act_cl_event_refcall_done(const char *api, cl_int rc, enum act_cl_undrawn kind)
{
    if (ACT_UNLIKELY(rc != CL_SUCCESS))
        act_cl_host_slice(api, act_clock_now(), rc);
    else if (atomic_load_explicit(&act__recording, memory_order_relaxed))
        act_cl_undrawn_count(kind);
    else
        act_cl_count_outside(ACT_CL_HOST);
    return rc;
}

cl_int CL_API_CALL act_cl_w_clRetainEvent(cl_event e)
{
    if (!act_cl_gate(&act_cl_armed_clRetainEvent, ACT_CL_SETUP))
        return act_cl_next.clRetainEvent(e);
    cl_int rc = act_cl_next.clRetainEvent(e);
    if (rc == CL_SUCCESS)
        act_cl_event_retained(e);
    return act_cl_event_refcall_done("clRetainEvent", rc, ACT_CL_UNDRAWN_RETAIN_EVENT);
}

cl_int CL_API_CALL act_cl_w_clReleaseEvent(cl_event e)
{
    if (!act_cl_gate(&act_cl_armed_clReleaseEvent, ACT_CL_SETUP))
        return act_cl_next.clReleaseEvent(e);
    act_cl_event_released(e); /* before: the handle may be reused once released */
    cl_int rc = act_cl_next.clReleaseEvent(e);
    return act_cl_event_refcall_done("clReleaseEvent", rc, ACT_CL_UNDRAWN_RELEASE_EVENT);
}

cl_sampler CL_API_CALL act_cl_w_clCreateSampler(cl_context ctx, cl_bool norm,
                                                cl_addressing_mode amode, cl_filter_mode fmode,
                                                cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateSampler, (ctx, norm, amode, fmode, err));
    cl_sampler s = act_cl_next.clCreateSampler(ctx, norm, amode, fmode, err);
    if (s)
        act_cl_obj_created(ACT_CL_OBJ_SAMPLER, s, ctx, NULL, 0);
    ACT_CL_OBJ_END(clCreateSampler, s);
}

cl_sampler CL_API_CALL act_cl_w_clCreateSamplerWithProperties(cl_context ctx,
                                                              const cl_sampler_properties *sprops,
                                                              cl_int *err)
{
    ACT_CL_OBJ_BEGIN(clCreateSamplerWithProperties, (ctx, sprops, err));
    cl_sampler s = act_cl_next.clCreateSamplerWithProperties(ctx, sprops, err);
    if (s)
        act_cl_obj_created(ACT_CL_OBJ_SAMPLER, s, ctx, NULL, 0);
    ACT_CL_OBJ_END(clCreateSamplerWithProperties, s);
}

cl_int CL_API_CALL act_cl_w_clRetainSampler(cl_sampler s)
{
    ACT_CL_REFCALL(clRetainSampler, s, act_cl_obj_retained);
}

cl_int CL_API_CALL act_cl_w_clReleaseSampler(cl_sampler s)
{
    ACT_CL_REFCALL(clReleaseSampler, s, act_cl_obj_released);
}
