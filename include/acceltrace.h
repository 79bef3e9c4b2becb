/*
 * acceltrace.h -- the public C API of acceltrace, a vendor-neutral
 * accelerator profiler.
 *
 * Everything here is safe to call whether or not a tool is attached. With
 * no tool attached (the program was not started by `acceltrace run` and no
 * in-process session is open) every annotation call costs one predictable
 * branch and returns ACT_E_DISABLED or does nothing.
 *
 * Naming: act_<noun>_<verb>. Errors are negative ACT_E_* codes;
 * act_strerror() turns one into text.
 */
#ifndef ACCELTRACE_H
#define ACCELTRACE_H

#include <stddef.h>
#include <stdint.h>

/* ACT_VERSION_MAJOR/MINOR/PATCH and ACT_VERSION_STRING, generated at build
 * time from the project's version (CMakeLists.txt). */
#include "acceltrace_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes, one list: name, value, text (act_strerror). 0 is success;
 * every error is negative. python/acceltrace/_errors.py names the same
 * codes (python/tests/test_errors.py checks). */
#define ACT_ERRORS(X)                                                                              \
    X(ACT_OK, 0, "success")                                                                        \
    X(ACT_E_DISABLED, -1, "no tool attached (not recording)")                                      \
    X(ACT_E_INVAL, -2, "invalid argument")                                                         \
    X(ACT_E_NOMEM, -3, "out of memory")                                                            \
    X(ACT_E_IO, -4, "input/output error")                                                          \
    X(ACT_E_FULL, -5, "recorder capacity reached (record counted as dropped)")                     \
    X(ACT_E_STATE, -6, "not valid in the current state")                                           \
    X(ACT_E_JSON, -7, "invalid JSON")                                                              \
    X(ACT_E_UNBALANCED, -8, "pop without a matching push")                                         \
    X(ACT_E_CONFIG, -9, "invalid configuration value")                                             \
    X(ACT_E_FORMAT, -10, "malformed input")                                                        \
    X(ACT_E_NOTFOUND, -11, "not found")                                                            \
    X(ACT_E_CONFLICT, -12, "another tracer holds the resource")                                    \
    X(ACT_E_UNSUPPORTED, -13, "not supported")

enum act_error {
#define ACT__ERROR_ENUM(name, value, text) name = value,
    ACT_ERRORS(ACT__ERROR_ENUM)
#undef ACT__ERROR_ENUM
};

/* Text for an error code (never NULL). */
const char *act_strerror(int err);
/* The library's version string, e.g. "0.1.0". Never starts anything. */
const char *act_version(void);
/* Nonzero while this process is recording. Never starts anything. */
int act_is_enabled(void);

/* ---- annotations ------------------------------------------------------ */

/* Open a range named `name` on the calling thread; ranges nest. */
int act_range_push(const char *name);
/* Close the innermost range of the calling thread. */
int act_range_pop(void);
/* A range that may end on another thread. Returns its id for
 * act_range_end(): 0 when no tool is attached (or name is NULL); nonzero
 * otherwise, also while the capture window is closed (the end is then
 * counted as outside the window, like the start). An id that
 * act_range_start() never returned is counted in the trace's
 * `invalid_range_ends` and nothing is written. */
uint64_t act_range_start(const char *name);
void act_range_end(uint64_t id);
/* An instant event. */
void act_mark(const char *name);
/* A sample of a named counter. */
void act_counter(const char *name, double value);
/* Name an OS thread of this process in the trace (tid 0: the calling
 * thread), as nvtxNameOsThread does: its lanes read "name (tid)". The
 * thread's own OS name is left as it is. */
void act_thread_name(uint32_t tid, const char *name);

/*
 * The no-tool fast path. `act__idle` is internal: nonzero once start-up
 * found no tool attached (no launcher, no session). The wrappers below
 * test it in the caller, so with no tool an annotation costs one load and
 * a predictable branch, without a call into the library. Arguments are
 * always evaluated. Define ACT_NO_INLINE to call the library directly.
 *
 * Programs read the flag through the constant pointer act__idle_ptr, not
 * as the exported int: a PIE program that names an exported int gets its
 * own copy of it (a copy relocation), which the library -- linked
 * -Bsymbolic, so bound to its own definition -- never writes.
 */
