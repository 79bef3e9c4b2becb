/*
 * builder.c -- the timeline builder's pass over one process's records
 * (spool.h): host lanes (ranges, API calls, marks, counters), the join
 * tables and the list of device ops; joins.c links device ops to their
 * launches and ranges, devices.c lays device work out on lanes with
 * flows, window.c knows the capture window, host_events.c makes the host
 * events, nesting.c checks them; the whole timeline (batch or live) is
 * timeline_build.c's. Calls go from here to them, never back. Everything
 * questionable is counted in tl->counts, never asserted away: unbalanced
 * pops, ranges left open, skew, negative durations, improper nesting,
 * records outside the capture window.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "builder_int.h"
#include "core/source_traits.h"
#include "core/vec.h"

/* ---- per-thread state ------------------------------------------------- */

static bld_thread *thread_of(bld *b, bld_proc *p, uint32_t serial)
{
    uint64_t v;
    /* Records come in segments of one thread: the last one found first. */
    if (p->last_thread && p->threads[p->last_thread - 1].serial == serial)
        return &p->threads[p->last_thread - 1];
    if (act_u64map_get(&p->thread_by_serial, (uint64_t)serial + 1, &v)) {
        p->last_thread = (uint32_t)v;
        return &p->threads[v - 1];
    }
    bld_thread *nt = realloc(p->threads, (p->n_threads + 1) * sizeof(*nt));
    if (!nt) {
        b->tl->err = ACT_E_NOMEM;
        return NULL;
    }
    p->threads = nt;
    bld_thread *t = &p->threads[p->n_threads];
    memset(t, 0, sizeof(*t));
    t->serial = serial;
    const act_sp_thread *st = act_spool_thread(p->sp, serial);
    t->tid = st && st->tid ? st->tid : ACT_FALLBACK_TID_BASE + serial;
    p->n_threads++;
    if (act_u64map_put(&p->thread_by_serial, (uint64_t)serial + 1, p->n_threads))
        b->tl->err = ACT_E_NOMEM;
    return t;
}

/* ---- records ---------------------------------------------------------- */

static void on_push(bld *b, bld_proc *p, const act_sp_rec *rec)
{
    bld_thread *t = thread_of(b, p, rec->serial);
    if (!t)
        return;
    if (act_vec_reserve(p->ranges, p->cap_ranges, p->n_ranges - p->ranges_base + 1, 256))
        b->tl->err = ACT_E_NOMEM;
    if (act_vec_reserve(t->stack, t->cap, t->depth + 1, 16)) {
        b->tl->err = ACT_E_NOMEM;
        return;
    }
    if (b->tl->err)
        return;
    t->pushes++;
    bld_range *r = BLD_RANGE(p, p->n_ranges);
    memset(r, 0, sizeof(*r));
    r->start = act_spool_ns(p->sp, ((const act_rec_ts *)rec->r)->ts);
    r->name = rec->s1;
    r->tid = t->tid;
    r->ext_id = ++b->next_ext;
    r->open = 1;
    t->owner_kind = BLD_OWNER_RANGE;
    t->owner_idx = (uint32_t)p->n_ranges;
    t->stack[t->depth++] = (uint32_t)p->n_ranges;
    p->n_ranges++;
    if (act_vec_reserve(t->by_seq, t->cap_seq, t->n_seq + 1, 256))
        b->tl->err = ACT_E_NOMEM;
    if (!b->tl->err) {
        t->by_seq[t->n_seq++] = (uint32_t)(p->n_ranges - 1);
        r->seq = t->seq0 + (uint32_t)t->n_seq; /* bld_resolve_ext's numbering */
    }
}

static void on_pop(bld *b, bld_proc *p, const act_sp_rec *rec)
{
    bld_thread *t = thread_of(b, p, rec->serial);
    if (!t)
        return;
    if (!t->depth) {
        b->tl->counts.unbalanced_pops++;
        return;
    }
    bld_range *r = BLD_RANGE(p, t->stack[--t->depth]);
    r->end = act_spool_ns(p->sp, ((const act_rec_ts *)rec->r)->ts);
    r->open = 0;
    if (r->ua)
        bld_gua_closed(b, r);
}

