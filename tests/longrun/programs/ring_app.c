/*
 * ring_app.c -- a program for the flight-recorder tests (--ring): it sets
 * metadata and opens an outer range "run" first (both far older than a
 * small ring keeps), marks "early", then records `steps` ranges "step"
 * (each with a nested "inner" and, every 1000 steps, a mark "m<k>"), marks
 * "last" and ends as asked:
 *   exit    returns 0 after popping "run"
 *   segv    dies of SIGSEGV with "run" still open
 *   wait S [NAP_US]
 *           keeps recording steps for S seconds (for triggers), 200 at a
 *           time with a nap of NAP_US microseconds (2000; 0: none, a
 *           thread that never stops writing), then exits
 *   cl      launches a kernel on the first OpenCL device inside each step
 *           (steps are then the count of launches), then exits like exit
 * It prints the index of the last 1000-step mark, so a test knows what the
 * end of the window must hold.
 */
#define CL_TARGET_OPENCL_VERSION 300

#include <CL/cl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acceltrace.h"

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cl_int e_ = (x);                                                                           \
        if (e_ != CL_SUCCESS) {                                                                    \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, (int)e_);                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static long steps_done;
static cl_command_queue q; /* cl mode: each step launches `kern` */
static cl_kernel kern;

/* cl mode: a queue and a one-line kernel on the first device. */
static void cl_setup(void)
{
    static const char *src =
        "__kernel void k_step(__global float *a) { a[get_global_id(0)] += 1.0f; }";
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err;
    CHECK(clGetPlatformIDs(1, &plat, NULL));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    kern = clCreateKernel(prog, "k_step", &err);
    CHECK(err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64 * sizeof(float), NULL, &err);
    CHECK(err);
    CHECK(clSetKernelArg(kern, 0, sizeof(buf), &buf));
}

static void steps(long n)
{
    char name[32];
    size_t gsize = 64;
    for (long i = 0; i < n; i++, steps_done++) {
        act_range_push("step");
        act_range_push("inner");
        /* Every other launch takes an event and lets it go at once: event
         * releases are recorded through their own per-thread name cache,
         * whose names must be defined in every kept chunk too. */
        cl_event ev = NULL;
        if (q)
            CHECK(clEnqueueNDRangeKernel(q, kern, 1, NULL, &gsize, NULL, 0, NULL,
                                         i % 2 ? &ev : NULL));
        if (ev)
            CHECK(clReleaseEvent(ev));
        act_range_pop();
        act_range_pop();
        if (q && i % 64 == 63)
            CHECK(clFinish(q));
        if (steps_done % 1000 == 0) {
            snprintf(name, sizeof(name), "m%ld", steps_done / 1000);
            act_mark(name);
        }
    }
}

static double since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "exit";
    long n = argc > 2 ? atol(argv[2]) : 200000;
    if (!strcmp(mode, "cl"))
        cl_setup();
    act_metadata_set("dataset", "ring-test");
    act_range_push("run");
    act_mark("early");
    steps(n);
    if (!strcmp(mode, "wait")) {
        double secs = argc > 3 ? atof(argv[3]) : 3.0;
        long nap_us = argc > 4 ? atol(argv[4]) : 2000;
        struct timespec t0, nap = {nap_us / 1000000, nap_us % 1000000 * 1000};
        clock_gettime(CLOCK_MONOTONIC, &t0);
        printf("ready\n");
        fflush(stdout);
        while (since(&t0) < secs) {
            steps(200);
            if (nap_us > 0)
                nanosleep(&nap, NULL);
        }
    }
    if (q)
        CHECK(clFinish(q));
    printf("last mark m%ld\n", (steps_done - 1) / 1000);
    fflush(stdout);
    act_mark("last");
    if (!strcmp(mode, "segv")) {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
    act_range_pop();
    return 0;
}
