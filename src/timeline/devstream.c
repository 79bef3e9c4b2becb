/*
 * devstream.c -- device ops written while the live process runs
 * (docs/architecture.md "Streaming", invariant 8): the first lane group of
 * the batch layout -- device 0, the live process (the run's lowest pid),
 * its lowest queue handle -- is laid out and written as its ops settle, so
 * that the exit writes only the rest. That group is the only one whose
 * lanes (tids from 1), queue number (1) and flow ids (from 1) do not
 * depend on the ops of any other group; its ops go in the batch's order
 * (start, longer first, record order) below a watermark, each once its
 * launch and range are known, through the same join (joins.c) and the
 * same writer of ops (devices.c) as the batch.
 *
 * What it assumes is checked at the end (bld_devstream_check): the group
 * is still the first one, nothing sorts before what was written, its
 * queue's label and device pid are the same. When not, the early events
 * are void and the export builds anew (as invariant 7).
 *
 * Only OpenCL ops of an in-order queue are streamed: their correlation ids
 * are the recorder's own (act_corr_next, never reused in a process), so a
 * launch found once is the batch's; vendors reuse theirs.
 */
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "builder_int.h"
#include "core/source_traits.h"
#include "core/vec.h"

/* The small device pids (devices.c) start at 0 for a lowest pid >= 64. */
#define DS_MIN_PID 64
/* launch_by_corr: the op of the launch was read. */
#define DS_OP_READ (1ull << 63)

/* A call of `tid` ending at `end` was read: a launch (`launch`), or any
 * other, which moves on a launching thread only. */
static void ds_launcher(bld *b, uint32_t tid, uint64_t end, int launch)
{
    bld_devstream *ds = &b->ds;
    size_t i = 0;
    while (i < ds->n_launchers && ds->launchers[i].tid != tid)
        i++;
    if (i == ds->n_launchers) {
        if (!launch)
            return;
        if (act_vec_reserve(ds->launchers, ds->cap_launchers, i + 1, 4)) {
            b->tl->err = ACT_E_NOMEM;
            return;
        }
        ds->launchers[ds->n_launchers++] = (bld_launcher){tid, end};
    }
    if (end > ds->launchers[i].end)
        ds->launchers[i].end = end;
}

/* A launching thread whose last call read ended this long before the
 * latest op read started is taken as idle (it waits, or it is gone). */
#define DS_IDLE_NS 100000000ull

/* No op of a launch not read yet starts before this (UINT64_MAX: none
 * read): a thread's calls are read in its order, one after another, and
 * an op starts after its launch (not after an earlier launch's op: PoCL's
 * in-order queues report STARTs out of launch order). An idle thread
 * bounds nothing: its next launch starts after the ops read so far did,
 * unless it is a call in progress since (over DS_IDLE_NS: a blocking
 * transfer, say). That, and a thread that launched nothing read yet, is
 * for the check at the end. */
static uint64_t unread_start(const bld_devstream *ds)
{
    uint64_t w = UINT64_MAX;
    for (size_t i = 0; i < ds->n_launchers; i++) {
        uint64_t end = ds->launchers[i].end;
        if (end < w && end + DS_IDLE_NS > ds->latest)
            w = end;
    }
    return w;
}

void bld_devstream_launch(bld *b, bld_proc *p, size_t api)
{
    bld_api *a = bld_api_at(p, api);
    ds_launcher(b, a->tid, a->end, 1);
    uint64_t v, corr = a->corr;
    if (!act_u64map_get(&p->launch_by_corr, corr, &v))
        v = 0;
    else if (v != DS_OP_READ)
        b->ds.broken = 1; /* seen twice: the batch join would choose by time */
    if (act_u64map_put(&p->launch_by_corr, corr, v | (api + 1)))
        b->tl->err = ACT_E_NOMEM;
    if (v & DS_OP_READ)
        a->kept |= BLD_API_OP;
    else if (act_vec_reserve(p->pend, p->cap_pend, p->n_pend + 1, 256))
        b->tl->err = ACT_E_NOMEM;
    else
        p->pend[p->n_pend++] = (uint32_t)api;
}

void bld_devstream_call(bld *b, uint32_t tid, uint64_t end)
{
    ds_launcher(b, tid, end, 0);
}

void bld_devstream_op_read(bld *b, bld_proc *p, uint64_t corr)
{
    uint64_t v;
    if (!act_u64map_get(&p->launch_by_corr, corr, &v))
        v = 0;
    bld_api *a =
        (v & ~DS_OP_READ) && !(v & DS_OP_READ) ? bld_api_at(p, (v & ~DS_OP_READ) - 1) : NULL;
    if (a)
        a->kept |= BLD_API_OP; /* no longer pending */
    if (act_u64map_put(&p->launch_by_corr, corr, v | DS_OP_READ))
        b->tl->err = ACT_E_NOMEM;
}

