/*
 * emit.c -- correlation ids and the convenience writers sources use (API
 * calls, arguments, error lines).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

static _Atomic uint64_t next_corr = 1;

/* ---- ids -------------------------------------------------------------- */

uint64_t act_corr_next(void)
{
    return atomic_fetch_add_explicit(&next_corr, 1, memory_order_relaxed);
}

/* ---- convenience writers ---------------------------------------------- */

/* The fields an API record carries after its header (both paths). */
static inline void api_fill(act_rec_api *r, uint64_t start, uint64_t end, uint64_t corr,
                            uint64_t ext, int32_t result, uint32_t source)
{
    r->start = start;
    r->end = end;
    r->corr = corr;
    r->ext = ext;
    r->result = result;
    r->source = source;
}

/* The API-record hot path, as the range one (ranges.c): thread state
 * present, the name a literal seen before in this chunk (the pointer cache
 * is cleared with each new spool, and in ring mode with each new chunk, so
 * a hit names a string this chunk defines), room in the chunk: the record
 * is written and published with no call and no hashing. Anything else
 * returns 0 having changed nothing, and the caller takes the general path
 * (act_str_intern_literal, act_rec_reserve, act_rec_commit). Gated as the
 * range fast path: by act__recording (the callers') and the chunk's cap. */
static inline int api_fast(act_thread *t, const char *name, uint64_t start, uint64_t end,
                           uint64_t corr, uint64_t ext, int32_t result, uint32_t source)
{
    const act_ptr_slot *ps = name ? act_rec_ptr_find(t, name) : NULL;
    uint32_t pos = t->pos;
    if (ACT_UNLIKELY(!ps || pos + sizeof(act_rec_api) >
                                atomic_load_explicit(&t->cap, memory_order_relaxed)))
        return 0;
    act_rec_api *r = (act_rec_api *)(t->data + pos);
    r->h.kind = ACT_REC_API;
    r->h.size8 = sizeof(*r) / 8;
    r->h.aux = ps->id;
    api_fill(r, start, end, corr, ext, result, source);
    t->pos = pos + (uint32_t)sizeof(*r);
    act_rec_publish(t);
    return 1;
}

static __attribute__((noinline)) int api_slow(const char *name, uint64_t start, uint64_t end,
                                              uint64_t corr, uint64_t ext, int32_t result,
                                              uint32_t source)
{
    uint32_t id = act_str_intern_literal(name);
    act_rec_api *r = act_rec_reserve(ACT_REC_API, sizeof(*r));
    if (!r)
        return -1;
    r->h.aux = id;
    api_fill(r, start, end, corr, ext, result, source);
    act_rec_commit();
    return 0;
}

/* One ACT_REC_ARG (record.h), key and string ids given, followed by the n
 * values of v (a vector's: bits is then n). */
static int arg_write_flags(uint32_t key_id, uint32_t type, uint64_t bits, const uint64_t *v,
                           uint32_t n, uint32_t flags)
{
    act_rec_arg *r = act_rec_reserve(ACT_REC_ARG, sizeof(*r) + n * sizeof(uint64_t));
    if (!r)
        return -1;
    r->h.aux = key_id;
    r->type = type;
    r->pad = flags;
    r->v.u = bits;
    if (n)
        memcpy(r + 1, v, n * sizeof(uint64_t));
    act_rec_commit();
    return 0;
}

static int arg_write(uint32_t key_id, uint32_t type, uint64_t bits, const uint64_t *v, uint32_t n)
{
    return arg_write_flags(key_id, type, bits, v, n, 0);
}

/* ---- --python-backtrace (core/pystack.c) ------------------------------ */

/* The string ids of this thread's recent Python stacks, by the walk's key
 * (pystack.c): a stack seen again costs the walk and one record, not its
 * text and a hash of it. Valid for one spool generation; not used in ring
 * mode, where a string's record may have been written over. */
#define PYSTACK_IDS 64u
typedef struct act_pystack_id {
    uint64_t key;
    uint32_t id, gen;
} act_pystack_id;

/* A thread's state (act_thread.pystack, made at its first captured call):
 * the id cache, and the profile hook's (pystack.c P4). */
typedef struct act_pystack_tls {
    act_pystack_id ids[PYSTACK_IDS];
    uint8_t hooked;         /* the hook was tried on this thread */
    uint8_t pending;        /* main thread: a pending call is queued */
    const void *callable;   /* the C function the thread is in (C_CALL) */
    const void *held_owner; /* the C function whose stack is held */
    uint32_t held_id, held_gen;
    uint8_t late;      /* GIL-less calls wait for their stack (a HOLD arg written) */
    uint32_t late_gen; /* the spool generation of those */
} act_pystack_tls;

/* C functions seen releasing the GIL around a captured call (any thread
 * adds, without the GIL; the hook reads, with it). A full table learns no
 * more: those calls then get their stack held, at the next event. */
#define PYSTACK_LEARNED 512u
static _Atomic(const void *) pystack_learned[PYSTACK_LEARNED];

static unsigned learned_slot(const void *fn)
{
    uintptr_t a = (uintptr_t)fn;
    return (unsigned)((a >> 4) ^ (a >> 13)) & (PYSTACK_LEARNED - 1);
}

