/*
 * summary.h -- the summary table: per name, for device ops and for host
 * calls separately, count, total, mean, min, max and share of busy time,
 * sorted by total, with the drop/skew/outstanding counters underneath.
 *
 * Fed either from a built timeline (end of `acceltrace run`) or from a
 * Chrome trace JSON file (`acceltrace summary`, acceltrace's own traces or
 * torch.profiler's). Busy time of a group is the union of its slices per
 * lane, summed over lanes, so nested host calls are not counted twice in
 * it; a name's share is its total over that busy time.
 */
#ifndef ACT_SUMMARY_H
#define ACT_SUMMARY_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "timeline/timeline.h"

typedef struct act_summary act_summary;

act_summary *act_summary_new(void);
void act_summary_free(act_summary *s);

/* A slice: `name` must outlive the summary. ts/dur in microseconds; lane
 * identifies (process, thread); ext = External id (0 = none). */
int act_summary_add_slice(act_summary *s, const char *name, size_t len, int device, uint64_t lane,
                          double ts_us, double dur_us, uint64_t ext);
/* The name of the range (host slice) carrying External id `ext`. */
int act_summary_add_range(act_summary *s, uint64_t ext, const char *name, size_t len);
/* Counters to print underneath: an "acceltrace" object as written in
 * traces (its strings borrowed: it must outlive s; NULL = none available). */
void act_summary_set_counters(act_summary *s, json_t *acceltrace);

/* Print the tables (and with by_range, device time per launching range). */
void act_summary_print(act_summary *s, FILE *f, int by_range);

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
 * timeline: the same slices reach the same tables in the same order. Only
 * the slices are kept (no args, flows, metadata). Per-name sums are not
 * folded while streaming: the totals and busy time are float sums whose
 * order is the order the sorts leave equal keys in (qsort is not stable
 * in general), so only the same slice array gives the same bytes; the
 * busy-time union also needs each lane's slices in start order, which the
 * batches do not deliver. _add_events: 0 or ACT_E_NOMEM. */
int act_summary_add_events(act_summary *s, const act_timeline *tl);
void act_summary_print_timeline(act_summary *s, const act_timeline *tl, uint64_t invalid_utf8,
                                size_t errors, FILE *f, int by_range);

/* Load a Chrome trace (object form or bare array) into s. Returns 0, or
 * ACT_E_FORMAT / ACT_E_IO with a one-line reason in err. *root receives the
 * document, which must outlive s (json_decref it afterwards). */
int act_summary_load_json(act_summary *s, const char *path, json_t **root, char *err,
                          size_t errlen);

#endif
