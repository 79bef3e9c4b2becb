/*
 * cupti.c -- the NVIDIA GPU source: reads device activity through the
 * CUPTI activity API (libcupti, resolved lazily with dlopen/dlsym) and
 * writes acceltrace records through the shared activity core
 * (src/sources/activity/activity_core.h). Built only where the toolkit's
 * cupti.h is found (build.cmake); record layouts come from that header.
 *
 * Lifecycle:
 *   start: load library -> cuptiGetVersion must match the major.minor of
 *          the cupti.h compiled in (records are read with those layouts;
 *          a mismatch is reported, nothing is read) -> cuptiSubscribe with
 *          our launch-thread callback (a second subscriber is reported
 *          once, lane left empty) -> RUNTIME/DRIVER callback domains ->
 *          cuptiActivityRegisterTimestampCallback(act_clock_now) so CUPTI
 *          stamps records on our timeline -> RegisterCallbacks(pool,
 *          convert) -> enable CONCURRENT_KERNEL, MEMCPY, MEMSET, RUNTIME,
 *          DRIVER, SYNCHRONIZATION, EXTERNAL_CORRELATION.
 *   stop:  cuptiActivityFlushAll(FORCED) polled until three polls bring
 *          nothing new (bounded) -> disable -> unsubscribe -> forced flush.
 * The core runs that sequence (act_activity_start/stop); this file gives
 * it CUPTI's calls, callbacks and words (cupti_ops), and converts records.
 * Entry through CUDA_INJECTION64_PATH: InitializeInjection() below.
 */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "init/hooks.h"
#include "init/init.h"
#include "sources/activity/activity_core.h"

/* The fields read below sit where the 13.0 header puts them; the version
 * check at start refuses libraries whose records may differ. */
_Static_assert(offsetof(CUpti_ActivityKernel10, start) == 16 &&
                   offsetof(CUpti_ActivityKernel10, end) == 24 &&
                   offsetof(CUpti_ActivityKernel10, deviceId) == 40 &&
                   offsetof(CUpti_ActivityKernel10, streamId) == 48 &&
                   offsetof(CUpti_ActivityKernel10, correlationId) == 92 &&
                   offsetof(CUpti_ActivityKernel10, name) == 104,
               "CUPTI Kernel10 layout as measured");

static act_activity C = {
    .name = "cupti",
    .vendor = "CUDA",
    .device_word = "GPU",
    .source = ACT_SOURCE_CUPTI,
    .lane_lock = PTHREAD_MUTEX_INITIALIZER,
    .cycle_lock = PTHREAD_MUTEX_INITIALIZER,
    .outermost_only = 1,
};