static int learned(const void *fn)
{
    for (unsigned i = learned_slot(fn), n = 0; n < 8; n++, i = (i + 1) & (PYSTACK_LEARNED - 1)) {
        const void *v = atomic_load_explicit(&pystack_learned[i], memory_order_relaxed);
        if (v == fn)
            return 1;
        if (!v)
            return 0;
    }
    return 0;
}

static void learn(const void *fn)
{
    for (unsigned i = learned_slot(fn), n = 0; n < 8; n++, i = (i + 1) & (PYSTACK_LEARNED - 1)) {
        const void *v = NULL;
        if (atomic_compare_exchange_strong(&pystack_learned[i], &v, fn) || v == fn)
            return;
    }
}

static act_pystack_tls *pystack_tls(act_thread *t)
{
    if (!t->pystack_ids)
        t->pystack_ids = calloc(1, sizeof(act_pystack_tls));
    return t->pystack_ids;
}

/* The string id of this thread's stack now (the GIL held), 0 = none. */
static uint32_t pystack_id(act_thread *t, int depth)
{
    act_pystack_frames w;
    uint64_t key = act_pystack_walk(depth, &w);
    if (!key)
        return 0;
    act_pystack_tls *s = pystack_tls(t);
    uint32_t gen = act_recorder_generation();
    int cache = act_rec_state.ring_chunks == 0 && s;
    act_pystack_id none = {0, 0, 0};
    act_pystack_id *slot = cache ? &s->ids[(key ^ (key >> 17)) & (PYSTACK_IDS - 1)] : &none;
    if (cache && slot->key == key && slot->gen == gen && slot->id)
        return slot->id;
    char buf[8192];
    size_t len = act_pystack_walk_text(&w, buf, sizeof(buf));
    uint32_t id = len ? act_str_intern(buf, len) : 0;
    if (id)
        *slot = (act_pystack_id){key, id, gen};
    return id;
}

static void pystack_arg(uint32_t id, uint32_t flags)
{
    arg_write_flags(act_str_intern_literal("Python stack"), ACT_RECARG_STR, id, NULL, 0, flags);
}

/* The GIL is back since GIL-less calls: the caller's frames are as they
 * were (the innermost one's line too, from a pending call; the profile
 * function may see it a statement on). One BACK arg gives every call held
 * since its stack (record.h). */
static void pystack_late(act_thread *t, act_pystack_tls *s, int depth)
{
    if (s->late_gen == act_recorder_generation()) {
        uint32_t id = pystack_id(t, depth);
        if (id)
            pystack_arg(id, ACT_RECARG_F_BACK);
    }
    s->late = 0;
}

/* Py_AddPendingCall's function: on the main thread, the GIL held. */
static int pystack_pending_call(void *arg)
{
    (void)arg;
    act_thread *t = act_rec_tls;
    act_pystack_tls *s = t ? t->pystack_ids : NULL;
    int depth = __atomic_load_n(&act__pystack_depth, __ATOMIC_RELAXED);
    if (s) {
        s->pending = 0;
        if (s->late && depth)
            pystack_late(t, s, depth);
    }
    return 0;
}

/* The profile function (pystack.c P4): cheap on every call, busy only
 * around the C functions learned. */
static int pystack_profile(void *obj, void *frame, int what, void *arg)
{
    (void)obj;
    (void)frame;
    act_thread *t = act_rec_tls;
    act_pystack_tls *s = t ? t->pystack_ids : NULL;
    int depth = __atomic_load_n(&act__pystack_depth, __ATOMIC_RELAXED);
    if (!s || !depth)
        return 0;
    if (ACT_UNLIKELY(s->late))
        pystack_late(t, s, depth);
    if (what == ACT_PYTRACE_C_CALL) {
        s->callable = arg;
        if (learned(arg)) {
            s->held_id = pystack_id(t, depth);
            s->held_gen = act_recorder_generation();
            s->held_owner = arg;
        }
    } else if (what == ACT_PYTRACE_C_RETURN || what == ACT_PYTRACE_C_EXCEPTION) {
        if (arg == s->held_owner) {
            s->held_owner = NULL;
            s->held_id = 0;
        }
        s->callable = NULL;
    }
    return 0;
}

static int main_thread(const act_thread *t)
{
    return t->tid == (uint32_t)getpid();
}

/* A captured call made with the GIL released (P4). */
static void pystack_released(act_thread *t)
{
    int main = main_thread(t);
    act_pystack_tls *s = main ? pystack_tls(t) : t->pystack_ids;
    if (!s || (!main && !s->hooked))
        return; /* no hook on this thread: nothing to go by */
    if (!main && s->callable)
        learn(s->callable);
    if (!main && s->held_id && s->held_gen == act_recorder_generation() &&
        s->held_owner == s->callable) {
        pystack_arg(s->held_id, 0);
        return;
    }
    /* Its stack stands in until the GIL is back (the builder holds it). */
    pystack_arg(act_str_intern_literal("(not known: the GIL was released)"), ACT_RECARG_F_HOLD);
    s->late = 1;
    s->late_gen = act_recorder_generation();
    if (main && !s->pending)
        s->pending = (uint8_t)act_pystack_pending(pystack_pending_call, NULL);
}

