/*
 * rt_opencl.c -- the "opencl" runtime table, real on any ICD (PoCL here).
 *
 * OpenCL has no "pin this host memory" or "raw stream" calls, so they are
 * built from what it has:
 *   - host_register makes one buffer per registered range with
 *     CL_MEM_USE_HOST_PTR in a context on device 0, kept in a registry
 *     (act_rt_opencl_buffer() hands it out); both flags mean the same;
 *   - a stream is a command queue on device 0 of that context;
 *   - synchronize is clFinish on every live stream;
 *   - profiler start/stop are acceltrace's capture range (act_start/stop);
 *   - mem_get_info reports CL_DEVICE_GLOBAL_MEM_SIZE as the total and
 *     ACT_RT_MEM_UNKNOWN as free (OpenCL cannot tell).
 * Devices are numbered across platforms in ICD order.
 *
 * The library is loaded as an OpenCL layer into programs, so it must not
 * link libOpenCL nor touch a device at load: libOpenCL.so.1 is dlopen'ed
 * on first use, the device list is read once when first needed and the
 * context is made once by the first call that needs it. OpenCL errors
 * come back negated (positive).
 */
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "core/vec.h"
#include "rt_internal.h"

static struct {
    void *lib;
    cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
    cl_int (*GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
    cl_int (*GetDeviceInfo)(cl_device_id, cl_device_info, size_t, void *, size_t *);
    cl_context (*CreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                void (*)(const char *, const void *, size_t, void *), void *,
                                cl_int *);
    cl_command_queue (*CreateCommandQueueWithProperties)(cl_context, cl_device_id,
                                                         const cl_queue_properties *, cl_int *);
    cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties,
                                           cl_int *);
    cl_int (*RetainCommandQueue)(cl_command_queue);
    cl_int (*ReleaseCommandQueue)(cl_command_queue);
    cl_mem (*CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
    cl_int (*ReleaseMemObject)(cl_mem);
    cl_int (*Finish)(cl_command_queue);

    /* read once by ocl_devices */
    cl_device_id *devices;
    cl_platform_id *device_platform;
    cl_uint ndevices;
    /* made once by ocl_context */
    cl_context ctx;

    /* registry of ranges and streams, under mu */
    pthread_mutex_t mu;
    struct ocl_reg {
        char *ptr;
        size_t size;
        cl_mem mem;
    } * regs;
    size_t nregs, capregs;
    cl_command_queue *streams;
    size_t nstreams, capstreams;
} ocl = {.mu = PTHREAD_MUTEX_INITIALIZER};

static const struct {
    const char *name;
    void **slot;
    int required;
} ocl_syms[] = {
    {"clGetPlatformIDs", (void **)&ocl.GetPlatformIDs, 1},
    {"clGetDeviceIDs", (void **)&ocl.GetDeviceIDs, 1},
    {"clGetDeviceInfo", (void **)&ocl.GetDeviceInfo, 1},
    {"clCreateContext", (void **)&ocl.CreateContext, 1},
    {"clCreateCommandQueueWithProperties", (void **)&ocl.CreateCommandQueueWithProperties, 0},
    {"clCreateCommandQueue", (void **)&ocl.CreateCommandQueue, 0},
    {"clRetainCommandQueue", (void **)&ocl.RetainCommandQueue, 1},
    {"clReleaseCommandQueue", (void **)&ocl.ReleaseCommandQueue, 1},
    {"clCreateBuffer", (void **)&ocl.CreateBuffer, 1},
    {"clReleaseMemObject", (void **)&ocl.ReleaseMemObject, 1},
    {"clFinish", (void **)&ocl.Finish, 1},
};

/* An OpenCL error as a table result: negated, so it is positive. */
static int cl_code(cl_int err)
{
    return err < 0 ? -(int)err : (int)err;
}

static int ocl_load_step(char *why, size_t len)
{
    static const char *const names[] = {"libOpenCL.so.1", "libOpenCL.so"};
    int code = ACT_RT_SUCCESS;
    ocl.lib = act_rt__dlopen(NULL, NULL, names, ACT_ARRAY_SIZE(names), &code, why, len);
    if (!ocl.lib)
        return code;
    for (size_t i = 0; i < ACT_ARRAY_SIZE(ocl_syms); i++) {
        *ocl_syms[i].slot = act_rt__dlsym(ocl.lib, ocl_syms[i].name);
        if (!*ocl_syms[i].slot && ocl_syms[i].required) {
            snprintf(why, len, "opencl: libOpenCL lacks %s", ocl_syms[i].name);
            return ACT_RT_ERROR_NO_SYMBOL;
        }
    }
    if (!ocl.CreateCommandQueueWithProperties && !ocl.CreateCommandQueue) {
        snprintf(why, len, "opencl: libOpenCL lacks clCreateCommandQueue(WithProperties)");
        return ACT_RT_ERROR_NO_SYMBOL;
    }
    return ACT_RT_SUCCESS;
}

static act_rt_once ocl_loaded = ACT_RT_ONCE_INIT;

/* Enumerate every device of every platform (no context, no device use). */
static int ocl_devices_step(char *why, size_t len)
{
    int rc = act_rt__once(&ocl_loaded, ocl_load_step);
    if (rc != ACT_RT_SUCCESS) {
        snprintf(why, len, "%s", act_rt_last_error());
        return rc;
    }
    cl_uint np = 0;
    cl_int err = ocl.GetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0) {
        snprintf(why, len, "opencl: no platform (clGetPlatformIDs: %d)", err);
        return ACT_RT_ERROR_NO_DEVICE;
    }
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats) {
        snprintf(why, len, "opencl: out of memory");
        return ACT_RT_ERROR_NOMEM;
    }
    ocl.GetPlatformIDs(np, plats, NULL);
    rc = ACT_RT_SUCCESS;
    for (cl_uint p = 0; p < np && rc == ACT_RT_SUCCESS; p++) {
        cl_uint nd = 0;
        if (ocl.GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || !nd)
            continue;
        cl_device_id *d = realloc(ocl.devices, (ocl.ndevices + nd) * sizeof *d);
        cl_platform_id *dp =
            d ? realloc(ocl.device_platform, (ocl.ndevices + nd) * sizeof *dp) : NULL;
        if (d)
            ocl.devices = d;
        if (!d || !dp) {
            snprintf(why, len, "opencl: out of memory");
            rc = ACT_RT_ERROR_NOMEM;
            break;
        }
        ocl.device_platform = dp;
        if (ocl.GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, d + ocl.ndevices, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint i = 0; i < nd; i++)
            dp[ocl.ndevices + i] = plats[p];
        ocl.ndevices += nd;
    }
    free(plats);
    if (rc == ACT_RT_SUCCESS && !ocl.ndevices) {
        snprintf(why, len, "opencl: %u platform(s) but no device", np);
        rc = ACT_RT_ERROR_NO_DEVICE;
    }
    return rc;
}

