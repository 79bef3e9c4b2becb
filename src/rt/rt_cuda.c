/*
 * rt_cuda.c -- the "cuda" runtime table: libcudart resolved with
 * dlopen/dlsym on first use (no CUDA headers or link needed), the same
 * calls torch.cuda.cudart() exposes. Arguments reach cudart unchanged
 * except the flags (ACT_RT_HOST_REG_PINNED is cudart's default and is
 * dropped; ACT_RT_HOST_REG_MAPPED is cudaHostRegisterMapped, 0x2), and
 * cudart's cudaError_t comes back unchanged.
 *
 * Library: $ACCELTRACE_CUDART_LIB (or its older name
 * $ACCELTRACE_CUDART_PATH) when set, else libcudart.so,
 * libcudart.so.13, .12, .11.0 through the loader's search path.
 * Loading runs once; cudart initialises itself on its first call.
 */
#include <stddef.h>
#include <stdio.h>

#include "acceltrace.h"
#include "rt_internal.h"

/* The few cudart prototypes used (cudaError_t is an int-sized enum;
 * cudaStream_t is a pointer). */
static struct {
    void *lib;
    int (*HostRegister)(void *ptr, size_t size, unsigned int flags);
    int (*HostUnregister)(void *ptr);
    int (*StreamCreate)(void **stream);
    int (*StreamDestroy)(void *stream);
    int (*ProfilerStart)(void);
    int (*ProfilerStop)(void);
    int (*MemGetInfo)(size_t *free, size_t *total);
    int (*GetDeviceCount)(int *count);
    int (*DeviceSynchronize)(void);
    const char *(*GetErrorString)(int err);
    int (*GetDevice)(int *device);
    int (*SetDevice)(int device);
} cudart_lib;

#define CUDA_SYM(f)                                                                                \
    {                                                                                              \
        "cuda" #f, (void **)&cudart_lib.f                                                          \
    }
static const struct {
    const char *name;
    void **slot;
} cuda_syms[] = {
    CUDA_SYM(HostRegister),   CUDA_SYM(HostUnregister), CUDA_SYM(StreamCreate),
    CUDA_SYM(StreamDestroy),  CUDA_SYM(ProfilerStart),  CUDA_SYM(ProfilerStop),
    CUDA_SYM(MemGetInfo),     CUDA_SYM(GetDeviceCount), CUDA_SYM(DeviceSynchronize),
    CUDA_SYM(GetErrorString), CUDA_SYM(GetDevice),      CUDA_SYM(SetDevice),
};

static int cuda_load_step(char *why, size_t len)
{
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                        "libcudart.so.11.0"};
    int code = ACT_RT_SUCCESS;
    cudart_lib.lib = act_rt__dlopen("ACCELTRACE_CUDART_LIB", "ACCELTRACE_CUDART_PATH", names,
                                    ACT_ARRAY_SIZE(names), &code, why, len);
    if (!cudart_lib.lib)
        return code;
    /* A missing symbol only disables the calls that need it. */
    for (size_t i = 0; i < ACT_ARRAY_SIZE(cuda_syms); i++)
        *cuda_syms[i].slot = act_rt__dlsym(cudart_lib.lib, cuda_syms[i].name);
    return ACT_RT_SUCCESS;
}

static act_rt_once cuda_loaded = ACT_RT_ONCE_INIT;