static void on_range_start(bld *b, bld_proc *p, pass_state *ps, const act_sp_rec *rec)
{
    const act_rec_range_id *r = (const act_rec_range_id *)rec->r;
    bld_thread *t = thread_of(b, p, rec->serial);
    if (act_vec_reserve(ps->async, ps->cap_async, ps->n_async + 1, 256))
        b->tl->err = ACT_E_NOMEM;
    if (!t || b->tl->err)
        return;
    t->owner_kind = BLD_OWNER_ASYNC;
    t->owner_idx = (uint32_t)ps->n_async;
    ps->async[ps->n_async++] =
        (bld_async){r->id, act_spool_ns(p->sp, r->ts), 0, rec->s1, t->tid, {0, 0}};
    if (r->id && act_u64map_put(&ps->async_by_id, r->id, ps->n_async))
        b->tl->err = ACT_E_NOMEM;
}

static void on_range_end(bld *b, bld_proc *p, pass_state *ps, const act_sp_rec *rec)
{
    const act_rec_range_id *r = (const act_rec_range_id *)rec->r;
    uint64_t v;
    if (!act_u64map_get(&ps->async_by_id, r->id, &v) || ps->async[v - 1].end) {
        b->tl->counts.unmatched_range_ends++;
        return;
    }
    ps->async[v - 1].end = act_spool_ns(p->sp, r->ts);
    if (!ps->async[v - 1].end)
        ps->async[v - 1].end = ps->async[v - 1].start;
}

/* Marks wait until the end of the pass: ARG records may follow them. */
static void on_mark(bld *b, bld_proc *p, const act_sp_rec *rec)
{
    bld_thread *t = thread_of(b, p, rec->serial);
    if (act_vec_reserve(p->marks, p->cap_marks, p->n_marks - p->marks_base + 1, 256))
        b->tl->err = ACT_E_NOMEM;
    if (!t || b->tl->err)
        return;
    t->owner_kind = BLD_OWNER_MARK;
    t->owner_idx = (uint32_t)p->n_marks;
    *BLD_MARK(p, p->n_marks++) =
        (bld_mark){act_spool_ns(p->sp, ((const act_rec_ts *)rec->r)->ts), rec->s1, t->tid, {0, 0}};
}

/* A BACK arg (record.h): its value into every held arg of the same key
 * on the thread's API calls since its first held one; they go on. */
static void on_arg_back(bld_proc *p, bld_thread *t, const act_sp_rec *rec)
{
    for (size_t i = t->pyhold ? t->pyhold - 1 : p->n_api; i < p->n_api; i++) {
        bld_api *a = bld_api_at(p, i);
        if (!a || a->tid != t->tid)
            continue;
        for (uint32_t ref = a->args.head; ref; ref = p->argrefs[ref - 1].next) {
            bld_argref *g = &p->argrefs[ref - 1];
            const act_rec_arg *r = (const act_rec_arg *)g->rec.r;
            if ((r->pad & ACT_RECARG_F_HOLD) && g->rec.s1.n == rec->s1.n &&
                !memcmp(g->rec.s1.p, rec->s1.p, rec->s1.n))
                g->rec = *rec;
        }
    }
    t->pyhold = 0;
}

/* An ARG record belongs to the latest RANGE_PUSH, RANGE_START or MARK of
 * its thread; one with no such record before it is counted as an error. */
static void on_arg(bld *b, bld_proc *p, pass_state *ps, const act_sp_rec *rec)
{
    bld_thread *t = thread_of(b, p, rec->serial);
    if (!t)
        return;
    uint32_t flags = ((const act_rec_arg *)rec->r)->pad;
    if (flags & ACT_RECARG_F_BACK) {
        on_arg_back(p, t, rec);
        return;
    }
    bld_args *args = NULL;
    bld_api *api = NULL;
    if (t->owner_kind == BLD_OWNER_API) {
        api = bld_api_at(p, t->owner_idx);
        args = api ? &api->args : NULL;
    } else if (t->owner_kind == BLD_OWNER_RANGE)
        args = &BLD_RANGE(p, t->owner_idx)->args;
    else if (t->owner_kind == BLD_OWNER_ASYNC)
        args = &ps->async[t->owner_idx].args;
    else if (t->owner_kind == BLD_OWNER_MARK)
        args = &BLD_MARK(p, t->owner_idx)->args;
    if (!args) {
        b->tl->counts.orphan_args++;
        return;
    }
    uint32_t ref = p->arg_free; /* one freed by streaming (stream_free.c) first */
    if (ref) {
        p->arg_free = p->argrefs[ref - 1].next;
    } else {
        if (act_vec_reserve(p->argrefs, p->cap_argrefs, p->n_argrefs + 1, 256))
            b->tl->err = ACT_E_NOMEM;
        if (b->tl->err)
            return;
        ref = (uint32_t)++p->n_argrefs;
    }
    p->argrefs[ref - 1] = (bld_argref){*rec, 0};
    if (args->tail)
        p->argrefs[args->tail - 1].next = ref;
    else
        args->head = ref;
    args->tail = ref;
    if (api)
        api->kept |= BLD_API_ARGS;
    if (api && (flags & ACT_RECARG_F_HOLD) && !t->pyhold)
        t->pyhold = t->owner_idx + 1;
}

