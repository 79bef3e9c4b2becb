/*
 * mspti.c -- the Ascend NPU source: reads device activity through the
 * mspti activity API (libmspti.so, resolved lazily with dlopen/dlsym) and
 * writes acceltrace records through the shared activity core.
 *
 * Lifecycle (mirrors torch_npu's mspti backend, shared/reference
 * torch_npu-behaviours.md §4.3, with its weaknesses fixed):
 *   start: load library -> measure REALTIME offset -> msptiSubscribe (first,
 *          before any other mspti call; a second subscriber is reported
 *          once and leaves the lane empty) -> launch-thread callbacks for
 *          the RUNTIME domain -> RegisterCallbacks(pool request, convert)
 *          -> enable KERNEL, COMMUNICATION, MEMCPY, MEMSET, MARKER, API,
 *          EXTERNAL_CORRELATION.
 *   stop:  FlushAll every 25 ms until three polls in a row bring nothing
 *          new (bounded by the drain timeout) -> disable -> unsubscribe ->
 *          FlushAll once more -> REALTIME offset at stop.
 * The core runs that sequence (act_activity_start/stop); this file gives
 * it mspti's calls, callbacks and words (mspti_ops), and converts records.
 * mspti stamps CLOCK_REALTIME; records are mapped with the offset measured
 * at start (both offsets are written as ACT_REC_CLOCK records so a reader
 * can see the drift). Declarations come from mspti_decls.h (our own).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "init/init.h"
#include "sources/activity/activity_core.h"
#include "sources/mspti/mspti_decls.h"

static act_activity M = {
    .name = "mspti",
    .vendor = "Ascend",
    .device_word = "NPU",
    .source = ACT_SOURCE_MSPTI,
    .lane_lock = PTHREAD_MUTEX_INITIALIZER,
    .cycle_lock = PTHREAD_MUTEX_INITIALIZER,
};

#define MSPTI_HOST_DEVICE ACT_ACTIVITY_HOST_DEVICE /* lane of host-side mstx markers */

/* The mspti functions used, each named once: member of `ms`, symbol (of
 * type <symbol>_fn, mspti_decls.h), required. Both the members and the
 * dlsym table (mspti_syms) are made from this list. */
#define MSPTI_FUNCTIONS(X)                                                                         \
    X(Subscribe, msptiSubscribe, 1)                                                                \
    X(Unsubscribe, msptiUnsubscribe, 1)                                                            \
    X(RegisterCallbacks, msptiActivityRegisterCallbacks, 1)                                        \
    X(Enable, msptiActivityEnable, 1)                                                              \
    X(Disable, msptiActivityDisable, 1)                                                            \
    X(GetNextRecord, msptiActivityGetNextRecord, 1)                                                \
    X(FlushAll, msptiActivityFlushAll, 1)                                                          \
    X(EnableDomain, msptiEnableDomain, 0) /* optional: without it, no callbacks */

#define MSPTI_MEMBER(field, sym, required) sym##_fn field;
static struct {
    MSPTI_FUNCTIONS(MSPTI_MEMBER)
    msptiSubscriberHandle sub;
} ms;

/* Open start markers waiting for their end (mstx ranges). */
#define MARKERS_OPEN 128
static struct {
    pthread_mutex_t lock;
    struct {
        uint64_t id, ts;
        uint32_t device, stream;
        const char *name, *domain; /* library-owned, valid while the library lives */
        int used;
    } open[MARKERS_OPEN];
} mk = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- loading ---------------------------------------------------------- */

/* Where libmspti is looked for when ACCELTRACE_MSPTI_LIB is unset (docs/vendors.md). */
static const act_activity_lib_path mspti_paths[] = {
    {"ASCEND_HOME_PATH", "/lib64/libmspti.so", NULL},
    {NULL, "libmspti.so", "loader path"},
};

#define MSPTI_SYM(field, sym, required) ACT_ACTIVITY_SYM(ms, field, sym, required),
static const act_activity_sym mspti_syms[] = {MSPTI_FUNCTIONS(MSPTI_SYM)};

