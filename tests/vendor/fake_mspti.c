/*
 * fake_mspti.c -- a faithful fake of libmspti.so for the test suite, built
 * against acceltrace's own mspti declarations (src/sources/mspti/
 * mspti_decls.h) and loaded by the mspti source through its ordinary
 * dlopen path (ACCELTRACE_MSPTI_LIB=/path/to/fake/libmspti.so).
 *
 * It behaves as shared/reference/torch_npu-behaviours.md §5 says the real
 * library does:
 *   - one subscriber at a time (MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
 *   - buffers requested lazily from the producing thread, records packed
 *     back to back, a buffer completed when >= 80 % full (before the next
 *     record), completion on a fresh library thread per buffer;
 *     a refused buffer (NULL) drops the record, and the next record asks
 *     again;
 *   - device records delivered asynchronously by a "device" thread
 *     `delay_ms` (default 200) after the launch; Disable of a device kind
 *     first flushes device data (pending records of that kind are written);
 *   - FlushAll synchronous on the calling thread: completed buffers, then
 *     the partly filled one, then waits for delivery threads;
 *   - GetNextRecord with a thread-local cursor, MAX_LIMIT_REACHED at the
 *     end;
 *   - correlation ids restart at every Subscribe and wrap at `corr_wrap`
 *     (not unique);
 *   - a process-global external-correlation stack per kind;
 *   - RUNTIME-domain callbacks (ENTER/EXIT on the launching thread, with
 *     the call's correlation id).
 *
 * Test programs "launch" work with the fake_mspti_* functions below and
 * tune it with fake_mspti_set(key, value) or FAKE_MSPTI_<KEY> variables.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mspti_decls.h"

#define FAKE_EXPORT   __attribute__((visibility("default")))
#define MAX_STACK     64
#define MAX_COMPLETED 256
#define MAX_STREAMS   64

typedef struct pending {
    uint64_t due; /* CLOCK_REALTIME ns */
    size_t size;
    uint8_t bytes[80];
} pending;

typedef struct fbuf {
    uint8_t *buf;
    size_t size, valid;
    uint64_t nrec;
} fbuf;

struct msptiSubscriber_st {
    int unused;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* worker / device thread wake-up */
    pthread_cond_t idle; /* inflight dropped */
    int threads_started;
    /* knobs */
    long delay_ms, complete_delay_ms, corr_wrap, no_callbacks, foreign_subscriber,
        late_after_disable;
    /* subscriber */
    int subscribed;
    struct msptiSubscriber_st handle;
    msptiCallbackFunc cb;
    void *cb_userdata;
    int runtime_domain;
    /* activity */
    msptiBuffersCallbackRequestFunc req;
    msptiBuffersCallbackCompleteFunc done;
    int enabled[MSPTI_ACTIVITY_KIND_COUNT];
    fbuf cur;
    fbuf completed[MAX_COMPLETED];
    int n_completed;
    int inflight;
    pending *pend;
    size_t pend_head, pend_tail, pend_cap;
    uint64_t corr;
    uint64_t stack[MSPTI_EXTERNAL_CORRELATION_KIND_SIZE][MAX_STACK];
    int depth[MSPTI_EXTERNAL_CORRELATION_KIND_SIZE];
    uint64_t stream_busy[MAX_STREAMS];
    /* stats */
    uint64_t written, dropped, delivered;
    /* interned strings (never freed: records point at them) */
    char *strs[1024];
    int n_strs;
} F = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .cond = PTHREAD_COND_INITIALIZER,
       .idle = PTHREAD_COND_INITIALIZER,
       .delay_ms = 200,
       .corr_wrap = 1000};

