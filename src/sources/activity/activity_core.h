/*
 * activity_core.h -- the part shared by the mspti and CUPTI sources: a
 * bounded buffer pool preallocated before capture, the capture state that
 * completion callbacks test, timestamp mapping, lane records, conversion of
 * one vendor record into an act_rec_device_op, the launch-thread API
 * callback bookkeeping, and the start/stop sequence, which each vendor
 * fills in with its own calls (act_activity_ops).
 *
 * How launches are linked to acceltrace ranges (the design):
 *   Both vendors call our API callback on the launching thread, at ENTER
 *   and EXIT of every runtime call, with the vendor's correlation id of the
 *   call. At ENTER we read acceltrace's own per-thread range stack
 *   (act_range_current_ext()); at EXIT we write, on that same thread, an
 *   act_rec_api host slice (name, our clock, vendor corr, ext). Device
 *   records carry the same vendor corr, so the builder joins kernel ->
 *   launch (latest launch with that corr starting no later than the op)
 *   -> the launch's ext -> range. Because the correlation id and the range
 *   stack are read on the same thread at the same moment, the link is
 *   right even where the vendor's external-correlation stack is
 *   process-global (mspti's is): we never depend on it, and records others
 *   push there are counted, not used. (Pushing onto a process-global
 *   stack cannot be made right when several threads launch at once
 *   without holding a lock across the vendor call, which could deadlock.)
 *   No separate corr -> ext record is written for these launches: with
 *   reused vendor ids it would be ambiguous, the slice is not. CUPTI's
 *   stack is per thread, so the CUPTI source also pushes the same ext
 *   around each call; the EXTERNAL_CORRELATION records CUPTI then emits
 *   become act_rec_extcorr and agree with the slices by construction.
 *   When the vendor offers no callbacks (EnableDomain refused), the API
 *   activity records are written as host slices instead (on the delivery
 *   thread, so they carry no range of their own) and the vendor's
 *   EXTERNAL_CORRELATION records, whoever pushed them, become
 *   act_rec_extcorr -- a degraded mode, logged and shown in the stats.
 *
 * Vendor correlation ids are not unique (they restart per session and may
 * repeat); exported ids (flow ids, correlation args) come from the
 * builder's private counter, never from these.
 *
 * Device and queue keys are namespaced by source so that device 0 of CUPTI,
 * mspti and OpenCL never collide: device = source << 56 | deviceId, queue
 * = source << 56 | deviceId << 32 | streamId.
 */
#ifndef ACT_ACTIVITY_CORE_H
#define ACT_ACTIVITY_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "activity.h"
#include "core/rec_write.h"

#define ACT_ACTIVITY_MAX_BUFFERS 64u
#define ACT_ACTIVITY_MAX_LANES   256u
#define ACT_ACTIVITY_MAX_KINDS   16u /* activity kinds one vendor enables */
#define ACT_ACTIVITY_ALL_DEVICES                                                                   \
    0xfffffeu /* device ordinal in clock records: every device of the source */
#define ACT_ACTIVITY_HOST_DEVICE ACT_DEVICE_INDEX_NONE /* device ordinal of host-side lanes */

enum act_activity_state {
    ACT_ACTIVITY_OFF = 0,       /* never started or fully stopped */
    ACT_ACTIVITY_CAPTURING = 1, /* records are converted */
    ACT_ACTIVITY_DRAINING = 2,  /* stop in progress: still converted */
};

typedef struct act_activity_ops act_activity_ops;

