/*
 * writer.h -- the writer seam: what every output of a run (the Chrome
 * trace, the summary, later SQLite or Perfetto protobuf) is to the export,
 * modelled on kineto's ActivityLogger and its factory. A writer is opened
 * with the run's facts once the timeline's header is built (devices,
 * processes, metadata, strings, time base), takes the built events a
 * batch at a time, and is closed with ok: it then writes what is known
 * only at the end (counters, the exit status) and puts its file in place
 * (outfile.h: the file's life is shared code), or removes it. Writers
 * only read the timeline; they never join or re-read a spool.
 *
 * The export picks its writers by the output's name from the table in
 * writers.c (act_writers_pick), plus the summary when one is wanted:
 * adding a format is one file that defines an act_writer_ops, declared
 * below, and one row there (docs/architecture.md "Adding a writer").
 */
#ifndef ACT_WRITER_H
#define ACT_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include "timeline/timeline.h"

/* What a writer found that the timeline does not hold, for the writers
 * closed after it (the summary prints the trace writer's counts). */
typedef struct act_writer_found {
    uint64_t invalid_utf8; /* invalid UTF-8 sequences replaced by U+FFFD */
    size_t errors;         /* error lines listed: the timeline's, then the writer's own */
} act_writer_found;

/* act_writer_facts.options, from the table's row. */
#define ACT_WRITER_GZIP 1u /* the file is a gzip stream (a name ending in ".gz") */

/* The run's facts, as the export knows them (borrowed until the close). */
typedef struct act_writer_facts {
    const char *path;       /* the output file */
    int force;              /* replace an existing regular file at path */
    unsigned mode;          /* permission bits of the file; 0 = 0600 */
    int *replaced_fd;       /* not NULL, with force: the replaced file left open here (outfile.h) */
    unsigned options;       /* ACT_WRITER_* of the table's row */
    const char *trace_name; /* NULL: derived from argv[0] */
    const char *const *argv; /* traced command (may be NULL) */
    int argc;
    const char *const *extra_metadata; /* "KEY=VALUE", NULL-terminated (may be NULL) */
    int child_status;                  /* wait status, -1 if n/a (not known yet) */
    /* 1: the events are written while the program runs, before the facts
     * of the header are final (ACT_WRITER_EARLY writers only); they learn
     * them at the end through set_facts. */
    int events_first;
    FILE *report;            /* a report writer's stream (the summary's) */
    int by_range;            /* the summary attributes device time to ranges */
    act_writer_found *found; /* filled in by the trace writer's close, read by reports */
} act_writer_facts;

/* act_writer_ops.flags */
#define ACT_WRITER_EARLY  1u /* takes events while the program runs (events_first) */
#define ACT_WRITER_REPORT 2u /* prints to a terminal stream: closed after the files */

typedef struct act_writer act_writer;

typedef struct act_writer_ops {
    const char *name; /* "chrome-json", "summary", ... (for messages) */
    unsigned flags;   /* ACT_WRITER_* */
    /* After act_timeline_build_start (or the first batch of a live
     * build): what tl holds then. Returns 0, ACT_E_IO or ACT_E_NOMEM with a
     * one-line reason in err; on failure *w may be set and must be closed
     * (with ok 0). */
    int (*open)(act_writer **w, act_timeline *tl, const act_writer_facts *f, char *err,
                size_t errlen);
    /* The events tl holds now (tl->ev, tl->args): read, never emptied
     * (the export empties the batch once every writer took it). Event
     * strings stay valid until the close. Returns 0 or an ACT_E_* code. */
    int (*batch)(act_writer *w, act_timeline *tl);
    /* The facts the close writes with, replacing the open's (a trace begun
     * while the program ran learns its exit status at the end). */
    void (*set_facts)(act_writer *w, const act_writer_facts *f);
    /* ok: complete the output from tl as it is now (counters final) and put
     * it in place; 0: remove what was written (returns ACT_E_INVAL). Frees
     * w. Returns 0 or an ACT_E_* code with a one-line reason in err. */
    int (*close)(act_writer *w, act_timeline *tl, int ok, char *err, size_t errlen);
    /* A live build between reads (the program quiet for a while): start
     * writing what is buffered without waiting for it, so that the close
     * at the exit has less left to write. NULL: nothing to do. Returns 0
     * or an ACT_E_* code. */
    int (*idle)(act_writer *w);
    /* Every event has been written, and only the exit's facts will follow
     * (set_facts, then close): a live build finished at the program's
     * seal, while the kernel tears the program down (api/export.c,
     * act_export_live_finish). Work that needs the events alone may be
     * done now, ahead of the close; the close must still give the output
     * the facts and counts it finds then. NULL: nothing to do. */
    void (*settle)(act_writer *w, act_timeline *tl);
} act_writer_ops;

/* The first member of every writer's state: the export sees only this. */
struct act_writer {
    const act_writer_ops *ops;
};

/* One writer of an export and its row's options. */
typedef struct act_writer_pick {
    const act_writer_ops *ops;
    unsigned options;
} act_writer_pick;

/* The writers there are (each defined in its own file, given a row in
 * writers.c). */
extern const act_writer_ops act_writer_chrome_json; /* chrome_json.c */
extern const act_writer_ops act_writer_summary;     /* summary_writer.c */
extern const act_writer_ops act_writer_sqlite;      /* sqlite_writer.c */
extern const act_writer_ops act_writer_pftrace;     /* pftrace_writer.c */

#define ACT_WRITERS_MAX 4
/* The writers of an output: the one the table gives for path's name, then
 * (report) the summary. Returns how many were put in out[ACT_WRITERS_MAX]. */
size_t act_writers_pick(const char *path, int report, act_writer_pick *out);

#endif
