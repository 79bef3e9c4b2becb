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
 * act_init() (which applies the hook groups; start.c). Loading the layer
 * or the shim initialises nothing.
 */
#include <pthread.h>
#include <string.h>

#include "cl_source.h"
#include "init/hooks.h"
#include "init/init.h"

struct _cl_icd_dispatch act_cl_next;
_Atomic int act_cl_mode;

/* The table handed to the loader (layer.c) or to the preload shim. */
struct _cl_icd_dispatch act_cl_layer_table;

int act_cl_mode_claim(int mode)
{
    int expected = ACT_CL_MODE_NONE;
    if (atomic_compare_exchange_strong(&act_cl_mode, &expected, mode))
        return 1;
    return expected == mode;
}

/* The layer's table is written by clInitLayer (the ICD loader's thread)
 * and by the hooks' apply (whichever thread starts the library first, an
 * annotation's maybe): every entry is stored atomically, so that the two
 * never race; both write our wrapper into an intercepted entry, whatever
 * the order. */
void act_cl_install_wrappers(struct _cl_icd_dispatch *table)
{
#define X(group, ret, name, params, args)                                                          \
    __atomic_store_n(&table->name, act_cl_w_##name, __ATOMIC_RELAXED);
#include "cl_api.def"
#undef X
}

void act_cl_table_fill(struct _cl_icd_dispatch *table, const struct _cl_icd_dispatch *from,
                       size_t n)
{
    /* The dispatch table is an array of function pointers. */
    void **to = (void **)(void *)table;
    void *const *src = (void *const *)(const void *)from;
    for (size_t i = 0; i < n; i++)
        __atomic_store_n(&to[i], src[i], __ATOMIC_RELAXED);
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
        __atomic_store_n(&act_cl_layer_table.name, act_cl_w_##name, __ATOMIC_RELAXED);             \
        atomic_store_explicit(&act_cl_armed_##name, 1, memory_order_release);                      \
        return 0;                                                                                  \
    }                                                                                              \
    ACT_HOOK(group, name, act_cl_apply_##name);
#include "cl_api.def"
#undef X

/* ---- preload mode --------------------------------------------------------- */

/* Entry points the wrappers call besides the intercepted ones. */
static const char *const act_cl_helpers[] = {
    "clGetKernelInfo",    "clRetainEvent",           "clReleaseEvent",
    "clSetEventCallback", "clGetEventInfo",          "clGetDeviceInfo",
    "clGetImageInfo",     "clGetDeviceAndHostTimer", "clGetHostTimer",
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
    H(clGetMemObjectInfo)
    H(clGetProgramInfo)
    H(clGetProgramBuildInfo)
    // clang-format on
#undef H
}

/*
 * An entry point the shim could not resolve is never called: it gets a
 * stub that fails the call (CL_INVALID_OPERATION, or NULL for functions
 * returning an object), says so once in the trace and counts every such
 * call (the count is reported at stop).
 */
static _Atomic uint64_t act_cl_unforwarded;
static _Atomic int act_cl_unforwarded_said;

static void act_cl_unforwarded_report(void)
{
    uint64_t n = atomic_load(&act_cl_unforwarded);
    if (n)
        act_rec_error_emit("opencl: %llu calls could not be forwarded (real entry point not found)",
                           (unsigned long long)n);
}

static void act_cl_unforwarded_note(const char *name)
{
    atomic_fetch_add(&act_cl_unforwarded, 1);
    if (!atomic_exchange(&act_cl_unforwarded_said, 1)) {
        act_rec_error_emit("opencl: %s cannot be forwarded: its real entry point was not found; "
                           "the call fails and is counted",
                           name);
        act_lifecycle_on_stop("opencl.unforwarded", act_cl_unforwarded_report);
    }
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define X(group, ret, name, params, args)                                                          \
    static ret CL_API_CALL act_cl_missing_##name params                                            \
    {                                                                                              \
        act_cl_unforwarded_note(#name);                                                            \
        /* cl_int calls fail with CL_INVALID_OPERATION, the rest give NULL                         \
         * (or nothing: clSVMFree) */                                                              \
        return (ret)(intptr_t) _Generic((ret *)0, cl_int * : CL_INVALID_OPERATION, default : 0);   \
    }
#include "cl_api.def"
#undef X
#pragma GCC diagnostic pop

/* Put a failing stub where an intercepted entry point is missing. */
static void act_cl_fill_missing(struct _cl_icd_dispatch *t)
{
#define X(group, ret, name, params, args)                                                          \
    if (!t->name)                                                                                  \
        t->name = act_cl_missing_##name;
#include "cl_api.def"
#undef X
}

/* The helpers the wrappers call unconditionally (the timer pair is
 * optional: clock.c checks it). */
static int act_cl_helpers_complete(const struct _cl_icd_dispatch *t)
{
    return t->clGetKernelInfo && t->clRetainEvent && t->clReleaseEvent && t->clSetEventCallback &&
           t->clGetEventInfo && t->clGetDeviceInfo && t->clGetImageInfo && t->clFlush &&
           t->clRetainCommandQueue && t->clReleaseCommandQueue && t->clEnqueueMarkerWithWaitList &&
           t->clWaitForEvents && t->clGetEventProfilingInfo;
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
    int complete = act_cl_helpers_complete(&act_cl_preload_next);
    act_cl_fill_missing(&act_cl_preload_next);
    if (!complete) {
        /* Not traceable this way: everything passes straight through, as
         * untraced (the layer may still claim the process). */
        if (atomic_load(&act_cl_mode) == ACT_CL_MODE_NONE) {
            act_cl_start_slow();
            act_rec_error_emit("opencl: the preload shim cannot find libOpenCL's functions; "
                               "OpenCL calls are not traced");
        }
        return;
    }
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
