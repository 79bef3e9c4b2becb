/*
 * gpu_annotations.c -- user ranges projected onto the device lanes, as
 * kineto writes them ("gpu_user_annotation"): what HTA's user-annotation
 * breakdown and TensorBoard's views read to tell which part of a step the
 * device was busy with.
 *
 * Design notes:
 *  G1. A device op belongs to the innermost *user* range open on its
 *      launching thread when it was launched: ranges pushed as operators
 *      (a CATEGORY arg, torch's cpu_op) are passed over, as kineto maps a
 *      kernel to its innermost record_function, not to the aten op; and so
 *      are torch.profiler's step ranges ("ProfilerStep#N"): HTA and the
 *      TensorBoard plugin find steps by that name whatever the lane, and a
 *      copy on a device lane made each step count twice.
 *  G2. Per (range, device lane) one slice, from the first of its ops'
 *      starts to the last one's end, on the lane of its ops, named as the
 *      range, with the range's External id.
 *  G3. A range's slices go out once it was popped and the ops of every
 *      launch made in it were written (none can widen them any more), the
 *      rest after the last device op; then its slots are reused. Memory
 *      holds the ranges still open or waiting for ops, not the run's.
 *  G5. One op per launch takes the launch's range (a vendor that reuses a
 *      correlation id may join two): that op is what the range waits for.
 *  G4. The range's category is read once, at the first launch inside it:
 *      its CATEGORY arg follows its push, before anything it encloses.
 */
#include <stdlib.h>
#include <string.h>

#include "builder_int.h"

int bld_range_is_op(const bld_proc *p, const bld_range *r)
{
    for (uint32_t ref = r->args.head; ref; ref = p->argrefs[ref - 1].next) {
        const act_rec_arg *a = (const act_rec_arg *)p->argrefs[ref - 1].rec.r;
        if (a->type == ACT_RECARG_CATEGORY && a->v.u == ACT_RANGE_CAT_OP)
            return 1;
    }
    return 0;
}

static int is_step(act_str name)
{
    static const char step[] = "ProfilerStep#";
    return name.n >= sizeof(step) - 1 && !memcmp(name.p, step, sizeof(step) - 1);
}

static int range_kind(const bld_proc *p, bld_range *r)
{
    if (r->kind == BLD_RANGE_UNKNOWN) /* G4; a step is passed over as an operator (G1) */
        r->kind = bld_range_is_op(p, r) || is_step(r->name) ? BLD_RANGE_OP : BLD_RANGE_USER;
    return r->kind;
}

static uint32_t range_new(bld *b, const bld_range *r, uint32_t serial)
{
    bld_gua *g = &b->gua;
    uint32_t ua = g->free_range;
    if (ua) {
        g->free_range = g->ranges[ua - 1].spans;
    } else {
        if (act_vec_reserve(g->ranges, g->cap_ranges, g->n_ranges + 1, 64)) {
            b->tl->err = ACT_E_NOMEM;
            return 0;
        }
        ua = (uint32_t)++g->n_ranges;
    }
    uint64_t ref = r->seq ? (uint64_t)serial << 32 | r->seq : 0;
    g->ranges[ua - 1] = (bld_gua_range){r->ext_id, ref, r->name, 0, 0, 0, 1};
    return ua;
}

uint32_t bld_gua_of_launch(bld *b, bld_proc *p, const bld_thread *t)
{
    for (size_t d = t->depth; d > 0; d--) {
        bld_range *r = BLD_RANGE(p, t->stack[d - 1]);
        if (range_kind(p, r) == BLD_RANGE_OP)
            continue; /* G1 */
        if (!r->ua)
            r->ua = range_new(b, r, t->serial);
        if (r->ua)
            b->gua.ranges[r->ua - 1].pending++;
        return r->ua;
    }
    return 0;
}

