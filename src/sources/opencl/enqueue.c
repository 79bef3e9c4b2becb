/*
 * enqueue.c -- wrappers for every command-producing clEnqueue* call:
 * kernels (NDRange, Task, Native), buffer reads/writes/copies (plain and
 * rect), fills, maps/unmaps, migrations, images and SVM. Markers, barriers
 * and waits are in sync.c.
 *
 * Each wrapper: gate (pass through when its hook is not armed or nothing
 * is recorded), act_cl_op_begin, describe the command (kernel name queried
 * BEFORE the enqueue, since the app may release the kernel right after;
 * bytes; global/local sizes), the real call with the app's event pointer
 * or ours, act_cl_op_end. Device op names follow the PyTorch profiler's
 * spelling where it has one ("Memcpy HtoD", "Memset").
 */
#include <string.h>

#include "cl_source.h"

/* Open the traced path of wrapper `name_` or pass the call through. */
#define ACT_CL_BEGIN(name_, kind_, label_, ...)                                                    \
    act_cl_op *op;                                                                                 \
    if (!act_cl_gate(&act_cl_armed_##name_, ACT_CL_CMD) ||                                         \
        !(op = act_cl_op_begin(q, kind_, label_)))                                                 \
    return act_cl_next.name_(__VA_ARGS__)

/* The real call (EV stands for the event pointer to pass), then close. */
#define EV act_cl_op_event(op, ev)
#define ACT_CL_CALL(name_, ...)                                                                    \
    cl_int rc = act_cl_next.name_(__VA_ARGS__);                                                    \
    act_cl_op_end(op, #name_, rc, ev);                                                             \
    return rc

static uint64_t act_cl_region_bytes(const size_t *region)
{
    return region ? (uint64_t)region[0] * region[1] * region[2] : 0;
}

static uint64_t act_cl_image_bytes(cl_mem image, const size_t *region)
{
    size_t elem = 0;
    if (act_cl_next.clGetImageInfo(image, CL_IMAGE_ELEMENT_SIZE, sizeof elem, &elem, NULL) !=
        CL_SUCCESS)
        elem = 0;
    return act_cl_region_bytes(region) * elem;
}

/* ---- kernels -------------------------------------------------------------- */

cl_int CL_API_CALL act_cl_w_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dim,
                                                   const size_t *off, const size_t *gws,
                                                   const size_t *lws, cl_uint n, const cl_event *w,
                                                   cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueNDRangeKernel, ACT_OP_KERNEL, NULL, q, k, dim, off, gws, lws, n, w, ev);
    act_cl_op_kernel(op, k);
    op->dim = (uint8_t)(dim <= 3 ? dim : 3);
    op->gws = gws;
    op->lws = lws;
    op->off = off;
    ACT_CL_CALL(clEnqueueNDRangeKernel, q, k, dim, off, gws, lws, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueTask(cl_command_queue q, cl_kernel k, cl_uint n,
                                          const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueTask, ACT_OP_KERNEL, NULL, q, k, n, w, ev);
    static const size_t one[1] = {1};
    act_cl_op_kernel(op, k);
    op->dim = 1;
    op->gws = op->lws = one;
    op->off = NULL;
    ACT_CL_CALL(clEnqueueTask, q, k, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueNativeKernel(cl_command_queue q, void(CL_CALLBACK *fn)(void *),
                                                  void *args, size_t cb_args, cl_uint nmem,
                                                  const cl_mem *mems, const void **locs, cl_uint n,
                                                  const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueNativeKernel, ACT_OP_KERNEL, "native kernel", q, fn, args, cb_args, nmem,
                 mems, locs, n, w, ev);
    ACT_CL_CALL(clEnqueueNativeKernel, q, fn, args, cb_args, nmem, mems, locs, n, w, EV);
}

/* ---- buffers ---------------------------------------------------------------- */

cl_int CL_API_CALL act_cl_w_clEnqueueReadBuffer(cl_command_queue q, cl_mem m, cl_bool blk,
                                                size_t off, size_t size, void *ptr, cl_uint n,
                                                const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueReadBuffer, ACT_OP_MEMCPY_DTOH, "Memcpy DtoH", q, m, blk, off, size, ptr,
                 n, w, ev);
    op->bytes = size;
    ACT_CL_CALL(clEnqueueReadBuffer, q, m, blk, off, size, ptr, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueWriteBuffer(cl_command_queue q, cl_mem m, cl_bool blk,
                                                 size_t off, size_t size, const void *ptr,
                                                 cl_uint n, const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueWriteBuffer, ACT_OP_MEMCPY_HTOD, "Memcpy HtoD", q, m, blk, off, size, ptr,
                 n, w, ev);
    op->bytes = size;
    ACT_CL_CALL(clEnqueueWriteBuffer, q, m, blk, off, size, ptr, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst,
                                                size_t soff, size_t doff, size_t size, cl_uint n,
                                                const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueCopyBuffer, ACT_OP_MEMCPY_DTOD, "Memcpy DtoD", q, src, dst, soff, doff,
                 size, n, w, ev);
    op->bytes = size;
    ACT_CL_CALL(clEnqueueCopyBuffer, q, src, dst, soff, doff, size, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueReadBufferRect(cl_command_queue q, cl_mem m, cl_bool blk,
                                                    const size_t *borg, const size_t *horg,
                                                    const size_t *region, size_t brow,
                                                    size_t bslice, size_t hrow, size_t hslice,
                                                    void *ptr, cl_uint n, const cl_event *w,
                                                    cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueReadBufferRect, ACT_OP_MEMCPY_DTOH, "Memcpy DtoH", q, m, blk, borg, horg,
                 region, brow, bslice, hrow, hslice, ptr, n, w, ev);
    op->bytes = act_cl_region_bytes(region);
    ACT_CL_CALL(clEnqueueReadBufferRect, q, m, blk, borg, horg, region, brow, bslice, hrow, hslice,
                ptr, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueWriteBufferRect(cl_command_queue q, cl_mem m, cl_bool blk,
                                                     const size_t *borg, const size_t *horg,
                                                     const size_t *region, size_t brow,
                                                     size_t bslice, size_t hrow, size_t hslice,
                                                     const void *ptr, cl_uint n, const cl_event *w,
                                                     cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueWriteBufferRect, ACT_OP_MEMCPY_HTOD, "Memcpy HtoD", q, m, blk, borg, horg,
                 region, brow, bslice, hrow, hslice, ptr, n, w, ev);
    op->bytes = act_cl_region_bytes(region);
    ACT_CL_CALL(clEnqueueWriteBufferRect, q, m, blk, borg, horg, region, brow, bslice, hrow, hslice,
                ptr, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueCopyBufferRect(cl_command_queue q, cl_mem src, cl_mem dst,
                                                    const size_t *sorg, const size_t *dorg,
                                                    const size_t *region, size_t srow,
                                                    size_t sslice, size_t drow, size_t dslice,
                                                    cl_uint n, const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueCopyBufferRect, ACT_OP_MEMCPY_DTOD, "Memcpy DtoD", q, src, dst, sorg,
                 dorg, region, srow, sslice, drow, dslice, n, w, ev);
    op->bytes = act_cl_region_bytes(region);
    ACT_CL_CALL(clEnqueueCopyBufferRect, q, src, dst, sorg, dorg, region, srow, sslice, drow,
                dslice, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueFillBuffer(cl_command_queue q, cl_mem m, const void *pat,
                                                size_t pat_size, size_t off, size_t size, cl_uint n,
                                                const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueFillBuffer, ACT_OP_MEMSET, "Memset", q, m, pat, pat_size, off, size, n, w,
                 ev);
    op->bytes = size;
    ACT_CL_CALL(clEnqueueFillBuffer, q, m, pat, pat_size, off, size, n, w, EV);
}

void *CL_API_CALL act_cl_w_clEnqueueMapBuffer(cl_command_queue q, cl_mem m, cl_bool blk,
                                              cl_map_flags flags, size_t off, size_t size,
                                              cl_uint n, const cl_event *w, cl_event *ev,
                                              cl_int *err)
{
    ACT_CL_BEGIN(clEnqueueMapBuffer, ACT_OP_MAP, "Map", q, m, blk, flags, off, size, n, w, ev, err);
    op->bytes = size;
    cl_int rc = CL_SUCCESS;
    void *p = act_cl_next.clEnqueueMapBuffer(q, m, blk, flags, off, size, n, w, EV, &rc);
    if (err)
        *err = rc;
    act_cl_op_end(op, "clEnqueueMapBuffer", rc, ev);
    return p;
}

cl_int CL_API_CALL act_cl_w_clEnqueueUnmapMemObject(cl_command_queue q, cl_mem m, void *ptr,
                                                    cl_uint n, const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueUnmapMemObject, ACT_OP_UNMAP, "Unmap", q, m, ptr, n, w, ev);
    ACT_CL_CALL(clEnqueueUnmapMemObject, q, m, ptr, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueMigrateMemObjects(cl_command_queue q, cl_uint nmem,
                                                       const cl_mem *mems,
                                                       cl_mem_migration_flags flags, cl_uint n,
                                                       const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueMigrateMemObjects, ACT_OP_OTHER, "Migrate", q, nmem, mems, flags, n, w,
                 ev);
    ACT_CL_CALL(clEnqueueMigrateMemObjects, q, nmem, mems, flags, n, w, EV);
}

/* ---- images ----------------------------------------------------------------- */

cl_int CL_API_CALL act_cl_w_clEnqueueReadImage(cl_command_queue q, cl_mem m, cl_bool blk,
                                               const size_t *org, const size_t *region, size_t row,
                                               size_t slice, void *ptr, cl_uint n,
                                               const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueReadImage, ACT_OP_MEMCPY_DTOH, "Memcpy DtoH", q, m, blk, org, region, row,
                 slice, ptr, n, w, ev);
    op->bytes = act_cl_image_bytes(m, region);
    ACT_CL_CALL(clEnqueueReadImage, q, m, blk, org, region, row, slice, ptr, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueWriteImage(cl_command_queue q, cl_mem m, cl_bool blk,
                                                const size_t *org, const size_t *region, size_t row,
                                                size_t slice, const void *ptr, cl_uint n,
                                                const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueWriteImage, ACT_OP_MEMCPY_HTOD, "Memcpy HtoD", q, m, blk, org, region,
                 row, slice, ptr, n, w, ev);
    op->bytes = act_cl_image_bytes(m, region);
    ACT_CL_CALL(clEnqueueWriteImage, q, m, blk, org, region, row, slice, ptr, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueCopyImage(cl_command_queue q, cl_mem src, cl_mem dst,
                                               const size_t *sorg, const size_t *dorg,
                                               const size_t *region, cl_uint n, const cl_event *w,
                                               cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueCopyImage, ACT_OP_MEMCPY_DTOD, "Memcpy DtoD", q, src, dst, sorg, dorg,
                 region, n, w, ev);
    op->bytes = act_cl_image_bytes(src, region);
    ACT_CL_CALL(clEnqueueCopyImage, q, src, dst, sorg, dorg, region, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueFillImage(cl_command_queue q, cl_mem m, const void *color,
                                               const size_t *org, const size_t *region, cl_uint n,
                                               const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueFillImage, ACT_OP_MEMSET, "Memset", q, m, color, org, region, n, w, ev);
    op->bytes = act_cl_image_bytes(m, region);
    ACT_CL_CALL(clEnqueueFillImage, q, m, color, org, region, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueCopyImageToBuffer(cl_command_queue q, cl_mem src, cl_mem dst,
                                                       const size_t *sorg, const size_t *region,
                                                       size_t doff, cl_uint n, const cl_event *w,
                                                       cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueCopyImageToBuffer, ACT_OP_MEMCPY_DTOD, "Memcpy DtoD", q, src, dst, sorg,
                 region, doff, n, w, ev);
    op->bytes = act_cl_image_bytes(src, region);
    ACT_CL_CALL(clEnqueueCopyImageToBuffer, q, src, dst, sorg, region, doff, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueCopyBufferToImage(cl_command_queue q, cl_mem src, cl_mem dst,
                                                       size_t soff, const size_t *dorg,
                                                       const size_t *region, cl_uint n,
                                                       const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueCopyBufferToImage, ACT_OP_MEMCPY_DTOD, "Memcpy DtoD", q, src, dst, soff,
                 dorg, region, n, w, ev);
    op->bytes = act_cl_image_bytes(dst, region);
    ACT_CL_CALL(clEnqueueCopyBufferToImage, q, src, dst, soff, dorg, region, n, w, EV);
}

void *CL_API_CALL act_cl_w_clEnqueueMapImage(cl_command_queue q, cl_mem m, cl_bool blk,
                                             cl_map_flags flags, const size_t *org,
                                             const size_t *region, size_t *row, size_t *slice,
                                             cl_uint n, const cl_event *w, cl_event *ev,
                                             cl_int *err)
{
    ACT_CL_BEGIN(clEnqueueMapImage, ACT_OP_MAP, "Map", q, m, blk, flags, org, region, row, slice, n,
                 w, ev, err);
    op->bytes = act_cl_image_bytes(m, region);
    cl_int rc = CL_SUCCESS;
    void *p =
        act_cl_next.clEnqueueMapImage(q, m, blk, flags, org, region, row, slice, n, w, EV, &rc);
    if (err)
        *err = rc;
    act_cl_op_end(op, "clEnqueueMapImage", rc, ev);
    return p;
}

/* ---- shared virtual memory ---------------------------------------------------- */

cl_int CL_API_CALL act_cl_w_clEnqueueSVMMemcpy(cl_command_queue q, cl_bool blk, void *dst,
                                               const void *src, size_t size, cl_uint n,
                                               const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueSVMMemcpy, ACT_OP_MEMCPY_DTOD, "Memcpy SVM", q, blk, dst, src, size, n, w,
                 ev);
    op->bytes = size;
    ACT_CL_CALL(clEnqueueSVMMemcpy, q, blk, dst, src, size, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueSVMMemFill(cl_command_queue q, void *ptr, const void *pat,
                                                size_t pat_size, size_t size, cl_uint n,
                                                const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueSVMMemFill, ACT_OP_MEMSET, "Memset", q, ptr, pat, pat_size, size, n, w,
                 ev);
    op->bytes = size;
    ACT_CL_CALL(clEnqueueSVMMemFill, q, ptr, pat, pat_size, size, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueSVMMap(cl_command_queue q, cl_bool blk, cl_map_flags flags,
                                            void *ptr, size_t size, cl_uint n, const cl_event *w,
                                            cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueSVMMap, ACT_OP_MAP, "Map", q, blk, flags, ptr, size, n, w, ev);
    op->bytes = size;
    ACT_CL_CALL(clEnqueueSVMMap, q, blk, flags, ptr, size, n, w, EV);
}

cl_int CL_API_CALL act_cl_w_clEnqueueSVMUnmap(cl_command_queue q, void *ptr, cl_uint n,
                                              const cl_event *w, cl_event *ev)
{
    ACT_CL_BEGIN(clEnqueueSVMUnmap, ACT_OP_UNMAP, "Unmap", q, ptr, n, w, ev);
    ACT_CL_CALL(clEnqueueSVMUnmap, q, ptr, n, w, EV);
}
