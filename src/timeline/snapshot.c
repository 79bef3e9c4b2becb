/*
 * snapshot.c -- the device operations of an in-process session (see
 * snapshot.h), for the torch.profiler plugin: the timeline builder's
 * joined device ops of one spool, kept in start order.
 *
 * Nothing here reads records or joins: the spool is opened by the reader
 * (reader.c), the builder lays the timeline out as it does for the Chrome
 * trace, and each device op it hands out (act_timeline.on_devop) is copied.
 * The trace events themselves are dropped batch by batch as the builder
 * makes them, so memory grows with the device ops only.
 */
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "core/rec_read.h"
#include "core/vec.h"
#include "timeline/snapshot.h"
#include "timeline/spool.h"
#include "timeline/timeline.h"

struct act_snapshot {
    act_spool spool;
    act_timeline tl; /* owns the strings of ops (its arena) */
    act_snap_op *ops;
    size_t nops, capops, pos;
    uint64_t skipped;
};

/* The events are the Chrome writer's business: drop them. */
static int drop_events(act_timeline *tl, void *ctx)
{
    (void)ctx;
    tl->n_ev = tl->n_args = 0;
    return 0;
}

/* A NUL-terminated copy in the timeline's arena. */
static const char *cstr(act_timeline *tl, act_str s)
{
    act_str c = act_tl_strdup(tl, s.n ? s.p : "", s.n);
    return c.p ? c.p : "";
}

static int keep_devop(const act_tl_devop *d, void *ctx)
{
    act_snapshot *s = ctx;
    if (act_vec_reserve(s->ops, s->capops, s->nops + 1, 256))
        return ACT_E_NOMEM;
    act_timeline *tl = &s->tl;
    s->ops[s->nops++] = (act_snap_op){
        .name = cstr(tl, d->name),
        .detail = cstr(tl, d->detail),
        .vendor = cstr(tl, d->device->vendor),
        .device_name = cstr(tl, d->device->model),
        .device_process = cstr(tl, d->device->name),
        .queue_label = cstr(tl, d->queue_label),
        .lane_name = cstr(tl, d->lane_name),
        .launch_name = cstr(tl, d->launch_name),
        .kind = d->kind,
        .source = d->source,
        .flags = d->flags,
        .status = d->status,
        .device_index = d->device->index,
        .device_pid = d->device->pid,
        .lane_tid = d->lane_tid,
        .launch_pid = d->pid,
        .launch_tid = d->launch_tid,
        .has_stream = (uint32_t)d->has_stream,
        .queue = d->queue,
        .stream = d->stream,
        .start_ns = d->start,
        .end_ns = d->end,
        .launch_start_ns = d->launch_start,
        .launch_end_ns = d->launch_end,
        .corr = d->corr,
        .ext = d->range_ref,
        .external_id = d->ext_id,
        .flow_id = d->flow_id,
        .bytes = d->bytes,
        .gsize = {d->gsize[0], d->gsize[1], d->gsize[2]},
        .lsize = {d->lsize[0], d->lsize[1], d->lsize[2]},
        .user_ext = d->user_ref,
        .user_external_id = d->user_ext_id,
        .user_name = cstr(tl, d->user_name),
    };
    return tl->err;
}

/* Start order; ties by device, lane, longer first. */
static int op_cmp(const void *a, const void *b)
{
    const act_snap_op *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    if (x->device_pid != y->device_pid)
        return x->device_pid < y->device_pid ? -1 : 1;
    if (x->lane_tid != y->lane_tid)
        return x->lane_tid < y->lane_tid ? -1 : 1;
    return x->end_ns > y->end_ns ? -1 : x->end_ns < y->end_ns;
}

static int snapshot_build(act_snapshot *s)
{
    act_spool *sp = &s->spool;
    act_tl_build *b = NULL;
    int rc = act_timeline_build_start(&s->tl, &sp, 1, NULL, &b);
    if (!rc) {
        s->tl.sink = drop_events;
        s->tl.on_devop = keep_devop;
        s->tl.devop_ctx = s;
        rc = act_timeline_build_events(b);
    }
    act_timeline_build_finish(b);
    if (!rc && s->nops)
        qsort(s->ops, s->nops, sizeof(*s->ops), op_cmp);
    return rc;
}

/* fd < 0: open `path`. */
static int snapshot_read(int fd, const char *path, act_snapshot **out)
{
    act_snapshot *s = calloc(1, sizeof(*s));
    if (!s)
        return ACT_E_NOMEM;
    char err[256];
    int rc = fd >= 0 ? act_spool_open_fd(&s->spool, fd, path, err, sizeof(err))
                     : act_spool_open(&s->spool, path, err, sizeof(err));
    if (!rc) {
        s->skipped = s->spool.n_problems;
        rc = snapshot_build(s);
    }
    if (rc) {
        act_snapshot_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

ACT_EXPORT int act_snapshot_open_fd(int fd, act_snapshot **out)
{
    if (!out)
        return ACT_E_INVAL;
    *out = NULL;
    if (fd < 0)
        return ACT_E_INVAL;
    return snapshot_read(fd, "(session spool)", out);
}

ACT_EXPORT int act_snapshot_open(const char *spool_path, act_snapshot **out)
{
    if (!out)
        return ACT_E_INVAL;
    *out = NULL;
    if (!spool_path) {
        spool_path = act_recorder_path();
        if (!spool_path || !*spool_path)
            return ACT_E_DISABLED;
    }
    return snapshot_read(-1, spool_path, out);
}

ACT_EXPORT int act_snapshot_next(act_snapshot *s, act_snap_op *op)
{
    if (!s || !op)
        return ACT_E_INVAL;
    if (s->pos >= s->nops)
        return 0;
    *op = s->ops[s->pos++];
    return 1;
}

ACT_EXPORT uint64_t act_snapshot_count(const act_snapshot *s)
{
    return s ? s->nops : 0;
}

ACT_EXPORT uint64_t act_snapshot_skipped(const act_snapshot *s)
{
    return s ? s->skipped : 0;
}

ACT_EXPORT void act_snapshot_close(act_snapshot *s)
{
    if (!s)
        return;
    act_timeline_free(&s->tl);
    act_spool_close(&s->spool);
    free(s->ops);
    free(s);
}

ACT_EXPORT uint64_t act_snapshot_current_ext(void)
{
    return act_range_current_ext();
}

ACT_EXPORT uint64_t act_snapshot_clock_now(void)
{
    return act_clock_now();
}

ACT_EXPORT uint64_t act_snapshot_pending(void)
{
    act_spool_header *h = act_recorder_header();
    return h ? __atomic_load_n(&h->callbacks_pending, __ATOMIC_ACQUIRE) : 0;
}

ACT_EXPORT const char *act_snapshot_path(void)
{
    return act_recorder_path();
}