static act_rt_once ocl_listed = ACT_RT_ONCE_INIT;

/* The context on device 0: what registrations and streams live in. */
static int ocl_context_step(char *why, size_t len)
{
    int rc = act_rt__once(&ocl_listed, ocl_devices_step);
    if (rc != ACT_RT_SUCCESS) {
        snprintf(why, len, "%s", act_rt_last_error());
        return rc;
    }
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     (cl_context_properties)ocl.device_platform[0], 0};
    cl_int err = CL_SUCCESS;
    ocl.ctx = ocl.CreateContext(props, 1, &ocl.devices[0], NULL, NULL, &err);
    if (!ocl.ctx || err != CL_SUCCESS) {
        snprintf(why, len, "opencl: clCreateContext on device 0 failed: %d", err);
        return cl_code(err ? err : CL_OUT_OF_RESOURCES);
    }
    return ACT_RT_SUCCESS;
}

static act_rt_once ocl_ready = ACT_RT_ONCE_INIT;

static int ocl_need_context(void)
{
    return act_rt__once(&ocl_ready, ocl_context_step);
}

/* ---- registrations ------------------------------------------------------ */

/* Index of the range starting at ptr, or -1. Caller holds ocl.mu. */
static long reg_find(const void *ptr)
{
    for (size_t i = 0; i < ocl.nregs; i++)
        if (ocl.regs[i].ptr == ptr)
            return (long)i;
    return -1;
}

/* Nonzero when [p, p+size) overlaps a registered range. Caller holds mu. */
static int reg_overlaps(const char *p, size_t size)
{
    for (size_t i = 0; i < ocl.nregs; i++)
        if (p < ocl.regs[i].ptr + ocl.regs[i].size && ocl.regs[i].ptr < p + size)
            return 1;
    return 0;
}

