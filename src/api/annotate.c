/*
 * annotate.c -- the public annotation API (ranges, marks, counters,
 * metadata) and the small query functions of acceltrace.h.
 *
 * Every entry point starts with the same test of act__recording: one
 * predictable branch while recording. When it is 0 the call falls to a
 * second test, act__idle, set once start-up (act_init, run by the
 * first such call) found no tool: two predictable loads in all. With a tool
 * attached but the capture window closed (capture.c) the call takes the
 * slow path and is counted in the spool's outside_window[kind].
 */
#include <jansson.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* This file defines the functions the header's inline wrappers call. */
#define ACT_NO_INLINE
#include "acceltrace.h"
#include "core/rec_write.h"
#include "init/init.h"

/* Ids returned by act_range_start() for a range that was not written; its
 * act_range_end() is counted the same way. Real ids stay below 2^62. */
#define RANGE_ID_OUTSIDE (1ull << 63)
#define RANGE_ID_DROPPED (1ull << 62)

/* Slow path of every entry point: not recording. Runs start-up (once) and
 * tells a closed capture window (1) from no tool at all (0). */
static int attached_slow(void)
{
    act_init();
    if (atomic_load_explicit(&act__recording, memory_order_relaxed))
        return 1;
    if (act_capture_attached())
        return 1;
    __atomic_store_n(&act__idle, 1, __ATOMIC_RELAXED);
    return 0;
}

/*
 * The hot-path test: 1 = record now. With no tool attached it costs two
 * predictable loads (act__idle is set by the first slow call).
 * While the window is closed it counts the event as outside and returns 0.
 */
static inline int act_ready(uint16_t kind)
{
    if (ACT_LIKELY(atomic_load_explicit(&act__recording, memory_order_relaxed)))
        return 1;
    if (ACT_LIKELY(__atomic_load_n(&act__idle, __ATOMIC_RELAXED)))
        return 0;
    if (attached_slow() && atomic_load_explicit(&act__recording, memory_order_relaxed))
        return 1;
    act_capture_count_outside(kind);
    return 0;
}

/* For calls that must record even with the window closed (pops, ends,
 * metadata): 1 when a recorder is open. */
static inline int act_attached(void)
{
    if (ACT_LIKELY(atomic_load_explicit(&act__recording, memory_order_relaxed)))
        return 1;
    if (ACT_LIKELY(__atomic_load_n(&act__idle, __ATOMIC_RELAXED)))
        return 0;
    return attached_slow();
}

static int emit_ts(uint16_t kind, uint32_t name)
{
    act_rec_ts *r = act_rec_reserve(kind, sizeof(*r));
    if (!r)
        return ACT_E_FULL;
    r->h.aux = name;
    r->ts = act_rec_now();
    act_rec_commit();
    return ACT_OK;
}

/* Everything but the recorder's fast path (recorder/ranges.c) for a push. */
static __attribute__((noinline)) int range_push_slow(const char *name)
{
    if (!act_ready(ACT_REC_RANGE_PUSH)) {
        /* Outside the window the stack still moves, so that the matching
         * pop is recognised as outside too (not unbalanced). */
        if (name && !__atomic_load_n(&act__idle, __ATOMIC_RELAXED))
            act_recorder_range_pushed(ACT_RANGE_OUTSIDE, 0);
        return ACT_E_DISABLED;
    }
    if (!name)
        return ACT_E_INVAL;
    uint32_t id = act_str_intern_literal(name);
    int rc = emit_ts(ACT_REC_RANGE_PUSH, id);
    /* The stack moves even when the record was dropped, so that the
     * matching pop stays balanced (and is not written either). */
    act_recorder_range_pushed(rc == ACT_OK ? ACT_RANGE_RECORDED : ACT_RANGE_DROPPED, id);
    return rc;
}

/* While recording, a recorded range with a literal name and room in the
 * chunk is written by the recorder's fast path without a call beyond it
 * (BENCHMARKS.md); anything else takes the general path. */
ACT_EXPORT int act_range_push(const char *name)
{
    if (ACT_LIKELY(atomic_load_explicit(&act__recording, memory_order_relaxed)) &&
        ACT_LIKELY(act_recorder_range_push_fast(name) == ACT_OK))
        return ACT_OK;
    return range_push_slow(name);
}

/* Not public API: for acceltrace's own torch plugin (plugins/torch), which
 * observes torch's operators under `run` (docs/torch.md). A range push
 * that is an operator (op: a cpu_op slice, else a user_annotation) with
 * kineto's linkage args: "Sequence number" (seq >= 0) and "Fwd thread id"
 * (non-zero). The args follow the push only when the push was recorded. */
ACT_EXPORT int act__op_push(const char *name, int op, int64_t seq, uint64_t fwd_tid)
{
    int rc = act_range_push(name);
    if (rc != ACT_OK)
        return rc;
    if (op)
        act_rec_arg_emit("category", ACT_RECARG_CATEGORY, ACT_RANGE_CAT_OP, NULL);
    if (seq >= 0)
        act_rec_arg_emit("Sequence number", ACT_RECARG_I64, (uint64_t)seq, NULL);
    if (fwd_tid)
        act_rec_arg_emit("Fwd thread id", ACT_RECARG_U64, fwd_tid, NULL);
    return ACT_OK;
}

