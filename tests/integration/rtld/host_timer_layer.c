/*
 * host_timer_layer.c -- an OpenCL layer (OPENCL_LAYERS) that gives PoCL
 * the timer API it lacks, so that the "device_host_timer" clock mapping
 * (sources/opencl/clock.c) is tested on PoCL too (check_clock_truth.py):
 * clGetDeviceAndHostTimer answers the device clock PoCL stamps its
 * profiling with (CLOCK_MONOTONIC_RAW) and, as host timer, a clock that
 * is not acceltrace's (that one moved by CLOCK_MONOTONIC's distance from
 * it, fixed at the first call), as a real runtime may; clGetHostTimer the
 * same host clock. Both of a pair come from one reading, as a runtime's
 * do: a preemption between two readings would make an offset error that
 * no bracket of acceltrace's could see. Everything else passes through.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_layer.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

static struct _cl_icd_dispatch table;

static cl_ulong clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (cl_ulong)ts.tv_sec * 1000000000ull + (cl_ulong)ts.tv_nsec;
}

/* The fake host clock: CLOCK_MONOTONIC_RAW + shift. */
static cl_ulong host_of(cl_ulong raw)
{
    static _Atomic cl_ulong shift;
    cl_ulong s = atomic_load(&shift);
    if (!s) {
        s = clock_ns(CLOCK_MONOTONIC) - clock_ns(CLOCK_MONOTONIC_RAW) + 1;
        cl_ulong zero = 0;
        if (!atomic_compare_exchange_strong(&shift, &zero, s))
            s = zero;
    }
    return raw + s;
}

static cl_int CL_API_CALL timer_device_and_host(cl_device_id dev, cl_ulong *device, cl_ulong *host)
{
    (void)dev;
    if (!device || !host)
        return CL_INVALID_VALUE;
    *device = clock_ns(CLOCK_MONOTONIC_RAW);
    *host = host_of(*device);
    return CL_SUCCESS;
}

static cl_int CL_API_CALL timer_host(cl_device_id dev, cl_ulong *host)
{
    (void)dev;
    if (!host)
        return CL_INVALID_VALUE;
    *host = host_of(clock_ns(CLOCK_MONOTONIC_RAW));
    return CL_SUCCESS;
}

CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param, size_t size, void *value,
                                               size_t *size_ret)
{
    static const char name[] = "host_timer_test_layer";
    cl_layer_api_version version = CL_LAYER_API_VERSION_100;
    const void *src = param == CL_LAYER_API_VERSION ? (const void *)&version : name;
    size_t len = param == CL_LAYER_API_VERSION ? sizeof version : sizeof name;
    if (param != CL_LAYER_API_VERSION && param != CL_LAYER_NAME)
        return CL_INVALID_VALUE;
    if (value) {
        if (size < len)
            return CL_INVALID_VALUE;
        memcpy(value, src, len);
    }
    if (size_ret)
        *size_ret = len;
    return CL_SUCCESS;
}

CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint num_entries, const cl_icd_dispatch *target,
                                            cl_uint *num_entries_ret,
                                            const cl_icd_dispatch **layer_ret)
{
    const cl_uint ours = (cl_uint)(sizeof table / sizeof(void *));
    if (!target || !num_entries_ret || !layer_ret)
        return CL_INVALID_VALUE;
    cl_uint n = num_entries < ours ? num_entries : ours;
    // cppcheck-suppress pointerSize
    memcpy(&table, target, n * sizeof(void *));
    table.clGetDeviceAndHostTimer = timer_device_and_host;
    table.clGetHostTimer = timer_host;
    *num_entries_ret = n;
    *layer_ret = &table;
    return CL_SUCCESS;
}