typedef CUptiResult (*GetVersion_fn)(uint32_t *);
typedef CUptiResult (*Subscribe_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
typedef CUptiResult (*Unsubscribe_fn)(CUpti_SubscriberHandle);
typedef CUptiResult (*EnableDomain_fn)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
typedef CUptiResult (*RegisterCallbacks_fn)(CUpti_BuffersCallbackRequestFunc,
                                            CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*RegisterTimestampCallback_fn)(CUpti_TimestampCallbackFunc);
typedef CUptiResult (*Kind_fn)(CUpti_ActivityKind);
typedef CUptiResult (*GetNextRecord_fn)(uint8_t *, size_t, CUpti_Activity **);
typedef CUptiResult (*FlushAll_fn)(uint32_t);
typedef CUptiResult (*GetNumDropped_fn)(CUcontext, uint32_t, size_t *);
typedef CUptiResult (*PushExt_fn)(CUpti_ExternalCorrelationKind, uint64_t);
typedef CUptiResult (*PopExt_fn)(CUpti_ExternalCorrelationKind, uint64_t *);
typedef CUptiResult (*GetResultString_fn)(CUptiResult, const char **);

/* The CUPTI functions used, each named once: type, member of `cupti_state`,
 * symbol, required. Both the members and the dlsym table (cupti_syms) are
 * made from this list. */
#define CUPTI_FUNCTIONS(X)                                                                         \
    X(GetVersion_fn, GetVersion, cuptiGetVersion, 1)                                               \
    X(Subscribe_fn, Subscribe, cuptiSubscribe, 1)                                                  \
    X(Unsubscribe_fn, Unsubscribe, cuptiUnsubscribe, 1)                                            \
    X(RegisterCallbacks_fn, RegisterCallbacks, cuptiActivityRegisterCallbacks, 1)                  \
    X(Kind_fn, Enable, cuptiActivityEnable, 1)                                                     \
    X(Kind_fn, Disable, cuptiActivityDisable, 1)                                                   \
    X(GetNextRecord_fn, GetNextRecord, cuptiActivityGetNextRecord, 1)                              \
    X(FlushAll_fn, FlushAll, cuptiActivityFlushAll, 1)                                             \
    X(EnableDomain_fn, EnableDomain, cuptiEnableDomain, 0)                                         \
    X(RegisterTimestampCallback_fn, RegisterTimestampCallback,                                     \
      cuptiActivityRegisterTimestampCallback, 0)                                                   \
    X(GetNumDropped_fn, GetNumDroppedRecords, cuptiActivityGetNumDroppedRecords, 0)                \
    X(PushExt_fn, PushExt, cuptiActivityPushExternalCorrelationId, 0)                              \
    X(PopExt_fn, PopExt, cuptiActivityPopExternalCorrelationId, 0)                                 \
    X(GetResultString_fn, GetResultString, cuptiGetResultString, 0)

#define CUPTI_MEMBER(type, field, sym, required) type field;
static struct {
    CUPTI_FUNCTIONS(CUPTI_MEMBER)
    CUpti_SubscriberHandle sub;
    uint32_t version;
} cupti_state;

#define EXT_KIND CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0

/* ---- loading ---------------------------------------------------------- */

/* Where libcupti is looked for when ACCELTRACE_CUPTI_LIB is unset (docs/vendors.md). */
static const act_activity_lib_path cupti_paths[] = {
    {NULL, "libcupti.so.13", NULL},
    {NULL, "libcupti.so", NULL},
    {"CUDA_HOME", "/lib64/libcupti.so", NULL},
    {NULL, "/usr/local/cuda/lib64/libcupti.so", NULL},
};

#define CUPTI_SYM(type, field, sym, required) ACT_ACTIVITY_SYM(cupti_state, field, sym, required),
static const act_activity_sym cupti_syms[] = {CUPTI_FUNCTIONS(CUPTI_SYM)};

static const act_activity_lib cupti_lib =
    ACT_ACTIVITY_LIB("ACCELTRACE_CUPTI_LIB", cupti_paths, cupti_syms, "libcupti", "libcupti");

/* Records are read with the layouts of the cupti.h compiled in; CUPTI
 * versions are xxyyzz and record structs change between minor releases
 * (Kernel11 in 13.2), so the major.minor must match. */
static int cupti_version_check(void)
{
    uint32_t v = 0;
    if (cupti_state.GetVersion(&v) != CUPTI_SUCCESS) {
        act_activity_error(&C, "cuptiGetVersion failed; CUDA device lane left empty");
        return ACT_E_UNSUPPORTED;
    }
    cupti_state.version = v;
    if (v / 100 != CUPTI_API_VERSION / 100) {
        act_activity_error(
            &C,
            "libcupti version %u.%u (%u) does not match the record layouts compiled in "
            "(CUPTI %u.%u, %u); rebuild acceltrace against this toolkit or point "
            "ACCELTRACE_CUPTI_LIB at a matching libcupti. CUDA device lane left empty",
            v / 10000, v / 100 % 100, v, CUPTI_API_VERSION / 10000, CUPTI_API_VERSION / 100 % 100,
            CUPTI_API_VERSION);
        return ACT_E_UNSUPPORTED;
    }
    return 0;
}

/* CUPTI's name for a result code, for messages. */
static const char *cu_err(CUptiResult r)
{
    const char *str = NULL;
    if (!cupti_state.GetResultString || cupti_state.GetResultString(r, &str) != CUPTI_SUCCESS ||
        !str)
        return "unknown CUPTI error";
    return str;
}

/* ---- conversion ------------------------------------------------------- */

static uint8_t memcpy_op(uint8_t kind, const char **name)
{
    switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: *name = "Memcpy HtoD"; return ACT_OP_MEMCPY_HTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: *name = "Memcpy DtoH"; return ACT_OP_MEMCPY_DTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: *name = "Memcpy DtoD"; return ACT_OP_MEMCPY_DTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: *name = "Memcpy HtoA"; return ACT_OP_MEMCPY_HTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: *name = "Memcpy AtoH"; return ACT_OP_MEMCPY_DTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: *name = "Memcpy AtoA"; return ACT_OP_MEMCPY_DTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: *name = "Memcpy AtoD"; return ACT_OP_MEMCPY_DTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: *name = "Memcpy DtoA"; return ACT_OP_MEMCPY_DTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: *name = "Memcpy PtoP"; return ACT_OP_MEMCPY_DTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: *name = "Memcpy HtoH"; return ACT_OP_OTHER;
    default: *name = "Memcpy"; return ACT_OP_OTHER;
    }
}

