/*
 * timeline.c -- storage for the built timeline (timeline.h): growing event
 * and arg arrays, an arena for strings the builder composes, error lines,
 * category names, and freeing it all.
 */
#include "timeline.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "core/source_traits.h"
#include "core/vec.h"

struct act_arena_block {
    act_arena_block *next;
    size_t used, cap;
    char data[];
};

static const char *const cat_names[ACT_CAT_MAX] = {
    [ACT_CAT_NONE] = "",
    [ACT_CAT_CPU_OP] = "cpu_op",
    [ACT_CAT_USER_ANNOTATION] = "user_annotation",
    [ACT_CAT_OPENCL_RUNTIME] = "opencl_runtime",
    [ACT_CAT_CUDA_RUNTIME] = "cuda_runtime",
    [ACT_CAT_PRIVATEUSE1_RUNTIME] = "privateuse1_runtime",
    [ACT_CAT_RUNTIME] = "runtime",
    [ACT_CAT_KERNEL] = "kernel",
    [ACT_CAT_GPU_MEMCPY] = "gpu_memcpy",
    [ACT_CAT_GPU_MEMSET] = "gpu_memset",
    [ACT_CAT_GPU_SYNC] = "gpu_sync",
    [ACT_CAT_GPU_OP] = "gpu_op",
    [ACT_CAT_AC2G] = "ac2g",
    [ACT_CAT_GPU_USER_ANNOTATION] = "gpu_user_annotation",
};

#define COUNTER(field, key, label)                                                                 \
    {                                                                                              \
        key, label, offsetof(act_tl_counts, field), 0                                              \
    }
#define INFO_COUNTER(field, key, label)                                                            \
    {                                                                                              \
        key, label, offsetof(act_tl_counts, field), 1                                              \
    }
const act_tl_counter act_tl_counters[] = {
    COUNTER(unbalanced_pops, "unbalanced_pops", "unbalanced range pops"),
    COUNTER(invalid_range_ends, "invalid_range_ends", "range ends with invalid ids"),
    COUNTER(strings_truncated, "strings_truncated", "strings truncated"),
    COUNTER(unclosed_ranges, "unclosed_ranges", "ranges left open"),
    COUNTER(unmatched_range_ends, "unmatched_range_ends", "range ends without a start"),
    COUNTER(negative_durations, "negative_durations", "negative durations"),
    COUNTER(nesting_violations, "nesting_violations", "host nesting violations"),
    COUNTER(device_ops_without_times, "device_ops_without_times", "device ops without timestamps"),
    COUNTER(unlinked_device_ops, "unlinked_device_ops", "device ops without host launch"),
    COUNTER(unresolved_external, "unresolved_external_ids", "External ids naming no range"),
    INFO_COUNTER(flows, "flows", "launch-to-device flows"),
    COUNTER(orphan_args, "orphan_args", "args with no event"),
    INFO_COUNTER(ring_size, "ring_size", "ring size per process (bytes)"),
    COUNTER(ring_chunks_overwritten, "ring_chunks_overwritten", "ring chunks overwritten"),
    COUNTER(ring_records_overwritten, "ring_records_overwritten", "ring records overwritten"),
    COUNTER(ring_bytes_overwritten, "ring_bytes_overwritten", "ring bytes overwritten"),
    COUNTER(ranges_before_window, "ranges_before_window", "ranges begun before ring window"),
    COUNTER(ring_flows_dropped, "ring_flows_dropped", "flows to launches overwritten"),
    COUNTER(ring_external_dropped, "ring_external_dropped", "External ids overwritten"),
};
#undef COUNTER
#undef INFO_COUNTER
const size_t act_tl_n_counters = sizeof(act_tl_counters) / sizeof(act_tl_counters[0]);

/* The category of each source's host calls, by its traits' name; made
 * once (pthread_once), then a load per call. */
