/*
 * preload.c -- the LD_PRELOAD shim, libacceltrace_preload.so: the
 * fallback where an ICD-loader layer cannot be used (loaders without
 * OPENCL_LAYERS support). Built separately from libacceltrace.so (see
 * ../build.cmake) on purpose: exporting clEnqueue* from the main library
 * would interpose on every program that links both it and libOpenCL.
 *
 * Each exported cl* symbol of cl_api.def forwards through the table that
 * libacceltrace hands back at the first call (act__cl_preload_table): our
 * wrappers, which call the real functions this shim resolved with
 * dlsym(RTLD_NEXT) -- lazily, because libOpenCL may not be loaded yet
 * when the shim is. Loading the shim initialises nothing. A program that
 * dlopen()s libOpenCL and calls through dlsym(handle) bypasses the shim;
 * the layer does not have that gap.
 */
#include <dlfcn.h>
#include <stdatomic.h>

#include "../cl_source.h"

const struct _cl_icd_dispatch *act__cl_preload_table(void *(*resolve)(const char *));

/* RTLD_NEXT is relative to the object that calls dlsym, found from the
 * return address: the call must not become a tail call (it would then be
 * made "from" libacceltrace.so, after libOpenCL in search order). */
static void *act_pl_resolve(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    __asm__ volatile("" ::: "memory");
    return fn;
}

static const struct _cl_icd_dispatch *act_pl_table(void)
{
    static const struct _cl_icd_dispatch *_Atomic table;
    const struct _cl_icd_dispatch *t = atomic_load_explicit(&table, memory_order_acquire);
    if (ACT_UNLIKELY(!t)) {
        t = act__cl_preload_table(act_pl_resolve);
        atomic_store_explicit(&table, t, memory_order_release);
    }
    return t;
}

#define X(group, ret, name, params, args)                                                          \
    ACT_EXPORT ret CL_API_CALL name params                                                         \
    {                                                                                              \
        return act_pl_table()->name args;                                                          \
    }
#include "../cl_api.def"
#undef X
