/*
 * fake_cudart.c -- a fake libcudart for the "cuda" runtime-table tests:
 * the CUDA runtime calls act_rt uses, with cudart's error values, a
 * registry of registered ranges and streams (so double unregister and
 * unknown streams fail as they do in cudart), two fake devices and a
 * per-thread current device. Every call is logged (fake_log.h).
 * Built a second time with -DFAKE_OMIT_PROFILER_START to test a missing
 * symbol.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fake_log.h"

enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorHostMemoryAlreadyRegistered = 712,
    cudaErrorHostMemoryNotRegistered = 713,
};
#define FAKE_DEVICES 2
#define GIB          (1024ull * 1024 * 1024)

static void *regs[256];
static void *streams[256];
static _Thread_local int current_device;

static int slot_take(void **set, void *p)
{
    for (int i = 0; i < 256; i++)
        if (!set[i]) {
            set[i] = p;
            return 1;
        }
    return 0;
}

static int slot_drop(void **set, void *p)
{
    for (int i = 0; i < 256; i++)
        if (set[i] == p) {
            set[i] = NULL;
            return 1;
        }
    return 0;
}

static int slot_has(void **set, void *p)
{
    for (int i = 0; i < 256; i++)
        if (set[i] == p)
            return 1;
    return 0;
}

FAKE_EXPORT int cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    fake_record("cudaHostRegister", (uintptr_t)ptr, size, flags);
    pthread_mutex_lock(&fake_mu);
    int rc = slot_has(regs, ptr)    ? cudaErrorHostMemoryAlreadyRegistered
             : slot_take(regs, ptr) ? cudaSuccess
                                    : cudaErrorInvalidValue;
    pthread_mutex_unlock(&fake_mu);
    return rc;
}

FAKE_EXPORT int cudaHostUnregister(void *ptr)
{
    fake_record("cudaHostUnregister", (uintptr_t)ptr, 0, 0);
    pthread_mutex_lock(&fake_mu);
    int rc = slot_drop(regs, ptr) ? cudaSuccess : cudaErrorHostMemoryNotRegistered;
    pthread_mutex_unlock(&fake_mu);
    return rc;
}

FAKE_EXPORT int cudaStreamCreate(void **slot)
{
    fake_record("cudaStreamCreate", (uintptr_t)slot, 0, 0);
    void *s = malloc(16);
    pthread_mutex_lock(&fake_mu);
    slot_take(streams, s);
    pthread_mutex_unlock(&fake_mu);
    *slot = s;
    return cudaSuccess;
}

FAKE_EXPORT int cudaStreamDestroy(void *stream)
{
    fake_record("cudaStreamDestroy", (uintptr_t)stream, 0, 0);
    pthread_mutex_lock(&fake_mu);
    int ok = slot_drop(streams, stream);
    pthread_mutex_unlock(&fake_mu);
    if (!ok)
        return cudaErrorInvalidResourceHandle;
    free(stream);
    return cudaSuccess;
}

#ifndef FAKE_OMIT_PROFILER_START
FAKE_EXPORT int cudaProfilerStart(void)
{
    fake_record("cudaProfilerStart", 0, 0, 0);
    return cudaSuccess;
}
#endif

FAKE_EXPORT int cudaProfilerStop(void)
{
    fake_record("cudaProfilerStop", 0, 0, 0);
    return cudaSuccess;
}

/* Device d has (d+1) GiB free of (d+2) GiB. */
FAKE_EXPORT int cudaMemGetInfo(size_t *free, size_t *total)
{
    fake_record("cudaMemGetInfo", (uintptr_t)free, (uintptr_t)total, (uint64_t)current_device);
    *free = (size_t)((current_device + 1) * GIB);
    *total = (size_t)((current_device + 2) * GIB);
    return cudaSuccess;
}

FAKE_EXPORT int cudaGetDeviceCount(int *count)
{
    fake_record("cudaGetDeviceCount", (uintptr_t)count, 0, 0);
    *count = FAKE_DEVICES;
    return cudaSuccess;
}

FAKE_EXPORT int cudaDeviceSynchronize(void)
{
    fake_record("cudaDeviceSynchronize", 0, 0, 0);
    return cudaSuccess;
}

FAKE_EXPORT int cudaGetDevice(int *device)
{
    fake_record("cudaGetDevice", (uintptr_t)device, 0, 0);
    *device = current_device;
    return cudaSuccess;
}

FAKE_EXPORT int cudaSetDevice(int device)
{
    fake_record("cudaSetDevice", (uint64_t)device, 0, 0);
    if (device < 0 || device >= FAKE_DEVICES)
        return cudaErrorInvalidDevice;
    current_device = device;
    return cudaSuccess;
}

FAKE_EXPORT const char *cudaGetErrorString(int err)
{
    fake_record("cudaGetErrorString", (uint64_t)err, 0, 0);
    switch (err) {
    case cudaSuccess: return "no error";
    case cudaErrorHostMemoryNotRegistered:
        return "fake: part or all of the requested memory range is not registered";
    case cudaErrorHostMemoryAlreadyRegistered:
        return "fake: part or all of the requested memory range is already registered";
    default: return "fake: unrecognized error code";
    }
}