static const char *launch_type(uint8_t t)
{
    switch (t) {
    case CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR: return "regular";
    case CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE: return "cooperative";
    case CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE: return "cooperative multi-device";
    default: return "other";
    }
}

static const char *sync_name(uint32_t type)
{
    switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Context Sync";
    default: return "Sync";
    }
}

/* Synchronization records name a context, not a device: remember which
 * device each context belongs to from the kernels and copies seen. */
#define CTX_MAP 64
static struct {
    pthread_mutex_t lock;
    uint32_t ctx[CTX_MAP], dev[CTX_MAP];
    int n;
} ctxmap = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void ctx_learn(uint32_t ctx, uint32_t dev)
{
    pthread_mutex_lock(&ctxmap.lock);
    int i = 0;
    while (i < ctxmap.n && ctxmap.ctx[i] != ctx)
        i++;
    if (i == ctxmap.n && ctxmap.n < CTX_MAP)
        ctxmap.n++;
    if (i < CTX_MAP) {
        ctxmap.ctx[i] = ctx;
        ctxmap.dev[i] = dev;
    }
    pthread_mutex_unlock(&ctxmap.lock);
}

static uint32_t ctx_device(uint32_t ctx)
{
    uint32_t dev = 0;
    pthread_mutex_lock(&ctxmap.lock);
    for (int i = 0; i < ctxmap.n; i++)
        if (ctxmap.ctx[i] == ctx)
            dev = ctxmap.dev[i];
    pthread_mutex_unlock(&ctxmap.lock);
    return dev;
}

static void convert_api(const CUpti_ActivityAPI *a, int driver)
{
    if (act_activity_api_superseded(&C))
        return; /* written on the launching thread */
    char name[48];
    snprintf(name, sizeof(name), "%s cbid %u", driver ? "cuda driver" : "cuda runtime",
             (unsigned)a->cbid);
    act_activity_emit_api(&C, name, a->start, a->end, a->correlationId, (int32_t)a->returnValue);
}

