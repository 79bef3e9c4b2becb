/*
 * event.c -- one traced command from enqueue to completion.
 *
 * act_cl_op_begin takes the correlation id (shared by the host slice and
 * the device op), the innermost open range and the start time. The real
 * enqueue gets the app's event pointer, or ours when the app passed NULL.
 * act_cl_op_end records the host slice (and a kernel's launch record)
 * and, on success, holds one reference to the event (ours, or a
 * clRetainEvent on the app's, so the app may release its event at once)
 * and attaches a CL_COMPLETE callback.
 *
 * The callback runs on a runtime worker thread, or inline on the app
 * thread (inside clSetEventCallback when the command already finished,
 * inside clFinish/clWaitForEvents): it takes no lock, reads
 * QUEUED/SUBMIT/START/END, maps them onto the host clock, records one
 * act_rec_device_op, drops our reference and frees the op.
 *
 * Outstanding callbacks are counted (here and in the spool header's
 * callbacks_pending, which survives a crash). At stop, the drain handler
 * flushes live queues and waits up to ACCELTRACE_DRAIN_TIMEOUT for those
 * registered before it began (other threads may go on enqueuing while
 * exit() runs: their work is not waited for); those that never came are
 * counted in callbacks_lost and reported. One of them arriving after the
 * drain gave up is taken off callbacks_lost again, so that lost never
 * exceeds pending.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_source.h"
#include "config.h"
#include "init/init.h"

/* Callbacks registered before the drain began and not arrived yet (what
 * the drain waits for); all of them, late ones too, are counted in the
 * spool header's callbacks_pending. */
static _Atomic uint64_t act_cl_pending_early;
static _Atomic int act_cl_draining; /* 1: the drain began; 2: it gave up */
static _Atomic int act_cl_alloc_failed;

/* The callbacks pending after the change (1 when there is no spool). */
static uint64_t act_cl_pending_add(int64_t d)
{
    act_spool_header *h = act_recorder_header();
    if (!h)
        return 1;
    return __atomic_add_fetch(&h->callbacks_pending, (uint64_t)d, __ATOMIC_RELAXED);
}

/* A callback registered before the drain began has arrived. After the
 * drain gave up it was counted lost: it is not any more. */
