/*
 * summary.h -- the summary table: per name, for device ops and for host
 * calls separately, count, total, mean, min, max and share of busy time,
 * sorted by total, with the drop/skew/outstanding counters underneath.
 *
 * Fed either from a built timeline (end of `acceltrace run`) or from a
 * Chrome trace JSON file (`acceltrace summary`, acceltrace's own traces or
 * torch.profiler's). Busy time of a group is the union of its slices per
 * lane, summed over lanes, so nested host calls are not counted twice in
 * it; a name's share is its total over that busy time, and its self time
 * (total less the time of the slices nested in it on its lane) is shown
 * beside the total, as torch's key_averages does. Memory is bounded by the
 * distinct names, lanes and processes (summary_impl.h: about 110 B and 130
 * B each), not by the trace; printing keeps only the top rows.
 * Traces are read by tools/summary_load.c.
 */
#ifndef ACT_SUMMARY_H
#define ACT_SUMMARY_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "timeline/timeline.h"

typedef struct act_summary act_summary;

act_summary *act_summary_new(void);
/* The reorder window to start with, in slices (summary_impl.h): a smaller
 * one for slices that come in start order per lane but for what a slice
 * encloses; it grows where a lane's slices come out of order. */
void act_summary_window(act_summary *s, size_t slices);
/* The first window of the builder's own timelines (run, export; 176 KiB). */
#define ACT_SUM_WINDOW_OWN (1u << 12)
void act_summary_free(act_summary *s);

/* A slice: name is copied (interned). ts/dur in microseconds; pid/tid
 * identify the lane (and pid the process row); ext = External id (0 =
 * none). Returns 0 or ACT_E_NOMEM. */
/* The name a device op is summed under: its name, and its program when it
 * has one (an OpenCL kernel's "program" arg), as `name` US `program` in
 * buf (cap bytes). The summary shows "name (program N)" only for names
 * that more than one program has, the bare name otherwise. Returns the
 * length (len, and buf unused, when there is no program or no room). */
size_t act_summary_op_key(char *buf, size_t cap, const char *name, size_t len, const char *program,
                          size_t plen);
/* A device op's wait from its enqueue ("queued") to its start, us: the
 * launch-to-start delay, per name. */
int act_summary_add_delay(act_summary *s, const char *name, size_t len, double delay_us);
int act_summary_add_slice(act_summary *s, const char *name, size_t len, int device, uint64_t pid,
                          uint64_t tid, double ts_us, double dur_us, uint64_t ext);
/* The name of the range (host slice) carrying External id `ext`. Kept
 * only while ranges are wanted (default on; the by-range table needs
 * them): as runs of consecutive ids of one name (summary_impl.h), so the
 * ranges of a loop of one name cost nothing a launch; ranges of many
 * names interleaved grow with their number. */
int act_summary_add_range(act_summary *s, uint64_t ext, const char *name, size_t len);
void act_summary_want_ranges(act_summary *s, int on);
/* Attribute device time to the Python line that launched it instead
 * (summary --by-python-line): the "ranges" are then Python source lines,
 * keyed by the launch's correlation (act_summary_add_range with corr, and
 * act_summary_add_slice's ext = the device op's correlation). */
void act_summary_want_python_lines(act_summary *s, int on);
int act_summary_by_python_line(const act_summary *s);
/* Several traces: slices added after this belong to a new source (one
 * rank or file row). The first source exists implicitly. */
int act_summary_begin_source(act_summary *s, const char *path);
/* The current source's rank (distributedInfo.rank) and its "acceltrace"
 * object (owned by s from here on; may be NULL). */
void act_summary_source_rank(act_summary *s, long long rank);
void act_summary_source_counters(act_summary *s, json_t *acceltrace);
/* OpenCL: a failed call or command (args.error) and the trace's
 * "opencl_leaks" object (referenced, not stolen) for the OpenCL section. */
void act_summary_add_failure(act_summary *s, const char *name, size_t len, const char *err,
                             size_t errlen);
void act_summary_source_cl_leaks(act_summary *s, json_t *leaks);
/* The trace's "opencl_calls_not_drawn" object (referenced, not stolen). */
void act_summary_source_cl_undrawn(act_summary *s, json_t *undrawn);
/* The current source's process `pid` is called `label` (process_name). */
int act_summary_process_label(act_summary *s, uint64_t pid, const char *label, size_t len);
/* The longest string a trace reader keeps (bytes): a longer one is cut
 * there and ends in "...[truncated: N bytes, id X]" (N its whole length,
 * X a hash of what was cut, so distinct long names stay apart). */