static void on_thread_name(bld *b, bld_proc *p, const act_sp_rec *rec)
{
    const act_rec_thread *t = (const act_rec_thread *)rec->r;
    if (t->h.aux != 0 || !t->tid)
        return;
    if (act_vec_reserve(p->tid_names, p->cap_tid_names, p->n_tid_names + 1, 256))
        b->tl->err = ACT_E_NOMEM;
    if (b->tl->err)
        return;
    p->tid_names[p->n_tid_names++] = rec->s2;
    if (act_u64map_put(&p->tid_name, t->tid, p->n_tid_names))
        b->tl->err = ACT_E_NOMEM;
}

/* Counters wait for the event phase like every other event (the header of
 * a streamed trace is written between the phases). */
static void on_counter(bld *b, bld_proc *p, const act_sp_rec *rec)
{
    if (act_vec_reserve(p->counters, p->cap_counters, p->n_counters + 1, 256))
        b->tl->err = ACT_E_NOMEM;
    if (!b->tl->err)
        p->counters[p->n_counters++] = *rec;
}

void bld_emit_counters(bld *b, bld_proc *p)
{
    for (size_t i = 0; i < p->n_counters && !b->tl->err; i++) {
        const act_sp_rec *rec = &p->counters[i];
        const act_rec_counter *c = (const act_rec_counter *)rec->r;
        uint64_t ts = act_spool_ns(p->sp, c->ts);
        if (!bld_in_window(b, p, ts, ts)) {
            b->tl->counts.outside_window[ACT_REC_COUNTER]++;
            continue;
        }
        act_tl_event *e = act_tl_event_add(b->tl, 'C', ACT_CAT_NONE, rec->s1, p->pid, 0, ts, 0);
        if (e)
            e->flags |= ACT_EVF_NO_TID;
        act_tl_arg *a = act_tl_arg_add(b->tl, "");
        if (a) {
            a->key = rec->s1;
            a->type = ACT_ARG_F64;
            a->v.d = c->value;
        }
    }
}

static void on_api(bld *b, bld_proc *p, const act_sp_rec *rec)
{
    const act_rec_api *r = (const act_rec_api *)rec->r;
    bld_thread *t = thread_of(b, p, rec->serial);
    bld_api *a = t && !b->tl->err ? bld_api_push(b, p) : NULL;
    if (!a)
        return;
    a->start = act_spool_ns(p->sp, r->start);
    a->end = act_spool_ns(p->sp, r->end);
    a->corr = r->corr;
    a->ext = r->ext;
    a->name = rec->s1;
    a->source = (uint16_t)(r->source <= UINT16_MAX ? r->source : UINT16_MAX);
    a->tid = t->tid;
    a->result = r->result;
    a->ua =
        a->corr && !a->result ? bld_gua_of_launch(b, p, t) : 0; /* a failed call launches nothing */
    a->args = (bld_args){0, 0};
    a->kept = 0; /* BLD_API_KEPT: api_window, once the capture window is known */
    t->owner_kind = BLD_OWNER_API;
    t->owner_idx = (uint32_t)(p->n_api - 1);
    if (p->track_launches && a->corr &&
        (act_source_traits_of(a->source)->flags & ACT_SRC_F_LAUNCH_STREAMED))
        bld_devstream_launch(b, p, p->n_api - 1);
    else if (p->track_launches)
        bld_devstream_call(b, a->tid, a->end);
}

