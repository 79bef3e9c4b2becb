/*
 * summary_window.c -- the summary's reorder window (summary_window.h):
 * sorted runs of slices in arrival order, a min-heap for the rest, and
 * the earliest of them released first.
 */
#include "summary_window.h"

#include <stdlib.h>

#include "acceltrace.h"

#define NONE UINT32_MAX

void act_sum_win_init(act_sum_win *w)
{
    *w = (act_sum_win){.free = NONE};
    for (int r = 0; r < ACT_SUM_RUNS; r++)
        w->run[r] = (act_sum_run){NONE, NONE};
}

void act_sum_win_free(act_sum_win *w)
{
    free(w->slot);
    free(w->next);
    free(w->heap);
    act_sum_win_init(w);
}

/* A free slot (from the free list, else a fresh one), or NONE. */
static uint32_t slot_take(act_sum_win *w)
{
    if (w->free != NONE) {
        uint32_t i = w->free;
        w->free = w->next[i];
        return i;
    }
    if (w->used == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 64;
        if (nc >= NONE)
            return NONE;
        act_sum_pend *s = realloc(w->slot, nc * sizeof(*s));
        if (s)
            w->slot = s;
        uint32_t *n = s ? realloc(w->next, nc * sizeof(*n)) : NULL;
        if (!n)
            return NONE;
        w->next = n;
        w->cap = nc;
    }
    return w->used++;
}

static void slot_give(act_sum_win *w, uint32_t i)
{
    w->next[i] = w->free;
    w->free = i;
}

static int before(const act_sum_win *w, uint32_t a, uint32_t b)
{
    return act_sum_pend_before(&w->slot[a], &w->slot[b]);
}

static int heap_push(act_sum_win *w, uint32_t v)
{
    if (w->n_heap == w->cap_heap) {
        size_t nc = w->cap_heap ? w->cap_heap * 2 : 64;
        uint32_t *h = realloc(w->heap, nc * sizeof(*h));
        if (!h)
            return ACT_E_NOMEM;
        w->heap = h;
        w->cap_heap = nc;
    }
    uint32_t *h = w->heap;
    size_t i = w->n_heap++;
    while (i && before(w, v, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
    return 0;
}

static uint32_t heap_pop(act_sum_win *w)
{
    uint32_t *h = w->heap, top = h[0], v = h[--w->n_heap];
    size_t i = 0, n = w->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && before(w, h[c + 1], h[c]))
            c++;
        if (!before(w, h[c], v))
            break;
        h[i] = h[c];
        i = c;
    }
    if (n)
        h[i] = v;
    return top;
}

/* The first run whose last slice p sorts after, else an empty run, else
 * NULL (p goes to the heap). */
static act_sum_run *run_for(act_sum_win *w, const act_sum_pend *p)
{
    act_sum_run *empty = NULL;
    for (int r = 0; r < ACT_SUM_RUNS; r++) {
        act_sum_run *u = &w->run[r];
        if (u->tail == NONE)
            empty = empty ? empty : u;
        else if (!act_sum_pend_before(p, &w->slot[u->tail]))
            return u;
    }
    return empty;
}

int act_sum_win_push(act_sum_win *w, const act_sum_pend *p)
{
    act_sum_run *r = run_for(w, p);
    uint32_t i = slot_take(w);
    if (i == NONE)
        return ACT_E_NOMEM;
    w->slot[i] = *p;
    w->next[i] = NONE;
    if (r) {
        if (r->tail == NONE)
            r->head = i;
        else
            w->next[r->tail] = i;
        r->tail = i;
        w->in_runs++;
    } else if (heap_push(w, i)) {
        slot_give(w, i);
        return ACT_E_NOMEM;
    }
    w->n++;
    return 0;
}

/* The run whose first slice is the earliest held, or NULL: the heap's top. */
static act_sum_run *earliest_run(act_sum_win *w)
{
    act_sum_run *at = NULL;
    uint32_t best = w->n_heap ? w->heap[0] : NONE;
    for (int r = 0; r < ACT_SUM_RUNS; r++) {
        uint32_t h = w->run[r].head;
        if (h != NONE && (best == NONE || before(w, h, best))) {
            best = h;
            at = &w->run[r];
        }
    }
    return at;
}

act_sum_pend act_sum_win_pop(act_sum_win *w)
{
    act_sum_run *r = earliest_run(w);
    uint32_t i;
    if (r) {
        i = r->head;
        r->head = w->next[i];
        if (r->head == NONE)
            r->tail = NONE;
    } else {
        i = heap_pop(w);
    }
    act_sum_pend out = w->slot[i];
    slot_give(w, i);
    w->n--;
    return out;
}
