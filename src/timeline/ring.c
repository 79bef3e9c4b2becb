/*
 * ring.c -- what the builder does differently for a ring spool (flight
 * recorder; core/record.h R1-R6): the records it has are the most recent
 * ones, so a thread's first kept segment tells where its push numbering
 * stands and which ranges were open (R4). Those ranges start at the kept
 * window's start and are flagged; launches, device ops and ranges that
 * were overwritten leave flows and External ids unresolved, which is
 * counted apart from the errors a whole spool would show.
 */
#include <string.h>

#include "acceltrace.h"
#include "builder_int.h"
#include "core/vec.h"

static int is_ring(const act_spool *sp)
{
    return (sp->hdr.flags & ACT_SPOOL_F_RING) != 0;
}

/* Open range `o` of thread `t` as a range that starts with the window. */
static void pre_range(bld *b, bld_proc *p, bld_thread *t, uint32_t serial,
                      const act_rec_ring_open *o)
{
    static const char unnamed[] = "(began before the ring window)";
    if (act_vec_reserve(p->ranges, p->cap_ranges, p->n_ranges - p->ranges_base + 1, 256) ||
        act_vec_reserve(t->stack, t->cap, t->depth + 1, 16)) {
        b->tl->err = ACT_E_NOMEM;
        return;
    }
    bld_range *r = BLD_RANGE(p, p->n_ranges);
    memset(r, 0, sizeof(*r));
    r->start = p->sp->first_ts;
    r->name = o->name && p->iter ? act_spool_iter_str(p->iter, serial, o->name)
                                 : (act_str){unnamed, sizeof(unnamed) - 1};
    r->tid = t->tid;
    r->ext_id = ++b->next_ext;
    r->before_window = 1;
    t->stack[t->depth++] = (uint32_t)p->n_ranges;
    t->pre_seq[t->n_pre] = o->seq;
    t->pre_idx[t->n_pre++] = (uint32_t)p->n_ranges;
    p->n_ranges++;
    b->tl->counts.ranges_before_window++;
}

void bld_ring_thread(bld *b, bld_proc *p, bld_thread *t, const act_sp_rec *rec)
{
    size_t size = (size_t)rec->r->size8 * 8;
    if (!t || t->ring_based || !is_ring(p->sp) || size < sizeof(act_rec_thread_ring))
        return;
    const act_rec_thread_ring *r = (const act_rec_thread_ring *)rec->r;
    t->ring_based = 1;
    if (t->pushes || t->depth)
        return; /* records of this thread came first: nothing was lost */
    t->seq0 = r->range_seq;
    size_t n = (size - sizeof(*r)) / sizeof(act_rec_ring_open);
    if (n > r->n_open)
        n = r->n_open;
    if (n > ACT_RING_OPEN_MAX)
        n = ACT_RING_OPEN_MAX;
    const act_rec_ring_open *open = (const act_rec_ring_open *)(r + 1);
    for (size_t i = 0; i < n && !b->tl->err; i++)
        if (open[i].seq && open[i].seq <= t->seq0)
            pre_range(b, p, t, rec->serial, &open[i]);
}

uint64_t bld_ring_ext(bld *b, const bld_proc *p, const bld_thread *t, uint64_t seq)
{
    for (uint32_t i = 0; t && i < t->n_pre; i++)
        if (t->pre_seq[i] == seq)
            return BLD_RANGE(p, t->pre_idx[i])->ext_id;
    if (is_ring(p->sp))
        b->tl->counts.ring_external_dropped++;
    else
        b->tl->counts.unresolved_external++;
    return 0;
}

void bld_ring_unlinked(bld *b, const bld_proc *p)
{
    if (is_ring(p->sp))
        b->tl->counts.ring_flows_dropped++;
    else
        b->tl->counts.unlinked_device_ops++;
}

void bld_ring_counts(act_timeline *tl, const act_spool *sp)
{
    act_tl_counts *c = &tl->counts;
    if (!is_ring(sp))
        return;
    if (sp->hdr.ring_size > c->ring_size)
        c->ring_size = sp->hdr.ring_size;
    c->ring_chunks_overwritten += sp->hdr.chunks_overwritten;
    c->ring_records_overwritten += sp->hdr.records_overwritten;
    c->ring_bytes_overwritten += sp->hdr.bytes_overwritten;
}
