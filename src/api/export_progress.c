/*
 * export_progress.c -- the export's status line (see export_progress.h).
 */
#include "export_progress.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

struct act_export_progress {
    FILE *f;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop, shown;
    const char *_Atomic phase;
    _Atomic uint64_t events;
    struct timespec t0;
};

static double since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static void *run(void *arg)
{
    act_export_progress *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 200000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->cond, &p->lock, &until);
        double s = since(&p->t0);
        if (p->stop || s < 1.0)
            continue;
        uint64_t n = atomic_load(&p->events);
        fprintf(p->f,
                "\racceltrace: run: exporting the trace: %s, %llu events (%.0f/s), %.1f s\033[K",
                atomic_load(&p->phase), (unsigned long long)n, (double)n / s, s);
        fflush(p->f);
        p->shown = 1;
    }
    if (p->shown) {
        fprintf(p->f, "\r\033[K");
        fflush(p->f);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

act_export_progress *act_export_progress_start(FILE *f)
{
    if (!f)
        return NULL;
    act_export_progress *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->f = f;
    atomic_store(&p->phase, "reading spools");
    clock_gettime(CLOCK_MONOTONIC, &p->t0);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&p->lock, NULL);
    if (pthread_create(&p->thread, NULL, run, p) != 0) {
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
    }
    return p;
}

void act_export_progress_phase(act_export_progress *p, const char *phase)
{
    if (p)
        atomic_store(&p->phase, phase);
}

void act_export_progress_events(act_export_progress *p, uint64_t n)
{
    if (p)
        atomic_fetch_add(&p->events, n);
}

void act_export_progress_stop(act_export_progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