static uint64_t now_rt(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static long env_knob(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

__attribute__((constructor)) static void fake_init(void)
{
    F.delay_ms = env_knob("FAKE_MSPTI_DELAY_MS", F.delay_ms);
    F.complete_delay_ms = env_knob("FAKE_MSPTI_COMPLETE_DELAY_MS", 0);
    F.corr_wrap = env_knob("FAKE_MSPTI_CORR_WRAP", F.corr_wrap);
    F.no_callbacks = env_knob("FAKE_MSPTI_NO_CALLBACKS", 0);
    F.foreign_subscriber = env_knob("FAKE_MSPTI_FOREIGN_SUBSCRIBER", 0);
}

static const char *intern(const char *s)
{
    if (!s)
        return NULL;
    for (int i = 0; i < F.n_strs; i++)
        if (strcmp(F.strs[i], s) == 0)
            return F.strs[i];
    if (F.n_strs == 1024)
        return "overflow";
    F.strs[F.n_strs] = strdup(s);
    return F.strs[F.n_strs++];
}

static size_t record_size(uint32_t kind)
{
    switch (kind) {
    case MSPTI_ACTIVITY_KIND_MARKER: return sizeof(msptiActivityMarker);
    case MSPTI_ACTIVITY_KIND_KERNEL: return sizeof(msptiActivityKernel);
    case MSPTI_ACTIVITY_KIND_API:
    case MSPTI_ACTIVITY_KIND_ACL_API:
    case MSPTI_ACTIVITY_KIND_NODE_API:
    case MSPTI_ACTIVITY_KIND_RUNTIME_API: return sizeof(msptiActivityApi);
    case MSPTI_ACTIVITY_KIND_HCCL: return sizeof(msptiActivityHccl);
    case MSPTI_ACTIVITY_KIND_MEMSET: return sizeof(msptiActivityMemset);
    case MSPTI_ACTIVITY_KIND_MEMCPY: return sizeof(msptiActivityMemcpy);
    case MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(msptiActivityExternalCorrelation);
    case MSPTI_ACTIVITY_KIND_COMMUNICATION: return sizeof(msptiActivityCommunication);
    default: return 0;
    }
}

/* ---- buffers (caller holds F.lock) ------------------------------------ */

static void complete_current(void)
{
    if (!F.cur.buf)
        return;
    if (F.n_completed < MAX_COMPLETED) {
        F.completed[F.n_completed++] = F.cur;
        pthread_cond_broadcast(&F.cond);
    }
    memset(&F.cur, 0, sizeof(F.cur));
}

static void write_record(const void *rec, size_t size)
{
    uint32_t kind;
    memcpy(&kind, rec, sizeof(kind));
    if (kind >= MSPTI_ACTIVITY_KIND_COUNT || !F.enabled[kind] || !F.req)
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
        F.cur.buf = b;
        F.cur.size = sz;
        F.cur.valid = 0;
        F.cur.nrec = 0;
    }
    if (F.cur.valid + size > F.cur.size) {
        F.dropped++;
        complete_current();
        return;
    }
    memcpy(F.cur.buf + F.cur.valid, rec, size);
    F.cur.valid += size;
    F.cur.nrec++;
    F.written++;
}

static void pend_push(const void *rec, size_t size, uint64_t due)
{
    if (F.pend_tail == F.pend_cap) {
        if (F.pend_head > 0) {
            memmove(F.pend, F.pend + F.pend_head, (F.pend_tail - F.pend_head) * sizeof(pending));
            F.pend_tail -= F.pend_head;
            F.pend_head = 0;
        } else {
            F.pend_cap = F.pend_cap ? F.pend_cap * 2 : 1024;
            F.pend = realloc(F.pend, F.pend_cap * sizeof(pending));
        }
    }
    pending *p = &F.pend[F.pend_tail++];
    p->due = due;
    p->size = size;
    memcpy(p->bytes, rec, size);
    pthread_cond_broadcast(&F.cond);
}

/* ---- threads ---------------------------------------------------------- */

static void *deliver_thread(void *arg)
{
    fbuf b = *(fbuf *)arg;
    free(arg);
    if (F.complete_delay_ms > 0)
        sleep_ms(F.complete_delay_ms);
    F.done(b.buf, b.size, b.valid);
    pthread_mutex_lock(&F.lock);
    F.delivered += b.nrec;
    F.inflight--;
    pthread_cond_broadcast(&F.idle);
    pthread_mutex_unlock(&F.lock);
    return NULL;
}

/* Hands completed buffers to fresh threads (as the real worker does). */
static void *worker_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&F.lock);
    for (;;) {
        while (F.n_completed == 0)
            pthread_cond_wait(&F.cond, &F.lock);
        for (int i = 0; i < F.n_completed; i++) {
            fbuf *b = malloc(sizeof(*b));
            *b = F.completed[i];
            F.inflight++;
            pthread_t t;
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            pthread_create(&t, &at, deliver_thread, b);
            pthread_attr_destroy(&at);
        }
        F.n_completed = 0;
    }
    return NULL;
}

