/*
 * fast_clock.c -- the recorder's per-thread fast timeline clock (the
 * inline reading is in recorder_int.h; this is its slow path).
 */
#include <stdint.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

uint64_t act_rec_thread_clock_slow(act_thread *t)
{
    uint64_t tsc = 0, ns, m = 0;
#if defined(__x86_64__)
    /* Acquire: the calibrating thread wrote the origin pair before it
     * published usable = 1, and act_tsc_refine reads that pair. */
    int usable = atomic_load_explicit(&act_tsc.usable, memory_order_acquire);
    if (ACT_UNLIKELY(usable < 0))
        usable = act_tsc_calibrate();
    if (usable == 1) {
        act_tsc_pair(&tsc, &ns);
        m = act_tsc_refine(tsc, ns);
    } else
#endif
        ns = act_clock_now();
    if (ns < t->last_ns)
        ns = t->last_ns;
    t->anc_tsc = tsc;
    t->anc_ns = ns;
    t->anc_mult = m;
    t->last_ns = ns;
    return ns;
}

uint64_t act_rec_now(void)
{
    act_thread *t = act_rec_tls;
    return t ? act_rec_thread_clock(t) : act_clock_now();
}
