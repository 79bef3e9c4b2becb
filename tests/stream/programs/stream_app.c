/*
 * stream_app.c -- the traced program of the streaming tests
 * (tests/stream/check_stream.py): kernel launches whose device ops the
 * launcher lays out and writes while the program runs.
 *
 *   stream_app launches N [MS]
 *       N kernels on one in-order queue, each in a range "step" (clFinish
 *       every 64); with MS, the launches are spread over MS milliseconds.
 *   stream_app queues N
 *       Two in-order queues, N kernels each, alternating (only the first
 *       lane group is written early; the other's ops wait for the exit).
 *   stream_app forkexec N [MS]
 *       N launches, then a forked child that execs `launches N`, then this
 *       process execs `launches N` itself (a second spool of the same pid,
 *       its ops on the same device).
 *   stream_app loop N
 *       N kernels back to back on one in-order queue, no ranges, clFinish
 *       every 1000 (a training loop's shape, issue 32).
 *   stream_app idle N [MS]
 *       `launches N [MS]` while a second thread, which recorded a mark
 *       first, waits idle until they are done (a data loader's or a
 *       logger's shape): its open segment must not hold the reading of
 *       the launches back until the exit.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acceltrace.h"
#include "cl_common.h"

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* n launches of `inc` on each of the queues, alternating. */
static void launch(tcl *t, cl_command_queue *q, int nq, long n, long ms, long every)
{
    size_t g = 64;
    cl_mem buf = tcl_buffer(t, g * sizeof(int));
    cl_kernel k = tcl_kernel(t, "inc", buf);
    for (long i = 0; i < n; i++) {
        if (every == 64)
            act_range_push("step");
        for (int j = 0; j < nq; j++)
            CHECK(clEnqueueNDRangeKernel(q[j], k, 1, NULL, &g, NULL, 0, NULL, NULL));
        if (every == 64)
            act_range_pop();
        if (i % every == every - 1)
            for (int j = 0; j < nq; j++)
                CHECK(clFinish(q[j]));
        if (ms)
            sleep_us(ms * 1000 / n);
    }
    for (int j = 0; j < nq; j++)
        CHECK(clFinish(q[j]));
    clReleaseKernel(k);
    clReleaseMemObject(buf);
}

static int run(const char *mode, long n, long ms)
{
    tcl t;
    tcl_setup(&t, 0);
    cl_command_queue q[2] = {t.q, NULL};
    int nq = 1;
    if (!strcmp(mode, "queues")) {
        cl_int rc;
        q[1] = clCreateCommandQueueWithProperties(t.ctx, t.dev, NULL, &rc);
        CHECK(rc);
        nq = 2;
    }
    launch(&t, q, nq, n, ms, strcmp(mode, "loop") ? 64 : 1000);
    if (q[1])
        clReleaseCommandQueue(q[1]);
    tcl_teardown(&t);
    return 0;
}

/* The idle thread: one mark, then a wait for the launches' end. */
static int idle_pipe[2];

static void *idle_main(void *arg)
{
    (void)arg;
    act_mark("idle thread");
    char c;
    while (read(idle_pipe[0], &c, 1) < 0)
        ;
    return NULL;
}

static int run_idle(long n, long ms)
{
    pthread_t th;
    if (pipe(idle_pipe) || pthread_create(&th, NULL, idle_main, NULL))
        return 1;
    sleep_us(10000); /* its mark first */
    int rc = run("launches", n, ms);
    while (write(idle_pipe[1], "x", 1) < 0)
        ;
    pthread_join(th, NULL);
    return rc;
}

/* With STREAM_APP_END set, the CLOCK_MONOTONIC time at which the program's
 * work ended (bench/tail_scale.py: the tail is from here to the return of
 * the tool that ran it, the same for every tracer). */
static int report_end(int rc)
{
    if (getenv("STREAM_APP_END")) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        fprintf(stderr, "stream_app: end_ns=%lld\n",
                (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec);
    }
    return rc;
}

/* With STREAM_APP_LINGER_MS set, the exit takes that long after the
 * tracer's own exit handler (registered at its start-up, after this one:
 * atexit runs them last first): a program whose end is slow, e.g. its
 * runtime's teardown (check_stream.py "sealed": what it published is read
 * then, not after the exit). */
static void linger(void)
{
    const char *v = getenv("STREAM_APP_LINGER_MS");
    long ms = v ? atol(v) : 0;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    if (getenv("STREAM_APP_LINGER_MS"))
        atexit(linger);
    if (argc < 3) {
        fprintf(stderr, "usage: stream_app launches|queues|loop|idle|forkexec N [MS]\n");
        return 2;
    }
    long n = atol(argv[2]), ms = argc > 3 ? atol(argv[3]) : 0;
    if (!strcmp(argv[1], "idle"))
        return report_end(run_idle(n, ms));
    if (strcmp(argv[1], "forkexec"))
        return report_end(run(argv[1], n, ms));
    run("launches", n, ms);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "launches", argv[2], (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
        return 1;
    execl("/proc/self/exe", argv[0], "launches", argv[2], (char *)NULL);
    return 1;
}
