/*
 * release_events.c -- the app asks for an event for every command and
 * releases it immediately, before the command has run, and releases the
 * kernel right after enqueueing it (the tracer must hold its own
 * references and must have read the kernel name before). Enqueues 16
 * kernels, alternating "inc" and "twice", on an in-order queue.
 */
#include "cl_common.h"

#define ITEMS   256
#define KERNELS 16

int main(void)
{
    tcl t;
    tcl_setup(&t, 0);
    static int host[ITEMS];
    for (int i = 0; i < ITEMS; i++)
        host[i] = i % 3;
    cl_mem a = tcl_buffer(&t, sizeof host);
    cl_event ev;
    CHECK(clEnqueueWriteBuffer(t.q, a, CL_FALSE, 0, sizeof host, host, 0, NULL, &ev));
    CHECK(clReleaseEvent(ev));
    size_t gws = ITEMS;
    for (int i = 0; i < KERNELS; i++) {
        cl_kernel k = tcl_kernel(&t, i % 2 ? "twice" : "inc", a);
        CHECK(clEnqueueNDRangeKernel(t.q, k, 1, NULL, &gws, NULL, 0, NULL, &ev));
        CHECK(clReleaseEvent(ev));
        CHECK(clReleaseKernel(k));
    }
    CHECK(clEnqueueReadBuffer(t.q, a, CL_FALSE, 0, sizeof host, host, 0, NULL, &ev));
    CHECK(clReleaseEvent(ev));
    CHECK(clFinish(t.q));
    long sum = 0;
    for (int i = 0; i < ITEMS; i++)
        sum += host[i];
    printf("release_events: %d kernels, sum %ld\n", KERNELS, sum);
    clReleaseMemObject(a);
    tcl_teardown(&t);
    return 0;
}
