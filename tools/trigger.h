/*
 * trigger.h -- the launcher's side of `acceltrace trigger` (trigger.c): a
 * request over the spool directory's trigger.sock (or SIGUSR2 sent by
 * hand) makes `acceltrace run` write a trace of the spool as it is now.
 */
#ifndef ACT_TRIGGER_H
#define ACT_TRIGGER_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* What serving one request did. */
typedef enum act_trigger_outcome {
    ACT_TRIGGER_WRITTEN, /* a trace was written: text holds its path */
    ACT_TRIGGER_OPENED,  /* --capture-range=trigger: the window opened */
    ACT_TRIGGER_FAILED,  /* text says why no trace was written */
} act_trigger_outcome;

/* Serves request n (numbered from 1 across the run); text (len bytes) is
 * sent back to the trigger that asked. */
typedef act_trigger_outcome (*act_trigger_fn)(void *ctx, unsigned n, char *text, size_t len);

/* Before forking the program: listens on trigger.sock in spool_dir,
 * installs the SIGUSR2 and SIGCHLD handlers and blocks both (the previous
 * mask goes to *saved). 0, or -errno when the channel could not be made
 * (SIGUSR2 still works; the rest is done either way). */
int act_trigger_arm(const char *spool_dir, sigset_t *saved);
/* In the forked child, before exec: the program gets the dispositions
 * and the mask it would have had untraced. */
void act_trigger_child_reset(const sigset_t *saved);
/* Wait until child has exited, without reaping it, serving each request
 * received meanwhile with fn; `saved` is the mask to wait under (SIGUSR2
 * and SIGCHLD are taken out of it). 0, or -1 with errno. */
int act_trigger_wait(pid_t child, const sigset_t *saved, act_trigger_fn fn, void *ctx);
/* Once the program has ended: the channel is closed and its socket removed
 * (queued triggers are told the run ended); with a log, one line says how
 * many requests were served and how many traces written, if any. */
void act_trigger_disarm(FILE *log);
/* The trace name of trigger n for output `out`: ".trigger-N" before
 * ".json" (t.json.gz -> t.trigger-1.json.gz), or appended. */
void act_trigger_name(const char *out, unsigned n, char *buf, size_t len);

#endif