void act_rec_pystack_emit(void)
{
    int depth = __atomic_load_n(&act__pystack_depth, __ATOMIC_ACQUIRE);
    act_thread *t = act_rec_tls;
    if (!depth || !t)
        return;
    uint32_t id = pystack_id(t, depth);
    if (id) {
        act_pystack_tls *s = t->pystack_ids;
        if (s && s->late)
            pystack_late(t, s, depth); /* the GIL is back: those first */
        pystack_arg(id, 0);
        if (s && !s->hooked && !main_thread(t)) {
            s->hooked = 1;
            act_pystack_profile_install(pystack_profile);
        }
    } else if (act_pystack_gil_released()) {
        pystack_released(t);
    }
}

/* A call's start, read from the true clock, on thread t whose last
 * fast-clock reading (a range pushed just before the call) may be a
 * nanosecond or so later: moved onto that reading when at most
 * ACT_CLOCK_SKEW_NS later, its end with it if the call was shorter
 * (recorder_int.h, "fast clock"). A call recorded with its end before
 * its start stays so (the trace counts it). */
static inline void api_times(const act_thread *t, uint64_t *start, uint64_t *end)
{
    if (t && *start < t->last_ns && t->last_ns - *start <= ACT_CLOCK_SKEW_NS && *start <= *end) {
        *start = t->last_ns;
        *end = *end < *start ? *start : *end;
    }
}

int act_rec_api_emit(const char *name, uint64_t start, uint64_t end, uint64_t corr, uint64_t ext,
                     int32_t result, uint32_t source)
{
    act_thread *t = act_rec_tls;
    api_times(t, &start, &end);
    int rc = ACT_LIKELY(t != NULL) && api_fast(t, name, start, end, corr, ext, result, source)
                 ? 0
                 : api_slow(name, start, end, corr, ext, result, source);
    act_rec_clock_floor(act_rec_tls, end);
    if (ACT_UNLIKELY(act__pystack_depth) && rc == 0 && (corr || act__pystack_all))
        act_rec_pystack_emit();
    return rc;
}

int act_rec_api_here(const char *name, uint64_t start, uint64_t end, int32_t result,
                     uint32_t source)
{
    act_thread *t = act_rec_tls;
    uint64_t ext = t ? act_rec_range_ext(t) : 0;
    api_times(t, &start, &end);
    int rc =
        ACT_LIKELY(t != NULL) && ACT_LIKELY(api_fast(t, name, start, end, 0, ext, result, source))
            ? 0
            : api_slow(name, start, end, 0, ext, result, source);
    act_rec_clock_floor(act_rec_tls, end);
    if (ACT_UNLIKELY(act__pystack_all) && rc == 0)
        act_rec_pystack_emit();
    return rc;
}

int act_rec_thread_name_given(const char *name)
{
    act_thread *t = act_rec_thread_get();
    if (!t)
        return -1;
    size_t n = act_rec_utf8_cut(name, strlen(name), ACT_THREAD_GIVEN_MAX);
    char *copy = strndup(name, n);
    if (!copy)
        return -1;
    free(t->given_name);
    t->given_name = copy;
    /* Announced already (or a ring, which announces no names): now. */
    return act_recorder_attached() && (t->announced || act_rec_state.ring_chunks)
               ? act_rec_thread_name_emit(t->tid, copy)
               : 0;
}

int act_rec_thread_name_emit(uint32_t tid, const char *name)
{
    uint32_t id = act_str_intern_cstr(name);
    act_rec_thread *r = id ? act_rec_reserve(ACT_REC_THREAD, sizeof(*r)) : NULL;
    if (!r)
        return -1;
    r->h.aux = 0;
    r->tid = tid;
    r->name = id;
    act_rec_commit();
    return 0;
}

int act_rec_arg_emit(const char *key, uint32_t type, uint64_t bits, const char *str)
{
    uint32_t k = act_str_intern_literal(key);
    if (type == ACT_RECARG_STR) {
        bits = act_str_intern_cstr(str);
        if (!bits)
            return -1;
    }
    return arg_write(k, type, bits, NULL, 0);
}

int act_rec_arg_emit_vec(const char *key, uint32_t type, const uint64_t *v, uint32_t n)
{
    if (n > ACT_RECARG_U64V_MAX)
        n = ACT_RECARG_U64V_MAX;
    uint32_t k = key ? act_str_intern_literal(key) : 0; /* LAUNCH needs none */
    return arg_write(k, type, n, v, n);
}

int act_rec_error_emit(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof(buf)) /* cut: on a character boundary */
        buf[act_rec_utf8_cut(buf, sizeof(buf) - 1, sizeof(buf) - 1)] = '\0';
    uint32_t id = act_str_intern_cstr(buf);
    act_rec_ts *r = act_rec_reserve(ACT_REC_ERROR, sizeof(*r));
    if (!r)
        return -1;
    r->h.aux = id;
    r->ts = act_clock_now();
    act_rec_commit();
    return 0;
}