#ifndef ACT_SUM_STR_MAX /* the fuzz target sets it small, to reach the cut */
#define ACT_SUM_STR_MAX 65536u
#endif

/* The reader cut n strings longer than it keeps (each ends in a marker
 * that says so): said under the tables. */
void act_summary_add_truncated(act_summary *s, uint64_t n);
/* Counters to print underneath: an "acceltrace" object as written in
 * traces (borrowed reference; NULL = the sources' own). */
void act_summary_set_counters(act_summary *s, json_t *acceltrace);

enum { ACT_SUM_TABLE, ACT_SUM_CSV, ACT_SUM_JSON };
/* base: demangled, without template/argument lists; full: demangled;
 * mangled: as the trace has them. */
enum { ACT_SUM_NAMES_BASE, ACT_SUM_NAMES_FULL, ACT_SUM_NAMES_MANGLED };
enum { ACT_SUM_NS, ACT_SUM_US, ACT_SUM_MS, ACT_SUM_S };

typedef struct act_summary_fmt {
    int by_range;
    int by_python_line; /* with by_range: the ranges are Python lines */
    int format;         /* ACT_SUM_TABLE/CSV/JSON */
    int names;          /* ACT_SUM_NAMES_* */
    int unit;           /* ACT_SUM_NS..S */
    int width;          /* table width; 0 = COLUMNS, the terminal, else 80 */
    size_t rows;        /* rows per section, the rest one "other" row; 0 = ACT_SUM_ROWS */
} act_summary_fmt;

/* Rows per section by default: the top names by total time. Every name is
 * still counted (the section's name count, and the "other" row's count and
 * times are exact). */
#define ACT_SUM_ROWS 1000

/* Print the tables (and with by_range, device time per launching range),
 * as a table fitted to the width. */
void act_summary_print(act_summary *s, FILE *f, int by_range);
void act_summary_print_fmt(act_summary *s, FILE *f, const act_summary_fmt *fmt);

/* Whole summary of a built timeline. `invalid_utf8` and `errors` are what
 * its trace writer found (act_chrome_stats): writers only read the
 * timeline. Returns 0 or ACT_E_NOMEM. */
int act_summary_from_timeline(const act_timeline *tl, uint64_t invalid_utf8, size_t errors, FILE *f,
                              int by_range);

/* The same summary from a timeline built in batches (timeline.h, sink):
 * _add_events takes the slices of the events tl holds now (call it from
 * the sink, before the batch is emptied; names must outlive s, as they do
 * while tl is kept), _print_timeline prints with tl's counters once the
 * build and the trace writer are done. Fed every batch in build order, the
 * output is byte-identical to act_summary_from_timeline's on the whole
 * timeline: the same slices reach the same rows in the same order (the
 * reorder window releases them by start, duration and arrival).
 * _add_events: 0 or ACT_E_NOMEM. */
int act_summary_add_events(act_summary *s, const act_timeline *tl);
/* A summary for tl's slices: the builder's own timelines (not imported)
 * start at the reorder window ACT_SUM_WINDOW_OWN. NULL: out of memory. */
act_summary *act_summary_new_for(const act_timeline *tl);
void act_summary_print_timeline(act_summary *s, const act_timeline *tl, uint64_t invalid_utf8,
                                size_t errors, FILE *f, int by_range);
/* The same table as text in memory (*text malloc'ed, *len bytes), and the
 * counters it shows (*counters, the caller's to json_decref): a report
 * made before it is printed (summary_writer.c, when the events were all
 * written at the program's seal), printed as it is while
 * act_summary_counters_of gives counters equal to those (json_equal).
 * 0 or ACT_E_NOMEM (nothing made). */
int act_summary_render_timeline(act_summary *s, const act_timeline *tl, uint64_t invalid_utf8,
                                size_t errors, int by_range, char **text, size_t *len,
                                json_t **counters);
/* The counters the table shows for tl (NULL: out of memory). */
json_t *act_summary_counters_of(const act_timeline *tl, uint64_t invalid_utf8, size_t errors);

#endif
