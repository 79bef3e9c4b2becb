/*
 * builder_int.h -- state shared by the builder's files: builder.c (the
 * per-process pass over records, host lanes), joins.c (device op <-> host
 * launch <-> range), devices.c (device processes, queue lanes, sub-lanes,
 * flows), window.c (the capture window), vendor_clock.c (derived clock
 * metadata). builder.c calls the others; they never call builder.c back.
 * Not seen by writers.
 */
#ifndef ACT_BUILDER_INT_H
#define ACT_BUILDER_INT_H

#include <stdlib.h>

#include "acceltrace.h"
#include "core/vec.h"
#include "timeline.h"
#include "u64map.h"

#define ACT_DEVICE_PID_BASE   5000000u /* kineto's kExceedMaxPid */
#define ACT_FALLBACK_TID_BASE 4200000u /* threads with no THREAD record */

/* A host API call of one process. */
/* ARG records attached to an event, as a singly linked list (1-based
 * indices into bld_proc.argrefs; 0 ends it). */
typedef struct bld_args {
    uint32_t head, tail;
} bld_args;

typedef struct bld_api {
    uint64_t start, end, corr, ext;
    act_str name;
    uint32_t tid;
    int32_t result;
    uint32_t ua; /* its innermost user range (gpu_annotations.c; 0 = none) */
    /* Its ARG records: in OpenCL nearly every call has some (a kernel's
     * name, sizes), so a map beside the calls cost a cache miss per read
     * and ~32 B per call where this costs 8 (issue 32). */
    bld_args args;
    uint16_t source; /* enum act_source: 16 bits keep the call at 72 bytes */
    uint8_t kept;    /* BLD_API_KEPT: inside the capture window; BLD_API_ARGS: has ARG records */
} bld_api;
_Static_assert(ACT_SOURCE_MAX <= UINT16_MAX, "bld_api.source is 16 bits");
#define BLD_API_KEPT 0x1
#define BLD_API_ARGS 0x2
#define BLD_API_OP   0x4  /* streaming (devstream.c): its device op was read */
#define BLD_API_DONE 0x8  /* streaming: its device op was written, nothing joins it again */
#define BLD_API_UA   0x10 /* its op took its user range (gpu_annotations.c) */

/* Lookup entry: (source, corr) -> api, ordered by start. */
typedef struct bld_key {
    uint64_t corr;
    uint64_t start;
    uint32_t source;
    uint32_t idx;
} bld_key;

/* A device op of any process, joined and waiting for its lane. The
 * fields the joins and the lane layout read are copied from the record:
 * only writing the op reads the record again (its pages were dropped
 * after the walk, and every read of them faults them back in). Each union
 * holds a field of the record until the join replaces it with what it
 * found (resolve_ops, in this order: device, then bld_join_op). */
typedef struct bld_op {
    const act_rec_device_op *r;
    act_str name, detail;
    uint64_t start, end;
    uint64_t queued, submit; /* timeline ns when the source gave them, else 0 */
    uint64_t corr, queue;
    union {
        uint64_t ext_ref; /* the record's range reference, until joined */
        uint64_t ext_id;  /* then the resolved External id, 0 = none */
    } x;
    union {
        uint64_t device;       /* the record's device handle, until mapped to dev */
        uint64_t launch_start; /* then the host launch's start, when linked */
    } d;
    uint64_t range_ref; /* the range reference the join resolved (0 = none) */
    uint64_t launch_end;
    act_str launch_name;
    uint32_t launch_tid;
    uint32_t pid;       /* host process */
    uint32_t dev;       /* index into timeline.devices */
    uint32_t lane_tid;  /* assigned by devices.c */
    uint32_t queue_no;  /* the queue's number on its device, from 1 (devices.c) */
    uint32_t queue_ref; /* bld.queues index + 1 of its QUEUE record; 0 = none */
    uint32_t ua;        /* its launch's innermost user range (gpu_annotations.c) */
    uint8_t source, linked, kept;
} bld_op;

typedef struct bld_argref {
    act_sp_rec rec; /* a copy: records are decoded one at a time */
    uint32_t next;
} bld_argref;

