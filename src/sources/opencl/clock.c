/*
 * clock.c -- mapping a device's profiling clock onto the host timeline
 * (CLOCK_MONOTONIC_RAW, act_clock_now()): host = device + offset, one
 * offset per device, so that the device's own order and durations are
 * kept exactly (an in-order queue never shows an overlap). Found once per
 * device, at its first queue, and recorded as an act_rec_clock (method,
 * offset, error bound), which ends up in the trace metadata
 * ("opencl_clock_<device pid>", timeline/device_clock.c). Methods, best
 * first (ACCELTRACE_OPENCL_CLOCK forces one; a forced method that cannot
 * work here is said in the trace's errors, and the next one is used):
 *
 *  "device_host_timer": clGetDeviceAndHostTimer gives a (device, host)
 *      pair; clGetHostTimer bracketed by our clock reads maps the
 *      runtime's host clock onto ours. Error: half the tightest bracket.
 *  "monotonic_raw": the device stamps CLOCK_MONOTONIC_RAW itself (PoCL).
 *      Detected by enqueueing markers between two host clock reads: every
 *      QUEUED must fall inside its bracket. Offset 0; the error bound is
 *      the tightest bracket (a smaller offset could not be told apart).
 *  "anchor_marker": some other clock. offset = bracket midpoint - QUEUED
 *      of the tightest marker; error: half that bracket.
 *  "anchor_enqueue": no profiled marker possible. The program's first
 *      command that completes with times is the marker: its QUEUED lies
 *      within its own enqueue call, offset = the call's midpoint - QUEUED,
 *      error: half the call (recorded then, act_cl_clock_anchor).
 *
 * Each command used to be anchored on its own enqueue call instead (and
 * on every device: the flag was never cleared after a calibration),
 * which moved starts earlier by up to the length of the call and drew
 * overlaps on in-order queues (issue 30.6).
 *
 * Markers go on the app's new queue before the app has its handle, so it
 * never sees them. Offsets are not recalibrated: PoCL needs none; drift of
 * other clocks over long runs is a known limit.
 */
#include <sched.h>
#include <string.h>

#include "cl_source.h"
#include "config.h"

#define ACT_CL_CALIB_TRIES 3

static void act_cl_clock_record(const act_cl_device *dev)
{
    uint32_t method = act_str_intern_cstr(dev->method);
    act_rec_clock *r = act_rec_reserve(ACT_REC_CLOCK, sizeof *r);
    if (!r)
        return;
    act_cl_zero_body(r, sizeof *r);
    r->h.aux = method;
    r->device = (uint64_t)(uintptr_t)dev->id;
    r->offset_ns = atomic_load_explicit(&dev->offset_ns, memory_order_relaxed);
    r->error_ns = dev->error_ns;
    act_rec_commit();
}

static int act_cl_clock_timer_api(act_cl_device *dev)
{
    if (!act_cl_next.clGetDeviceAndHostTimer || !act_cl_next.clGetHostTimer)
        return 0;
    int64_t best_err = INT64_MAX, best_off = 0;
    for (int i = 0; i < ACT_CL_CALIB_TRIES; i++) {
        cl_ulong dts, hts, hts2;
        if (act_cl_next.clGetDeviceAndHostTimer(dev->id, &dts, &hts) != CL_SUCCESS)
            return 0;
        uint64_t t0 = act_clock_now();
        if (act_cl_next.clGetHostTimer(dev->id, &hts2) != CL_SUCCESS)
            return 0;
        uint64_t t1 = act_clock_now();
        int64_t host_to_ours = (int64_t)(t0 + (t1 - t0) / 2) - (int64_t)hts2;
        int64_t err = (int64_t)(t1 - t0) / 2;
        if (err < best_err) {
            best_err = err;
            best_off = (int64_t)hts - (int64_t)dts + host_to_ours;
        }
    }
    atomic_store_explicit(&dev->offset_ns, best_off, memory_order_relaxed);
    dev->error_ns = best_err;
    dev->method = "device_host_timer";
    return 1;
}

/* One marker between two host reads; 0 on success. */
static int act_cl_clock_marker(cl_command_queue q, uint64_t *t0, uint64_t *t1, cl_ulong *queued)
{
    cl_event ev = NULL;
    *t0 = act_clock_now();
    cl_int rc = act_cl_next.clEnqueueMarkerWithWaitList(q, 0, NULL, &ev);
    *t1 = act_clock_now();
    if (rc != CL_SUCCESS)
        return -1;
    rc = act_cl_next.clWaitForEvents(1, &ev);
    if (rc == CL_SUCCESS)
        rc = act_cl_next.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof *queued,
                                                 queued, NULL);
    act_cl_next.clReleaseEvent(ev);
    return rc == CL_SUCCESS ? 0 : -1;
}

/* Markers between host clock reads (want: 0 auto, or the forced
 * monotonic_raw / anchor_marker); 0 when they cannot say. */
