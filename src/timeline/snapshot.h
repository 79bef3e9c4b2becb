/*
 * snapshot.h -- the device operations an in-process session has recorded
 * so far, for consumers inside the process (the torch.profiler plugin in
 * plugins/torch) that put them into another tool's timeline.
 *
 * A snapshot is the timeline builder's answer, not a second one: the spool
 * is read by the same reader and the device ops come out of the same
 * joins, lanes and flows as the Chrome trace of that spool (builder.c,
 * joins.c, devices.c); the snapshot only keeps them. Each op carries its
 * launch (the host call found by (source, correlation id) and time, as in
 * the trace), its External id and the range reference recorded at launch
 * (act_snapshot_current_ext() form), its device process and lane. Strings
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
    const char *name;           /* kernel or operation name (as in the trace) */
    const char *detail;         /* e.g. kernel type ("" if none) */
    const char *vendor;         /* "OpenCL", "CUDA", "Ascend", ... ("" if unknown) */
    const char *device_name;    /* as recorded ("" if unknown) */
    const char *device_process; /* the device's process name in the trace */
    const char *queue_label;    /* ("" if none) */
    const char *lane_name;      /* the device lane's name in the trace */
    const char *launch_name;    /* API call that launched it ("" if unknown) */
    uint32_t kind;              /* enum act_op_kind (record.h) */
    uint32_t source;            /* enum act_source */
    uint32_t flags;             /* ACT_OPF_* */
    int32_t status;             /* vendor completion status (0 = ok) */
    uint32_t device_index;      /* ordinal of the device within its source */
    uint32_t device_pid;        /* the device's pid in the trace */
    uint32_t lane_tid;          /* its lane's tid in the device's process */
    uint32_t launch_pid;        /* host process that recorded it */
    uint32_t launch_tid;        /* OS tid of the launching thread (0 = unknown) */
    uint32_t has_stream;        /* 1: `stream` is the vendor's stream id */
    uint64_t queue;             /* queue/stream handle/id */
    uint64_t stream;            /* kineto's stream: the vendor's id (has_stream), else the lane */
    uint64_t start_ns, end_ns;  /* on the device */
    uint64_t launch_start_ns, launch_end_ns; /* the host call (0 = unknown) */
    uint64_t corr;                           /* correlation id of the launch (0 = none) */
    uint64_t ext;         /* innermost range open at launch: act_snapshot_current_ext() form */
    uint64_t external_id; /* the trace's "External id" of that range (0 = none) */
    uint64_t flow_id;     /* the trace's ac2g flow id (0 = not linked) */
    uint64_t bytes;       /* transfers and fills */
    uint64_t gsize[3], lsize[3];
    /* The innermost user range (not an operator) open at launch, which
     * kineto draws on the device lane as gpu_user_annotation: its
     * reference (act_snapshot_current_ext() form), External id, name
     * (0, 0, "": none). */
    uint64_t user_ext, user_external_id;
    const char *user_name;
} act_snap_op;

typedef struct act_snapshot act_snapshot;

/* Read the spool at `spool_path` (NULL: this process' current spool).
 * Returns 0 and *out, or ACT_E_DISABLED (no spool), ACT_E_IO, ACT_E_FORMAT,
 * ACT_E_NOMEM. */
int act_snapshot_open(const char *spool_path, act_snapshot **out);
/* The same from an open spool file descriptor (not closed; it may be read
 * after the file was unlinked, e.g. when a session ended). */
int act_snapshot_open_fd(int fd, act_snapshot **out);
/* Device ops in start order (ties: trace order): 1 and *op filled, 0 at
 * the end. Ops without device times are not device ops of the trace. */
int act_snapshot_next(act_snapshot *s, act_snap_op *op);
/* Number of device ops, and counters of what could not be used. */
uint64_t act_snapshot_count(const act_snapshot *s);
/* Problems the reader found (torn or unknown records); 0 on a healthy spool. */
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
/* Device callbacks this process' recorder still waits for (0: every
 * launched op has its times in the spool, or no spool). */
uint64_t act_snapshot_pending(void);

#ifdef __cplusplus
}
#endif

#endif