/* Which API calls are inside the capture window: after the pass, which
 * collects the CAPTURE records (a live pass cannot know them before). */
static void api_window(bld *b, bld_proc *p)
{
    for (size_t i = p->api_base; i < p->n_api; i++) { /* those freed were written early */
        bld_api *a = &p->api[i - p->api_base];
        if (bld_in_window(b, p, a->start, a->end > a->start ? a->end : a->start))
            a->kept |= BLD_API_KEPT;
        else
            b->tl->counts.outside_window[ACT_REC_API]++;
    }
}

/* ERROR records are listed after the spool's own problems (add_counts),
 * which a live pass knows only at the end. */
static void on_error(bld *b, bld_proc *p, const act_sp_rec *rec)
{
    if (act_vec_reserve(p->errs, p->cap_errs, p->n_errs + 1, 16))
        b->tl->err = ACT_E_NOMEM;
    if (!b->tl->err)
        p->errs[p->n_errs++] = rec->s1;
}

static void on_device_op(bld *b, bld_proc *p, const act_sp_rec *rec)
{
    const act_rec_device_op *r = (const act_rec_device_op *)rec->r;
    if ((r->flags & ACT_OPF_NO_TIMES) || !r->start || !r->end) {
        b->tl->counts.device_ops_without_times++;
        return;
    }
    if (act_vec_reserve(b->ops, b->cap_ops, b->n_ops + 1, 256))
        b->tl->err = ACT_E_NOMEM;
    if (b->tl->err)
        return;
    bld_op *op = &b->ops[b->n_ops++];
    memset(op, 0, sizeof(*op));
    op->r = r;
    op->name = rec->s1;
    op->detail = rec->s2;
    op->start = act_spool_ns(p->sp, r->start);
    op->end = act_spool_ns(p->sp, r->end);
    if (r->queued && r->submit) {
        op->queued = act_spool_ns(p->sp, r->queued);
        op->submit = act_spool_ns(p->sp, r->submit);
    }
    op->corr = r->corr;
    op->queue = r->queue;
    op->x.ext_ref = r->ext;
    op->d.device = r->device;
    op->source = r->source;
    op->pid = p->pid;
    if (p->track_launches && op->corr &&
        (act_source_traits_of(op->source)->flags & ACT_SRC_F_LAUNCH_STREAMED))
        bld_devstream_op_read(b, p, op->corr);
}

static void on_clock(bld *b, const act_sp_rec *rec)
{
    act_timeline *tl = b->tl;
    const act_rec_clock *c = (const act_rec_clock *)rec->r;
    char m[64];
    snprintf(m, sizeof(m), "%.*s", (int)(rec->s1.n < 60 ? rec->s1.n : 60), rec->s1.p);
    if (!strstr(tl->clock_method, m)) {
        size_t len = strlen(tl->clock_method);
        if (len + strlen(m) + 2 < sizeof(tl->clock_method))
            snprintf(tl->clock_method + len, sizeof(tl->clock_method) - len, "%s%s", len ? "," : "",
                     m);
    }
    if (c->error_ns > tl->clock_error_ns)
        tl->clock_error_ns = c->error_ns;
}

static void on_metadata(bld *b, const act_sp_rec *rec)
{
    /* is_json carries flags (ACT_META_INTERNAL, ACT_META_AUTO): kept whole */
    act_tl_meta_add(b->tl, rec->s1, rec->s2, (int)((const act_rec_metadata *)rec->r)->is_json);
}

static void on_extcorr(bld *b, bld_proc *p, const act_sp_rec *rec, size_t order)
{
    const act_rec_extcorr *x = (const act_rec_extcorr *)rec->r;
    if (act_vec_reserve(p->extcorr, p->cap_extcorr, p->n_extcorr + 1, 256))
        b->tl->err = ACT_E_NOMEM;
    if (b->tl->err)
        return;
    p->extcorr[p->n_extcorr++] = (bld_key){x->corr, x->ext, x->h.aux, (uint32_t)order};
}