static __attribute__((noinline)) int range_pop_slow(void)
{
    if (!act_attached())
        return ACT_E_DISABLED;
    if (act_recorder_range_top() == ACT_RANGE_RECORDED) {
        /* Written even after the window closed: its push is in the spool.
         * Written before the stack moves: a record that starts a ring
         * chunk lists the range as still open (core/record.h R4). */
        int rc = emit_ts(ACT_REC_RANGE_POP, 0);
        act_recorder_range_popped();
        return rc;
    }
    switch (act_recorder_range_popped()) {
    /* Deeper than the tracked stack: recorded while recording (ranges.c). */
    case ACT_RANGE_RECORDED: return emit_ts(ACT_REC_RANGE_POP, 0);
    case ACT_RANGE_OUTSIDE: act_capture_count_outside(ACT_REC_RANGE_POP); return ACT_E_DISABLED;
    case ACT_RANGE_DROPPED: act_rec_drop(ACT_REC_RANGE_POP); return ACT_E_FULL;
    default: return ACT_E_UNBALANCED;
    }
}

ACT_EXPORT int act_range_pop(void)
{
    if (ACT_LIKELY(atomic_load_explicit(&act__recording, memory_order_relaxed)) &&
        ACT_LIKELY(act_recorder_range_pop_fast() == ACT_OK))
        return ACT_OK;
    return range_pop_slow();
}

static int emit_range_id(uint16_t kind, uint32_t name, uint64_t id)
{
    act_rec_range_id *r = act_rec_reserve(kind, sizeof(*r));
    if (!r)
        return ACT_E_FULL;
    r->h.aux = name;
    r->ts = act_rec_now();
    r->id = id;
    act_rec_commit();
    return ACT_OK;
}

ACT_EXPORT uint64_t act_range_start(const char *name)
{
    if (!name)
        return 0;
    if (!act_ready(ACT_REC_RANGE_START))
        return __atomic_load_n(&act__idle, __ATOMIC_RELAXED)
                   ? 0
                   : act_range_id_next() | RANGE_ID_OUTSIDE;
    uint64_t id = act_range_id_next();
    if (emit_range_id(ACT_REC_RANGE_START, act_str_intern_cstr(name), id) != ACT_OK)
        return id | RANGE_ID_DROPPED;
    return id;
}

ACT_EXPORT void act_range_end(uint64_t id)
{
    if (id == 0 || !act_attached())
        return;
    /* An id act_range_start() never returned is the caller's mistake:
     * counted as such, not as a drop or an event outside the window. */
    uint64_t marks = id & (RANGE_ID_OUTSIDE | RANGE_ID_DROPPED);
    if (marks == (RANGE_ID_OUTSIDE | RANGE_ID_DROPPED) || !act_range_id_issued(id & ~marks))
        act_recorder_count_invalid_range_end();
    else if (id & RANGE_ID_OUTSIDE)
        act_capture_count_outside(ACT_REC_RANGE_END);
    else if (id & RANGE_ID_DROPPED)
        act_rec_drop(ACT_REC_RANGE_END);
    else /* started inside the window: kept even if it closed since */
        emit_range_id(ACT_REC_RANGE_END, 0, id);
}

ACT_EXPORT void act_mark(const char *name)
{
    if (!name || !act_ready(ACT_REC_MARK))
        return;
    emit_ts(ACT_REC_MARK, act_str_intern_cstr(name));
}

ACT_EXPORT void act_thread_name(uint32_t tid, const char *name)
{
    if (!name)
        return;
    /* A name, not an event: kept with the thread and written with its
     * records, never a reason to start the tool (act_attached would). */
    uint32_t self = (uint32_t)syscall(SYS_gettid);
    if (!tid || tid == self)
        act_rec_thread_name_given(name);
    else if (act_capture_attached())
        act_rec_thread_name_emit(tid, name);
}

ACT_EXPORT void act_counter(const char *name, double value)
{
    if (!name || !act_ready(ACT_REC_COUNTER))
        return;
    uint32_t id = act_str_intern_cstr(name);
    act_rec_counter *r = act_rec_reserve(ACT_REC_COUNTER, sizeof(*r));
    if (!r)
        return;
    r->h.aux = id;
    r->ts = act_rec_now();
    r->value = value;
    act_rec_commit();
}

/* Metadata is not an event in time: recorded whether or not the capture
 * window is open. */
static int metadata_emit(const char *key, const char *value, int is_json)
{
    if (!act_attached())
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

/* Whether `v` nests more than `left` arrays and objects. */
static int json_too_deep(json_t *v, int left)
{
    if (!json_is_array(v) && !json_is_object(v))
        return 0;
    if (left == 0)
        return 1;
    size_t i;
    const char *k;
    json_t *e;
    if (json_is_array(v)) {
        json_array_foreach(v, i, e)
        {
            if (json_too_deep(e, left - 1))
                return 1;
        }
        return 0;
    }
    json_object_foreach(v, k, e)
    {
        if (json_too_deep(e, left - 1))
            return 1;
    }
    return 0;
}

ACT_EXPORT int act_metadata_set_json(const char *key, const char *json)
{
    if (!key || !json)
        return ACT_E_INVAL;
    json_error_t err;
    /* INT_AS_REAL: an integer beyond 64 bits is valid JSON (it is
     * written as given; only this check parses it). */
    json_t *v =
        json_loads(json, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &err);
    if (!v)
        return ACT_E_JSON;
    /* Python's json refuses about 1 000 levels, jansson 2 048: a limit
     * far below both keeps every trace loadable. */
    int deep = json_too_deep(v, ACT_METADATA_MAX_DEPTH);
    json_decref(v);
    return deep ? ACT_E_JSON : metadata_emit(key, json, 1);
}

ACT_EXPORT int act_is_enabled(void)
{
    return atomic_load_explicit(&act__recording, memory_order_relaxed) != 0;
}

ACT_EXPORT const char *act_version(void)
{
    return ACT_VERSION_STRING;
}