void bld_gua_join(bld_op *op, bld_api *launch)
{
    if (op->ua || !launch || !launch->ua || (launch->kept & BLD_API_UA))
        return; /* G5 */
    op->ua = launch->ua;
    launch->kept |= BLD_API_UA;
}

static uint64_t span_key(uint32_t ua, uint32_t dev, uint32_t lane_tid)
{
    return (uint64_t)ua << 32 ^ (uint64_t)dev << 20 ^ lane_tid;
}

/* Its slices (G2), then its slots back (G3). */
static void range_emit(bld *b, uint32_t ua)
{
    bld_gua *g = &b->gua;
    act_timeline *tl = b->tl;
    bld_gua_range *r = &g->ranges[ua - 1];
    for (uint32_t i = r->spans; i;) {
        bld_gua_span *s = &g->spans[i - 1];
        if (!tl->err) {
            act_tl_event_add(tl, 'X', ACT_CAT_GPU_USER_ANNOTATION, r->name, tl->devices[s->dev].pid,
                             s->lane_tid, s->start, s->end - s->start);
            act_tl_arg_u64(tl, "External id", r->ext_id);
        }
        uint64_t v;
        uint64_t key = span_key(s->ua, s->dev, s->lane_tid);
        if (act_u64map_get(&g->span_of, key, &v) && v == i)
            act_u64map_del(&g->span_of, key);
        uint32_t next = s->next;
        s->next = g->free_span;
        g->free_span = i;
        i = next;
    }
    r->live = 0;
    r->spans = g->free_range;
    g->free_range = ua;
}

void bld_gua_closed(bld *b, bld_range *r)
{
    bld_gua_range *g = &b->gua.ranges[r->ua - 1];
    g->closed = 1;
    if (!g->pending)
        range_emit(b, r->ua);
}

static uint32_t span_new(bld *b, const bld_op *op, uint64_t end)
{
    bld_gua *g = &b->gua;
    uint32_t i = g->free_span;
    if (i) {
        g->free_span = g->spans[i - 1].next;
    } else {
        if (act_vec_reserve(g->spans, g->cap_spans, g->n_spans + 1, 64)) {
            b->tl->err = ACT_E_NOMEM;
            return 0;
        }
        i = (uint32_t)++g->n_spans;
    }
    bld_gua_range *r = &g->ranges[op->ua - 1];
    g->spans[i - 1] = (bld_gua_span){op->start, end, op->ua, op->dev, op->lane_tid, r->spans};
    r->spans = i;
    return i;
}

void bld_gua_extend(bld *b, const bld_op *op)
{
    bld_gua *g = &b->gua;
    uint64_t key = span_key(op->ua, op->dev, op->lane_tid), v;
    uint64_t end = op->end > op->start ? op->end : op->start;
    bld_gua_span *s = act_u64map_get(&g->span_of, key, &v) ? &g->spans[v - 1] : NULL;
    if (s && s->ua == op->ua && s->dev == op->dev && s->lane_tid == op->lane_tid) {
        if (op->start < s->start)
            s->start = op->start;
        if (end > s->end)
            s->end = end;
    } else if (!s) {
        uint32_t i = span_new(b, op, end);
        if (i && act_u64map_put(&g->span_of, key, i))
            b->tl->err = ACT_E_NOMEM;
    } /* else a key shared by two (range, lane) pairs: the first keeps it */
    bld_gua_range *r = &g->ranges[op->ua - 1];
    if (r->pending && !--r->pending && r->closed)
        range_emit(b, op->ua);
}

void bld_gua_emit(bld *b)
{
    bld_gua *g = &b->gua;
    for (size_t i = 0; i < g->n_ranges; i++) /* G3: open, or ops never written */
        if (g->ranges[i].live)
            range_emit(b, (uint32_t)i + 1);
    bld_gua_free(b);
}

void bld_gua_free(bld *b)
{
    bld_gua *g = &b->gua;
    free(g->ranges);
    free(g->spans);
    act_u64map_free(&g->span_of);
    *g = (bld_gua){0};
}
