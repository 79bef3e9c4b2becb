/*
 * fake_ascendcl.c -- a fake libascendcl (CANN ACL) for the "ascend"
 * runtime-table tests: the ACL calls act_rt uses, with ACL's error values
 * (acl_base.h). It enforces what the real runtime needs: calls that use
 * the device fail with ACL_ERROR_UNINITIALIZE before aclInit and with a
 * context error before aclrtSetDevice; a second aclInit returns
 * ACL_ERROR_REPEAT_INITIALIZE. Two fake devices. Every call is logged
 * (fake_log.h). Built a second time with -DFAKE_OMIT_HOST_REGISTER to
 * test a missing symbol.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fake_log.h"

enum {
    ACL_SUCCESS = 0,
    ACL_ERROR_INVALID_PARAM = 100000,
    ACL_ERROR_UNINITIALIZE = 100001,
    ACL_ERROR_REPEAT_INITIALIZE = 100002,
    ACL_ERROR_RT_INVALID_DEVICEID = 107001,
    ACL_ERROR_RT_CONTEXT_NULL = 107002,
};
#define ACL_HOST_REG_MAPPED 0x2u
#define ACL_HOST_REG_PINNED 0x10000000u
#define FAKE_DEVICES        2
#define GIB                 (1024ull * 1024 * 1024)

static int initialised;
static int device_set = -1; /* process-wide here; per-thread context in real ACL */
static void *regs[256];
static void *streams[256];

static int ready(void)
{
    if (!initialised)
        return ACL_ERROR_UNINITIALIZE;
    return device_set < 0 ? ACL_ERROR_RT_CONTEXT_NULL : ACL_SUCCESS;
}

__attribute__((unused)) static int set_has(void **set, void *p)
{
    for (int i = 0; i < 256; i++)
        if (set[i] == p)
            return 1;
    return 0;
}

static int set_put(void **set, void *p)
{
    for (int i = 0; i < 256; i++)
        if (!set[i]) {
            set[i] = p;
            return 1;
        }
    return 0;
}

static int set_drop(void **set, void *p)
{
    for (int i = 0; i < 256; i++)
        if (set[i] == p) {
            set[i] = NULL;
            return 1;
        }
    return 0;
}

FAKE_EXPORT int aclInit(const char *config)
{
    fake_record("aclInit", (uintptr_t)config, 0, 0);
    pthread_mutex_lock(&fake_mu);
    int again = initialised;
    initialised = 1;
    pthread_mutex_unlock(&fake_mu);
    return again ? ACL_ERROR_REPEAT_INITIALIZE : ACL_SUCCESS;
}

FAKE_EXPORT int aclrtSetDevice(int32_t device)
{
    fake_record("aclrtSetDevice", (uint64_t)device, 0, 0);
    if (!initialised)
        return ACL_ERROR_UNINITIALIZE;
    if (device < 0 || device >= FAKE_DEVICES)
        return ACL_ERROR_RT_INVALID_DEVICEID;
    device_set = device;
    return ACL_SUCCESS;
}

FAKE_EXPORT int aclrtGetDevice(int32_t *device)
{
    fake_record("aclrtGetDevice", (uintptr_t)device, 0, 0);
    if (device_set < 0)
        return ACL_ERROR_RT_CONTEXT_NULL;
    *device = device_set;
    return ACL_SUCCESS;
}

FAKE_EXPORT int aclrtGetDeviceCount(uint32_t *count)
{
    fake_record("aclrtGetDeviceCount", (uintptr_t)count, 0, 0);
    *count = FAKE_DEVICES;
    return ACL_SUCCESS;
}

#ifndef FAKE_OMIT_HOST_REGISTER
FAKE_EXPORT int aclrtHostRegisterV2(void *ptr, uint64_t size, uint32_t flag)
{
    fake_record("aclrtHostRegisterV2", (uintptr_t)ptr, size, flag);
    int rc = ready();
    if (rc)
        return rc;
    if (!ptr || !size || !flag || (flag & ~(ACL_HOST_REG_MAPPED | ACL_HOST_REG_PINNED)))
        return ACL_ERROR_INVALID_PARAM;
    pthread_mutex_lock(&fake_mu);
    rc = set_has(regs, ptr) || !set_put(regs, ptr) ? ACL_ERROR_INVALID_PARAM : ACL_SUCCESS;
    pthread_mutex_unlock(&fake_mu);
    return rc;
}
#endif

FAKE_EXPORT int aclrtHostUnregister(void *ptr)
{
    fake_record("aclrtHostUnregister", (uintptr_t)ptr, 0, 0);
    int rc = ready();
    if (rc)
        return rc;
    pthread_mutex_lock(&fake_mu);
    rc = set_drop(regs, ptr) ? ACL_SUCCESS : ACL_ERROR_INVALID_PARAM;
    pthread_mutex_unlock(&fake_mu);
    return rc;
}

FAKE_EXPORT int aclrtCreateStream(void **stream)
{
    fake_record("aclrtCreateStream", (uintptr_t)stream, 0, 0);
    int rc = ready();
    if (rc)
        return rc;
    void *s = malloc(16);
    pthread_mutex_lock(&fake_mu);
    set_put(streams, s);
    pthread_mutex_unlock(&fake_mu);
    *stream = s;
    return ACL_SUCCESS;
}

FAKE_EXPORT int aclrtDestroyStream(void *stream)
{
    fake_record("aclrtDestroyStream", (uintptr_t)stream, 0, 0);
    int rc = ready();
    if (rc)
        return rc;
    pthread_mutex_lock(&fake_mu);
    int ok = set_drop(streams, stream);
    pthread_mutex_unlock(&fake_mu);
    if (!ok)
        return ACL_ERROR_INVALID_PARAM;
    free(stream);
    return ACL_SUCCESS;
}

/* Device d has (d+1) GiB free of (d+2) GiB. */
FAKE_EXPORT int aclrtGetMemInfo(int attr, size_t *free, size_t *total)
{
    fake_record("aclrtGetMemInfo", (uint64_t)attr, (uintptr_t)free, (uint64_t)device_set);
    int rc = ready();
    if (rc)
        return rc;
    *free = (size_t)((device_set + 1) * GIB);
    *total = (size_t)((device_set + 2) * GIB);
    return ACL_SUCCESS;
}

FAKE_EXPORT int aclrtSynchronizeDevice(void)
{
    fake_record("aclrtSynchronizeDevice", 0, 0, 0);
    return ready();
}
