/*
 * export.h -- the one entry point from "spool files on disk" to "trace
 * written": read every spool of a run, build the timeline, write the
 * Chrome trace and (optionally) the summary. Used by `acceltrace run` and
 * by in-process sessions (act_session_end).
 */
#ifndef ACT_EXPORT_H
#define ACT_EXPORT_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

typedef struct act_export_opts {
    const char *spool_dir;   /* reads every <pid>.acts file in it */
    const char *out_path;    /* Chrome trace JSON destination */
    int force;               /* overwrite an existing out_path */
    const char *const *argv; /* traced command line, for metadata (may be NULL) */
    int argc;
    const char *trace_name;              /* "traceName"; NULL = derived from argv[0] */
    FILE *summary;                       /* where to print the summary table; NULL = none */
    int summary_by_range;                /* summary attributes device time to ranges */
    int child_status;                    /* wait status of the traced program, -1 if n/a */
    const char *const *extra_metadata;   /* "KEY=VALUE" strings from --metadata, NULL-terminated */
    uint64_t window_start_ns;            /* capture window on the timeline clock (0 = open) */
    uint64_t window_end_ns;              /* 0 = open */
    unsigned trace_mode;                 /* permission bits of the trace file; 0 = 0600 */
    int child_pid;                       /* pid of the traced program (child_status), 0 = n/a */
    volatile const sig_atomic_t *cancel; /* stop early, nothing written, once *cancel != 0 */
    const char *only_spool;              /* one spool file of spool_dir only (NULL = all) */
    FILE *progress; /* a terminal: events written and rate, after 1 s; NULL = none */
} act_export_opts;

/* Returns 0 or a negative ACT_E_* code (ACT_E_IO: could not write;
 * ACT_E_FORMAT: a spool was unreadable — still reported in the trace;
 * ACT_E_STATE: cancelled through opts->cancel, no trace written). */
int act_trace_export(const act_export_opts *opts);

#endif