static int ocl_host_register(void *ptr, size_t size, unsigned int flags)
{
    int rc = act_rt__check_register("opencl", ptr, size, flags);
    if (rc != ACT_RT_SUCCESS || (rc = ocl_need_context()) != ACT_RT_SUCCESS)
        return rc;
    pthread_mutex_lock(&ocl.mu);
    if (reg_overlaps(ptr, size)) {
        rc = act_rt__fail(ACT_RT_ERROR_ALREADY_REGISTERED,
                          "opencl: host_register: %p+%zu overlaps a registered range", ptr, size);
    } else if (act_vec_reserve(ocl.regs, ocl.capregs, ocl.nregs + 1, 16)) {
        rc = act_rt__fail(ACT_RT_ERROR_NOMEM, "opencl: host_register: out of memory");
    }
    if (rc == ACT_RT_SUCCESS) {
        cl_int err = CL_SUCCESS;
        cl_mem m =
            ocl.CreateBuffer(ocl.ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, size, ptr, &err);
        if (!m || err != CL_SUCCESS)
            rc = act_rt__fail(cl_code(err ? err : CL_OUT_OF_RESOURCES),
                              "opencl: clCreateBuffer(USE_HOST_PTR, %zu) failed: %d", size, err);
        else
            ocl.regs[ocl.nregs++] = (struct ocl_reg){ptr, size, m};
    }
    pthread_mutex_unlock(&ocl.mu);
    return rc;
}

static int ocl_host_unregister(void *ptr)
{
    int rc = act_rt__check_ptr("opencl", "host_unregister", ptr);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    cl_mem m = NULL;
    pthread_mutex_lock(&ocl.mu);
    long i = reg_find(ptr);
    if (i >= 0) {
        m = ocl.regs[i].mem;
        ocl.regs[i] = ocl.regs[--ocl.nregs];
    }
    pthread_mutex_unlock(&ocl.mu);
    if (!m)
        return act_rt__fail(ACT_RT_ERROR_NOT_REGISTERED,
                            "opencl: host_unregister: %p is not the start of a registered range",
                            ptr);
    /* The runtime keeps the buffer alive until enqueued work using it ends. */
    cl_int err = ocl.ReleaseMemObject(m);
    return err == CL_SUCCESS ? ACT_RT_SUCCESS : cl_code(err);
}

ACT_EXPORT int act_rt_opencl_buffer(const void *ptr, void **mem)
{
    if (!ptr || !mem)
        return act_rt__fail(ACT_RT_ERROR_INVALID_PARAM, "act_rt_opencl_buffer: NULL pointer");
    pthread_mutex_lock(&ocl.mu);
    long i = reg_find(ptr);
    if (i >= 0)
        *mem = ocl.regs[i].mem;
    pthread_mutex_unlock(&ocl.mu);
    if (i < 0)
        return act_rt__fail(ACT_RT_ERROR_NOT_REGISTERED,
                            "act_rt_opencl_buffer: %p is not the start of a registered range", ptr);
    return ACT_RT_SUCCESS;
}

/* ---- streams ------------------------------------------------------------ */

static int ocl_stream_create(void **slot)
{
    int rc = act_rt__check_ptr("opencl", "stream_create", slot);
    if (rc != ACT_RT_SUCCESS || (rc = ocl_need_context()) != ACT_RT_SUCCESS)
        return rc;
    cl_int err = CL_SUCCESS;
    cl_command_queue q =
        ocl.CreateCommandQueueWithProperties
            ? ocl.CreateCommandQueueWithProperties(ocl.ctx, ocl.devices[0], NULL, &err)
            : ocl.CreateCommandQueue(ocl.ctx, ocl.devices[0], 0, &err);
    if (!q || err != CL_SUCCESS)
        return act_rt__fail(cl_code(err ? err : CL_OUT_OF_RESOURCES),
                            "opencl: clCreateCommandQueue failed: %d", err);
    pthread_mutex_lock(&ocl.mu);
    int ok = act_vec_reserve(ocl.streams, ocl.capstreams, ocl.nstreams + 1, 8) == 0;
    if (ok)
        ocl.streams[ocl.nstreams++] = q;
    pthread_mutex_unlock(&ocl.mu);
    if (!ok) {
        ocl.ReleaseCommandQueue(q);
        return act_rt__fail(ACT_RT_ERROR_NOMEM, "opencl: stream_create: out of memory");
    }
    *slot = q;
    return ACT_RT_SUCCESS;
}

static int ocl_stream_destroy(void *stream)
{
    int rc = act_rt__check_ptr("opencl", "stream_destroy", stream);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    int found = 0;
    pthread_mutex_lock(&ocl.mu);
    for (size_t i = 0; i < ocl.nstreams; i++)
        if (ocl.streams[i] == stream) {
            ocl.streams[i] = ocl.streams[--ocl.nstreams];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&ocl.mu);
    /* Handing an unknown pointer to the ICD loader could crash it. */
    if (!found)
        return act_rt__fail(ACT_RT_ERROR_INVALID_HANDLE,
                            "opencl: stream_destroy: %p is not a stream of this table", stream);
    cl_int err = ocl.ReleaseCommandQueue(stream);
    return err == CL_SUCCESS ? ACT_RT_SUCCESS : cl_code(err);
}

