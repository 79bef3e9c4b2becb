/*
 * timeline.h -- the built timeline: what the builder makes from the spools
 * and what the writers read. Writers know nothing of vendors or records:
 * they see events (Chrome trace phases), generic args, categories and the
 * tool's counters. The builder (builder.c and its helpers) is the one place
 * that knows how records relate.
 *
 * Times are CLOCK_MONOTONIC_RAW nanoseconds; `base_ns` is the earliest of
 * them and `base_wall_ns` the wall-clock time it corresponds to (written as
 * baseTimeNanoseconds). Writers print ts = (t - base_ns) / 1000 with three
 * decimals.
 */
#ifndef ACT_TIMELINE_H
#define ACT_TIMELINE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "record.h"
#include "spool.h"

/* Categories, named as torch.profiler names them where it has a name. */
enum act_cat {
    ACT_CAT_NONE = 0, /* no "cat" member (metadata, counters) */
    ACT_CAT_CPU_OP,
    ACT_CAT_USER_ANNOTATION,
    ACT_CAT_OPENCL_RUNTIME,
    ACT_CAT_CUDA_RUNTIME,
    ACT_CAT_PRIVATEUSE1_RUNTIME,
    ACT_CAT_RUNTIME,
    ACT_CAT_KERNEL,
    ACT_CAT_GPU_MEMCPY,
    ACT_CAT_GPU_MEMSET,
    ACT_CAT_GPU_SYNC,
    ACT_CAT_GPU_OP,
    ACT_CAT_AC2G,
    ACT_CAT_GPU_USER_ANNOTATION, /* device-side annotations (mstx markers) */
    ACT_CAT_MAX
};

const char *act_cat_name(int cat);
/* The name of `cat` in `tl`: act_cat_name's, or beyond ACT_CAT_MAX one of
 * the imported trace's own categories (tl->cat_extra). */
struct act_timeline;
const char *act_tl_cat_name(const struct act_timeline *tl, int cat);
#define ACT_CAT_EXTRA_MAX (255 - ACT_CAT_MAX) /* an imported trace's own categories */
/* The category of a host call recorded by `source` (its traits'
 * api_cat, core/source_traits.h). */
int act_cat_of_api(uint32_t source);
/* Lower-case name of a record kind ("device_op"), for counters. */
const char *act_rec_kind_name(int kind);
/* 1: device work, 0: host call, -1: neither (flows, metadata). Works on
 * names from any trace (torch.profiler's too). */
int act_cat_is_device_name(const char *cat);
/* The same for category `cat` of `tl`; a built-in category's answer is
 * worked out once (the summary asks it of every slice). */
struct act_timeline;
int act_tl_cat_is_device(const struct act_timeline *tl, int cat);

enum act_arg_type {
    ACT_ARG_U64,
    ACT_ARG_I64,
    ACT_ARG_F64,
    ACT_ARG_STR,
    ACT_ARG_HEX,   /* u64 written as the string "0x..." */
    ACT_ARG_U64X3, /* [a,b,c] */
    ACT_ARG_BOOL,
    ACT_ARG_U64V, /* v.vec: [a,b,...] (any length, 0 included) */
    ACT_ARG_NULL, /* null */
    ACT_ARG_JSON  /* v.s: JSON text, written as it is (an imported trace's arrays, objects) */
};

typedef struct act_tl_arg {
    act_str key;
    uint32_t type;
    union {
        uint64_t u;
        int64_t i;
        double d;
        act_str s;
        uint64_t v3[3];
        struct {
            const uint64_t *p; /* into a spool mapping, may be unaligned */
            uint32_t n;
        } vec;
    } v;
} act_tl_arg;

/* A vector arg's length and element i (ACT_ARG_U64X3 or ACT_ARG_U64V: the
 * latter points into a spool, maybe unaligned). */
static inline uint32_t act_tl_arg_vec_len(const act_tl_arg *a)
{
    return a->type == ACT_ARG_U64X3 ? 3 : a->v.vec.n;
}

static inline uint64_t act_tl_arg_vec_at(const act_tl_arg *a, uint32_t i)
{
    uint64_t v;
    if (a->type == ACT_ARG_U64X3)
        return a->v.v3[i];
    memcpy(&v, (const char *)a->v.vec.p + i * sizeof(v), sizeof(v));
    return v;
}