extern int act__idle;
extern int *const act__idle_ptr;
#if (defined(__GNUC__) || defined(__clang__)) && !defined(ACT_NO_INLINE)
#define ACT__IDLE() __builtin_expect(__atomic_load_n(act__idle_ptr, __ATOMIC_RELAXED), 1)
static inline int act__range_push_fast(const char *name)
{
    return ACT__IDLE() ? ACT_E_DISABLED : (act_range_push)(name);
}
static inline int act__range_pop_fast(void)
{
    return ACT__IDLE() ? ACT_E_DISABLED : (act_range_pop)();
}
static inline uint64_t act__range_start_fast(const char *name)
{
    return ACT__IDLE() ? 0 : (act_range_start)(name);
}
static inline void act__range_end_fast(uint64_t id)
{
    if (!ACT__IDLE())
        (act_range_end)(id);
}
static inline void act__mark_fast(const char *name)
{
    if (!ACT__IDLE())
        (act_mark)(name);
}
static inline void act__counter_fast(const char *name, double value)
{
    if (!ACT__IDLE())
        (act_counter)(name, value);
}
#define act_range_push  act__range_push_fast
#define act_range_pop   act__range_pop_fast
#define act_range_start act__range_start_fast
#define act_range_end   act__range_end_fast
#define act_mark        act__mark_fast
#define act_counter     act__counter_fast
#endif

#if defined(__GNUC__) || defined(__clang__)
static inline void act__scoped_range_pop(int *unused)
{
    (void)unused;
    act_range_pop();
}
#define ACT__CAT2(a, b) a##b
#define ACT__CAT(a, b)  ACT__CAT2(a, b)
/* Push a range that is popped when the enclosing scope ends. */
#define ACT_SCOPED_RANGE(name)                                                                     \
    int ACT__CAT(act__scoped_, __LINE__) __attribute__((cleanup(act__scoped_range_pop), unused)) = \
        act_range_push(name)
#endif

/* ---- metadata --------------------------------------------------------- */

/* Add a top-level member `key` with string `value` to the trace. */
int act_metadata_set(const char *key, const char *value);
/* Add a top-level member `key` whose value is the JSON text `json`
 * (validated; ACT_E_JSON when invalid or nested deeper than
 * ACT_METADATA_MAX_DEPTH arrays and objects, and nothing is recorded:
 * every JSON reader can then load the trace). Integers of any size are
 * valid JSON. */
#define ACT_METADATA_MAX_DEPTH 64
int act_metadata_set_json(const char *key, const char *json);

/* ---- capture control -------------------------------------------------- */

/* Open / close the capture range (with --capture-range=api). */
int act_start(void);
int act_stop(void);

/* ---- in-process sessions ---------------------------------------------- */

typedef struct act_options {
    size_t struct_size;     /* sizeof(act_options), for forward compatibility */
    uint64_t buffer_size;   /* recorder capacity in bytes; 0 = automatic, as for run */
    const char *spool_dir;  /* where the spool goes; NULL = a private temp dir */
    int capture_api;        /* nonzero: record only between act_start/act_stop */
    const char *trace_name; /* "traceName" in the trace; NULL = program name */
    /* Python frames attached to each launch, copy and synchronisation made
     * from Python (1..64; 0 = ACCELTRACE_PYTHON_BACKTRACE, off by default);
     * python_backtrace_all nonzero: to every intercepted call. */
    int python_backtrace;
    int python_backtrace_all;
} act_options;

/* Begin recording in this process without a launcher. `opts` may be NULL. */
int act_session_begin(const act_options *opts);
/* Stop recording, drain device activity and write the Chrome trace to
 * `trace_path` (NULL: just stop and discard). */
int act_session_end(const char *trace_path);

#ifdef __cplusplus
}
#endif

#endif