enum { BLD_OWNER_NONE, BLD_OWNER_RANGE, BLD_OWNER_ASYNC, BLD_OWNER_MARK, BLD_OWNER_API };

typedef struct bld_thread {
    uint32_t serial, tid;
    uint32_t owner_kind, owner_idx; /* what this thread's ARG records attach to */
    uint32_t pushes;                /* RANGE_PUSH records seen: the range sequence */
    uint32_t pyhold; /* its first API call with a held arg (index + 1; record.h F_HOLD) */
    uint32_t *stack; /* open ranges (indices into proc.ranges) */
    size_t depth, cap;
    /* Range of each push (a dense join table: sequence numbers count up
     * from 1): by_seq[seq - 1] is its index into proc.ranges. */
    uint32_t *by_seq;
    size_t n_seq, cap_seq;
    /* Ring spools (ring.c): pushes before the kept window (by_seq[0] is
     * push seq0 + 1), and the ranges open when it began. */
    uint32_t seq0;
    uint8_t ring_based;
    uint32_t n_pre;
    uint32_t pre_seq[ACT_RING_OPEN_MAX], pre_idx[ACT_RING_OPEN_MAX];
} bld_thread;

typedef struct bld_range {
    uint64_t start, end, ext_id;
    act_str name;
    uint32_t tid;
    uint8_t closed_at_end; /* 1: process truncated, 2: never popped */
    uint8_t before_window; /* ring: opened before the kept window (ring.c) */
    uint8_t open;          /* on its thread's stack (not popped yet) */
    uint8_t kind;          /* BLD_RANGE_OP / _USER once a launch asked (gpu_annotations.c) */
    uint32_t ua;           /* its gpu_annotations.c entry (0 = none yet) */
    uint32_t seq;          /* its push's sequence number on its thread (0 = not known) */
    bld_args args;
} bld_range;
enum { BLD_RANGE_UNKNOWN, BLD_RANGE_OP, BLD_RANGE_USER };

typedef struct bld_mark {
    uint64_t ts;
    act_str name;
    uint32_t tid;
    bld_args args;
} bld_mark;

/* A QUEUE record's label and properties (stream id for CUPTI/mspti). */
typedef struct bld_queue {
    act_str label;
    uint64_t properties;
} bld_queue;

/* A vendor activity cycle's CLOCK record at start, until the one at stop
 * (vendor_clock.c). */
typedef struct bld_clock_open {
    uint64_t device; /* the source's all-devices key */
    int64_t offset, error;
} bld_clock_open;

#define BLD_MAX_CLOCK_OPEN 8

/* A device's CLOCK record read before its DEVICE record (device_clock.c):
 * the two come from different threads, whose segments are read in the
 * order they closed (record.h S1). Held until the device is described. */
typedef struct bld_clock_wait {
    uint64_t device; /* handle as recorded (0 -> 1, as dev_by_handle) */
    int64_t offset, error;
    char method[64];
    uint8_t method_len;
} bld_clock_wait;

/* A host slice waiting for the nesting check of its lane (stream_free.c);
 * kind 0 a range, 1 an API call (ranges first on a tie, as check_nesting). */
typedef struct bld_slice {
    uint64_t start, end;
    uint8_t kind;
} bld_slice;

/* The nesting check of one host lane (tid) of the live process, run as its
 * slices settle: what was fed is behind `last`; `wait` holds the slices
 * written early that cannot be fed yet (an earlier one may still come). */
typedef struct bld_lane {
    uint32_t tid;
    uint8_t fed;
    bld_slice last;
    uint64_t front; /* the earliest start of its slices not settled yet */
    act_nest nest;
    bld_slice *wait;
    size_t n_wait, cap_wait;
} bld_lane;

