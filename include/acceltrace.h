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

#ifdef __cplusplus
extern "C" {
#endif

#define ACT_VERSION_MAJOR 0
#define ACT_VERSION_MINOR 1
#define ACT_VERSION_PATCH 0
#define ACT_VERSION_STRING "0.1.0"

/* Error codes. 0 is success; every error is negative. */
#define ACT_OK 0
#define ACT_E_DISABLED (-1)   /* no tool attached / not recording */
#define ACT_E_INVAL (-2)      /* invalid argument (NULL, empty, out of range) */
#define ACT_E_NOMEM (-3)      /* out of memory */
#define ACT_E_IO (-4)         /* file or system call failed */
#define ACT_E_FULL (-5)       /* recorder capacity reached; the record was counted */
#define ACT_E_STATE (-6)      /* call not valid in the current state */
#define ACT_E_JSON (-7)       /* invalid JSON */
#define ACT_E_UNBALANCED (-8) /* pop without a matching push */
#define ACT_E_CONFIG (-9)     /* invalid configuration value */
#define ACT_E_FORMAT (-10)    /* malformed input file */
#define ACT_E_NOTFOUND (-11)  /* no such thing (group, backend, file) */
#define ACT_E_CONFLICT (-12)  /* another tracer already holds the resource */
#define ACT_E_UNSUPPORTED (-13) /* not supported by this platform or build */

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
/* A range that may end on another thread. Returns its id (0 when not
 * recording). */
uint64_t act_range_start(const char *name);
void act_range_end(uint64_t id);
/* An instant event. */
void act_mark(const char *name);
/* A sample of a named counter. */
void act_counter(const char *name, double value);

/*
 * Inline fast path of act_range_push/act_range_pop. With no tool attached
 * an annotation should cost a predictable branch, not a call into the
 * library (NVTX does the same). `*act__enter_ptr` is the library's hint,
 * not API: it is 0 only once start-up has found that no tool is attached,
 * and goes back to 1 before recording starts; while it is 0 the calls
 * return ACT_E_DISABLED without entering the library. Arguments are
 * evaluated exactly once either way. The functions themselves stay
 * exported (for dlsym, ctypes, taking their address); define
 * ACT_NO_INLINE_FASTPATH to always call them.
 *
 * The hint is reached through a constant pointer, not as an exported int:
 * a program's copy relocation of an exported int would be a second copy
 * that the library (linked -Bsymbolic) never writes; a copied pointer
 * still points at the library's flag.
 */
#if !defined(ACT_NO_INLINE_FASTPATH) && (defined(__GNUC__) || defined(__clang__))
extern int *const act__enter_ptr;
static inline int act__range_push_inline(const char *name)
{
    if (__atomic_load_n(act__enter_ptr, __ATOMIC_RELAXED))
        return (act_range_push)(name);
    return ACT_E_DISABLED;
}
static inline int act__range_pop_inline(void)
{
    if (__atomic_load_n(act__enter_ptr, __ATOMIC_RELAXED))
        return (act_range_pop)();
    return ACT_E_DISABLED;
}
#define act_range_push(name) act__range_push_inline(name)
#define act_range_pop()      act__range_pop_inline()
#endif

#if defined(__GNUC__) || defined(__clang__)
static inline void act__scoped_range_pop(int *unused)
{
    (void)unused;
    act_range_pop();
}
#define ACT__CAT2(a, b) a##b
#define ACT__CAT(a, b) ACT__CAT2(a, b)
/* Push a range that is popped when the enclosing scope ends. */
#define ACT_SCOPED_RANGE(name)                                                                     \
    int ACT__CAT(act__scoped_, __LINE__) __attribute__((cleanup(act__scoped_range_pop), unused)) = \
        act_range_push(name)
#endif

/* ---- metadata --------------------------------------------------------- */

/* Add a top-level member `key` with string `value` to the trace. */
int act_metadata_set(const char *key, const char *value);
/* Add a top-level member `key` whose value is the JSON text `json`
 * (validated; ACT_E_JSON when invalid, and nothing is recorded). */
int act_metadata_set_json(const char *key, const char *json);

/* ---- capture control -------------------------------------------------- */

/* Open / close the capture range (with --capture-range=api). */
int act_start(void);
int act_stop(void);

/* ---- in-process sessions ---------------------------------------------- */

typedef struct act_options {
    size_t struct_size;      /* sizeof(act_options), for forward compatibility */
    uint64_t buffer_size;    /* recorder capacity in bytes; 0 = default */
    const char *spool_dir;   /* where the spool goes; NULL = a private temp dir */
    int capture_api;         /* nonzero: record only between act_start/act_stop */
    const char *trace_name;  /* "traceName" in the trace; NULL = program name */
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