/* Moves device records into buffers when they are due. */
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
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&F.cond, &F.lock, &ts);
            continue;
        }
        F.pend_head++;
        if (p->size) /* 0: already written by a Disable */
            write_record(p->bytes, p->size);
        /* Late mode: nobody flushes after stop, so deliver each batch. */
        if (F.late_after_disable && !F.subscribed &&
            (F.pend_head == F.pend_tail || F.pend[F.pend_head].due > now_rt()))
            complete_current();
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

/* ---- the mspti API ---------------------------------------------------- */

FAKE_EXPORT msptiResult msptiSubscribe(msptiSubscriberHandle *subscriber,
                                       msptiCallbackFunc callback, void *userdata)
{
    if (!subscriber)
        return MSPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&F.lock);
    if (F.subscribed || F.foreign_subscriber) {
        pthread_mutex_unlock(&F.lock);
        return MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    F.subscribed = 1;
    F.cb = callback;
    F.cb_userdata = userdata;
    F.runtime_domain = 0;
    F.corr = 0; /* ids restart per session: not unique across sessions */
    *subscriber = &F.handle;
    pthread_mutex_unlock(&F.lock);
    return MSPTI_SUCCESS;
}

FAKE_EXPORT msptiResult msptiUnsubscribe(msptiSubscriberHandle subscriber)
{
    pthread_mutex_lock(&F.lock);
    msptiResult r = MSPTI_SUCCESS;
    if (F.subscribed && subscriber != &F.handle)
        r = MSPTI_ERROR_INVALID_PARAMETER;
    else {
        F.subscribed = 0;
        F.cb = NULL;
        F.runtime_domain = 0;
    }
    pthread_mutex_unlock(&F.lock);
    return r;
}

FAKE_EXPORT msptiResult msptiEnableDomain(uint32_t enable, msptiSubscriberHandle subscriber,
                                          msptiCallbackDomain domain)
{
    if (F.no_callbacks)
        return MSPTI_ERROR_INNER;
    if (subscriber != &F.handle || domain <= MSPTI_CB_DOMAIN_INVALID ||
        domain >= MSPTI_CB_DOMAIN_SIZE)
        return MSPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&F.lock);
    if (domain == MSPTI_CB_DOMAIN_RUNTIME)
        F.runtime_domain = enable != 0;
    pthread_mutex_unlock(&F.lock);
    return MSPTI_SUCCESS;
}

FAKE_EXPORT msptiResult msptiActivityRegisterCallbacks(msptiBuffersCallbackRequestFunc request,
                                                       msptiBuffersCallbackCompleteFunc complete)
{
    if (!request || !complete)
        return MSPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&F.lock);
    F.req = request;
    F.done = complete;
    start_threads();
    pthread_mutex_unlock(&F.lock);
    return MSPTI_SUCCESS;
}

FAKE_EXPORT msptiResult msptiActivityEnable(msptiActivityKind kind)
{
    if (kind <= MSPTI_ACTIVITY_KIND_INVALID || kind >= MSPTI_ACTIVITY_KIND_COUNT)
        return MSPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&F.lock);
    F.enabled[kind] = 1;
    pthread_mutex_unlock(&F.lock);
    return MSPTI_SUCCESS;
}

static int is_device_kind(uint32_t k)
{
    return k == MSPTI_ACTIVITY_KIND_MARKER || k == MSPTI_ACTIVITY_KIND_KERNEL ||
           k == MSPTI_ACTIVITY_KIND_HCCL || k == MSPTI_ACTIVITY_KIND_COMMUNICATION;
}

FAKE_EXPORT msptiResult msptiActivityDisable(msptiActivityKind kind)
{
    if (kind <= MSPTI_ACTIVITY_KIND_INVALID || kind >= MSPTI_ACTIVITY_KIND_COUNT)
        return MSPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&F.lock);
    if (is_device_kind(kind) && !F.late_after_disable) {
        /* "flushes device data" first: everything launched is written now. */
        for (size_t i = F.pend_head; i < F.pend_tail; i++) {
            uint32_t k;
            memcpy(&k, F.pend[i].bytes, sizeof(k));
            if (k == (uint32_t)kind && F.pend[i].size) {
                write_record(F.pend[i].bytes, F.pend[i].size);
                F.pend[i].size = 0; /* written: the device thread skips it */
            }
        }
    }
    if (!F.late_after_disable)
        F.enabled[kind] = 0;
    pthread_mutex_unlock(&F.lock);
    return MSPTI_SUCCESS;
}

