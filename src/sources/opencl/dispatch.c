/*
 * dispatch.c -- how calls reach the OpenCL source and leave it again.
 *
 * act_cl_next holds the real implementation of each entry point: the
 * loader's target table in layer mode (layer.c), dlsym(RTLD_NEXT) results
 * in preload mode (resolved lazily, at the shim's first call, through
 * act__cl_preload_table()). Every entry of cl_api.def is one hook
 * (ACT_HOOK) of its group: applying it writes the wrapper into the layer
 * table and arms the wrapper's flag, which is what the preload shim's
 * forwarders reach too. An unarmed wrapper passes straight through, so a
 * group left out of ACCELTRACE_HOOKS costs one predictable branch.
 *
 * The library starts lazily: the first call through any wrapper runs
 * act_init() (which applies the hook groups). Loading the layer or the shim
 * initialises nothing.
 */
#include <pthread.h>
#include <string.h>

#include "cl_source.h"
#include "init/hooks.h"
#include "init/init.h"

struct _cl_icd_dispatch act_cl_next;
_Atomic int act_cl_mode;
_Atomic int act_cl_started;

/* The table handed to the loader (layer.c) or to the preload shim. */
struct _cl_icd_dispatch act_cl_layer_table;

int act_cl_mode_claim(int mode)
{
    int expected = ACT_CL_MODE_NONE;
    if (atomic_compare_exchange_strong(&act_cl_mode, &expected, mode))
        return 1;
    return expected == mode;
}

void act_cl_install_wrappers(struct _cl_icd_dispatch *table)
{
#define X(group, ret, name, params, args) table->name = act_cl_w_##name;
#include "cl_api.def"
#undef X
}

/*
 * Lazy start. A thread that re-enters (act_init calling OpenCL, which it
 * must not, or a callback fired inside start-up) passes through instead of
 * deadlocking. act_init() itself is idempotent and thread-safe.
 */
void act_cl_start_slow(void)
{
    static _Thread_local int busy;
    if (busy)
        return;
    busy = 1;
    (void)act_init(); /* its "apply hook groups" stage arms our wrappers */
    busy = 0;
    atomic_store_explicit(&act_cl_started, 1, memory_order_release);
}

void act_cl_count_outside(int what)
{
    act_capture_count_outside(ACT_REC_API);
    if (what == ACT_CL_CMD)
        act_capture_count_outside(ACT_REC_DEVICE_OP);
}

/* ---- hooks: one per intercepted entry point ----------------------------- */

static void act_cl_hooks_common(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, act_cl_event_register_stop);
}

#define X(group, ret, name, params, args)                                                          \
    _Atomic int act_cl_armed_##name;                                                               \
    static int act_cl_apply_##name(void)                                                           \
    {                                                                                              \
        act_cl_hooks_common();                                                                     \
        act_cl_layer_table.name = act_cl_w_##name;                                                 \
        atomic_store_explicit(&act_cl_armed_##name, 1, memory_order_release);                      \
        return 0;                                                                                  \
    }                                                                                              \
    ACT_HOOK(group, name, act_cl_apply_##name);
#include "cl_api.def"
#undef X

/* ---- preload mode --------------------------------------------------------- */

/* Entry points the wrappers call besides the intercepted ones. */
static const char *const act_cl_helpers[] = {
    "clGetKernelInfo", "clRetainEvent",        "clReleaseEvent", "clSetEventCallback",
    "clGetEventInfo",  "clGetDeviceInfo",      "clGetImageInfo", "clGetDeviceAndHostTimer",
    "clGetHostTimer",  "clRetainCommandQueue",
};
/* Those of objects.c and program.c (lifetimes, builds). */
static const char *const act_cl_helpers_objects[] = {"clGetMemObjectInfo", "clGetProgramInfo",
                                                     "clGetProgramBuildInfo"};

static void *(*act_cl_resolver)(const char *name);

static void act_cl_set_entry(struct _cl_icd_dispatch *t, const char *name, void *fn)
{
#define X(group, ret, nm, params, args)                                                            \
    if (!strcmp(name, #nm)) {                                                                      \
        memcpy(&t->nm, &fn, sizeof fn);                                                            \
        return;                                                                                    \
    }
#include "cl_api.def"
#undef X
#define H(nm)                                                                                      \
    if (!strcmp(name, #nm)) {                                                                      \
        memcpy(&t->nm, &fn, sizeof fn);                                                            \
        return;                                                                                    \
    }
    /* clang-format cannot lay out a list of statement macros stably. */
    // clang-format off
    H(clGetKernelInfo)
    H(clRetainEvent)
    H(clReleaseEvent)
    H(clSetEventCallback)
    H(clGetEventInfo)
    H(clGetDeviceInfo)
    H(clGetImageInfo)
    H(clGetDeviceAndHostTimer)
    H(clGetHostTimer)
    H(clRetainCommandQueue)
    H(clGetMemObjectInfo)
    H(clGetProgramInfo)
    H(clGetProgramBuildInfo)
    // clang-format on
#undef H
}

/* The real functions as the shim sees them. Kept apart from act_cl_next:
 * when the layer got there first, act_cl_next is the layer's target table
 * and must not be replaced by the loader's exports (that would loop back
 * into the layer). */
static struct _cl_icd_dispatch act_cl_preload_next;

static void act_cl_preload_resolve(void)
{
#define X(group, ret, name, params, args)                                                          \
    act_cl_set_entry(&act_cl_preload_next, #name, act_cl_resolver(#name));
#include "cl_api.def"
#undef X
    for (size_t i = 0; i < ACT_ARRAY_SIZE(act_cl_helpers); i++)
        act_cl_set_entry(&act_cl_preload_next, act_cl_helpers[i],
                         act_cl_resolver(act_cl_helpers[i]));
    for (size_t i = 0; i < ACT_ARRAY_SIZE(act_cl_helpers_objects); i++)
        act_cl_set_entry(&act_cl_preload_next, act_cl_helpers_objects[i],
                         act_cl_resolver(act_cl_helpers_objects[i]));
    if (act_cl_mode_claim(ACT_CL_MODE_PRELOAD)) {
        act_cl_next = act_cl_preload_next;
        act_cl_install_wrappers(&act_cl_layer_table);
    }
}

/*
 * Called by the LD_PRELOAD shim at its first forwarded call. `resolve`
 * runs dlsym(RTLD_NEXT, name) inside the shim (RTLD_NEXT is relative to the
 * caller's object, so it must be the shim that asks). Returns the table the
 * shim forwards through: our wrappers, or the real functions when this
 * process is already traced through the layer.
 */
ACT_EXPORT const struct _cl_icd_dispatch *act__cl_preload_table(void *(*resolve)(const char *))
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    act_cl_resolver = resolve;
    pthread_once(&once, act_cl_preload_resolve);
    if (atomic_load(&act_cl_mode) == ACT_CL_MODE_PRELOAD)
        return &act_cl_layer_table;
    return &act_cl_preload_next;
}
