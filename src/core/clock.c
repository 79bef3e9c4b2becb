/*
 * clock.c -- the timeline clock and its relation to other clocks.
 *
 * The timeline is CLOCK_MONOTONIC_RAW nanoseconds (act_clock_now, inline in
 * internal.h) because that is what PoCL stamps its profiling events with,
 * and it never jumps. Vendors that stamp CLOCK_REALTIME (CUPTI by default,
 * mspti always) are mapped with an offset measured here: the tightest of
 * several bracketed reads, with half the bracket as the error bound.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "core/internal.h"

uint64_t act_clock_realtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t act_clock_realtime_offset(int64_t *error_ns)
{
    int64_t best_offset = 0, best_width = INT64_MAX;
    for (int i = 0; i < 7; i++) {
        uint64_t a = act_clock_now();
        uint64_t r = act_clock_realtime();
        uint64_t b = act_clock_now();
        int64_t width = (int64_t)(b - a);
        if (width < best_width) {
            best_width = width;
            best_offset = (int64_t)(a + (b - a) / 2) - (int64_t)r;
        }
    }
    if (error_ns)
        *error_ns = best_width / 2 + 1;
    return best_offset;
}

/* ---- fast clock: TSC mapped onto CLOCK_MONOTONIC_RAW --------------------
 *
 * rdtsc costs about half of clock_gettime(CLOCK_MONOTONIC_RAW) on our VMs
 * (BENCHMARKS.md "Figures behind design comments").
 * When the kernel's clocksource is the TSC and the TSC is invariant,
 * CLOCK_MONOTONIC_RAW is a linear function of the TSC, so the recorder's
 * hot path can read the TSC and map it with a multiply and a shift onto
 * the same nanoseconds (records stay on the timeline clock; the spool's
 * clock_kind stays ACT_CLOCK_MONOTONIC_RAW and no reader converts).
 *
 * The rate is measured here: a first estimate over ~1 ms when the first
 * thread reads the fast clock, refined each time a thread re-anchors (every ACT_TSC_REANCHOR
 * ticks of that thread, see recorder/fast_clock.c) from the origin pair to the new
 * pair, so its error shrinks as 1/elapsed. Each pair is the tightest of a
 * few rdtsc/clock_gettime/rdtsc brackets.
 */
#if defined(__x86_64__)
act_tsc_cal act_tsc = {.usable = ACT_TSC_UNKNOWN};

void act_tsc_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    *tsc = *ns = 0; /* always set below (the first bracket is the best so far) */
    for (int i = 0; i < 5; i++) {
        uint64_t a = __rdtsc();
        uint64_t n = act_clock_now();
        uint64_t b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
}

static int tsc_usable(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
        return 0; /* no invariant TSC */
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    char name[32] = "";
    if (f) {
        if (!fgets(name, sizeof(name), f))
            name[0] = '\0';
        fclose(f);
    }
    return strcmp(name, "tsc\n") == 0;
}

uint64_t act_tsc_refine(uint64_t tsc, uint64_t ns)
{
    uint64_t dt = tsc - act_tsc.tsc0, dn = ns - act_tsc.ns0;
    if (tsc > act_tsc.tsc0 && ns > act_tsc.ns0 && dt > (1ull << 22)) {
        /* 128-bit quotient: (dn << 32) / dt. */
        uint64_t m = (uint64_t)(((unsigned __int128)dn << 32) / dt);
        atomic_store_explicit(&act_tsc.mult, m, memory_order_relaxed);
        return m;
    }
    return atomic_load_explicit(&act_tsc.mult, memory_order_relaxed);
}

/* Once per process, by the first thread that needs the fast clock: a
 * program that records no annotation (an OpenCL or CUDA program, whose
 * sources read act_clock_now) never pays the ~1-2 ms spin. Threads that
 * come while another calibrates are not held up: they read clock_gettime
 * until it is done (no pthread_once, which would also leave a child forked
 * mid-calibration waiting forever; act_tsc_atfork_child reopens it). */
int act_tsc_calibrate(void)
{
    int state = ACT_TSC_UNKNOWN;
    if (!atomic_compare_exchange_strong(&act_tsc.usable, &state, ACT_TSC_CALIBRATING))
        return state == 1;
    int ok = tsc_usable();
    if (ok) {
        act_tsc_pair(&act_tsc.tsc0, &act_tsc.ns0);
        uint64_t t = 0, n = 0; /* set by act_tsc_pair; -O3 cannot tell */
        /* At least 1 ms, and until act_tsc_refine() accepts the interval
         * (> 2^22 ticks, ~1.7 ms at 2.5 GHz): with a rate of 0 every
         * reading until the first refine stood still at its anchor (ranges
         * with equal starts and no duration). Bounded by 100 ms. */
        do
            act_tsc_pair(&t, &n);
        while (n - act_tsc.ns0 < 1000000 ||
               (t - act_tsc.tsc0 <= (1ull << 22) && n - act_tsc.ns0 < 100000000));
        ok = act_tsc_refine(t, n) != 0;
    }
    atomic_store(&act_tsc.usable, ok);
    return ok;
}

void act_tsc_atfork_child(void)
{
    int state = ACT_TSC_CALIBRATING;
    atomic_compare_exchange_strong(&act_tsc.usable, &state, ACT_TSC_UNKNOWN);
}
#else
act_tsc_cal act_tsc = {.usable = 0};
int act_tsc_calibrate(void)
{
    return 0;
}
void act_tsc_atfork_child(void)
{
}
#endif
