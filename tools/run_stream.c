/*
 * run_stream.c -- the launcher's reading thread while the program runs
 * (run_stream.h). It wakes every ACT_RUN_STREAM_MS (--stream-interval;
 * every ACT_RUN_STREAM_FIRST_MS for its first reads, and
 * ACT_RUN_STREAM_BUSY_MS after a read of many records),
 * takes what the program published since (act_export_live_poll) and
 * sleeps again: the program sees a batch of work 50 to 200 times a
 * second, never a wake-up per record. Every signal is blocked in it: the
 * launcher's main thread takes them.
 *
 * It runs at the launcher's own priority (the user's nice value). It ran
 * at nice 10 before: on a busy machine it was then starved, 54-65 % of a
 * 1.6 M-launch run was left to read after the exit, and the whole command
 * took longer (4.2 s against 3.6 s busy, 5.9 against 4.0 with a CPU hog):
 * the conversion is the same work either way, and done after the exit it
 * runs alone. An unprivileged thread cannot take back a nice value, so the
 * writer threads it starts (with the trace file) inherited it too
 * (BENCHMARKS.md, "The reading thread's priority").
 */
#include "run_stream.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

struct act_run_stream {
    pthread_t thread;
    act_export_live *live;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    volatile int stop; /* atomic: read by the builder between records */
    unsigned ms;
    unsigned quick; /* reads left at ACT_RUN_STREAM_FIRST_MS */
    int adapt;      /* the default interval: quicker after a busy read */
    int busy;       /* the last read took ACT_RUN_STREAM_BUSY records or more */
    uint64_t seen;  /* records read when it ended */
};

/* The wait before the next read. */
static unsigned next_ms(act_run_stream *s)
{
    if (s->busy)
        return ACT_RUN_STREAM_BUSY_MS;
    if (!s->quick)
        return s->ms;
    s->quick--;
    return ACT_RUN_STREAM_FIRST_MS;
}

static void *stream_main(void *arg)
{
    act_run_stream *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)next_ms(s) * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        int rc = 0;
        while (!s->stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&s->wake, &s->lock, &until);
        if (s->stop)
            break;
        pthread_mutex_unlock(&s->lock);
        int prc = act_export_live_poll(s->live, &s->stop);
        uint64_t seen = act_export_live_records(s->live);
        s->busy = s->adapt && seen - s->seen >= ACT_RUN_STREAM_BUSY;
        s->seen = seen;
        pthread_mutex_lock(&s->lock);
        if (prc < 0)
            break; /* refused (a ring) or out of memory: the export reads the spool */
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

act_run_stream *act_run_stream_start(const char *spool_dir, pid_t pid, unsigned ms,
                                     const act_export_opts *out)
{
    act_run_stream *s = calloc(1, sizeof(*s));
    if (!s || !(s->live = act_export_live_new(spool_dir, (long)pid))) {
        free(s);
        return NULL;
    }
    if (out)
        (void)act_export_live_output(s->live, out); /* refused: read only */
    s->ms = ms ? ms : ACT_RUN_STREAM_MS;
    s->quick = ms ? 0 : ACT_RUN_STREAM_QUICK;
    s->adapt = !ms;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->lock, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, stream_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        act_export_live_free(s->live);
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    return s;
}

act_export_live *act_run_stream_stop(act_run_stream *s)
{
    if (!s)
        return NULL;
    pthread_mutex_lock(&s->lock);
    __atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED); /* read outside the lock too */
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    act_export_live *l = s->live;
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return l;
}