#define ACT_EVF_BP_E    0x1  /* flow finish binds to the enclosing slice */
#define ACT_EVF_NO_TID  0x2  /* process-scoped metadata: no "tid" member */
#define ACT_EVF_ERROR   0x4  /* a failed call or command: written with the error colour */
#define ACT_EVF_SCOPE_G 0x8  /* an instant of global scope ("s":"g"; imported traces) */
#define ACT_EVF_SCOPE_P 0x10 /* an instant of process scope ("s":"p"; imported traces) */

typedef struct act_tl_event {
    uint64_t ts;  /* timeline ns (ignored for "M") */
    uint64_t dur; /* ns, "X" only */
    uint64_t id;  /* flows "s"/"f", async "b"/"e" */
    act_str name;
    uint32_t pid;
    uint32_t tid;
    uint32_t arg0; /* first arg in timeline.args */
    uint16_t nargs;
    char ph;       /* 'X','M','s','f','i','C','b','e' */
    uint8_t cat;   /* enum act_cat */
    uint8_t flags; /* ACT_EVF_* */
} act_tl_event;

typedef struct act_tl_device {
    uint32_t pid;   /* n (kineto's GPU pids), or 5000000 + n (devices.c) */
    uint32_t index; /* ordinal within its source */
    act_str name;   /* "OpenCL pthread-... (device 0)" style process name */
    act_str model;  /* device name as recorded */
    act_str vendor;
    uint32_t source;
} act_tl_device;

/* A device op as the builder joined it and laid it out: the one answer
 * every output of device work reads. The Chrome writer gets it as events
 * (its "X" slice and ac2g flow pair); in-process consumers (the snapshot,
 * hence the torch plugin) get it whole through act_timeline.on_devop.
 * Strings point into the spools or the timeline's arena. */
typedef struct act_tl_devop {
    act_str name;        /* as written (a default name when none was recorded) */
    act_str detail;      /* kernel type, communicator, marker domain ("" = none) */
    act_str queue_label; /* its QUEUE record's label ("" = none) */
    act_str lane_name;   /* the device lane's thread_name */
    act_str launch_name; /* the host call that launched it ("" = not linked) */
    const act_tl_device *device;
    uint32_t kind;       /* enum act_op_kind */
    uint32_t source;     /* enum act_source */
    uint32_t flags;      /* ACT_OPF_* */
    int32_t status;      /* vendor completion status (0 = ok) */
    int cat;             /* enum act_cat of its slice */
    uint32_t lane_tid;   /* tid of its lane in the device's process */
    uint32_t pid;        /* the host process that recorded it */
    uint32_t launch_tid; /* OS tid of the launching thread (0 = not linked) */
    int has_stream;      /* CUPTI/mspti: `stream` holds the stream id */
    uint64_t queue, stream;
    uint64_t start, end;               /* timeline ns */
    uint64_t launch_start, launch_end; /* 0 = not linked */
    uint64_t corr;                     /* vendor correlation id (0 = none) */
    uint64_t ext_id;                   /* the trace's External id (0 = none) */
    uint64_t range_ref;                /* the range's reference as recorded (0 = none) */
    uint64_t flow_id;                  /* its ac2g flow (0 = none) */
    /* The innermost user range open at its launch (gpu_annotations.c):
     * its reference as recorded, External id and name (0, 0, "": none). */
    uint64_t user_ref, user_ext_id;
    act_str user_name;
    uint64_t bytes, gsize[3], lsize[3];
} act_tl_devop;

typedef struct act_tl_meta {
    act_str key;
    act_str value;
    int is_json; /* ACT_META_* flags of the record (core/record.h) */
} act_tl_meta;

typedef struct act_tl_process {
    uint32_t pid, ppid;
    int sealed;
    char **argv; /* borrowed from the spool */
    int argc;
} act_tl_process;

