/*
 * snapshot.h -- the device operations an in-process session has recorded
 * so far, for consumers inside the process (the torch.profiler plugin in
 * plugins/torch) that put them into another tool's timeline.
 *
 * It reads the session's spool file the way the trace builder does (record.h
 * is the contract) and joins each device op to its launch: the API record
 * with the same correlation id (or the source's external-correlation
 * record) gives the launching thread, the launch time and the external id of
 * the innermost range open at launch. Strings point into the snapshot and
 * live until act_snapshot_close(). Timestamps are on the timeline clock
 * (CLOCK_MONOTONIC_RAW nanoseconds, TSC spools converted).
 *
 * Exported from libacceltrace for the plugin; not part of the public API.
 */
#ifndef ACT_SNAPSHOT_H
#define ACT_SNAPSHOT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct act_snap_op {
    const char *name;                        /* kernel or operation name ("" if unknown) */
    const char *detail;                      /* e.g. kernel type ("" if none) */
    const char *vendor;                      /* "OpenCL", "CUDA", "Ascend", ... ("" if unknown) */
    const char *device_name;                 /* ("" if unknown) */
    const char *queue_label;                 /* ("" if none) */
    const char *launch_name;                 /* API call that launched it ("" if unknown) */
    uint32_t kind;                           /* enum act_op_kind (record.h) */
    uint32_t source;                         /* enum act_source */
    uint32_t flags;                          /* ACT_OPF_* */
    int32_t status;                          /* vendor completion status (0 = ok) */
    uint32_t device_index;                   /* ordinal of the device within its source */
    uint32_t launch_tid;                     /* OS tid of the launching thread (0 = unknown) */
    uint64_t device;                         /* device handle/id */
    uint64_t queue;                          /* queue/stream handle/id */
    uint64_t start_ns, end_ns;               /* on the device (0 = unknown) */
    uint64_t launch_start_ns, launch_end_ns; /* the host call (0 = unknown) */
    uint64_t corr;                           /* correlation id of the launch (0 = none) */
    uint64_t ext;   /* innermost range open at launch: act_snapshot_current_ext() form */
    uint64_t bytes; /* transfers and fills */
    uint64_t gsize[3], lsize[3];
} act_snap_op;

typedef struct act_snapshot act_snapshot;

/* Read the spool at `spool_path` (NULL: this process' current spool).
 * Returns 0 and *out, or ACT_E_DISABLED (no spool), ACT_E_IO, ACT_E_FORMAT,
 * ACT_E_NOMEM. */
int act_snapshot_open(const char *spool_path, act_snapshot **out);
/* The same from an open spool file descriptor (not closed; it may be read
 * after the file was unlinked, e.g. when a session ended). */
int act_snapshot_open_fd(int fd, act_snapshot **out);
/* Device ops in start order: 1 and *op filled, 0 at the end. */
int act_snapshot_next(act_snapshot *s, act_snap_op *op);
/* Number of device ops, and counters of what could not be used. */
uint64_t act_snapshot_count(const act_snapshot *s);
/* Records the reader had to skip (torn or unknown); 0 on a healthy spool. */
uint64_t act_snapshot_skipped(const act_snapshot *s);
void act_snapshot_close(act_snapshot *s);

/* The external id a launch made now on this thread would carry (the
 * innermost open range; 0 = none): lets a consumer map its own ids (torch's
 * correlation ids) to the ranges it pushes. */
uint64_t act_snapshot_current_ext(void);
/* Path of this process' current spool ("" when not recording). */
const char *act_snapshot_path(void);
/* The timeline clock, nanoseconds. */
uint64_t act_snapshot_clock_now(void);

#ifdef __cplusplus
}
#endif

#endif
