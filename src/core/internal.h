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
#define ACT_LIKELY(x)    __builtin_expect(!!(x), 1)
#define ACT_UNLIKELY(x)  __builtin_expect(!!(x), 0)
#define ACT_HIDDEN       __attribute__((visibility("hidden")))
#define ACT_EXPORT       __attribute__((visibility("default")))
#define ACT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ACT_LIKELY(x)   (x)
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
 * `usable` is ACT_TSC_UNKNOWN until act_tsc_calibrate() ran (and
 * ACT_TSC_CALIBRATING while it runs), then 1 when the TSC may
 * stand in for CLOCK_MONOTONIC_RAW (invariant TSC, clocksource "tsc"),
 * else 0. `mult` is ns per tick << 32. The per-thread anchors that turn a
 * TSC reading into timeline ns live in recorder.c. */
typedef struct act_tsc_cal {
    _Atomic int usable;
    uint64_t tsc0, ns0; /* origin pair, taken by act_tsc_calibrate */
    _Atomic uint64_t mult;
} act_tsc_cal;
extern act_tsc_cal act_tsc;
enum { ACT_TSC_UNKNOWN = -1, ACT_TSC_CALIBRATING = -2 };
/* Calibrate once (~1 ms, on first use of the fast clock); 1 when the TSC
 * is usable, 0 when not or while another thread is calibrating. */
int act_tsc_calibrate(void);
/* In a forked child: a calibration the parent had under way is redone. */
void act_tsc_atfork_child(void);
/* A (tsc, ns) pair from the tightest of a few brackets. */
void act_tsc_pair(uint64_t *tsc, uint64_t *ns);
/* Refine the rate with a new pair; returns the rate to use. */
uint64_t act_tsc_refine(uint64_t tsc, uint64_t ns);
/* Offset such that monotonic_raw = realtime + offset, with its error bound
 * (half the tightest bracket of several tries). */
int64_t act_clock_realtime_offset(int64_t *error_ns);

/* ---- fsutil.c --------------------------------------------------------- */

/* Remove the files of a flat directory we own, then the directory itself
 * (links are not followed). 0 or -errno. */
int act_dir_remove_flat(const char *dir);

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
/* Chunks [0, n) of the open spool are populated by the pre-fault helper
 * (its window grows with the chunks in use; tests check the policy). */
uint32_t act_recorder_prefaulted(void);

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

/* Innermost recorded open range on this thread as an external reference:
 * (thread serial << 32) | range sequence (0 = none). Ranges pushed outside
 * the capture window or dropped are skipped (they are not in the trace). */
uint64_t act_range_current_ext(void);

/* The per-thread range stack (recorder.c), driven by annotate.c and the
 * NVTX source. `how`: what became of the push record. */
enum act_range_how {
    ACT_RANGE_RECORDED = 1,   /* written: takes the next sequence number */
    ACT_RANGE_OUTSIDE = 0,    /* capture window closed: counted, not written */
    ACT_RANGE_DROPPED = -1,   /* no space: counted as dropped */
    ACT_RANGE_UNBALANCED = -2 /* (pop only) nothing was open; counted */
};
void act_recorder_range_pushed(int how);
/* Pops the innermost range; returns how its push went (enum act_range_how). */
int act_recorder_range_popped(void);

/* The range hot path (recorder.c), tried first by act_range_push/pop while
 * recording: write the PUSH/POP of a recorded range and move the stack, or
 * return ACT_RANGE_SLOW having changed nothing (the caller then takes the
 * general path). */
#define ACT_RANGE_SLOW 1
int act_recorder_range_push_fast(const char *name);
int act_recorder_range_pop_fast(void);
/* act_str_intern_cstr for names that are usually literals (range names,
 * API names, arg keys): a literal seen before is found by its pointer,
 * here and on the range fast path, when its bytes cannot change. */
uint32_t act_str_intern_literal(const char *s);
/* The recorder's fast timeline clock for the calling thread: the same
 * CLOCK_MONOTONIC_RAW nanoseconds as act_clock_now(), read from the TSC
 * where that is exact (clock.c, recorder.c), never going backwards within
 * a thread. Annotation records use it. */
