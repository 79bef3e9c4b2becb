/*
 * stream_free.c -- what the live build frees once it was written early
 * (docs/architecture.md "Streaming", memory): the live process's marks,
 * ranges and API calls made into events while it runs leave the builder,
 * their ARG records go back to a free list, and the nesting check of the
 * host lanes (check_nesting in builder.c for every other process) runs
 * lane by lane as slices settle, so that the launcher keeps only what is
 * still open: ranges on a stack, API calls and launches some later record
 * may still join, slices a later one may still sort before.
 *
 * The check stays the batch's: each lane's slices are fed in the batch's
 * lane order (start, longer first, ranges first) and only below the
 * earliest start of the lane's slices not settled yet; a slice read later
 * that sorts before one already fed (an API call recorded at its end that
 * began before something inside it) voids the early events
 * (bld_nest_end returns ACT_E_STATE, as invariant 7).
 */
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "builder_int.h"
#include "core/vec.h"

/* Freed in blocks of at least this many, and only when they are at least
 * half of what is kept (the move is then paid back). */
#define BLD_FREE_MIN 1024

bld_api *bld_api_at(bld_proc *p, size_t i)
{
    if (i >= p->api_base)
        return &p->api[i - p->api_base];
    size_t lo = 0, hi = p->n_held;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->held_idx[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->n_held && p->held_idx[lo] == i ? &p->held[lo] : NULL;
}

bld_api *bld_api_push(bld *b, bld_proc *p)
{
    if (act_vec_reserve(p->api, p->cap_api, p->n_api - p->api_base + 1, 256)) {
        b->tl->err = ACT_E_NOMEM;
        return NULL;
    }
    return &p->api[p->n_api++ - p->api_base];
}

void bld_args_release(bld_proc *p, bld_args *args)
{
    if (!args->head)
        return;
    p->argrefs[args->tail - 1].next = p->arg_free;
    p->arg_free = args->head;
    *args = (bld_args){0, 0};
}

static bld_lane *lane_of(bld *b, bld_proc *p, uint32_t tid)
{
    uint64_t v;
    if (act_u64map_get(&p->lane_by_tid, (uint64_t)tid + 1, &v))
        return &p->lanes[v - 1];
    bld_lane *nl = realloc(p->lanes, (p->n_lanes + 1) * sizeof(*nl));
    if (!nl) {
        b->tl->err = ACT_E_NOMEM;
        return NULL;
    }
    p->lanes = nl;
    bld_lane *l = &p->lanes[p->n_lanes++];
    memset(l, 0, sizeof(*l));
    l->tid = tid;
    if (act_u64map_put(&p->lane_by_tid, (uint64_t)tid + 1, p->n_lanes))
        b->tl->err = ACT_E_NOMEM;
    return l;
}

static void lane_wait(bld *b, bld_proc *p, uint32_t tid, uint64_t start, uint64_t end, int kind)
{
    bld_lane *l = lane_of(b, p, tid);
    if (!l || act_vec_reserve(l->wait, l->cap_wait, l->n_wait + 1, 64)) {
        b->tl->err = ACT_E_NOMEM;
        return;
    }
    l->wait[l->n_wait++] = (bld_slice){start, end >= start ? end : start, (uint8_t)kind};
}

void bld_settled(bld *b, bld_proc *p, int kind, size_t i)
{
    if (kind == 2) {
        bld_args_release(p, &BLD_MARK(p, i)->args);
        return;
    }
    if (kind == 0) {
        bld_range *r = BLD_RANGE(p, i);
        bld_args_release(p, &r->args);
        lane_wait(b, p, r->tid, r->start, r->end, 0);
        return;
    }
    bld_api *a = bld_api_at(p, i);
    if (a->kept & BLD_API_ARGS) {
        bld_args_release(p, &a->args);
        a->kept &= (uint8_t)~BLD_API_ARGS;
    }
    lane_wait(b, p, a->tid, a->start, a->end, 1);
}

/* The batch's lane order (builder.c host_cmp within one lane). */
static int slice_cmp(const void *x, const void *y)
{
    const bld_slice *a = x, *c = y;
    int span = bld_span_cmp(a->start, a->end, c->start, c->end);
    if (span)
        return span;
    return (a->kind > c->kind) - (a->kind < c->kind);
}

/* Feed the lane its waiting slices that start before its front. */
static void lane_feed(bld *b, bld_proc *p, bld_lane *l)
{
    size_t i = 1;
    while (i < l->n_wait && slice_cmp(&l->wait[i - 1], &l->wait[i]) <= 0)
        i++;
    if (i < l->n_wait)
        qsort(l->wait, l->n_wait, sizeof(*l->wait), slice_cmp);
    size_t k = 0;
    for (; k < l->n_wait && l->wait[k].start < l->front; k++) {
        const bld_slice *s = &l->wait[k];
        if (l->fed && slice_cmp(&l->last, s) > 0)
            p->nest_broken = 1;
        int r = act_nest_add(&l->nest, s->start, s->end);
        if (r < 0) {
            b->tl->err = ACT_E_NOMEM;
            return;
        }
        b->tl->counts.nesting_violations += (uint64_t)r;
        l->last = *s;
        l->fed = 1;
    }
    if (!k)
        return;
    memmove(l->wait, l->wait + k, (l->n_wait - k) * sizeof(*l->wait));
    l->n_wait -= k;
}

/* Each lane's front: the earliest start of its slices still to settle
 * (every one with `final`, when nothing else will come). */
static void lanes_front(bld *b, bld_proc *p, int final)
{
    for (size_t i = 0; i < p->n_lanes; i++)
        p->lanes[i].front = UINT64_MAX;
    if (final)
        return;
    for (size_t i = p->ranges_out; i < p->n_ranges && !b->tl->err; i++) {
        const bld_range *r = BLD_RANGE(p, i);
        bld_lane *l = lane_of(b, p, r->tid);
        if (l && r->start < l->front)
            l->front = r->start;
    }
    for (size_t i = p->api_out; i < p->n_api && !b->tl->err; i++) {
        const bld_api *a = &p->api[i - p->api_base];
        bld_lane *l = lane_of(b, p, a->tid);
        if (l && a->start < l->front)
            l->front = a->start;
    }
}

static void lanes_feed(bld *b, bld_proc *p, int final)
{
    lanes_front(b, p, final);
    for (size_t i = 0; i < p->n_lanes && !b->tl->err; i++)
        lane_feed(b, p, &p->lanes[i]);
}

/* Enough below `out` to free: a block, at least half of what is kept. */
static int worth(size_t base, size_t out, size_t n)
{
    return out - base >= BLD_FREE_MIN && 2 * (out - base) >= n - base;
}

static void free_marks(bld_proc *p)
{
    if (!worth(p->marks_base, p->marks_out, p->n_marks))
        return;
    memmove(p->marks, BLD_MARK(p, p->marks_out), (p->n_marks - p->marks_out) * sizeof(*p->marks));
    p->marks_base = p->marks_out;
}

/* Ranges below the cursor: nothing reads them again but their External
 * id, which is their push number (ext_base + index + 1) when every one
 * freed has it. */
static void free_ranges(bld_proc *p)
{
    if (!worth(p->ranges_base, p->ranges_out, p->n_ranges))
        return;
    for (size_t i = p->ranges_base; i < p->ranges_out; i++)
        if (BLD_RANGE(p, i)->ext_id != p->ext_base + i + 1)
            return;
    memmove(p->ranges, BLD_RANGE(p, p->ranges_out),
            (p->n_ranges - p->ranges_out) * sizeof(*p->ranges));
    p->ranges_base = p->ranges_out;
}

/* Held API calls whose op was written since leave. */
static void held_prune(bld_proc *p)
{
    size_t out = 0;
    for (size_t i = 0; i < p->n_held; i++) {
        if (p->held[i].kept & BLD_API_DONE)
            continue;
        p->held[out] = p->held[i];
        p->held_idx[out++] = p->held_idx[i];
    }
    p->n_held = out;
}

static int held_push(bld *b, bld_proc *p, const bld_api *a, size_t i)
{
    if (p->n_held == p->cap_held) {
        size_t cap = p->cap_held ? 2 * p->cap_held : 256;
        bld_api *nh = realloc(p->held, cap * sizeof(*nh));
        if (nh)
            p->held = nh;
        uint32_t *ni = nh ? realloc(p->held_idx, cap * sizeof(*ni)) : NULL;
        if (!ni)
            return b->tl->err = ACT_E_NOMEM;
        p->held_idx = ni;
        p->cap_held = cap;
    }
    p->held[p->n_held] = *a;
    p->held_idx[p->n_held++] = (uint32_t)i;
    return 0;
}

/* API calls below the cursor: a call with a correlation id whose op was
 * not written may still be joined (at the exit, or by a feed), so it is
 * held; the rest is gone. */
static void free_api(bld *b, bld_proc *p)
{
    if (!worth(p->api_base, p->api_out, p->n_api))
        return;
    held_prune(p);
    for (size_t i = p->api_base; i < p->api_out; i++) {
        const bld_api *a = &p->api[i - p->api_base];
        if (a->corr && !(a->kept & BLD_API_DONE) && held_push(b, p, a, i))
            return;
    }
    memmove(p->api, &p->api[p->api_out - p->api_base], (p->n_api - p->api_out) * sizeof(*p->api));
    p->api_base = p->api_out;
}

void bld_release(bld *b, bld_proc *p)
{
    if (!p->nest_live || b->tl->err)
        return;
    lanes_feed(b, p, 0);
    if (!p->frees || b->tl->err)
        return;
    free_marks(p);
    free_ranges(p);
    free_api(b, p);
}

int bld_nest_end(bld *b, bld_proc *p)
{
    for (size_t i = p->ranges_out; i < p->n_ranges && !b->tl->err; i++) {
        const bld_range *r = BLD_RANGE(p, i);
        if (bld_in_window(b, p, r->start, r->end > r->start ? r->end : r->start))
            lane_wait(b, p, r->tid, r->start, r->end, 0);
    }
    for (size_t i = p->api_out; i < p->n_api && !b->tl->err; i++) {
        const bld_api *a = &p->api[i - p->api_base];
        if (a->kept & BLD_API_KEPT)
            lane_wait(b, p, a->tid, a->start, a->end, 1);
    }
    if (!b->tl->err)
        lanes_feed(b, p, 1);
    return p->nest_broken ? ACT_E_STATE : 0;
}

void bld_release_free(bld_proc *p)
{
    for (size_t i = 0; i < p->n_lanes; i++) {
        act_nest_free(&p->lanes[i].nest);
        free(p->lanes[i].wait);
    }
    free(p->lanes);
    act_u64map_free(&p->lane_by_tid);
    free(p->held);
    free(p->held_idx);
}
