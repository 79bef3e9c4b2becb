/*
 * churn_workload.c -- the traced programs of the churn tests
 * (tests/reliability/check_churn.py).
 *
 *   churn_workload threads N BATCH RANGES
 *       N short-lived threads, BATCH alive at a time, each pushes/pops
 *       RANGES ranges named "s" and exits: chunks must be recycled (the
 *       spool must not run out) and per-thread state freed (LeakSanitizer).
 *   churn_workload procs RANGES [quiesce]
 *       The parent records "p" ranges on two threads while it forks a child
 *       that records without exec ("fork"), forks a child that execs this
 *       program ("exec"), and posix_spawns one ("spawn"). Each child
 *       records RANGES ranges named after how it started; the parent's
 *       second thread keeps recording across the forks.
 *   churn_workload child NAME RANGES
 *       What the exec'ed and spawned children run (and the set-uid test:
 *       there the library is not attached and the calls say so).
 */
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acceltrace.h"

extern char **environ;
static long ranges;
static _Atomic int stop;

/* Every push and pop must succeed; a child may also find no tool
 * attached (ACT_E_DISABLED: the set-uid test runs one). */
static void record_ok(const char *name, long n, int may_be_off)
{
    for (long i = 0; i < n; i++) {
        int a = act_range_push(name), b = act_range_pop();
        if (may_be_off && a == ACT_E_DISABLED && b == ACT_E_DISABLED)
            continue;
        if (a != ACT_OK || b != ACT_OK)
            abort();
    }
}

static void record(const char *name, long n)
{
    record_ok(name, n, 0);
}

static void *short_lived(void *arg)
{
    (void)arg;
    record("s", ranges);
    return NULL;
}

static int threads(long n, int batch)
{
    pthread_t th[256];
    if (batch < 1 || batch > 256)
        return 2;
    for (long done = 0; done < n; done += batch) {
        int k = n - done < batch ? (int)(n - done) : batch;
        for (int i = 0; i < k; i++)
            if (pthread_create(&th[i], NULL, short_lived, NULL))
                return 1;
        for (int i = 0; i < k; i++)
            pthread_join(th[i], NULL);
    }
    return 0;
}

/* With "quiesce", fork waits until the background thread is between two
 * records. Sanitizer builds need it: their allocators are not fork-safe
 * (a lock held by the other thread at fork time deadlocks the child's
 * leak check at exit); the plain build forks in the middle of recording. */
static pthread_mutex_t bg_lock = PTHREAD_MUTEX_INITIALIZER;
static int quiesce;

static void fork_prepare(void)
{
    if (quiesce)
        pthread_mutex_lock(&bg_lock);
}

static void fork_done(void)
{
    if (quiesce)
        pthread_mutex_unlock(&bg_lock);
}

/* The parent's second thread: records until told to stop; returns its count. */
static void *background(void *arg)
{
    long *n = arg;
    /* Bounded: a slow child must not make the parent's trace huge. */
    while (!atomic_load(&stop) && *n < 20000) {
        pthread_mutex_lock(&bg_lock);
        record("p", 1);
        pthread_mutex_unlock(&bg_lock);
        if (++*n % 64 == 0)
            usleep(100); /* keep the trace small; still records across the forks */
    }
    return NULL;
}

static int wait_ok(pid_t pid)
{
    int st;
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int procs(const char *self)
{
    char count[32];
    snprintf(count, sizeof(count), "%ld", ranges);
    long bg = 0;
    pthread_t th;
    record("p", ranges);
    pthread_create(&th, NULL, background, &bg);

    pid_t f = fork();
    if (f == 0) {
        record("fork", ranges);
        exit(0);
    }
    pid_t e = fork();
    if (e == 0) {
        execl(self, self, "child", "exec", count, (char *)NULL);
        _exit(127);
    }
    pid_t s;
    char *args[] = {(char *)self, "child", "spawn", count, NULL};
    if (posix_spawn(&s, self, NULL, NULL, args, environ))
        return 1;
    int ok = f > 0 && e > 0 && wait_ok(f) && wait_ok(e) && wait_ok(s);
    record("p", ranges);
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    /* The total the test expects from the parent. */
    printf("{\"parent\":%ld}\n", 2 * ranges + bg);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "threads")) {
        ranges = atol(argv[4]);
        return threads(atol(argv[2]), atoi(argv[3]));
    }
    if ((argc == 3 || argc == 4) && !strcmp(argv[1], "procs")) {
        ranges = atol(argv[2]);
        quiesce = argc == 4 && !strcmp(argv[3], "quiesce");
        pthread_atfork(fork_prepare, fork_done, fork_done);
        return procs("/proc/self/exe");
    }
    if (argc == 4 && !strcmp(argv[1], "child")) {
        record_ok(argv[2], atol(argv[3]), 1);
        return 0;
    }
    fprintf(stderr, "usage: churn_workload threads N BATCH RANGES | procs RANGES [quiesce]\n");
    return 2;
}
