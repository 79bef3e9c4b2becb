/*
 * ranges.c -- the per-thread range stack (External ids for launches inside
 * a range), process-unique range ids, and the range fast path.
 */
#include <stdint.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

static _Atomic uint64_t next_range_id = 1;

uint64_t act_range_id_next(void)
{
    return atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed);
}

int act_range_id_issued(uint64_t id)
{
    return id != 0 && id < atomic_load_explicit(&next_range_id, memory_order_relaxed);
}

void act_recorder_count_invalid_range_end(void)
{
    act_spool_header *h = act_rec_hdr_get();
    if (h)
        atomic_fetch_add_explicit((_Atomic uint64_t *)&h->invalid_range_ends, 1,
                                  memory_order_relaxed);
}

/* ---- ranges ----------------------------------------------------------- */

uint64_t act_range_current_ext(void)
{
    const act_thread *t = act_rec_tls;
    return t ? act_rec_range_ext(t) : 0;
}

/* Called by act_range_push after its record was written (or not); `name`
 * is the string id the record used. */
void act_recorder_range_pushed(int how, uint32_t name)
{
    act_thread *t = act_rec_thread_get();
    if (ACT_UNLIKELY(!t))
        return;
    uint32_t mark = how == ACT_RANGE_RECORDED  ? ++t->range_seq
                    : how == ACT_RANGE_DROPPED ? RANGE_MARK_DROPPED
                                               : RANGE_MARK_OUTSIDE;
    if (t->range_depth < ACT_RANGE_STACK)
        t->range_stack[t->range_depth] = (uint64_t)name << 32 | mark;
    t->range_depth++;
}

/* Returns enum act_range_how of the popped range's push;
 * ACT_RANGE_UNBALANCED (counted) when nothing was open. */
int act_recorder_range_popped(void)
{
    act_thread *t = act_rec_tls;
    if (!t || t->range_depth == 0) {
        act_spool_header *h = act_recorder_header();
        if (h)
            atomic_fetch_add((_Atomic uint64_t *)&h->unbalanced_pops, 1);
        return ACT_RANGE_UNBALANCED;
    }
    uint32_t d = --t->range_depth;
    if (d >= ACT_RANGE_STACK) /* too deep to track: as the window is now */
        return atomic_load_explicit(&act__recording, memory_order_relaxed) ? ACT_RANGE_RECORDED
                                                                           : ACT_RANGE_OUTSIDE;
    uint32_t mark = (uint32_t)t->range_stack[d];
    return mark == RANGE_MARK_OUTSIDE   ? ACT_RANGE_OUTSIDE
           : mark == RANGE_MARK_DROPPED ? ACT_RANGE_DROPPED
                                        : ACT_RANGE_RECORDED;
}

int act_recorder_range_top(void)
{
    act_thread *t = act_rec_tls;
    if (!t || t->range_depth == 0)
        return ACT_RANGE_UNBALANCED;
    uint32_t d = t->range_depth - 1;
    if (d >= ACT_RANGE_STACK)
        return ACT_RANGE_OUTSIDE; /* decided by act_recorder_range_popped */
    uint32_t mark = (uint32_t)t->range_stack[d];
    return mark == RANGE_MARK_OUTSIDE   ? ACT_RANGE_OUTSIDE
           : mark == RANGE_MARK_DROPPED ? ACT_RANGE_DROPPED
                                        : ACT_RANGE_RECORDED;
}

/* ---- range fast path ---------------------------------------------------
 *
 * act_range_push/pop try these first while recording. The common case --
 * thread state present, the name a literal seen before, the range recorded,
 * room in the chunk -- writes the 16-byte record and publishes it with no
 * call, no hashing and no string read. Anything else returns
 * ACT_RANGE_SLOW having changed nothing, and annotate.c takes the general
 * path (intern, reserve, commit, capture window, drops), whose interning
 * (act_str_intern_literal) fills the pointer cache.
 *
 * NOTE for anything that gates recording (capture window, pause): the fast
 * path does not go through act_rec_reserve. Gate it where it is gated
 * already: act__recording (checked by the callers) or a thread's `cap`
 * (0 sends every record of that thread to the slow path, as close does).
 */

static inline void put_ts(act_thread *t, uint32_t pos, uint16_t kind, uint32_t aux)
{
    act_rec_ts *r = (act_rec_ts *)(t->data + pos);
    r->h.kind = kind;
    r->h.size8 = sizeof(*r) / 8;
    r->h.aux = aux;
    r->ts = act_rec_thread_clock(t);
    t->pos = pos + (uint32_t)sizeof(*r);
    act_rec_publish(t);
}

int act_recorder_range_push_fast(const char *name)
{
    act_thread *t = act_rec_tls;
    if (ACT_UNLIKELY(t == NULL || name == NULL))
        return ACT_RANGE_SLOW;
    const act_ptr_slot *ps = act_rec_ptr_find(t, name);
    uint32_t pos = t->pos;
    if (ACT_UNLIKELY(!ps || pos + sizeof(act_rec_ts) >
                                atomic_load_explicit(&t->cap, memory_order_relaxed)))
        return ACT_RANGE_SLOW;
    put_ts(t, pos, ACT_REC_RANGE_PUSH, ps->id);
    uint32_t seq = ++t->range_seq;
    if (t->range_depth < ACT_RANGE_STACK)
        t->range_stack[t->range_depth] = (uint64_t)ps->id << 32 | seq;
    t->range_depth++;
    return ACT_OK;
}

int act_recorder_range_pop_fast(void)
{
    act_thread *t = act_rec_tls;
    if (ACT_UNLIKELY(t == NULL))
        return ACT_RANGE_SLOW;
    uint32_t d = t->range_depth, pos = t->pos;
    if (ACT_UNLIKELY(d == 0 || d > ACT_RANGE_STACK ||
                     pos + sizeof(act_rec_ts) >
                         atomic_load_explicit(&t->cap, memory_order_relaxed)))
        return ACT_RANGE_SLOW;
    uint32_t mark = (uint32_t)t->range_stack[d - 1];
    if (ACT_UNLIKELY(mark == RANGE_MARK_OUTSIDE || mark == RANGE_MARK_DROPPED))
        return ACT_RANGE_SLOW;
    t->range_depth = d - 1;
    put_ts(t, pos, ACT_REC_RANGE_POP, 0);
    return ACT_OK;
}
