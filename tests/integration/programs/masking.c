/*
 * masking.c -- checks, from the app's side, that tracing is invisible:
 * a queue created without profiling reports no profiling bit in
 * CL_QUEUE_PROPERTIES (and CL_QUEUE_PROPERTIES_ARRAY as given), and its
 * events answer CL_PROFILING_INFO_NOT_AVAILABLE; a queue created with
 * profiling reports it and its events give timestamps, read before and
 * after a queue without profiling exists. Prints what it saw
 * (identical with and without tracing) and exits 0 only if all held.
 */
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <string.h>

#include "cl_common.h"

static int failures;

static void expect(int ok, const char *what)
{
    printf("masking: %-52s %s\n", what, ok ? "ok" : "WRONG");
    failures += !ok;
}

static void run_one(tcl *t, cl_command_queue q, cl_mem a, cl_event *ev)
{
    cl_kernel k = tcl_kernel(t, "inc", a);
    size_t gws = 16;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gws, NULL, 0, NULL, ev));
    CHECK(clWaitForEvents(1, ev));
    clReleaseKernel(k);
}

int main(void)
{
    tcl t;
    /* A profiling queue first: its events are read while no queue hides
     * profiling yet (the layer's fast path), and again after one does. */
    tcl_setup(&t, CL_QUEUE_PROFILING_ENABLE);
    cl_int rc;
    cl_mem a = tcl_buffer(&t, 16 * sizeof(int));
    cl_event ev, first;
    cl_ulong ts = 0;
    run_one(&t, t.q, a, &first);
    rc = clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_END, sizeof ts, &ts, NULL);
    expect(rc == CL_SUCCESS && ts > 0, "first queue, profiling: timestamps available");

    cl_command_queue q0 = clCreateCommandQueueWithProperties(t.ctx, t.dev, NULL, &rc);
    CHECK(rc);
    cl_command_queue_properties props = 99;
    CHECK(clGetCommandQueueInfo(q0, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL));
    expect(props == 0, "plain queue: CL_QUEUE_PROPERTIES == 0");
    size_t len = 99;
    CHECK(clGetCommandQueueInfo(q0, CL_QUEUE_PROPERTIES_ARRAY, 0, NULL, &len));
    expect(len == 0, "plain queue: CL_QUEUE_PROPERTIES_ARRAY is empty");

    run_one(&t, q0, a, &ev);
    rc = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof ts, &ts, NULL);
    expect(rc == CL_PROFILING_INFO_NOT_AVAILABLE, "plain queue: profiling info not available");
    clReleaseEvent(ev);
    ts = 0;
    rc = clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof ts, &ts, NULL);
    expect(rc == CL_SUCCESS && ts > 0, "first queue, asked again: timestamps available");
    clReleaseEvent(first);

    cl_command_queue q1 =
        clCreateCommandQueue(t.ctx, t.dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &rc);
    CHECK(rc);
    CHECK(clGetCommandQueueInfo(q1, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL));
    expect(props == CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
           "legacy OOO queue: properties as asked");
    run_one(&t, q1, a, &ev);
    rc = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof ts, &ts, NULL);
    expect(rc == CL_PROFILING_INFO_NOT_AVAILABLE, "legacy OOO queue: profiling info not available");
    clReleaseEvent(ev);

    cl_queue_properties p[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_command_queue q2 = clCreateCommandQueueWithProperties(t.ctx, t.dev, p, &rc);
    CHECK(rc);
    CHECK(clGetCommandQueueInfo(q2, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL));
    expect(props == CL_QUEUE_PROFILING_ENABLE, "profiling queue: properties as asked");
    cl_queue_properties back[8];
    CHECK(clGetCommandQueueInfo(q2, CL_QUEUE_PROPERTIES_ARRAY, sizeof back, back, &len));
    expect(len == sizeof p && !memcmp(back, p, sizeof p), "profiling queue: array as given");
    run_one(&t, q2, a, &ev);
    cl_ulong start = 0, end = 0;
    CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL));
    CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL));
    expect(start > 0 && end >= start, "profiling queue: timestamps available");
    clReleaseEvent(ev);

    clReleaseCommandQueue(q0);
    clReleaseCommandQueue(q1);
    clReleaseCommandQueue(q2);
    clReleaseMemObject(a);
    tcl_teardown(&t);
    return failures ? 1 : 0;
}