/* A candidate op: its batch sort key within the group. */
typedef struct ds_key {
    uint64_t start, end;
    size_t idx;
} ds_key;

static int ds_cmp(const void *a, const void *c)
{
    const ds_key *x = a, *y = c;
    int span = bld_span_cmp(x->start, x->end, y->start, y->end);
    if (span)
        return span;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The op sorts before (or with) the last op written: it should have been
 * written earlier. Equal keys sort by record order: later, fine. */
static int before_written(const bld_devstream *ds, const bld_op *op)
{
    return bld_span_cmp(op->start, op->end, ds->last_start, ds->last_end) < 0;
}

/* The device index of the op when its handle was described (0 based), or
 * UINT32_MAX. */
static uint32_t op_dev(const bld_proc *p, const bld_op *op)
{
    uint64_t v;
    return act_u64map_get(&p->dev_by_handle, op->d.device ? op->d.device : 1, &v)
               ? (uint32_t)(v - 1)
               : UINT32_MAX;
}

/* A new op: which group it is in is judged now. One that sorts before the
 * written part of the group breaks it. */
static void ds_look(bld *b, bld_proc *p, const bld_op *op)
{
    bld_devstream *ds = &b->ds;
    uint32_t dev = op_dev(p, op);
    int in_group = dev == 0 && op->queue == ds->queue;
    if (ds->started && dev == 0 && (op->queue < ds->queue || (in_group && before_written(ds, op))))
        ds->broken = 1;
    if (in_group && op->start > ds->latest)
        ds->latest = op->start;
    uint64_t v;
    /* An op the feeds will not write: the exit joins it (joins.c). */
    if (ds->started && !in_group && op->corr && act_u64map_get(&p->launch_by_corr, op->corr, &v) &&
        (v & ~DS_OP_READ))
        act_u64map_del(&p->launch_by_corr, op->corr);
}

/* The group: the lowest queue handle on device 0 among the ops read so
 * far, an OpenCL in-order queue. 0 when none can be chosen yet. */
static int ds_choose(bld *b, bld_proc *p)
{
    bld_devstream *ds = &b->ds;
    uint64_t q = UINT64_MAX;
    for (size_t i = p->ops_begin; i < b->n_ops; i++)
        if (op_dev(p, &b->ops[i]) == 0 && b->ops[i].queue < q)
            q = b->ops[i].queue;
    if (q == UINT64_MAX)
        return 0;
    uint64_t v;
    uint32_t ref = act_u64map_get(&p->queue_label, q, &v) ? (uint32_t)v : 0;
    for (size_t i = p->ops_begin; i < b->n_ops; i++) {
        const bld_op *op = &b->ops[i];
        uint32_t traits = act_source_traits_of(op->source)->flags;
        if (op_dev(p, op) == 0 && op->queue == q &&
            (!(traits & ACT_SRC_F_LAUNCH_STREAMED) ||
             ((traits & ACT_SRC_F_QUEUE_OOO_BIT) && ref && (b->queues[ref - 1].properties & 1u)))) {
            ds->on = 0; /* not OpenCL, or out of order: the end lays it out */
            return 0;
        }
    }
    ds->queue = q;
    ds->queue_ref = ref;
    for (size_t i = p->ops_begin; i < b->n_ops; i++)
        if (op_dev(p, &b->ops[i]) == 0 && b->ops[i].queue == q && b->ops[i].start > ds->latest)
            ds->latest = b->ops[i].start;
    return 1;
}

/* Join the op now if what the batch join finds is known already: its
 * launch read, its range pushed. 0 when it has to wait. */
static int ds_join(bld *b, bld_proc *p, bld_op *op)
{
    uint64_t v;
    bld_api *launch = NULL;
    if (op->corr) {
        if (!act_u64map_get(&p->launch_by_corr, op->corr, &v) || !(v & ~DS_OP_READ))
            return 0;
        launch = bld_api_at(p, (v & ~DS_OP_READ) - 1);
        if (!launch)
            return 0;
    }
    if (!bld_ext_known(p, op->x.ext_ref ? op->x.ext_ref : launch ? launch->ext : 0))
        return 0;
    op->dev = 0;
    op->queue_ref = b->ds.queue_ref;
    bld_join_launch(b, p, op, launch);
    op->kept = 1; /* no capture window (online_allowed) */
    return 1;
}

/* Write the op on its sub-lane of the group. */
static int ds_write(bld *b, bld_op *op)
{
    bld_devstream *ds = &b->ds;
    uint32_t k = act_lanes_next(&ds->lanes, op->start, op->end);
    if (k == UINT32_MAX)
        return b->tl->err = ACT_E_NOMEM;
    op->lane_tid = 1 + k;
    op->queue_no = 1;
    if (!ds->started) {
        ds->proto = *op;
        ds->started = 1;
    }
    ds->last_start = op->start;
    ds->last_end = op->end;
    ds->written++;
    bld_devices_emit_op(b, op, k);
    return b->tl->err;
}

/* The group's ops read before the watermark, in the batch's order; the
 * written ones are taken out of bld.ops (record order kept). */
static int ds_candidate(const bld *b, const bld_proc *p, const bld_op *op, uint64_t wm)
{
    return op->queue == b->ds.queue && op->start < wm && op_dev(p, op) == 0;
}

static void ds_write_below(bld *b, bld_proc *p, uint64_t wm)
{
    size_t n = 0;
    for (size_t i = p->ops_begin; i < b->n_ops; i++)
        n += ds_candidate(b, p, &b->ops[i], wm);
    /* The scratch block: nothing else uses it while the process runs. */
    ds_key *k = n ? bld_scratch(b, n * sizeof(*k)) : NULL;
    if (!k)
        return;
    n = 0;
    for (size_t i = p->ops_begin; i < b->n_ops; i++)
        if (ds_candidate(b, p, &b->ops[i], wm))
            k[n++] = (ds_key){b->ops[i].start, b->ops[i].end, i};
    qsort(k, n, sizeof(*k), ds_cmp);
    size_t w = 0;
    for (; w < n && !b->tl->err; w++) {
        bld_op *op = &b->ops[k[w].idx];
        if (!ds_join(b, p, op) || ds_write(b, op))
            break;
        uint64_t v;
        bld_api *launch =
            op->corr && act_u64map_get(&p->launch_by_corr, op->corr, &v) && (v & ~DS_OP_READ)
                ? bld_api_at(p, (v & ~DS_OP_READ) - 1)
                : NULL;
        if (launch) /* nothing joins it again: freed once written (stream_free.c) */
            launch->kept |= BLD_API_DONE;
        if (op->corr) /* nothing looks its launch up again */
            act_u64map_del(&p->launch_by_corr, op->corr);
        act_spool_touch(p->sp, op->r, op->r->h.size8 * 8u); /* its record, read again */
        op->r = NULL;                                       /* written: taken out below */
    }
    if (!w)
        return;
    size_t out = p->ops_begin;
    for (size_t i = p->ops_begin; i < b->n_ops; i++)
        if (b->ops[i].r)
            b->ops[out++] = b->ops[i];
    b->n_ops = out;
}

/* The earliest launch whose device op was not read yet: no op of an
 * in-order queue launched later can start before it (UINT64_MAX: none).
 * The launches that are no longer pending leave the list. */
static uint64_t pending_start(bld_proc *p)
{
    uint64_t w = UINT64_MAX;
    size_t out = 0;
    for (size_t i = 0; i < p->n_pend; i++) {
        const bld_api *a = bld_api_at(p, p->pend[i]);
        if (!a || (a->kept & BLD_API_OP))
            continue;
        if (a->start < w)
            w = a->start;
        p->pend[out++] = p->pend[i];
    }
    p->n_pend = out;
    return w;
}

void bld_devstream_feed(bld *b, bld_proc *p)
{
    bld_devstream *ds = &b->ds;
    if (!ds->on || ds->broken || b->tl->err || b->tl->on_devop || p->pid < DS_MIN_PID ||
        p->n_extcorr)
        return;
    for (size_t i = ds->scanned; i < b->n_ops; i++)
        ds_look(b, p, &b->ops[i]);
    if (!ds->started && !ds_choose(b, p)) {
        ds->scanned = b->n_ops;
        return;
    }
    /* Below every op not read yet (one read later that sorts before what
     * was written voids it all): that of a launch read (it starts after
     * the launch) and that of a launch not read (after the end of its
     * thread's latest call read, unless the thread is idle). */
    uint64_t launched = pending_start(p), unread = unread_start(ds);
    uint64_t wm = unread < launched ? unread : launched;
    if (!ds->broken)
        ds_write_below(b, p, wm);
    ds->scanned = b->n_ops;
}

int bld_devstream_check(const bld *b, const bld_proc *p)
{
    const bld_devstream *ds = &b->ds;
    if (!ds->started)
        return 0;
    uint64_t v;
    uint32_t ref = act_u64map_get(&p->queue_label, ds->queue, &v) ? (uint32_t)v : 0;
    if (ds->broken || p->n_extcorr || ref != ds->queue_ref || !b->tl->n_devices ||
        b->tl->devices[0].pid != 0)
        return ACT_E_STATE;
    for (size_t i = 0; i < b->n_ops; i++) {
        const bld_op *op = &b->ops[i];
        if (!op->kept || op->dev != 0)
            continue;
        if (op->pid < p->pid || (op->pid == p->pid && op->queue < ds->queue) ||
            (op->pid == p->pid && op->queue == ds->queue && before_written(ds, op)))
            return ACT_E_STATE;
    }
    return 0;
}

void bld_devstream_free(bld *b)
{
    act_lanes_free(&b->ds.lanes);
    free(b->ds.launchers);
}
