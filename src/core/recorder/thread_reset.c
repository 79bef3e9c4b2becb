/*
 * thread_reset.c -- a recording thread's per-spool state begins again when
 * it finds a new spool (a new generation, chunks.c): its string cache and
 * pointer cache name strings of the old spool, and its open ranges were
 * numbered in the old one.
 *
 * Kept apart from strings.c and ranges.c, which write records through
 * chunks.c: chunks.c calls this, and this calls nothing above ring.c.
 */
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

/* The string ids cached by this thread are the old spool's. */
static void reset_strings(act_thread *t)
{
    for (size_t i = 0; i < ACT_STR_CACHE; i++) {
        free(t->strs[i].copy);
        memset(&t->strs[i], 0, sizeof(t->strs[i]));
    }
    memset(t->ptrs, 0, sizeof(t->ptrs));
    memset(t->recent, 0, sizeof(t->recent));
    act_rec_ring_thread_free(t);
    t->next_str = 1;
    t->announced = 0;
}

/* A new spool numbers ranges afresh; ranges still open from the previous
 * one are not in it, so their pops must not be written. */
static void reset_ranges(act_thread *t)
{
    uint32_t d = t->range_depth < ACT_RANGE_STACK ? t->range_depth : ACT_RANGE_STACK;
    for (uint32_t i = 0; i < d; i++)
        t->range_stack[i] = RANGE_MARK_OUTSIDE;
    t->range_seq = 0;
}

void act_rec_thread_reset(act_thread *t)
{
    reset_strings(t);
    reset_ranges(t);
}
