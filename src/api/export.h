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

/* Streaming (docs/architecture.md "Streaming"): while the traced program
 * runs, its spool (<pid>.acts in the spool directory) is read and passed
 * to the builder a batch at a time, so that its export has only the tail
 * left. _poll opens the spool once it is there and feeds what was
 * published since the last call (records are taken only in their final
 * order: the trace is the one a batch export of the same spool writes);
 * it stops early once *stop is set; it returns ACT_E_UNSUPPORTED, then
 * and ever after, for a spool that cannot be read while it is written (a
 * ring, TSC times: the export reads it). Not thread-safe: one thread
 * polls, and the export (opts.live) runs after the last poll returned. */
typedef struct act_export_live act_export_live;
typedef struct act_export_opts act_export_opts;
act_export_live *act_export_live_new(const char *spool_dir, long pid);
int act_export_live_poll(act_export_live *l, volatile const int *stop);
/* Write the trace while the program runs too (opts as the export at the
 * end will get them, borrowed until then; no capture window): from the
 * first poll that opens the spool, the trace file is created beside
 * out_path and the live process's host events that can no longer change
 * are written into it as they are read (events first, the header's facts
 * at the end; the summary, when wanted, fed from the same batches). The
 * export at the end finishes that file when it is given the same output
 * (path, force, mode, summary or not), else removes it and writes anew;
 * it also does so when the events written early prove wrong (an earlier
 * time base, a capture window). Call before the first poll. */
int act_export_live_output(act_export_live *l, const act_export_opts *o);
/* The program sealed its spool (it is ending): when that spool is sealed
 * and alone in the directory, and its trace is being written
 * (act_export_live_output), read the rest of it and write every event now,
 * while the kernel tears the program down, so that the export at the end
 * has only the facts of the exit left (its status, the file's close and
 * the summary). 1 when done, 0 when not (nothing was read: the export
 * does it). The export checks, once the program is gone, that nothing was
 * published after (act_spool_live_settled), else writes anew. Called by
 * the polling thread, after a poll; the polls after it read nothing. */
int act_export_live_finish(act_export_live *l);
/* Records taken so far (0: none, or the spool is not there yet). */
uint64_t act_export_live_records(const act_export_live *l);
/* Events written into the trace so far (act_export_live_output). */
uint64_t act_export_live_written(const act_export_live *l);
/* Of them, device ops (their flows not counted). */
uint64_t act_export_live_devops(const act_export_live *l);
/* Times the spool's pages were dropped so far (each unmaps the mapping). */
uint64_t act_export_live_drops(const act_export_live *l);
/* 1 when the export found what was written early void and wrote anew. */
int act_export_live_voided(const act_export_live *l);
void act_export_live_free(act_export_live *l);

/* Where one export's time went (act_export_opts.times), for `run
 * --log=debug` and the benchmarks: what the export read and wrote itself
 * (after a live export, the tail the program left at its exit) against
 * what finishing the file costs whatever the run's length. */
typedef struct act_export_times {
    uint64_t read_ns;       /* opening the spools and reading the rest of their records */
    uint64_t events_ns;     /* making the remaining events and handing them to the writer */
    uint64_t close_ns;      /* the file's last buffers, its header facts, flush and rename */
    uint64_t summary_ns;    /* printing the summary (0: none) */
    uint64_t records;       /* records of all spools, those read while the program ran too */
    uint64_t events;        /* of them, what a trace shows (act_tl_counts_events; 0: nothing
                             * was recorded, and no summary was printed) */
    uint64_t unread;        /* spools that could not be read for want of memory (named in errors) */
    uint64_t early_ns;      /* the rest read and the events written when the spool was sealed,
                             * before the exit (act_export_live_finish; 0: not done then) */
    uint64_t early_records; /* the records it read then */
} act_export_times;

struct act_export_opts {
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
    /* What was read while the program ran (NULL: none). Used when its
     * spool is the first of the run and no capture window is given (the
     * export reads everything itself otherwise); emptied either way. */
    act_export_live *live;
    act_export_times *times; /* filled in when not NULL, whatever the result */
    /* Not NULL, with force: a trace the export replaces is left open here
     * (-1: none) for the caller to close, which frees it
     * (act_chrome_stream_keep_replaced). */
    int *replaced_fd;
};

/* Returns 0 or a negative ACT_E_* code (ACT_E_IO: could not write;
 * ACT_E_FORMAT: a spool was unreadable — still reported in the trace;
 * ACT_E_STATE: cancelled through opts->cancel, no trace written). */
int act_trace_export(const act_export_opts *opts);

/* Cut the kept spools in spool_dir whose processes ended to the chunks
 * they used (timeline/spool.h, act_spool_dir_shrink): how many were cut,
 * or a negative ACT_E_* code (err says why). */
int act_export_spools_shrink(const char *spool_dir, char *err, size_t errlen);

#endif