static const act_activity_lib mspti_lib = ACT_ACTIVITY_LIB(
    "ACCELTRACE_MSPTI_LIB", mspti_paths, mspti_syms, "libmspti.so", "the mspti library");

/* ---- conversion ------------------------------------------------------- */

static void marker_emit(uint64_t start, uint64_t end, uint32_t device, uint32_t stream,
                        const char *name, const char *domain)
{
    act_activity_op op = {.op = ACT_OP_MARKER,
                          .device = device,
                          .stream = stream,
                          .start = start,
                          .end = end,
                          .name = name ? name : "marker",
                          .detail = domain};
    act_activity_emit_op(&M, &op);
}

static void convert_marker(const msptiActivityMarker *r)
{
    uint32_t flag = (uint32_t)r->flag;
    uint64_t ts = r->timestamp, id = r->id;
    int on_device = r->sourceKind == MSPTI_ACTIVITY_SOURCE_KIND_DEVICE;
    uint32_t device = on_device ? r->objectId.ds.deviceId : MSPTI_HOST_DEVICE;
    uint32_t stream = on_device ? r->objectId.ds.streamId : r->objectId.pt.threadId;
    const char *name = r->name, *domain = r->domain;
    if (flag & (MSPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS |
                MSPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS_WITH_DEVICE)) {
        marker_emit(ts, ts, device, stream, name, domain);
        return;
    }
    pthread_mutex_lock(&mk.lock);
    if (flag & (MSPTI_ACTIVITY_FLAG_MARKER_START | MSPTI_ACTIVITY_FLAG_MARKER_START_WITH_DEVICE)) {
        for (int i = 0; i < MARKERS_OPEN; i++) {
            if (!mk.open[i].used) {
                mk.open[i].used = 1;
                mk.open[i].id = id;
                mk.open[i].ts = ts;
                mk.open[i].device = device;
                mk.open[i].stream = stream;
                mk.open[i].name = name;
                mk.open[i].domain = domain;
                pthread_mutex_unlock(&mk.lock);
                return;
            }
        }
        pthread_mutex_unlock(&mk.lock);
        marker_emit(ts, ts, device, stream, name, domain); /* table full: keep it as an instant */
        return;
    }
    for (int i = 0; i < MARKERS_OPEN; i++) {
        if (mk.open[i].used && mk.open[i].id == id && mk.open[i].device == device) {
            uint64_t start = mk.open[i].ts;
            uint32_t s = mk.open[i].stream;
            const char *n = mk.open[i].name, *d = mk.open[i].domain;
            mk.open[i].used = 0;
            pthread_mutex_unlock(&mk.lock);
            marker_emit(start, ts, device, s, n, d);
            return;
        }
    }
    pthread_mutex_unlock(&mk.lock);
    atomic_fetch_add(&M.unknown, 1); /* an end without its start */
}

static uint8_t memcpy_op(uint32_t kind, const char **name)
{
    switch (kind) {
    case MSPTI_ACTIVITY_MEMCPY_KIND_HTOD: *name = "Memcpy HtoD"; return ACT_OP_MEMCPY_HTOD;
    case MSPTI_ACTIVITY_MEMCPY_KIND_DTOH: *name = "Memcpy DtoH"; return ACT_OP_MEMCPY_DTOH;
    case MSPTI_ACTIVITY_MEMCPY_KIND_DTOD: *name = "Memcpy DtoD"; return ACT_OP_MEMCPY_DTOD;
    case MSPTI_ACTIVITY_MEMCPY_KIND_HTOH: *name = "Memcpy HtoH"; return ACT_OP_OTHER;
    default: *name = "Memcpy"; return ACT_OP_OTHER;
    }
}

/* Kernel, Communication and Hccl records name their place the same way. */
static act_activity_op op_at(uint8_t kind, msptiDeviceStream ds, uint64_t start, uint64_t end,
                             uint64_t corr)
{
    return act_activity_op_on(kind, ds.deviceId, ds.streamId, start, end, corr);
}

