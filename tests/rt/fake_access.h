/*
 * fake_access.h -- how the runtime-table tests read the call log of a
 * fake vendor library (fakes/fake_log.h): find the copy act_rt loaded
 * (RTLD_NOLOAD, so looking never loads it) and call its fake_* functions.
 */
#ifndef FAKE_ACCESS_H
#define FAKE_ACCESS_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct fake_call {
    char name[48];
    uint64_t arg[3];
} fake_call;

/* The fake at `path` if it is loaded in this process, else NULL. */
static inline void *fake_loaded_handle(const char *path)
{
    return dlopen(path, RTLD_NOW | RTLD_NOLOAD);
}

static inline int fake_count(void *h)
{
    int (*f)(void) = (int (*)(void))dlsym(h, "fake_call_count");
    return f ? f() : -1;
}

static inline int fake_named(void *h, const char *name)
{
    int (*f)(const char *) = (int (*)(const char *))dlsym(h, "fake_calls_named");
    return f ? f(name) : -1;
}

static inline int fake_loads(void *h)
{
    int (*f)(void) = (int (*)(void))dlsym(h, "fake_load_count");
    return f ? f() : -1;
}

static inline int fake_get(void *h, int i, fake_call *out)
{
    int (*f)(int, fake_call *) = (int (*)(int, fake_call *))dlsym(h, "fake_call_get");
    return f ? f(i, out) : -1;
}

static inline void fake_clear(void *h)
{
    void (*f)(void) = (void (*)(void))dlsym(h, "fake_log_clear");
    if (f)
        f();
}

/* The last call named `name`; 0 when found. */
static inline int fake_last(void *h, const char *name, fake_call *out)
{
    for (int i = fake_count(h) - 1; i >= 0; i--)
        if (fake_get(h, i, out) == 0 && !strcmp(out->name, name))
            return 0;
    return -1;
}

#endif
