/*
 * rt.c -- the runtime-API table's front: choosing a backend's table by
 * name or the active one, the per-thread last-error text, run-once
 * initialisation and library loading shared by the backends
 * (rt_opencl.c, rt_cuda.c, rt_ascend.c). See include/acceltrace_rt.h.
 */
#include <assert.h>
#include <ctype.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "rt_internal.h"

/* The calling thread's last-error text: on the heap, made at the thread's
 * first failure and freed when it exits. Only a pointer is thread-local:
 * the library's static TLS must stay small, or a second dlopen'ed copy
 * cannot load (init.tls_budget). */
#define LAST_ERROR_LEN 768
static _Thread_local char *last_error;
static pthread_key_t last_error_key;
static pthread_once_t last_error_once = PTHREAD_ONCE_INIT;

/* At thread exit (on that thread): a later destructor's failure makes a
 * new buffer, not a write into this one. */
static void last_error_free(void *p)
{
    free(p);
    last_error = NULL;
}

static void last_error_key_make(void)
{
    (void)pthread_key_create(&last_error_key, last_error_free);
}

/* This thread's buffer; NULL when it cannot be had (out of memory). */
static char *last_error_buf(void)
{
    if (!last_error) {
        pthread_once(&last_error_once, last_error_key_make);
        last_error = malloc(LAST_ERROR_LEN);
        if (last_error)
            (void)pthread_setspecific(last_error_key, last_error);
    }
    return last_error;
}

ACT_EXPORT const char *act_rt_last_error(void)
{
    return last_error ? last_error : "";
}

static void last_error_vset(const char *fmt, va_list ap)
{
    char *b = last_error_buf();
    if (b)
        vsnprintf(b, LAST_ERROR_LEN, fmt, ap);
}

void act_rt__set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    last_error_vset(fmt, ap);
    va_end(ap);
}

int act_rt__fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    last_error_vset(fmt, ap);
    va_end(ap);
    return code;
}

int act_rt__once(act_rt_once *o, int (*fn)(char *why, size_t len))
{
    if (!atomic_load_explicit(&o->done, memory_order_acquire)) {
        pthread_mutex_lock(&o->mu);
        if (!atomic_load_explicit(&o->done, memory_order_relaxed)) {
            o->why[0] = '\0';
            o->rc = fn(o->why, sizeof o->why);
            atomic_store_explicit(&o->done, 1, memory_order_release);
        }
        pthread_mutex_unlock(&o->mu);
    }
    /* Every caller, not only the first, learns why it failed. */
    if (o->rc != ACT_RT_SUCCESS)
        act_rt__set_error("%s", o->why);
    return o->rc;
}

void *act_rt__dlopen(const char *env_var, const char *old_var, const char *const *names, size_t n,
                     int *code, char *why, size_t len)
{
    /* secure_getenv: a set-uid program must not load a library the
     * caller's environment names. The older name still works when the
     * new one is not set. */
    const char *forced = env_var ? secure_getenv(env_var) : NULL;
    if (!forced && old_var && (forced = secure_getenv(old_var)))
        env_var = old_var;
    if (forced) {
        size_t n = strlen(forced);
        if (!n || isspace((unsigned char)forced[0]) || isspace((unsigned char)forced[n - 1])) {
            *code = ACT_RT_ERROR_CONFIG;
            snprintf(why, len,
                     "Invalid value for %s: '%.300s'. Allowed: the path of the library file, "
                     "without surrounding spaces",
                     env_var, forced);
            return NULL;
        }
        void *h = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            *code = ACT_RT_ERROR_NO_LIBRARY;
            snprintf(why, len, "cannot load %s (from %s): %s", forced, env_var, dlerror());
        }
        return h;
    }
    /* Reuse a copy the program already loaded: two copies of a runtime in
     * one process would be two runtimes. */
    for (size_t i = 0; i < n; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (h)
            return h;
    }
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            act_self_loaded_note(env_var); /* not the program's use */
            return h;
        }
        const char *e = dlerror();
        if (used < len)
            used += (size_t)snprintf(why + used, len - used, "%scannot load %s: %s", i ? "; " : "",
                                     names[i], e ? e : "unknown error");
    }
    *code = ACT_RT_ERROR_NO_LIBRARY;
    if (!n)
        snprintf(why, len, "no library to load");
    return NULL;
}

void *act_rt__dlsym(void *lib, const char *name)
{
    return lib ? dlsym(lib, name) : NULL;
}

