/*
 * fake_log.h -- the call log shared by the fake vendor runtimes of the
 * runtime-table tests (fake_cudart.c, fake_ascendcl.c). Each fake records
 * every call with its arguments, in order, so a test can check that what
 * act_rt passed reached the "runtime" unchanged, how often an
 * initialisation ran, and that a rejected call never arrived. The test
 * reads the log through the exported fake_* functions, found with dlsym
 * on the same library act_rt loaded.
 */
#ifndef FAKE_LOG_H
#define FAKE_LOG_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define FAKE_EXPORT  __attribute__((visibility("default")))
#define FAKE_LOG_MAX 4096

typedef struct fake_call {
    char name[48];
    uint64_t arg[3];
} fake_call;

static fake_call fake_log[FAKE_LOG_MAX];
static int fake_nlog;
static int fake_loads;
static pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER;

static void fake_record(const char *name, uint64_t a0, uint64_t a1, uint64_t a2)
{
    pthread_mutex_lock(&fake_mu);
    if (fake_nlog < FAKE_LOG_MAX) {
        fake_call *c = &fake_log[fake_nlog++];
        strncpy(c->name, name, sizeof c->name - 1);
        c->arg[0] = a0, c->arg[1] = a1, c->arg[2] = a2;
    }
    pthread_mutex_unlock(&fake_mu);
}

__attribute__((constructor)) static void fake_loaded(void)
{
    fake_loads++;
}

/* How many times the library's constructor ran (it is loaded once). */
FAKE_EXPORT int fake_load_count(void)
{
    return fake_loads;
}

FAKE_EXPORT int fake_call_count(void)
{
    pthread_mutex_lock(&fake_mu);
    int n = fake_nlog;
    pthread_mutex_unlock(&fake_mu);
    return n;
}

/* Copy call i into *out; 0 when it exists. */
FAKE_EXPORT int fake_call_get(int i, fake_call *out)
{
    pthread_mutex_lock(&fake_mu);
    int ok = i >= 0 && i < fake_nlog;
    if (ok)
        *out = fake_log[i];
    pthread_mutex_unlock(&fake_mu);
    return ok ? 0 : -1;
}

/* Number of calls to `name` so far. */
FAKE_EXPORT int fake_calls_named(const char *name)
{
    int n = 0;
    pthread_mutex_lock(&fake_mu);
    for (int i = 0; i < fake_nlog; i++)
        n += !strcmp(fake_log[i].name, name);
    pthread_mutex_unlock(&fake_mu);
    return n;
}

FAKE_EXPORT void fake_log_clear(void)
{
    pthread_mutex_lock(&fake_mu);
    fake_nlog = 0;
    pthread_mutex_unlock(&fake_mu);
}

#endif
