/*
 * crash_workload.c -- the traced program of the crash tests
 * (tests/reliability/check_crash.py): several threads record a known
 * sequence and one of them kills the process at a chosen record count.
 *
 *   crash_workload MODE KILL_AT THREADS PUBFILE
 *
 * Thread t, iteration i: push range "w<t>.<i>"; every 8th iteration
 * enqueue a kernel on the thread's own PoCL queue (inside the range);
 * pop; counter "seq.t<t>" = i. After the counter returns, published[t]
 * becomes i + 1. The iteration that brings the process-wide total to
 * KILL_AT dies by MODE (kill = SIGKILL, segv = a real invalid write,
 * bus = a real access past the end of a mapped file, abort, exit =
 * _exit(3), none = finish normally). Right before dying it writes the
 * published[] counts it saw into PUBFILE, one line "t count" each: every
 * record counted there returned before the death, so the trace must hold
 * at least that many iterations of each thread, as a gap-free prefix.
 * MODE "wait" records until the test kills it from outside (KILL_AT is
 * ignored; ITER_LIMIT bounds it).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "acceltrace.h"
#include "cl_common.h"

#define MAX_THREADS 16
#define ITER_LIMIT  1000000 /* per thread; KILL_AT comes far earlier */

static const char *mode;
static long kill_at;
static int nthreads;
static int pubfd = -1;
static tcl cl;
static _Atomic long total;
static _Atomic long published[MAX_THREADS];
static _Atomic int finished;
static volatile int *volatile bad_address; /* NULL: writing through it faults */

static void write_published(void)
{
    char buf[64 * MAX_THREADS];
    size_t n = 0;
    for (int t = 0; t < nthreads; t++)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%d %ld\n", t,
                              atomic_load_explicit(&published[t], memory_order_acquire));
    if (write(pubfd, buf, n) != (ssize_t)n)
        _exit(99);
}

static void die(void)
{
    write_published();
    if (!strcmp(mode, "kill")) {
        kill(getpid(), SIGKILL);
    } else if (!strcmp(mode, "segv")) {
        signal(SIGSEGV, SIG_DFL);
        *bad_address = 1;
    } else if (!strcmp(mode, "bus")) {
        signal(SIGBUS, SIG_DFL);
        int fd = memfd_create("empty", 0); /* size 0: any access faults */
        volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED)
            p[0] = 1;
    } else if (!strcmp(mode, "abort")) {
        abort();
    } else if (!strcmp(mode, "exit")) {
        _exit(3);
    }
    _exit(98); /* the death above did not happen */
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    cl_int rc;
    cl_command_queue q = clCreateCommandQueueWithProperties(cl.ctx, cl.dev, NULL, &rc);
    CHECK(rc);
    cl_mem buf = tcl_buffer(&cl, 64 * sizeof(int));
    cl_kernel k = tcl_kernel(&cl, "inc", buf);
    size_t gws = 64;
    char name[32], counter[32];
    snprintf(counter, sizeof(counter), "seq.t%d", t);
    for (long i = 0; i < ITER_LIMIT && !atomic_load(&finished); i++) {
        snprintf(name, sizeof(name), "w%d.%ld", t, i);
        act_range_push(name);
        if (i % 8 == 0)
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
        act_range_pop();
        act_counter(counter, (double)i);
        atomic_store_explicit(&published[t], i + 1, memory_order_release);
        if (i % 512 == 511)
            CHECK(clFinish(q));
        if (kill_at < 0)
            usleep(20); /* "wait": keep the trace of a late kill small */
        long n = atomic_fetch_add(&total, 1) + 1;
        if (n == kill_at) {
            if (!strcmp(mode, "none"))
                atomic_store(&finished, 1);
            else
                die();
        }
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
        fprintf(
            stderr,
            "usage: crash_workload none|kill|segv|bus|abort|exit|wait KILL_AT THREADS PUBFILE\n");
        return 2;
    }
    mode = argv[1];
    kill_at = atol(argv[2]);
    nthreads = atoi(argv[3]);
    if (nthreads < 1 || nthreads > MAX_THREADS || kill_at < 0)
        return 2;
    if (strcmp(mode, "none") && strcmp(mode, "kill") && strcmp(mode, "segv") &&
        strcmp(mode, "bus") && strcmp(mode, "abort") && strcmp(mode, "exit") &&
        strcmp(mode, "wait"))
        return 2;
    pubfd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (pubfd < 0) {
        perror(argv[4]);
        return 2;
    }
    if (!strcmp(mode, "wait"))
        kill_at = -1;
    tcl_setup(&cl, 0);
    if (kill_at == 0 && strcmp(mode, "none"))
        die(); /* before the first annotation */
    pthread_t th[MAX_THREADS];
    for (int t = 0; t < nthreads; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    write_published();
    tcl_teardown(&cl);
    return 0;
}