typedef struct act_activity {
    /* "mspti", "cupti": log and error prefix, and the prefix of the
     * vendor's function names that error lines quote (msptiSubscribe). */
    const char *name;
    /* Started by a session's probe (optional): why it cannot work goes
     * into the trace, and on stderr only with ACCELTRACE_LOG=debug; any
     * start prints a failure on stderr once per process at most. */
    int probing, told;
    const char *vendor;      /* "Ascend", "CUDA": device lane label */
    const char *device_word; /* "NPU", "GPU" */
    uint32_t source;         /* enum act_source */

    void *lib; /* the vendor library: opened once, never closed */

    /* Start/stop (act_activity_start): the lock orders them; the rest is
     * set by the start that began the current cycle. */
    pthread_mutex_t cycle_lock;
    const act_activity_ops *ops;
    act_activity_opts opts;                   /* resolved */
    uint32_t enabled[ACT_ACTIVITY_MAX_KINDS]; /* kinds the vendor accepted, disabled at stop */
    uint32_t n_enabled;

    /* Pool: buf_count buffers of buf_size bytes, mapped and pre-faulted
     * once, never unmapped (a late vendor thread may still hold one). */
    uint8_t *pool;
    size_t buf_size;
    uint32_t buf_count;
    _Atomic uint64_t free_mask; /* bit i set: buffer i is free */

    _Atomic int state;
    _Atomic int callbacks; /* launch-thread callback path active */
    int64_t offset_ns;     /* timeline = vendor + offset (0 when vendor uses our clock) */
    int64_t offset_err_ns;
    int outermost_only; /* record only the outermost vendor call of a thread */

    /* Counters of the current cycle. */
    _Atomic uint64_t records, converted, refused, vendor_dropped, late, unknown, api_superseded,
        foreign_extcorr, unreadable;
    _Atomic int unreadable_reported;
    uint64_t drain_polls;
    int drain_bound_hit;
    int64_t offset_start_ns, offset_stop_ns;

    /* Lanes announced in this cycle (device and queue records written once). */
    pthread_mutex_t lane_lock;
    uint64_t queues[ACT_ACTIVITY_MAX_LANES];
    uint32_t n_queues;
    uint64_t devices[ACT_ACTIVITY_MAX_LANES]; /* apart: a device key can equal a queue key */
    uint32_t n_devices;
} act_activity;

/* One device record in vendor terms, before mapping. */
typedef struct act_activity_op {
    uint8_t op;          /* enum act_op_kind */
    uint32_t device;     /* vendor device ordinal */
    uint32_t stream;     /* vendor stream id */
    uint64_t start, end; /* vendor clock, 0 = unknown */
    uint64_t queued, submit;
    uint64_t corr; /* vendor correlation id */
    uint64_t bytes;
    uint64_t gsize[3], lsize[3];
    int32_t status;
    const char *name;   /* copied (interned) during the call */
    const char *detail; /* kernel type, commName, ... (may be NULL) */
} act_activity_op;

/* An op with the fields every vendor device record has; the rest zero. */
static inline act_activity_op act_activity_op_on(uint8_t kind, uint32_t device, uint32_t stream,
                                                 uint64_t start, uint64_t end, uint64_t corr)
{
    return (act_activity_op){
        .op = kind, .device = device, .stream = stream, .start = start, .end = end, .corr = corr};
}

/* One place to look for the vendor library: `file` itself, or, with
 * `env`, getenv(env) followed by `file` (skipped while the variable is
 * unset or empty). The "not loadable" line lists each place tried, with
 * " (note)" after it where a note is given. */
typedef struct act_activity_lib_path {
    const char *env;
    const char *file;
    const char *note;
} act_activity_lib_path;

/* A vendor function, resolved with dlsym into *slot (NULL when missing). */
typedef struct act_activity_sym {
    void **slot;
    const char *name;
    int required; /* missing: the start fails, reported */
} act_activity_sym;

/* An act_activity_sym for member `field` of the vendor's table of
 * functions `fns`. Function pointers are written through void **, the
 * idiom dlsym(3) shows. */
#define ACT_ACTIVITY_SYM(fns, field, sym, required)                                                \
    {                                                                                              \
        (void **)&(fns).field, #sym, required                                                      \
    }

/* The vendor library and what is read from it. */
typedef struct act_activity_lib {
    const char *override_var; /* ACCELTRACE_<VENDOR>_LIB: when set, the only place tried */
    const act_activity_lib_path *paths;
    size_t n_paths; /* else these, first that loads wins */
    const act_activity_sym *syms;
    size_t n_syms;
    const char *file_word; /* error lines: "<file_word> not loadable (tried ...)" */
    const char *in_word;   /* ... and "symbol X missing in <in_word>" */
} act_activity_lib;