/* A kernel with its launch type and its grid as work-items (grid x block). */
static act_activity_op kernel_op(const CUpti_ActivityKernel10 *k)
{
    act_activity_op op = act_activity_op_on(ACT_OP_KERNEL, k->deviceId, k->streamId, k->start,
                                            k->end, k->correlationId);
    op.name = k->name;
    op.detail = launch_type(k->launchType);
    op.queued = k->queued;
    op.submit = k->submitted;
    op.lsize[0] = (uint64_t)k->blockX, op.lsize[1] = (uint64_t)k->blockY,
    op.lsize[2] = (uint64_t)k->blockZ;
    op.gsize[0] = (uint64_t)k->gridX * op.lsize[0];
    op.gsize[1] = (uint64_t)k->gridY * op.lsize[1];
    op.gsize[2] = (uint64_t)k->gridZ * op.lsize[2];
    ctx_learn(k->contextId, k->deviceId);
    return op;
}

/* Device records into ops; the rest as host slices or mappings. */
static void convert(const void *record)
{
    const CUpti_Activity *rec = record;
    act_activity_op op;
    const char *name;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        op = kernel_op((const CUpti_ActivityKernel10 *)rec);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
        uint8_t kind = memcpy_op(m->copyKind, &name);
        op = act_activity_op_on(kind, m->deviceId, m->streamId, m->start, m->end, m->correlationId);
        op.name = name;
        op.bytes = m->bytes;
        ctx_learn(m->contextId, m->deviceId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
        op = act_activity_op_on(ACT_OP_MEMSET, m->deviceId, m->streamId, m->start, m->end,
                                m->correlationId);
        op.name = "Memset";
        op.bytes = m->bytes;
        break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)rec;
        op = act_activity_op_on(ACT_OP_SYNC, ctx_device(s->contextId), s->streamId, s->start,
                                s->end, s->correlationId);
        op.name = sync_name((uint32_t)s->type);
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: convert_api((const CUpti_ActivityAPI *)rec, 0); return;
    case CUPTI_ACTIVITY_KIND_DRIVER: convert_api((const CUpti_ActivityAPI *)rec, 1); return;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *e = (const CUpti_ActivityExternalCorrelation *)rec;
        /* Ids of another kind are another tool's. */
        act_activity_extcorr_record(&C, e->externalKind != EXT_KIND, e->correlationId,
                                    e->externalId);
        return;
    }
    default: atomic_fetch_add(&C.unknown, 1); return;
    }
    act_activity_emit_op(&C, &op);
}

/* ---- vendor callbacks ------------------------------------------------- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    act_activity_buffer_request(&C, buffer, size, max_records);
}

static int next_record(uint8_t *buf, size_t valid, void **rec, int *code)
{
    CUpti_Activity *next = *rec;
    CUptiResult r = cupti_state.GetNextRecord(buf, valid, &next);
    *rec = next;
    if (r == CUPTI_SUCCESS)
        return 1;
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED)
        return 0; /* the normal end */
    *code = (int)r;
    return -1;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)size;
    if (!act_activity_buffer_read(&C, buffer, valid, next_record, convert))
        return;
    size_t dropped = 0;
    if (cupti_state.GetNumDroppedRecords &&
        cupti_state.GetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
        atomic_fetch_add(&C.vendor_dropped, dropped);
        for (size_t i = 0; i < dropped; i++)
            act_rec_drop(ACT_REC_DEVICE_OP);
    }
    act_activity_buffer_give(&C, buffer);
}

static uint64_t CUPTIAPI timestamp_now(void)
{
    return act_clock_now();
}

/* Runtime calls make driver calls with the same correlation id: only the
 * outermost call of a thread becomes a host slice (C.outermost_only). */
static void CUPTIAPI api_callback(void *userdata, CUpti_CallbackDomain domain,
                                  CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    (void)cbid;
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API)
        return;
    const CUpti_CallbackData *d = data;
    if (d->callbackSite == CUPTI_API_ENTER) {
        uint64_t ext = 0;
        /* CUPTI's stack is per thread: push so its own EXTERNAL_CORRELATION
         * records agree with ours. */
        if (act_activity_api_enter(&C, d->correlationId, &ext) && ext && cupti_state.PushExt &&
            cupti_state.PushExt(EXT_KIND, ext) == CUPTI_SUCCESS)
            act_activity_api_mark_pushed();
    } else if (act_activity_api_exit(&C, d->functionName, d->correlationId, 0)) {
        uint64_t last = 0;
        cupti_state.PopExt(EXT_KIND, &last);
    }
}

