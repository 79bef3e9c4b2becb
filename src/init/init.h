/*
 * init.h -- the library's staged start-up.
 *
 * Loading the library does nothing visible. The first intercepted call,
 * an in-process session or an explicit act_start() calls act_init(), which
 * runs the stages in a fixed order:
 *   check conflicts -> load core (config, clock, recorder) -> register
 *   sources -> apply hook groups -> lifecycle (exit handling) -> optional
 *   features.
 * A stage that fails stops the later ones; the stage and the reason are
 * reported once on stderr and tracing stays off, the program runs on.
 */
#ifndef ACT_INIT_H
#define ACT_INIT_H

/* Run start-up once (thread-safe, idempotent). Returns 0 when recording
 * is on, a negative ACT_E_* code otherwise (ACT_E_DISABLED when no tool is
 * attached). Cheap after the first call. */
int act_init(void);

/* Register a function run at process exit / session end, before the spool
 * is sealed, in reverse order of registration (e.g. a source draining its
 * outstanding device callbacks). `name` is used in failure reports. */
int act_lifecycle_on_stop(const char *name, void (*fn)(void));

/* Run the stop handlers and seal the spool (idempotent). */
void act_lifecycle_stop(void);

/* ---- additions (init.c, lifecycle.c, conflict.c) ------------------------ */

#include <stddef.h>
#include <stdint.h>

/* A stop step that can fail: a negative return is reported on stderr and
 * the remaining steps still run. */
int act_lifecycle_on_stop_rc(const char *name, int (*fn)(void));
/* Install the exit handler (once per process). */
int act_lifecycle_arm(void);

/*
 * Drain device activity (for stop steps of sources). `poll` collects what
 * has arrived and returns how many new items it saw (or a negative error,
 * which ends the drain); it may set *outstanding to the number of items
 * still expected (0 ends the drain at once; -1, the preset, = unknown).
 * Polls every ACT_DRAIN_POLL_MS; stops after ACT_DRAIN_QUIET_POLLS polls in
 * a row bring nothing new; never waits past `bound_ms`
 * (ACT_DRAIN_CONFIGURED = ACCELTRACE_DRAIN_TIMEOUT). Returns 0 when
 * drained, 1 when cut off by the bound (counted: act_drain_cutoffs() and an
 * error record in the trace), or the poll's error.
 */
#define ACT_DRAIN_POLL_MS     25
#define ACT_DRAIN_QUIET_POLLS 3
#define ACT_DRAIN_CONFIGURED  UINT64_MAX
typedef int64_t (*act_drain_poll_fn)(void *arg, int64_t *outstanding);
typedef struct act_drain_result {
    uint64_t polls;
    uint64_t items;
    uint64_t elapsed_ns;
    int64_t outstanding; /* as last reported by poll (-1 unknown) */
    int cut_off;
} act_drain_result;
int act_drain(const char *what, act_drain_poll_fn poll, void *arg, uint64_t bound_ms,
              act_drain_result *res);
uint64_t act_drain_cutoffs(void);

/* Take charge of tracing in this process or learn that another copy of
 * acceltrace has (ACT_E_CONFLICT, with the one-line reason in `why`). */
int act_conflict_claim(char *why, size_t len);

/* A start-up stage: 0 to go on, ACT_E_DISABLED to stop quietly (no tool
 * attached), another negative code to fail with the reason in `why`. */
typedef struct act_stage {
    const char *name;
    int (*run)(char *why, size_t len);
} act_stage;
/* The fixed stage list act_init() runs. */
const act_stage *act_init_stages(size_t *n);
/* Run `n` stages in order; the first failure is reported once on stderr
 * ("start-up stage 'S' failed: why; tracing is off") and stops the rest.
 * `*failed` gets the name of the stage that stopped (NULL when all ran). */
int act_init_run_stages(const act_stage *stages, size_t n, const char **failed);
/* Where start-up stands: ACT_INIT_NONE (never ran), ..._OK, ..._DISABLED,
 * ..._FAILED; `stage` gets the stage that stopped it (may be NULL). */
enum { ACT_INIT_NONE = 0, ACT_INIT_OK = 1, ACT_INIT_DISABLED = 2, ACT_INIT_FAILED = 3 };
int act_init_state(const char **stage);

#endif
