/*
 * acceltrace_rt.h -- the runtime-API table: a small, vendor-neutral set of
 * raw runtime calls (pin existing host memory in place, raw streams,
 * profiler start/stop, memory info, device count, synchronise, error text).
 *
 * It is acceltrace's counterpart of torch_npu's torch.npu.npurt() and of
 * torch.cuda.cudart(): one table per backend ("opencl", "cuda", "ascend"),
 * each backend's runtime library resolved lazily with dlopen/dlsym, so
 * linking acceltrace never links (or initialises) a vendor runtime.
 *
 *   const struct act_rt *rt = act_rt();          // the active backend
 *   void *stream;
 *   if (rt->stream_create(&stream) != ACT_RT_SUCCESS)
 *       fprintf(stderr, "%s (%s)\n", rt->error_string(rc), act_rt_last_error());
 *
 * Return values of every int function:
 *   0                 ACT_RT_SUCCESS
 *   > 0               the backend runtime's own error code, unchanged
 *                     (cudaError_t for "cuda", aclError for "ascend"); for
 *                     "opencl" the negated cl_int (CL_INVALID_VALUE, -30,
 *                     comes back as 30)
 *   -1 .. -99         an ACT_E_* code of acceltrace.h (profiler_start/stop
 *                     only: the result of act_start()/act_stop())
 *   -1001 ..          an ACT_RT_ERROR_* code below; the runtime was not
 *                     called, or could not be
 * error_string() gives text for all of them; act_rt_last_error() gives
 * details (which library, which symbol, dlerror()) for the calling thread.
 *
 * See docs/rt.md.
 */
#ifndef ACCELTRACE_RT_H
#define ACCELTRACE_RT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- result codes ----------------------------------------------------- */
#define ACT_RT_SUCCESS 0
/* NULL pointer, size 0, range wrapping the address space, unknown flag
 * bits, negative device: the runtime was not called. */
#define ACT_RT_ERROR_INVALID_PARAM (-1001)
/* host_unregister of a pointer this backend does not hold (opencl; cuda
 * and ascend pass the call to the runtime, which reports its own code). */
#define ACT_RT_ERROR_NOT_REGISTERED (-1002)
/* host_register of a range overlapping a registered one (opencl). */
#define ACT_RT_ERROR_ALREADY_REGISTERED (-1003)
/* stream_destroy of a handle this backend did not create (opencl). */
#define ACT_RT_ERROR_INVALID_HANDLE (-1004)
/* mem_get_info of a device index that does not exist (opencl). */
#define ACT_RT_ERROR_INVALID_DEVICE (-1005)
/* The backend's runtime library could not be loaded. */
#define ACT_RT_ERROR_NO_LIBRARY (-1006)
/* The runtime library lacks the function this call needs. */
#define ACT_RT_ERROR_NO_SYMBOL (-1007)
/* The runtime loaded but reports no device (opencl: no platform/device). */
#define ACT_RT_ERROR_NO_DEVICE (-1008)
/* Out of memory in acceltrace's own bookkeeping. */
#define ACT_RT_ERROR_NOMEM (-1009)
/* Not available in this build (e.g. capture control missing). */
#define ACT_RT_ERROR_UNSUPPORTED (-1010)
/* An ACCELTRACE_* variable read by the runtime table is invalid. */
#define ACT_RT_ERROR_CONFIG (-1011)

/* ---- host_register flags (the CANN values; combine with |) ------------ */
/* Page-lock the range (ascend: ACL_HOST_REG_PINNED; cuda: always pinned,
 * sent as cudaHostRegisterDefault). */
#define ACT_RT_HOST_REG_PINNED 0x10000000u
/* Map the range into the device's address space (ascend:
 * ACL_HOST_REG_MAPPED; cuda: cudaHostRegisterMapped). */
#define ACT_RT_HOST_REG_MAPPED 0x2u

/* mem_get_info() stores this in *free when the backend cannot know how
 * much device memory is free (opencl), and still returns ACT_RT_SUCCESS. */
#define ACT_RT_MEM_UNKNOWN ((size_t)-1)

/*
 * One backend's table. The pointer returned by act_rt()/act_rt_for() is
 * the same on every call and lives as long as the process. Every function
 * is thread-safe. The first call that needs the device loads the runtime
 * library and initialises the runtime, once; device_count() and
 * error_string() never initialise a device (they may load the library).
 */
struct act_rt {
    size_t struct_size; /* sizeof(struct act_rt) of the library */
    const char *name;   /* "opencl", "cuda" or "ascend" */
    /* Pin [ptr, ptr+size) in place. flags: a non-empty combination of
     * ACT_RT_HOST_REG_PINNED and ACT_RT_HOST_REG_MAPPED. */
    int (*host_register)(void *ptr, size_t size, unsigned int flags);
    /* Undo host_register(ptr, ...). ptr is the start of the range. */
    int (*host_unregister)(void *ptr);
    /* Create a raw stream (cudaStream_t, aclrtStream, cl_command_queue)
     * and store it in *slot. */
    int (*stream_create)(void **slot);
    int (*stream_destroy)(void *stream);
    /* Open / close the profiler capture range (see docs/rt.md per backend). */
    int (*profiler_start)(void);
    int (*profiler_stop)(void);
    /* Free and total memory of `device`; *free may be ACT_RT_MEM_UNKNOWN. */
    int (*mem_get_info)(int device, size_t *free, size_t *total);
    /* Number of devices. Never initialises a device. */
    int (*device_count)(int *count);
    /* Wait for all work submitted through the backend to finish. */
    int (*synchronize)(void);
    /* Text for any code returned by this table (never NULL, static). */
    const char *(*error_string)(int code);
};

/* The active backend: the first of "cuda", "ascend", "opencl" whose
 * device_count() succeeds with at least one device, chosen on the first
 * call. Never NULL: with no backend available it is the "opencl" table,
 * whose calls then return ACT_RT_ERROR_NO_LIBRARY / _NO_DEVICE. */
const struct act_rt *act_rt(void);
/* The table of a named backend ("opencl", "cuda", "ascend"); NULL for any
 * other name, with act_rt_last_error() saying why. Loads nothing. */
const struct act_rt *act_rt_for(const char *backend);
/* Details of the last failure on the calling thread ("" when none). */
const char *act_rt_last_error(void);

/* OpenCL only: the cl_mem buffer (CL_MEM_USE_HOST_PTR) that
 * host_register(ptr, ...) created for the range starting at ptr, so work
 * on an "opencl" stream can use the registered memory. */
int act_rt_opencl_buffer(const void *ptr, void **mem);

#ifdef __cplusplus
}
#endif

#endif