static int api_cats[ACT_SOURCE_MAX];
static pthread_once_t api_cats_once = PTHREAD_ONCE_INIT;

static void api_cats_make(void)
{
    for (uint32_t s = 0; s < ACT_SOURCE_MAX; s++) {
        api_cats[s] = ACT_CAT_RUNTIME;
        for (int c = 1; c < ACT_CAT_MAX; c++)
            if (!strcmp(cat_names[c], act_source_traits_of(s)->api_cat))
                api_cats[s] = c;
    }
}

int act_cat_of_api(uint32_t source)
{
    pthread_once(&api_cats_once, api_cats_make);
    return api_cats[source < ACT_SOURCE_MAX ? source : ACT_SOURCE_NONE];
}

const char *act_cat_name(int cat)
{
    return cat > 0 && cat < ACT_CAT_MAX ? cat_names[cat] : "";
}

const char *act_tl_cat_name(const act_timeline *tl, int cat)
{
    if (cat >= ACT_CAT_MAX && tl && (size_t)(cat - ACT_CAT_MAX) < tl->n_cat_extra)
        return tl->cat_extra[cat - ACT_CAT_MAX];
    return act_cat_name(cat);
}

const char *act_rec_kind_name(int kind)
{
    static const char *const names[ACT_REC_KIND_MAX] = {
        "pad",       "segment", "thread",  "string",  "range_push", "range_pop", "range_start",
        "range_end", "mark",    "counter", "api",     "device_op",  "device",    "queue",
        "metadata",  "clock",   "error",   "capture", "extcorr",    "arg"};
    _Static_assert(ACT_REC_KIND_MAX == 20, "name every record kind");
    return kind >= 0 && kind < ACT_REC_KIND_MAX && names[kind] ? names[kind] : "unknown";
}

int act_tl_cat_is_device(const act_timeline *tl, int cat)
{
    /* act_cat_is_device_name of a built-in name plus 2 (0: not yet
     * known); every thread that fills an entry stores the same value. */
    static int known[ACT_CAT_MAX];
    if (cat < 0 || cat >= ACT_CAT_MAX)
        return act_cat_is_device_name(act_tl_cat_name(tl, cat));
    int v = __atomic_load_n(&known[cat], __ATOMIC_RELAXED);
    if (!v) {
        v = act_cat_is_device_name(act_cat_name(cat)) + 2;
        __atomic_store_n(&known[cat], v, __ATOMIC_RELAXED);
    }
    return v - 2;
}

uint64_t act_tl_counts_events(const act_tl_counts *c)
{
    static const int kinds[] = {ACT_REC_RANGE_PUSH, ACT_REC_RANGE_POP, ACT_REC_RANGE_START,
                                ACT_REC_RANGE_END,  ACT_REC_MARK,      ACT_REC_COUNTER,
                                ACT_REC_API,        ACT_REC_DEVICE_OP, ACT_REC_ERROR};
    uint64_t n = 0;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        n += c->records[kinds[i]] + c->dropped[kinds[i]] + c->outside_window[kinds[i]];
    return n;
}

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

int act_cat_is_device_name(const char *cat)
{
    static const char *const device[] = {"kernel", "gpu_memcpy", "gpu_memset",     "gpu_sync",
                                         "gpu_op", "cuda_sync",  "mtia_ccp_events"};
    static const char *const host[] = {"cpu_op",          "user_annotation", "cpu_instant_event",
                                       "python_function", "overhead",        "runtime"};
    for (size_t i = 0; i < sizeof(device) / sizeof(device[0]); i++)
        if (!strcmp(cat, device[i]))
            return 1;
    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        if (!strcmp(cat, host[i]))
            return 0;
    if (ends_with(cat, "_runtime") || ends_with(cat, "_driver"))
        return 0;
    return -1;
}

