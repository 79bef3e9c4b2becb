/*
 * conc_workload.c -- the traced program of the concurrency test
 * (tests/reliability/check_concurrency.py, spool checked by spool_check).
 *
 *   conc_workload RANGE_THREADS RANGES CL_THREADS ENQUEUES
 *
 * RANGE_THREADS threads each push/pop RANGES ranges named "r<t>" and, every
 * 64th iteration, write counter "c<t>" = the iteration number (so a lost,
 * duplicated, reordered or torn counter record shows as a broken sequence).
 * At the same time CL_THREADS threads each enqueue ENQUEUES kernels on their
 * own PoCL queue (clFinish every 64). All threads start together (barrier)
 * so they contend for chunks from the first record. Prints nothing: the
 * expected counts follow from the arguments.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "acceltrace.h"
#include "cl_common.h"

static long ranges, enqueues;
static pthread_barrier_t start;
static tcl cl;

static void *range_worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    char name[16], counter[16];
    snprintf(name, sizeof(name), "r%d", t);
    snprintf(counter, sizeof(counter), "c%d", t);
    pthread_barrier_wait(&start);
    for (long i = 0; i < ranges; i++) {
        if (act_range_push(name) != ACT_OK)
            abort();
        if (i % 64 == 0)
            act_counter(counter, (double)i);
        if (act_range_pop() != ACT_OK)
            abort();
    }
    return NULL;
}

static void *cl_worker(void *arg)
{
    (void)arg;
    cl_int rc;
    cl_command_queue q = clCreateCommandQueueWithProperties(cl.ctx, cl.dev, NULL, &rc);
    CHECK(rc);
    cl_mem buf = tcl_buffer(&cl, 64 * sizeof(int));
    cl_kernel k = tcl_kernel(&cl, "inc", buf);
    size_t gws = 64;
    pthread_barrier_wait(&start);
    for (long i = 0; i < enqueues; i++) {
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
        if (i % 64 == 63)
            CHECK(clFinish(q));
    }
    CHECK(clFinish(q));
    clReleaseKernel(k);
    clReleaseMemObject(buf);
    clReleaseCommandQueue(q);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: conc_workload RANGE_THREADS RANGES CL_THREADS ENQUEUES\n");
        return 2;
    }
    int rt = atoi(argv[1]), ct = atoi(argv[3]);
    ranges = atol(argv[2]);
    enqueues = atol(argv[4]);
    if (rt < 0 || ct < 0 || rt + ct < 1 || rt + ct > 1024)
        return 2;
    if (ct)
        tcl_setup(&cl, 0);
    pthread_barrier_init(&start, NULL, (unsigned)(rt + ct));
    pthread_t *th = calloc((size_t)(rt + ct), sizeof(*th));
    for (int t = 0; t < rt + ct; t++)
        pthread_create(&th[t], NULL, t < rt ? range_worker : cl_worker, (void *)(intptr_t)t);
    for (int t = 0; t < rt + ct; t++)
        pthread_join(th[t], NULL);
    free(th);
    if (ct)
        tcl_teardown(&cl);
    return 0;
}