static int act_cl_clock_markers(act_cl_device *dev, cl_command_queue q, int want)
{
    int inside = 0;
    uint64_t best_w = UINT64_MAX, best_mid = 0;
    cl_ulong best_q = 0;
    for (int i = 0; i < ACT_CL_CALIB_TRIES; i++) {
        uint64_t t0, t1;
        cl_ulong queued;
        if (act_cl_clock_marker(q, &t0, &t1, &queued) != 0)
            return 0;
        inside += queued >= t0 && queued <= t1;
        if (t1 - t0 < best_w) {
            best_w = t1 - t0;
            best_mid = t0 + (t1 - t0) / 2;
            best_q = queued;
        }
    }
    if (inside == ACT_CL_CALIB_TRIES && want != ACT_CL_CLOCK_ANCHOR_MARKER) {
        atomic_store_explicit(&dev->offset_ns, 0, memory_order_relaxed);
        dev->error_ns = (int64_t)best_w;
        dev->method = "monotonic_raw";
        return 1;
    }
    if (want == ACT_CL_CLOCK_MONOTONIC_RAW)
        return 0; /* the device does not stamp our clock */
    atomic_store_explicit(&dev->offset_ns, (int64_t)best_mid - (int64_t)best_q,
                          memory_order_relaxed);
    dev->error_ns = (int64_t)(best_w / 2);
    dev->method = "anchor_marker";
    return 1;
}

/* No command anchors the offset while a calibration runs (a device first
 * mapped by anchor_enqueue, in an earlier spool, from a queue without
 * profiling, may calibrate now): the anchoring state it had. */
static int act_cl_clock_anchor_stop(act_cl_device *dev)
{
    for (;;) {
        int st = atomic_load_explicit(&dev->anchor, memory_order_acquire);
        if (st == ACT_CL_ANCHOR_SETTING) {
            sched_yield(); /* a completion is setting it: a few stores away */
            continue;
        }
        if (st == ACT_CL_ANCHOR_NONE ||
            atomic_compare_exchange_strong(&dev->anchor, &st, ACT_CL_ANCHOR_NONE))
            return st;
    }
}

/* The mapping by the program's first command (anchor_enqueue): waits for
 * it, or records the one found already (`prev` DONE: a new spool). */
static void act_cl_clock_by_first_command(act_cl_device *dev, int prev)
{
    dev->method = "anchor_enqueue";
    if (prev == ACT_CL_ANCHOR_DONE) {
        atomic_store_explicit(&dev->anchor, ACT_CL_ANCHOR_DONE, memory_order_release);
        act_cl_clock_record(dev);
        return;
    }
    atomic_store_explicit(&dev->anchor, ACT_CL_ANCHOR_WAIT, memory_order_release);
}

static int act_cl_clock_try(act_cl_device *dev, cl_command_queue q, int queue_profiles, int want)
{
    switch (want) {
    case ACT_CL_CLOCK_TIMER: return act_cl_clock_timer_api(dev);
    case ACT_CL_CLOCK_MONOTONIC_RAW:
    case ACT_CL_CLOCK_ANCHOR_MARKER: return queue_profiles && act_cl_clock_markers(dev, q, want);
    default: return 0;
    }
}

void act_cl_clock_calibrate(act_cl_device *dev, cl_command_queue q, int queue_profiles)
{
    int want = act_cfg.opencl_clock;
    int prev = act_cl_clock_anchor_stop(dev);
    if (want && want != ACT_CL_CLOCK_ANCHOR_ENQUEUE) {
        if (act_cl_clock_try(dev, q, queue_profiles, want)) {
            act_cl_clock_record(dev);
            return;
        }
        act_rec_error_emit("opencl: ACCELTRACE_OPENCL_CLOCK=%s does not work on device %u; "
                           "the next method is used",
                           act_cl_clock_names[want], dev->index);
    }
    if (want != ACT_CL_CLOCK_ANCHOR_ENQUEUE &&
        (act_cl_clock_timer_api(dev) || (queue_profiles && act_cl_clock_markers(dev, q, 0)))) {
        act_cl_clock_record(dev);
        return;
    }
    act_cl_clock_by_first_command(dev, prev);
}

void act_cl_clock_anchor(act_cl_device *dev, uint64_t t0, uint64_t t1, uint64_t queued)
{
    int st = ACT_CL_ANCHOR_WAIT;
    if (atomic_compare_exchange_strong(&dev->anchor, &st, ACT_CL_ANCHOR_SETTING)) {
        if (t1 < t0)
            t1 = t0;
        atomic_store_explicit(&dev->offset_ns, (int64_t)(t0 + (t1 - t0) / 2) - (int64_t)queued,
                              memory_order_relaxed);
        dev->error_ns = (int64_t)((t1 - t0 + 1) / 2);
        act_cl_clock_record(dev);
        atomic_store_explicit(&dev->anchor, ACT_CL_ANCHOR_DONE, memory_order_release);
        return;
    }
    /* Another completion is setting it: a few stores away. */
    while (atomic_load_explicit(&dev->anchor, memory_order_acquire) == ACT_CL_ANCHOR_SETTING)
        sched_yield();
}
