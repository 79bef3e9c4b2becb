/*
 * never_complete.c -- exits with two commands that can never run: a
 * kernel and a marker held back by a user event that is never set. Their
 * completion callbacks cannot arrive; the tracer must wait only as long as
 * ACCELTRACE_DRAIN_TIMEOUT allows and count them as lost. One kernel
 * before them completes normally.
 */
#include "cl_common.h"

int main(void)
{
    tcl t;
    tcl_setup(&t, 0);
    cl_int rc;
    cl_mem a = tcl_buffer(&t, 16 * sizeof(int));
    cl_kernel k = tcl_kernel(&t, "inc", a);
    size_t gws = 16;
    CHECK(clEnqueueNDRangeKernel(t.q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
    CHECK(clFinish(t.q));
    cl_event gate = clCreateUserEvent(t.ctx, &rc);
    CHECK(rc);
    CHECK(clEnqueueNDRangeKernel(t.q, k, 1, NULL, &gws, NULL, 1, &gate, NULL));
    CHECK(clEnqueueMarkerWithWaitList(t.q, 0, NULL, NULL));
    printf("never_complete: leaving 2 commands behind\n");
    return 0;
}