typedef struct bld_proc {
    act_spool *sp;
    act_spool_iter *iter; /* the batch pass's iterator (ring.c names ranges with it); NULL live */
    uint32_t pid;
    bld_api *api;
    size_t n_api, cap_api;
    bld_key *keys; /* sorted; in b->scratch, only while its ops are joined */
    size_t n_keys;
    size_t join_hint; /* where the last launch search ended (joins.c) */
    bld_key *extcorr; /* (source, vendor corr) -> ext in `start`; sorted */
    size_t n_extcorr, cap_extcorr;
    bld_range *ranges;
    size_t n_ranges, cap_ranges;
    bld_thread *threads;
    size_t n_threads;
    act_u64map thread_by_serial; /* serial + 1 -> threads index + 1 */
    uint32_t last_thread;        /* threads index + 1 of the last lookup */
    act_u64map dev_by_handle;    /* device handle -> devices index + 1 */
    act_u64map queue_label;      /* queue handle -> bld.queues index + 1 */
    act_u64map tid_name;         /* OS tid -> tid_names index + 1 */
    act_str *tid_names;          /* names from THREAD(aux 0) records */
    size_t n_tid_names, cap_tid_names;
    bld_argref *argrefs;
    size_t n_argrefs, cap_argrefs;
    bld_mark *marks;
    size_t n_marks, cap_marks;
    act_sp_rec *counters; /* COUNTER records (copies), emitted with the events */
    size_t n_counters, cap_counters;
    size_t ops_begin; /* this process's ops in bld.ops */
    /* Capture intervals from CAPTURE records: [on, off) pairs sorted by
     * time; used only when the spool has CAPTURE records. */
    uint64_t *capture;
    size_t n_capture; /* number of pairs */
    int capture_used;
    bld_clock_open clock_open[BLD_MAX_CLOCK_OPEN];
    size_t n_clock_open;
    bld_clock_wait *clock_wait; /* device_clock.c: CLOCK records ahead of their DEVICE */
    size_t n_clock_wait, cap_clock_wait;
    act_str *errs; /* ERROR records' messages, listed after the spool's problems */
    size_t n_errs, cap_errs;
    size_t n_read; /* records the pass has taken (a live pass resumes) */
    /* Streaming (act_timeline_build_online): marks, ranges and API calls
     * below these were made into events while the process ran. */
    size_t marks_out, ranges_out, api_out;
    /* Streaming device ops (devstream.c): OpenCL launches by correlation
     * id (act_corr_next never reuses one) until their op is written: api
     * index + 1, DS_OP_READ once the op was read (alone: read before its
     * launch). */
    act_u64map launch_by_corr;
    uint32_t *pend; /* launches whose device op was not read yet (api indices) */
    size_t n_pend, cap_pend;
    uint8_t track_launches;
    /* What streaming frees once written (stream_free.c): marks, ranges and
     * API calls below these bases are gone (index i of a kind lives at
     * [i - base]; n_marks, n_ranges, n_api count from 0 still). A range's
     * External id is then ext_base + its index + 1 (push order). API calls
     * freed that a later join may still need (a launch whose op was not
     * written) move to `held`, sorted by index (held_idx). */
    size_t marks_base, ranges_base, api_base;
    uint64_t ext_base;
    bld_api *held;
    uint32_t *held_idx;
    size_t n_held, cap_held;
    uint32_t arg_free; /* argrefs free list (1-based, through next) */
    bld_lane *lanes;   /* the nesting check as slices settle */
    size_t n_lanes;
    act_u64map lane_by_tid; /* tid + 1 -> lanes index + 1 */
    uint8_t nest_live;      /* this process's nesting is checked by lane (stream_free.c) */
    uint8_t nest_broken;    /* a slice came before one already checked: void */
    uint8_t frees;          /* what was written early is freed */
    uint8_t live_scanned;   /* the final scan of a live spool was made */
} bld_proc;

/* The range / mark of index i (i >= its base). */
#define BLD_RANGE(p, i) (&(p)->ranges[(i) - (p)->ranges_base])
#define BLD_MARK(p, i)  (&(p)->marks[(i) - (p)->marks_base])

/* Writing the ops reads their records (bld_op.r) again after the walk;
 * every so many ops the spools' pages are dropped (act_spool_drop_pages)
 * so that the spools do not become resident whole again. */
#define BLD_OPS_PER_DROP 16384

