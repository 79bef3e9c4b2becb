/*
 * fake_cupti.c -- a faithful fake of libcupti for the test suite, compiled
 * against the real cupti.h (so every record is laid out exactly as the
 * toolkit's) and loaded by the CUPTI source through its ordinary dlopen
 * path (ACCELTRACE_CUPTI_LIB=/path/to/fake/libcupti.so).
 *
 * Behaviour as documented (shared/reference/device-apis.md §3):
 *   - cuptiGetVersion answers the compiled CUPTI_API_VERSION unless the
 *     "version" knob says otherwise (version-mismatch tests);
 *   - one subscriber (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
 *   - RUNTIME/DRIVER callbacks on the launching thread, the runtime launch
 *     making a nested driver call, both with the call's correlation id;
 *   - buffers requested lazily, completed at >= 80 % fill and delivered on
 *     a CUPTI worker thread; FlushAll(FORCED) delivers the partly filled
 *     one too, on the calling thread;
 *   - device records arrive `delay_ms` (default 200) after the launch;
 *   - records stamped with the registered timestamp callback, else
 *     CLOCK_REALTIME;
 *   - per-thread external-correlation stacks; an EXTERNAL_CORRELATION
 *     record per non-empty stack at each API call;
 *   - `drop_records` device records dropped and reported through
 *     cuptiActivityGetNumDroppedRecords;
 *   - GetNextRecord walks from *record (NULL = first).
 * fake_cu_init() plays the driver's cuInit: it loads CUDA_INJECTION64_PATH
 * and calls its InitializeInjection.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_EXPORT   __attribute__((visibility("default")))
#define MAX_COMPLETED 256
#define MAX_STREAMS   64
#define MAX_STACK     64

typedef struct pending {
    uint64_t due;
    size_t size;
    _Alignas(8) uint8_t bytes[sizeof(CUpti_ActivityKernel10)];
} pending;

typedef struct fbuf {
    uint8_t *buf;
    size_t size, valid;
    uint64_t nrec;
} fbuf;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond, idle;
    int threads_started;
    long version, delay_ms, drop_records, foreign_subscriber, no_callbacks, corr_wrap;
    int subscribed;
    CUpti_CallbackFunc cb;
    void *cb_userdata;
    int domains[CUPTI_CB_DOMAIN_SIZE];
    CUpti_BuffersCallbackRequestFunc req;
    CUpti_BuffersCallbackCompleteFunc done;
    CUpti_TimestampCallbackFunc ts;
    int enabled[CUPTI_ACTIVITY_KIND_COUNT];
    fbuf cur, completed[MAX_COMPLETED];
    int n_completed, delivering;
    pending *pend;
    size_t pend_head, pend_tail, pend_cap;
    uint32_t corr;
    uint64_t stream_busy[MAX_STREAMS];
    uint64_t written, dropped, delivered, dropped_unreported;
    char *strs[1024];
    int n_strs;
} F = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .cond = PTHREAD_COND_INITIALIZER,
       .idle = PTHREAD_COND_INITIALIZER,
       .version = CUPTI_API_VERSION,
       .delay_ms = 200,
       .corr_wrap = 100000};

static __thread uint64_t ext_stack[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE][MAX_STACK];
static __thread int ext_depth[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];

static uint64_t now_ts(void)
{
    if (F.ts)
        return F.ts();
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t now_rt(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static const char *intern(const char *s)
{
    for (int i = 0; i < F.n_strs; i++)
        if (strcmp(F.strs[i], s) == 0)
            return F.strs[i];
    if (F.n_strs == 1024)
        return "overflow";
    F.strs[F.n_strs] = strdup(s);
    return F.strs[F.n_strs++];
}

static size_t record_size(CUpti_ActivityKind kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    default: return 0;
    }
}

/* ---- buffers (F.lock held) -------------------------------------------- */

static void complete_current(void)
{
    if (!F.cur.buf)
        return;
    if (F.n_completed < MAX_COMPLETED)
        F.completed[F.n_completed++] = F.cur;
    pthread_cond_broadcast(&F.cond);
    memset(&F.cur, 0, sizeof(F.cur));
}

