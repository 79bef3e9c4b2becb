/*
 * mem_workload.c -- the traced program of the bounded-memory test
 * (tests/reliability/check_memory.py).
 *
 *   mem_workload THREADS ITERS
 *
 * THREADS threads each push/pop ITERS ranges (names "m<t>.<i % 4096>", so
 * strings are interned and re-interned as the cache cycles), write a
 * counter and a mark per iteration. The process's resident memory
 * (/proc/self/status: VmRSS, RssAnon, RssFile, RssShmem, in KiB) is read
 * after every thread exists and has touched its malloc arena but before
 * anything is recorded ("before"), and again after all recording is done
 * while every thread is still alive ("after"), so the difference is what
 * recording cost. Printed on stdout as one JSON object with the number of
 * calls made per kind, for the test to compare with the trace's
 * records + dropped counts.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"

static long iters;
static pthread_barrier_t ready, recorded, done;

typedef struct rss {
    long vm, anon, file, shmem;
} rss;

static void rss_read(rss *r)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    memset(r, 0, sizeof(*r));
    while (f && fgets(line, sizeof(line), f)) {
        sscanf(line, "VmRSS: %ld", &r->vm);
        sscanf(line, "RssAnon: %ld", &r->anon);
        sscanf(line, "RssFile: %ld", &r->file);
        sscanf(line, "RssShmem: %ld", &r->shmem);
    }
    if (f)
        fclose(f);
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    free(malloc(64)); /* this thread's malloc arena exists before "before" */
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&ready); /* main has measured */
    char name[32];
    for (long i = 0; i < iters; i++) {
        snprintf(name, sizeof(name), "m%d.%ld", t, i % 4096);
        act_range_push(name);
        act_counter("value", (double)i);
        act_mark("tick");
        act_range_pop();
    }
    pthread_barrier_wait(&recorded);
    pthread_barrier_wait(&done); /* stay alive while main measures */
    return NULL;
}

static void rss_print(const char *key, const rss *r)
{
    printf("\"%s\":{\"VmRSS\":%ld,\"RssAnon\":%ld,\"RssFile\":%ld,\"RssShmem\":%ld}", key, r->vm,
           r->anon, r->file, r->shmem);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int n = atoi(argv[1]);
    iters = atol(argv[2]);
    if (n < 1 || n > 256 || iters < 0)
        return 2;
    /* Start-up (the spool is mapped) happens before the baseline. */
    act_mark("start");
    pthread_barrier_init(&ready, NULL, (unsigned)n + 1);
    pthread_barrier_init(&recorded, NULL, (unsigned)n + 1);
    pthread_barrier_init(&done, NULL, (unsigned)n + 1);
    pthread_t *th = calloc((size_t)n, sizeof(*th));
    for (int t = 0; t < n; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    rss before, after;
    pthread_barrier_wait(&ready);
    rss_read(&before);
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&recorded);
    rss_read(&after);
    pthread_barrier_wait(&done);
    for (int t = 0; t < n; t++)
        pthread_join(th[t], NULL);
    printf("{");
    rss_print("before", &before);
    printf(",");
    rss_print("after", &after);
    printf(",\"calls\":{\"range_push\":%ld,\"range_pop\":%ld,\"counter\":%ld,\"mark\":%ld}}\n",
           n * iters, n * iters, n * iters, n * iters + 1);
    free(th);
    return 0;
}
