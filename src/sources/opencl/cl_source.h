/*
 * cl_source.h -- what the files of the OpenCL source share.
 *
 * The OpenCL source intercepts the entry points listed in cl_api.def,
 * either as an ICD-loader layer (layer.c, OPENCL_LAYERS) or through the
 * separate LD_PRELOAD shim (preload/preload.c, which only forwards into the
 * table act__cl_preload_table() hands it). Both reach the same wrappers
 * (act_cl_w_<name>), which call the real implementation through
 * act_cl_next. Each wrapper is one hook of its group (dispatch.c); a
 * wrapper whose hook is not armed passes the call straight through.
 *
 * Files: dispatch.c (next table, hooks, lazy start), layer.c (layer entry
 * points), queue.c (queues, devices, profiling forced and hidden),
 * clock.c (device -> host clock mapping), event.c (per-command state,
 * completion callbacks, drain at stop), oppool.c (ops reused per thread),
 * enqueue.c (enqueue wrappers),
 * sync.c (markers, barriers, finish/flush/wait), errors.c (error names
 * of failed calls and commands), objects.c (object lifetimes: leaks,
 * device memory counter, kernel argument sizes), lifetime.c (create/
 * retain/release wrappers, SVM, context error callbacks), evtab.c (events'
 * references without a lock), program.c
 * (builds, kernel arguments, launch args), ext.c (extension entry
 * points). docs/opencl.md lists the coverage (scripts/gen_opencl_doc.py).
 */
#ifndef ACT_CL_SOURCE_H
#define ACT_CL_SOURCE_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
/* We intercept deprecated entry points too (apps still call them). */
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl_layer.h>

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "acceltrace.h"
#include "core/rec_write.h"

/* Zero a reserved record except its header (which the recorder filled). */
static inline void act_cl_zero_body(void *rec, size_t size)
{
    memset((char *)rec + sizeof(act_rec_hdr), 0, size - sizeof(act_rec_hdr));
}

/* A handle's bits mixed (murmur3's finalizer) for the tables keyed by
 * handle: queues (queue.c), objects (objects.c), events (evtab.c). Mask
 * the low bits for a bucket; the high 32 bits are as good a second hash. */