static void write_record(const void *rec, size_t size)
{
    CUpti_ActivityKind kind;
    memcpy(&kind, rec, sizeof(kind));
    if ((unsigned)kind >= CUPTI_ACTIVITY_KIND_COUNT || !F.enabled[kind] || !F.req)
        return;
    if (F.cur.buf && F.cur.valid * 10 >= F.cur.size * 8)
        complete_current();
    if (!F.cur.buf) {
        uint8_t *b = NULL;
        size_t sz = 0, max = 0;
        F.req(&b, &sz, &max);
        if (!b || sz == 0) {
            F.dropped++;
            return;
        }
        F.cur.buf = b, F.cur.size = sz, F.cur.valid = 0, F.cur.nrec = 0;
    }
    size_t aligned = (size + 7) & ~(size_t)7;
    if (F.cur.valid + aligned > F.cur.size) {
        F.dropped++;
        complete_current();
        return;
    }
    memcpy(F.cur.buf + F.cur.valid, rec, size);
    F.cur.valid += aligned;
    F.cur.nrec++;
    F.written++;
}

static void pend_push(const void *rec, size_t size, uint64_t due)
{
    if (F.pend_tail == F.pend_cap) {
        F.pend_cap = F.pend_cap ? F.pend_cap * 2 : 1024;
        F.pend = realloc(F.pend, F.pend_cap * sizeof(pending));
    }
    pending *p = &F.pend[F.pend_tail++];
    p->due = due;
    p->size = size;
    memcpy(p->bytes, rec, size);
    pthread_cond_broadcast(&F.cond);
}

/* ---- threads ---------------------------------------------------------- */

/* The CUPTI worker: delivers completed buffers, one at a time. */
static void *worker_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&F.lock);
    for (;;) {
        while (F.n_completed == 0)
            pthread_cond_wait(&F.cond, &F.lock);
        fbuf b = F.completed[0];
        memmove(F.completed, F.completed + 1, (size_t)(--F.n_completed) * sizeof(fbuf));
        F.delivering++;
        pthread_mutex_unlock(&F.lock);
        F.done(NULL, 0, b.buf, b.size, b.valid);
        pthread_mutex_lock(&F.lock);
        F.delivered += b.nrec;
        F.delivering--;
        pthread_cond_broadcast(&F.idle);
    }
    return NULL;
}

static void *device_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&F.lock);
    for (;;) {
        if (F.pend_head == F.pend_tail) {
            pthread_cond_wait(&F.cond, &F.lock);
            continue;
        }
        pending *p = &F.pend[F.pend_head];
        uint64_t now = now_rt();
        if (p->due > now) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t wait = p->due - now;
            ts.tv_sec += (time_t)(wait / 1000000000ull);
            ts.tv_nsec += (long)(wait % 1000000000ull);
            if (ts.tv_nsec >= 1000000000L)
                ts.tv_sec++, ts.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&F.cond, &F.lock, &ts);
            continue;
        }
        F.pend_head++;
        if (F.drop_records > 0) {
            F.drop_records--;
            F.dropped_unreported++;
            continue;
        }
        write_record(p->bytes, p->size);
    }
    return NULL;
}

static void start_threads(void)
{
    if (F.threads_started)
        return;
    F.threads_started = 1;
    pthread_t t;
    pthread_create(&t, NULL, worker_thread, NULL);
    pthread_detach(t);
    pthread_create(&t, NULL, device_thread, NULL);
    pthread_detach(t);
}

/* ---- the CUPTI API ---------------------------------------------------- */