/* A launching thread and the end of its latest call read: a launch of it
 * not read yet starts after, and so does its op (devstream.c). */
typedef struct bld_launcher {
    uint32_t tid;
    uint64_t end;
} bld_launcher;

/* Device ops written while the live process runs (devstream.c): the first
 * lane group of the batch layout -- device 0, the live process, its lowest
 * queue handle -- below a watermark, once joined. */
typedef struct bld_devstream {
    uint8_t on;      /* the live process is streamed with its device ops */
    uint8_t started; /* ops were written: the group below is fixed */
    uint8_t broken;  /* an assumption failed: the early events are void */
    uint64_t queue;  /* the group's queue handle */
    uint32_t queue_ref;
    bld_op proto;        /* its first op as written (lane names at the end) */
    act_lanes lanes;     /* its sub-lanes so far */
    uint64_t last_start; /* the last op written: what follows sorts after */
    uint64_t last_end;
    uint64_t latest;         /* the latest start of its ops read so far */
    bld_launcher *launchers; /* each launching thread's latest call read */
    size_t n_launchers, cap_launchers;
    size_t scanned;   /* ops of bld.ops looked at */
    uint64_t written; /* ops written early */
} bld_devstream;

/* User ranges projected onto the device lanes (gpu_annotations.c): the
 * ranges some launch was made in, still open or with ops unwritten, and
 * one span per (range, lane); freed slots are reused. */
typedef struct bld_gua_range {
    uint64_t ext_id;
    uint64_t ref; /* as recorded: (thread serial << 32) | push sequence */
    act_str name;
    uint32_t pending; /* launches made in it whose op is not written yet */
    uint32_t spans;   /* its first span (index + 1), or the next free slot */
    uint8_t closed;   /* popped */
    uint8_t live;     /* 0: a free slot */
} bld_gua_range;
typedef struct bld_gua_span {
    uint64_t start, end;
    uint32_t ua, dev, lane_tid;
    uint32_t next; /* the range's next span, or the next free slot (index + 1) */
} bld_gua_span;
typedef struct bld_gua {
    bld_gua_range *ranges;
    size_t n_ranges, cap_ranges;
    uint32_t free_range;
    bld_gua_span *spans;
    size_t n_spans, cap_spans;
    uint32_t free_span;
    act_u64map span_of; /* (ua, dev, lane) -> spans index + 1 */
} bld_gua;

typedef struct bld {
    act_timeline *tl;
    uint64_t ws, we; /* capture window (we = UINT64_MAX when open) */
    uint64_t next_ext, next_flow, next_async;
    bld_op *ops;
    size_t n_ops, cap_ops;
    act_spool *const *spools; /* ops point into their mappings */
    size_t n_spools;
    bld_queue *queues; /* QUEUE records of every process (bld_op.queue_ref) */
    size_t n_queues, cap_queues;
    uint32_t dev_pid_base; /* sort index of device 0 (and its pid when not small) */
    uint32_t min_host_pid; /* the lowest traced pid */
    /* device identity, parallel to tl->devices: which host pids use it */
    uint64_t *dev_handle;   /* handle for devices known only by handle */
    uint32_t *dev_host_pid; /* first host pid, or UINT32_MAX when shared */
    act_u64map dev_by_desc; /* hash of a description -> devices index + 1 */
    act_u64map dev_by_key;  /* hash of (pid, source, handle) -> index + 1 */
    /* One block for the temporaries that never live at the same time: a
     * process's join keys, its nesting check, the device ops' sort keys
     * and lanes. Fresh memory costs a page fault per page (and the kernel
     * time to free it again); reused, it costs that once. */
    void *scratch;
    size_t scratch_cap;
    bld_devstream ds;
    bld_gua gua;
} bld;

/* The order of slices and device ops on a lane, written once because the
 * streamed build must lay out and check them exactly as the batch does:
 * earlier start first, then the longer (the outer one of a pair that
 * starts together). -1, 0 or 1; callers break ties their own way. */