uint64_t act_rec_now(void);

/* ---- capture.c: the capture window -----------------------------------
 *
 * act__recording is 1 only while a recorder is open AND the capture window
 * is open. The window is the AND of gates: the API gate (act_start/act_stop;
 * closed at start with ACCELTRACE_CAPTURE_RANGE=api), the NVTX gate (open
 * while a range named by ACCELTRACE_CAPTURE_RANGE=nvtx:NAME is open), and
 * the time gate (ACCELTRACE_DELAY / ACCELTRACE_DURATION, run by a timer
 * thread). Each transition writes an ACT_REC_CAPTURE record.
 *
 * What every source must do:
 *  - Test act__recording (relaxed load) before recording a host event. When
 *    it is 0 call act_capture_count_outside(kind) instead: it counts the
 *    event in the spool's outside_window[kind] when a recorder is open (the
 *    window is closed) and does nothing when no tool is attached.
 *  - Record a device op if and only if its launching API record was written:
 *    decide at launch time (e.g. register the completion callback only
 *    then), and do NOT test act__recording in completion callbacks. The
 *    recorder accepts records while the window is closed, so a kernel
 *    launched inside the window and finishing after act_stop() is kept.
 *    A device op whose launch was outside is counted with
 *    act_capture_count_outside(ACT_REC_DEVICE_OP) at launch.
 *  - Ranges follow the same rule (annotate.c does it): a pop/end whose
 *    push/start was written is written too, so the spool stays balanced.
 *  - Set-up that is not an event (enabling profiling on a queue, DEVICE,
 *    QUEUE and CLOCK records) happens whenever a tool is attached
 *    (act_capture_attached()), window open or not: a queue created before
 *    act_start() must still time the kernels launched on it inside.
 */

/* act__idle (declared in acceltrace.h, defined in capture.c): 1 while
 * act__recording is 0 only because no tool is attached. Read and written
 * with __atomic builtins (the public header is also C++). */

/* Configure the gates before the recorder opens (start-up, sessions).
 * nvtx_name: NAME of nvtx:NAME ("" = none). delay/duration in ns (0 = none),
 * measured from process start. */
int act_capture_configure(int api, const char *nvtx_name, uint64_t delay_ns, uint64_t duration_ns);
/* Called by the recorder after it opened / closed a spool. */
void act_capture_recorder_opened(void);
void act_capture_recorder_closed(void);
/* Fork child: `attached` when its spool will be reopened lazily. */
void act_capture_atfork_child(int attached);
/* Nonzero when a recorder is open in this process (window open or not). */
int act_capture_attached(void);
void act_capture_count_outside(uint16_t kind);
/* The API gate (act_start / act_stop). */
int act_capture_api_set(int open);
/* The NVTX gate: NAME given by the configuration ("" = none); enter when a
 * range named NAME opens, leave when it closes (counted, any thread). */
const char *act_capture_nvtx_name(void);
void act_capture_nvtx_enter(void);
void act_capture_nvtx_leave(void);

/* Write an ACT_REC_ARG for the annotation just recorded on this thread. */
int act_rec_arg_emit(const char *key, uint32_t type, uint64_t bits, const char *str);
/* An ACT_RECARG_U64V (or _LAUNCH) arg: the n (<= ACT_RECARG_U64V_MAX) values of v.
 * `key` may be NULL for ACT_RECARG_LAUNCH (its keys are fixed). */
int act_rec_arg_emit_vec(const char *key, uint32_t type, const uint64_t *v, uint32_t n);

/* Convenience writers used by sources. Each returns 0 or -1 (dropped). */
int act_rec_api_emit(const char *name, uint64_t start, uint64_t end, uint64_t corr, uint64_t ext,
                     int32_t result, uint32_t source);
int act_rec_error_emit(const char *fmt, ...) ACT_PRINTF(1, 2);

/* Fork handling: the child gets a fresh spool on its next record. */
void act_recorder_atfork_child(void);

#endif
