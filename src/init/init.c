/*
 * init.c -- the library's staged start-up (torch_npu's _initialize, in C).
 *
 * Loading the library runs nothing: no device runtime is touched and
 * nothing is printed (the one constructor, autostart.c, returns at once
 * unless a launcher set both ACCELTRACE_SPOOL_DIR and ACCELTRACE_SOURCES).
 * act_init() runs on the first intercepted call, annotation or session (or
 * that constructor) and executes `stages[]` in order:
 *
 *   check conflicts    another copy of acceltrace already in charge?
 *   load core          configuration, clock, recorder (spool)
 *   register sources   discover hook groups (linker sections, modules)
 *   apply hook groups  make the selected interceptions live
 *   lifecycle          exit handling (stop steps, drain, seal)
 *   optional features  settings that only refine what is recorded
 *
 * A failing stage stops the later ones and is reported once on stderr, in
 * one line naming the stage and the reason; tracing is then off and the
 * program runs on. "No tool attached" is not a failure: start-up stops
 * quietly and is tried again only when a session opens a recorder.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "acceltrace.h"
#include "config.h"
#include "core/dist.h"
#include "core/internal.h"
#include "init/hooks.h"
#include "init/init.h"

/* ---- the stages ---------------------------------------------------------- */

static int stage_check_conflicts(char *why, size_t len)
{
    return act_conflict_claim(why, len);
}

static int stage_load_core(char *why, size_t len)
{
    int rc = act_config_load(&act_cfg, why, len);
    if (rc < 0)
        return rc;
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_RAW, &ts) != 0) {
        snprintf(why, len, "CLOCK_MONOTONIC_RAW is not available");
        return ACT_E_UNSUPPORTED;
    }
    if (act_recorder_header())
        return 0; /* an in-process session opened the recorder */
    if (!act_cfg.spool_dir[0])
        return ACT_E_DISABLED; /* no tool attached */
    /* The capture window (capture.c) is set before the recorder opens:
     * with a capture range the spool starts paused. */
    act_pystack_configure(act_cfg.python_backtrace, act_cfg.python_backtrace_all);
    rc = act_capture_configure(act_cfg.capture_api, act_cfg.capture_nvtx, act_cfg.delay_ns,
                               act_cfg.duration_ns);
    if (rc < 0) {
        snprintf(why, len, "cannot configure the capture window: %s", act_strerror(rc));
        return rc;
    }
    /* 0: automatic; a ring's spool is sized by the recorder (spool_file.c). */
    act_recorder_set_ring(act_cfg.ring_size);
    rc = act_recorder_attach(act_cfg.spool_dir, act_cfg.buffer_size, act_cfg.chunk_size);
    int err = errno; /* ACT_E_IO: why (e.g. ENOSPC, the file system is full) */
    if (rc < 0)
        snprintf(why, len, "cannot open a spool in %s: %s", act_cfg.spool_dir,
                 rc == ACT_E_IO && err ? strerror(err) : act_strerror(rc));
    else
        act_dist_record(); /* clock anchor, rank, trace name */
    return rc;
}

/* Sources register through the act_hooks linker section (ACT_HOOK), so
 * registering them is discovering that section and the hook modules. */
static int stage_register_sources(char *why, size_t len)
{
    int n = act_hooks_discover();
    if (act_config_log_level() >= ACT_LOG_DEBUG)
        act_log("%d hooks registered", n);
    (void)why;
    (void)len;
    return 0;
}

/* A hook that fails is reported by hooks.c and retried on the next apply;
 * it costs that interception, not the whole start-up. Only running out of
 * memory stops here. */
static int stage_apply_hooks(char *why, size_t len)
{
    int rc = act_hooks_apply_all();
    if (rc == ACT_E_NOMEM) {
        snprintf(why, len, "out of memory while applying hook groups");
        return rc;
    }
    return 0;
}

static int stage_lifecycle(char *why, size_t len)
{
    int rc = act_lifecycle_arm();
    if (rc < 0)
        snprintf(why, len, "cannot install the exit handler");
    return rc;
}

/* Settings that refine what is recorded. nvtx:NAME needs the NVTX source,
 * which is only built with the NVTX headers: without it the window would
 * never open, so say so. */
static int stage_optional_features(char *why, size_t len)
{
    (void)why;
    (void)len;
#ifndef ACT_HAVE_NVTX
    if (act_cfg.capture_nvtx[0] && act_config_log_level() >= ACT_LOG_ERROR)
        act_log("ACCELTRACE_CAPTURE_RANGE=nvtx:%s: this build has no NVTX support, so the "
                "capture window never opens",
                act_cfg.capture_nvtx);
#endif
    return 0;
}

static const act_stage stages[] = {
    {"check conflicts", stage_check_conflicts},
    {"load core", stage_load_core},
    {"register sources", stage_register_sources},
    {"apply hook groups", stage_apply_hooks},
    {"lifecycle", stage_lifecycle},
    {"optional features", stage_optional_features},
};

const act_stage *act_init_stages(size_t *n)
{
    if (n)
        *n = ACT_ARRAY_SIZE(stages);
    return stages;
}

int act_init_run_stages(const act_stage *st, size_t n, const char **failed)
{
    char why[1024];
    if (failed)
        *failed = NULL;
    for (size_t i = 0; i < n; i++) {
        why[0] = '\0';
        int rc = st[i].run(why, sizeof(why));
        if (rc == 0)
            continue;
        if (failed)
            *failed = st[i].name;
        if (rc != ACT_E_DISABLED)
            act_log("start-up stage '%s' failed: %s; tracing is off", st[i].name,
                    why[0] ? why : act_strerror(rc));
        return rc < 0 ? rc : ACT_E_STATE;
    }
    return 0;
}

/* ---- act_init ------------------------------------------------------------ */

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int init_state = ACT_INIT_NONE;
static int init_err;
static const char *init_stage; /* the stage that stopped start-up */
static __thread int in_init;   /* a hook calling back into act_init */

int act_init(void)
{
    int st = atomic_load_explicit(&init_state, memory_order_acquire);
    if (ACT_LIKELY(st == ACT_INIT_OK))
        return 0;
    if (st == ACT_INIT_FAILED)
        return init_err;
    if (st == ACT_INIT_DISABLED && !act_recorder_header())
        return ACT_E_DISABLED;
    if (in_init)
        return ACT_E_STATE;
    pthread_mutex_lock(&init_lock);
    in_init = 1;
    st = atomic_load_explicit(&init_state, memory_order_relaxed);
    if (st == ACT_INIT_NONE || (st == ACT_INIT_DISABLED && act_recorder_header())) {
        int rc = act_init_run_stages(stages, ACT_ARRAY_SIZE(stages), &init_stage);
        if (rc < 0 && rc != ACT_E_DISABLED)
            act_recorder_close(); /* tracing is off: seal whatever was opened */
        init_err = rc;
        st = rc == 0 ? ACT_INIT_OK : rc == ACT_E_DISABLED ? ACT_INIT_DISABLED : ACT_INIT_FAILED;
        atomic_store_explicit(&init_state, st, memory_order_release);
    }
    in_init = 0;
    pthread_mutex_unlock(&init_lock);
    return st == ACT_INIT_OK ? 0 : st == ACT_INIT_DISABLED ? ACT_E_DISABLED : init_err;
}

int act_init_state(const char **stage)
{
    int st = atomic_load_explicit(&init_state, memory_order_acquire);
    if (stage)
        *stage = st == ACT_INIT_NONE ? NULL : init_stage;
    return st;
}