int act_rt__ret(const char *backend, const char *call, int rc)
{
    if (rc != 0)
        act_rt__set_error("%s: %s returned %d", backend, call, rc);
    return rc;
}

int act_rt__check_ptr(const char *backend, const char *fn, const void *ptr)
{
    if (!ptr)
        return act_rt__fail(ACT_RT_ERROR_INVALID_PARAM, "%s: %s: NULL pointer", backend, fn);
    return ACT_RT_SUCCESS;
}

int act_rt__check_register(const char *backend, const void *ptr, size_t size, unsigned flags)
{
    const unsigned known = ACT_RT_HOST_REG_PINNED | ACT_RT_HOST_REG_MAPPED;
    if (!ptr)
        return act_rt__fail(ACT_RT_ERROR_INVALID_PARAM, "%s: host_register: NULL pointer", backend);
    if (!size)
        return act_rt__fail(ACT_RT_ERROR_INVALID_PARAM, "%s: host_register: size 0", backend);
    if ((uintptr_t)ptr + size < (uintptr_t)ptr)
        return act_rt__fail(ACT_RT_ERROR_INVALID_PARAM,
                            "%s: host_register: range %p+%zu wraps the address space", backend, ptr,
                            size);
    if (!flags || (flags & ~known))
        return act_rt__fail(ACT_RT_ERROR_INVALID_PARAM,
                            "%s: host_register: flags 0x%x; allowed: a non-empty combination "
                            "of ACT_RT_HOST_REG_PINNED (0x%x) and ACT_RT_HOST_REG_MAPPED (0x%x)",
                            backend, flags, ACT_RT_HOST_REG_PINNED, ACT_RT_HOST_REG_MAPPED);
    return ACT_RT_SUCCESS;
}

const char *act_rt__common_string(int code)
{
    switch (code) {
    case ACT_RT_SUCCESS: return "success";
    case ACT_RT_ERROR_INVALID_PARAM: return "invalid parameter (the runtime was not called)";
    case ACT_RT_ERROR_NOT_REGISTERED: return "host memory not registered";
    case ACT_RT_ERROR_ALREADY_REGISTERED: return "host memory already registered";
    case ACT_RT_ERROR_INVALID_HANDLE: return "invalid stream handle";
    case ACT_RT_ERROR_INVALID_DEVICE: return "invalid device index";
    case ACT_RT_ERROR_NO_LIBRARY: return "runtime library not found";
    case ACT_RT_ERROR_NO_SYMBOL: return "runtime library lacks a required function";
    case ACT_RT_ERROR_NO_DEVICE: return "no device";
    case ACT_RT_ERROR_NOMEM: return "out of memory";
    case ACT_RT_ERROR_UNSUPPORTED: return "not supported by this build";
    case ACT_RT_ERROR_CONFIG: return "invalid configuration variable";
    default: break;
    }
    if (code < 0 && code > -100)
        return act_strerror(code);
    if (code < 0)
        return "unknown acceltrace runtime-table error";
    return NULL;
}

/* ---- table selection --------------------------------------------------- */

/* Order of preference for act_rt(): real accelerators first, OpenCL
 * (which also runs on CPUs) last. */
static const struct act_rt *const backends[] = {&act_rt__cuda, &act_rt__ascend, &act_rt__opencl};

ACT_EXPORT const struct act_rt *act_rt_for(const char *backend)
{
    if (!backend) {
        act_rt__set_error("act_rt_for: NULL backend name; known: cuda, ascend, opencl");
        return NULL;
    }
    for (size_t i = 0; i < ACT_ARRAY_SIZE(backends); i++)
        if (!strcmp(backends[i]->name, backend))
            return backends[i];
    act_rt__set_error("act_rt_for: unknown backend '%s'; known: cuda, ascend, opencl", backend);
    return NULL;
}

static const struct act_rt *_Atomic active;
static pthread_once_t active_once = PTHREAD_ONCE_INIT;

static void active_choose(void)
{
    const struct act_rt *chosen = &act_rt__opencl;
    for (size_t i = 0; i < ACT_ARRAY_SIZE(backends); i++) {
        int n = 0;
        if (backends[i]->device_count(&n) == ACT_RT_SUCCESS && n > 0) {
            chosen = backends[i];
            break;
        }
    }
    atomic_store_explicit(&active, chosen, memory_order_release);
}

ACT_EXPORT const struct act_rt *act_rt(void)
{
    pthread_once(&active_once, active_choose);
    const struct act_rt *t = atomic_load_explicit(&active, memory_order_acquire);
    assert(t);
    return t;
}