/* A collective (Communication, or its older form Hccl) on its stream. */
static act_activity_op collective(msptiDeviceStream ds, uint64_t start, uint64_t end, uint64_t corr,
                                  const char *name, const char *comm)
{
    act_activity_op op = op_at(ACT_OP_COLLECTIVE, ds, start, end, corr);
    op.name = name;
    op.detail = comm;
    return op;
}

/* Device records into ops; the rest as host slices, mappings or markers. */
static void convert(const void *record)
{
    const msptiActivity *rec = record;
    act_activity_op op;
    const char *name;
    switch (rec->kind) {
    case MSPTI_ACTIVITY_KIND_KERNEL: {
        const msptiActivityKernel *k = (const msptiActivityKernel *)rec;
        op = op_at(ACT_OP_KERNEL, k->ds, k->start, k->end, k->correlationId);
        op.name = k->name ? k->name : (k->type ? k->type : "kernel");
        op.detail = k->type;
        break;
    }
    case MSPTI_ACTIVITY_KIND_COMMUNICATION: {
        const msptiActivityCommunication *c = (const msptiActivityCommunication *)rec;
        op = collective(c->ds, c->start, c->end, c->correlationId,
                        c->name ? c->name : "communication", c->commName);
        break;
    }
    case MSPTI_ACTIVITY_KIND_HCCL: {
        const msptiActivityHccl *c = (const msptiActivityHccl *)rec;
        op = collective(c->ds, c->start, c->end, 0, c->name ? c->name : "hccl", c->commName);
        break;
    }
    case MSPTI_ACTIVITY_KIND_MEMCPY: {
        const msptiActivityMemcpy *m = (const msptiActivityMemcpy *)rec;
        uint8_t kind = memcpy_op((uint32_t)m->copyKind, &name);
        op = act_activity_op_on(kind, m->deviceId, m->streamId, m->start, m->end, m->correlationId);
        op.name = name;
        op.bytes = m->bytes;
        break;
    }
    case MSPTI_ACTIVITY_KIND_MEMSET: {
        const msptiActivityMemset *m = (const msptiActivityMemset *)rec;
        op = act_activity_op_on(ACT_OP_MEMSET, m->deviceId, m->streamId, m->start, m->end,
                                m->correlationId);
        op.name = "Memset";
        op.bytes = m->bytes;
        break;
    }
    case MSPTI_ACTIVITY_KIND_MARKER: convert_marker((const msptiActivityMarker *)rec); return;
    case MSPTI_ACTIVITY_KIND_API:
    case MSPTI_ACTIVITY_KIND_ACL_API:
    case MSPTI_ACTIVITY_KIND_NODE_API:
    case MSPTI_ACTIVITY_KIND_RUNTIME_API: {
        const msptiActivityApi *a = (const msptiActivityApi *)rec;
        if (!act_activity_api_superseded(&M))
            act_activity_emit_api(&M, a->name ? a->name : "api", a->start, a->end, a->correlationId,
                                  0);
        return;
    }
    case MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const msptiActivityExternalCorrelation *e = (const msptiActivityExternalCorrelation *)rec;
        /* mspti's external-correlation stack is process-global: with the
         * launch-thread callbacks on, our own mapping is exact and these
         * are not needed; without them they are the best there is. */
        act_activity_extcorr_record(&M, atomic_load(&M.callbacks), e->correlationId, e->externalId);
        return;
    }
    default: atomic_fetch_add(&M.unknown, 1); return;
    }
    act_activity_emit_op(&M, &op);
}

/* ---- vendor callbacks ------------------------------------------------- */

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    act_activity_buffer_request(&M, buffer, size, max_records);
}

/* Always iterate to the end: mspti's cursor is per thread and only
 * resets when it reaches `valid`. */
static int next_record(uint8_t *buf, size_t valid, void **rec, int *code)
{
    msptiActivity *next = *rec;
    msptiResult r = ms.GetNextRecord(buf, valid, &next);
    *rec = next;
    if (r == MSPTI_SUCCESS)
        return next ? 1 : 0;
    if (r == MSPTI_ERROR_MAX_LIMIT_REACHED)
        return 0;   /* the normal end */
    *code = (int)r; /* e.g. INNER: a kind this build does not know */
    return -1;
}