act_tl_event *act_tl_event_slot_slow(act_timeline *tl)
{
    if (tl->err)
        return NULL;
    /* The previous event and its args are complete here. */
    if (tl->sink && tl->n_ev >= ACT_TL_SINK_BATCH) {
        tl->err = tl->sink(tl, tl->sink_ctx);
        if (tl->err)
            return NULL;
    }
    if (act_vec_reserve(tl->ev, tl->cap_ev, tl->n_ev + 1, 1024)) {
        tl->err = ACT_E_NOMEM;
        return NULL;
    }
    return &tl->ev[tl->n_ev++];
}

act_tl_arg *act_tl_arg_slot_slow(act_timeline *tl)
{
    if (tl->err || !tl->n_ev)
        return NULL;
    if (tl->ev[tl->n_ev - 1].nargs == UINT16_MAX) { /* a hostile spool's ARG records */
        if (tl->args_full_ev != tl->n_ev) {
            const act_tl_event *e = &tl->ev[tl->n_ev - 1];
            act_tl_error(tl, "event '%.*s' at %llu ns has more than %u args: the rest are not kept",
                         (int)(e->name.n < 200 ? e->name.n : 200), e->name.p,
                         (unsigned long long)e->ts, (unsigned)UINT16_MAX);
            tl->args_full_ev = tl->n_ev;
        }
        return NULL;
    }
    if (act_vec_reserve(tl->args, tl->cap_args, tl->n_args + 1, 1024)) {
        tl->err = ACT_E_NOMEM;
        return NULL;
    }
    return &tl->args[tl->n_args++];
}

act_str act_tl_strdup(act_timeline *tl, const char *s, size_t n)
{
    if (n > UINT32_MAX - 1)
        n = UINT32_MAX - 1;
    act_arena_block *b = tl->arena;
    if (!b || b->cap - b->used < n + 1) {
        size_t cap = n + 1 > 65536 ? n + 1 : 65536;
        b = malloc(sizeof(*b) + cap);
        if (!b) {
            tl->err = ACT_E_NOMEM;
            return (act_str){"", 0};
        }
        b->next = tl->arena;
        b->used = 0;
        b->cap = cap;
        tl->arena = b;
    }
    char *p = b->data + b->used;
    memcpy(p, s, n);
    p[n] = '\0';
    b->used += n + 1;
    return (act_str){p, (uint32_t)n};
}

act_str act_tl_printf(act_timeline *tl, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(tmp))
        n = sizeof(tmp) - 1;
    return act_tl_strdup(tl, tmp, (size_t)n);
}

void act_tl_meta_add(act_timeline *tl, act_str key, act_str value, int is_json)
{
    if (act_vec_reserve(tl->meta, tl->cap_meta, tl->n_meta + 1, 1)) {
        tl->err = ACT_E_NOMEM;
        return;
    }
    tl->meta[tl->n_meta++] = (act_tl_meta){key, value, is_json};
}

void act_tl_error(act_timeline *tl, const char *fmt, ...)
{
    if (tl->n_errors >= ACT_TL_MAX_ERRORS) {
        tl->errors_unlisted++;
        return;
    }
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (act_vec_reserve(tl->errors, tl->cap_errors, tl->n_errors + 1, 1)) {
        tl->err = ACT_E_NOMEM;
        return;
    }
    char *line = strdup(tmp);
    if (!line) {
        tl->err = ACT_E_NOMEM;
        return;
    }
    tl->errors[tl->n_errors++] = line;
}

void act_timeline_free(act_timeline *tl)
{
    free(tl->ev);
    free(tl->args);
    free(tl->devices);
    free(tl->procs);
    free(tl->meta);
    for (size_t i = 0; i < tl->n_errors; i++)
        free(tl->errors[i]);
    free(tl->errors);
    free(tl->truncated_pids);
    while (tl->arena) {
        act_arena_block *n = tl->arena->next;
        free(tl->arena);
        tl->arena = n;
    }
    memset(tl, 0, sizeof(*tl));
}