FAKE_EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
    if (!version)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *version = (uint32_t)F.version;
    return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
    if (!str)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR (fake)";
    return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
                                       CUpti_CallbackFunc callback, void *userdata)
{
    static int handle;
    if (!subscriber)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&F.lock);
    if (F.subscribed || F.foreign_subscriber) {
        pthread_mutex_unlock(&F.lock);
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    F.subscribed = 1;
    F.cb = callback;
    F.cb_userdata = userdata;
    memset(F.domains, 0, sizeof(F.domains));
    F.corr = 0;
    *subscriber = (CUpti_SubscriberHandle)&handle;
    pthread_mutex_unlock(&F.lock);
    return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    (void)subscriber;
    pthread_mutex_lock(&F.lock);
    F.subscribed = 0;
    F.cb = NULL;
    memset(F.domains, 0, sizeof(F.domains));
    pthread_mutex_unlock(&F.lock);
    return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                          CUpti_CallbackDomain domain)
{
    (void)subscriber;
    if (F.no_callbacks)
        return CUPTI_ERROR_NOT_SUPPORTED;
    if (domain <= CUPTI_CB_DOMAIN_INVALID || domain >= CUPTI_CB_DOMAIN_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&F.lock);
    F.domains[domain] = enable != 0;
    pthread_mutex_unlock(&F.lock);
    return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
    if (!funcBufferRequested || !funcBufferCompleted)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&F.lock);
    F.req = funcBufferRequested;
    F.done = funcBufferCompleted;
    start_threads();
    pthread_mutex_unlock(&F.lock);
    return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp)
{
    pthread_mutex_lock(&F.lock);
    int any = 0;
    for (int i = 0; i < CUPTI_ACTIVITY_KIND_COUNT; i++)
        any |= F.enabled[i];
    if (!any) /* must come before any kind is enabled */
        F.ts = funcTimestamp;
    pthread_mutex_unlock(&F.lock);
    return any ? CUPTI_ERROR_INVALID_OPERATION : CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if ((unsigned)kind >= CUPTI_ACTIVITY_KIND_COUNT || record_size(kind) == 0)
        return CUPTI_ERROR_NOT_COMPATIBLE;
    pthread_mutex_lock(&F.lock);
    F.enabled[kind] = 1;
    pthread_mutex_unlock(&F.lock);
    return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
    if ((unsigned)kind >= CUPTI_ACTIVITY_KIND_COUNT)
        return CUPTI_ERROR_INVALID_KIND;
    pthread_mutex_lock(&F.lock);
    F.enabled[kind] = 0;
    pthread_mutex_unlock(&F.lock);
    return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                                   CUpti_Activity **record)
{
    if (!buffer || !record)
        return CUPTI_ERROR_INVALID_PARAMETER;
    size_t off = 0;
    if (*record) {
        size_t sz = record_size((*record)->kind);
        off = (size_t)((uint8_t *)*record - buffer) + ((sz + 7) & ~(size_t)7);
    }
    if (off >= validBufferSizeBytes)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    CUpti_Activity *r = (CUpti_Activity *)(buffer + off);
    if (record_size(r->kind) == 0)
        return CUPTI_ERROR_INVALID_KIND;
    *record = r;
    return CUPTI_SUCCESS;
}

