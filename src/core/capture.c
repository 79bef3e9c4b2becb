/*
 * capture.c -- the capture window: when a process with a recorder open
 * actually records.
 *
 * The window is open when every gate is open: the API gate (act_start /
 * act_stop, closed at start with ACCELTRACE_CAPTURE_RANGE=api), the NVTX
 * gate (ACCELTRACE_CAPTURE_RANGE=nvtx:NAME: open while such a range is
 * open on any thread) and the time gates (ACCELTRACE_DELAY, _DURATION, run
 * by a timer thread). The result is published in act__recording, the one
 * flag every hot path reads, so a closed window costs nothing there: calls
 * fall onto their slow path, which counts the event in the spool header's
 * outside_window[kind] (nothing is dropped silently).
 *
 * Every transition writes an ACT_REC_CAPTURE record (aux 1 = opened,
 * 0 = closed) so the builder knows the windows. Transitions are rare and
 * take a mutex; the CAPTURE record is written after the mutex is released
 * (writing may open a forked child's spool, which calls back in here).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/internal.h"

#define GATE_API     0x1u /* act_stop() / capture=api before act_start() */
#define GATE_NVTX    0x2u /* capture=nvtx:NAME and no such range open */
#define GATE_DELAY   0x4u /* ACCELTRACE_DELAY not yet elapsed */
#define GATE_EXPIRED 0x8u /* ACCELTRACE_DURATION elapsed */

static struct {
    pthread_mutex_t lock;
    unsigned gates;      /* closed gates; the window is open when 0 */
    int attached;        /* a recorder is open */
    unsigned nvtx_depth; /* open ranges named nvtx_name, all threads */
    uint32_t timer_gen;  /* a timer thread quits when this moves on */
    int after_fork;      /* the next open is a forked child's: keep the gates */
    /* configuration */
    int api;
    char nvtx_name[256];
    uint64_t delay_ns, duration_ns;
} capture_gates = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void capture_recorder_opened(void);
static void capture_recorder_closed(void);
static void capture_atfork_child(int attached);

/* The recorder's listener (core/internal.h): the window opens and closes
 * with the spool. */
static const act_recorder_listener capture_listener = {
    .opened = capture_recorder_opened,
    .closed = capture_recorder_closed,
    .atfork_child = capture_atfork_child,
};

int act_capture_configure(int api, const char *nvtx_name, uint64_t delay_ns, uint64_t duration_ns)
{
    if (nvtx_name && strlen(nvtx_name) >= sizeof(capture_gates.nvtx_name))
        return ACT_E_INVAL;
    act_recorder_listen(&capture_listener);
    pthread_mutex_lock(&capture_gates.lock);
    if (capture_gates.attached) {
        pthread_mutex_unlock(&capture_gates.lock);
        return ACT_E_STATE;
    }
    capture_gates.api = api != 0;
    snprintf(capture_gates.nvtx_name, sizeof(capture_gates.nvtx_name), "%s",
             nvtx_name ? nvtx_name : "");
    capture_gates.delay_ns = delay_ns;
    capture_gates.duration_ns = duration_ns;
    pthread_mutex_unlock(&capture_gates.lock);
    return ACT_OK;
}

/* Nanoseconds since this process started (CLOCK_BOOTTIME against the start
 * time in /proc/self/stat; clock-tick resolution). 0 when unknown. */
static uint64_t since_process_start_ns(void)
{
    FILE *f = fopen("/proc/self/stat", "re");
    if (!f)
        return 0;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* comm may contain spaces and ')': fields resume after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    unsigned long long start_ticks = 0;
    /* field 3 is state; starttime is field 22 */
    if (sscanf(p + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
               "%*d %llu",
               &start_ticks) != 1)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    uint64_t start = hz > 0 ? start_ticks * (1000000000ull / (uint64_t)hz) : now;
    return now > start ? now - start : 0;
}

/* A transition to write once the lock is released. */
typedef struct pending {
    int emit;
    uint32_t open;
    uint64_t ts;
} pending;

/* Caller holds capture_gates.lock. */
static pending gates_set_locked(unsigned set, unsigned clear)
{
    pending p = {0, 0, 0};
    unsigned old = capture_gates.gates;
    capture_gates.gates = (old | set) & ~clear;
    if (!capture_gates.attached || (old == 0) == (capture_gates.gates == 0))
        return p;
    p.emit = 1;
    p.open = capture_gates.gates == 0;
    p.ts = act_clock_now();
    /* Opening: the CAPTURE record's ts precedes every record admitted by
     * the flag. Closing: the flag goes off before the record is written. */
    atomic_store_explicit(&act__recording, (int)p.open, memory_order_relaxed);
    return p;
}

static void pending_write(pending p)
{
    if (!p.emit)
        return;
    act_rec_ts *r = act_rec_reserve(ACT_REC_CAPTURE, sizeof(*r));
    if (!r)
        return;
    r->h.aux = p.open;
    r->ts = p.ts;
    act_rec_commit();
}

static void gates_set(unsigned set, unsigned clear)
{
    pthread_mutex_lock(&capture_gates.lock);
    pending p = gates_set_locked(set, clear);
    pthread_mutex_unlock(&capture_gates.lock);
    pending_write(p);
}

/* ---- the time gates --------------------------------------------------- */

typedef struct timer_arg {
    uint32_t gen;
    struct timespec open_at, close_at; /* CLOCK_MONOTONIC; close_at 0 = never */
} timer_arg;

