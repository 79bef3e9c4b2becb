/*
 * rec_write.h -- the recorder as its writers see it: sources
 * (src/sources), the annotation API (annotate.c) and anything else that
 * records from a hot path. Reserve, fill, commit; intern strings; move the
 * range stack; follow the capture window's rules below. Nothing here opens
 * or closes a spool (core/internal.h).
 */
#ifndef ACT_REC_WRITE_H
#define ACT_REC_WRITE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/common.h"
#include "core/record.h"

/*
 * Global recorder state. `act__recording` is the one flag every hot path
 * tests: nonzero while records are being captured in this process.
 */
extern ACT_EXPORT _Atomic int act__recording;

/* Per-thread recorder state; opaque outside src/core/recorder/. */
typedef struct act_thread act_thread;

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
/* The calling thread has no more to record for now (a source's batch of
 * device work delivered): its segment ends, so that a live reader has its
 * records before the thread records again (record.h S1). Cheap; nothing
 * when it recorded nothing since its last segment began. */
void act_rec_seg_idle(void);

/* Intern `s` (length `len`) in the calling thread's string table and
 * return its id; 0 when it could not be recorded. */
uint32_t act_str_intern(const char *s, size_t len);
uint32_t act_str_intern_cstr(const char *s);

/* Process-unique ids. */
uint64_t act_corr_next(void);
uint64_t act_range_id_next(void);
/* Whether act_range_id_next() has returned `id` in this process. */
int act_range_id_issued(uint64_t id);
/* Count an act_range_end() whose id act_range_start() never returned. */
void act_recorder_count_invalid_range_end(void);

/* Innermost recorded open range on this thread as an external reference:
 * (thread serial << 32) | range sequence (0 = none). Ranges pushed outside
 * the capture window or dropped are skipped (they are not in the trace). */
uint64_t act_range_current_ext(void);

/* The per-thread range stack (recorder/ranges.c), driven by annotate.c and the
 * NVTX source. `how`: what became of the push record. */
enum act_range_how {
    ACT_RANGE_RECORDED = 1,   /* written: takes the next sequence number */
    ACT_RANGE_OUTSIDE = 0,    /* capture window closed: counted, not written */
    ACT_RANGE_DROPPED = -1,   /* no space: counted as dropped */
    ACT_RANGE_UNBALANCED = -2 /* (pop only) nothing was open; counted */
};
void act_recorder_range_pushed(int how, uint32_t name);
/* Pops the innermost range; returns how its push went (enum act_range_how). */
int act_recorder_range_popped(void);
/* How the innermost open range's push went, without popping it
 * (ACT_RANGE_UNBALANCED when none is open; nothing counted). */
int act_recorder_range_top(void);

/* The range hot path (recorder/ranges.c), tried first by act_range_push/pop while
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
/* The same for a string that is not a literal but whose bytes the caller
 * never changes or frees while the process lives (kernel names kept by a
 * source): found by its pointer without the read-only check. */
uint32_t act_str_intern_stable(const char *s);
/* The recorder's fast timeline clock for the calling thread: the same
 * CLOCK_MONOTONIC_RAW nanoseconds as act_clock_now(), read from the TSC
 * where that is exact (clock.c, recorder/fast_clock.c), never going backwards within
 * a thread. Annotation records use it. */
uint64_t act_rec_now(void);

/* The spool header of this process (NULL when not recording). */
/* Sources update its counters (callbacks pending, lost) directly. */
act_spool_header *act_recorder_header(void);
/* Changes whenever a spool is opened or closed: a source that wrote
 * set-up records (devices, queues, clocks) into one spool writes them
 * again when this differs from the value it wrote them under. */
uint32_t act_recorder_generation(void);

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
 *    act_start() must still time the kernels launched on it inside. (The
 *    OpenCL queue group goes further: it makes every queue it sees
 *    profiling-capable from creation, tool attached or not, so a session
 *    opened later still times them; see sources/opencl/queue.c.)
 */

/* act__idle (declared in acceltrace.h, defined in capture.c): 1 while
 * act__recording is 0 only because no tool is attached. Read and written
 * with __atomic builtins (the public header is also C++). */

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

/* Names an OS thread of this process (any, by its tid): a THREAD record
 * with serial 0 (record.h); 0 or -1 (dropped). */
int act_rec_thread_name_emit(uint32_t tid, const char *name);
/* Names the calling thread: written with the thread's first record, so a
 * name alone records nothing (now, if the thread has recorded). */
int act_rec_thread_name_given(const char *name);

/* Convenience writers used by sources. Each returns 0 or -1 (dropped). */
int act_rec_api_emit(const char *name, uint64_t start, uint64_t end, uint64_t corr, uint64_t ext,
                     int32_t result, uint32_t source);
/* act_rec_api_emit for a call that launched nothing (corr 0), inside the
 * calling thread's innermost recorded range (act_range_current_ext()): the
 * cheapest way to record a call, for per-command calls such as
 * clReleaseEvent. Both write in place, without a call, when `name` is a
 * literal already used in the thread's chunk and the chunk has room. */
int act_rec_api_here(const char *name, uint64_t start, uint64_t end, int32_t result,
                     uint32_t source);
int act_rec_error_emit(const char *fmt, ...) ACT_PRINTF(1, 2);

/* --python-backtrace (core/pystack.c): Python frames per captured call
 * (0 = off: the one branch the hot paths pay) and whether every
 * intercepted call is captured, not only those that launch device work
 * (act_rec_api_emit with a correlation) and synchronisations. */
extern int act__pystack_depth;
extern int act__pystack_all;
/* The calling thread's Python stack as the "Python stack" arg of its most
 * recent API record (emit.c); call it only right after that record. */
void act_rec_pystack_emit(void);
/* A source, after the API record of a synchronisation (clFinish, ...). */
static inline void act_rec_pystack_sync(void)
{
    if (ACT_UNLIKELY(act__pystack_depth) && !act__pystack_all)
        act_rec_pystack_emit();
}

#endif