static void buffer_completed(uint8_t *buffer, size_t size, size_t valid)
{
    (void)size;
    act_activity_buffer_read(&M, buffer, valid, next_record, convert);
    act_activity_buffer_give(&M, buffer);
}

static void api_callback(void *userdata, msptiCallbackDomain domain, msptiCallbackId cbid,
                         const msptiCallbackData *d)
{
    (void)userdata;
    (void)cbid;
    if (domain != MSPTI_CB_DOMAIN_RUNTIME || !d)
        return;
    uint64_t ext;
    if (d->callbackSite == MSPTI_API_ENTER)
        act_activity_api_enter(&M, d->correlationId, &ext);
    else
        act_activity_api_exit(&M, d->functionName, d->correlationId, 0);
}

/* ---- the calls the core makes (ACT_ACTIVITY_VENDOR_CALLS names them) -- */

_Static_assert(MSPTI_SUCCESS == 0, "the core takes 0 as success");

static int subscribe(void)
{
    return (int)ms.Subscribe(&ms.sub, api_callback, NULL);
}

static int enable_callbacks(void)
{
    return ms.EnableDomain && ms.EnableDomain(1, ms.sub, MSPTI_CB_DOMAIN_RUNTIME) == MSPTI_SUCCESS;
}

static int register_buffers(void)
{
    return (int)ms.RegisterCallbacks(buffer_requested, buffer_completed);
}

static const uint32_t wanted[] = {
    MSPTI_ACTIVITY_KIND_KERNEL,
    MSPTI_ACTIVITY_KIND_COMMUNICATION,
    MSPTI_ACTIVITY_KIND_MEMCPY,
    MSPTI_ACTIVITY_KIND_MEMSET,
    MSPTI_ACTIVITY_KIND_MARKER,
    MSPTI_ACTIVITY_KIND_API,
    MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    MSPTI_ACTIVITY_KIND_INVALID, /* the end */
};
_Static_assert(ACT_ARRAY_SIZE(wanted) - 1 <= ACT_ACTIVITY_MAX_KINDS, "room for the kinds");

static int switch_kind(uint32_t kind, int on)
{
    msptiActivityKind k = (msptiActivityKind)kind;
    return (int)(on ? ms.Enable(k) : ms.Disable(k));
}

static const char *kind_name(uint32_t k)
{
    static const char *names[] = {"invalid",       "MARKER", "KERNEL",
                                  "API",           "HCCL",   "MEMORY",
                                  "MEMSET",        "MEMCPY", "EXTERNAL_CORRELATION",
                                  "COMMUNICATION", "ACL_API"};
    return k < ACT_ARRAY_SIZE(names) ? names[k] : "?";
}

/* Without the preload mspti refuses MEMCPY and MEMSET: say what fixes it. */
static void refusal(uint32_t kind, int r, char *out, size_t n)
{
    snprintf(out, n, "%s (%d%s)", kind_name(kind), r,
             r == MSPTI_ERROR_WITHOUT_LD_PRELOAD ? ": needs LD_PRELOAD=libmspti.so" : "");
}

static void unsubscribe(void)
{
    ms.Unsubscribe(ms.sub);
    ms.sub = NULL;
}

static void flush(void)
{
    ms.FlushAll(1);
}

/* mspti stamps CLOCK_REALTIME: the offset is measured before subscribing,
 * so even a refused start leaves it in the trace. */
static const act_activity_ops mspti_ops = {
    ACT_ACTIVITY_VENDOR_CALLS,
    .lib = &mspti_lib,
    .conflict = MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
    .conflict_text = "another mspti subscriber is active (msprof, torch_npu's profiler?)",
    .callbacks_word = "runtime",
    .clock_before_subscribe = act_activity_clock_realtime,
    .stop = act_source_mspti_stop,
};

int act_source_mspti_start(const act_activity_opts *opts)
{
    return act_activity_start(&M, &mspti_ops, opts);
}

void act_source_mspti_stop(void)
{
    act_activity_stop(&M);
}

void act_source_mspti_stats(act_activity_stats *out)
{
    act_activity_stats_get(&M, out);
}
