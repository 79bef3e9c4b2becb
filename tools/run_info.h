/*
 * run_info.h -- what `acceltrace run` knows of a run that the spools do
 * not hold (the command line, the program's pid and wait status, the
 * --metadata options, the trace mode, the output name or template), kept as run.json in a spool
 * directory that is kept because the trace was not written, so that
 * `acceltrace export SPOOL_DIR` can write the same trace later.
 */
#ifndef ACT_RUN_INFO_H
#define ACT_RUN_INFO_H

#include <stdio.h>

#define ACT_RUN_INFO_FILE "run.json"

typedef struct act_run_info {
    char **argv; /* NULL-terminated */
    int argc;
    char **metadata; /* "KEY=VALUE", NULL-terminated */
    int pid;         /* 0: unknown */
    int wait_status; /* -1: unknown */
    unsigned mode;   /* 0: not given */
    char *output;    /* the run's -o (a name template among them); NULL: not given */
} act_run_info;

/* Write run.json into `dir`; 0 or -errno. */
int act_run_info_save(const char *dir, const char *const *argv, int argc,
                      const char *const *metadata, int pid, int wait_status, unsigned mode,
                      const char *output);
/* Read run.json from `dir`: 1 read, 0 absent, -1 unusable (a line in err). */
int act_run_info_load(const char *dir, act_run_info *ri, char *err, size_t len);
void act_run_info_free(act_run_info *ri);

/* `s` as one shell word (quoted when needed), for a command to copy. */
void act_shell_word_print(FILE *f, const char *s);

#endif
