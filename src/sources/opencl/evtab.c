/*
 * evtab.c -- the app's references to its events, for the leak report,
 * without a lock or an allocation, and on the usual path without a cold
 * cache line or a locked instruction per event.
 *
 * Events are the one object a program makes per command (every enqueue
 * that asks for one), so they do not go through objects.c's locked table
 * of malloc'ed nodes: slots of (handle, app references) are updated with
 * atomics. Slots come four to a 64-byte line:
 *
 *   - the first ACT_CL_EV_OWN threads that make an event each own a line
 *     (handed back when the thread exits; its events stay findable there).
 *     An event goes there when a slot is free: a program that releases its
 *     event at once (clpeak's latency test, our bench) finds and frees it in
 *     a line it touched one call ago. Only the owner fills a free slot of
 *     its line, so it claims one with plain stores;
 *   - the others go to one of two hashed lines of a fixed table (the first
 *     with a free slot, claimed with a CAS: two-choice, so lines rarely
 *     fill);
 *   - when none has room the event goes to objects.c's table (nothing is
 *     lost, it is only slower).
 *
 * A lookup reads the calling thread's line, then the two hashed lines,
 * then the other owned lines (an event released by a thread other than the
 * one that made it). A lookup reads whole lines and never stops at an empty
 * slot, so a slot whose count reaches 0 is simply emptied (no tombstones).
 * An entry never moves, so any thread finds it wherever it was put.
 *
 * Only the app can name an event, and only while it holds a reference
 * (OpenCL's rule): an insert never races a lookup of the same handle, a
 * slot is never emptied under a lookup, and a release that finds one
 * reference is the app's last, which no legal call races, so it empties
 * the slot with plain stores. Other counts change with a CAS.
 *
 * Events are tracked only while clReleaseEvent is intercepted: a release
 * we do not see would leave a false leak behind.
 */
#include <pthread.h>
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
static _Atomic uint32_t act_cl_ev_owner[ACT_CL_EV_OWN]; /* 1: a live thread owns the line */
/* Lines [0, this) have been owned: only they may hold events. */
static _Atomic uint32_t act_cl_ev_owned_max;
/* This thread's line + 1; 0: not asked for yet; UINT32_MAX: none free. */
static __thread uint32_t act_cl_ev_mine __attribute__((tls_model("initial-exec")));
static pthread_key_t act_cl_ev_key;
static pthread_once_t act_cl_ev_once = PTHREAD_ONCE_INIT;

/* The thread exits: its line may go to another thread (the events in it
 * stay until released). */
static void ev_line_exit(void *arg)
{
    uint32_t i = (uint32_t)(uintptr_t)arg - 1;
    act_cl_ev_mine = UINT32_MAX;
    atomic_store_explicit(&act_cl_ev_owner[i], 0, memory_order_release);
}

static void ev_key_make(void)
{
    (void)pthread_key_create(&act_cl_ev_key, ev_line_exit);
}

static __attribute__((noinline)) ev_line *ev_own_claim(void)
{
    act_cl_ev_mine = UINT32_MAX;
    pthread_once(&act_cl_ev_once, ev_key_make);
    for (uint32_t i = 0; i < ACT_CL_EV_OWN; i++) {
        uint32_t free_ = 0;
        if (atomic_load_explicit(&act_cl_ev_owner[i], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&act_cl_ev_owner[i], &free_, 1,
                                                    memory_order_acquire, memory_order_relaxed)) {
            uint32_t m = atomic_load_explicit(&act_cl_ev_owned_max, memory_order_relaxed);
            while (m < i + 1 && !atomic_compare_exchange_weak_explicit(&act_cl_ev_owned_max, &m,
                                                                       i + 1, memory_order_relaxed,
                                                                       memory_order_relaxed))
                ;
            if (pthread_setspecific(act_cl_ev_key, (void *)(uintptr_t)(i + 1)) != 0) {
                atomic_store_explicit(&act_cl_ev_owner[i], 0, memory_order_release);
                return NULL; /* no exit hook: the line would never come back */
            }
            act_cl_ev_mine = i + 1;
            return &act_cl_ev_own[i];
        }
    }
    return NULL; /* all owned: this thread uses the hashed lines */
}

/* The calling thread's own line, or NULL when it has none. */
static inline ev_line *ev_own_line(void)
{
    uint32_t m = act_cl_ev_mine;
    if (ACT_LIKELY(m - 1 < ACT_CL_EV_OWN))
        return &act_cl_ev_own[m - 1];
    return m ? NULL : ev_own_claim();
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
    uint32_t n = atomic_load_explicit(&act_cl_ev_owned_max, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++)
        if (&act_cl_ev_own[i] != own && (s = ev_in(&act_cl_ev_own[i], h)))
            return s;
    return NULL;
}

/* The slot holding `h`, or NULL. */
static inline __attribute__((always_inline)) ev_slot *ev_find(const void *h)
{
    ev_line *own = ev_own_line();
    ev_slot *s = own ? ev_in(own, h) : NULL;
    return ACT_LIKELY(s != NULL) ? s : ev_find_elsewhere(h, own);
}

/* Claim a free slot of the thread's own line: nobody else fills one. A
 * slot still naming `h` is a reused handle whose release went unseen: it
 * starts again at one reference. */
static inline int ev_put_own(ev_line *l, const void *h)
{
    for (uint32_t i = 0; i < ACT_CL_EV_WAYS; i++) {
        ev_slot *s = &l->s[i];
        const void *cur = atomic_load_explicit(&s->h, memory_order_acquire);
        if (cur == NULL || cur == h) {
            atomic_store_explicit(&s->refs, 1, memory_order_relaxed);
            atomic_store_explicit(&s->h, h, memory_order_release);
            return 1;
        }
    }
    return 0;
}

/* Claim a free slot of hashed line `l` for `h` with one app reference; 0
 * when none. A slot still naming `h`: as in ev_put_own. */
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
    ev_line *own = ev_own_line();
    if (own && ev_put_own(own, h))
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
        act_cl_obj_events_table(act_cl_events_live, act_cl_events_forget);
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
    /* One reference: the app's last (see the top). Never below 0: a
     * release of more than the app held fails in the runtime and changes
     * nothing here. */
    uint32_t r = atomic_load_explicit(&s->refs, memory_order_relaxed);
    while (r > 1 && !atomic_compare_exchange_weak_explicit(
                        &s->refs, &r, r - 1, memory_order_relaxed, memory_order_relaxed))
        ;
    if (r == 1) { /* the app's last: the slot is free, the handle may be reused */
        atomic_store_explicit(&s->refs, 0, memory_order_relaxed);
        atomic_store_explicit(&s->h, NULL, memory_order_release);
    }
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

/* A forked child: only the calling thread lives on, and keeps its line. */
void act_cl_events_forget(void)
{
    memset(act_cl_ev_table, 0, sizeof act_cl_ev_table);
    memset(act_cl_ev_own, 0, sizeof act_cl_ev_own);
    uint32_t m = act_cl_ev_mine;
    for (uint32_t i = 0; i < ACT_CL_EV_OWN; i++)
        atomic_store(&act_cl_ev_owner[i], m == i + 1);
}
