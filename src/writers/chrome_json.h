/*
 * chrome_json.h -- the Chrome trace writer: the built timeline as a
 * Chrome Trace Event JSON object (DESIGN.md "Trace shape") that opens in
 * Perfetto and follows torch.profiler conventions. Every string, keys
 * included, is escaped losslessly (json_escape.h); invalid UTF-8 is
 * replaced and counted in the trace's "acceltrace" object. Its files:
 * chrome_event.c (the events), chrome_members.c (the members around
 * them), this stream (chrome_json.c, also the export's "chrome-json"
 * writer, writer.h); the output file's life is outfile.c's.
 */
#ifndef ACT_CHROME_JSON_H
#define ACT_CHROME_JSON_H

#include "obuf.h"
#include "timeline/timeline.h"
#include "writer.h"

/* What the writer found while writing: it only reads the timeline, so a
 * later reader of the run (the summary) takes these from here. */
typedef act_writer_found act_chrome_stats;

typedef struct act_chrome_opts {
    const char *trace_name;  /* NULL: derived from argv[0] */
    const char *const *argv; /* traced command (may be NULL) */
    int argc;
    const char *const *extra_metadata; /* "KEY=VALUE", NULL-terminated (may be NULL) */
    int child_status;                  /* wait status, -1 if n/a */
    act_chrome_stats *stats;           /* filled in once the trace is complete (may be NULL) */
    /* 1: "traceEvents" is the first member and the others (schemaVersion,
     * traceName, baseTimeNanoseconds, deviceProperties, user metadata)
     * follow it, written at the close from what the timeline holds then:
     * a trace whose events are written while the program runs. The same
     * JSON object as a batch trace's, members in another order. 0: the
     * batch layout. */
    int events_first;
} act_chrome_opts;

/* A path ending in ".gz" gets a gzip stream, as torch.profiler's
 * export_chrome_trace does for such names: HTA, the TensorBoard plugin
 * and Perfetto read it. Level 1: on trace JSON it is three times as fast
 * as level 6 for a ratio of 14 instead of 17 (BENCHMARKS.md). */
#define ACT_GZIP_LEVEL 1
int act_path_is_gzip(const char *path);

/* The trace is written while the timeline is built (streaming, so that
 * the events never all sit in memory). _open writes the header from what
 * tl holds then (after act_timeline_build_start: devices, metadata, time
 * base) into a temporary file created beside `path` (outfile.h: mode
 * 0600, or `mode` when not 0);
 * act_chrome_stream_sink, set as tl->sink, writes each batch of events and
 * empties tl->ev/args (act_chrome_stream_write writes what tl holds and
 * keeps it); _close with ok writes the tool metadata (the counters as they
 * are then) and renames the file over `path` (an existing `path` is kept
 * unless `force`); without ok it removes the temporary file. Returns 0,
 * ACT_E_IO or ACT_E_NOMEM with a one-line reason in err; on failure of
 * _open, *s may still be set and must be closed. */
typedef struct act_chrome_stream act_chrome_stream;
int act_chrome_stream_open(act_chrome_stream **s, act_timeline *tl, const act_chrome_opts *o,
                           const char *path, int force, unsigned mode, char *err, size_t errlen);
int act_chrome_stream_write(act_chrome_stream *s, act_timeline *tl);
int act_chrome_stream_sink(act_timeline *tl, void *ctx);
/* The options _close writes with, replacing those given to _open (a trace
 * begun while the program ran learns its exit status at the end); the
 * layout stays the one the head was written in. */
void act_chrome_stream_set_opts(act_chrome_stream *s, const act_chrome_opts *o);
int act_chrome_stream_close(act_chrome_stream *s, int ok, char *err, size_t errlen);
/* With force, the file _close replaces is left open in *fd for the caller
 * to free (act_outfile_keep_replaced). */
void act_chrome_stream_keep_replaced(act_chrome_stream *s, int *fd);

/* The same stream into memory instead of a file (tests and fuzzing use the
 * real writer this way): _close_mem hands over the trace's bytes
 * (malloc'ed, NUL-terminated, *len without the NUL). Returns 0 or
 * ACT_E_NOMEM; *s must be closed either way. */
int act_chrome_stream_open_mem(act_chrome_stream **s, act_timeline *tl, const act_chrome_opts *o);
int act_chrome_stream_close_mem(act_chrome_stream *s, char **text, size_t *len);

#endif
