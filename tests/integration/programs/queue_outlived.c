/*
 * queue_outlived.c -- issue 21 defect 1, as OpenCL-CTS test_events hit it:
 * a queue released while one of its events is still held lives on until
 * that event goes (an implicit release the tracer never sees as a call),
 * and the program then exits with a command still waiting on a user event
 * that failed. Four times: create a queue, enqueue a marker with an event,
 * release the queue, wait for and release the event. Then enqueue a
 * marker behind a user event, set the user event to -1, clFinish, and
 * exit 1 -- as the CTS test does. Untraced it exits 1; traced it must too
 * (it used to die of SIGSEGV: the drain at exit flushed the destroyed
 * queues).
 */
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include "cl_common.h"

int main(void)
{
    tcl t;
    tcl_setup(&t, 0);
    cl_int rc;
    for (int i = 0; i < 4; i++) {
        cl_command_queue q = clCreateCommandQueue(t.ctx, t.dev, 0, &rc);
        CHECK(rc);
        cl_event ev;
        CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &ev));
        CHECK(clReleaseCommandQueue(q));
        CHECK(clWaitForEvents(1, &ev));
        CHECK(clReleaseEvent(ev));
    }
    cl_event user = clCreateUserEvent(t.ctx, &rc);
    CHECK(rc);
    cl_event behind;
    CHECK(clEnqueueMarkerWithWaitList(t.q, 1, &user, &behind));
    CHECK(clSetUserEventStatus(user, -1));
    (void)clFinish(t.q);
    printf("queue_outlived: done\n");
    return 1;
}
