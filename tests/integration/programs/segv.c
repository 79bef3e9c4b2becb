/*
 * segv.c -- runs 4 kernels, waits for them, prints a line, then dies by
 * SIGSEGV (raised, so the death is the same with or without tracing). The
 * launcher must report 128+11, and the spool of the dead process must
 * still be readable.
 */
#include <signal.h>

#include "cl_common.h"

int main(void)
{
    tcl t;
    tcl_setup(&t, 0);
    cl_mem a = tcl_buffer(&t, 64 * sizeof(int));
    int host[64] = {0};
    CHECK(clEnqueueWriteBuffer(t.q, a, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    cl_kernel k = tcl_kernel(&t, "twice", a);
    size_t gws = 64;
    for (int i = 0; i < 4; i++)
        CHECK(clEnqueueNDRangeKernel(t.q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
    CHECK(clFinish(t.q));
    printf("segv: 4 kernels, now crashing\n");
    fflush(stdout);
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    return 0;
}
