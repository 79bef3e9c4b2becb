/*
 * sync.c -- synchronisation entry points. Markers and barriers that take
 * an event are commands (device ops "Marker"/"Barrier" on their queue);
 * the 1.0-style clEnqueueBarrier/clEnqueueWaitForEvents produce no event
 * and, like clFinish, clFlush and clWaitForEvents, are host slices only.
 */
#include "cl_source.h"

#define ACT_CL_HOST_ONLY(name_, args_)                                                             \
    if (!act_cl_gate(&act_cl_armed_##name_, ACT_CL_HOST))                                          \
        return act_cl_next.name_ args_;                                                            \
    uint64_t t0 = act_clock_now();                                                                 \
    cl_int rc = act_cl_next.name_ args_;                                                           \
    if (act_cl_host_slice(#name_, t0, rc))                                                         \
        act_rec_pystack_sync();                                                                    \
    return rc

static cl_int act_cl_marker_like(cl_command_queue q, int barrier, const char *api, cl_uint n,
                                 const cl_event *w, cl_event *ev)
{
    act_cl_op *op = act_cl_op_begin(q, barrier ? ACT_OP_BARRIER : ACT_OP_MARKER,
                                    barrier ? "Barrier" : "Marker");
    if (!op)
        return barrier ? act_cl_next.clEnqueueBarrierWithWaitList(q, n, w, ev)
                       : act_cl_next.clEnqueueMarkerWithWaitList(q, n, w, ev);
    cl_event *evp = act_cl_op_event(op, ev);
    cl_int rc = barrier ? act_cl_next.clEnqueueBarrierWithWaitList(q, n, w, evp)
                        : act_cl_next.clEnqueueMarkerWithWaitList(q, n, w, evp);
    act_cl_op_end(op, api, rc, ev);
    return rc;
}

cl_int CL_API_CALL act_cl_w_clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint n,
                                                        const cl_event *w, cl_event *ev)
{
    if (!act_cl_gate(&act_cl_armed_clEnqueueMarkerWithWaitList, ACT_CL_CMD))
        return act_cl_next.clEnqueueMarkerWithWaitList(q, n, w, ev);
    return act_cl_marker_like(q, 0, "clEnqueueMarkerWithWaitList", n, w, ev);
}

cl_int CL_API_CALL act_cl_w_clEnqueueBarrierWithWaitList(cl_command_queue q, cl_uint n,
                                                         const cl_event *w, cl_event *ev)
{
    if (!act_cl_gate(&act_cl_armed_clEnqueueBarrierWithWaitList, ACT_CL_CMD))
        return act_cl_next.clEnqueueBarrierWithWaitList(q, n, w, ev);
    return act_cl_marker_like(q, 1, "clEnqueueBarrierWithWaitList", n, w, ev);
}

cl_int CL_API_CALL act_cl_w_clEnqueueMarker(cl_command_queue q, cl_event *ev)
{
    act_cl_op *op;
    if (!act_cl_gate(&act_cl_armed_clEnqueueMarker, ACT_CL_CMD) ||
        !(op = act_cl_op_begin(q, ACT_OP_MARKER, "Marker")))
        return act_cl_next.clEnqueueMarker(q, ev);
    cl_int rc = act_cl_next.clEnqueueMarker(q, act_cl_op_event(op, ev));
    act_cl_op_end(op, "clEnqueueMarker", rc, ev);
    return rc;
}

cl_int CL_API_CALL act_cl_w_clEnqueueBarrier(cl_command_queue q)
{
    ACT_CL_HOST_ONLY(clEnqueueBarrier, (q));
}

cl_int CL_API_CALL act_cl_w_clEnqueueWaitForEvents(cl_command_queue q, cl_uint n, const cl_event *w)
{
    ACT_CL_HOST_ONLY(clEnqueueWaitForEvents, (q, n, w));
}

cl_int CL_API_CALL act_cl_w_clFinish(cl_command_queue q)
{
    ACT_CL_HOST_ONLY(clFinish, (q));
}

cl_int CL_API_CALL act_cl_w_clFlush(cl_command_queue q)
{
    ACT_CL_HOST_ONLY(clFlush, (q));
}

cl_int CL_API_CALL act_cl_w_clWaitForEvents(cl_uint n, const cl_event *w)
{
    ACT_CL_HOST_ONLY(clWaitForEvents, (n, w));
}
