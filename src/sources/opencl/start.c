/*
 * start.c -- what every OpenCL wrapper calls before it records: the
 * source's lazy start (act_init, once) and the count of calls made
 * outside the capture window. Apart from dispatch.c, which fills the
 * tables with the wrappers: the wrappers call down into this file, and
 * dispatch.c refers to them, with no loop between the two.
 */
#include "cl_source.h"
#include "init/init.h"

_Atomic int act_cl_started;

/*
 * Lazy start. A thread that re-enters (act_init calling OpenCL, which it
 * must not, or a callback fired inside start-up) passes through instead of
 * deadlocking. act_init() itself is idempotent and thread-safe.
 */
void act_cl_start_slow(void)
{
    static _Thread_local int busy;
    if (busy)
        return;
    busy = 1;
    (void)act_init(); /* its "apply hook groups" stage arms our wrappers */
    busy = 0;
    atomic_store_explicit(&act_cl_started, 1, memory_order_release);
}

void act_cl_count_outside(int what)
{
    act_capture_count_outside(ACT_REC_API);
    if (what == ACT_CL_CMD)
        act_capture_count_outside(ACT_REC_DEVICE_OP);
}
