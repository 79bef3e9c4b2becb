/*
 * lanes.c -- lane geometry for the builder: greedy interval partitioning
 * of concurrent device work into sub-lanes (so no two slices on one lane
 * partially overlap) and the nesting check of host lanes.
 */
#include <stdlib.h>

#include "core/vec.h"
#include "timeline.h"

/* Binary min-heap of (key, lane). */
typedef struct act_lanes_item {
    uint64_t key;
    uint32_t lane;
} heap_item;

static void heap_push(heap_item *h, size_t *n, heap_item it)
{
    size_t i = (*n)++;
    while (i && h[(i - 1) / 2].key > it.key) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = it;
}

static heap_item heap_pop(heap_item *h, size_t *n)
{
    heap_item top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1].key < h[c].key)
            c++;
        if (h[c].key >= last.key)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}

size_t act_lanes_partition(const uint64_t *start, const uint64_t *end, size_t n, uint32_t *lane)
{
    /* Items come sorted by start. Busy lanes wait in a heap by their last
     * end; a lane is free again once that end <= the next start. Taking
     * the lowest free lane keeps work on the queue's first lane whenever
     * it can be; never more lanes than the maximum overlap; O(n log n)
     * however much work overlaps. */
    heap_item *busy = malloc((n ? n : 1) * sizeof(*busy));
    heap_item *free_lanes = malloc((n ? n : 1) * sizeof(*free_lanes));
    size_t n_busy = 0, n_free = 0, used = 0;
    if (!busy || !free_lanes) {
        free(busy);
        free(free_lanes);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        while (n_busy && busy[0].key <= start[i]) {
            heap_item it = heap_pop(busy, &n_busy);
            heap_push(free_lanes, &n_free, (heap_item){it.lane, it.lane});
        }
        uint32_t k = n_free ? heap_pop(free_lanes, &n_free).lane : (uint32_t)used++;
        lane[i] = k;
        heap_push(busy, &n_busy, (heap_item){end[i] > start[i] ? end[i] : start[i], k});
    }
    free(busy);
    free(free_lanes);
    return used ? used : 1;
}

uint32_t act_lanes_next(act_lanes *s, uint64_t start, uint64_t end)
{
    /* act_lanes_partition's loop body, with heaps that grow: every lane is
     * in exactly one of them, so neither holds more than `used`. */
    if (act_vec_reserve(s->busy, s->cap_busy, (size_t)s->used + 1, 16) ||
        act_vec_reserve(s->idle, s->cap_idle, (size_t)s->used + 1, 16))
        return UINT32_MAX;
    while (s->n_busy && s->busy[0].key <= start) {
        heap_item it = heap_pop(s->busy, &s->n_busy);
        heap_push(s->idle, &s->n_idle, (heap_item){it.lane, it.lane});
    }
    uint32_t k = s->n_idle ? heap_pop(s->idle, &s->n_idle).lane : s->used++;
    heap_push(s->busy, &s->n_busy, (heap_item){end > start ? end : start, k});
    return k;
}

void act_lanes_free(act_lanes *s)
{
    free(s->busy);
    free(s->idle);
    *s = (act_lanes){0};
}

int act_nest_add(act_nest *s, uint64_t start, uint64_t end)
{
    /* A stack of open slice ends: a slice must end no later than every
     * slice it starts inside. */
    while (s->depth && s->stack[s->depth - 1] <= start)
        s->depth--;
    if (s->depth && end > s->stack[s->depth - 1])
        return 1; /* not pushed: judge later slices against the rest */
    if (act_vec_reserve(s->stack, s->cap, s->depth + 1, 16))
        return -1;
    s->stack[s->depth++] = end;
    return 0;
}

void act_nest_free(act_nest *s)
{
    free(s->stack);
    *s = (act_nest){0};
}

uint64_t act_lanes_nesting_violations(const uint64_t *start, const uint64_t *end, size_t n)
{
    uint64_t bad = 0;
    act_nest s = {0};
    for (size_t i = 0; i < n; i++) {
        int r = act_nest_add(&s, start[i], end[i]);
        if (r < 0)
            break;
        bad += (uint64_t)r;
    }
    act_nest_free(&s);
    return bad;
}
