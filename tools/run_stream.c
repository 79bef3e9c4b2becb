/*
 * run_stream.c -- the launcher's reading thread while the program runs
 * (run_stream.h). It wakes every ACT_RUN_STREAM_MS (--stream-interval;
 * every ACT_RUN_STREAM_FIRST_MS for its first reads, and
 * ACT_RUN_STREAM_BUSY_MS after a read of many records),
 * takes what the program published since (act_export_live_poll) and
 * sleeps again: the program sees a batch of work 50 to 200 times a
 * second, never a wake-up per record. It also wakes when a spool is
 * sealed (its program is ending: the recorder touches the file then, and
 * an inotify watch on the spool directory sees it): what the program
 * published last is then read while the kernel tears the program down
 * (1.6-3 ms on the machines measured), not after the exit, and when that
 * spool is the only one its events are all written then too
 * (act_export_live_finish): the export after the exit has the file's
 * close and the summary left. Every signal is blocked in it: the
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
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "core/common.h"

struct act_run_stream {
    pthread_t thread;
    act_export_live *live;
    int stopfd;        /* eventfd: act_run_stream_stop's wake */
    int watch;         /* inotify on the spool directory (-1: none, timed reads only) */
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

/* Whether the events read from the watch say a spool was sealed: the
 * recorder touches its file then (IN_ATTRIB, lifecycle.c). */
static int sealed_seen(int watch)
{
    _Alignas(struct inotify_event) char buf[4096];
    int sealed = 0;
    ssize_t n;
    while ((n = read(watch, buf, sizeof(buf))) > 0)
        for (ssize_t off = 0; off < n;) {
            const struct inotify_event *e = (const struct inotify_event *)(buf + off);
            sealed |= (e->mask & IN_ATTRIB) != 0;
            off += (ssize_t)(sizeof(*e) + e->len);
        }
    return sealed;
}

/* Waits `ms`, or less: until stopped, or until a spool is sealed (its
 * program is ending: what it published is read while the kernel tears
 * the program down, not after the exit). 1: a spool was sealed. */
static int wait_next(act_run_stream *s, unsigned ms)
{
    int64_t until = (int64_t)(act_clock_now() / 1000000) + ms;
    struct pollfd p[2] = {{.fd = s->stopfd, .events = POLLIN}, {.fd = s->watch, .events = POLLIN}};
    for (int64_t left = ms; left > 0 && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED);
         left = until - (int64_t)(act_clock_now() / 1000000)) {
        int n = poll(p, s->watch >= 0 ? 2 : 1, (int)left);
        if (n < 0 && errno != EINTR)
            return 0;
        if (n > 0 && p[1].revents && sealed_seen(s->watch))
            return 1;
    }
    return 0;
}

static void *stream_main(void *arg)
{
    act_run_stream *s = arg;
    while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
        int sealed = wait_next(s, next_ms(s));
        if (__atomic_load_n(&s->stop, __ATOMIC_RELAXED))
            break;
        int prc = act_export_live_poll(s->live, &s->stop);
        /* The program's spool sealed and alone: the rest is read and the
         * events written now, while the kernel tears the program down;
         * the export after the exit closes the file. Nothing is left to
         * read then (or, when it failed, the export reads anew): the
         * thread ends, so that stopping it after the exit waits for no
         * wake-up of it (0.1-0.5 ms, more with the cores busy). */
        if (sealed && !prc && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED) &&
            act_export_live_finish(s->live))
            break;
        uint64_t seen = act_export_live_records(s->live);
        s->busy = s->adapt && seen - s->seen >= ACT_RUN_STREAM_BUSY;
        s->seen = seen;
        if (prc < 0)
            break; /* refused (a ring) or out of memory: the export reads the spool */
    }
    return NULL;
}

/* The spool directory watched for sealed spools; -1 when it cannot be
 * (no inotify, or its limits reached): reads come on time only. */
static int watch_open(const char *spool_dir)
{
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd >= 0 && inotify_add_watch(fd, spool_dir, IN_ATTRIB | IN_ONLYDIR) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

act_run_stream *act_run_stream_start(const char *spool_dir, pid_t pid, unsigned ms,
                                     const act_export_opts *out)
{
    act_run_stream *s = calloc(1, sizeof(*s));
    if (!s || !(s->live = act_export_live_new(spool_dir, (long)pid)) ||
        (s->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        if (s)
            act_export_live_free(s->live);
        free(s);
        return NULL;
    }
    s->watch = watch_open(spool_dir);
    if (out)
        (void)act_export_live_output(s->live, out); /* refused: read only */
    s->ms = ms ? ms : ACT_RUN_STREAM_MS;
    s->quick = ms ? 0 : ACT_RUN_STREAM_QUICK;
    s->adapt = !ms;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, stream_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        act_export_live_free(s->live);
        close(s->stopfd);
        if (s->watch >= 0)
            close(s->watch);
        free(s);
        return NULL;
    }
    return s;
}

act_export_live *act_run_stream_stop(act_run_stream *s, int *watch)
{
    *watch = -1;
    if (!s)
        return NULL;
    __atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
    uint64_t one = 1;
    while (write(s->stopfd, &one, sizeof(one)) < 0 && errno == EINTR)
        ;
    pthread_join(s->thread, NULL);
    act_export_live *l = s->live;
    close(s->stopfd);
    *watch = s->watch; /* closing it waits for a grace period: not here */
    free(s);
    return l;
}
