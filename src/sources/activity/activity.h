/*
 * activity.h -- entry points of the vendor activity-API sources: mspti
 * (Huawei Ascend) and CUPTI (NVIDIA). Both read device work from the
 * vendor's buffered activity records through one shared core
 * (activity_core.c) and write acceltrace records; neither formats output.
 *
 * Who calls what (activity_start.c; hook groups "activity.mspti" and
 * "activity.cupti", so ACCELTRACE_HOOKS selects them):
 *   - `acceltrace run --ascend` preloads libmspti and libacceltrace.so and
 *     sets ACCELTRACE_SOURCES=ascend: the load-time constructor
 *     (src/init/autostart.c) runs start-up, whose hook-group stage starts
 *     the sources named there;
 *   - `acceltrace run --cuda` sets CUDA_INJECTION64_PATH to libacceltrace.so:
 *     the CUDA driver then calls our exported InitializeInjection(), which
 *     runs act_init() and act_source_cupti_start(NULL);
 *   - an in-process session runs the hook groups' session probes
 *     (init/hooks.h), which start the sources whose vendor runtime is
 *     already loaded (activity_start.c);
 *   - a program may call act_source_<vendor>_start() itself once the
 *     recorder is open.
 * Start registers the matching stop with act_lifecycle_on_stop() (once per
 * process), so process exit / session end drains the vendor's buffers
 * before the spool is sealed.
 *
 * A missing library or symbol, a single-subscriber conflict or a CUPTI
 * version mismatch is not a failure of the program: start returns a
 * negative ACT_E_* code, logs one line, writes one error record into the
 * trace metadata, and the device lane stays empty.
 *
 * Library lookup (first that loads wins):
 *   mspti: $ACCELTRACE_MSPTI_LIB, $ASCEND_HOME_PATH/lib64/libmspti.so,
 *          "libmspti.so" through the loader path.
 *   CUPTI: $ACCELTRACE_CUPTI_LIB, "libcupti.so.13", "libcupti.so",
 *          $CUDA_HOME/lib64/libcupti.so, /usr/local/cuda/lib64/libcupti.so.
 */
#ifndef ACT_SOURCE_ACTIVITY_H
#define ACT_SOURCE_ACTIVITY_H

#include <stddef.h>
#include <stdint.h>

/* Tunables of one source; a zero field means "default". */
typedef struct act_activity_opts {
    size_t buffer_size;        /* bytes per activity buffer (default 2 MiB, min 4 KiB) */
    uint32_t buffer_count;     /* buffers in the preallocated pool (default 16, max 64) */
    uint64_t drain_timeout_ms; /* bound of the stop drain (default act_cfg.drain_timeout_ms, else
                                  10000) */
    int optional; /* probing: a missing library is not reported (ACT_E_NOTFOUND, no error record) */
} act_activity_opts;

/* What one start/stop cycle of a source saw (counters reset at start). */
typedef struct act_activity_stats {
    uint64_t records;         /* vendor records read from completed buffers while capturing */
    uint64_t converted;       /* acceltrace records written from them */
    uint64_t buffers_refused; /* buffer requests refused: pool exhausted (each = records dropped) */
    uint64_t vendor_dropped;  /* records the vendor reports it dropped (CUPTI) */
    uint64_t late;            /* records delivered after stop finished (counted, not written) */
    uint64_t unknown;         /* records of kinds not converted (counted) */
    uint64_t api_superseded;  /* API activity records not written: the callback path wrote them */
    uint64_t foreign_extcorr; /* external-correlation records pushed by someone else */
    uint64_t unreadable_buffers; /* buffers whose iteration failed part-way (rest skipped) */
    uint64_t drain_polls;        /* FlushAll polls during the last stop (act_drain, 25 ms apart) */
    int drain_bound_hit;     /* the last drain was cut off by its bound (act_drain reported it) */
    int callbacks;           /* the launch-thread callback path is active */
    int active;              /* capturing now */
    int64_t offset_start_ns; /* vendor clock -> timeline offset measured at start */
    int64_t offset_stop_ns;  /* ... and at stop */
} act_activity_stats;

/* mspti (Ascend). Returns 0, or ACT_E_NOTFOUND (library/symbol missing),
 * ACT_E_CONFLICT (another subscriber), ACT_E_STATE (already started or
 * not recording), ACT_E_NOMEM. */
int act_source_mspti_start(const act_activity_opts *opts);
/* Drain, disable, unsubscribe, flush once more. Idempotent. */
void act_source_mspti_stop(void);
void act_source_mspti_stats(act_activity_stats *out);

/* CUPTI (NVIDIA). Same contract; also ACT_E_UNSUPPORTED when the loaded
 * libcupti's record layouts differ from those compiled in, or when
 * acceltrace was built without cupti.h. */
int act_source_cupti_start(const act_activity_opts *opts);
void act_source_cupti_stop(void);
void act_source_cupti_stats(act_activity_stats *out);

#endif
