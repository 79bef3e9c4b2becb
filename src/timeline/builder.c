/*
 * builder.c -- the timeline builder: one pass over each process's records
 * (spool.h) builds host lanes (ranges, API calls, marks, counters), the
 * join tables and the list of device ops; joins.c links device ops to
 * their launches and ranges, devices.c lays device work out on lanes with
 * flows, window.c knows the capture window. Calls go from here to them,
 * never back. Everything questionable is counted in tl->counts, never asserted
 * away: unbalanced pops, ranges left open, skew, negative durations,
 * improper nesting, records outside the capture window.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "builder_int.h"
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

typedef struct bld_async {
    uint64_t rec_id, start, end;
    act_str name;
    uint32_t tid;
    bld_args args;
} bld_async;

typedef struct pass_state {
    bld_async *async;
    size_t n_async, cap_async;
    act_u64map async_by_id;
    size_t cap_ops_local;
} pass_state;

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
    if (!b->tl->err)
        t->by_seq[t->n_seq++] = (uint32_t)(p->n_ranges - 1);
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

/* An ARG record belongs to the latest RANGE_PUSH, RANGE_START or MARK of
 * its thread; one with no such record before it is counted as an error. */
static void on_arg(bld *b, bld_proc *p, pass_state *ps, const act_sp_rec *rec)
{
    bld_thread *t = thread_of(b, p, rec->serial);
    if (!t)
        return;
    bld_args *args = NULL, api_args = {0, 0};
    uint64_t packed = 0;
    if (t->owner_kind == BLD_OWNER_API) {
        /* Few API calls carry args: they live in a map, not in bld_api. */
        if (act_u64map_get(&p->api_args, (uint64_t)t->owner_idx + 1, &packed))
            api_args = (bld_args){(uint32_t)(packed >> 32), (uint32_t)packed};
        args = &api_args;
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
    if (args == &api_args) {
        bld_api_at(p, t->owner_idx)->kept |= BLD_API_ARGS;
        if (act_u64map_put(&p->api_args, (uint64_t)t->owner_idx + 1,
                           (uint64_t)api_args.head << 32 | api_args.tail))
            b->tl->err = ACT_E_NOMEM;
    }
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

static void emit_counters(bld *b, bld_proc *p)
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
    a->source = r->source;
    a->tid = t->tid;
    a->result = r->result;
    a->kept = 0; /* BLD_API_KEPT: api_window, once the capture window is known */
    t->owner_kind = BLD_OWNER_API;
    t->owner_idx = (uint32_t)(p->n_api - 1);
    if (p->track_launches && a->corr && a->source == ACT_SOURCE_OPENCL)
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
    op->corr = r->corr;
    op->queue = r->queue;
    op->x.ext_ref = r->ext;
    op->d.device = r->device;
    op->source = r->source;
    op->pid = p->pid;
    if (p->track_launches && op->corr && op->source == ACT_SOURCE_OPENCL)
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
static void *presize(bld *b, size_t n, size_t size, size_t *cap)
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
        break;
    }
    case ACT_REC_QUEUE: on_queue(b, p, rec); break;
    case ACT_REC_METADATA: on_metadata(b, rec); break;
    case ACT_REC_CLOCK:
        on_clock(b, rec);
        bld_vendor_clock(b, p, rec);
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
    p->api = presize(b, sp->records[ACT_REC_API], sizeof(*p->api), &p->cap_api);
    p->ranges = presize(b, sp->records[ACT_REC_RANGE_PUSH], sizeof(*p->ranges), &p->cap_ranges);
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
static int pass_live(bld *b, bld_proc *p, pass_state *ps, int final, volatile const int *stop,
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

/* ---- host lanes ------------------------------------------------------- */

static const char *base_name(const char *s)
{
    const char *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

static void emit_proc_meta(bld *b, bld_proc *p)
{
    act_timeline *tl = b->tl;
    act_spool *sp = p->sp;
    act_str pname = sp->argc ? act_tl_printf(tl, "%s (pid %u)", base_name(sp->argv[0]), p->pid)
                             : act_tl_printf(tl, "pid %u", p->pid);
    act_tl_event *e =
        act_tl_event_add(tl, 'M', ACT_CAT_NONE, act_str_c("process_name"), p->pid, 0, 0, 0);
    if (e)
        e->flags |= ACT_EVF_NO_TID;
    act_tl_arg_str(tl, "name", pname);
    e = act_tl_event_add(tl, 'M', ACT_CAT_NONE, act_str_c("process_sort_index"), p->pid, 0, 0, 0);
    if (e)
        e->flags |= ACT_EVF_NO_TID;
    act_tl_arg_u64(tl, "sort_index", p->pid);
    if (!sp->sealed) {
        e = act_tl_event_add(tl, 'M', ACT_CAT_NONE, act_str_c("process_labels"), p->pid, 0, 0, 0);
        if (e)
            e->flags |= ACT_EVF_NO_TID;
        act_tl_arg_str(tl, "labels", act_str_c("truncated (the process did not finish)"));
    }
    for (size_t i = 0; i < p->n_threads; i++) {
        const bld_thread *t = &p->threads[i];
        const act_sp_thread *st = act_spool_thread(sp, t->serial);
        uint64_t v;
        act_str given =
            act_u64map_get(&p->tid_name, t->tid, &v) ? p->tid_names[v - 1] : (act_str){"", 0};
        act_str tname = given.n            ? given
                        : st && st->name.n ? st->name
                        : st && st->tid    ? act_tl_printf(tl, "thread %u", st->tid)
                                           : act_tl_printf(tl, "thread serial %u", t->serial);
        act_tl_event_add(tl, 'M', ACT_CAT_NONE, act_str_c("thread_name"), p->pid, t->tid, 0, 0);
        act_tl_arg_str(tl, "name", tname);
    }
}

/*
 * The process's life as one "cpu_op" slice on its main thread: the
 * TensorBoard plugin takes a trace without ProfilerStep events as one step
 * from the first to the last CPU op, and with none it computed a step of
 * -2^64 us. Not in sessions with a capture window (torch.profiler has its
 * own steps): there it would span time nobody recorded.
 */
static void emit_proc_span(bld *b, bld_proc *p)
{
    const act_spool *sp = p->sp;
    uint64_t s = sp->first_ts > b->ws ? sp->first_ts : b->ws;
    uint64_t e = sp->last_ts < b->we ? sp->last_ts : b->we;
    if (p->capture_used || !sp->first_ts || e <= s)
        return;
    act_str name = sp->argc ? act_tl_printf(b->tl, "%s", base_name(sp->argv[0]))
                            : act_tl_printf(b->tl, "pid %u", p->pid);
    act_tl_event_add(b->tl, 'X', ACT_CAT_CPU_OP, name, p->pid, p->pid, s, e - s);
    act_tl_arg_str(b->tl, "acceltrace", act_str_c("process lifetime"));
}

static uint64_t span(bld *b, uint64_t start, uint64_t end)
{
    if (end >= start)
        return end - start;
    b->tl->counts.negative_durations++;
    return 0;
}

static int api_cat(uint32_t source)
{
    switch (source) {
    case ACT_SOURCE_OPENCL: return ACT_CAT_OPENCL_RUNTIME;
    case ACT_SOURCE_CUPTI: return ACT_CAT_CUDA_RUNTIME;
    case ACT_SOURCE_MSPTI: return ACT_CAT_PRIVATEUSE1_RUNTIME;
    case ACT_SOURCE_USER: return ACT_CAT_CPU_OP;
    case ACT_SOURCE_NVTX: return ACT_CAT_USER_ANNOTATION;
    default: return ACT_CAT_RUNTIME;
    }
}

/* The values that follow a vector ARG record, as many as its size holds
 * (a spool may be damaged). */
static uint32_t arg_vec(const act_rec_arg *r, const uint64_t **v)
{
    uint64_t room = ((uint64_t)r->h.size8 * 8 - sizeof(*r)) / sizeof(uint64_t);
    *v = (const uint64_t *)(const void *)(r + 1);
    return (uint32_t)(r->v.u < room ? r->v.u : room);
}

/* A slice of a launch record as an array arg (null when not given or cut). */
static void launch_vec(act_timeline *tl, const char *key, const uint64_t *v, uint32_t *at,
                       uint32_t n, uint32_t len, int given)
{
    act_tl_arg *a = act_tl_arg_add(tl, key);
    if (!a)
        return;
    if (!given || *at + len > n) {
        a->type = ACT_ARG_NULL;
        return;
    }
    a->type = ACT_ARG_U64V;
    a->v.vec.p = v + *at;
    a->v.vec.n = len;
    *at += len;
}

/* An ACT_RECARG_LAUNCH record as its five args (record.h). */
static void emit_launch_args(act_timeline *tl, const act_rec_arg *r)
{
    const uint64_t *v;
    uint32_t n = arg_vec(r, &v), at = 2;
    uint64_t head[2] = {0, 0};
    if (n >= 2)
        memcpy(head, v, sizeof head);
    uint32_t dim = head[0] <= 3 ? (uint32_t)head[0] : 3;
    act_tl_arg_u64(tl, "work dim", head[0]);
    launch_vec(tl, "global work size", v, &at, n, dim, n >= 2);
    launch_vec(tl, "local work size", v, &at, n, dim, n >= 2 && (head[1] & 1));
    launch_vec(tl, "global work offset", v, &at, n, dim, n >= 2 && (head[1] & 2));
    launch_vec(tl, "arg sizes", v, &at, n, at <= n ? n - at : 0, 1);
}

/* The recorded args (ARG records) of the event just added. A key the
 * builder also sets on that event keeps both: the recorded one is renamed. */
static void emit_user_args(bld *b, const bld_proc *p, const bld_args *args)
{
    act_timeline *tl = b->tl;
    for (uint32_t ref = args->head; ref && !tl->err; ref = p->argrefs[ref - 1].next) {
        const act_sp_rec *rec = &p->argrefs[ref - 1].rec;
        const act_rec_arg *r = (const act_rec_arg *)rec->r;
        act_str key = rec->s1;
        static const char *const builder_keys[] = {"External id", "truncated", "unclosed"};
        for (size_t k = 0; k < sizeof(builder_keys) / sizeof(builder_keys[0]); k++)
            if (act_str_is(key, builder_keys[k]))
                key = act_tl_printf(tl, "%s (recorded)", builder_keys[k]);
        if (r->type == ACT_RECARG_LAUNCH) {
            emit_launch_args(tl, r);
            continue;
        }
        act_tl_arg *a = act_tl_arg_add(tl, "");
        if (!a)
            return;
        a->key = key;
        switch (r->type) {
        case ACT_RECARG_I64:
            a->type = ACT_ARG_I64;
            a->v.i = r->v.i;
            break;
        case ACT_RECARG_F64:
            a->type = ACT_ARG_F64;
            a->v.d = r->v.f;
            break;
        case ACT_RECARG_STR:
            a->type = ACT_ARG_STR;
            a->v.s = rec->s2;
            if (act_str_is(key, "error") && tl->n_ev)
                tl->ev[tl->n_ev - 1].flags |= ACT_EVF_ERROR;
            break;
        case ACT_RECARG_NULL: a->type = ACT_ARG_NULL; break;
        case ACT_RECARG_U64V:
            a->type = ACT_ARG_U64V;
            a->v.vec.n = arg_vec(r, &a->v.vec.p);
            break;
        default:
            a->type = ACT_ARG_U64;
            a->v.u = r->v.u;
            break;
        }
    }
}

static void emit_mark(bld *b, bld_proc *p, size_t i)
{
    const bld_mark *m = BLD_MARK(p, i);
    if (!bld_in_window(b, p, m->ts, m->ts)) {
        b->tl->counts.outside_window[ACT_REC_MARK]++;
        return;
    }
    if (act_tl_event_add(b->tl, 'i', ACT_CAT_USER_ANNOTATION, m->name, p->pid, m->tid, m->ts, 0))
        emit_user_args(b, p, &m->args);
}

static void emit_range(bld *b, bld_proc *p, size_t i)
{
    act_timeline *tl = b->tl;
    const bld_range *r = BLD_RANGE(p, i);
    if (!bld_in_window(b, p, r->start, r->end > r->start ? r->end : r->start)) {
        tl->counts.outside_window[ACT_REC_RANGE_PUSH]++;
        return;
    }
    act_tl_event_add(tl, 'X', ACT_CAT_USER_ANNOTATION, r->name, p->pid, r->tid, r->start,
                     span(b, r->start, r->end));
    emit_user_args(b, p, &r->args);
    act_tl_arg_u64(tl, "External id", r->ext_id);
    if (r->before_window) { /* a ring spool's range open when its window began */
        act_tl_arg *a = act_tl_arg_add(tl, "before_window");
        if (a) {
            a->type = ACT_ARG_BOOL;
            a->v.u = 1;
        }
    }
    if (r->closed_at_end) {
        act_tl_arg *a = act_tl_arg_add(tl, r->closed_at_end == 1 ? "truncated" : "unclosed");
        if (a) {
            a->type = ACT_ARG_BOOL;
            a->v.u = 1;
        }
    }
}

static void emit_api(bld *b, bld_proc *p, size_t i)
{
    act_timeline *tl = b->tl;
    const bld_api *a = bld_api_at(p, i);
    act_tl_event_add(tl, 'X', api_cat(a->source), a->name, p->pid, a->tid, a->start,
                     span(b, a->start, a->end));
    if (a->corr)
        act_tl_arg_u64(tl, "correlation", a->corr);
    uint64_t ext = bld_resolve_ext(b, p, a->ext);
    if (ext)
        act_tl_arg_u64(tl, "External id", ext);
    if (a->result) {
        act_tl_arg *g = act_tl_arg_add(tl, "result");
        if (g) {
            g->type = ACT_ARG_I64;
            g->v.i = a->result;
        }
    }
    uint64_t packed;
    if ((a->kept & BLD_API_ARGS) && act_u64map_get(&p->api_args, (uint64_t)i + 1, &packed))
        emit_user_args(b, p, &(bld_args){(uint32_t)(packed >> 32), (uint32_t)packed});
}

/* The host events of a process not made while it ran (all of them in a
 * batch build): marks, ranges, API calls, async ranges. */
static void emit_host(bld *b, bld_proc *p, pass_state *ps)
{
    act_timeline *tl = b->tl;
    for (size_t i = p->marks_out; i < p->n_marks; i++)
        emit_mark(b, p, i);
    for (size_t i = p->ranges_out; i < p->n_ranges; i++)
        emit_range(b, p, i);
    for (size_t i = p->api_out; i < p->n_api; i++)
        if (p->api[i - p->api_base].kept & BLD_API_KEPT)
            emit_api(b, p, i);
    for (size_t i = 0; i < ps->n_async; i++) {
        const bld_async *r = &ps->async[i];
        if (!bld_in_window(b, p, r->start, r->end)) {
            tl->counts.outside_window[ACT_REC_RANGE_START]++;
            continue;
        }
        uint64_t id = ++b->next_async;
        act_tl_event *e = act_tl_event_add(tl, 'b', ACT_CAT_USER_ANNOTATION, r->name, p->pid,
                                           r->tid, r->start, 0);
        if (e)
            e->id = id;
        emit_user_args(b, p, &r->args);
        e = act_tl_event_add(tl, 'e', ACT_CAT_USER_ANNOTATION, r->name, p->pid, r->tid, r->end, 0);
        if (e)
            e->id = id;
    }
}

/* ---- streaming: host events made while the process runs ----------------- */

/* The lowest index of `kind` some thread's next ARG records would still
 * attach to (n when none): what is below it has all its args. */
static size_t owned_below(const bld_proc *p, uint32_t kind, size_t n)
{
    for (size_t i = 0; i < p->n_threads; i++)
        if (p->threads[i].owner_kind == kind && p->threads[i].owner_idx < n)
            n = p->threads[i].owner_idx;
    return n;
}

/* Online only without any capture window: which events a window keeps is
 * known only once the last CAPTURE record was read. */
static int online_allowed(const bld *b, const bld_proc *p)
{
    return !b->ws && b->we == UINT64_MAX && !p->sp->records[ACT_REC_CAPTURE] &&
           !(p->sp->hdr.flags & ACT_SPOOL_F_CAPTURE_API);
}

/* The events that can no longer change, each kind in its batch order: a
 * mark or an API call once its thread recorded something else (no ARG
 * record can follow), a range once popped too. The same code makes them
 * as emit_host would at the end, with the same counters. */
static void emit_online(bld *b, bld_proc *p)
{
    if (!online_allowed(b, p))
        return;
    size_t lim = owned_below(p, BLD_OWNER_MARK, p->n_marks);
    for (; p->marks_out < lim && !b->tl->err; p->marks_out++) {
        emit_mark(b, p, p->marks_out);
        bld_settled(b, p, 2, p->marks_out);
    }
    lim = owned_below(p, BLD_OWNER_RANGE, p->n_ranges);
    for (; p->ranges_out < lim && !BLD_RANGE(p, p->ranges_out)->open && !b->tl->err;
         p->ranges_out++) {
        emit_range(b, p, p->ranges_out);
        bld_settled(b, p, 0, p->ranges_out);
    }
    lim = owned_below(p, BLD_OWNER_API, p->n_api);
    while (p->api_out < lim && !b->tl->err) {
        bld_api *a = &p->api[p->api_out - p->api_base];
        if (!bld_ext_known(p, a->ext))
            break;
        a->kept |= BLD_API_KEPT; /* no window: api_window agrees */
        emit_api(b, p, p->api_out);
        bld_settled(b, p, 1, p->api_out++);
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

static void proc_free(bld *b, bld_proc *p, pass_state *ps)
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
    act_u64map_free(&p->api_args);
    act_u64map_free(&p->launch_by_corr);
    free(p->pend);
    free(p->argrefs);
    free(p->marks);
    free(p->counters);
    free(p->tid_names);
    free(p->errs);
    bld_release_free(p);
    free(ps->async);
    act_u64map_free(&ps->async_by_id);
}

static void check_nesting(bld *b, const bld_proc *p);

/* Phase one of a process: read its records, join its device ops, check
 * the nesting of its host lanes. Emits no event (the header of a streamed
 * trace comes between the phases); afterwards nothing reads the spool's
 * record list, which is released when the caller allows it. */
static void pass_begin(bld *b, bld_proc *p, act_spool *sp)
{
    p->sp = sp;
    p->pid = sp->hdr.pid;
    p->ops_begin = b->n_ops;
    p->ext_base = b->next_ext;
}

static void read_process(bld *b, bld_proc *p, pass_state *ps, act_spool *sp, int passed)
{
    if (!passed) {
        pass_begin(b, p, sp);
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
        check_nesting(b, p);
}

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

static void check_nesting(bld *b, const bld_proc *p)
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
static void set_time_base(act_timeline *tl, act_spool *const *sp, size_t n)
{
    uint64_t base = UINT64_MAX;
    const act_spool *ref = NULL;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = act_spool_ns(sp[i], sp[i]->hdr.start_ns);
        if (s && s < base)
            base = s;
        if (sp[i]->first_ts && sp[i]->first_ts < base)
            base = sp[i]->first_ts;
        if (s && (!ref || s < act_spool_ns(ref, ref->hdr.start_ns)))
            ref = sp[i];
    }
    tl->base_ns = base == UINT64_MAX ? 0 : base;
    if (ref) {
        uint64_t s = act_spool_ns(ref, ref->hdr.start_ns);
        tl->base_wall_ns = ref->hdr.start_realtime_ns - (s - tl->base_ns);
    }
}

static void set_clock_default(act_timeline *tl, act_spool *const *sp, size_t n)
{
    if (tl->clock_method[0])
        return;
    int tsc = 0;
    for (size_t i = 0; i < n; i++)
        tsc |= sp[i]->hdr.clock_kind == ACT_CLOCK_TSC;
    snprintf(tl->clock_method, sizeof(tl->clock_method), "%s", tsc ? "tsc" : "monotonic_raw");
    tl->clock_error_ns = 0;
}

/* Records a live pass reads before it settles and frees what it can
 * (16384 before BENCHMARKS.md item 23: on a shared vCPU the launcher left
 * twice as much for after the exit). */
#define BLD_SLICE 4096

struct act_tl_build {
    bld b;
    bld_proc *procs;
    pass_state *ps;
    size_t n;
    act_spool *live; /* procs[0]'s spool, read while its process runs */
    int online;      /* its host events are made while it runs (emit_online) */
    int emitted;     /* some were: they used online_base */
    uint64_t online_base;
};

/* The builder with room for n processes (procs[0] kept when it grows). */
static int build_alloc(act_tl_build *s, size_t n)
{
    if (n < s->n)
        n = s->n;
    bld_proc *np = realloc(s->procs, (n ? n : 1) * sizeof(*np));
    if (np)
        s->procs = np;
    pass_state *nps = np ? realloc(s->ps, (n ? n : 1) * sizeof(*nps)) : NULL;
    if (nps)
        s->ps = nps;
    if (!np || !nps)
        return ACT_E_NOMEM;
    memset(np + s->n, 0, (n - s->n) * sizeof(*np));
    memset(nps + s->n, 0, (n - s->n) * sizeof(*nps));
    s->n = n;
    return 0;
}

int act_timeline_build_live(act_timeline *tl, act_spool *sp, const act_build_opts *opts,
                            act_tl_build **out)
{
    memset(tl, 0, sizeof(*tl));
    act_tl_build *s = calloc(1, sizeof(*s));
    *out = s;
    if (!s || build_alloc(s, 1))
        return tl->err = ACT_E_NOMEM;
    s->b = (bld){.tl = tl,
                 .ws = opts ? opts->window_start_ns : 0,
                 .we = opts && opts->window_end_ns ? opts->window_end_ns : UINT64_MAX};
    s->live = sp;
    pass_begin(&s->b, &s->procs[0], sp);
    return 0;
}

/* Room for n items of `size` at *v (capacity *cap), the new part touched. */
static int reserve_touched(void **v, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return 0;
    void *nv = realloc(*v, n * size);
    if (!nv)
        return ACT_E_NOMEM;
    memset((char *)nv + *cap * size, 0, (n - *cap) * size);
    *v = nv;
    *cap = n;
    return 0;
}

/* What the export at the exit allocates for what was read so far -- the
 * scratch block of the joins and the device lanes, a batch of events and
 * their args -- allocated and touched now: its page faults then cost the
 * feeding thread while the program runs, not the time after its exit.
 * The export would allocate as much: the peak is the same, held earlier. */
static void prefault_exit(bld *b, const bld_proc *p)
{
    act_timeline *tl = b->tl;
    size_t keys = (p->n_api - p->api_base + p->n_held) * sizeof(bld_key),
           lanes = bld_devices_scratch(b->n_ops);
    size_t want = keys > lanes ? keys : lanes;
    if (want > b->scratch_cap) {
        void *blk = bld_scratch(b, want + want / 4);
        if (blk)
            memset(blk, 0, b->scratch_cap);
    }
    size_t ev = p->n_read < ACT_TL_SINK_BATCH ? p->n_read : ACT_TL_SINK_BATCH;
    if (reserve_touched((void **)&tl->ev, &tl->cap_ev, ev, sizeof(*tl->ev)) ||
        reserve_touched((void **)&tl->args, &tl->cap_args, 2 * ev, sizeof(*tl->args)))
        tl->err = ACT_E_NOMEM;
}

/* The events that can no longer change, handed to the sink now. The time
 * base is the live spool's (its start, or an earlier first record): the
 * run's when no other spool starts earlier, which _continue checks. */
static void feed_online(act_tl_build *s)
{
    act_timeline *tl = s->b.tl;
    bld_proc *p = &s->procs[0];
    size_t before = p->marks_out + p->ranges_out + p->api_out + s->b.ds.written;
    if (!s->emitted)
        set_time_base(tl, &s->live, 1);
    emit_online(&s->b, p);
    if (online_allowed(&s->b, p))
        bld_devstream_feed(&s->b, p);
    bld_release(&s->b, p);
    if (p->marks_out + p->ranges_out + p->api_out + s->b.ds.written == before)
        return;
    if (!s->emitted)
        s->online_base = tl->base_ns;
    s->emitted = 1;
    if (!tl->err && tl->sink && tl->n_ev)
        tl->err = tl->sink(tl, tl->sink_ctx);
    /* Writing the events read their records and strings again: the
     * pages that mapped are dropped, as the reader drops its own. */
    act_spool_drop_pages(s->live);
}

int act_timeline_build_feed(act_tl_build *s, volatile const int *stop)
{
    if (!s->live || s->b.tl->err)
        return s->b.tl->err ? s->b.tl->err : ACT_E_STATE;
    /* Read in slices, each settled before the next: what is kept is what
     * is still open, not what one feed read. */
    int more;
    do {
        more = pass_live(&s->b, &s->procs[0], &s->ps[0], 0, stop, s->online ? BLD_SLICE : 0);
        if (s->online && !s->b.tl->err)
            feed_online(s);
    } while (more && (!stop || !__atomic_load_n(stop, __ATOMIC_RELAXED)));
    if (!s->b.tl->err)
        prefault_exit(&s->b, &s->procs[0]);
    return s->b.tl->err;
}

void act_timeline_build_online(act_tl_build *s)
{
    if (!s->live)
        return;
    s->online = 1;
    s->b.ds.on = 1; /* its device ops too (devstream.c) */
    s->procs[0].track_launches = 1;
    s->procs[0].nest_live = 1; /* and what was written leaves (stream_free.c) */
    s->procs[0].frees = 1;
}

uint64_t act_timeline_build_devops_early(const act_tl_build *s)
{
    return s ? s->b.ds.written : 0;
}

int act_timeline_build_start(act_timeline *tl, act_spool *const *spools, size_t n,
                             const act_build_opts *opts, act_tl_build **out)
{
    memset(tl, 0, sizeof(*tl));
    act_tl_build *s = calloc(1, sizeof(*s));
    *out = s;
    if (!s)
        return tl->err = ACT_E_NOMEM;
    s->b = (bld){.tl = tl,
                 .ws = opts ? opts->window_start_ns : 0,
                 .we = opts && opts->window_end_ns ? opts->window_end_ns : UINT64_MAX};
    return act_timeline_build_continue(s, spools, n);
}

int act_timeline_build_continue(act_tl_build *s, act_spool *const *spools, size_t n)
{
    act_timeline *tl = s->b.tl;
    if (s->live && (!n || spools[0] != s->live))
        return tl->err = ACT_E_STATE; /* the live spool must be the first one */
    if (build_alloc(s, n))
        return tl->err = ACT_E_NOMEM;
    bld *b = &s->b;
    b->spools = spools;
    b->n_spools = n;
    /* Its process has ended: the rest of its records, its times, settled
     * slice by slice as in the feeds. */
    while (s->live && pass_live(b, &s->procs[0], &s->ps[0], 1, NULL, s->online ? BLD_SLICE : 0))
        feed_online(s);
    uint32_t max_pid = 0, min_pid = UINT32_MAX;
    size_t n_ops = 0;
    for (size_t i = 0; i < n; i++) {
        if (spools[i]->hdr.pid > max_pid)
            max_pid = spools[i]->hdr.pid;
        if (spools[i]->hdr.pid < min_pid)
            min_pid = spools[i]->hdr.pid;
        n_ops += spools[i]->records[ACT_REC_DEVICE_OP];
    }
    if (!b->ops)
        b->ops = presize(b, n_ops, sizeof(*b->ops), &b->cap_ops);
    /* Device pids sort after every host pid, even implausible ones. */
    b->dev_pid_base = max_pid < ACT_DEVICE_PID_BASE ? ACT_DEVICE_PID_BASE : max_pid + 1;
    if (b->dev_pid_base > UINT32_MAX - 65536)
        b->dev_pid_base = UINT32_MAX - 65536;
    b->min_host_pid = min_pid;
    set_time_base(tl, spools, n);
    /* Events made while the process ran used a time base and no capture
     * window: when either proves wrong, the caller builds anew. */
    if (s->emitted && (tl->base_ns != s->online_base || !online_allowed(b, &s->procs[0])))
        return tl->err = ACT_E_STATE;
    for (size_t i = 0; i < n && !tl->err; i++)
        read_process(b, &s->procs[i], &s->ps[i], spools[i], i == 0 && s->live);
    s->live = NULL;
    if (!tl->err)
        bld_devices_name(b);
    /* Device ops written early assumed their group was the first. */
    if (!tl->err && bld_devstream_check(b, &s->procs[0]))
        return tl->err = ACT_E_STATE;
    set_clock_default(tl, spools, n);
    return tl->err;
}

int act_timeline_build_events(act_tl_build *s)
{
    bld *b = &s->b;
    act_timeline *tl = b->tl;
    for (size_t i = 0; i < s->n && !tl->err; i++) {
        bld_proc *p = &s->procs[i];
        emit_counters(b, p);
        emit_proc_meta(b, p);
        emit_proc_span(b, p);
        emit_host(b, p, &s->ps[i]);
        /* Device ops carry what they need from their process. */
        proc_free(b, p, &s->ps[i]);
        memset(p, 0, sizeof(*p));
        memset(&s->ps[i], 0, sizeof(s->ps[i]));
    }
    if (!tl->err)
        tl->err = bld_devices_emit(b);
    if (!tl->err && tl->sink && tl->n_ev)
        tl->err = tl->sink(tl, tl->sink_ctx);
    return tl->err;
}

void act_timeline_build_finish(act_tl_build *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        proc_free(&s->b, &s->procs[i], &s->ps[i]);
    free(s->procs);
    free(s->ps);
    free(s->b.ops);
    free(s->b.scratch);
    bld_devstream_free(&s->b);
    free(s->b.queues);
    free(s->b.dev_handle);
    free(s->b.dev_host_pid);
    act_u64map_free(&s->b.dev_by_desc);
    act_u64map_free(&s->b.dev_by_key);
    free(s);
}

int act_timeline_build(act_timeline *tl, act_spool *const *spools, size_t n,
                       const act_build_opts *opts)
{
    act_tl_build *s;
    int rc = act_timeline_build_start(tl, spools, n, opts, &s);
    if (!rc)
        rc = act_timeline_build_events(s);
    act_timeline_build_finish(s);
    return rc;
}
