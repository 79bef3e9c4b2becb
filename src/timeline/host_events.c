/*
 * host_events.c -- a process's host lanes as trace events (builder_int.h):
 * its metadata and span, then its marks, ranges and API calls with their
 * args, made at the end of its pass (bld_emit_host) or, for what can no
 * longer change, while the program runs (bld_emit_online, streaming).
 * Called by the pass (builder.c) and the whole-timeline build; calls
 * neither.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "builder_int.h"
#include "core/vec.h"

/* ---- host lanes ------------------------------------------------------- */

static const char *base_name(const char *s)
{
    const char *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

void bld_emit_proc_meta(bld *b, bld_proc *p)
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
        /* A name given (NVTX) as it is; the OS's name with the tid, since
         * threads of one program often share it. */
        act_str tname = given.n ? given
                        : st && st->name.n && st->tid
                            ? act_tl_printf(tl, "%.*s (%u)", (int)st->name.n, st->name.p, st->tid)
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
void bld_emit_proc_span(bld *b, bld_proc *p)
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
        if (r->type == ACT_RECARG_CATEGORY)
            continue; /* the slice's category (range_category) */
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

/* A range's category: cpu_op when its push was followed by a CATEGORY arg
 * naming an operator (record.h), else user_annotation. */
static int range_category(const bld_proc *p, const bld_range *r)
{
    return bld_range_is_op(p, r) ? ACT_CAT_CPU_OP : ACT_CAT_USER_ANNOTATION;
}

static void emit_range(bld *b, bld_proc *p, size_t i)
{
    act_timeline *tl = b->tl;
    const bld_range *r = BLD_RANGE(p, i);
    if (!bld_in_window(b, p, r->start, r->end > r->start ? r->end : r->start)) {
        tl->counts.outside_window[ACT_REC_RANGE_PUSH]++;
        return;
    }
    act_tl_event_add(tl, 'X', range_category(p, r), r->name, p->pid, r->tid, r->start,
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
    act_tl_event_add(tl, 'X', act_cat_of_api(a->source), a->name, p->pid, a->tid, a->start,
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
    if (a->kept & BLD_API_ARGS)
        emit_user_args(b, p, &a->args);
}

/* The host events of a process not made while it ran (all of them in a
 * batch build): marks, ranges, API calls, async ranges. */
void bld_emit_host(bld *b, bld_proc *p, pass_state *ps)
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
    for (size_t i = 0; i < p->n_threads; i++) {
        const bld_thread *t = &p->threads[i];
        if (t->owner_kind == kind && t->owner_idx < n)
            n = t->owner_idx;
        if (kind == BLD_OWNER_API && t->pyhold && t->pyhold - 1 < n)
            n = t->pyhold - 1; /* a BACK arg may still change them (record.h) */
    }
    return n;
}

/* Online only without any capture window: which events a window keeps is
 * known only once the last CAPTURE record was read. */
int bld_online_allowed(const bld *b, const bld_proc *p)
{
    return !b->ws && b->we == UINT64_MAX && !p->sp->records[ACT_REC_CAPTURE] &&
           !(p->sp->hdr.flags & ACT_SPOOL_F_CAPTURE_API);
}

/* The events that can no longer change, each kind in its batch order: a
 * mark or an API call once its thread recorded something else (no ARG
 * record can follow), a range once popped too. The same code makes them
 * as emit_host would at the end, with the same counters. */
void bld_emit_online(bld *b, bld_proc *p)
{
    if (!bld_online_allowed(b, p))
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
