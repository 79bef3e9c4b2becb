/*
 * evtab.c -- the app's references to its events, for the leak report,
 * without a lock or an allocation, and without a cold cache line per event.
 *
 * Events are the one object a program makes per command (every enqueue
 * that asks for one), so they do not go through objects.c's locked table
 * of malloc'ed nodes: slots of (handle, app references) are updated with
 * atomics. Slots come four to a 64-byte line:
 *
 *   - each thread has a line of its own (a few lines shared round-robin
 *     by the threads, in the order they first made an event): an event is
 *     put there when a slot is free. A program that releases its event at
 *     once (clpeak's latency test, our bench) so finds and frees it in a
 *     line it touched one call ago, never in a random one;
 *   - the others go to one of two hashed lines of a fixed table (the
 *     first with a free slot: two-choice, so lines rarely fill);
 *   - when none has room the event goes to objects.c's table (nothing is
 *     lost, it is only slower).
 *
 * A lookup reads the calling thread's line, then the two hashed lines,
 * then the other threads' lines (an event released by a thread other
 * than the one that made it); a slot is freed (NULL) when its count
 * reaches 0, as a lookup reads whole lines and never stops at an empty
 * slot, so there are no tombstones. A slot is claimed with a CAS on NULL
 * and keeps its handle until the app's last release: an entry never
 * moves, so a lookup from any thread finds it wherever it was put. Only
 * the app can name an event before its create call returned to it, and
 * only while it holds a reference, so an insert never races a retain or
 * release of the same handle and a slot is never freed under a lookup.
 *
 * Events are tracked only while clReleaseEvent is intercepted: a release
 * we do not see would leave a false leak behind.
 */
#include <string.h>

#include "cl_source.h"

#define ACT_CL_EV_WAYS  4u    /* slots per line */
#define ACT_CL_EV_LINES 2048u /* hashed lines (power of two); 128 KiB, touched as used */
#define ACT_CL_EV_OWN   32u   /* threads' own lines (2 KiB) */

typedef struct ev_slot {
    const void *_Atomic h; /* NULL: free */
    _Atomic uint32_t refs;
    uint32_t pad;
} ev_slot;

typedef struct ev_line {
    ev_slot s[ACT_CL_EV_WAYS];
} __attribute__((aligned(64))) ev_line;

static ev_line act_cl_ev_table[ACT_CL_EV_LINES];
static ev_line act_cl_ev_own[ACT_CL_EV_OWN];
/* Threads given a line so far: lines [0, min(this, OWN)) may hold events. */
static _Atomic uint32_t act_cl_ev_threads;
/* This thread's line + 1 (0: not given one yet). */
static __thread uint32_t act_cl_ev_mine __attribute__((tls_model("initial-exec")));

static inline ev_line *ev_own_line(void)
{
    uint32_t m = act_cl_ev_mine;
    if (ACT_UNLIKELY(!m)) {
        m = atomic_fetch_add_explicit(&act_cl_ev_threads, 1, memory_order_relaxed) % ACT_CL_EV_OWN +
            1;
        act_cl_ev_mine = m;
    }
    return &act_cl_ev_own[m - 1];
}

static inline ev_line *ev_hashed(uint64_t x, int which)
{
    return &act_cl_ev_table[(uint32_t)(which ? x >> 32 : x) & (ACT_CL_EV_LINES - 1)];
}

/* The slot of line `l` holding `h`, or NULL. */
static inline ev_slot *ev_in(ev_line *l, const void *h)
{
    for (uint32_t i = 0; i < ACT_CL_EV_WAYS; i++)
        if (atomic_load_explicit(&l->s[i].h, memory_order_acquire) == h)
            return &l->s[i];
    return NULL;
}

/* ev_find past the thread's own line: the hashed lines, then the other
 * threads' lines. */
static __attribute__((noinline)) ev_slot *ev_find_elsewhere(const void *h, const ev_line *own)
{
    uint64_t x = act_cl_ptr_mix(h);
    ev_slot *s;
    if ((s = ev_in(ev_hashed(x, 0), h)) || (s = ev_in(ev_hashed(x, 1), h)))
        return s;
    uint32_t n = atomic_load_explicit(&act_cl_ev_threads, memory_order_relaxed);
    n = n < ACT_CL_EV_OWN ? n : ACT_CL_EV_OWN;
    for (uint32_t i = 0; i < n; i++)
        if (&act_cl_ev_own[i] != own && (s = ev_in(&act_cl_ev_own[i], h)))
            return s;
    return NULL;
}

/* The slot holding `h`, or NULL. */
static inline __attribute__((always_inline)) ev_slot *ev_find(const void *h)
{
    ev_line *own = ev_own_line();
    ev_slot *s = ev_in(own, h);
    return ACT_LIKELY(s != NULL) ? s : ev_find_elsewhere(h, own);
}

/* Claim a free slot of `l` for `h` with one app reference; 0 when none.
 * A slot still naming `h` is a reused handle whose release went unseen:
 * it starts again at one reference. */
static int ev_put(ev_line *l, const void *h)
{
    for (uint32_t i = 0; i < ACT_CL_EV_WAYS; i++) {
        ev_slot *s = &l->s[i];
        const void *cur = atomic_load_explicit(&s->h, memory_order_relaxed);
        if (cur == NULL && atomic_compare_exchange_strong_explicit(
                               &s->h, &cur, h, memory_order_relaxed, memory_order_relaxed))
            cur = h; /* claimed: a loser of the race must not write here */
        if (cur == h) {
            atomic_store_explicit(&s->refs, 1, memory_order_relaxed);
            return 1;
        }
    }
    return 0;
}

static int ev_insert(const void *h)
{
    if (ev_put(ev_own_line(), h))
        return 1;
    uint64_t x = act_cl_ptr_mix(h);
    return ev_put(ev_hashed(x, 0), h) || ev_put(ev_hashed(x, 1), h);
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
    /* Never below 0: a release of more than the app held fails in the
     * runtime and changes nothing here. */
    uint32_t r = atomic_load_explicit(&s->refs, memory_order_relaxed);
    while (r && !atomic_compare_exchange_weak_explicit(&s->refs, &r, r - 1, memory_order_relaxed,
                                                       memory_order_relaxed))
        ;
    if (r == 1) /* the app's last reference: the slot is free, the handle may be reused */
        atomic_store_explicit(&s->h, NULL, memory_order_release);
}

static uint64_t ev_live(const ev_line *l, uint32_t n)
{
    uint64_t live = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < ACT_CL_EV_WAYS; j++)
            live += atomic_load_explicit(&l[i].s[j].h, memory_order_acquire) &&
                    atomic_load_explicit(&l[i].s[j].refs, memory_order_relaxed) > 0;
    return live;
}

uint64_t act_cl_events_live(void)
{
    return ev_live(act_cl_ev_table, ACT_CL_EV_LINES) + ev_live(act_cl_ev_own, ACT_CL_EV_OWN);
}

void act_cl_events_forget(void)
{
    memset(act_cl_ev_table, 0, sizeof act_cl_ev_table);
    memset(act_cl_ev_own, 0, sizeof act_cl_ev_own);
}
