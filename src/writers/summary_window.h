/*
 * summary_window.h -- the summary's reorder window (summary_impl.h): the
 * slices held until they are folded, released earliest first by (start,
 * -duration, arrival), a total order, so what leaves and when is the
 * same whatever holds them.
 *
 * The builder's slices come in a few sorted runs (each batch's ranges,
 * then its calls, then its device ops, each in start order), so the
 * window keeps up to ACT_SUM_RUNS runs, each a list in arrival order that
 * a slice joins when it sorts after the run's last one, and a min-heap
 * for a slice that fits no run (a trace read from a file in any order).
 * Releasing takes the earliest of the runs' first slices and the heap's
 * top: a few comparisons instead of a heap's dozen levels both ways
 * (issue 32 item 4; BENCHMARKS.md "Export rate with the summary").
 * Memory: one slot per slice held (44 B) and a heap entry (4 B) per slice
 * in the heap, as the window allows.
 */
#ifndef ACT_SUMMARY_WINDOW_H
#define ACT_SUMMARY_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#define ACT_SUM_RUNS 4 /* sorted runs the window keeps besides its heap */

typedef struct act_sum_pend {
    double ts, dur;
    uint64_t seq, ext;
    uint32_t name, lane;
} act_sum_pend;

typedef struct act_sum_run {
    uint32_t head, tail; /* slots; UINT32_MAX: empty */
} act_sum_run;

typedef struct act_sum_win {
    act_sum_pend *slot;  /* slices held, and free slots */
    uint32_t *next;      /* a held slot's next in its run; a free one's next free */
    size_t cap;          /* slots */
    uint32_t free, used; /* first free slot (UINT32_MAX: none); slots ever used */
    act_sum_run run[ACT_SUM_RUNS];
    uint32_t *heap; /* slots of the slices in no run */
    size_t n_heap, cap_heap;
    size_t n;         /* slices held */
    uint64_t in_runs; /* slices that joined a run (the fast path; tests) */
} act_sum_win;

void act_sum_win_init(act_sum_win *w);
void act_sum_win_free(act_sum_win *w);
/* Whether a is released before b. */
static inline int act_sum_pend_before(const act_sum_pend *a, const act_sum_pend *b)
{
    if (a->ts != b->ts)
        return a->ts < b->ts;
    if (a->dur != b->dur)
        return a->dur > b->dur; /* an enclosing slice before what it holds */
    return a->seq < b->seq;
}
/* Hold p. Returns 0 or ACT_E_NOMEM (p not held). */
int act_sum_win_push(act_sum_win *w, const act_sum_pend *p);
/* Release the earliest slice held (w->n must be > 0). */
act_sum_pend act_sum_win_pop(act_sum_win *w);

#endif
