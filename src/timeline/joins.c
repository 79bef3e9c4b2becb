/*
 * joins.c -- how records relate: a device op finds its host launch by
 * (source, correlation id) within its process, and an External id through
 * the range reference it or its launch carries.
 *
 * Vendor correlation ids are not unique (CUPTI and mspti reuse them), so
 * the launch is the latest API record with the same (source, corr) that
 * started no later than the device op; when every candidate starts later
 * (clock skew) the earliest is taken and the skew is counted. The op's
 * range is its own reference, else its launch's, else the vendor's
 * external-correlation record for its correlation id.
 */
#include <assert.h>
#include <stdlib.h>

#include "builder_int.h"

static int key_cmp(const void *a, const void *b)
{
    const bld_key *x = a, *y = b;
    if (x->source != y->source)
        return x->source < y->source ? -1 : 1;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* extcorr entries keep the range reference in `start`: order by record
 * order (idx) within a key instead. */
static int extcorr_cmp(const void *a, const void *b)
{
    const bld_key *x = a, *y = b;
    if (x->source != y->source)
        return x->source < y->source ? -1 : 1;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* API records mostly come in correlation order: check before sorting. */
static void sort_keys(bld_key *k, size_t n, int (*cmp)(const void *, const void *))
{
    for (size_t i = 1; i < n; i++) {
        if (cmp(&k[i - 1], &k[i]) > 0) {
            qsort(k, n, sizeof(*k), cmp);
            return;
        }
    }
}

int bld_joins_prepare(bld *b, bld_proc *p)
{
    /* The API calls streaming freed and still holds (stream_free.c), then
     * the rest. */
    size_t n = p->n_held;
    for (size_t i = p->api_base; i < p->n_api; i++)
        n += p->api[i - p->api_base].corr != 0;
    p->keys = bld_scratch(b, (n ? n : 1) * sizeof(*p->keys));
    if (!p->keys)
        return -1;
    for (size_t i = 0; i < p->n_held; i++)
        p->keys[p->n_keys++] =
            (bld_key){p->held[i].corr, p->held[i].start, p->held[i].source, p->held_idx[i]};
    for (size_t i = p->api_base; i < p->n_api; i++) {
        const bld_api *a = &p->api[i - p->api_base];
        if (a->corr)
            p->keys[p->n_keys++] = (bld_key){a->corr, a->start, a->source, (uint32_t)i};
    }
    sort_keys(p->keys, p->n_keys, key_cmp);
    sort_keys(p->extcorr, p->n_extcorr, extcorr_cmp);
    return 0;
}

/* First index in keys[0..n) whose (source, corr) is >= the given one. */
static size_t lower_bound(const bld_key *keys, size_t n, uint32_t source, uint64_t corr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const bld_key *k = &keys[mid];
        if (k->source < source || (k->source == source && k->corr < corr))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* One past the last index whose (source, corr) equals the given one. */
static size_t upper_bound(const bld_key *keys, size_t n, uint32_t source, uint64_t corr)
{
    if (corr != UINT64_MAX)
        return lower_bound(keys, n, source, corr + 1);
    return source != UINT32_MAX ? lower_bound(keys, n, source + 1, 0) : n;
}

static int key_is(const bld_key *k, uint32_t source, uint64_t corr)
{
    return k->source == source && k->corr == corr;
}

static const bld_key *find_launch(bld_proc *p, uint32_t source, uint64_t corr, uint64_t start)
{
    const bld_key *keys = p->keys;
    size_t n = p->n_keys, lo;
    assert(keys); /* the keys live in the scratch block only while ops are joined */
    /* Device ops mostly come in the order of their launches: try where
     * the previous search ended (the first key of a run) first. */
    size_t h = p->join_hint;
    if (h < n && key_is(&keys[h], source, corr) && (!h || !key_is(&keys[h - 1], source, corr)))
        lo = h;
    else
        lo = lower_bound(keys, n, source, corr);
    if (lo == n || !key_is(&keys[lo], source, corr))
        return NULL;
    /* Within the run of equal keys (sorted by start), the last start <= start. */
    size_t hi = lo + 1 < n && key_is(&keys[lo + 1], source, corr)
                    ? upper_bound(keys, n, source, corr)
                    : lo + 1;
    p->join_hint = hi;
    size_t a = lo, b = hi;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (keys[mid].start <= start)
            a = mid + 1;
        else
            b = mid;
    }
    return a > lo ? &keys[a - 1] : &keys[lo];
}

/* The vendor correlation -> range reference mapping; the last recorded
 * mapping wins when a vendor reused its correlation id. */
static uint64_t find_extcorr(const bld_proc *p, uint32_t source, uint64_t corr)
{
    size_t lo = lower_bound(p->extcorr, p->n_extcorr, source, corr);
    size_t hi = upper_bound(p->extcorr, p->n_extcorr, source, corr);
    /* Sorted by record order within a key: the last one. */
    return hi > lo && p->extcorr[hi - 1].source == source && p->extcorr[hi - 1].corr == corr
               ? p->extcorr[hi - 1].start
               : 0;
}

int bld_ext_known(const bld_proc *p, uint64_t ref)
{
    uint64_t v, seq = ref & 0xffffffffu;
    if (!ref)
        return 1;
    if (!act_u64map_get(&p->thread_by_serial, (ref >> 32) + 1, &v))
        return 0;
    const bld_thread *t = &p->threads[v - 1];
    return seq > t->seq0 && seq - t->seq0 <= t->n_seq; /* bld_resolve_ext's first case */
}

uint64_t bld_resolve_ext(bld *b, const bld_proc *p, uint64_t ref)
{
    uint64_t v;
    if (!ref)
        return 0;
    uint64_t seq = ref & 0xffffffffu;
    const bld_thread *t = NULL;
    if (act_u64map_get(&p->thread_by_serial, (ref >> 32) + 1, &v)) {
        t = &p->threads[v - 1];
        if (seq > t->seq0 && seq - t->seq0 <= t->n_seq) {
            size_t idx = t->by_seq[seq - t->seq0 - 1];
            /* Freed by streaming: its id was its push number (stream_free.c). */
            return idx < p->ranges_base ? p->ext_base + idx + 1 : BLD_RANGE(p, idx)->ext_id;
        }
    }
    /* Unresolved: before a ring's kept window (ring.c), or an error. */
    return bld_ring_ext(b, p, t, seq);
}

void bld_join_op(bld *b, bld_proc *p, bld_op *op)
{
    bld_api *launch = NULL;
    if (op->corr) {
        const bld_key *k = find_launch(p, op->source, op->corr, op->start);
        if (k)
            launch = bld_api_at(p, k->idx);
        else
            bld_ring_unlinked(b, p); /* counted: overwritten by a ring, or an error */
    }
    bld_join_launch(b, p, op, launch);
}

void bld_join_launch(bld *b, bld_proc *p, bld_op *op, bld_api *launch)
{
    uint64_t ref = op->x.ext_ref; /* replaced by ext_id below */
    op->d.launch_start = 0;       /* the device handle was mapped before */
    bld_gua_join(op, launch);
    if (launch) {
        op->linked = 1;
        op->d.launch_start = launch->start;
        op->launch_end = launch->end;
        op->launch_name = launch->name;
        op->launch_tid = launch->tid;
        op->kept = launch->kept & BLD_API_KEPT;
        if (op->start < launch->start) {
            uint64_t s = launch->start - op->start;
            b->tl->counts.skew++;
            if (s > b->tl->counts.skew_max_ns)
                b->tl->counts.skew_max_ns = s;
        }
    } else {
        op->kept = (uint8_t)bld_in_window(b, p, op->start, op->end);
    }
    /* The launch found by time is the right one even where the vendor
     * reused its correlation id; the extcorr table keeps only the last
     * mapping of an id, so it is the fallback (launch without a range, or
     * no launch slice at all: the degraded vendor path). */
    if (!ref && launch)
        ref = launch->ext;
    if (!ref && op->corr)
        ref = find_extcorr(p, op->source, op->corr);
    op->range_ref = ref;
    op->x.ext_id = bld_resolve_ext(b, p, ref);
}
