/*
 * summary_impl.h -- the summary's internals shared by its aggregator
 * (summary.c) and its printers (summary_print.c). Not part of any API.
 *
 * Memory is bounded by the distinct names, lanes and processes plus a
 * reorder window, not by the number of slices: each slice goes into the
 * window (summary_window.h: sorted runs and a min-heap, released by
 * start, -duration, arrival); when it holds `window` slices the earliest
 * leaves it and is folded into its name's row (count, total, min, max),
 * its lane's busy-time union and its lane's nesting stack (self time). A
 * slice that reaches the window after a later slice of
 * its own lane already left it is still counted exactly in its row; only
 * its share of busy and self time is approximate, and the summary says how
 * many such slices there were (`late`).
 *
 * The window: ACT_SUM_WINDOW for a trace file of any origin (a torch
 * trace may write a step's slice after its 10^5 children); the timelines
 * the builder makes (run, export) start at ACT_SUM_WINDOW_OWN, as their
 * lanes come in start order but for what a range or call encloses
 * (act_summary_window). Either grows, up to ACT_SUM_WINDOW, when a lane's
 * slice arrives before one that came earlier: to twice the arrivals since
 * the lane's slices last came in order (what the window must have held for
 * it to be exact), and twice over after a late slice. 4 Ki slices instead of 512 Ki: 176 KiB
 * instead of 22 MiB (it stays in the cache: heap_pop went from 6.5 % of the launcher's
 * samples at 6 M launches to 3.0 %), and 0.6 ms instead of 56-76 to drain at the end.
 *
 * The ranges' names by External id (the by-range table): the builder
 * numbers its ranges as they open, so ranges closed in that order with
 * one name make one run of ids (act_sum_rrun, appended and binary
 * searched); a range out of order (an enclosing one, closed after what it
 * holds) or renamed goes to a hash index read first. A hash entry each
 * was 24 B a range: 12 MiB more at 400 000 launches in a "step" than at
 * 40 000; a run, nothing a launch.
 *
 * What a distinct name or lane costs is kept small (a trace can hold
 * millions of either; BENCHMARKS.md "Summary at scale"): a name is its row
 * and its bytes, a lane a fixed record with its first open slice inline (a nesting stack is
 * allocated only below it), processes are found through a hash index, and
 * the printers keep only the top rows (act_summary_fmt.rows) and one
 * counted "other" row, so printing adds nothing per name.
 */
#ifndef ACT_SUMMARY_IMPL_H
#define ACT_SUMMARY_IMPL_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "summary.h"
#include "summary_window.h"

#define ACT_SUM_LANE_MEMO 16         /* lanes remembered in front of the lane index (summary.c) */
#define ACT_SUM_WINDOW    (1u << 19) /* most slices held for reordering (22 MiB, 44 B each) */

typedef struct act_sum_rrow {
    uint64_t count;
    double total, min, max;
} act_sum_rrow;

typedef struct act_sum_name {
    char *s;
    size_t len;
    uint64_t hash;
    int device;
    uint64_t count;
    double total, self, min, max;
    act_sum_rrow by_range; /* device time launched from this range */
    act_sum_rrow delay;    /* device ops: queued (the enqueue) to start, us */
} act_sum_name;

typedef struct act_sum_open {
    double end, dur, child;
    uint32_t name;
} act_sum_open;

typedef struct act_sum_lane {
    uint64_t key_pid, key_tid;
    uint32_t src, group;
    double last_ts, cur_s, cur_e, busy;
    double arr_ts, arr_dur; /* the latest-starting slice arrived so far */
    uint64_t arr_seq;       /* its arrival + 1 (0: none yet) */
    uint64_t run_seq;       /* arrival + 1 of the first since they came in order */
    act_sum_open base;      /* the outermost open slice (depth >= 1) */
    act_sum_open *stack;    /* the ones inside it (depth >= 2), or NULL */
    uint32_t depth, cap;    /* cap: entries of stack */
    uint8_t device, open, popped;
} act_sum_lane;