/* ---- the calls the core makes (ACT_ACTIVITY_VENDOR_CALLS names them) -- */

_Static_assert(CUPTI_SUCCESS == 0, "the core takes 0 as success");

static int subscribe(void)
{
    return (int)cupti_state.Subscribe(&cupti_state.sub, api_callback, NULL);
}

static const char *result_string(int r)
{
    return cu_err((CUptiResult)r);
}

static int enable_callbacks(void)
{
    return cupti_state.EnableDomain &&
           cupti_state.EnableDomain(1, cupti_state.sub, CUPTI_CB_DOMAIN_RUNTIME_API) ==
               CUPTI_SUCCESS &&
           cupti_state.EnableDomain(1, cupti_state.sub, CUPTI_CB_DOMAIN_DRIVER_API) ==
               CUPTI_SUCCESS;
}

/* Once subscribed (a timestamp callback registered while another tool
 * holds CUPTI would restamp its records), before any kind is enabled. */
static void clock_setup(act_activity *a)
{
    if (cupti_state.RegisterTimestampCallback &&
        cupti_state.RegisterTimestampCallback(timestamp_now) == CUPTI_SUCCESS)
        act_activity_clock_timeline(a, "cupti timestamp callback (monotonic_raw)");
    else
        act_activity_clock_realtime(a); /* CUPTI's default clock is CLOCK_REALTIME */
}

static int register_buffers(void)
{
    return (int)cupti_state.RegisterCallbacks(buffer_requested, buffer_completed);
}

static const uint32_t wanted[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_INVALID, /* the end */
};
_Static_assert(ACT_ARRAY_SIZE(wanted) - 1 <= ACT_ACTIVITY_MAX_KINDS, "room for the kinds");

static int switch_kind(uint32_t kind, int on)
{
    CUpti_ActivityKind k = (CUpti_ActivityKind)kind;
    return (int)(on ? cupti_state.Enable(k) : cupti_state.Disable(k));
}

static void refusal(uint32_t kind, int r, char *out, size_t n)
{
    snprintf(out, n, "kind %d (error %d)", (int)kind, r);
}

static void unsubscribe(void)
{
    cupti_state.Unsubscribe(cupti_state.sub);
    cupti_state.sub = NULL;
}

static void flush(void)
{
    cupti_state.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

static const act_activity_ops cupti_ops = {
    ACT_ACTIVITY_VENDOR_CALLS,
    .lib = &cupti_lib,
    .check = cupti_version_check,
    .conflict = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
    .conflict_text = "another CUPTI subscriber is active (Nsight, PyTorch's profiler, cuda-gdb?)",
    .result_string = result_string,
    .callbacks_word = "API",
    .clock_before_register = clock_setup,
    .stop = act_source_cupti_stop,
};

int act_source_cupti_start(const act_activity_opts *opts)
{
    return act_activity_start(&C, &cupti_ops, opts);
}

void act_source_cupti_stop(void)
{
    act_activity_stop(&C);
}

void act_source_cupti_stats(act_activity_stats *out)
{
    act_activity_stats_get(&C, out);
}

/*
 * CUDA_INJECTION64_PATH entry: the CUDA driver dlopens the library named
 * there during cuInit and calls this (it must have default visibility, or
 * the driver silently skips it). `acceltrace run --cuda` points the
 * variable at libacceltrace.so.
 */
ACT_EXPORT int InitializeInjection(void)
{
    if (act_init() != 0)
        return 1;                                  /* not attached: nothing to do, CUDA goes on */
    if (act_hooks_group_enabled("activity.cupti")) /* ACCELTRACE_HOOKS may exclude it */
        act_source_cupti_start(NULL);
    return 1;
}