/* Counters that go into the trace's "acceltrace" object and the summary. */
typedef struct act_tl_counts {
    uint64_t records[ACT_REC_KIND_MAX];
    uint64_t dropped[ACT_REC_KIND_MAX];
    uint64_t outside_window[ACT_REC_KIND_MAX];
    uint64_t callbacks_pending, callbacks_lost;
    uint64_t unbalanced_pops;      /* recorder-counted + found by the builder */
    uint64_t invalid_range_ends;   /* act_range_end() ids act_range_start() never gave */
    uint64_t strings_truncated;    /* strings the recorder cut to fit a chunk */
    uint64_t unclosed_ranges;      /* open at the end of a process */
    uint64_t unmatched_range_ends; /* RANGE_END with no START */
    uint64_t skew;                 /* device start < host launch start */
    uint64_t skew_max_ns;
    uint64_t negative_durations;
    uint64_t nesting_violations; /* host slices that partially overlap */
    uint64_t device_ops_without_times;
    uint64_t unlinked_device_ops; /* corr set but no host launch found */
    uint64_t unresolved_external; /* ext naming no recorded range */
    uint64_t flows;
    uint64_t orphan_args; /* ARG records with no event to attach to */
    /* Ring mode (flight recorder, timeline/ring.c). */
    uint64_t ring_size;                /* largest ring of any process, bytes (0 = no ring) */
    uint64_t ring_chunks_overwritten;  /* chunks recycled */
    uint64_t ring_records_overwritten; /* records in them */
    uint64_t ring_bytes_overwritten;
    uint64_t ranges_before_window;  /* open when the kept window began: start at its start */
    uint64_t ring_flows_dropped;    /* device ops whose launch was overwritten */
    uint64_t ring_external_dropped; /* External ids naming ranges that were overwritten */
} act_tl_counts;

/* The plain counters of act_tl_counts, one list walked by every writer:
 * the member of the trace's "acceltrace" object (written in this order),
 * the summary's label, the field. The per-kind arrays, callbacks and skew
 * are written as objects of their own. */
typedef struct act_tl_counter {
    const char *key;
    const char *label;
    size_t offset; /* of a uint64_t in act_tl_counts */
    /* 1: it counts what is so (flows, the ring's size), not what was lost
     * or went wrong: the summary's "all clean" holds whatever its value. */
    int info;
} act_tl_counter;

extern const act_tl_counter act_tl_counters[];
extern const size_t act_tl_n_counters;

/* Records of what a trace shows (ranges, marks, counters, host calls,
 * device ops) and of the sources' error lines, those dropped included:
 * 0 when the run recorded nothing to show. */
uint64_t act_tl_counts_events(const act_tl_counts *c);

static inline uint64_t act_tl_counter_value(const act_tl_counts *c, const act_tl_counter *k)
{
    return *(const uint64_t *)((const char *)c + k->offset);
}

typedef struct act_arena_block act_arena_block;

#define ACT_TL_MAX_ERRORS 1000 /* error lines listed in a trace */

typedef struct act_timeline act_timeline;

struct act_timeline {
    act_tl_event *ev;
    size_t n_ev, cap_ev;
    act_tl_arg *args;
    size_t n_args, cap_args;
    act_tl_device *devices;
    size_t n_devices;
    act_tl_process *procs;
    size_t n_procs;
    act_tl_meta *meta;
    size_t n_meta, cap_meta;
    char **errors; /* one line per source error / reader problem */
    size_t n_errors, cap_errors;
    size_t args_full_ev;      /* 1 + the last event said to hold no more args (0: none) */
    uint64_t errors_unlisted; /* beyond ACT_TL_MAX_ERRORS: counted only */
    uint32_t *truncated_pids;
    size_t n_truncated;
    act_tl_counts counts;
    uint64_t base_ns;      /* timeline origin (monotonic raw ns) */
    uint64_t base_wall_ns; /* wall clock at base_ns */
    char clock_method[64];
    int64_t clock_error_ns; /* -1 = unknown */
    int err;                /* sticky ACT_E_NOMEM while building */
    act_arena_block *arena;
    /* Streaming (act_timeline_build_events): when set, the builder hands
     * the events it has made to sink() whenever ACT_TL_SINK_BATCH of them
     * are complete, and at the end; sink writes them out and empties ev
     * and args (n_ev = n_args = 0). Returns 0 or a negative error, which
     * becomes tl->err. NULL: every event stays in ev. */
    int (*sink)(struct act_timeline *tl, void *ctx);
    void *sink_ctx;
    /* When set, each device op is also handed to on_devop as it is laid
     * out, right after its events were added. Returns 0 or a negative
     * error, which becomes tl->err. */
    int (*on_devop)(const act_tl_devop *op, void *ctx);
    void *devop_ctx;
    /* An imported trace (acceltrace export TRACE.json, tools/trace_import.c)
     * rather than a built one: its events are the file's, times are its ts
     * in ns (base_ns 0), and its top-level members are tl->meta in file
     * order (is_json: the value is JSON text), which the writers write as
     * they are in place of the run's facts (command, counts, devices). */
    int imported;
    /* Categories beyond enum act_cat, named by an imported trace
     * ("python_function"): category ACT_CAT_MAX + i is cat_extra[i]. */
    const char *cat_extra[ACT_CAT_EXTRA_MAX];
    size_t n_cat_extra;
};

