/*
 * evtab.c -- the app's references to its events, for the leak report,
 * without a lock or an allocation.
 *
 * Events are the one object a program makes per command (every enqueue
 * that asks for one), so they do not go through objects.c's locked table
 * of malloc'ed nodes: a fixed open-addressing table of (handle, app
 * references) is updated with atomics. A handle is claimed with a CAS on
 * an empty or freed slot within ACT_CL_EV_PROBE of its hash; when none is
 * free the event goes to objects.c's table instead (nothing is lost, it
 * is only slower). Released to 0, the slot is freed (a tombstone, reused
 * by later inserts). Only the app can name an event before its create
 * call returned to it, so an insert never races a retain or release of
 * the same handle.
 *
 * Events are tracked only while clReleaseEvent is intercepted: a release
 * we do not see would leave a false leak behind.
 */
#include <string.h>

#include "cl_source.h"

#define ACT_CL_EV_SLOTS 8192u /* power of two; 128 KiB, touched as used */
#define ACT_CL_EV_PROBE 32u
#define ACT_CL_EV_FREED ((const void *)1)

typedef struct ev_slot {
    const void *_Atomic h; /* NULL: never used; ACT_CL_EV_FREED: released */
    _Atomic uint32_t refs;
    uint32_t pad;
} ev_slot;

static ev_slot act_cl_evs[ACT_CL_EV_SLOTS];

static uint32_t ev_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    return (uint32_t)x & (ACT_CL_EV_SLOTS - 1);
}

/* The slot holding `h`, or NULL. */
static inline ev_slot *ev_find(const void *h)
{
    uint32_t i = ev_hash(h);
    for (uint32_t n = 0; n < ACT_CL_EV_PROBE; n++, i = (i + 1) & (ACT_CL_EV_SLOTS - 1)) {
        const void *cur = atomic_load_explicit(&act_cl_evs[i].h, memory_order_acquire);
        if (cur == h)
            return &act_cl_evs[i];
        if (!cur)
            return NULL;
    }
    return NULL;
}

/* Claim a slot for `h` with one app reference; 0 when none is free. */
static int ev_insert(const void *h)
{
    uint32_t i = ev_hash(h);
    for (uint32_t n = 0; n < ACT_CL_EV_PROBE; n++, i = (i + 1) & (ACT_CL_EV_SLOTS - 1)) {
        ev_slot *s = &act_cl_evs[i];
        const void *cur = atomic_load_explicit(&s->h, memory_order_relaxed);
        while (cur == NULL || cur == ACT_CL_EV_FREED) {
            if (atomic_compare_exchange_weak_explicit(&s->h, &cur, h, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                /* After the claim: a loser of the race must not write
                 * here. Nobody else can name `h` yet. */
                atomic_store_explicit(&s->refs, 1, memory_order_relaxed);
                return 1;
            }
        }
        if (cur == h) { /* reused handle: its release went unseen */
            atomic_store_explicit(&s->refs, 1, memory_order_relaxed);
            return 1;
        }
    }
    return 0;
}

/* The leak report is registered once; after that, a load of this flag. */
static _Atomic int act_cl_evtab_used;

void act_cl_event_created(cl_event e, cl_context ctx)
{
    if (!e || !atomic_load_explicit(&act_cl_armed_clReleaseEvent, memory_order_relaxed) ||
        !act_capture_attached())
        return;
    if (ACT_UNLIKELY(!atomic_load_explicit(&act_cl_evtab_used, memory_order_relaxed))) {
        act_cl_obj_use();
        atomic_store_explicit(&act_cl_evtab_used, 1, memory_order_relaxed);
    }
    if (!ev_insert(e))
        act_cl_obj_created(ACT_CL_OBJ_EVENT, e, ctx, NULL, 0);
}

void act_cl_event_retained(const void *e)
{
    ev_slot *s = ev_find(e);
    if (!s) {
        act_cl_obj_retained(e);
        return;
    }
    uint32_t r = atomic_load_explicit(&s->refs, memory_order_relaxed);
    while (r && !atomic_compare_exchange_weak_explicit(&s->refs, &r, r + 1, memory_order_relaxed,
                                                       memory_order_relaxed))
        ;
}

void act_cl_event_released(const void *e)
{
    ev_slot *s = ev_find(e);
    if (!s) {
        act_cl_obj_released(e);
        return;
    }
    /* One atomic op: the app held a reference if it could name the event. */
    uint32_t r = atomic_fetch_sub_explicit(&s->refs, 1, memory_order_relaxed);
    if (r == 1) /* the app's last reference: the handle may be reused */
        atomic_store_explicit(&s->h, ACT_CL_EV_FREED, memory_order_release);
    else if (ACT_UNLIKELY(r == 0)) /* released more than held (the call fails) */
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

uint64_t act_cl_events_live(void)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < ACT_CL_EV_SLOTS; i++) {
        const void *h = atomic_load_explicit(&act_cl_evs[i].h, memory_order_acquire);
        n += h && h != ACT_CL_EV_FREED && atomic_load(&act_cl_evs[i].refs) > 0;
    }
    return n;
}

void act_cl_events_forget(void)
{
    memset(act_cl_evs, 0, sizeof act_cl_evs);
}