static int ocl_synchronize(void)
{
    int rc = ocl_need_context();
    if (rc != ACT_RT_SUCCESS)
        return rc;
    /* Retain under the lock, finish outside it: a concurrent destroy must
     * not free a queue we are waiting on, and waiting must not block
     * registrations. */
    pthread_mutex_lock(&ocl.mu);
    size_t n = ocl.nstreams;
    cl_command_queue *qs = n ? malloc(n * sizeof *qs) : NULL;
    if (qs)
        for (size_t i = 0; i < n; i++) {
            qs[i] = ocl.streams[i];
            ocl.RetainCommandQueue(qs[i]);
        }
    pthread_mutex_unlock(&ocl.mu);
    if (n && !qs)
        return act_rt__fail(ACT_RT_ERROR_NOMEM, "opencl: synchronize: out of memory");
    for (size_t i = 0; i < n; i++) {
        cl_int err = ocl.Finish(qs[i]);
        if (err != CL_SUCCESS && rc == ACT_RT_SUCCESS)
            rc = act_rt__fail(cl_code(err), "opencl: clFinish failed: %d", err);
        ocl.ReleaseCommandQueue(qs[i]);
    }
    free(qs);
    return rc;
}

/* ---- profiler, memory, devices, errors ---------------------------------- */

static int ocl_profiler_start(void)
{
    return act_start();
}

static int ocl_profiler_stop(void)
{
    return act_stop();
}

static int ocl_device_count(int *count)
{
    int rc = act_rt__check_ptr("opencl", "device_count", count);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    rc = act_rt__once(&ocl_listed, ocl_devices_step);
    *count = rc == ACT_RT_SUCCESS ? (int)ocl.ndevices : 0;
    return rc;
}

static int ocl_mem_get_info(int device, size_t *free, size_t *total)
{
    if (!free || !total)
        return act_rt__fail(ACT_RT_ERROR_INVALID_PARAM, "opencl: mem_get_info: NULL pointer");
    if (device < 0)
        return act_rt__fail(ACT_RT_ERROR_INVALID_PARAM, "opencl: mem_get_info: device %d", device);
    int rc = act_rt__once(&ocl_listed, ocl_devices_step);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    if ((cl_uint)device >= ocl.ndevices)
        return act_rt__fail(ACT_RT_ERROR_INVALID_DEVICE, "opencl: mem_get_info: device %d of %u",
                            device, ocl.ndevices);
    cl_ulong bytes = 0;
    cl_int err = ocl.GetDeviceInfo(ocl.devices[device], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof bytes,
                                   &bytes, NULL);
    if (err != CL_SUCCESS)
        return act_rt__fail(cl_code(err), "opencl: clGetDeviceInfo(GLOBAL_MEM_SIZE): %d", err);
    *total = bytes > SIZE_MAX ? SIZE_MAX : (size_t)bytes;
    *free = ACT_RT_MEM_UNKNOWN;
    return ACT_RT_SUCCESS;
}

static const char *ocl_error_string(int code)
{
    const char *s = act_rt__common_string(code);
    if (s)
        return s;
    switch (-code) { /* back to the cl_int */
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
    case CL_INVALID_CONTEXT: return "CL_INVALID_CONTEXT";
    case CL_INVALID_QUEUE_PROPERTIES: return "CL_INVALID_QUEUE_PROPERTIES";
    case CL_INVALID_COMMAND_QUEUE: return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_HOST_PTR: return "CL_INVALID_HOST_PTR";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    case CL_INVALID_PLATFORM: return "CL_INVALID_PLATFORM";
    default: return "OpenCL error (the negated cl_int; see CL/cl.h)";
    }
}

const struct act_rt act_rt__opencl = {
    .struct_size = sizeof(struct act_rt),
    .name = "opencl",
    .host_register = ocl_host_register,
    .host_unregister = ocl_host_unregister,
    .stream_create = ocl_stream_create,
    .stream_destroy = ocl_stream_destroy,
    .profiler_start = ocl_profiler_start,
    .profiler_stop = ocl_profiler_stop,
    .mem_get_info = ocl_mem_get_info,
    .device_count = ocl_device_count,
    .synchronize = ocl_synchronize,
    .error_string = ocl_error_string,
};