/* An act_activity_lib over the arrays `paths` and `syms`. */
#define ACT_ACTIVITY_LIB(override_var, paths, syms, file_word, in_word)                            \
    {                                                                                              \
        override_var, paths, ACT_ARRAY_SIZE(paths), syms, ACT_ARRAY_SIZE(syms), file_word, in_word \
    }

/* Open the library (the first time: it stays open, as vendor threads may
 * call our callbacks until the process ends) and resolve its symbols.
 * 0, or ACT_E_NOTFOUND, reported -- except an absent library while
 * `optional` (probing), which is not an error. */
int act_activity_load(act_activity *a, const act_activity_lib *lib, int optional);

/* ---- start and stop ---------------------------------------------------
 *
 * A vendor as the core drives it: its library, its words in the error
 * lines, and its calls. Vendor results are ints, 0 = success (both
 * vendors' SUCCESS). What the vendor API fixes to its own signatures (the
 * buffer and API callbacks, registered by `subscribe` and
 * `register_buffers`) stays in the vendor file, as does the conversion of
 * its records. */
struct act_activity_ops {
    const act_activity_lib *lib;
    /* After loading, before anything is set up (NULL: nothing to check):
     * 0, or ACT_E_*, reported. CUPTI checks the library's version. */
    int (*check)(void);
    /* Set the clock mapping (act_activity_clock_*): one of the two is
     * given, run at its place in the order of act_activity_start. */
    void (*clock_before_subscribe)(act_activity *a);
    void (*clock_before_register)(act_activity *a);
    int (*subscribe)(void); /* with the vendor's launch-thread API callback */
    /* subscribe's result when another tool holds the only subscription,
     * and its error line (less "; <vendor> device lane left empty"). */
    int conflict;
    const char *conflict_text;
    const char *(*result_string)(int result); /* NULL: failures show the number alone */
    int (*enable_callbacks)(void);            /* 1: the launch-thread callbacks are on */
    const char *callbacks_word;               /* log line "<word> callbacks unavailable; ..." */
    int (*register_buffers)(void);
    const uint32_t *kinds; /* activity kinds, enabled in this order; 0 (INVALID) ends them */
    int (*switch_kind)(uint32_t kind, int on); /* Enable (on) or Disable: the vendor's result */
    /* One entry of the "<name>ActivityEnable failed for ..." list. */
    void (*refusal)(uint32_t kind, int result, char *out, size_t n);
    void (*unsubscribe)(void);
    void (*flush)(void); /* hand back every buffer with records, partly filled too */
    void (*stop)(void);  /* the source's public stop: the lifecycle runs it at exit */
};

/* The calls of act_activity_ops that each vendor file defines under these
 * names, the same in both; the rest of its ops it spells out. */
#define ACT_ACTIVITY_VENDOR_CALLS                                                                  \
    .subscribe = subscribe, .enable_callbacks = enable_callbacks,                                  \
    .register_buffers = register_buffers, .kinds = wanted, .switch_kind = switch_kind,             \
    .refusal = refusal, .unsubscribe = unsubscribe, .flush = flush

/* Start a cycle, in this order: load (and check); set up the pool and
 * reset the counters; subscribe before any other activity call (mspti
 * expects it first; a second subscriber is reported and the lane left
 * empty); the launch-thread callback domains; the clock, before any kind
 * is enabled; buffers registered while already capturing, so the first
 * completed buffer is converted; the kinds; the stop registered with the
 * lifecycle. Returns 0, or
 * ACT_E_STATE (running, or not attached), ACT_E_NOTFOUND, ACT_E_CONFLICT,
 * ACT_E_NOMEM, or check's code -- each but ACT_E_STATE reported. */
