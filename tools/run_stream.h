/*
 * run_stream.h -- `acceltrace run` streams: while the program runs, a
 * thread of the launcher reads the program's spool and feeds the builder
 * (api/export.h, act_export_live) every ACT_RUN_STREAM_MS, so that the
 * export at exit has only the tail left (docs/architecture.md "Streaming").
 */
#ifndef ACT_RUN_STREAM_H
#define ACT_RUN_STREAM_H

#include <sys/types.h>

#include "api/export.h"

/* Between two reads of the spool by default (run --stream-interval): a
 * batch, not a record at a time. The first ACT_RUN_STREAM_QUICK reads
 * come every ACT_RUN_STREAM_FIRST_MS: a short program's records are read
 * before it ends, and a long one's in batches of 20 ms (50 ms before: a
 * third more of a 1.6 M-launch run's records were left for after the
 * exit, for the same CPU time; BENCHMARKS.md, "The poll interval"). After
 * a read that took ACT_RUN_STREAM_BUSY records or more, the next comes
 * ACT_RUN_STREAM_BUSY_MS later: a program recording that fast leaves
 * about 5 ms of its records for after the exit, not 20-40 (at 1.6 M
 * launches 0.46 % -> 0.00 % of the records, 16.5 -> 11.3 ms after the
 * exit, the same CPU time; BENCHMARKS.md, "Issue 32: segments that end").
 * An interval given on the command line is used from the first read, and
 * always. */
#define ACT_RUN_STREAM_MS       20
#define ACT_RUN_STREAM_FIRST_MS 10
#define ACT_RUN_STREAM_QUICK    50
#define ACT_RUN_STREAM_BUSY_MS  5
#define ACT_RUN_STREAM_BUSY     4096

typedef struct act_run_stream act_run_stream;
/* Start reading `spool_dir`/<pid>.acts every `ms` milliseconds (0: the
 * default, quicker at first and after a busy read), and at once when a
 * spool there is sealed; NULL (and
 * nothing started) when the thread cannot be made: the export then reads
 * everything itself. With `out` (the export's options, borrowed until the
 * export), the trace is written as it is read too (act_export_live_output). */
act_run_stream *act_run_stream_start(const char *spool_dir, pid_t pid, unsigned ms,
                                     const act_export_opts *out);
/* Stop the thread (within one batch of records) and hand over what it
 * read, for act_export_opts.live (free with act_export_live_free), and in
 * *watch its inotify watch on the spool directory (-1: none), the
 * caller's to close where nobody waits: closing one waits for a grace
 * period of the kernel's, 7-23 ms measured (run_cleanup.h). */
act_export_live *act_run_stream_stop(act_run_stream *s, int *watch);

#endif