static __thread size_t cursor;

FAKE_EXPORT msptiResult msptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                                   msptiActivity **record)
{
    if (!buffer || !record)
        return MSPTI_ERROR_INVALID_PARAMETER;
    if (cursor >= validBufferSizeBytes) {
        cursor = 0;
        return MSPTI_ERROR_MAX_LIMIT_REACHED;
    }
    uint32_t kind;
    memcpy(&kind, buffer + cursor, sizeof(kind));
    size_t size = record_size(kind);
    if (size == 0)
        return MSPTI_ERROR_INNER;
    *record = (msptiActivity *)(buffer + cursor);
    cursor += size;
    return MSPTI_SUCCESS;
}

/* The missing-symbol variant (libmspti.so in fakes/mspti_nosym) hides it. */
#ifdef FAKE_MSPTI_OMIT_FLUSH
#define FLUSH_VISIBILITY __attribute__((visibility("hidden")))
#else
#define FLUSH_VISIBILITY FAKE_EXPORT
#endif
FLUSH_VISIBILITY msptiResult msptiActivityFlushAll(uint32_t flag)
{
    (void)flag; /* reserved, ignored */
    fbuf local[MAX_COMPLETED + 1];
    int n = 0;
    pthread_mutex_lock(&F.lock);
    for (int i = 0; i < F.n_completed; i++)
        local[n++] = F.completed[i];
    F.n_completed = 0;
    if (F.cur.buf && F.cur.valid > 0) {
        local[n++] = F.cur;
        memset(&F.cur, 0, sizeof(F.cur));
    }
    pthread_mutex_unlock(&F.lock);
    for (int i = 0; i < n; i++) {
        F.done(local[i].buf, local[i].size, local[i].valid);
        pthread_mutex_lock(&F.lock);
        F.delivered += local[i].nrec;
        pthread_mutex_unlock(&F.lock);
    }
    pthread_mutex_lock(&F.lock);
    while (F.inflight > 0)
        pthread_cond_wait(&F.idle, &F.lock);
    pthread_mutex_unlock(&F.lock);
    return MSPTI_SUCCESS;
}

FAKE_EXPORT msptiResult msptiActivityPushExternalCorrelationId(msptiExternalCorrelationKind kind,
                                                               uint64_t id)
{
    if (kind < MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 ||
        kind >= MSPTI_EXTERNAL_CORRELATION_KIND_SIZE)
        return MSPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&F.lock); /* one process-global stack per kind */
    msptiResult r = MSPTI_SUCCESS;
    if (F.depth[kind] == MAX_STACK)
        r = MSPTI_ERROR_MAX_LIMIT_REACHED;
    else
        F.stack[kind][F.depth[kind]++] = id;
    pthread_mutex_unlock(&F.lock);
    return r;
}

FAKE_EXPORT msptiResult msptiActivityPopExternalCorrelationId(msptiExternalCorrelationKind kind,
                                                              uint64_t *lastId)
{
    if (kind < MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 ||
        kind >= MSPTI_EXTERNAL_CORRELATION_KIND_SIZE || !lastId)
        return MSPTI_ERROR_INVALID_PARAMETER; /* NULL lastId rejected, as the implementation does */
    pthread_mutex_lock(&F.lock);
    msptiResult r = MSPTI_SUCCESS;
    if (F.depth[kind] == 0)
        r = MSPTI_ERROR_QUEUE_EMPTY;
    else
        *lastId = F.stack[kind][--F.depth[kind]];
    pthread_mutex_unlock(&F.lock);
    return r;
}

/* ---- fake-only entry points for tests --------------------------------- */

FAKE_EXPORT void fake_mspti_set(const char *key, long value)
{
    pthread_mutex_lock(&F.lock);
    if (strcmp(key, "delay_ms") == 0)
        F.delay_ms = value;
    else if (strcmp(key, "complete_delay_ms") == 0)
        F.complete_delay_ms = value;
    else if (strcmp(key, "corr_wrap") == 0)
        F.corr_wrap = value;
    else if (strcmp(key, "no_callbacks") == 0)
        F.no_callbacks = value;
    else if (strcmp(key, "foreign_subscriber") == 0)
        F.foreign_subscriber = value;
    else if (strcmp(key, "late_after_disable") == 0)
        F.late_after_disable = value;
    else
        fprintf(stderr, "fake_mspti: unknown knob %s\n", key);
    pthread_mutex_unlock(&F.lock);
}

