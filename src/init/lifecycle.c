/*
 * lifecycle.c -- what happens when recording ends: at process exit
 * (normal return or exit() from any thread; atexit runs in the exiting
 * thread) or at the end of an in-process session.
 *
 * Sources register stop steps with act_lifecycle_on_stop(); they run in
 * reverse order of registration (last started, first stopped), each one
 * whether or not an earlier one failed, and then the spool is sealed. A
 * source waiting for device activity uses act_drain(): poll every 25 ms,
 * stop after three polls in a row bring nothing new, never wait past a
 * hard bound (ACCELTRACE_DRAIN_TIMEOUT), and count every cut-off.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "acceltrace.h"
#include "config.h"
#include "core/internal.h"
#include "init/init.h"

#define MAX_STOP_STEPS 64

typedef struct stop_step {
    const char *name;
    void (*fn)(void);
    int (*fn_rc)(void);
} stop_step;

static stop_step steps[MAX_STOP_STEPS];
static int n_steps;
/* Recursive: a stop step may register another step without deadlocking. */
static pthread_mutex_t lc_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static _Atomic uint64_t drain_cutoffs;

static int add_step(stop_step s)
{
    if (!s.name || !*s.name || (!s.fn && !s.fn_rc))
        return ACT_E_INVAL;
    pthread_mutex_lock(&lc_lock);
    int rc = 0;
    for (int i = 0; i < n_steps && rc == 0; i++)
        if (steps[i].fn == s.fn && steps[i].fn_rc == s.fn_rc)
            rc = 1; /* registered already: once is enough */
    if (rc == 0 && n_steps >= MAX_STOP_STEPS)
        rc = ACT_E_FULL;
    if (rc == 0)
        steps[n_steps++] = s;
    pthread_mutex_unlock(&lc_lock);
    return rc < 0 ? rc : 0;
}

int act_lifecycle_on_stop(const char *name, void (*fn)(void))
{
    return add_step((stop_step){.name = name, .fn = fn});
}

int act_lifecycle_on_stop_rc(const char *name, int (*fn)(void))
{
    return add_step((stop_step){.name = name, .fn_rc = fn});
}

/* Runs the steps; returns how many failed. Called with lc_lock held, so
 * two threads ending at once do not stop the sources twice. */
static int run_steps(void)
{
    int failed = 0;
    for (int i = n_steps - 1; i >= 0; i--) {
        stop_step s = steps[i];
        if (s.fn) {
            s.fn();
            continue;
        }
        int rc = s.fn_rc();
        if (rc < 0) {
            failed++;
            act_log("stop step '%s' failed: %s; the remaining steps still run", s.name,
                    act_strerror(rc));
        }
    }
    return failed;
}

static void lifecycle_stop(int at_exit)
{
    pthread_mutex_lock(&lc_lock);
    /* Only a recording of this process has anything to stop; after it is
     * sealed the header is gone, which makes a second call a no-op. */
    if (act_recorder_header()) {
        run_steps();
        if (at_exit)
            act_recorder_close_at_exit();
        else
            act_recorder_close();
    }
    pthread_mutex_unlock(&lc_lock);
}

void act_lifecycle_stop(void)
{
    lifecycle_stop(0);
}

static void at_exit(void)
{
    lifecycle_stop(1);
}

static int arm_rc;

static void arm_once(void)
{
    arm_rc = atexit(at_exit) == 0 ? 0 : ACT_E_NOMEM;
}

/* Install the exit handler, once per process (a forked child inherits it). */
int act_lifecycle_arm(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, arm_once);
    return arm_rc;
}

/* ---- drain ------------------------------------------------------------- */

static void sleep_ms(uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int act_drain(const char *what, act_drain_poll_fn poll, void *arg, uint64_t bound_ms,
              act_drain_result *res)
{
    act_drain_result r = {.outstanding = -1};
    if (!what || !poll)
        return ACT_E_INVAL;
    if (bound_ms == ACT_DRAIN_CONFIGURED)
        bound_ms = act_cfg.drain_timeout_ms;
    uint64_t start = act_clock_now(), bound_ns = bound_ms * 1000000ull;
    int quiet = 0, rc = 0;
    for (;;) {
        int64_t out = -1, got = poll(arg, &out);
        r.polls++;
        if (got < 0) {
            rc = (int)got;
            break;
        }
        r.items += (uint64_t)got;
        r.outstanding = out;
        quiet = got ? 0 : quiet + 1;
        if (out == 0 || quiet >= ACT_DRAIN_QUIET_POLLS)
            break;
        uint64_t elapsed = act_clock_now() - start;
        if (elapsed >= bound_ns) {
            r.cut_off = 1;
            break;
        }
        uint64_t left_ms = (bound_ns - elapsed + 999999) / 1000000;
        sleep_ms(left_ms < ACT_DRAIN_POLL_MS ? left_ms : ACT_DRAIN_POLL_MS);
    }
    r.elapsed_ns = act_clock_now() - start;
    if (r.cut_off) {
        atomic_fetch_add(&drain_cutoffs, 1);
        act_rec_error_emit("drain of %s cut off after %llu ms (%lld outstanding)", what,
                           (unsigned long long)(r.elapsed_ns / 1000000), (long long)r.outstanding);
        rc = 1;
    }
    if (res)
        *res = r;
    return rc;
}

uint64_t act_drain_cutoffs(void)
{
    return atomic_load(&drain_cutoffs);
}
