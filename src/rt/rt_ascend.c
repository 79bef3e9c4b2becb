/*
 * rt_ascend.c -- the "ascend" runtime table: libascendcl (CANN ACL)
 * resolved with dlopen/dlsym on first use, the calls torch_npu's npurt
 * exposes (aclrtHostRegisterV2, aclrtHostUnregister, aclrtCreateStream,
 * aclrtDestroyStream) plus memory info, device count and synchronise.
 * Arguments reach ACL unchanged (ACT_RT_HOST_REG_* are the ACL_HOST_REG_*
 * values) and aclError comes back unchanged.
 *
 * Library: $ACCELTRACE_ASCENDCL_LIB (or its older name
 * $ACCELTRACE_ASCENDCL_PATH) when set, else
 * $ASCEND_HOME_PATH/lib64/libascendcl.so, else libascendcl.so through the
 * loader's search path. The first call that needs the device runs, once:
 * aclInit(NULL) (ACL_ERROR_REPEAT_INITIALIZE is fine: the program did it)
 * and, when the initialising thread has no current device,
 * aclrtSetDevice(0). device_count() only loads the library.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "acceltrace.h"
#include "rt_internal.h"

/* CANN acl_base.h values. */
enum {
    ACL_SUCCESS_ = 0,
    ACL_ERROR_INVALID_PARAM_ = 100000,
    ACL_ERROR_UNINITIALIZE_ = 100001,
    ACL_ERROR_REPEAT_INITIALIZE_ = 100002,
    ACL_ERROR_RT_PARAM_INVALID_ = 107000,
    ACL_ERROR_RT_INVALID_DEVICEID_ = 107001,
    ACL_HBM_MEM_ = 1, /* aclrtMemAttr: device (HBM) memory */
};

static struct {
    void *lib;
    int (*Init)(const char *config);
    int (*SetDevice)(int32_t device);
    int (*GetDevice)(int32_t *device);
    int (*GetDeviceCount)(uint32_t *count);
    int (*HostRegisterV2)(void *ptr, uint64_t size, uint32_t flag);
    int (*HostUnregister)(void *ptr);
    int (*CreateStream)(void **stream);
    int (*DestroyStream)(void *stream);
    int (*GetMemInfo)(int attr, size_t *free, size_t *total);
    int (*SynchronizeDevice)(void);
} acl;

static const struct {
    const char *name;
    void **slot;
} acl_syms[] = {
    {"aclInit", (void **)&acl.Init},
    {"aclrtSetDevice", (void **)&acl.SetDevice},
    {"aclrtGetDevice", (void **)&acl.GetDevice},
    {"aclrtGetDeviceCount", (void **)&acl.GetDeviceCount},
    {"aclrtHostRegisterV2", (void **)&acl.HostRegisterV2},
    {"aclrtHostUnregister", (void **)&acl.HostUnregister},
    {"aclrtCreateStream", (void **)&acl.CreateStream},
    {"aclrtDestroyStream", (void **)&acl.DestroyStream},
    {"aclrtGetMemInfo", (void **)&acl.GetMemInfo},
    {"aclrtSynchronizeDevice", (void **)&acl.SynchronizeDevice},
};

static int acl_load_step(char *why, size_t len)
{
    static char home_lib[4096];
    const char *names[2];
    size_t n = 0;
    const char *home = secure_getenv("ASCEND_HOME_PATH");
    if (home && *home &&
        (size_t)snprintf(home_lib, sizeof home_lib, "%s/lib64/libascendcl.so", home) <
            sizeof home_lib)
        names[n++] = home_lib;
    names[n++] = "libascendcl.so";
    int code = ACT_RT_SUCCESS;
    acl.lib = act_rt__dlopen("ACCELTRACE_ASCENDCL_LIB", "ACCELTRACE_ASCENDCL_PATH", names, n, &code,
                             why, len);
    if (!acl.lib)
        return code;
    /* A missing symbol only disables the calls that need it. */
    for (size_t i = 0; i < ACT_ARRAY_SIZE(acl_syms); i++)
        *acl_syms[i].slot = act_rt__dlsym(acl.lib, acl_syms[i].name);
    return ACT_RT_SUCCESS;
}

static act_rt_once acl_loaded = ACT_RT_ONCE_INIT;

static int acl_init_step(char *why, size_t len)
{
    int rc = act_rt__once(&acl_loaded, acl_load_step);
    if (rc != ACT_RT_SUCCESS) {
        snprintf(why, len, "%s", act_rt_last_error());
        return rc;
    }
    if (!acl.Init || !acl.GetDevice || !acl.SetDevice) {
        snprintf(why, len, "ascend: libascendcl lacks aclInit, aclrtGetDevice or aclrtSetDevice");
        return ACT_RT_ERROR_NO_SYMBOL;
    }
    rc = acl.Init(NULL);
    if (rc != ACL_SUCCESS_ && rc != ACL_ERROR_REPEAT_INITIALIZE_) {
        snprintf(why, len, "ascend: aclInit failed with %d", rc);
        return rc;
    }
    int32_t dev = -1;
    if (acl.GetDevice(&dev) != ACL_SUCCESS_ && (rc = acl.SetDevice(0)) != ACL_SUCCESS_) {
        snprintf(why, len, "ascend: aclrtSetDevice(0) failed with %d", rc);
        return rc;
    }
    return ACT_RT_SUCCESS;
}

static act_rt_once acl_ready = ACT_RT_ONCE_INIT;

