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
#include <time.h>

#include "internal.h"

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
