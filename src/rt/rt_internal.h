/*
 * rt_internal.h -- what the runtime-table backends (rt_opencl.c,
 * rt_cuda.c, rt_ascend.c) share with rt.c: the per-thread last-error
 * text, run-once initialisation that remembers its failure, and loading a
 * runtime library from a list of candidates. Nothing here is public; the
 * public side is include/acceltrace_rt.h.
 */
#ifndef ACT_RT_INTERNAL_H
#define ACT_RT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "acceltrace_rt.h"
#include "core/rec_write.h"

/* The three tables (defined in their backend files). */
extern const struct act_rt act_rt__opencl;
extern const struct act_rt act_rt__cuda;
extern const struct act_rt act_rt__ascend;

/* Set the calling thread's last-error text (printf-style). */
void act_rt__set_error(const char *fmt, ...) ACT_PRINTF(1, 2);
/* Set it and return `code`, for one-line error returns. */
int act_rt__fail(int code, const char *fmt, ...) ACT_PRINTF(2, 3);

/*
 * Run-once step (load a library, initialise a runtime). The step runs the
 * first time under a mutex; its result and failure text are kept, so every
 * later caller gets the same code and the same act_rt_last_error() text
 * without running it again. The fast path is one acquire load.
 */
typedef struct act_rt_once {
    pthread_mutex_t mu;
    _Atomic int done;
    int rc;
    char why[512];
} act_rt_once;
#define ACT_RT_ONCE_INIT                                                                           \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, 0, 0, ""                                                        \
    }

/* `fn` returns ACT_RT_SUCCESS or a code, writing the reason into why. */
int act_rt__once(act_rt_once *o, int (*fn)(char *why, size_t len));

/*
 * dlopen the first loadable of: the file named by the variable `env_var`
 * (or, when that is unset, by its older name `old_var`; when set it must be
 * non-empty, and then nothing else is tried), or
 * else each of `names` in order (a name with no '/' goes through the
 * loader's search path). An already loaded candidate is reused
 * (RTLD_NOLOAD first). Returns the handle, or NULL with the reason in why
 * and *code set (ACT_RT_ERROR_NO_LIBRARY or ACT_RT_ERROR_CONFIG).
 */
void *act_rt__dlopen(const char *env_var, const char *old_var, const char *const *names, size_t n,
                     int *code, char *why, size_t len);

/* Resolve `name` in `lib`; NULL when absent (the caller reports it). */
void *act_rt__dlsym(void *lib, const char *name);

/* A runtime call's result, passed through unchanged; when it is an error
 * the last-error text names the call ("cuda: cudaStreamCreate returned 2"). */
int act_rt__ret(const char *backend, const char *call, int rc);

/* Common argument checks; each returns ACT_RT_SUCCESS or
 * ACT_RT_ERROR_INVALID_PARAM with the last-error text set. */
int act_rt__check_register(const char *backend, const void *ptr, size_t size, unsigned flags);
int act_rt__check_ptr(const char *backend, const char *fn, const void *ptr);

/* Text of an ACT_RT_ERROR_* / ACT_E_* code, or NULL when `code` is
 * neither (then it is the backend's own). */
const char *act_rt__common_string(int code);

#endif