/* The missing-symbol variant (fakes/cupti_nosym) hides it. */
#ifdef FAKE_CUPTI_OMIT_FLUSH
__attribute__((visibility("hidden")))
#else
FAKE_EXPORT
#endif
CUptiResult
cuptiActivityFlushAll(uint32_t flag)
{
    fbuf local[MAX_COMPLETED + 1];
    int n = 0;
    pthread_mutex_lock(&F.lock);
    for (int i = 0; i < F.n_completed; i++)
        local[n++] = F.completed[i];
    F.n_completed = 0;
    if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && F.cur.buf && F.cur.valid > 0) {
        local[n++] = F.cur;
        memset(&F.cur, 0, sizeof(F.cur));
    }
    pthread_mutex_unlock(&F.lock);
    for (int i = 0; i < n; i++) {
        F.done(NULL, 0, local[i].buf, local[i].size, local[i].valid);
        pthread_mutex_lock(&F.lock);
        F.delivered += local[i].nrec;
        pthread_mutex_unlock(&F.lock);
    }
    pthread_mutex_lock(&F.lock);
    while (F.delivering > 0)
        pthread_cond_wait(&F.idle, &F.lock);
    pthread_mutex_unlock(&F.lock);
    return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                                          size_t *dropped)
{
    (void)context;
    (void)streamId;
    if (!dropped)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&F.lock);
    *dropped = (size_t)F.dropped_unreported; /* reported once, then reset */
    F.dropped_unreported = 0;
    pthread_mutex_unlock(&F.lock);
    return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                               uint64_t id)
{
    if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
        kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (ext_depth[kind] == MAX_STACK)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    ext_stack[kind][ext_depth[kind]++] = id;
    return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                              uint64_t *lastId)
{
    if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
        kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (ext_depth[kind] == 0)
        return CUPTI_ERROR_QUEUE_EMPTY;
    uint64_t v = ext_stack[kind][--ext_depth[kind]];
    if (lastId)
        *lastId = v;
    return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiFinalize(void)
{
    return CUPTI_SUCCESS;
}

/* ---- fake-only entry points ------------------------------------------- */

FAKE_EXPORT void fake_cupti_set(const char *key, long value)
{
    pthread_mutex_lock(&F.lock);
    if (strcmp(key, "version") == 0)
        F.version = value;
    else if (strcmp(key, "delay_ms") == 0)
        F.delay_ms = value;
    else if (strcmp(key, "drop_records") == 0)
        F.drop_records = value;
    else if (strcmp(key, "foreign_subscriber") == 0)
        F.foreign_subscriber = value;
    else if (strcmp(key, "no_callbacks") == 0)
        F.no_callbacks = value;
    else if (strcmp(key, "corr_wrap") == 0)
        F.corr_wrap = value;
    else
        fprintf(stderr, "fake_cupti: unknown knob %s\n", key);
    pthread_mutex_unlock(&F.lock);
}

FAKE_EXPORT void fake_cupti_stats(uint64_t *written, uint64_t *dropped, uint64_t *delivered,
                                  uint64_t *pending)
{
    pthread_mutex_lock(&F.lock);
    *written = F.written;
    *dropped = F.dropped;
    *delivered = F.delivered;
    *pending = F.pend_tail - F.pend_head;
    pthread_mutex_unlock(&F.lock);
}

static void callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
                     const char *fname, uint32_t corr)
{
    pthread_mutex_lock(&F.lock);
    CUpti_CallbackFunc cb = F.subscribed && F.domains[domain] ? F.cb : NULL;
    void *ud = F.cb_userdata;
    pthread_mutex_unlock(&F.lock);
    CUpti_CallbackData d = {.callbackSite = site, .functionName = fname, .correlationId = corr};
    if (cb)
        cb(ud, domain, cbid, &d);
}

/* Host side of one call (callbacks, ext records, API record), with the
 * device record (if any) scheduled after the delay. A runtime launch makes
 * a nested driver call, as cudart does. */
/* Set by fake_cuda_stream_sync: the wait record to stamp inside the call. */
static __thread CUpti_ActivitySynchronization2 *tls_sync;

static uint32_t api_call(int runtime, const char *fname, CUpti_CallbackId cbid, void *dev,
                         size_t dev_size, uint32_t stream, uint64_t dur)
{
    CUpti_CallbackDomain dom = runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    pthread_mutex_lock(&F.lock);
    F.corr = F.corr % (uint32_t)F.corr_wrap + 1;
    uint32_t corr = F.corr;
    const char *name = intern(fname);
    pthread_mutex_unlock(&F.lock);
    uint64_t t0 = now_ts();
    callback(dom, cbid, CUPTI_API_ENTER, name, corr);
    if (runtime && dev)
        callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                 CUPTI_API_ENTER, "cuLaunchKernel", corr);
    uint64_t issued = now_ts();
    pthread_mutex_lock(&F.lock);
    for (int k = 1; k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; k++) {
        if (ext_depth[k] == 0)
            continue;
        CUpti_ActivityExternalCorrelation e = {.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                               .externalKind = (CUpti_ExternalCorrelationKind)k,
                                               .externalId = ext_stack[k][ext_depth[k] - 1],
                                               .correlationId = corr};
        write_record(&e, sizeof(e));
    }
    if (tls_sync) {
        /* A host wait inside the call: stamped within it, as CUPTI does. */
        tls_sync->start = issued;
        tls_sync->end = now_ts();
        tls_sync->correlationId = corr;
        write_record(tls_sync, sizeof(*tls_sync));
    }
    if (dev) {
        uint64_t start = issued + 20000, *busy = &F.stream_busy[stream % MAX_STREAMS];
        if (start < *busy)
            start = *busy;
        uint64_t end = start + dur;
        *busy = end;
        CUpti_Activity *a = dev;
        if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            CUpti_ActivityKernel10 *k = dev;
            k->start = start, k->end = end, k->correlationId = corr;
        } else if (a->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            CUpti_ActivityMemcpy6 *m = dev;
            m->start = start, m->end = end, m->correlationId = corr;
        } else if (a->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            CUpti_ActivityMemset4 *m = dev;
            m->start = start, m->end = end, m->correlationId = corr;
        }
        pend_push(dev, dev_size, now_rt() + (uint64_t)F.delay_ms * 1000000ull);
    }
    pthread_mutex_unlock(&F.lock);
    if (runtime && dev)
        callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT,
                 "cuLaunchKernel", corr);
    callback(dom, cbid, CUPTI_API_EXIT, name, corr);
    CUpti_ActivityAPI api = {.kind =
                                 runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER,
                             .cbid = cbid,
                             .start = t0,
                             .end = now_ts(),
                             .processId = 1,
                             .threadId = 1,
                             .correlationId = corr};
    pthread_mutex_lock(&F.lock);
    write_record(&api, sizeof(api));
    pthread_mutex_unlock(&F.lock);
    return corr;
}

