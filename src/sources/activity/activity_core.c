/*
 * activity_core.c -- the activity-API machinery shared by the mspti and
 * CUPTI sources (design and linking scheme: activity_core.h).
 *
 * Hot paths here run on the vendor's threads: buffer requests (on the
 * producing thread, inside the vendor's launch path) take a buffer from a
 * preallocated pool with one CAS and never allocate; completion callbacks
 * convert records into the calling thread's recorder chunk.
 */
#include <assert.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "acceltrace.h"
#include "activity_core.h"
#include "config.h"
#include "init/init.h"

#define DEFAULT_BUFFER_SIZE      (2u << 20)
#define DEFAULT_BUFFER_COUNT     16u
#define DEFAULT_DRAIN_TIMEOUT_MS 10000u

/* Resolved options with defaults filled in. */
static void opts_resolve(const act_activity_opts *in, act_activity_opts *out)
{
    act_activity_opts o = {0};
    if (in)
        o = *in;
    if (o.buffer_size == 0)
        o.buffer_size = DEFAULT_BUFFER_SIZE;
    if (o.buffer_size < 4096)
        o.buffer_size = 4096;
    o.buffer_size = (o.buffer_size + 7) & ~(size_t)7; /* vendors want 8-byte alignment */
    if (o.buffer_count == 0)
        o.buffer_count = DEFAULT_BUFFER_COUNT;
    if (o.buffer_count > ACT_ACTIVITY_MAX_BUFFERS)
        o.buffer_count = ACT_ACTIVITY_MAX_BUFFERS;
    if (o.drain_timeout_ms == 0) /* ACCELTRACE_DRAIN_TIMEOUT once start-up has read it */
        o.drain_timeout_ms =
            act_cfg.drain_timeout_ms ? act_cfg.drain_timeout_ms : DEFAULT_DRAIN_TIMEOUT_MS;
    *out = o;
}

/* ---- the vendor library ---------------------------------------------- */

