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
 *
 * RTLD_NEXT only sees the global scope. A library dlopen()ed with
 * RTLD_LOCAL (every Python extension module: pyopencl's _cl, OpenCV's
 * cv2) brings its libOpenCL in privately, yet its calls land here (a
 * preloaded symbol comes first for everyone). Then the real entry point is
 * taken from the loaded library that defines clGetPlatformIDs:
 * libOpenCL.so.1 if it is loaded, else any loaded object that defines it
 * (a wheel's bundled libOpenCL-<hash>.so). Nothing is ever loaded for
 * this: the program's calls come from code linked against a library that
 * is loaded already. What cannot be found is never called (dispatch.c);
 * when the functions tracing needs are missing, every call passes
 * through untouched.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../cl_source.h"

const struct _cl_icd_dispatch *act__cl_preload_table(void *(*resolve)(const char *));

/* Nonzero when `fn` lies in this shim (a scope that reaches back to us). */
static int act_pl_is_ours(void *fn)
{
    Dl_info a, b;
    return dladdr(fn, &a) && dladdr((void *)act_pl_is_ours, &b) && a.dli_fbase == b.dli_fbase;
}

#define ACT_PL_MAX_OBJECTS 512
#define ACT_PL_PROBE       "clGetPlatformIDs"

typedef struct {
    char *paths[ACT_PL_MAX_OBJECTS];
    size_t n;
} act_pl_objects;

static int act_pl_collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    act_pl_objects *o = arg;
    if (info->dlpi_name && info->dlpi_name[0] && o->n < ACT_PL_MAX_OBJECTS) {
        o->paths[o->n] = strdup(info->dlpi_name);
        if (o->paths[o->n])
            o->n++;
    }
    return 0;
}

/* A handle on the loaded object that defines ACT_PL_PROBE itself, found
 * from the scope of `path` (already loaded; never loads anything). */
static void *act_pl_provider_in(const char *path)
{
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return NULL;
    void *fn = dlsym(h, ACT_PL_PROBE);
    dlclose(h);
    Dl_info di;
    if (!fn || act_pl_is_ours(fn) || !dladdr(fn, &di) || !di.dli_fname)
        return NULL;
    return dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
}

/* The loaded libOpenCL (any object defining the probe, those named
 * libOpenCL first), or NULL. Paths are collected before any dlopen:
 * dlopen must not run inside dl_iterate_phdr. */
static void *act_pl_provider(void)
{
    void *h = act_pl_provider_in("libOpenCL.so.1");
    act_pl_objects *o = h ? NULL : calloc(1, sizeof *o);
    if (!o)
        return h;
    dl_iterate_phdr(act_pl_collect, o);
    for (size_t i = 0; i < o->n && !h; i++)
        if (strstr(o->paths[i], "libOpenCL"))
            h = act_pl_provider_in(o->paths[i]);
    for (size_t i = 0; i < o->n; i++) {
        if (!h)
            h = act_pl_provider_in(o->paths[i]);
        free(o->paths[i]);
    }
    free(o);
    return h;
}

/*
 * Every entry point comes from one library: the next in the global scope
 * when it defines the probe (the normal case), else the loaded library
 * that does. RTLD_NEXT is relative to the object that calls dlsym, found
 * from the return address: the calls must not become tail calls (they
 * would then be made "from" libacceltrace.so, after libOpenCL in search
 * order). Called once per name, serialised by the caller (pthread_once).
 */
static void *act_pl_resolve(const char *name)
{
    static void *handle;
    static int decided;
    if (!decided) {
        void *probe = dlsym(RTLD_NEXT, ACT_PL_PROBE);
        __asm__ volatile("" ::: "memory");
        handle = probe ? NULL : act_pl_provider();
        decided = 1;
    }
    void *fn = handle ? dlsym(handle, name) : dlsym(RTLD_NEXT, name);
    __asm__ volatile("" ::: "memory");
    return fn && !act_pl_is_ours(fn) ? fn : NULL;
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