/* A queue's label and properties, for the device ops on it. */
static void on_queue(bld *b, bld_proc *p, const act_sp_rec *rec)
{
    const act_rec_queue *q = (const act_rec_queue *)rec->r;
    if (!q->queue)
        return;
    if (act_vec_reserve(b->queues, b->cap_queues, b->n_queues + 1, 256))
        b->tl->err = ACT_E_NOMEM;
    if (b->tl->err)
        return;
    b->queues[b->n_queues++] = (bld_queue){rec->s1, q->properties};
    if (act_u64map_put(&p->queue_label, q->queue, b->n_queues))
        b->tl->err = ACT_E_NOMEM;
}

/* Room for every record of a kind the spool holds, allocated once: the
 * survey counted them, and growing by doubling would copy (and fault in)
 * the array again and again. */
void *bld_presize(bld *b, size_t n, size_t size, size_t *cap)
{
    void *a = act_vec_alloc((n ? n : 1) * size);
    if (!a)
        b->tl->err = ACT_E_NOMEM;
    *cap = a ? (n ? n : 1) : 0;
    return a;
}

/* One record of the pass; `i` is its position among the process's records. */
static void pass_record(bld *b, bld_proc *p, pass_state *ps, const act_sp_rec *rec, size_t i)
{
    switch (rec->r->kind) {
    case ACT_REC_RANGE_PUSH: on_push(b, p, rec); break;
    case ACT_REC_RANGE_POP: on_pop(b, p, rec); break;
    case ACT_REC_RANGE_START: on_range_start(b, p, ps, rec); break;
    case ACT_REC_RANGE_END: on_range_end(b, p, ps, rec); break;
    case ACT_REC_MARK: on_mark(b, p, rec); break;
    case ACT_REC_COUNTER: on_counter(b, p, rec); break;
    case ACT_REC_API: on_api(b, p, rec); break;
    case ACT_REC_DEVICE_OP: on_device_op(b, p, rec); break;
    case ACT_REC_DEVICE: {
        const act_rec_device *d = (const act_rec_device *)rec->r;
        uint32_t idx = bld_device_for(b, p, rec, d->device, d->source);
        if (!b->tl->err &&
            act_u64map_put(&p->dev_by_handle, d->device ? d->device : 1, (uint64_t)idx + 1))
            b->tl->err = ACT_E_NOMEM;
        if (p->n_clock_wait)
            bld_device_clock_described(b, p, d->device ? d->device : 1);
        break;
    }
    case ACT_REC_QUEUE: on_queue(b, p, rec); break;
    case ACT_REC_METADATA: on_metadata(b, rec); break;
    case ACT_REC_CLOCK:
        on_clock(b, rec);
        bld_vendor_clock(b, p, rec);
        bld_device_clock(b, p, rec);
        break;
    case ACT_REC_ERROR: on_error(b, p, rec); break;
    case ACT_REC_EXTCORR: on_extcorr(b, p, rec, i); break;
    case ACT_REC_ARG: on_arg(b, p, ps, rec); break;
    case ACT_REC_THREAD:
        on_thread_name(b, p, rec);
        if (rec->r->aux) /* a ring spool's range state (ring.c) */
            bld_ring_thread(b, p, thread_of(b, p, rec->serial), rec);
        break;
    default: break; /* CAPTURE (window.c) */
    }
}

static void pass_records(bld *b, bld_proc *p, pass_state *ps)
{
    act_spool *sp = p->sp;
    p->api = bld_presize(b, sp->records[ACT_REC_API], sizeof(*p->api), &p->cap_api);
    p->ranges = bld_presize(b, sp->records[ACT_REC_RANGE_PUSH], sizeof(*p->ranges), &p->cap_ranges);
    act_spool_iter *it = act_spool_iter_new(sp);
    if (!it)
        b->tl->err = ACT_E_NOMEM;
    act_sp_rec rec;
    int rc = 0;
    p->iter = it; /* ring.c resolves the names a ring's THREAD records carry */
    while (it && !b->tl->err && (rc = act_spool_iter_next(it, &rec)) > 0)
        pass_record(b, p, ps, &rec, p->n_read++);
    p->iter = NULL;
    if (rc < 0)
        b->tl->err = ACT_E_NOMEM;
    act_spool_iter_free(it);
}

/* The live pass: the records published (and safe to read in order) since
 * the last call; with `final` the rest. */