static inline int bld_span_cmp(uint64_t start_a, uint64_t end_a, uint64_t start_b, uint64_t end_b)
{
    if (start_a != start_b)
        return start_a < start_b ? -1 : 1;
    if (end_a != end_b)
        return end_a > end_b ? -1 : 1;
    return 0;
}

/* The scratch block with room for `bytes` (its contents are not kept);
 * NULL and tl->err set when out of memory. */
static inline void *bld_scratch(bld *b, size_t bytes)
{
    if (bytes <= b->scratch_cap)
        return b->scratch;
    /* realloc would copy contents nobody needs: a new block instead. */
    free(b->scratch);
    b->scratch = act_vec_alloc(bytes);
    b->scratch_cap = b->scratch ? bytes : 0;
    if (!b->scratch)
        b->tl->err = ACT_E_NOMEM;
    return b->scratch;
}

/* window.c: inside the capture window: the run's window (opts) and, when
 * the process recorded CAPTURE on/off records, one of its capture
 * intervals. bld_load_capture reads those records first. */
int bld_in_window(const bld *b, const bld_proc *p, uint64_t start, uint64_t end);
void bld_load_capture(bld *b, bld_proc *p);

/* vendor_clock.c: a CLOCK record; the one that ends a vendor activity
 * cycle adds the "<source>_clock" metadata. */
void bld_vendor_clock(bld *b, bld_proc *p, const act_sp_rec *rec);
/* device_clock.c: an OpenCL device's CLOCK record: its "opencl_clock_*"
 * metadata, now or (read before its DEVICE record) when
 * bld_device_clock_described is told of the device. */
void bld_device_clock(bld *b, bld_proc *p, const act_sp_rec *rec);
void bld_device_clock_described(bld *b, bld_proc *p, uint64_t handle);

/* joins.c */
int bld_joins_prepare(bld *b, bld_proc *p);
void bld_join_op(bld *b, bld_proc *p, bld_op *op);
/* The rest of the join once the launch is known (NULL: none). */
void bld_join_launch(bld *b, bld_proc *p, bld_op *op, bld_api *launch);
/* External id of a range reference ((serial << 32) | seq); 0 = none
 * (counted as unresolved when ref was set). */
uint64_t bld_resolve_ext(bld *b, const bld_proc *p, uint64_t ref);
/* 1 when bld_resolve_ext finds ref's range among those pushed so far (or
 * ref is 0): what streaming waits for before it writes an event naming it. */
int bld_ext_known(const bld_proc *p, uint64_t ref);

/* ---- ring.c: ring spools (record.h R4) ---- */
/* A THREAD record with the thread's range state: opens the ranges that
 * began before the kept window, numbers the pushes that follow. */
void bld_ring_thread(bld *b, bld_proc *p, bld_thread *t, const act_sp_rec *rec);
/* External id of push `seq` <= t->seq0 (t may be NULL: a thread whose
 * records were all overwritten); counts what the ring lost. */
uint64_t bld_ring_ext(bld *b, const bld_proc *p, const bld_thread *t, uint64_t seq);
/* A device op whose launch is not in the spool: counted. */
void bld_ring_unlinked(bld *b, const bld_proc *p);
/* The spool's ring counters into the timeline's. */
void bld_ring_counts(act_timeline *tl, const act_spool *sp);

/* devices.c */
uint32_t bld_device_for(bld *b, bld_proc *p, const act_sp_rec *drec, uint64_t handle,
                        uint32_t source);
/* Device pids and process names (before any event is emitted: a streamed
 * trace's header lists the devices). */
void bld_devices_name(bld *b);
int bld_devices_emit(bld *b);
/* Bytes of scratch block bld_devices_emit takes for n_ops device ops. */
size_t bld_devices_scratch(size_t n_ops);
/* One op on its lane (lane_tid set), with its flow: as bld_devices_emit. */
void bld_devices_emit_op(bld *b, const bld_op *op, uint32_t sub_lane);

/* devstream.c: device ops written while the live process p runs. _feed
 * writes what can no longer change; _check (at the end, after the joins
 * and bld_devices_name) says whether what was written is the batch's. */
