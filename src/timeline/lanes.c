/*
 * lanes.c -- lane geometry for the builder: greedy interval partitioning
 * of concurrent device work into sub-lanes (so no two slices on one lane
 * partially overlap) and the nesting check of host lanes.
 */
#include <stdlib.h>

#include "timeline.h"

size_t act_lanes_partition(const uint64_t *start, const uint64_t *end, size_t n, uint32_t *lane)
{
    /* ends[k] = end of the last slice placed on lane k. Items come sorted
     * by start, so a lane is free when its last end <= this start; taking
     * the lowest free lane keeps work on the queue's first lane whenever
     * it can be, and never uses more lanes than the maximum overlap. */
    size_t cap = 4, used = 0;
    uint64_t *ends = malloc(cap * sizeof(*ends));
    if (!ends)
        return 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < used && ends[k] > start[i])
            k++;
        if (k == used) {
            if (used == cap) {
                uint64_t *ne = realloc(ends, cap * 2 * sizeof(*ne));
                if (!ne) {
                    free(ends);
                    return 0;
                }
                ends = ne;
                cap *= 2;
            }
            used++;
        }
        ends[k] = end[i] > start[i] ? end[i] : start[i];
        lane[i] = (uint32_t)k;
    }
    free(ends);
    return used ? used : 1;
}

uint64_t act_lanes_nesting_violations(const uint64_t *start, const uint64_t *end, size_t n)
{
    /* A stack of open slice ends: a slice must end no later than every
     * slice it starts inside. */
    uint64_t bad = 0;
    size_t depth = 0, cap = 16;
    uint64_t *stack = malloc(cap * sizeof(*stack));
    if (!stack)
        return 0;
    for (size_t i = 0; i < n; i++) {
        while (depth && stack[depth - 1] <= start[i])
            depth--;
        if (depth && end[i] > stack[depth - 1]) {
            bad++;
            continue; /* not pushed: judge later slices against the rest */
        }
        if (depth == cap) {
            uint64_t *ns = realloc(stack, cap * 2 * sizeof(*ns));
            if (!ns)
                break;
            stack = ns;
            cap *= 2;
        }
        stack[depth++] = end[i];
    }
    free(stack);
    return bad;
}