static inline uint64_t act_cl_ptr_mix(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* ---- dispatch.c --------------------------------------------------------- */

/* The real implementation of every entry point we call (layer: the
 * loader's target table; preload: dlsym(RTLD_NEXT) results). */
extern struct _cl_icd_dispatch act_cl_next;

/* How this process reached us: the first to arrive wins, the other
 * path then passes everything through (no double recording). */
enum { ACT_CL_MODE_NONE = 0, ACT_CL_MODE_LAYER = 1, ACT_CL_MODE_PRELOAD = 2 };
extern _Atomic int act_cl_mode;
/* Claim `mode`; returns nonzero if this process now runs in `mode`. */
int act_cl_mode_claim(int mode);

/* One armed flag and one wrapper per intercepted entry point. */
#define X(group, ret, name, params, args)                                                          \
    extern _Atomic int act_cl_armed_##name;                                                        \
    ret CL_API_CALL act_cl_w_##name params;
#include "cl_api.def"
#undef X

/* Fill `table` with our wrapper for every entry of cl_api.def. */
void act_cl_install_wrappers(struct _cl_icd_dispatch *table);
/* The first n entries of `from` into `table`, each stored atomically (the
 * hooks may be arming entries of it from another thread meanwhile). */
void act_cl_table_fill(struct _cl_icd_dispatch *table, const struct _cl_icd_dispatch *from,
                       size_t n);

extern _Atomic int act_cl_started;
void act_cl_start_slow(void);

/* What a wrapper is about to do, for act_cl_gate (capture rules in
 * internal.h: set-up happens whenever a tool is attached; events only
 * while the capture window is open, else they are counted as outside). */
enum act_cl_what {
    ACT_CL_QUERY = 0, /* answer a query (masking): armed is enough */
    ACT_CL_SETUP = 1, /* queue set-up: armed and a tool attached */
    ACT_CL_HOST = 2,  /* a host slice only: armed and recording */
    ACT_CL_CMD = 3    /* a command: host slice + device op: armed and recording */
};

void act_cl_count_outside(int what);

/*
 * The gate every wrapper passes first. Starts the library lazily (first
 * intercepted call) and says whether this entry point takes the traced
 * path; a host event skipped because the capture window is closed is
 * counted as outside the window.
 */
static inline int act_cl_gate(_Atomic int *armed, int what)
{
    if (ACT_UNLIKELY(!atomic_load_explicit(&act_cl_started, memory_order_acquire)))
        act_cl_start_slow();
    if (!atomic_load_explicit(armed, memory_order_relaxed))
        return 0;
    if (what == ACT_CL_QUERY)
        return 1;
    if (what == ACT_CL_SETUP)
        return act_capture_attached();
    if (ACT_LIKELY(atomic_load_explicit(&act__recording, memory_order_relaxed)))
        return 1;
    act_cl_count_outside(what);
    return 0;
}

/* ---- queue.c ------------------------------------------------------------ */

typedef struct act_cl_device {
    cl_device_id id;
    uint32_t index;
    /* Clock mapping (clock.c): host = device + offset_ns. Set before the
     * device's first command (calibration under act_cl_queue_lock), or,
     * by anchor_enqueue, at its first completion (anchor: enum
     * act_cl_anchor); read by completion callbacks. */
    _Atomic int64_t offset_ns;
    int64_t error_ns;
    _Atomic int anchor;
    const char *method;
    _Atomic uint32_t rec_gen; /* recorder generation its DEVICE/CLOCK records went to */
} act_cl_device;

typedef struct act_cl_queue {
    cl_command_queue handle;
    act_cl_device *dev;
    cl_command_queue_properties asked;  /* what the app asked for */
    cl_command_queue_properties actual; /* what the queue really has */
    int have_array;                     /* created with clCreateCommandQueueWithProperties */
    uint32_t array_len; /* entries of asked_array incl. the 0 terminator (0 = NULL) */
    cl_queue_properties asked_array[32];
    /* The program's references as counted through its create, retain and
     * release calls; -1 when unknown (a queue first seen at an enqueue).
     * At 0 the program has let the queue go: we never call anything on
     * it again, whatever keeps the real object alive (its events). */
    _Atomic int app_refs;
    _Atomic uint32_t rec_gen;          /* recorder generation its QUEUE record went to */
    struct act_cl_queue *retired_next; /* replaced in the table: kept, never freed */
} act_cl_queue;

/* The info of queue `q`, its device and queue records written into the
 * open spool (once per spool); registers a queue created behind our back
 * on first sight. NULL only when out of memory or `q` is invalid. Only
 * while a tool is attached (it may calibrate the device's clock). */
act_cl_queue *act_cl_queue_get(cl_command_queue q);
/* Lookup only (NULL when unknown). Lock-free. */
act_cl_queue *act_cl_queue_find(cl_command_queue q);
/* clFlush every queue the program still holds (drain at stop). */
void act_cl_queue_flush_all(void);

/* ---- clock.c ------------------------------------------------------------ */

/* Work out how `dev`'s profiling clock maps onto the host timeline, using
 * queue `q` (profiling enabled) for markers if needed; records an
 * act_rec_clock. */
void act_cl_clock_calibrate(act_cl_device *dev, cl_command_queue q, int queue_profiles);

/* ACCELTRACE_OPENCL_CLOCK's values (act_cl_clock_names, core/config.h). */
enum {
    ACT_CL_CLOCK_AUTO,
    ACT_CL_CLOCK_TIMER,
    ACT_CL_CLOCK_MONOTONIC_RAW,
    ACT_CL_CLOCK_ANCHOR_MARKER,
    ACT_CL_CLOCK_ANCHOR_ENQUEUE
};

/* act_cl_device.anchor: NONE (offset from calibration), WAIT (anchor_enqueue:
 * the first command to complete sets it), SETTING, DONE. */
enum { ACT_CL_ANCHOR_NONE, ACT_CL_ANCHOR_WAIT, ACT_CL_ANCHOR_SETTING, ACT_CL_ANCHOR_DONE };

/* anchor_enqueue: a command whose enqueue call ran from t0 to t1 completed
 * with `queued` (device clock): the device's offset, if none is yet. */
void act_cl_clock_anchor(act_cl_device *dev, uint64_t t0, uint64_t t1, uint64_t queued);

/* ---- event.c ------------------------------------------------------------ */

/* One traced command, from its enqueue until its completion callback. */
typedef struct act_cl_op {
    uint64_t corr;
    uint64_t ext;
    uint64_t start;    /* host enqueue call start */
    uint64_t call_end; /* and end (0: not known) */
    uint64_t bytes;
    uint64_t gsize[3];
    uint64_t lsize[3];
    union {
        act_cl_queue *queue;
        struct act_cl_op *next_free; /* in its pool's free list (oppool.c) */
    };
    struct act_cl_op_pool *pool; /* the pool it goes back to */
    struct act_cl_op *all_next;  /* in its pool's list of all its ops (oppool.c) */
    cl_event ev;                 /* our reference, released in the callback */
    cl_kernel k;                 /* kernel launches: args recorded with the launch (NULL: none) */
    const uint64_t *ksizes;      /* kernel launches: its argument sizes (nk of them) */
    uint32_t nk;
    /* Kernel launches: the app's global, local and offset arrays as given
     * (NULL: not given), read only before act_cl_op_end returns. */
    const size_t *gws, *lws, *off;
    uint8_t dim;         /* work dimension as given (at most 3) */
    uint32_t slot;       /* 1 + index in event.c's table of pending commands (0: none) */
    uint8_t kind;        /* enum act_op_kind */
    uint8_t late;        /* registered after the drain at exit began: not waited for */
    const char *name;    /* a literal, or kept by names.c: never freed */
    const char *program; /* kernels: "program N", kept (NULL: not known) */
} act_cl_op;

/* An op from this thread's pool, or malloc'ed (NULL: out of memory);
 * back to the pool of the thread that took it (oppool.c). */
act_cl_op *act_cl_op_alloc(void);
void act_cl_op_release(act_cl_op *op);

/* Calls that are counted, not drawn, when they succeed: event retains
 * and releases are frequent and say nothing on a timeline (kineto drops
 * cudaEventCreate/cudaEventDestroy for the same reason). A failed one is
 * drawn with its error. The counts go into the metadata
 * "opencl_calls_not_drawn" at stop (objects.c). */
enum act_cl_undrawn { ACT_CL_UNDRAWN_RETAIN_EVENT, ACT_CL_UNDRAWN_RELEASE_EVENT };
#define ACT_CL_UNDRAWN_KINDS 2
void act_cl_undrawn_count(enum act_cl_undrawn kind); /* this thread, no locked instruction */
/* Counted since the last take, by every thread (the report at stop; a
 * forked child takes its parent's counts away). */
uint64_t act_cl_undrawn_take(enum act_cl_undrawn kind);

/* Start tracing one enqueue on `q`: ids, start time. NULL when the
 * command cannot be traced (out of memory; counted as an error). */
act_cl_op *act_cl_op_begin(cl_command_queue q, unsigned kind, const char *name);
/* The event pointer to hand the real call: the app's, or ours. */
static inline cl_event *act_cl_op_event(act_cl_op *op, cl_event *app_ev)
{
    return app_ev ? app_ev : &op->ev;
}
/* Finish: host slice `api`, then (on success) retain/own the event and
 * attach the completion callback. Frees `op` on failure. */
void act_cl_op_end(act_cl_op *op, const char *api, cl_int result, cl_event *app_ev);
/* A kernel launch: the name of kernel `k` (kept by names.c, so it
 * outlives the app's release of `k`) and its argument sizes, from this
 * thread's cache when it holds `k` (objects.c), else asked of the runtime. */
void act_cl_op_kernel(act_cl_op *op, cl_kernel k);

/* ---- errors.c ------------------------------------------------------------ */

/* "CL_INVALID_VALUE" for -30; NULL for a code OpenCL does not define. */
const char *act_cl_error_name(cl_int rc);
/* The "error" arg of the API record just written on this thread. */
void act_cl_error_arg(cl_int rc);
/* An instant event for a command whose event completed with `status` < 0. */
void act_cl_failed_command(const char *name, uint64_t corr, cl_int status);

/* A host slice with no device work (finish, flush, waits, queue calls,
 * failed clRetainEvent/clReleaseEvent), written by the recorder's cheapest
 * writer (act_rec_api_here, in place in the usual case); counted as
 * outside when the capture window closed meanwhile. Returns 1 when it was
 * written (args of the call may follow). */
static inline int act_cl_host_slice(const char *api, uint64_t start, cl_int result)
{
    if (atomic_load_explicit(&act__recording, memory_order_relaxed)) {
        if (act_rec_api_here(api, start, act_clock_now(), result, ACT_SOURCE_OPENCL) != 0)
            return 0;
        if (ACT_UNLIKELY(result < 0))
            act_cl_error_arg(result);
        return 1;
    }
    act_cl_count_outside(ACT_CL_HOST);
    return 0;
}

/* ---- objects.c: lifetimes, leaks, device memory ---------------------------- */

enum act_cl_obj_type {
    ACT_CL_OBJ_CONTEXT = 0,
    ACT_CL_OBJ_QUEUE,
    ACT_CL_OBJ_BUFFER, /* sub-buffers included (their bytes alias the parent's) */
    ACT_CL_OBJ_IMAGE,
    ACT_CL_OBJ_PIPE,
    ACT_CL_OBJ_PROGRAM,
    ACT_CL_OBJ_KERNEL,
    ACT_CL_OBJ_EVENT,
    ACT_CL_OBJ_SAMPLER,
    ACT_CL_OBJ_SVM,
    ACT_CL_OBJ_COMMAND_BUFFER, /* cl_khr_command_buffer */
    ACT_CL_OBJ_TYPES
};

/* The app now holds one reference to the new object `h` of `type`, made
 * in context `ctx` (NULL: none or unknown); `parent` is the buffer a
 * sub-buffer was cut from. `bytes` counts towards the context's device
 * memory (buffers, images, pipes, SVM). No-op when no tool is attached. */
void act_cl_obj_created(int type, const void *h, cl_context ctx, const void *parent,
                        uint64_t bytes);
/* clRetain* / clRelease* by the app on `h` (unknown handles are ignored:
 * created before tracking started). */
void act_cl_obj_retained(const void *h);
void act_cl_obj_released(const void *h);
/* Kernel argument sizes: set by clSetKernelArg*, read at each launch. */
void act_cl_obj_kernel_arg(cl_kernel k, cl_uint index, size_t size);
/* What a launch needs of a kernel, cached per thread: valid while the
 * kernel's node is unchanged (any change bumps a generation), read
 * without a lock or a runtime call when the same kernel is launched
 * again on the same thread. */
#define ACT_CL_KARGS_CACHED 64u /* sizes a launch records */
typedef struct act_cl_kinfo {
    const void *k;
    uint64_t gen;
    uint32_t n;          /* argument sizes (at most ACT_CL_KARGS_CACHED) */
    const char *name;    /* kept by names.c; NULL unless the kernel's creation was seen */
    const char *program; /* "program N" (its program's ordinal), kept; NULL: not known */
    uint64_t sizes[ACT_CL_KARGS_CACHED];
} act_cl_kinfo;
/* names.c: a copy of name `s` (`len` bytes) that lives as long as the
 * process, one per distinct name (NULL: out of memory); and kernel `k`'s
 * name asked of the runtime and kept so (NULL: it would not say). */
const char *act_cl_name_keep(const char *s, size_t len);
const char *act_cl_kernel_name(cl_kernel k);
/* This thread's view of kernel `k`: valid until this thread's next call;
 * NULL when no object is tracked (nothing cached). */
const act_cl_kinfo *act_cl_obj_kernel(cl_kernel k);
/* Kernel k was created from `from`: a program, or the kernel it clones. */
void act_cl_obj_kernel_program(cl_kernel k, const void *from);
/* Objects are being tracked: the leak report is registered (once). */
void act_cl_obj_use(void);
/* Events (evtab.c): the app's references without a lock; an event the
 * table has no room for goes to the functions above. */
void act_cl_event_created(cl_event e, cl_context ctx);
void act_cl_event_retained(const void *e);
void act_cl_event_released(const void *e);
/* Events the app still holds (leak report); empty the table (fork). */
uint64_t act_cl_events_live(void);
void act_cl_events_forget(void);
/* Command buffers (cl_khr_command_buffer): the queue `h` was created
 * for, noted at its creation; NULL when unknown. */
void act_cl_obj_set_queue(const void *h, cl_command_queue q);
cl_command_queue act_cl_obj_queue(const void *h);
/* The event table's live count and fork reset, for the leak report and a
 * forked child (evtab.c hands them over at its first use). */
void act_cl_obj_events_table(uint64_t (*live)(void), void (*forget)(void));
/* The leak report (metadata "opencl_leaks"), written at stop. */
void act_cl_obj_report(void);

/* Register the drain handler with the lifecycle (once). */
void act_cl_event_register_stop(void);

#endif
