/*
 * trigger.h -- the launcher's side of `acceltrace trigger` (cmd_trigger.c):
 * SIGUSR2 to `acceltrace run` writes a trace of the spool as it is now.
 */
#ifndef ACT_TRIGGER_H
#define ACT_TRIGGER_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

/* Before forking the program: records the launcher's pid in spool_dir,
 * installs the SIGUSR2 and SIGCHLD handlers and blocks both (the previous
 * mask goes to *saved). -1 if the pid file could not be written (triggers
 * by pid still work). */
int act_trigger_arm(const char *spool_dir, sigset_t *saved);
/* In the forked child, before exec: the program gets the dispositions
 * and the mask it would have had untraced. */
void act_trigger_child_reset(const sigset_t *saved);
/* Wait until child has exited, without reaping it, calling on_trigger once
 * per SIGUSR2 received meanwhile; `saved` is the mask to wait under (SIGUSR2
 * and SIGCHLD are taken out of it). 0, or -1 with errno. */
int act_trigger_wait(pid_t child, const sigset_t *saved, void (*on_trigger)(void *ctx), void *ctx);
/* The trace name of trigger n for output `out`: ".trigger-N" before
 * ".json" (t.json.gz -> t.trigger-1.json.gz), or appended. */
void act_trigger_name(const char *out, unsigned n, char *buf, size_t len);

#endif