/* written: records stored in client buffers; dropped: records lost for
 * lack of a buffer; delivered: records handed to the complete callback;
 * pending: device records not yet due. */
FAKE_EXPORT void fake_mspti_stats(uint64_t *written, uint64_t *dropped, uint64_t *delivered,
                                  uint64_t *pending)
{
    pthread_mutex_lock(&F.lock);
    *written = F.written;
    *dropped = F.dropped;
    *delivered = F.delivered;
    *pending = 0;
    for (size_t i = F.pend_head; i < F.pend_tail; i++)
        *pending += F.pend[i].size != 0;
    pthread_mutex_unlock(&F.lock);
}

/* Put 8 bytes of a record kind this library does not know into the
 * current buffer (a newer library's record, or corruption):
 * GetNextRecord answers MSPTI_ERROR_INNER when it reaches them. */
FAKE_EXPORT void fake_mspti_inject_unknown(void)
{
    pthread_mutex_lock(&F.lock);
    if (F.cur.buf && F.cur.valid + 8 <= F.cur.size) {
        uint32_t bad[2] = {77, 0};
        memcpy(F.cur.buf + F.cur.valid, bad, sizeof(bad));
        F.cur.valid += 8;
    }
    pthread_mutex_unlock(&F.lock);
}

/* The host side of one runtime call: callbacks, API record, external
 * correlation records; then the device record after the delay. */
static uint64_t launch(const char *api, void *dev_rec, size_t dev_size, uint32_t stream,
                       uint64_t dur_ns)
{
    uint64_t t0 = now_rt();
    pthread_mutex_lock(&F.lock);
    F.corr = F.corr % (uint64_t)(F.corr_wrap > 0 ? F.corr_wrap : 1000) + 1;
    uint64_t corr = F.corr;
    msptiCallbackFunc cb = F.subscribed && F.runtime_domain ? F.cb : NULL;
    void *ud = F.cb_userdata;
    const char *fname = intern(api);
    pthread_mutex_unlock(&F.lock);

    msptiCallbackData d = {
        .callbackSite = MSPTI_API_ENTER, .functionName = fname, .correlationId = corr};
    if (cb)
        cb(ud, MSPTI_CB_DOMAIN_RUNTIME, 10 /* LAUNCH */, &d);

    /* The work is issued inside the call, after ENTER: the device cannot
     * start before that. */
    uint64_t issued = now_rt();
    pthread_mutex_lock(&F.lock);
    for (int k = MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0; k < MSPTI_EXTERNAL_CORRELATION_KIND_SIZE;
         k++) {
        if (F.depth[k] == 0)
            continue;
        msptiActivityExternalCorrelation e = {.kind = MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                              .externalKind = (msptiExternalCorrelationKind)k,
                                              .externalId = F.stack[k][F.depth[k] - 1],
                                              .correlationId = corr};
        write_record(&e, sizeof(e));
    }
    if (dev_rec) {
        /* Device timing: after the launch, serialised per stream. */
        uint64_t start = issued + 20000;
        uint64_t *busy = &F.stream_busy[stream % MAX_STREAMS];
        if (start < *busy)
            start = *busy;
        uint64_t end = start + dur_ns;
        *busy = end;
        uint32_t kind;
        memcpy(&kind, dev_rec, sizeof(kind));
        /* start/end sit at different offsets per struct: patch by kind. */
        switch (kind) {
        case MSPTI_ACTIVITY_KIND_KERNEL: {
            msptiActivityKernel *k = dev_rec;
            k->start = start, k->end = end, k->correlationId = corr;
            break;
        }
        case MSPTI_ACTIVITY_KIND_MEMCPY: {
            msptiActivityMemcpy *m = dev_rec;
            m->start = start, m->end = end, m->correlationId = corr;
            break;
        }
        case MSPTI_ACTIVITY_KIND_MEMSET: {
            msptiActivityMemset *m = dev_rec;
            m->start = start, m->end = end, m->correlationId = corr;
            break;
        }
        case MSPTI_ACTIVITY_KIND_COMMUNICATION: {
            msptiActivityCommunication *c = dev_rec;
            c->start = start, c->end = end, c->correlationId = corr;
            break;
        }
        default: break;
        }
        pend_push(dev_rec, dev_size, t0 + (uint64_t)F.delay_ms * 1000000ull);
    }
    pthread_mutex_unlock(&F.lock);

    d.callbackSite = MSPTI_API_EXIT;
    if (cb)
        cb(ud, MSPTI_CB_DOMAIN_RUNTIME, 10, &d);
    msptiActivityApi a = {.kind = MSPTI_ACTIVITY_KIND_API,
                          .start = t0,
                          .end = now_rt(),
                          .correlationId = corr,
                          .name = fname};
    a.pt.processId = 0;
    a.pt.threadId = 0;
    pthread_mutex_lock(&F.lock);
    write_record(&a, sizeof(a));
    pthread_mutex_unlock(&F.lock);
    return corr;
}