int bld_pass_live(bld *b, bld_proc *p, pass_state *ps, int final, volatile const int *stop,
                  size_t limit)
{
    act_sp_rec rec;
    int rc = p->live_scanned ? 0 : act_spool_live_scan(p->sp, final), more = 0;
    p->live_scanned = (uint8_t) final; /* once the process ended: one scan */
    for (size_t n = 0;
         !b->tl->err && rc >= 0 && (rc = act_spool_live_next(p->sp, &rec, final)) > 0;) {
        pass_record(b, p, ps, &rec, p->n_read++);
        if (stop && !(p->n_read & 1023) && __atomic_load_n(stop, __ATOMIC_RELAXED))
            break; /* the rest waits for the next feed */
        if (limit && ++n == limit) {
            more = 1; /* what was read is settled before the rest */
            break;
        }
    }
    if (rc < 0)
        b->tl->err = ACT_E_NOMEM;
    if (final && (!more || b->tl->err))
        act_spool_live_end(p->sp);
    return more && !b->tl->err;
}

/* ---- end of a process ------------------------------------------------- */

/* Ranges still open when the records end are closed at the process's last
 * timestamp and flagged: "truncated" when the process died, "unclosed"
 * when it ended normally without popping them. */
static void close_open(bld *b, bld_proc *p, pass_state *ps)
{
    uint64_t last = p->sp->last_ts;
    uint8_t why = p->sp->sealed ? 2 : 1;
    for (size_t i = 0; i < p->n_threads; i++) {
        bld_thread *t = &p->threads[i];
        while (t->depth) {
            bld_range *r = BLD_RANGE(p, t->stack[--t->depth]);
            r->end = last > r->start ? last : r->start;
            r->closed_at_end = why;
            b->tl->counts.unclosed_ranges++;
        }
    }
    for (size_t i = 0; i < ps->n_async; i++) {
        if (!ps->async[i].end) {
            ps->async[i].end = last > ps->async[i].start ? last : ps->async[i].start;
            b->tl->counts.unclosed_ranges++;
        }
    }
}

static void resolve_ops(bld *b, bld_proc *p)
{
    for (size_t i = p->ops_begin; i < b->n_ops && !b->tl->err; i++) {
        bld_op *op = &b->ops[i];
        uint64_t v;
        uint64_t handle = op->d.device ? op->d.device : 1;
        if (act_u64map_get(&p->dev_by_handle, handle, &v)) {
            op->dev = (uint32_t)(v - 1);
        } else {
            op->dev = bld_device_for(b, p, NULL, op->d.device, op->source);
            if (!b->tl->err && act_u64map_put(&p->dev_by_handle, handle, (uint64_t)op->dev + 1))
                b->tl->err = ACT_E_NOMEM;
        }
        if (act_u64map_get(&p->queue_label, op->queue, &v))
            op->queue_ref = (uint32_t)v;
        bld_join_op(b, p, op);
        if (!op->kept)
            b->tl->counts.outside_window[ACT_REC_DEVICE_OP]++;
    }
}

/* ---- process bookkeeping --------------------------------------------- */

static void add_counts(act_timeline *tl, const act_spool *sp)
{
    act_tl_counts *c = &tl->counts;
    for (int k = 0; k < ACT_REC_KIND_MAX; k++) {
        c->records[k] += sp->records[k];
        c->dropped[k] += sp->hdr.dropped[k];
        c->outside_window[k] += sp->hdr.outside_window[k];
    }
    c->callbacks_pending += sp->hdr.callbacks_pending;
    /* Lost: did not arrive by the drain's bound and still had not at the
     * end; one that arrived in between is no longer pending. */
    c->callbacks_lost += sp->hdr.callbacks_lost < sp->hdr.callbacks_pending
                             ? sp->hdr.callbacks_lost
                             : sp->hdr.callbacks_pending;
    c->unbalanced_pops += sp->hdr.unbalanced_pops;
    c->invalid_range_ends += sp->hdr.invalid_range_ends;
    c->strings_truncated += sp->hdr.strings_truncated;
    bld_ring_counts(tl, sp);
    if (sp->hdr.space_errno) {
        uint64_t lost = 0;
        for (int k = 0; k < ACT_REC_KIND_MAX; k++)
            lost += sp->hdr.dropped[k];
        int e = (int)sp->hdr.space_errno;
        act_tl_error(tl,
                     "%s: no room for the spool %s (%s): %llu records dropped, counted per kind in "
                     "\"dropped\"",
                     sp->path,
                     e == EFBIG ? "within the program's file size limit (ulimit -f)"
                                : "on its file system",
                     strerror(e), (unsigned long long)lost);
    }
    for (size_t i = 0; i < sp->n_errors; i++)
        act_tl_error(tl, "%s", sp->errors[i]);
    if (sp->n_problems > sp->n_errors)
        act_tl_error(tl, "%s: %llu more problems not listed", sp->path,
                     (unsigned long long)(sp->n_problems - sp->n_errors));
}

