/*
 * thread_exit.c -- threads that enqueue and exit while their commands are
 * still in flight (the tracer's per-thread pool of command records must
 * outlive them: oppool.c). Usage: thread_exit [THREADS [N]]; each of
 * THREADS (default 4) threads enqueues N (default 50) "inc" kernels with
 * no event behind a user event and exits; main then releases the gate,
 * waits, and checks the sum. The tests count THREADS * N kernel slices.
 */
#include <pthread.h>

#include "cl_common.h"

#define ITEMS 256

typedef struct job {
    tcl *t;
    cl_kernel k;
    cl_event gate;
    int n;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    size_t gws = ITEMS;
    for (int i = 0; i < j->n; i++)
        CHECK(clEnqueueNDRangeKernel(j->t->q, j->k, 1, NULL, &gws, NULL, 1, &j->gate, NULL));
    CHECK(clFlush(j->t->q));
    return NULL; /* exits with its commands held back by the gate */
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4, n = argc > 2 ? atoi(argv[2]) : 50;
    if (threads < 1 || threads > 64)
        threads = 4;
    tcl t;
    tcl_setup(&t, 0);
    static int host[ITEMS];
    cl_int rc;
    cl_mem a = tcl_buffer(&t, sizeof host);
    CHECK(clEnqueueWriteBuffer(t.q, a, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    cl_kernel k = tcl_kernel(&t, "inc", a);
    cl_event gate = clCreateUserEvent(t.ctx, &rc);
    CHECK(rc);
    pthread_t th[64];
    job j = {&t, k, gate, n};
    for (int i = 0; i < threads; i++)
        if (pthread_create(&th[i], NULL, worker, &j) != 0)
            return 2;
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    CHECK(clEnqueueReadBuffer(t.q, a, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    long sum = 0;
    for (int i = 0; i < ITEMS; i++)
        sum += host[i];
    printf("thread_exit: %d threads x %d kernels, sum %ld\n", threads, n, sum);
    clReleaseEvent(gate);
    clReleaseKernel(k);
    clReleaseMemObject(a);
    tcl_teardown(&t);
    return sum == (long)threads * n * ITEMS ? 0 : 1;
}
