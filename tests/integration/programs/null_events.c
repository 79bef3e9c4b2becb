/*
 * null_events.c -- every command is enqueued with event == NULL (the
 * tracer must use its own events). Usage: null_events [N]; enqueues N
 * (default 20) "inc" kernels plus one write, one fill, one copy and one
 * read, then prints the result. The tests count N kernel slices.
 */
#include "cl_common.h"

#define ITEMS 1024

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20;
    tcl t;
    tcl_setup(&t, 0);
    static int host[ITEMS];
    cl_mem a = tcl_buffer(&t, sizeof host), b = tcl_buffer(&t, sizeof host);
    int zero = 0;
    CHECK(clEnqueueWriteBuffer(t.q, a, CL_FALSE, 0, sizeof host, host, 0, NULL, NULL));
    CHECK(clEnqueueFillBuffer(t.q, a, &zero, sizeof zero, 0, sizeof host, 0, NULL, NULL));
    cl_kernel k = tcl_kernel(&t, "inc", a);
    size_t gws = ITEMS;
    for (int i = 0; i < n; i++)
        CHECK(clEnqueueNDRangeKernel(t.q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
    CHECK(clEnqueueCopyBuffer(t.q, a, b, 0, 0, sizeof host, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(t.q, b, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    CHECK(clFinish(t.q));
    long sum = 0;
    for (int i = 0; i < ITEMS; i++)
        sum += host[i];
    printf("null_events: %d kernels, sum %ld\n", n, sum);
    clReleaseKernel(k);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    tcl_teardown(&t);
    return sum == (long)n * ITEMS ? 0 : 1;
}