/* Make sure the runtime is initialised (once) and has function f. */
#define ACL_NEED(f, sym)                                                                           \
    do {                                                                                           \
        int rc_ = act_rt__once(&acl_ready, acl_init_step);                                         \
        if (rc_ != ACT_RT_SUCCESS)                                                                 \
            return rc_;                                                                            \
        if (!acl.f)                                                                                \
            return act_rt__fail(ACT_RT_ERROR_NO_SYMBOL, "ascend: libascendcl lacks " sym);         \
    } while (0)

static int ascend_host_register(void *ptr, size_t size, unsigned int flags)
{
    int rc = act_rt__check_register("ascend", ptr, size, flags);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    ACL_NEED(HostRegisterV2, "aclrtHostRegisterV2");
    return act_rt__ret("ascend", "aclrtHostRegisterV2",
                       acl.HostRegisterV2(ptr, (uint64_t)size, (uint32_t)flags));
}

static int ascend_host_unregister(void *ptr)
{
    int rc = act_rt__check_ptr("ascend", "host_unregister", ptr);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    ACL_NEED(HostUnregister, "aclrtHostUnregister");
    return act_rt__ret("ascend", "aclrtHostUnregister", acl.HostUnregister(ptr));
}

static int ascend_stream_create(void **slot)
{
    int rc = act_rt__check_ptr("ascend", "stream_create", slot);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    ACL_NEED(CreateStream, "aclrtCreateStream");
    return act_rt__ret("ascend", "aclrtCreateStream", acl.CreateStream(slot));
}

static int ascend_stream_destroy(void *stream)
{
    int rc = act_rt__check_ptr("ascend", "stream_destroy", stream);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    ACL_NEED(DestroyStream, "aclrtDestroyStream");
    return act_rt__ret("ascend", "aclrtDestroyStream", acl.DestroyStream(stream));
}

/* ACL has no capture-range call of its own: profiler start/stop are
 * acceltrace's capture range (the mspti source records within it). */
static int ascend_profiler_start(void)
{
    return act_start();
}

static int ascend_profiler_stop(void)
{
    return act_stop();
}

/* aclrtGetMemInfo reports the current device: switch to `device` for the
 * query and back. */
static int ascend_mem_get_info(int device, size_t *free, size_t *total)
{
    if (!free || !total)
        return act_rt__fail(ACT_RT_ERROR_INVALID_PARAM, "ascend: mem_get_info: NULL pointer");
    if (device < 0)
        return act_rt__fail(ACT_RT_ERROR_INVALID_PARAM, "ascend: mem_get_info: device %d", device);
    ACL_NEED(GetMemInfo, "aclrtGetMemInfo");
    int32_t cur = -1;
    int rc = acl.GetDevice(&cur);
    if (rc != ACL_SUCCESS_ || cur != device) {
        if ((rc = acl.SetDevice(device)) != ACL_SUCCESS_)
            return act_rt__ret("ascend", "aclrtSetDevice", rc);
    }
    rc = act_rt__ret("ascend", "aclrtGetMemInfo", acl.GetMemInfo(ACL_HBM_MEM_, free, total));
    if (cur >= 0 && cur != device) {
        int back = act_rt__ret("ascend", "aclrtSetDevice (back)", acl.SetDevice(cur));
        if (rc == ACL_SUCCESS_)
            rc = back;
    }
    return rc;
}

static int ascend_device_count(int *count)
{
    int rc = act_rt__check_ptr("ascend", "device_count", count);
    if (rc != ACT_RT_SUCCESS)
        return rc;
    /* Load only: counting devices must not initialise one. */
    if ((rc = act_rt__once(&acl_loaded, acl_load_step)) != ACT_RT_SUCCESS)
        return rc;
    if (!acl.GetDeviceCount)
        return act_rt__fail(ACT_RT_ERROR_NO_SYMBOL,
                            "ascend: libascendcl lacks aclrtGetDeviceCount");
    uint32_t n = 0;
    rc = acl.GetDeviceCount(&n);
    if (rc == ACL_SUCCESS_)
        *count = n > INT32_MAX ? INT32_MAX : (int)n;
    return act_rt__ret("ascend", "aclrtGetDeviceCount", rc);
}

static int ascend_synchronize(void)
{
    ACL_NEED(SynchronizeDevice, "aclrtSynchronizeDevice");
    return act_rt__ret("ascend", "aclrtSynchronizeDevice", acl.SynchronizeDevice());
}

static const char *ascend_error_string(int code)
{
    const char *s = act_rt__common_string(code);
    if (s)
        return s;
    switch (code) {
    case ACL_ERROR_INVALID_PARAM_: return "ACL_ERROR_INVALID_PARAM: invalid parameter";
    case ACL_ERROR_UNINITIALIZE_: return "ACL_ERROR_UNINITIALIZE: ACL is not initialised";
    case ACL_ERROR_REPEAT_INITIALIZE_: return "ACL_ERROR_REPEAT_INITIALIZE: ACL initialised twice";
    case ACL_ERROR_RT_PARAM_INVALID_:
        return "ACL_ERROR_RT_PARAM_INVALID: invalid runtime parameter";
    case ACL_ERROR_RT_INVALID_DEVICEID_: return "ACL_ERROR_RT_INVALID_DEVICEID: invalid device id";
    default: return "ACL error (see aclGetRecentErrMsg and CANN's acl_base.h)";
    }
}

const struct act_rt act_rt__ascend = {
    .struct_size = sizeof(struct act_rt),
    .name = "ascend",
    .host_register = ascend_host_register,
    .host_unregister = ascend_host_unregister,
    .stream_create = ascend_stream_create,
    .stream_destroy = ascend_stream_destroy,
    .profiler_start = ascend_profiler_start,
    .profiler_stop = ascend_profiler_stop,
    .mem_get_info = ascend_mem_get_info,
    .device_count = ascend_device_count,
    .synchronize = ascend_synchronize,
    .error_string = ascend_error_string,
};
