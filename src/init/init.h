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

#endif