int act_activity_start(act_activity *a, const act_activity_ops *ops, const act_activity_opts *opts);
/* Stop the cycle: drain (act_drain: flush every 25 ms until three polls
 * in a row bring nothing new, bounded), disable the kinds, unsubscribe,
 * flush once more, measure the clock again, report anything lost.
 * Idempotent. */
void act_activity_stop(act_activity *a);

/* Clock mappings, for the ops' clock hooks. realtime: the vendor stamps
 * CLOCK_REALTIME; the offset to the timeline is measured now and again at
 * stop ("<name> realtime offset at start/stop"). timeline: the vendor
 * stamps acceltrace's own clock (CUPTI's timestamp callback), nothing to
 * map; `method` names how. */
void act_activity_clock_realtime(act_activity *a);
void act_activity_clock_timeline(act_activity *a, const char *method);

/* Buffer callbacks' halves. request: a free pool buffer, for as many
 * records as fit, or NULL (refused, counted as one dropped device
 * record). give: back to the pool. */
void act_activity_buffer_request(act_activity *a, uint8_t **buf, size_t *size, size_t *max_records);
void act_activity_buffer_give(act_activity *a, uint8_t *buf);

/* One step through a completed buffer, in the vendor's terms: 1 (a
 * record, in *rec), 0 (the normal end) or -1 (the vendor failed; its
 * result in *code). *rec keeps its value from one call to the next. */
typedef int (*act_activity_next_fn)(uint8_t *buf, size_t valid, void **rec, int *code);
/* A completed buffer: step through every record, to the end, converting
 * each while the source captures and counting them as late after it
 * stopped; a failure part-way is counted and reported once per cycle.
 * 0 for a NULL buffer (nothing read), else 1. The caller gives the buffer
 * back. */
int act_activity_buffer_read(act_activity *a, uint8_t *buf, size_t valid, act_activity_next_fn next,
                             void (*convert)(const void *rec));

/* Vendor timestamp -> timeline (0 stays 0). */
static inline uint64_t act_activity_ts(const act_activity *a, uint64_t t)
{
    return t ? (uint64_t)((int64_t)t + a->offset_ns) : 0;
}
uint64_t act_activity_device_key(const act_activity *a, uint32_t device);
uint64_t act_activity_queue_key(const act_activity *a, uint32_t device, uint32_t stream);

/* Write one device op (and its lane records the first time). 0 or -1. */
int act_activity_emit_op(act_activity *a, const act_activity_op *op);
/* A vendor EXTERNAL_CORRELATION record: written as a mapping, or only
 * counted when `foreign` (pushed by someone else, or not needed). */
void act_activity_extcorr_record(act_activity *a, int foreign, uint64_t corr, uint64_t ext);
/* A vendor API activity record. While the launch-thread callbacks are on
 * they wrote the call already: superseded says so (and counts it), and
 * the record is dropped. Else emit_api writes it as a host slice (on the
 * delivery thread: it carries no range). */
int act_activity_api_superseded(act_activity *a);
void act_activity_emit_api(act_activity *a, const char *name, uint64_t start, uint64_t end,
                           uint64_t corr, int32_t result);

/* Launch-thread callback halves. enter returns 1 when the call is
 * recorded (ext_out: the innermost acceltrace range of the thread, 0 =
 * none); exit writes the host slice (carrying corr and ext) and
 * returns 1 when the source marked the frame as pushed onto the vendor's
 * external-correlation stack (so it pops). With `outermost_only` only the
 * outermost vendor call of a thread is recorded (CUPTI: runtime calls make
 * driver calls with the same correlation id). */
int act_activity_api_enter(act_activity *a, uint64_t corr, uint64_t *ext_out);
void act_activity_api_mark_pushed(void);
int act_activity_api_exit(act_activity *a, const char *name, uint64_t corr, int32_t result);

void act_activity_stats_get(act_activity *a, act_activity_stats *out);
/* Log one line and write one error record into the trace. */
void act_activity_error(act_activity *a, const char *fmt, ...) ACT_PRINTF(2, 3);

#endif