/* Load (once) and check that cudart has the function this call needs. */
#define CUDA_NEED(f)                                                                               \
    do {                                                                                           \
        int rc_ = act_rt__once(&cuda_loaded, cuda_load_step);                                      \
        if (rc_ != ACT_RT_SUCCESS)                                                                 \
            return rc_;                                                                            \
        if (!cudart_lib.f)                                                                         \
            return act_rt__fail(ACT_RT_ERROR_NO_SYMBOL, "cuda: libcudart lacks cuda" #f);          \
    } while (0)

static int cuda_host_register(void *ptr, size_t size, unsigned int flags)
{
    int rc = act_rt__check_register("cuda", ptr, size, flags);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    CUDA_NEED(HostRegister);
    /* cudaHostRegister always page-locks; Mapped has cudart's value. */
    return act_rt__ret("cuda", "cudaHostRegister",
                       cudart_lib.HostRegister(ptr, size, flags & ACT_RT_HOST_REG_MAPPED));
}

static int cuda_host_unregister(void *ptr)
{
    int rc = act_rt__check_ptr("cuda", "host_unregister", ptr);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    CUDA_NEED(HostUnregister);
    return act_rt__ret("cuda", "cudaHostUnregister", cudart_lib.HostUnregister(ptr));
}

static int cuda_stream_create(void **slot)
{
    int rc = act_rt__check_ptr("cuda", "stream_create", slot);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    CUDA_NEED(StreamCreate);
    return act_rt__ret("cuda", "cudaStreamCreate", cudart_lib.StreamCreate(slot));
}

static int cuda_stream_destroy(void *stream)
{
    /* NULL would be the legacy default stream, never one we created. */
    int rc = act_rt__check_ptr("cuda", "stream_destroy", stream);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    CUDA_NEED(StreamDestroy);
    return act_rt__ret("cuda", "cudaStreamDestroy", cudart_lib.StreamDestroy(stream));
}

/* cudaProfilerStart/Stop mark the capture range of an external profiler
 * (nsys, CUPTI); acceltrace's own capture range follows when attached. */
static int cuda_profiler_start(void)
{
    CUDA_NEED(ProfilerStart);
    int rc = cudart_lib.ProfilerStart();
    if (rc != 0)
        return act_rt__ret("cuda", "cudaProfilerStart", rc);
    int a = act_start();
    return a == ACT_E_DISABLED ? ACT_RT_SUCCESS : a;
}

static int cuda_profiler_stop(void)
{
    CUDA_NEED(ProfilerStop);
    int rc = cudart_lib.ProfilerStop();
    if (rc != 0)
        return act_rt__ret("cuda", "cudaProfilerStop", rc);
    int a = act_stop();
    return a == ACT_E_DISABLED ? ACT_RT_SUCCESS : a;
}

/* cudaMemGetInfo reports the current device: switch to `device` for the
 * query and back, as torch's cudart binding does with a device guard. */
static int cuda_mem_get_info(int device, size_t *free, size_t *total)
{
    if (!free || !total)
        return act_rt__fail(ACT_RT_ERROR_INVALID_PARAM, "cuda: mem_get_info: NULL pointer");
    if (device < 0)
        return act_rt__fail(ACT_RT_ERROR_INVALID_PARAM, "cuda: mem_get_info: device %d", device);
    CUDA_NEED(GetDevice);
    CUDA_NEED(SetDevice);
    CUDA_NEED(MemGetInfo);
    int cur = 0;
    int rc = cudart_lib.GetDevice(&cur);
    if (rc != 0)
        return act_rt__ret("cuda", "cudaGetDevice", rc);
    if (cur != device && (rc = cudart_lib.SetDevice(device)) != 0)
        return act_rt__ret("cuda", "cudaSetDevice", rc);
    rc = act_rt__ret("cuda", "cudaMemGetInfo", cudart_lib.MemGetInfo(free, total));
    if (cur != device) {
        int back = act_rt__ret("cuda", "cudaSetDevice (back)", cudart_lib.SetDevice(cur));
        if (rc == 0)
            rc = back;
    }
    return rc;
}

static int cuda_device_count(int *count)
{
    int rc = act_rt__check_ptr("cuda", "device_count", count);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    CUDA_NEED(GetDeviceCount);
    return act_rt__ret("cuda", "cudaGetDeviceCount", cudart_lib.GetDeviceCount(count));
}

static int cuda_synchronize(void)
{
    CUDA_NEED(DeviceSynchronize);
    return act_rt__ret("cuda", "cudaDeviceSynchronize", cudart_lib.DeviceSynchronize());
}

static const char *cuda_error_string(int code)
{
    const char *s = act_rt__common_string(code);
    if (s)
        return s;
    /* Loading cudart does not initialise a device; cudaGetErrorString
     * needs no device either. */
    if (act_rt__once(&cuda_loaded, cuda_load_step) == ACT_RT_SUCCESS && cudart_lib.GetErrorString) {
        s = cudart_lib.GetErrorString(code);
        if (s)
            return s;
    }
    return "CUDA runtime error (libcudart not available to describe it)";
}

const struct act_rt act_rt__cuda = {
    .struct_size = sizeof(struct act_rt),
    .name = "cuda",
    .host_register = cuda_host_register,
    .host_unregister = cuda_host_unregister,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .profiler_start = cuda_profiler_start,
    .profiler_stop = cuda_profiler_stop,
    .mem_get_info = cuda_mem_get_info,
    .device_count = cuda_device_count,
    .synchronize = cuda_synchronize,
    .error_string = cuda_error_string,
};
