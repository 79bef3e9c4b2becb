/*
 * exit3.c -- runs 3 kernels, waits for them, prints a line and exits with
 * status 3 (the launcher must pass the status through and the trace must
 * still hold the kernels).
 */
#include "cl_common.h"

int main(void)
{
    tcl t;
    tcl_setup(&t, 0);
    cl_mem a = tcl_buffer(&t, 64 * sizeof(int));
    int zero = 0;
    CHECK(clEnqueueFillBuffer(t.q, a, &zero, sizeof zero, 0, 64 * sizeof(int), 0, NULL, NULL));
    cl_kernel k = tcl_kernel(&t, "inc", a);
    size_t gws = 64;
    for (int i = 0; i < 3; i++)
        CHECK(clEnqueueNDRangeKernel(t.q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
    CHECK(clFinish(t.q));
    printf("exit3: 3 kernels, exiting with 3\n");
    fflush(stdout);
    exit(3);
}