/* dlopen one place of the search, and add it to the `tried` list. */
static void *lib_try(const act_activity_lib_path *p, char *tried, size_t n, size_t *used)
{
    char path[PATH_MAX];
    const char *dir = "";
    if (p->env) {
        dir = secure_getenv(p->env); /* a set-uid program loads nothing named by the caller */
        if (!dir || !*dir)
            return NULL; /* the variable names no place */
    }
    snprintf(path, sizeof(path), "%s%s", dir, p->file);
    if (*used < n)
        *used += (size_t)snprintf(tried + *used, n - *used, "%s%s%s%s%s", *used ? ", " : "", path,
                                  p->note ? " (" : "", p->note ? p->note : "", p->note ? ")" : "");
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static void *lib_open(const act_activity_lib *lib, char *tried, size_t n)
{
    const char *override = secure_getenv(lib->override_var);
    if (override && *override) {
        snprintf(tried, n, "%s", override);
        return dlopen(override, RTLD_NOW | RTLD_LOCAL);
    }
    size_t used = 0;
    tried[0] = '\0';
    for (size_t i = 0; i < lib->n_paths; i++) {
        void *h = lib_try(&lib->paths[i], tried, n, &used);
        if (h)
            return h;
    }
    return NULL;
}

int act_activity_load(act_activity *a, const act_activity_lib *lib, int optional)
{
    if (!a->lib) {
        char tried[PATH_MAX * 2];
        a->lib = lib_open(lib, tried, sizeof(tried));
        if (!a->lib) {
            if (optional)
                return ACT_E_NOTFOUND; /* probing: absence is not an error */
            act_activity_error(a, "%s not loadable (tried %s): %s; %s device lane left empty",
                               lib->file_word, tried, dlerror(), a->vendor);
            return ACT_E_NOTFOUND;
        }
    }
    for (size_t i = 0; i < lib->n_syms; i++) {
        const act_activity_sym *sym = &lib->syms[i];
        *sym->slot = dlsym(a->lib, sym->name);
        if (!*sym->slot && sym->required) {
            act_activity_error(a, "symbol %s missing in %s; %s device lane left empty", sym->name,
                               lib->in_word, a->vendor);
            return ACT_E_NOTFOUND;
        }
    }
    return 0;
}

/* ---- pool ------------------------------------------------------------- */

static uint64_t mask_all(uint32_t n)
{
    return n >= 64 ? UINT64_MAX : ((1ull << n) - 1);
}

/* Map and pre-fault the pool. Kept for the life of the process; a later
 * start with another geometry remaps only when every buffer is back. */
static int pool_setup(act_activity *a, size_t size, uint32_t count)
{
    if (a->pool && a->buf_size == size && a->buf_count == count)
        return 0;
    if (a->pool && atomic_load(&a->free_mask) != mask_all(a->buf_count))
        return 0; /* buffers still out with the vendor: keep the old pool */
    if (a->pool)
        munmap(a->pool, a->buf_size * a->buf_count);
    void *m = mmap(NULL, size * count, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (m == MAP_FAILED) {
        a->pool = NULL;
        return ACT_E_NOMEM;
    }
    /* MAP_POPULATE is advisory: touch every page so the first records of
     * the capture do not pay for page faults. */
    for (size_t off = 0; off < size * count; off += 4096)
        ((volatile uint8_t *)m)[off] = 0;
    a->pool = m;
    a->buf_size = size;
    a->buf_count = count;
    atomic_store(&a->free_mask, mask_all(count));
    return 0;
}

static uint8_t *buffer_take(act_activity *a, size_t *size)
{
    uint64_t m = atomic_load_explicit(&a->free_mask, memory_order_acquire);
    while (m) {
        int i = __builtin_ctzll(m);
        if (atomic_compare_exchange_weak_explicit(&a->free_mask, &m, m & ~(1ull << i),
                                                  memory_order_acq_rel, memory_order_acquire)) {
            *size = a->buf_size;
            return a->pool + (size_t)i * a->buf_size;
        }
    }
    /* Refused: the vendor drops the records it wanted to store (mspti asks
     * again before its next record, so one refusal = one record lost). */
    atomic_fetch_add_explicit(&a->refused, 1, memory_order_relaxed);
    act_rec_drop(ACT_REC_DEVICE_OP);
    *size = 0;
    return NULL;
}

void act_activity_buffer_request(act_activity *a, uint8_t **buf, size_t *size, size_t *max_records)
{
    *buf = buffer_take(a, size);
    *max_records = 0; /* as many as fit */
}

void act_activity_buffer_give(act_activity *a, uint8_t *buf)
{
    if (!buf || !a->pool || buf < a->pool || buf >= a->pool + a->buf_size * a->buf_count)
        return; /* not ours (or NULL): nothing to return */
    size_t i = (size_t)(buf - a->pool) / a->buf_size;
    assert(a->pool + i * a->buf_size == buf); /* vendors hand back what they got */
    atomic_fetch_or_explicit(&a->free_mask, 1ull << i, memory_order_release);
}

/* ---- cycle ------------------------------------------------------------ */

/* Set up the pool (first start) and reset the cycle's counters. */
static int cycle_begin(act_activity *a, const act_activity_opts *o)
{
    int rc = pool_setup(a, o->buffer_size, o->buffer_count);
    if (rc != 0)
        return rc;
    atomic_store(&a->records, 0);
    atomic_store(&a->converted, 0);
    atomic_store(&a->refused, 0);
    atomic_store(&a->vendor_dropped, 0);
    atomic_store(&a->late, 0);
    atomic_store(&a->unknown, 0);
    atomic_store(&a->api_superseded, 0);
    atomic_store(&a->foreign_extcorr, 0);
    atomic_store(&a->unreadable, 0);
    atomic_store(&a->unreadable_reported, 0);
    atomic_store(&a->callbacks, 0);
    a->drain_polls = 0;
    a->drain_bound_hit = 0;
    a->offset_stop_ns = 0;
    pthread_mutex_lock(&a->lane_lock);
    a->n_queues = 0;
    a->n_devices = 0;
    pthread_mutex_unlock(&a->lane_lock);
    return 0;
}

/* A buffer whose iteration stopped on an error (not the normal end):
 * counted, and reported once per cycle. */
static void buffer_unreadable(act_activity *a, int code)
{
    atomic_fetch_add(&a->unreadable, 1);
    if (!atomic_exchange(&a->unreadable_reported, 1))
        act_activity_error(
            a,
            "unreadable record in an activity buffer (error %d): the rest of that buffer "
            "was skipped; further cases are counted only",
            code);
}

/* Records that arrived after the source stopped: counted, not written. */
static void count_late(act_activity *a, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        act_rec_drop(ACT_REC_DEVICE_OP); /* counted in the spool too while it is open */
    /* After the drops: a reader of `late` then also sees them. */
    atomic_fetch_add(&a->late, n);
}

int act_activity_buffer_read(act_activity *a, uint8_t *buf, size_t valid, act_activity_next_fn next,
                             void (*convert)(const void *rec))
{
    if (!buf)
        return 0;
    /* Read once: a buffer is converted, or counted late, as a whole. */
    int converting = atomic_load_explicit(&a->state, memory_order_acquire) != ACT_ACTIVITY_OFF;
    void *rec = NULL;
    uint64_t n = 0;
    int code = 0, r;
    while ((r = next(buf, valid, &rec, &code)) > 0) {
        n++;
        if (converting)
            convert(rec);
    }
    if (r < 0)
        buffer_unreadable(a, code);
    if (converting) {
        atomic_fetch_add(&a->records, n);
        act_rec_seg_idle(); /* a buffer delivered: read while the vendor's thread waits */
    } else {
        count_late(a, n);
    }
    return 1;
}

void act_activity_error(act_activity *a, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (act_config_log_level() >= ACT_LOG_DEBUG || (!a->probing && !a->told))
        act_log("%s: %s", a->name, msg);
    a->told = 1;
    act_rec_error_emit("%s: %s", a->name, msg);
}

/* ---- lanes and records ------------------------------------------------ */

uint64_t act_activity_device_key(const act_activity *a, uint32_t device)
{
    return ((uint64_t)a->source << 56) | device;
}

uint64_t act_activity_queue_key(const act_activity *a, uint32_t device, uint32_t stream)
{
    return ((uint64_t)a->source << 56) | ((uint64_t)(device & 0xffffffu) << 32) | stream;
}

/* Returns 1 when `key` is new in `seen` for this cycle (and remembers it). */
static int lane_first_seen(act_activity *a, uint64_t *seen, uint32_t *n, uint64_t key)
{
    int fresh = 1;
    pthread_mutex_lock(&a->lane_lock);
    for (uint32_t i = 0; i < *n; i++) {
        if (seen[i] == key) {
            fresh = 0;
            break;
        }
    }
    if (fresh && *n < ACT_ACTIVITY_MAX_LANES)
        seen[(*n)++] = key;
    /* Beyond the table the records are repeated: harmless duplicates. */
    pthread_mutex_unlock(&a->lane_lock);
    return fresh;
}

static void lane_announce(act_activity *a, uint32_t device, uint32_t stream)
{
    uint64_t dkey = act_activity_device_key(a, device);
    uint64_t qkey = act_activity_queue_key(a, device, stream);
    char buf[96];
    if (lane_first_seen(a, a->devices, &a->n_devices, dkey)) {
        /* The device's own name; lanes are labelled "<vendor> <name>
         * (device <index>)" by the builder, e.g. "Ascend NPU 0 (device 0)",
         * and the host-side lane "Ascend host markers". */
        if (device == ACT_ACTIVITY_HOST_DEVICE)
            snprintf(buf, sizeof(buf), "host markers");
        else
            snprintf(buf, sizeof(buf), "%s %u", a->device_word, device);
        uint32_t name = act_str_intern_cstr(buf);
        uint32_t vendor = act_str_intern_cstr(a->vendor);
        act_rec_device *r = act_rec_reserve(ACT_REC_DEVICE, sizeof(*r));
        if (r) {
            r->h.aux = name;
            r->device = dkey;
            r->vendor = vendor;
            r->source = a->source;
            r->index = device;
            r->pad = 0;
            act_rec_commit();
        }
    }
    if (lane_first_seen(a, a->queues, &a->n_queues, qkey)) {
        snprintf(buf, sizeof(buf), "stream %u", stream);
        uint32_t label = act_str_intern_cstr(buf);
        act_rec_queue *q = act_rec_reserve(ACT_REC_QUEUE, sizeof(*q));
        if (q) {
            q->h.aux = label;
            q->queue = qkey;
            q->device = dkey;
            q->properties = stream; /* the vendor's stream id, for args */
            act_rec_commit();
        }
    }
}

int act_activity_emit_op(act_activity *a, const act_activity_op *op)
{
    lane_announce(a, op->device, op->stream);
    uint32_t name = act_str_intern_cstr(op->name && *op->name ? op->name : "unnamed");
    uint32_t detail = op->detail && *op->detail ? act_str_intern_cstr(op->detail) : 0;
    act_rec_device_op *r = act_rec_reserve(ACT_REC_DEVICE_OP, sizeof(*r));
    if (!r)
        return -1;
    memset((char *)r + sizeof(r->h), 0, sizeof(*r) - sizeof(r->h));
    r->h.aux = name;
    r->op = op->op;
    r->source = (uint8_t)a->source;
    r->flags = (op->start && op->end) ? 0 : ACT_OPF_NO_TIMES;
    r->status = op->status;
    r->device = act_activity_device_key(a, op->device);
    r->queue = act_activity_queue_key(a, op->device, op->stream);
    r->queued = act_activity_ts(a, op->queued);
    r->submit = act_activity_ts(a, op->submit);
    r->start = act_activity_ts(a, op->start);
    r->end = act_activity_ts(a, op->end);
    r->corr = op->corr;
    r->bytes = op->bytes;
    for (int i = 0; i < 3; i++) {
        r->gsize[i] = op->gsize[i];
        r->lsize[i] = op->lsize[i];
    }
    r->detail = detail;
    act_rec_commit();
    atomic_fetch_add_explicit(&a->converted, 1, memory_order_relaxed);
    return 0;
}

void act_activity_extcorr_record(act_activity *a, int foreign, uint64_t corr, uint64_t ext)
{
    if (foreign) {
        atomic_fetch_add(&a->foreign_extcorr, 1);
        return;
    }
    act_rec_extcorr *r = act_rec_reserve(ACT_REC_EXTCORR, sizeof(*r));
    if (!r)
        return;
    r->h.aux = a->source;
    r->corr = corr;
    r->ext = ext;
    act_rec_commit();
    atomic_fetch_add(&a->converted, 1);
}

int act_activity_api_superseded(act_activity *a)
{
    if (!atomic_load(&a->callbacks))
        return 0;
    atomic_fetch_add(&a->api_superseded, 1);
    return 1;
}

void act_activity_emit_api(act_activity *a, const char *name, uint64_t start, uint64_t end,
                           uint64_t corr, int32_t result)
{
    if (act_rec_api_emit(name, act_activity_ts(a, start), act_activity_ts(a, end), corr, 0, result,
                         a->source) == 0)
        atomic_fetch_add(&a->converted, 1);
}

/* Write a clock record: method string and the current offset. */
static void emit_clock(act_activity *a, const char *method, int64_t offset, int64_t err)
{
    uint32_t m = act_str_intern_cstr(method);
    act_rec_clock *r = act_rec_reserve(ACT_REC_CLOCK, sizeof(*r));
    if (!r)
        return;
    r->h.aux = m;
    /* One mapping for every device of this source. */
    r->device = act_activity_device_key(a, ACT_ACTIVITY_ALL_DEVICES);
    r->offset_ns = offset;
    r->error_ns = err;
    act_rec_commit();
}

void act_activity_clock_realtime(act_activity *a)
{
    char method[64];
    int64_t err = 0;
    a->offset_ns = act_clock_realtime_offset(&err);
    a->offset_start_ns = a->offset_ns;
    a->offset_err_ns = err;
    snprintf(method, sizeof(method), "%s realtime offset at start", a->name);
    emit_clock(a, method, a->offset_ns, err);
}

void act_activity_clock_timeline(act_activity *a, const char *method)
{
    a->offset_ns = 0;
    a->offset_start_ns = 0;
    emit_clock(a, method, 0, 0);
}

/* The clock again at stop, for the drift the builder puts in the trace's
 * metadata (the method must end in " at stop": vendor_clock.c). An offset
 * of 0 means the vendor stamps our clock: nothing to measure. */
static int64_t clock_at_stop(act_activity *a, int64_t *err)
{
    char method[64];
    *err = 0;
    int64_t off = a->offset_ns ? act_clock_realtime_offset(err) : 0;
    snprintf(method, sizeof(method), "%s %s at stop", a->name,
             a->offset_ns ? "realtime offset" : "timestamp callback");
    emit_clock(a, method, off, *err);
    return off;
}

/* ---- launch-thread API callbacks -------------------------------------- */

/* Per-thread state lives behind a pthread key, not in __thread variables:
 * the recorder's initial-exec TLS puts this whole module's TLS block in
 * the small static TLS surplus, and two copies of the library in one
 * process must still fit there. Allocated once per launching thread. */
#define API_STACK 16
typedef struct api_frame {
    uint64_t start, ext, corr;
    uint32_t level; /* nesting level the frame was opened at */
    int pushed;     /* the source pushed ext onto the vendor's stack */
} api_frame;
typedef struct api_tls {
    uint32_t depth; /* vendor calls open on this thread, recorded or not */
    uint32_t frames;
    api_frame frame[API_STACK];
} api_tls;

static pthread_key_t api_key;
static pthread_once_t api_key_once = PTHREAD_ONCE_INIT;

static void api_key_create(void)
{
    pthread_key_create(&api_key, free);
}

static api_tls *api_tls_get(void)
{
    pthread_once(&api_key_once, api_key_create);
    api_tls *t = pthread_getspecific(api_key);
    if (ACT_UNLIKELY(!t)) {
        t = calloc(1, sizeof(*t));
        if (t)
            pthread_setspecific(api_key, t);
    }
    return t;
}

int act_activity_api_enter(act_activity *a, uint64_t corr, uint64_t *ext_out)
{
    *ext_out = 0;
    api_tls *t = api_tls_get();
    if (!t)
        return 0;
    uint32_t level = t->depth++;
    if ((a->outermost_only && level != 0) || t->frames >= API_STACK)
        return 0;
    api_frame *f = &t->frame[t->frames++];
    f->ext = act_range_current_ext();
    f->corr = corr;
    f->level = level;
    f->pushed = 0;
    f->start = act_clock_now();
    *ext_out = f->ext;
    return 1;
}

void act_activity_api_mark_pushed(void)
{
    api_tls *t = api_tls_get();
    if (t && t->frames)
        t->frame[t->frames - 1].pushed = 1;
}

int act_activity_api_exit(act_activity *a, const char *name, uint64_t corr, int32_t result)
{
    uint64_t end = act_clock_now();
    api_tls *t = api_tls_get();
    if (!t || t->depth == 0)
        return 0; /* exit without enter (callbacks enabled mid-call) */
    uint32_t level = --t->depth;
    if (t->frames == 0 || t->frame[t->frames - 1].level != level)
        return 0; /* this call was not recorded */
    const api_frame *f = &t->frame[--t->frames];
    if (atomic_load(&a->state) == ACT_ACTIVITY_CAPTURING) {
        if (corr == 0)
            corr = f->corr;
        /* The slice carries the range itself: no separate corr -> ext
         * record, which would be ambiguous once the vendor reuses `corr`
         * (the builder joins op -> launch by corr and time, then takes the
         * launch's ext). */
        act_rec_api_emit(name ? name : "unknown", f->start, end, corr, f->ext, result, a->source);
    }
    return f->pushed;
}

/* ---- drain and end of a cycle ---------------------------------------- */

/* One drain poll: flush, then report how many records (or refusals) came
 * in since the previous poll. */
typedef struct drain_ctx {
    act_activity *a;
    void (*flush)(void);
    uint64_t seen;
} drain_ctx;

static int64_t drain_poll(void *arg, int64_t *outstanding)
{
    drain_ctx *d = arg;
    d->flush();
    uint64_t now = atomic_load(&d->a->records) + atomic_load(&d->a->refused);
    int64_t got = (int64_t)(now - d->seen);
    d->seen = now;
    *outstanding = -1; /* neither vendor says how much is still in flight */
    return got;
}

/* Drain through act_drain (init.h), bounded by the cycle's drain timeout;
 * the poll count goes into the stats. */
static void drain(act_activity *a)
{
    drain_ctx d = {a, a->ops->flush, atomic_load(&a->records) + atomic_load(&a->refused)};
    act_drain_result r = {0};
    /* The project's drain: FlushAll every 25 ms until three polls in a row
     * bring nothing new, bounded; a cut-off is counted and written into
     * the trace by act_drain itself. */
    act_drain(a->name, drain_poll, &d, a->opts.drain_timeout_ms, &r);
    a->drain_polls = r.polls;
    a->drain_bound_hit = r.cut_off;
}

/* End of stop: state off, offset at stop, errors for anything lost. The
 * clock records at start and stop are all the trace needs: the builder
 * derives the "<source>_clock" metadata from them (vendor_clock.c). */
static void cycle_end(act_activity *a, int64_t stop_offset)
{
    atomic_store_explicit(&a->state, ACT_ACTIVITY_OFF, memory_order_release);
    a->offset_stop_ns = stop_offset;
    uint64_t refused = atomic_load(&a->refused), vdrop = atomic_load(&a->vendor_dropped);
    if (refused)
        act_activity_error(
            a, "%llu activity records dropped: the buffer pool (%u x %zu bytes) was exhausted",
            (unsigned long long)refused, a->buf_count, a->buf_size);
    if (vdrop)
        act_activity_error(a, "%llu activity records dropped by the vendor library",
                           (unsigned long long)vdrop);
}

/* ---- start and stop --------------------------------------------------- */

/* Error lines for a vendor call that failed and left the lane empty. */
static void call_failed(act_activity *a, const char *call, int r, const char *detail)
{
    act_activity_error(a, "%s%s failed (%d%s%s); %s device lane left empty", a->name, call, r,
                       detail ? ", " : "", detail ? detail : "", a->vendor);
}

static int subscribe(act_activity *a, const act_activity_ops *ops)
{
    int r = ops->subscribe();
    if (r == 0)
        return 0;
    if (r == ops->conflict) {
        act_activity_error(a, "%s; %s device lane left empty", ops->conflict_text, a->vendor);
        return ACT_E_CONFLICT;
    }
    call_failed(a, "Subscribe", r, ops->result_string ? ops->result_string(r) : NULL);
    return ACT_E_NOTFOUND;
}

/* Enable each kind; the ones refused are listed in one error line (mspti
 * refuses MEMCPY and MEMSET without its LD_PRELOAD) and the rest still
 * captured. */
static void kinds_enable(act_activity *a, const act_activity_ops *ops)
{
    char failed[256] = "", one[96];
    size_t used = 0;
    a->n_enabled = 0;
    for (const uint32_t *k = ops->kinds; *k; k++) {
        int r = ops->switch_kind(*k, 1);
        if (r == 0) {
            assert(a->n_enabled < ACT_ACTIVITY_MAX_KINDS);
            a->enabled[a->n_enabled++] = *k;
        } else if (used < sizeof(failed)) {
            ops->refusal(*k, r, one, sizeof(one));
            used += (size_t)snprintf(failed + used, sizeof(failed) - used, "%s%s", used ? ", " : "",
                                     one);
        }
    }
    if (failed[0])
        act_activity_error(a, "%sActivityEnable failed for %s", a->name, failed);
}

/* The vendor's part of the start, from the clock to the kinds. */
static int vendor_open(act_activity *a, const act_activity_ops *ops)
{
    if (ops->clock_before_subscribe)
        ops->clock_before_subscribe(a);
    int rc = subscribe(a, ops);
    if (rc != 0)
        return rc;
    int callbacks = ops->enable_callbacks();
    atomic_store(&a->callbacks, callbacks);
    if (!callbacks)
        act_log("%s: %s callbacks unavailable; launches are not linked to ranges", a->name,
                ops->callbacks_word);
    if (ops->clock_before_register)
        ops->clock_before_register(a); /* before any kind is enabled, as CUPTI requires */
    /* Capturing before the buffers are registered, so that the first
     * completed one is converted. */
    atomic_store_explicit(&a->state, ACT_ACTIVITY_CAPTURING, memory_order_release);
    int r = ops->register_buffers();
    if (r != 0) {
        atomic_store(&a->state, ACT_ACTIVITY_OFF);
        ops->unsubscribe();
        call_failed(a, "ActivityRegisterCallbacks", r, NULL);
        return ACT_E_NOTFOUND;
    }
    kinds_enable(a, ops);
    return 0;
}

static int start_locked(act_activity *a, const act_activity_ops *ops, const act_activity_opts *opts)
{
    /* Attached, window open or not: with --capture-range the spool starts
     * paused, and device work launched once the window opens must still be
     * seen; the builder keeps only what lies inside the window. */
    if (atomic_load(&a->state) != ACT_ACTIVITY_OFF || !act_capture_attached())
        return ACT_E_STATE;
    a->probing = opts && opts->optional;
    int rc = act_activity_load(a, ops->lib, opts && opts->optional);
    if (rc == 0 && ops->check)
        rc = ops->check();
    if (rc != 0)
        return rc;
    a->ops = ops;
    opts_resolve(opts, &a->opts);
    rc = cycle_begin(a, &a->opts);
    if (rc != 0) {
        act_activity_error(a, "cannot map the activity buffer pool");
        return rc;
    }
    return vendor_open(a, ops);
}

int act_activity_start(act_activity *a, const act_activity_ops *ops, const act_activity_opts *opts)
{
    pthread_mutex_lock(&a->cycle_lock);
    int rc = start_locked(a, ops, opts);
    pthread_mutex_unlock(&a->cycle_lock);
    /* Outside the cycle lock: the lifecycle runs its stop steps with its
     * own lock held and this source's stop takes the cycle lock, so the
     * order is lifecycle, then cycle (registering under the cycle lock
     * could deadlock against a session ending on another thread). Once:
     * the lifecycle ignores repeats. */
    if (rc == 0)
        act_lifecycle_on_stop(a->name, ops->stop);
    return rc;
}

static void stop_locked(act_activity *a)
{
    const act_activity_ops *ops = a->ops;
    atomic_store(&a->state, ACT_ACTIVITY_DRAINING);
    drain(a);
    for (uint32_t i = 0; i < a->n_enabled; i++)
        ops->switch_kind(a->enabled[i], 0);
    ops->unsubscribe();
    ops->flush(); /* once more: what came in while disabling */
    int64_t err = 0;
    int64_t off = clock_at_stop(a, &err);
    cycle_end(a, off);
}

void act_activity_stop(act_activity *a)
{
    pthread_mutex_lock(&a->cycle_lock);
    if (atomic_load(&a->state) == ACT_ACTIVITY_CAPTURING)
        stop_locked(a);
    pthread_mutex_unlock(&a->cycle_lock);
}

void act_activity_stats_get(act_activity *a, act_activity_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->records = atomic_load(&a->records);
    out->converted = atomic_load(&a->converted);
    out->buffers_refused = atomic_load(&a->refused);
    out->vendor_dropped = atomic_load(&a->vendor_dropped);
    out->late = atomic_load(&a->late);
    out->unknown = atomic_load(&a->unknown);
    out->api_superseded = atomic_load(&a->api_superseded);
    out->foreign_extcorr = atomic_load(&a->foreign_extcorr);
    out->unreadable_buffers = atomic_load(&a->unreadable);
    out->drain_polls = a->drain_polls;
    out->drain_bound_hit = a->drain_bound_hit;
    out->callbacks = atomic_load(&a->callbacks);
    out->active = atomic_load(&a->state) != ACT_ACTIVITY_OFF;
    out->offset_start_ns = a->offset_start_ns;
    out->offset_stop_ns = a->offset_stop_ns;
}