FAKE_EXPORT uint64_t fake_mspti_launch_kernel(const char *name, const char *type, uint32_t device,
                                              uint32_t stream, uint64_t dur_ns)
{
    pthread_mutex_lock(&F.lock);
    msptiActivityKernel k = {
        .kind = MSPTI_ACTIVITY_KIND_KERNEL, .name = intern(name), .type = intern(type)};
    pthread_mutex_unlock(&F.lock);
    k.ds.deviceId = device;
    k.ds.streamId = stream;
    return launch("aclrtLaunchKernel", &k, sizeof(k), stream, dur_ns);
}

FAKE_EXPORT uint64_t fake_mspti_launch_memcpy(uint32_t copy_kind, uint64_t bytes, uint32_t device,
                                              uint32_t stream, uint64_t dur_ns)
{
    msptiActivityMemcpy m = {.kind = MSPTI_ACTIVITY_KIND_MEMCPY,
                             .copyKind = (msptiActivityMemcpyKind)copy_kind,
                             .bytes = bytes,
                             .deviceId = device,
                             .streamId = stream,
                             .isAsync = 1};
    return launch("aclrtMemcpyAsync", &m, sizeof(m), stream, dur_ns);
}

FAKE_EXPORT uint64_t fake_mspti_launch_memset(uint64_t bytes, uint32_t device, uint32_t stream,
                                              uint64_t dur_ns)
{
    msptiActivityMemset m = {.kind = MSPTI_ACTIVITY_KIND_MEMSET,
                             .bytes = bytes,
                             .deviceId = device,
                             .streamId = stream,
                             .isAsync = 1};
    return launch("aclrtMemsetAsync", &m, sizeof(m), stream, dur_ns);
}

FAKE_EXPORT uint64_t fake_mspti_launch_comm(const char *name, const char *comm, uint32_t device,
                                            uint32_t stream, uint64_t dur_ns)
{
    pthread_mutex_lock(&F.lock);
    msptiActivityCommunication c = {.kind = MSPTI_ACTIVITY_KIND_COMMUNICATION,
                                    .count = 1024,
                                    .name = intern(name),
                                    .commName = intern(comm),
                                    .algType = intern("ring")};
    pthread_mutex_unlock(&F.lock);
    c.ds.deviceId = device;
    c.ds.streamId = stream;
    return launch("HcclAllReduce", &c, sizeof(c), stream, dur_ns);
}

/* An mstx marker: flag is a msptiActivityFlag; device markers arrive after
 * the delay like other device records, host markers at once. */
FAKE_EXPORT void fake_mspti_marker(uint32_t flag, uint32_t source_kind, uint64_t id,
                                   const char *name, const char *domain, uint32_t device,
                                   uint32_t stream)
{
    pthread_mutex_lock(&F.lock);
    msptiActivityMarker m = {.kind = MSPTI_ACTIVITY_KIND_MARKER,
                             .flag = (msptiActivityFlag)flag,
                             .sourceKind = (msptiActivitySourceKind)source_kind,
                             .timestamp = now_rt(),
                             .id = id,
                             .name = intern(name),
                             .domain = intern(domain)};
    if (source_kind == MSPTI_ACTIVITY_SOURCE_KIND_DEVICE) {
        m.objectId.ds.deviceId = device;
        m.objectId.ds.streamId = stream;
        pend_push(&m, sizeof(m), m.timestamp + (uint64_t)F.delay_ms * 1000000ull);
    } else {
        m.objectId.pt.processId = 1;
        m.objectId.pt.threadId = stream;
        write_record(&m, sizeof(m));
    }
    pthread_mutex_unlock(&F.lock);
}