/* A batch of events and their args small enough to stay in a core's cache
 * between the builder that makes them and the writer that formats them;
 * a batch sixteen times larger went out to memory and back (BENCHMARKS.md
 * item 20). */
#define ACT_TL_SINK_BATCH 4096

typedef struct act_build_opts {
    uint64_t window_start_ns; /* 0 = open */
    uint64_t window_end_ns;   /* 0 = open */
} act_build_opts;

/* Build the timeline from `n` opened spools (kept open while `tl` is used:
 * strings point into them). Returns 0 or ACT_E_NOMEM. */
int act_timeline_build(act_timeline *tl, act_spool *const *spools, size_t n,
                       const act_build_opts *opts);
void act_timeline_free(act_timeline *tl);

/* The same build in two phases, for a writer that streams: _start reads
 * every spool and joins (tl then holds devices with their pids, metadata,
 * time base, counters so far, but no event); _events makes the events,
 * in the order act_timeline_build makes them, handing them to tl->sink
 * in batches when it is set. _finish frees the builder's state (not tl),
 * also after a failure or when _events was never called. _start walks
 * each spool's records once (act_spool_iter_*); the spools' mappings and
 * strings are all the timeline keeps of them. */
typedef struct act_tl_build act_tl_build;
int act_timeline_build_start(act_timeline *tl, act_spool *const *spools, size_t n,
                             const act_build_opts *opts, act_tl_build **out);
int act_timeline_build_events(act_tl_build *s);
/* Streaming (docs/architecture.md "Streaming"): the pass over the first
 * process's spool runs while that process does. _live takes a spool
 * opened with act_spool_open_live (kept open by the caller) and makes the
 * builder; each _feed passes the records published since the last one
 * that can be read in their final order (spool.h). _continue then does
 * what _start does, with `spools` (spools[0] must be the live one, else
 * ACT_E_STATE and the caller builds anew): it reads the live spool to its
 * end, then the others. The timeline is the one _start makes from the
 * same files: the same records meet the same code in the same order. */
int act_timeline_build_live(act_timeline *tl, act_spool *sp, const act_build_opts *opts,
                            act_tl_build **out);
int act_timeline_build_feed(act_tl_build *s,
                            volatile const int *stop); /* stop: NULL or early out */
int act_timeline_build_continue(act_tl_build *s, act_spool *const *spools, size_t n);
/* Streaming further: each _feed also makes the live process's host events
 * that can no longer change (popped ranges, marks and API calls whose
 * thread has moved on; docs/architecture.md) and hands them to tl->sink,
 * which must be set and must keep tl->base_ns's meaning: they are written
 * before the header facts are known. Not with a capture window (none is
 * made while the spool has CAPTURE records). When what they assumed
 * proves wrong at the end (an earlier time base, a CAPTURE record),
 * _continue returns ACT_E_STATE: those events are void, build anew. The
 * events come out in another order than a batch build's (each kind of a
 * process in its own order), event for event the same. */
void act_timeline_build_online(act_tl_build *s);
/* Device ops the feeds wrote (their first lane group's, docs/architecture.md
 * "Streaming" invariant 8). */
uint64_t act_timeline_build_devops_early(const act_tl_build *s);
void act_timeline_build_finish(act_tl_build *s);

/* ---- helpers shared by the files that make events (builder, devices) ---- */

/* Room for one more event / arg (grows the arrays, or hands a full batch
 * to the sink first); NULL on error. Used by the inline adders below, which
 * builder files call millions of times. */
act_tl_event *act_tl_event_slot_slow(act_timeline *tl);
act_tl_arg *act_tl_arg_slot_slow(act_timeline *tl);

static inline act_str act_str_c(const char *s);

