/*
 * nesting.c -- the slices of one lane must nest (Perfetto and HTA draw
 * them as a stack): each process's host slices, in lane order, checked
 * once its pass is over; what does not nest is counted (improper nesting),
 * never dropped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "builder_int.h"
#include "core/vec.h"

/* ---- whole timeline --------------------------------------------------- */

/* A host slice for the nesting check, in lane order. */
typedef struct host_slice {
    uint32_t tid;
    uint64_t start, end;
} host_slice;

static int host_cmp(const void *a, const void *c)
{
    const host_slice *x = a, *y = c;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return bld_span_cmp(x->start, x->end, y->start, y->end);
}

/* Proper nesting on the host lanes of one process (its ranges and API
 * calls that are written as slices): counted, never "fixed". Spool files
 * are named by pid, so a process's lanes are its own. */
/* Sort slices in lane order; ranges (push order) and API calls (record
 * order) of a single thread mostly come sorted already. */
static void sort_slices(host_slice *v, size_t n)
{
    /* Insertion sort while the disorder is local (ties in start that the
     * clock made, a late record); qsort once it has moved n items. */
    size_t budget = n;
    for (size_t i = 1; i < n; i++) {
        if (host_cmp(&v[i - 1], &v[i]) <= 0)
            continue;
        host_slice x = v[i];
        size_t j = i;
        while (j > 0 && host_cmp(&v[j - 1], &x) > 0 && budget) {
            v[j] = v[j - 1];
            j--;
            budget--;
        }
        v[j] = x;
        if (!budget) {
            qsort(v, n, sizeof(*v), host_cmp);
            return;
        }
    }
}

/* The slice of range (kind 0) or API call (kind 1) i of a process: 1
 * when it is written, i.e. checked. */
static int slice_of(const bld *b, const bld_proc *p, int kind, size_t i, host_slice *s)
{
    if (kind == 0) {
        const bld_range *r = BLD_RANGE(p, i);
        if (!bld_in_window(b, p, r->start, r->end > r->start ? r->end : r->start))
            return 0;
        *s = (host_slice){r->tid, r->start, r->end >= r->start ? r->end : r->start};
        return 1;
    }
    const bld_api *a = &p->api[i - p->api_base];
    if (!(a->kept & BLD_API_KEPT))
        return 0;
    *s = (host_slice){a->tid, a->start, a->end >= a->start ? a->end : a->start};
    return 1;
}

/* The checked slices of one kind in lane order: read straight from the
 * ranges or API calls when they come in lane order already (a process
 * with one recording thread: no copy, no sort), else from a sorted copy
 * in v. */
typedef struct slice_cursor {
    const bld *b;
    const bld_proc *p;
    int kind;
    size_t i, n;
    const host_slice *v; /* the sorted copy, or NULL */
} slice_cursor;

static int cursor_next(slice_cursor *c, host_slice *s)
{
    if (c->v) {
        if (c->i == c->n)
            return 0;
        *s = c->v[c->i++];
        return 1;
    }
    while (c->i < c->n)
        if (slice_of(c->b, c->p, c->kind, c->i++, s))
            return 1;
    return 0;
}

static int in_lane_order(const bld *b, const bld_proc *p, int kind, size_t n, size_t *kept)
{
    host_slice prev = {0}, cur;
    int ordered = 1;
    *kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (!slice_of(b, p, kind, i, &cur))
            continue;
        if (*kept && host_cmp(&prev, &cur) > 0)
            ordered = 0;
        prev = cur;
        (*kept)++;
    }
    return ordered;
}

void bld_check_nesting(bld *b, const bld_proc *p)
{
    act_timeline *tl = b->tl;
    slice_cursor c[2] = {{b, p, 0, 0, p->n_ranges, NULL}, {b, p, 1, 0, p->n_api, NULL}};
    size_t kept[2];
    int ordered[2];
    for (int k = 0; k < 2; k++)
        ordered[k] = in_lane_order(b, p, k, c[k].n, &kept[k]);
    size_t copies = (ordered[0] ? 0 : kept[0]) + (ordered[1] ? 0 : kept[1]);
    host_slice *v = copies ? bld_scratch(b, copies * sizeof(*v)) : NULL;
    if (copies && !v)
        return;
    for (int k = 0; k < 2; k++) {
        if (ordered[k])
            continue;
        size_t m = 0;
        for (size_t i = 0; i < c[k].n; i++)
            if (slice_of(b, p, k, i, &v[m]))
                m++;
        sort_slices(v, m);
        c[k] = (slice_cursor){b, p, k, 0, m, v};
        v += m;
    }
    /* Ranges and API calls merged as they are checked (ranges first on a
     * tie), lane after lane. */
    act_nest nest = {0};
    uint32_t lane = 0;
    host_slice h[2];
    int has[2] = {cursor_next(&c[0], &h[0]), cursor_next(&c[1], &h[1])};
    while (has[0] || has[1]) {
        int k = !has[1] || (has[0] && host_cmp(&h[0], &h[1]) <= 0) ? 0 : 1;
        const host_slice *m = &h[k];
        if (m->tid != lane)
            nest.depth = 0;
        lane = m->tid;
        int r = act_nest_add(&nest, m->start, m->end);
        if (r < 0) {
            tl->err = ACT_E_NOMEM;
            break;
        }
        tl->counts.nesting_violations += (uint64_t)r;
        has[k] = cursor_next(&c[k], &h[k]);
    }
    act_nest_free(&nest);
}

/* The origin is the earliest time anything happened; the wall clock of
 * that instant comes from the earliest spool's (realtime, timeline) pair. */
