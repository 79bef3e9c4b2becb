/*
 * annotate.c -- the public annotation API (ranges, marks, counters,
 * metadata) and the small query functions of acceltrace.h.
 *
 * Every entry point starts with the same test of act__recording: one
 * predictable branch when no tool is attached. The first call in a process
 * that is not recording asks start-up once (act_init) whether a tool is
 * attached; later calls only read `act__init_tried`.
 */
/* This file defines act_range_push/pop: no inline wrappers here. */
#define ACT_NO_INLINE_FASTPATH 1
#include <jansson.h>
#include <string.h>

#include "acceltrace.h"
#include "init/init.h"
#include "internal.h"

static _Atomic int act__init_tried;

/* Hint for the inline wrappers of acceltrace.h: 1 = enter the library.
 * Programs reach it through the exported constant pointer (see there). */
int act__enter = 1;
ACT_EXPORT int *const act__enter_ptr = &act__enter;

/* Start-up found no tool: let the inline wrappers skip the call. The
 * recorder sets act__recording and then act__enter (both seq_cst) when it
 * opens; re-reading act__recording after our store means that whichever
 * order the two threads run in, act__enter ends 1 while recording. */
static void enter_hint_off(void)
{
    __atomic_store_n(&act__enter, 0, __ATOMIC_SEQ_CST);
    if (atomic_load(&act__recording))
        __atomic_store_n(&act__enter, 1, __ATOMIC_SEQ_CST);
}

/* Slow path of act_ready(): run start-up once, report whether recording. */
static int ready_slow(void)
{
    if (!atomic_exchange(&act__init_tried, 1)) {
        act_init();
        if (!atomic_load(&act__recording))
            enter_hint_off();
    }
    return atomic_load_explicit(&act__recording, memory_order_relaxed);
}

static inline int act_ready(void)
{
    if (ACT_LIKELY(atomic_load_explicit(&act__recording, memory_order_relaxed)))
        return 1;
    if (ACT_LIKELY(atomic_load_explicit(&act__init_tried, memory_order_relaxed)))
        return 0;
    return ready_slow();
}

static int emit_ts(uint16_t kind, uint32_t name)
{
    act_rec_ts *r = act_rec_reserve(kind, sizeof(*r));
    if (!r)
        return ACT_E_FULL;
    r->h.aux = name;
    r->ts = act_clock_now();
    act_rec_commit();
    return ACT_OK;
}

/* Tool off: the first call asks start-up once; the rest return at once.
 * Kept out of line so the entry points below stay frameless. */
static __attribute__((noinline)) int range_push_cold(const char *name)
{
    if (!act_ready())
        return ACT_E_DISABLED;
    return act_recorder_range_push(name);
}

static __attribute__((noinline)) int range_pop_cold(void)
{
    if (!act_ready())
        return ACT_E_DISABLED;
    return act_recorder_range_pop();
}

ACT_EXPORT int act_range_push(const char *name)
{
    if (ACT_LIKELY(atomic_load_explicit(&act__recording, memory_order_relaxed)))
        return act_recorder_range_push(name);
    if (ACT_LIKELY(atomic_load_explicit(&act__init_tried, memory_order_relaxed)))
        return ACT_E_DISABLED;
    return range_push_cold(name);
}

ACT_EXPORT int act_range_pop(void)
{
    if (ACT_LIKELY(atomic_load_explicit(&act__recording, memory_order_relaxed)))
        return act_recorder_range_pop();
    if (ACT_LIKELY(atomic_load_explicit(&act__init_tried, memory_order_relaxed)))
        return ACT_E_DISABLED;
    return range_pop_cold();
}

static int emit_range_id(uint16_t kind, uint32_t name, uint64_t id)
{
    act_rec_range_id *r = act_rec_reserve(kind, sizeof(*r));
    if (!r)
        return ACT_E_FULL;
    r->h.aux = name;
    r->ts = act_clock_now();
    r->id = id;
    act_rec_commit();
    return ACT_OK;
}

ACT_EXPORT uint64_t act_range_start(const char *name)
{
    if (!act_ready() || !name)
        return 0;
    uint64_t id = act_range_id_next();
    emit_range_id(ACT_REC_RANGE_START, act_str_intern_cstr(name), id);
    return id;
}

ACT_EXPORT void act_range_end(uint64_t id)
{
    if (!act_ready() || id == 0)
        return;
    emit_range_id(ACT_REC_RANGE_END, 0, id);
}

ACT_EXPORT void act_mark(const char *name)
{
    if (!act_ready() || !name)
        return;
    emit_ts(ACT_REC_MARK, act_str_intern_cstr(name));
}

ACT_EXPORT void act_counter(const char *name, double value)
{
    if (!act_ready() || !name)
        return;
    uint32_t id = act_str_intern_cstr(name);
    act_rec_counter *r = act_rec_reserve(ACT_REC_COUNTER, sizeof(*r));
    if (!r)
        return;
    r->h.aux = id;
    r->ts = act_clock_now();
    r->value = value;
    act_rec_commit();
}

static int metadata_emit(const char *key, const char *value, int is_json)
{
    if (!act_ready())
        return ACT_E_DISABLED;
    uint32_t k = act_str_intern_cstr(key);
    uint32_t v = act_str_intern_cstr(value);
    if (!k || !v)
        return ACT_E_FULL;
    act_rec_metadata *r = act_rec_reserve(ACT_REC_METADATA, sizeof(*r));
    if (!r)
        return ACT_E_FULL;
    r->h.aux = k;
    r->value = v;
    r->is_json = (uint32_t)is_json;
    act_rec_commit();
    return ACT_OK;
}

ACT_EXPORT int act_metadata_set(const char *key, const char *value)
{
    if (!key || !value)
        return ACT_E_INVAL;
    return metadata_emit(key, value, 0);
}

ACT_EXPORT int act_metadata_set_json(const char *key, const char *json)
{
    if (!key || !json)
        return ACT_E_INVAL;
    json_error_t err;
    json_t *v = json_loads(json, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
    if (!v)
        return ACT_E_JSON;
    json_decref(v);
    return metadata_emit(key, json, 1);
}

ACT_EXPORT int act_is_enabled(void)
{
    return atomic_load_explicit(&act__recording, memory_order_relaxed) != 0;
}

ACT_EXPORT const char *act_version(void)
{
    return ACT_VERSION_STRING;
}

ACT_EXPORT const char *act_strerror(int err)
{
    switch (err) {
    case ACT_OK: return "success";
    case ACT_E_DISABLED: return "no tool attached (not recording)";
    case ACT_E_INVAL: return "invalid argument";
    case ACT_E_NOMEM: return "out of memory";
    case ACT_E_IO: return "input/output error";
    case ACT_E_FULL: return "recorder capacity reached (record counted as dropped)";
    case ACT_E_STATE: return "not valid in the current state";
    case ACT_E_JSON: return "invalid JSON";
    case ACT_E_UNBALANCED: return "pop without a matching push";
    case ACT_E_CONFIG: return "invalid configuration value";
    case ACT_E_FORMAT: return "malformed input";
    case ACT_E_NOTFOUND: return "not found";
    case ACT_E_CONFLICT: return "another tracer holds the resource";
    case ACT_E_UNSUPPORTED: return "not supported";
    default: return "unknown error";
    }
}