typedef struct act_sum_group {
    uint32_t src;
    uint64_t pid;
    char *label; /* process_name, or NULL */
    uint64_t host_slices, dev_slices;
    double host_busy, dev_busy, dev_total, first, last;
} act_sum_group;

typedef struct act_sum_src {
    char *path;
    long long rank;   /* distributedInfo.rank, -1 = none */
    json_t *counters; /* owned "acceltrace" object, or NULL */
} act_sum_src;

typedef struct act_sum_range {
    uint64_t ext;
    uint32_t name;
} act_sum_range;

/* External ids lo..hi, all of one range name: the builder numbers its
 * ranges 1, 2, 3... as they open, so a loop's ranges of one name (a
 * "step" a launch) are one run, whatever the run's length. */
typedef struct act_sum_rrun {
    uint64_t lo, hi;
    uint32_t name;
} act_sum_rrun;

struct act_summary {
    /* interned names (device flag is part of the key) */
    act_sum_name *nm;
    size_t n_nm, cap_nm;
    uint32_t *nm_idx; /* open addressing, id+1, 0 = empty */
    size_t cap_idx;
    act_sum_lane *ln;
    size_t n_ln, cap_ln;
    uint32_t *ln_idx;
    size_t cap_lidx;
    uint32_t ln_memo[ACT_SUM_LANE_MEMO]; /* lane id + 1 last found by a hash slot (0: none) */
    act_sum_group *gr;
    size_t n_gr, cap_gr;
    uint32_t *gr_idx; /* (src, pid) -> group */
    size_t cap_gidx;
    act_sum_src *src;
    size_t n_src, cap_src;
    uint32_t cur_src;
    act_sum_win win; /* the slices held (summary_window.h), up to window */
    size_t window;   /* slices held before the earliest is folded */
    uint64_t seq, late, slices;
    uint64_t bad_dur, bad_ts; /* not finite (or negative): counted as 0 */
    uint64_t truncated;       /* strings cut by the reader (summary_load.c) */
    uint64_t overflowed;      /* figures printed as "overflow" (summary_print.c) */
    act_sum_range *rg;        /* ranges out of id order, or renamed inside a run */
    size_t n_rg, cap_rg;
    uint32_t *rg_idx;
    size_t cap_ridx;
    act_sum_rrun *rr; /* ranges in rising id order, runs sorted by id */
    size_t n_rr, cap_rr;
    act_sum_rrow no_range;
    int want_ranges;
    int by_python_line; /* the ranges are Python lines keyed by correlation */
    int finished;
    int nomem;
    json_t *counters;   /* borrowed (set_counters), else the sources' */
    json_t *cl_failed;  /* OpenCL section (summary_cl.c): {name: {error: n}} */
    json_t *cl_leaks;   /* a trace's "opencl_leaks" (owned) */
    json_t *cl_undrawn; /* a trace's "opencl_calls_not_drawn" (owned) */
};

/* The summary.h calls by a name's row id (act_summary_name_id: the name
 * interned with its kind, device != 0), for a caller that knows a name it
 * has already interned (summary_timeline.c: the builder's events of one
 * name share its bytes). A device op's delay and a host range take the
 * id its slice took. */
int act_summary_name_id(act_summary *s, const char *name, size_t len, int device, uint32_t *id);
int act_summary_add_slice_id(act_summary *s, uint32_t name, int device, uint64_t pid, uint64_t tid,
                             double ts_us, double dur_us, uint64_t ext);
int act_summary_add_delay_id(act_summary *s, uint32_t id, double delay_us);
int act_summary_add_range_id(act_summary *s, uint64_t ext, uint32_t nid);

/* Drain the reorder window and close every open slice (before printing). */
void act_summary_finish(act_summary *s);
/* Name row id of the range carrying ext, or UINT32_MAX. */
uint32_t act_summary_range_name(act_summary *s, uint64_t ext);

#endif
