/*
 * internal.h -- the library's internals: the fast clock's calibration, the
 * recorder's lifecycle (open, attach, close, fork) and the configuration of
 * the capture window, for start-up (src/init), sessions and the recorder
 * itself. It includes the two audience headers, so a file that needs it
 * sees everything:
 *
 *   core/common.h     compiler helpers, the timeline clock, logging
 *   core/rec_write.h  the recorder's writers (sources, annotations)
 *   core/rec_read.h   readers of the live recorder (snapshot, tests)
 *
 * Data flows one way: sources (src/sources) call the recorder; the
 * timeline reader/builder (src/timeline) reads spool files; the writers
 * (src/writers) read the built timeline. Nothing in these headers is part
 * of the public API (include/acceltrace.h).
 */
#ifndef ACT_INTERNAL_H
#define ACT_INTERNAL_H

#include <stdint.h>

#include "core/common.h"
#include "core/rec_read.h"
#include "core/rec_write.h"

/* ---- clock.c: the fast clock's calibration ---------------------------- */

/* Fast clock support (clock.c): the TSC's rate against the timeline clock.
 * `usable` is ACT_TSC_UNKNOWN until act_tsc_calibrate() ran (and
 * ACT_TSC_CALIBRATING while it runs), then 1 when the TSC may
 * stand in for CLOCK_MONOTONIC_RAW (invariant TSC, clocksource "tsc"),
 * else 0. `mult` is ns per tick << 32. The per-thread anchors that turn a
 * TSC reading into timeline ns live in recorder/. */
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

/* ---- recorder/: lifecycle ------------------------------------------- */

/* Start recording into a spool file in `dir` (created 0700 if missing;
 * an existing one must belong to this user and not be writable by
 * others). Called by in-process sessions. Returns 0 or a negative ACT_E*
 * code (ACT_E_IO with errno saying why). `capacity` 0: as large as the
 * spool's file system can spare (act_rec_spool_auto_size, spool_file.c):
 * a quarter of its free space, from ACT_SPOOL_AUTO_MIN to
 * ACT_SPOOL_AUTO_MAX. With a ring (act_recorder_set_ring, called first)
 * the spool holds the ring at least, and 0 means ACT_SPOOL_AUTO_MIN. */
#define ACT_SPOOL_AUTO_MIN (256ull << 20)
#define ACT_SPOOL_AUTO_MAX (4ull << 30)
int act_recorder_open(const char *dir, uint64_t capacity, uint32_t chunk_size);
/* The same in a directory that must exist already: start-up with
 * ACCELTRACE_SPOOL_DIR (made by `run`) and forked children. */
int act_recorder_attach(const char *dir, uint64_t capacity, uint32_t chunk_size);
/* Ring mode (flight recorder) for the spools opened from now on: keep only
 * the most recent `bytes` of records (0 = off). recorder/ring.c. */
void act_recorder_set_ring(uint64_t bytes);
uint64_t act_recorder_ring(void);
/* Publish everything, write final counters, mark the spool sealed and
 * unmap it. Idempotent. */
void act_recorder_close(void);
/* The same from the process' exit handler: the pre-fault helper is not
 * waited for (recorder/prefault.c, act_rec_prefault_leave). */
void act_recorder_close_at_exit(void);
/* Fork handling (recorder/fork.c): the child gets a fresh spool on its next record. */
void act_recorder_atfork_child(void);
/* Who hears that the recorder opened or closed a spool, or forked: the
 * capture window (capture.c) registers itself before the recorder opens.
 * The recorder sits below the capture window and never calls it by name;
 * with no listener, an open spool records (act__recording = 1). Each hook
 * runs outside act_rec_state.lock and may write records. */
typedef struct act_recorder_listener {
    void (*opened)(void);
    void (*closed)(void);
    void (*atfork_child)(int attached); /* attached: the child reopens lazily */
} act_recorder_listener;
void act_recorder_listen(const act_recorder_listener *l);
/* A spool is open in this process, or a forked child's will be opened on
 * its next record (lock-free; lifecycle.c). */
int act_recorder_attached(void);

/* ---- pystack.c: --python-backtrace -------------------------------------- */

#define ACT_PYSTACK_MAX_DEPTH 64
/* Frames per captured call (0 = off, at most ACT_PYSTACK_MAX_DEPTH); `all`:
 * every intercepted call, not only device work and synchronisations. */
void act_pystack_configure(int depth, int all);
/* The calling thread's innermost `depth` Python frames in two steps: walk
 * them (a key naming the sequence of code objects and lines, 0 when this
 * thread holds no GIL of a CPython >= 3.9: pystack.c, P1), then, only if the
 * caller has not seen that key, their text: "file(line): func" a line,
 * innermost first, NUL-terminated. Both within one intercepted call. */
typedef struct act_pystack_frames {
    int n;
    void *code[ACT_PYSTACK_MAX_DEPTH]; /* borrowed: valid while the GIL is held */
    int line[ACT_PYSTACK_MAX_DEPTH];
} act_pystack_frames;
uint64_t act_pystack_walk(int depth, act_pystack_frames *w);
/* This thread is in a running CPython and does not hold its GIL. */
int act_pystack_gil_released(void);
/* CPython's Py_tracefunc (frame, what, arg as opaque pointers) and the
 * documented `what` values the hook reads (pystack.c P4). */
typedef int (*act_pystack_profile_fn)(void *obj, void *frame, int what, void *arg);
#define ACT_PYTRACE_C_CALL      4
#define ACT_PYTRACE_C_EXCEPTION 5
#define ACT_PYTRACE_C_RETURN    6
/* Install fn as this thread's profile function (the GIL held, no profiler
 * set by the program): 1 when installed. */
int act_pystack_profile_install(act_pystack_profile_fn fn);
/* Py_AddPendingCall(fn, arg) (any thread, no GIL needed): 1 when queued. */
int act_pystack_pending(int (*fn)(void *), void *arg);
size_t act_pystack_walk_text(const act_pystack_frames *w, char *buf, size_t cap);

/* ---- capture.c: configuration ------------------------------------------ */

/* Configure the gates before the recorder opens (start-up, sessions).
 * nvtx_name: NAME of nvtx:NAME ("" = none). delay/duration in ns (0 = none),
 * measured from process start. */
int act_capture_configure(int api, const char *nvtx_name, uint64_t delay_ns, uint64_t duration_ns);
#endif
