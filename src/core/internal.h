/*
 * internal.h -- what the library's files share and nobody else sees.
 *
 * Data flows one way: sources (src/sources) call the recorder declared
 * here; the timeline reader/builder (src/timeline) reads spool files; the
 * writers (src/writers) read the built timeline. Nothing in this header is
 * part of the public API (include/acceltrace.h).
 */
#ifndef ACT_INTERNAL_H
#define ACT_INTERNAL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "record.h"

#if defined(__GNUC__)
#define ACT_LIKELY(x) __builtin_expect(!!(x), 1)
#define ACT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ACT_HIDDEN __attribute__((visibility("hidden")))
#define ACT_EXPORT __attribute__((visibility("default")))
#define ACT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ACT_LIKELY(x) (x)
#define ACT_UNLIKELY(x) (x)
#define ACT_HIDDEN
#define ACT_EXPORT
#define ACT_PRINTF(a, b)
#endif

#define ACT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- clock.c ---------------------------------------------------------- */

/* The timeline clock: CLOCK_MONOTONIC_RAW nanoseconds. */
static inline uint64_t act_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t act_clock_realtime(void);

/* Fast clock support (clock.c): the TSC's rate against the timeline clock.
 * `usable` is -1 until act_tsc_calibrate() ran, then 1 when the TSC may
 * stand in for CLOCK_MONOTONIC_RAW (invariant TSC, clocksource "tsc"),
 * else 0. `mult` is ns per tick << 32. The per-thread anchors that turn a
 * TSC reading into timeline ns live in recorder.c. */
typedef struct act_tsc_cal {
    _Atomic int usable;
    uint64_t tsc0, ns0; /* origin pair, taken by act_tsc_calibrate */
    _Atomic uint64_t mult;
} act_tsc_cal;
extern act_tsc_cal act_tsc;
/* Calibrate once (~1 ms, at recorder open); returns act_tsc.usable. */
int act_tsc_calibrate(void);
/* A (tsc, ns) pair from the tightest of a few brackets. */
void act_tsc_pair(uint64_t *tsc, uint64_t *ns);
/* Refine the rate with a new pair; returns the rate to use. */
uint64_t act_tsc_refine(uint64_t tsc, uint64_t ns);
/* Offset such that monotonic_raw = realtime + offset, with its error bound
 * (half the tightest bracket of several tries). */
int64_t act_clock_realtime_offset(int64_t *error_ns);

/* ---- log.c ------------------------------------------------------------ */

/* One line on stderr, prefixed "acceltrace: ". Never used on a hot path. */
void act_log(const char *fmt, ...) ACT_PRINTF(1, 2);
void act_vlog(const char *fmt, va_list ap);

/* ---- recorder.c ------------------------------------------------------- */

/*
 * Global recorder state. `act__recording` is the one flag every hot path
 * tests: nonzero while records are being captured in this process.
 */
extern ACT_EXPORT _Atomic int act__recording;
/* Hint read by the inline wrappers in acceltrace.h through the exported
 * act__enter_ptr (annotate.c): set to 1 with act_recorder_enter_hint_on()
 * right after act__recording goes to 1. */
extern ACT_HIDDEN int act__enter;
extern ACT_EXPORT int *const act__enter_ptr;
static inline void act_recorder_enter_hint_on(void)
{
    __atomic_store_n(&act__enter, 1, __ATOMIC_SEQ_CST);
}

/* Per-thread recorder state; opaque outside recorder.c. */
typedef struct act_thread act_thread;

/* Start recording into a spool file in `dir` (created 0700 if missing).
 * Called by start-up when ACCELTRACE_SPOOL_DIR is set, and by in-process
 * sessions. Returns 0 or a negative ACT_E* code. */
int act_recorder_open(const char *dir, uint64_t capacity, uint32_t chunk_size);
/* Publish everything, write final counters, mark the spool sealed and
 * unmap it. Idempotent. */
void act_recorder_close(void);
/* The spool header of this process (NULL when not recording). */
act_spool_header *act_recorder_header(void);
/* Path of this process' spool file ("" when none). */
const char *act_recorder_path(void);

/*
 * Reserve `size` bytes (multiple of 8) for a record of `kind` in the
 * calling thread's chunk and return a pointer to fill in, or NULL when the
 * record must be dropped (it has then been counted). Finish with
 * act_rec_commit(). Between the two calls the thread must not record
 * anything else.
 */
void *act_rec_reserve(uint16_t kind, size_t size);
void act_rec_commit(void);
/* Count a record of `kind` lost for lack of space. */
void act_rec_drop(uint16_t kind);

/* Intern `s` (length `len`) in the calling thread's string table and
 * return its id; 0 when it could not be recorded. */
uint32_t act_str_intern(const char *s, size_t len);
uint32_t act_str_intern_cstr(const char *s);

/* Process-unique ids. */
uint64_t act_corr_next(void);
uint64_t act_range_id_next(void);

/* The recorder's fast timeline clock for the calling thread: the same
 * CLOCK_MONOTONIC_RAW nanoseconds as act_clock_now(), read from the TSC
 * where that is exact (clock.c, recorder.c), never going backwards within
 * a thread. Use it for records written at a high rate. */
uint64_t act_rec_now(void);

/* The range hot path (act_range_push/pop once recording is on): record
 * the PUSH/POP and move the thread's range stack. Return ACT_OK or a
 * negative ACT_E_* (FULL: dropped and counted; UNBALANCED; INVAL). */
int act_recorder_range_push(const char *name);
int act_recorder_range_pop(void);

/* Innermost open range on this thread as an external reference:
 * (thread serial << 32) | range sequence (0 = none). */
uint64_t act_range_current_ext(void);

/* Convenience writers used by sources. Each returns 0 or -1 (dropped). */
int act_rec_api_emit(const char *name, uint64_t start, uint64_t end, uint64_t corr,
                     uint64_t ext, int32_t result, uint32_t source);
int act_rec_error_emit(const char *fmt, ...) ACT_PRINTF(1, 2);

/* Fork handling: the child gets a fresh spool on its next record. */
void act_recorder_atfork_child(void);

#endif