static void add_proc(act_timeline *tl, const act_spool *sp, uint32_t pid)
{
    act_tl_process *np = realloc(tl->procs, (tl->n_procs + 1) * sizeof(*np));
    if (!np) {
        tl->err = ACT_E_NOMEM;
        return;
    }
    tl->procs = np;
    tl->procs[tl->n_procs++] = (act_tl_process){pid, sp->hdr.ppid, sp->sealed, sp->argv, sp->argc};
    if (!sp->sealed) {
        uint32_t *nt = realloc(tl->truncated_pids, (tl->n_truncated + 1) * sizeof(*nt));
        if (!nt) {
            tl->err = ACT_E_NOMEM;
            return;
        }
        tl->truncated_pids = nt;
        tl->truncated_pids[tl->n_truncated++] = pid;
    }
}

void bld_proc_free(bld *b, bld_proc *p, pass_state *ps)
{
    free(p->capture);
    /* The API calls' block, written whole, becomes the scratch block when
     * it is the larger: the device ops' sort keys that follow then reuse
     * pages that are already there instead of faulting in new ones. */
    if (p->api && p->cap_api * sizeof(*p->api) > b->scratch_cap) {
        free(b->scratch);
        b->scratch = p->api;
        b->scratch_cap = p->cap_api * sizeof(*p->api);
    } else {
        free(p->api);
    }
    free(p->extcorr);
    free(p->ranges);
    for (size_t i = 0; i < p->n_threads; i++) {
        free(p->threads[i].stack);
        free(p->threads[i].by_seq);
    }
    free(p->threads);
    act_u64map_free(&p->thread_by_serial);
    act_u64map_free(&p->dev_by_handle);
    act_u64map_free(&p->queue_label);
    act_u64map_free(&p->tid_name);
    act_u64map_free(&p->launch_by_corr);
    free(p->pend);
    free(p->argrefs);
    free(p->marks);
    free(p->counters);
    free(p->tid_names);
    free(p->errs);
    free(p->clock_wait);
    bld_release_free(p);
    free(ps->async);
    act_u64map_free(&ps->async_by_id);
}

/* Phase one of a process: read its records, join its device ops, check
 * the nesting of its host lanes. Emits no event (the header of a streamed
 * trace comes between the phases); afterwards nothing reads the spool's
 * record list, which is released when the caller allows it. */
void bld_pass_begin(bld *b, bld_proc *p, act_spool *sp)
{
    p->sp = sp;
    p->pid = sp->hdr.pid;
    p->ops_begin = b->n_ops;
    p->ext_base = b->next_ext;
}

void bld_read_process(bld *b, bld_proc *p, pass_state *ps, act_spool *sp, int passed)
{
    if (!passed) {
        bld_pass_begin(b, p, sp);
        pass_records(b, p, ps);
    }
    add_counts(b->tl, sp);
    add_proc(b->tl, sp, p->pid);
    for (size_t i = 0; i < p->n_errs; i++)
        act_tl_error(b->tl, "pid %u: %.*s", p->pid, (int)p->errs[i].n, p->errs[i].p);
    bld_load_capture(b, p);
    api_window(b, p);
    close_open(b, p, ps);
    if (!b->tl->err && bld_joins_prepare(b, p))
        b->tl->err = ACT_E_NOMEM;
    if (!b->tl->err)
        resolve_ops(b, p);
    /* The keys live in the scratch block, which the nesting check reuses:
     * nothing reads them after the joins. */
    p->keys = NULL;
    p->n_keys = 0;
    if (b->tl->err)
        return;
    if (p->nest_live) /* lane by lane as its slices settled (stream_free.c) */
        b->tl->err = bld_nest_end(b, p);
    else
        bld_check_nesting(b, p);
}