static struct timespec mono_plus(uint64_t ns)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    uint64_t v = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec + ns;
    t.tv_sec = (time_t)(v / 1000000000ull);
    t.tv_nsec = (long)(v % 1000000000ull);
    return t;
}

static void sleep_until(const struct timespec *t)
{
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, t, NULL) != 0) {
    }
}

static int timer_current(uint32_t gen)
{
    pthread_mutex_lock(&capture_gates.lock);
    int cur = capture_gates.attached && capture_gates.timer_gen == gen;
    pthread_mutex_unlock(&capture_gates.lock);
    return cur;
}

static void *timer_main(void *arg)
{
    timer_arg a = *(timer_arg *)arg;
    free(arg);
    sleep_until(&a.open_at);
    if (!timer_current(a.gen))
        return NULL;
    gates_set(0, GATE_DELAY);
    if (a.close_at.tv_sec == 0 && a.close_at.tv_nsec == 0)
        return NULL;
    sleep_until(&a.close_at);
    if (timer_current(a.gen))
        gates_set(GATE_EXPIRED, 0);
    return NULL;
}

/* Caller holds capture_gates.lock. Sets the time gates as of now and starts the
 * timer for the transitions still ahead. */
static unsigned time_gates_start_locked(void)
{
    if (!capture_gates.delay_ns && !capture_gates.duration_ns)
        return 0;
    uint64_t since = since_process_start_ns();
    uint64_t open_in = capture_gates.delay_ns > since ? capture_gates.delay_ns - since : 0;
    uint64_t end = capture_gates.delay_ns + capture_gates.duration_ns;
    if (capture_gates.duration_ns && since >= end)
        return GATE_EXPIRED;
    timer_arg *a = calloc(1, sizeof(*a));
    if (!a)
        return 0;
    a->gen = ++capture_gates.timer_gen;
    a->open_at = mono_plus(open_in);
    if (capture_gates.duration_ns)
        a->close_at = mono_plus(end - since);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    if (pthread_create(&th, &attr, timer_main, a) != 0) {
        free(a);
        act_log("cannot start the capture timer; --delay/--duration ignored");
        pthread_attr_destroy(&attr);
        return 0;
    }
    pthread_attr_destroy(&attr);
    return open_in ? GATE_DELAY : 0;
}

/* ---- recorder lifecycle ----------------------------------------------- */

static void capture_recorder_opened(void)
{
    pthread_mutex_lock(&capture_gates.lock);
    capture_gates.attached = 1;
    if (capture_gates.after_fork) {
        /* A forked child goes on with the window as its parent left it. */
        capture_gates.after_fork = 0;
    } else {
        capture_gates.nvtx_depth = 0;
        capture_gates.gates =
            (capture_gates.api ? GATE_API : 0) | (capture_gates.nvtx_name[0] ? GATE_NVTX : 0);
        capture_gates.gates |= time_gates_start_locked();
    }
    act_spool_header *h = act_recorder_header();
    if (h && capture_gates.gates)
        atomic_fetch_or((_Atomic uint32_t *)&h->flags, ACT_SPOOL_F_CAPTURE_API);
    atomic_store(&act__recording, capture_gates.gates == 0);
    pthread_mutex_unlock(&capture_gates.lock);
}

static void capture_recorder_closed(void)
{
    pthread_mutex_lock(&capture_gates.lock);
    capture_gates.attached = 0;
    capture_gates.timer_gen++;
    pthread_mutex_unlock(&capture_gates.lock);
}

static void capture_atfork_child(int attached)
{
    /* Another parent thread may have held the lock at fork time. */
    pthread_mutex_init(&capture_gates.lock, NULL);
    capture_gates.attached = attached;
    capture_gates.timer_gen++; /* the timer thread did not survive the fork */
    /* The child keeps the window as it was at the fork; later time-gate
     * transitions are the parent's (its timer thread). */
    capture_gates.after_fork = attached;
    atomic_store(&act__recording, attached && capture_gates.gates == 0);
}

int act_capture_attached(void)
{
    return act_recorder_attached(); /* with or without this window listening */
}

void act_capture_count_outside(uint16_t kind)
{
    if (!act_capture_attached() || kind >= ACT_REC_KIND_MAX)
        return;
    act_spool_header *h = act_recorder_header();
    if (h)
        atomic_fetch_add_explicit((_Atomic uint64_t *)&h->outside_window[kind], 1,
                                  memory_order_relaxed);
}

int act_capture_api_set(int open)
{
    if (!act_capture_attached())
        return ACT_E_DISABLED;
    gates_set(open ? 0 : GATE_API, open ? GATE_API : 0);
    return ACT_OK;
}

const char *act_capture_nvtx_name(void)
{
    return capture_gates.nvtx_name;
}

void act_capture_nvtx_enter(void)
{
    pthread_mutex_lock(&capture_gates.lock);
    pending p = {0, 0, 0};
    if (capture_gates.nvtx_depth++ == 0)
        p = gates_set_locked(0, GATE_NVTX);
    pthread_mutex_unlock(&capture_gates.lock);
    pending_write(p);
}

void act_capture_nvtx_leave(void)
{
    pthread_mutex_lock(&capture_gates.lock);
    pending p = {0, 0, 0};
    if (capture_gates.nvtx_depth > 0 && --capture_gates.nvtx_depth == 0)
        p = gates_set_locked(GATE_NVTX, 0);
    pthread_mutex_unlock(&capture_gates.lock);
    pending_write(p);
}
