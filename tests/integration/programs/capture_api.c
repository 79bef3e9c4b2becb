/*
 * capture_api.c -- capture window by API: creates its queue (window still
 * closed under ACCELTRACE_CAPTURE_RANGE=api), runs 2 "inc" kernels before
 * act_start(), 3 "twice" kernels inside the window and 4 "inc" kernels
 * after act_stop(). Only the 3 inside may be recorded, with timestamps
 * (profiling must have been forced although the queue was created before
 * the window opened); the others, the fill and the read (8 commands) are counted as outside
 * Links libacceltrace for act_start/act_stop (without a tool attached they
 * do nothing).
 */
#include "acceltrace.h"
#include "cl_common.h"

static void run(tcl *t, cl_kernel k, int n)
{
    size_t gws = 32;
    for (int i = 0; i < n; i++)
        CHECK(clEnqueueNDRangeKernel(t->q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
    CHECK(clFinish(t->q));
}

int main(void)
{
    tcl t;
    tcl_setup(&t, 0);
    cl_mem a = tcl_buffer(&t, 32 * sizeof(int));
    int zero = 0;
    CHECK(clEnqueueFillBuffer(t.q, a, &zero, sizeof zero, 0, 32 * sizeof(int), 0, NULL, NULL));
    cl_kernel inc = tcl_kernel(&t, "inc", a), twice = tcl_kernel(&t, "twice", a);
    run(&t, inc, 2);
    act_start();
    run(&t, twice, 3);
    act_stop();
    run(&t, inc, 4);
    int host[32];
    CHECK(clEnqueueReadBuffer(t.q, a, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    printf("capture_api: a[0] = %d\n", host[0]);
    clReleaseKernel(inc);
    clReleaseKernel(twice);
    clReleaseMemObject(a);
    tcl_teardown(&t);
    return host[0] == 20 ? 0 : 1;
}