static void act_cl_early_done(void)
{
    atomic_fetch_sub(&act_cl_pending_early, 1);
    if (atomic_load(&act_cl_draining) != 2)
        return;
    act_spool_header *h = act_recorder_header();
    if (!h)
        return;
    uint64_t lost = __atomic_load_n(&h->callbacks_lost, __ATOMIC_RELAXED);
    while (lost && !__atomic_compare_exchange_n(&h->callbacks_lost, &lost, lost - 1, 0,
                                                __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

act_cl_op *act_cl_op_begin(cl_command_queue q, unsigned kind, const char *name)
{
    act_cl_queue *info = act_cl_queue_get(q);
    act_cl_op *op = info ? act_cl_op_alloc() : NULL;
    if (!op) {
        if (info && !atomic_exchange(&act_cl_alloc_failed, 1))
            act_rec_error_emit("opencl: out of memory; some commands are not traced");
        return NULL;
    }
    op->corr = act_corr_next();
    op->ext = act_range_current_ext();
    op->bytes = 0;
    memset(op->gsize, 0, sizeof op->gsize);
    memset(op->lsize, 0, sizeof op->lsize);
    op->queue = info;
    op->ev = NULL;
    op->k = NULL;
    op->kind = (uint8_t)kind;
    op->late = 0;
    op->name = name;
    op->program = NULL;
    op->call_end = 0;
    op->start = act_clock_now();
    return op;
}

void act_cl_op_kernel(act_cl_op *op, cl_kernel k)
{
    const act_cl_kinfo *ki = act_cl_obj_kernel(k);
    op->k = k;
    op->nk = ki ? ki->n : 0;
    op->ksizes = ki ? ki->sizes : NULL;
    /* A kernel whose creation was not seen is asked each time: its handle
     * may have been reused for another kernel. */
    op->name = ki && ki->name ? ki->name : act_cl_kernel_name(k);
    op->program = ki && ki->name ? ki->program : NULL;
}

/* The device's one offset (clock.c): the same for every command, so
 * device order and durations are kept exactly. */
static int64_t act_cl_offset(const act_cl_op *op, cl_ulong queued)
{
    act_cl_device *d = op->queue->dev;
    int st = atomic_load_explicit(&d->anchor, memory_order_acquire);
    if (ACT_UNLIKELY(st == ACT_CL_ANCHOR_WAIT || st == ACT_CL_ANCHOR_SETTING))
        act_cl_clock_anchor(d, op->start, op->call_end ? op->call_end : op->start, queued);
    return atomic_load_explicit(&d->offset_ns, memory_order_relaxed);
}

static uint64_t act_cl_map_time(int64_t off, cl_ulong t)
{
    int64_t v = (int64_t)t + off;
    return v > 0 ? (uint64_t)v : 0;
}

/*
 * Failed commands whose callback never comes. PoCL calls a CL_COMPLETE
 * callback only on success: a command that fails (its wait list failed)
 * would stay pending until the drain gives up. Each traced command takes
 * a slot (when one is free); its callback clears it. At stop the drain
 * looks at the commands still in slots and records those whose event has
 * a negative status itself. While it does, callbacks free nothing
 * (act_cl_sweeping; the drain first waits out callbacks in flight), so it
 * never reads a freed op; the slot is claimed with a CAS by exactly one
 * of the two.
 */
#define ACT_CL_SLOTS 16384u /* power of two */
static act_cl_op *_Atomic act_cl_slots[ACT_CL_SLOTS];
/* Apart from each other and from what enqueues touch (cache lines). */
static _Alignas(64) _Atomic int act_cl_sweeping;
static _Alignas(64) _Atomic int act_cl_cb_inflight;

static void act_cl_slot_put(act_cl_op *op)
{
    /* By correlation id: consecutive commands take neighbouring slots, on
     * a cache line this thread just wrote (a slot per new line, or a
     * shared counter, cost a cache miss per enqueue). */
    uint32_t s = (uint32_t)op->corr & (ACT_CL_SLOTS - 1);
    act_cl_op *expected = NULL;
    op->slot = atomic_compare_exchange_strong(&act_cl_slots[s], &expected, op) ? s + 1 : 0;
}

/* 1 when the caller now owns the completion of `op`. */
static int act_cl_slot_take(act_cl_op *op)
{
    if (!op->slot)
        return 1;
    act_cl_op *expected = op;
    return atomic_compare_exchange_strong(&act_cl_slots[op->slot - 1], &expected, NULL);
}

static void act_cl_op_record(act_cl_op *op, cl_event ev, cl_int status)
{
    cl_ulong ts[4] = {0, 0, 0, 0};
    static const cl_profiling_info which[4] = {
        CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT, CL_PROFILING_COMMAND_START,
        CL_PROFILING_COMMAND_END};
    uint16_t flags = 0;
    if (status < 0)
        flags |= ACT_OPF_NO_TIMES;
    for (int i = 0; i < 4 && !(flags & ACT_OPF_NO_TIMES); i++)
        if (act_cl_next.clGetEventProfilingInfo(ev, which[i], sizeof ts[i], &ts[i], NULL) !=
            CL_SUCCESS)
            flags |= ACT_OPF_NO_TIMES;
    if (op->queue->actual & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        flags |= ACT_OPF_OOO;

    /* Before the reservation: anchoring may record the device's CLOCK. */
    int64_t off = flags & ACT_OPF_NO_TIMES ? 0 : act_cl_offset(op, ts[0]);
    uint32_t name = act_str_intern_stable(op->name); /* literal or kept: never freed */
    uint32_t program = op->program ? act_str_intern_stable(op->program) : 0;
    act_rec_device_op *r = act_rec_reserve(ACT_REC_DEVICE_OP, sizeof *r);
    if (r) {
        act_cl_zero_body(r, sizeof *r);
        r->h.aux = name;
        r->op = op->kind;
        r->source = ACT_SOURCE_OPENCL;
        r->flags = flags;
        r->status = status < 0 ? status : 0;
        r->device = (uint64_t)(uintptr_t)op->queue->dev->id;
        r->queue = (uint64_t)(uintptr_t)op->queue->handle;
        if (!(flags & ACT_OPF_NO_TIMES)) {
            r->queued = act_cl_map_time(off, ts[0]);
            r->submit = act_cl_map_time(off, ts[1]);
            r->start = act_cl_map_time(off, ts[2]);
            r->end = act_cl_map_time(off, ts[3]);
        }
        r->detail = program;
        r->corr = op->corr;
        r->ext = 0; /* joined through corr */
        r->bytes = op->bytes;
        memcpy(r->gsize, op->gsize, sizeof r->gsize);
        memcpy(r->lsize, op->lsize, sizeof r->lsize);
        act_rec_commit();
    }
    if (status < 0)
        act_cl_failed_command(op->name, op->corr, status);
}

static void CL_CALLBACK act_cl_on_complete(cl_event ev, cl_int status, void *user)
{
    act_cl_op *op = user;
    atomic_fetch_add(&act_cl_cb_inflight, 1);
    if (act_cl_slot_take(op)) {
        act_cl_op_record(op, ev, status);
        int early = !op->late;
        if (!atomic_load(&act_cl_sweeping)) {
            act_cl_next.clReleaseEvent(op->ev);
            act_cl_op_release(op);
        }
        /* Last: the drain trusts what was recorded by now. */
        uint64_t left = act_cl_pending_add(-1);
        if (early)
            act_cl_early_done();
        /* The last outstanding command done: this thread (a runtime
         * worker, or the app's inside clFinish) waits for more, and what
         * it recorded is read while it waits (record.h S1). */
        if (!left)
            act_rec_seg_idle();
    }
    atomic_fetch_sub(&act_cl_cb_inflight, 1);
}

/* Record the failed commands still in slots (the drain, at stop). */
static void act_cl_sweep_failed(void)
{
    atomic_store(&act_cl_sweeping, 1);
    uint64_t until = act_clock_now() + 100000000ull;
    while (atomic_load(&act_cl_cb_inflight) > 0 && act_clock_now() < until) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&act_cl_cb_inflight) > 0)
        return; /* a callback is stuck: leave its op alone */
    for (uint32_t s = 0; s < ACT_CL_SLOTS; s++) {
        act_cl_op *op = atomic_load(&act_cl_slots[s]);
        cl_int st = 0;
        if (!op ||
            act_cl_next.clGetEventInfo(op->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                                       NULL) != CL_SUCCESS ||
            st >= 0)
            continue;
        act_cl_op *expected = op;
        if (!atomic_compare_exchange_strong(&act_cl_slots[s], &expected, NULL))
            continue;
        int early = !op->late;
        act_cl_op_record(op, op->ev, st);
        act_cl_pending_add(-1); /* the op and our event reference go with the process */
        if (early)
            act_cl_early_done();
    }
}

/* ---- the launch record of a kernel ---------------------------------------- */

/* Global and local sizes as the device op shows them: unused dimensions
 * 1, a local size the runtime chooses 0 (only when the record below
 * could not be written). */
static void act_cl_launch_sizes(act_cl_op *op)
{
    for (uint32_t i = 0; i < 3; i++) {
        op->gsize[i] = i < op->dim && op->gws ? op->gws[i] : 1;
        op->lsize[i] = op->lws ? (i < op->dim ? op->lws[i] : 1) : 0;
    }
}

/* The args of a kernel launch (work dim, sizes as given, offset, kernel
 * argument sizes) right after its API record; fills op's gsize/lsize for
 * its device op. Inlined into act_cl_op_end: it runs at every launch. */
static inline __attribute__((always_inline)) void act_cl_launch_args(act_cl_op *op)
{
    /* One ACT_RECARG_LAUNCH record (record.h): five args for the price of
     * one, written straight into the reserved record, filling op's sizes
     * on the way (one pass over the app's arrays). */
    static const size_t ones[3] = {1, 1, 1}; /* no global size: the call failed */
    const size_t *g = op->gws ? op->gws : ones, *l = op->lws, *o = op->off;
    uint32_t dim = op->dim, nk = op->nk;
    const uint64_t *ks = op->ksizes;
    uint32_t n = 2 + dim * (1 + (l != NULL) + (o != NULL)) + nk;
    act_rec_arg *r = act_rec_reserve(ACT_REC_ARG, sizeof *r + n * sizeof(uint64_t));
    if (ACT_UNLIKELY(!r)) { /* counted as dropped */
        act_cl_launch_sizes(op);
        return;
    }
    r->h.aux = 0; /* LAUNCH needs no key */
    r->type = ACT_RECARG_LAUNCH;
    r->pad = 0;
    r->v.u = n;
    uint64_t *v = (uint64_t *)(r + 1), lz = l != NULL;
    uint64_t *vg = v + 2, *vl = vg + dim, *vo = vl + (l ? dim : 0);
    v[0] = dim;
    v[1] = lz | (uint64_t)(o != NULL) << 1;
    op->gsize[0] = op->gsize[1] = op->gsize[2] = 1;
    op->lsize[0] = op->lsize[1] = op->lsize[2] = lz;
    for (uint32_t i = 0; i < dim; i++) {
        vg[i] = op->gsize[i] = g[i];
        if (l)
            vl[i] = op->lsize[i] = l[i];
        if (o)
            vo[i] = o[i];
    }
    uint64_t *vk = vo + (o ? dim : 0);
    for (uint32_t i = 0; i < nk; i++)
        vk[i] = ks[i];
    act_rec_commit();
}

/* The rare ends of act_cl_op_end: the call failed, or its API record was
 * dropped (counted). A device op is recorded if and only if its launch
 * was; our own event, if the app passed none, is ours to release. */
static void act_cl_op_end_slow(act_cl_op *op, cl_int result, int written, cl_event *app_ev)
{
    if (result < 0 && written)
        act_cl_error_arg(result);
    if (op->k && written)
        act_cl_launch_args(op);
    if (result == CL_SUCCESS) {
        if (app_ev)
            act_cl_event_created(*app_ev, NULL);
        else
            act_cl_next.clReleaseEvent(op->ev);
    }
    act_cl_op_release(op);
}

/* clSetEventCallback refused: the command is not traced (said, not lost
 * silently). */
static void act_cl_callback_refused(act_cl_op *op, const char *api, cl_int rc, int late)
{
    act_rec_error_emit("opencl: clSetEventCallback failed (%d) for %s", (int)rc, api);
    act_cl_next.clReleaseEvent(op->ev);
    act_cl_op_release(op);
    act_cl_pending_add(-1);
    if (!late)
        atomic_fetch_sub(&act_cl_pending_early, 1);
}

void act_cl_op_end(act_cl_op *op, const char *api, cl_int result, cl_event *app_ev)
{
    uint64_t end = act_clock_now();
    int written = act_rec_api_emit(api, op->start, end, result == CL_SUCCESS ? op->corr : 0,
                                   op->ext, result, ACT_SOURCE_OPENCL) == 0;
    if (ACT_UNLIKELY(result != CL_SUCCESS || !written)) {
        act_cl_op_end_slow(op, result, written, app_ev);
        return;
    }
    op->call_end = end;
    if (op->k)
        act_cl_launch_args(op);
    if (app_ev) {
        act_cl_event_created(*app_ev, NULL);
        op->ev = *app_ev;
        act_cl_next.clRetainEvent(op->ev);
    }
    act_cl_pending_add(1);
    /* A predictable branch: the drain begins once, at exit. */
    int late = ACT_UNLIKELY(atomic_load_explicit(&act_cl_draining, memory_order_relaxed) != 0);
    op->late = (uint8_t)late;
    if (ACT_LIKELY(!late))
        atomic_fetch_add(&act_cl_pending_early, 1);
    act_cl_slot_put(op);
    cl_int rc = act_cl_next.clSetEventCallback(op->ev, CL_COMPLETE, act_cl_on_complete, op);
    if (ACT_UNLIKELY(rc != CL_SUCCESS) && act_cl_slot_take(op))
        act_cl_callback_refused(op, api, rc, late);
}

/* ---- drain at stop ---------------------------------------------------------- */

static void act_cl_drain(void)
{
    /* Work enqueued from now on (other threads go on while exit() runs)
     * is recorded as usual but not waited for: waiting for it could last
     * the whole timeout, or for ever. */
    atomic_store(&act_cl_draining, 1);
    if (atomic_load(&act_cl_pending_early) == 0)
        return;
    act_cl_queue_flush_all();
    /* Commands that finished normally report within a few polls; then
     * the failed ones whose callback will not come are looked for. */
    for (int i = 0; i < 50 && atomic_load(&act_cl_pending_early) > 0; i++) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&act_cl_pending_early) > 0)
        act_cl_sweep_failed();
    uint64_t deadline = act_clock_now() + act_cfg.drain_timeout_ms * 1000000ull;
    while (atomic_load(&act_cl_pending_early) > 0 && act_clock_now() < deadline) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    /* Gave up: from now on an arrival takes itself off the lost count,
     * and those that arrived before the count was taken are not in it. */
    atomic_store(&act_cl_draining, 2);
    act_spool_header *h = act_recorder_header();
    if (h)
        __atomic_fetch_add(&h->callbacks_lost, atomic_load(&act_cl_pending_early),
                           __ATOMIC_RELAXED);
    uint64_t lost = h ? __atomic_load_n(&h->callbacks_lost, __ATOMIC_RELAXED) : 0;
    if (lost) {
        act_rec_error_emit("opencl: %llu completion callbacks did not arrive within %llu ms",
                           (unsigned long long)lost, (unsigned long long)act_cfg.drain_timeout_ms);
    }
}

/* A forked child inherits the count but none of the commands: it must
 * not wait at its exit for callbacks that belong to its parent. */
static void act_cl_atfork_child(void)
{
    atomic_store(&act_cl_pending_early, 0);
    atomic_store(&act_cl_draining, 0);
}

void act_cl_event_register_stop(void)
{
    act_lifecycle_on_stop("opencl.drain", act_cl_drain);
    pthread_atfork(NULL, NULL, act_cl_atfork_child);
}
