/*
 * clock.c -- mapping a device's profiling clock onto the host timeline
 * (CLOCK_MONOTONIC_RAW, act_clock_now()). Done once per device, at its
 * first queue, and recorded as an act_rec_clock (method + error bound),
 * which ends up in the trace metadata. Methods, best first:
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
 *  "anchor_enqueue": no profiled marker possible; each command's QUEUED
 *      is anchored to the start of its own host enqueue call (event.c).
 *      Error unknown (recorded as -1).
 *
 * Markers go on the app's new queue before the app has its handle, so it
 * never sees them. Offsets are not recalibrated: PoCL needs none; drift of
 * other clocks over long runs is a known limit.
 */
#include <string.h>

#include "cl_source.h"

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
    r->offset_ns = dev->offset_ns;
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
    dev->offset_ns = best_off;
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

static int act_cl_clock_markers(act_cl_device *dev, cl_command_queue q)
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
    if (inside == ACT_CL_CALIB_TRIES) {
        dev->offset_ns = 0;
        dev->error_ns = (int64_t)best_w;
        dev->method = "monotonic_raw";
    } else {
        dev->offset_ns = (int64_t)best_mid - (int64_t)best_q;
        dev->error_ns = (int64_t)(best_w / 2);
        dev->method = "anchor_marker";
    }
    return 1;
}

void act_cl_clock_calibrate(act_cl_device *dev, cl_command_queue q, int queue_profiles)
{
    if (!act_cl_clock_timer_api(dev) && !(queue_profiles && act_cl_clock_markers(dev, q))) {
        dev->offset_ns = 0;
        dev->error_ns = -1;
        dev->per_op_anchor = 1;
        dev->method = "anchor_enqueue";
    }
    act_cl_clock_record(dev);
}