static inline act_tl_event *act_tl_event_add(act_timeline *tl, char ph, int cat, act_str name,
                                             uint32_t pid, uint32_t tid, uint64_t ts, uint64_t dur)
{
    act_tl_event *e;
    if (!tl->err && tl->n_ev < tl->cap_ev && !(tl->sink && tl->n_ev >= ACT_TL_SINK_BATCH))
        e = &tl->ev[tl->n_ev++];
    else if (!(e = act_tl_event_slot_slow(tl)))
        return NULL;
    *e = (act_tl_event){.ts = ts,
                        .dur = dur,
                        .name = name,
                        .pid = pid,
                        .tid = tid,
                        .arg0 = (uint32_t)tl->n_args,
                        .ph = ph,
                        .cat = (uint8_t)cat};
    return e;
}

/* Args attach to the most recently added event, up to UINT16_MAX of them
 * (act_tl_event.nargs): the rest are not kept, said once per event in the
 * timeline's errors (act_tl_arg_slot_slow). */
static inline act_tl_arg *act_tl_arg_add(act_timeline *tl, const char *key)
{
    act_tl_arg *a;
    if (!tl->err && tl->n_ev && tl->n_args < tl->cap_args &&
        tl->ev[tl->n_ev - 1].nargs < UINT16_MAX)
        a = &tl->args[tl->n_args++];
    else if (!(a = act_tl_arg_slot_slow(tl)))
        return NULL;
    *a = (act_tl_arg){.key = act_str_c(key)};
    tl->ev[tl->n_ev - 1].nargs++;
    return a;
}

static inline void act_tl_arg_u64(act_timeline *tl, const char *key, uint64_t v)
{
    act_tl_arg *a = act_tl_arg_add(tl, key);
    if (a) {
        a->type = ACT_ARG_U64;
        a->v.u = v;
    }
}

static inline void act_tl_arg_str(act_timeline *tl, const char *key, act_str s)
{
    act_tl_arg *a = act_tl_arg_add(tl, key);
    if (a) {
        a->type = ACT_ARG_STR;
        a->v.s = s;
    }
}

static inline void act_tl_arg_hex(act_timeline *tl, const char *key, uint64_t v)
{
    act_tl_arg *a = act_tl_arg_add(tl, key);
    if (a) {
        a->type = ACT_ARG_HEX;
        a->v.u = v;
    }
}
/* Copy into the timeline's arena (NUL-terminated). */
act_str act_tl_strdup(act_timeline *tl, const char *s, size_t n);
act_str act_tl_printf(act_timeline *tl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A metadata member (key, value; is_json: the value is JSON text). */
void act_tl_meta_add(act_timeline *tl, act_str key, act_str value, int is_json);
void act_tl_error(act_timeline *tl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline act_str act_str_c(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return (act_str){s, (uint32_t)n};
}

/* Whether `s` holds exactly the bytes of the C string `c` (a key, a name). */
static inline int act_str_is(act_str s, const char *c)
{
    size_t n = strlen(c);
    return s.n == n && !memcmp(s.p, c, n);
}

/* Greedy interval partitioning (lanes.c): items sorted by start; writes the
 * 0-based sub-lane of each into lane[]; returns the number of lanes used,
 * 0 when out of memory. Intervals [start, end) sharing an endpoint do not
 * overlap. */
size_t act_lanes_partition(const uint64_t *start, const uint64_t *end, size_t n, uint32_t *lane);

/* The same partitioning one item at a time (items still sorted by start),
 * for a queue whose work is laid out while it runs: act_lanes_next gives
 * the item the lane act_lanes_partition would, UINT32_MAX when out of
 * memory. Holds only the lanes (as many as the most work that overlaps). */
typedef struct act_lanes {
    struct act_lanes_item *busy, *idle;
    size_t n_busy, n_idle, cap_busy, cap_idle;
    uint32_t used;
} act_lanes;
uint32_t act_lanes_next(act_lanes *s, uint64_t start, uint64_t end);
void act_lanes_free(act_lanes *s);

/* Nesting check (lanes.c): slices of one lane sorted by (start asc, end
 * desc); returns how many partially overlap a slice they start inside. */
uint64_t act_lanes_nesting_violations(const uint64_t *start, const uint64_t *end, size_t n);

/* The same check one slice at a time, for slices that are merged as they
 * are checked: act_nest_add returns 1 when the slice partially overlaps
 * one it starts inside, 0 when not, -1 when out of memory. A new lane
 * starts with depth = 0. */
typedef struct act_nest {
    uint64_t *stack; /* ends of the open slices */
    size_t depth, cap;
} act_nest;
int act_nest_add(act_nest *s, uint64_t start, uint64_t end);
void act_nest_free(act_nest *s);

#endif