void bld_devstream_feed(bld *b, bld_proc *p);
/* The pass read an OpenCL launch (api index) / device op (its corr). */
void bld_devstream_launch(bld *b, bld_proc *p, size_t api);
/* Another call of thread `tid` was read (it moves the thread's launches
 * not read yet past `end`). */
void bld_devstream_call(bld *b, uint32_t tid, uint64_t end);
void bld_devstream_op_read(bld *b, bld_proc *p, uint64_t corr);
int bld_devstream_check(const bld *b, const bld_proc *p);
void bld_devstream_free(bld *b);

/* stream_free.c: what the live build frees once written early. */
/* API call i, wherever it lives (NULL: freed, nothing needs it). */
bld_api *bld_api_at(bld_proc *p, size_t i);
/* Room for one more API call / range / mark; the new one's slot. */
bld_api *bld_api_push(bld *b, bld_proc *p);
/* An event made early: its args go back to the free list, its slice to
 * its lane's nesting check (kind 0 range, 1 API call, 2 mark: no slice). */
void bld_settled(bld *b, bld_proc *p, int kind, size_t i);
/* Feed the lanes what can no longer move, free what nothing needs. */
void bld_release(bld *b, bld_proc *p);
/* The end of the live process: its remaining slices checked (the
 * batch's check_nesting, lane by lane); ACT_E_STATE when the early part
 * was checked out of order. */
int bld_nest_end(bld *b, bld_proc *p);
/* The args list's records to the free list. */
void bld_args_release(bld_proc *p, bld_args *args);
void bld_release_free(bld_proc *p);

/* ---- the builder's files (builder.c: the pass over a process's records;
 * host_events.c: its host lanes as events; nesting.c: the lanes' nesting
 * check; timeline_build.c: the whole timeline, batch or live) ---------- */

/* One pass's state besides the process's: async ranges (start/end by id). */
typedef struct bld_async {
    uint64_t rec_id, start, end;
    act_str name;
    uint32_t tid;
    bld_args args;
} bld_async;

typedef struct pass_state {
    bld_async *async;
    size_t n_async, cap_async;
    act_u64map async_by_id;
    size_t cap_ops_local;
} pass_state;

/* builder.c */
void *bld_presize(bld *b, size_t n, size_t size, size_t *cap);
void bld_pass_begin(bld *b, bld_proc *p, act_spool *sp);
int bld_pass_live(bld *b, bld_proc *p, pass_state *ps, int final, volatile const int *stop,
                  size_t limit);
void bld_read_process(bld *b, bld_proc *p, pass_state *ps, act_spool *sp, int passed);
void bld_proc_free(bld *b, bld_proc *p, pass_state *ps);
void bld_emit_counters(bld *b, bld_proc *p);
/* host_events.c: the process's host events (metadata, its span, marks,
 * ranges and API calls), at its end or, settled ones, while it runs. */
void bld_emit_proc_meta(bld *b, bld_proc *p);
void bld_emit_proc_span(bld *b, bld_proc *p);
void bld_emit_host(bld *b, bld_proc *p, pass_state *ps);
int bld_online_allowed(const bld *b, const bld_proc *p);
void bld_emit_online(bld *b, bld_proc *p);
/* gpu_annotations.c: a range pushed with a CATEGORY arg naming an
 * operator (a cpu_op slice); the innermost user range open on t for a launch
 * (0 = none); the op that joins the launch takes it; the range popped; a
 * device op's span on its lane, extended as it is written; the spans still
 * held, once every device op was written; freed. */
int bld_range_is_op(const bld_proc *p, const bld_range *r);
uint32_t bld_gua_of_launch(bld *b, bld_proc *p, const bld_thread *t);
void bld_gua_join(bld_op *op, bld_api *launch);
void bld_gua_closed(bld *b, bld_range *r);
void bld_gua_extend(bld *b, const bld_op *op);
void bld_gua_emit(bld *b);
void bld_gua_free(bld *b);
/* nesting.c: slices of one lane nest properly, or are counted. */
void bld_check_nesting(bld *b, const bld_proc *p);

#endif
