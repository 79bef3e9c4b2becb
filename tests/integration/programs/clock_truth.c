/*
 * clock_truth.c -- a program that reads its own device times (issue 30.6):
 * on one in-order queue with profiling, a write, `n` kernels (inc and
 * twice in turn, of growing sizes), a fill, a copy and a read, each with
 * its event; after clFinish it writes, per command in enqueue order, its
 * CL_PROFILING_COMMAND_QUEUED, SUBMIT, START and END (device clock, ns)
 * to the file argv[1]: "index queued submit start end". A traced run
 * must show each command at exactly these times moved by the one offset
 * the trace states for the device (check_clock_truth.py).
 *
 * usage: it_clock_truth OUT [n]
 */
#include <stdio.h>
#include <stdlib.h>

#include "cl_common.h"

#define MAX_CMDS 1024

static cl_ulong prof(cl_event ev, cl_profiling_info what)
{
    cl_ulong v = 0;
    CHECK(clGetEventProfilingInfo(ev, what, sizeof v, &v, NULL));
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT [n]\n", argv[0]);
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 40;
    if (n < 1 || n > MAX_CMDS - 4)
        n = 40;
    tcl t;
    tcl_setup(&t, CL_QUEUE_PROFILING_ENABLE);
    enum { N = 1 << 16 };
    static int host[N];
    cl_int rc;
    cl_mem a = clCreateBuffer(t.ctx, CL_MEM_READ_WRITE, sizeof host, NULL, &rc);
    CHECK(rc);
    cl_mem b = clCreateBuffer(t.ctx, CL_MEM_READ_WRITE, sizeof host, NULL, &rc);
    CHECK(rc);
    cl_kernel inc = tcl_kernel(&t, "inc", a), twice = tcl_kernel(&t, "twice", a);
    cl_event ev[MAX_CMDS];
    int k = 0;
    CHECK(clEnqueueWriteBuffer(t.q, a, CL_FALSE, 0, sizeof host, host, 0, NULL, &ev[k++]));
    for (int i = 0; i < n; i++) {
        size_t g = (size_t)1024 << (i % 7);
        CHECK(
            clEnqueueNDRangeKernel(t.q, i % 2 ? twice : inc, 1, NULL, &g, NULL, 0, NULL, &ev[k++]));
    }
    int zero = 0;
    CHECK(clEnqueueFillBuffer(t.q, b, &zero, sizeof zero, 0, sizeof host, 0, NULL, &ev[k++]));
    CHECK(clEnqueueCopyBuffer(t.q, a, b, 0, 0, sizeof host, 0, NULL, &ev[k++]));
    CHECK(clEnqueueReadBuffer(t.q, b, CL_FALSE, 0, sizeof host, host, 0, NULL, &ev[k++]));
    CHECK(clFinish(t.q));
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    for (int i = 0; i < k; i++) {
        fprintf(f, "%d %llu %llu %llu %llu\n", i,
                (unsigned long long)prof(ev[i], CL_PROFILING_COMMAND_QUEUED),
                (unsigned long long)prof(ev[i], CL_PROFILING_COMMAND_SUBMIT),
                (unsigned long long)prof(ev[i], CL_PROFILING_COMMAND_START),
                (unsigned long long)prof(ev[i], CL_PROFILING_COMMAND_END));
        CHECK(clReleaseEvent(ev[i]));
    }
    if (fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    printf("%d commands\n", k);
    return 0;
}