FAKE_EXPORT uint32_t fake_cuda_launch_kernel(const char *name, uint32_t device, uint32_t stream,
                                             uint64_t dur_ns, int32_t grid, int32_t block)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.deviceId = device;
    k.contextId = 1 + device;
    k.streamId = stream;
    k.gridX = grid, k.gridY = 1, k.gridZ = 1;
    k.blockX = block, k.blockY = 1, k.blockZ = 1;
    k.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
    pthread_mutex_lock(&F.lock);
    k.name = intern(name);
    pthread_mutex_unlock(&F.lock);
    return api_call(1, "cudaLaunchKernel", CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &k,
                    sizeof(k), stream, dur_ns);
}

/* A kernel launched through the driver API directly (no runtime call). */
FAKE_EXPORT uint32_t fake_cu_launch_kernel(const char *name, uint32_t device, uint32_t stream,
                                           uint64_t dur_ns)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.deviceId = device;
    k.contextId = 1 + device;
    k.streamId = stream;
    k.gridX = k.gridY = k.gridZ = 1;
    k.blockX = k.blockY = k.blockZ = 1;
    pthread_mutex_lock(&F.lock);
    k.name = intern(name);
    pthread_mutex_unlock(&F.lock);
    return api_call(0, "cuLaunchKernel", CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &k, sizeof(k),
                    stream, dur_ns);
}

FAKE_EXPORT uint32_t fake_cuda_memcpy(uint8_t copy_kind, uint64_t bytes, uint32_t device,
                                      uint32_t stream, uint64_t dur_ns)
{
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = copy_kind;
    m.bytes = bytes;
    m.deviceId = device;
    m.contextId = 1 + device;
    m.streamId = stream;
    return api_call(1, "cudaMemcpyAsync", CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &m,
                    sizeof(m), stream, dur_ns);
}

FAKE_EXPORT uint32_t fake_cuda_memset(uint64_t bytes, uint32_t device, uint32_t stream,
                                      uint64_t dur_ns)
{
    CUpti_ActivityMemset4 m;
    memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m.bytes = bytes;
    m.deviceId = device;
    m.contextId = 1 + device;
    m.streamId = stream;
    return api_call(1, "cudaMemsetAsync", CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, &m,
                    sizeof(m), stream, dur_ns);
}

/* cudaStreamSynchronize: a host wait, recorded within the call. */
FAKE_EXPORT void fake_cuda_stream_sync(uint32_t device, uint32_t stream)
{
    CUpti_ActivitySynchronization2 s;
    memset(&s, 0, sizeof(s));
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    s.contextId = 1 + device;
    s.streamId = stream;
    tls_sync = &s;
    api_call(1, "cudaStreamSynchronize", CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, NULL,
             0, stream, 0);
    tls_sync = NULL;
}

/* The driver's cuInit: load the injection library and call it once. */
FAKE_EXPORT int fake_cu_init(void)
{
    static int done;
    if (done++)
        return 0;
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (!path || !*path)
        return 0;
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "fake cuInit: cannot load %s: %s\n", path, dlerror());
        return -1;
    }
    int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
    if (!init) {
        fprintf(stderr, "fake cuInit: %s has no InitializeInjection\n", path);
        return -1;
    }
    return init() == 1 ? 0 : -1;
}
