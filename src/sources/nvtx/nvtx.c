/*
 * nvtx.c -- the NVTX v3 source: programs annotated with NVTX are recorded
 * with no change to the program.
 *
 * NVTX is header-only: the first NVTX call in a program reads
 * NVTX_INJECTION64_PATH (set by `acceltrace run` to libacceltrace.so),
 * dlopens that library and calls its InitializeInjectionNvtx2(), which
 * fills NVTX's callback tables with the functions below. They map NVTX
 * onto the acceltrace annotation API, so NVTX ranges become the same
 * user_annotation ranges (and External ids for kernels) as act_range_push:
 *   push/pop, start/end   -> ranges; marks -> instant events;
 *   domains               -> args "domain" (the name stays the message,
 *                            as Nsight Systems shows it);
 *   categories            -> args "category" (registered name or number);
 *   payloads              -> args "payload" (the value, typed);
 *   registered strings    -> their text; wide strings -> UTF-8;
 *   nvtxNameOsThread      -> a THREAD record naming that OS thread.
 * ACCELTRACE_CAPTURE_RANGE=nvtx:NAME opens the capture window while a range
 * whose message is NAME (default domain) or NAME@DOMAIN is open.
 *
 * Built only when the NVTX headers were found (build.cmake).
 */
#ifdef ACT_HAVE_NVTX

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "acceltrace.h"
#include "core/rec_write.h"
#include "init/init.h"

#define NVTX_STACK 256 /* capture-trigger flags tracked per thread */

/* A domain handle given to the program. */
typedef struct nvtx_domain {
    char *name;
} nvtx_domain;

/* A registered-string handle given to the program. */
typedef struct nvtx_string {
    char *text;
} nvtx_string;

/* Named categories, per domain (NULL = default domain). Rarely used, so a
 * list under a mutex is enough. */
typedef struct nvtx_category {
    const nvtx_domain *domain;
    uint32_t id;
    char *name;
    struct nvtx_category *next;
} nvtx_category;

static pthread_mutex_t nvtx_lock = PTHREAD_MUTEX_INITIALIZER;
static nvtx_category *categories;

/* Start/end ranges that opened the capture window (few at a time). */
#define NVTX_TRIGGERS 64
static uint64_t trigger_ids[NVTX_TRIGGERS];

/* Per thread: push depth (NVTX returns it) and which pushes opened the
 * capture window. */
static __thread uint32_t tls_depth;
static __thread uint64_t tls_trigger[NVTX_STACK / 64];

/* ---- strings ------------------------------------------------------------ */

/* wchar_t is UTF-32 on the platforms we build for; invalid code points and
 * surrogates become U+FFFD. Returns a malloc'ed string (NULL on OOM). */
static char *wide_to_utf8(const wchar_t *w)
{
    size_t n = wcslen(w);
    char *out = malloc(n * 4 + 1), *p = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = (uint32_t)w[i];
        if ((c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF)
            c = 0xFFFD;
        if (c < 0x80) {
            *p++ = (char)c;
        } else if (c < 0x800) {
            *p++ = (char)(0xC0 | (c >> 6));
            *p++ = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            *p++ = (char)(0xE0 | (c >> 12));
            *p++ = (char)(0x80 | ((c >> 6) & 0x3F));
            *p++ = (char)(0x80 | (c & 0x3F));
        } else {
            *p++ = (char)(0xF0 | (c >> 18));
            *p++ = (char)(0x80 | ((c >> 12) & 0x3F));
            *p++ = (char)(0x80 | ((c >> 6) & 0x3F));
            *p++ = (char)(0x80 | (c & 0x3F));
        }
    }
    *p = '\0';
    return out;
}

/* The message of an event: points into the program's string, a registered
 * string, or `*tofree` (wide strings). Never NULL. */
static const char *attr_message(const nvtxEventAttributes_t *a, char **tofree)
{
    *tofree = NULL;
    if (!a)
        return "";
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
        if (!a->message.unicode)
            return "";
        *tofree = wide_to_utf8(a->message.unicode);
        return *tofree ? *tofree : "";
    case NVTX_MESSAGE_TYPE_REGISTERED: {
        const nvtx_string *s = (const nvtx_string *)a->message.registered;
        return s && s->text ? s->text : "";
    }
    default: return "";
    }
}

/* ---- arguments ---------------------------------------------------------- */

static const char *category_name(const nvtx_domain *d, uint32_t id)
{
    const char *name = NULL;
    pthread_mutex_lock(&nvtx_lock);
    for (nvtx_category *c = categories; c; c = c->next) {
        if (c->domain == d && c->id == id) {
            name = c->name;
            break;
        }
    }
    pthread_mutex_unlock(&nvtx_lock);
    return name; /* never freed: names live as long as the process */
}

static void category_set(const nvtx_domain *d, uint32_t id, const char *name)
{
    nvtx_category *c = calloc(1, sizeof(*c));
    if (!c || !(c->name = strdup(name))) {
        free(c);
        return;
    }
    c->domain = d;
    c->id = id;
    pthread_mutex_lock(&nvtx_lock);
    c->next = categories;
    categories = c;
    pthread_mutex_unlock(&nvtx_lock);
}

/* Args of the annotation just recorded on this thread. */
static void emit_args(const nvtx_domain *d, const nvtxEventAttributes_t *a)
{
    if (d && d->name)
        act_rec_arg_emit("domain", ACT_RECARG_STR, 0, d->name);
    if (!a)
        return;
    if (a->category) {
        const char *cn = category_name(d, a->category);
        if (cn)
            act_rec_arg_emit("category", ACT_RECARG_STR, 0, cn);
        else
            act_rec_arg_emit("category", ACT_RECARG_U64, a->category, NULL);
    }
    union {
        uint64_t u;
        int64_t i;
        double f;
    } v;
    switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
        act_rec_arg_emit("payload", ACT_RECARG_U64, a->payload.ullValue, NULL);
        break;
    case NVTX_PAYLOAD_TYPE_INT64:
        v.i = a->payload.llValue;
        act_rec_arg_emit("payload", ACT_RECARG_I64, v.u, NULL);
        break;
    case NVTX_PAYLOAD_TYPE_DOUBLE:
        v.f = a->payload.dValue;
        act_rec_arg_emit("payload", ACT_RECARG_F64, v.u, NULL);
        break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
        act_rec_arg_emit("payload", ACT_RECARG_U64, a->payload.uiValue, NULL);
        break;
    case NVTX_PAYLOAD_TYPE_INT32:
        v.i = a->payload.iValue;
        act_rec_arg_emit("payload", ACT_RECARG_I64, v.u, NULL);
        break;
    case NVTX_PAYLOAD_TYPE_FLOAT:
        v.f = a->payload.fValue;
        act_rec_arg_emit("payload", ACT_RECARG_F64, v.u, NULL);
        break;
    default: break;
    }
}

/* ---- capture trigger ---------------------------------------------------- */

/* Does this range open the capture window (nvtx:NAME or nvtx:NAME@DOMAIN)? */
static int is_trigger(const nvtx_domain *d, const char *msg)
{
    const char *want = act_capture_nvtx_name();
    if (!want[0])
        return 0;
    const char *at = strrchr(want, '@');
    if (!at)
        return !d && strcmp(want, msg) == 0;
    size_t mlen = (size_t)(at - want);
    return d && d->name && strlen(msg) == mlen && memcmp(want, msg, mlen) == 0 &&
           strcmp(at + 1, d->name) == 0;
}

static void trigger_id_add(uint64_t id)
{
    pthread_mutex_lock(&nvtx_lock);
    for (size_t i = 0; i < NVTX_TRIGGERS; i++) {
        if (!trigger_ids[i]) {
            trigger_ids[i] = id;
            break;
        }
    }
    pthread_mutex_unlock(&nvtx_lock);
}

static int trigger_id_take(uint64_t id)
{
    int found = 0;
    pthread_mutex_lock(&nvtx_lock);
    for (size_t i = 0; i < NVTX_TRIGGERS && !found; i++) {
        if (trigger_ids[i] == id) {
            trigger_ids[i] = 0;
            found = 1;
        }
    }
    pthread_mutex_unlock(&nvtx_lock);
    return found;
}

/* ---- the operations, shared by every entry point ------------------------ */

static int do_push(const nvtx_domain *d, const char *msg, const nvtxEventAttributes_t *a)
{
    int trig = is_trigger(d, msg);
    if (trig)
        act_capture_nvtx_enter();
    if (act_range_push(msg) == ACT_OK)
        emit_args(d, a);
    uint32_t level = tls_depth++;
    if (level < NVTX_STACK) {
        uint64_t bit = 1ull << (level % 64);
        tls_trigger[level / 64] =
            trig ? tls_trigger[level / 64] | bit : tls_trigger[level / 64] & ~bit;
    }
    return (int)level;
}

static int do_pop(void)
{
    if (tls_depth == 0) {
        act_range_pop(); /* counted as unbalanced */
        return -1;
    }
    uint32_t level = --tls_depth;
    act_range_pop();
    if (level < NVTX_STACK && (tls_trigger[level / 64] >> (level % 64) & 1))
        act_capture_nvtx_leave();
    return (int)level;
}

static nvtxRangeId_t do_start(const nvtx_domain *d, const char *msg, const nvtxEventAttributes_t *a)
{
    int trig = is_trigger(d, msg);
    if (trig)
        act_capture_nvtx_enter();
    uint64_t id = act_range_start(msg);
    if (id && act_is_enabled())
        emit_args(d, a);
    if (trig)
        trigger_id_add(id);
    return id;
}

static void do_end(nvtxRangeId_t id)
{
    act_range_end(id);
    if (act_capture_nvtx_name()[0] && trigger_id_take(id))
        act_capture_nvtx_leave();
}

static void do_mark(const nvtx_domain *d, const char *msg, const nvtxEventAttributes_t *a)
{
    int was = act_is_enabled();
    act_mark(msg);
    if (was)
        emit_args(d, a);
}

/* ---- NVTX callbacks: core module ------------------------------------------ */

static void NVTX_API cb_MarkEx(const nvtxEventAttributes_t *a)
{
    char *f;
    do_mark(NULL, attr_message(a, &f), a);
    free(f);
}

static void NVTX_API cb_MarkA(const char *m)
{
    do_mark(NULL, m ? m : "", NULL);
}

static void NVTX_API cb_MarkW(const wchar_t *m)
{
    char *u = m ? wide_to_utf8(m) : NULL;
    do_mark(NULL, u ? u : "", NULL);
    free(u);
}

static nvtxRangeId_t NVTX_API cb_RangeStartEx(const nvtxEventAttributes_t *a)
{
    char *f;
    nvtxRangeId_t id = do_start(NULL, attr_message(a, &f), a);
    free(f);
    return id;
}

static nvtxRangeId_t NVTX_API cb_RangeStartA(const char *m)
{
    return do_start(NULL, m ? m : "", NULL);
}

static nvtxRangeId_t NVTX_API cb_RangeStartW(const wchar_t *m)
{
    char *u = m ? wide_to_utf8(m) : NULL;
    nvtxRangeId_t id = do_start(NULL, u ? u : "", NULL);
    free(u);
    return id;
}

static void NVTX_API cb_RangeEnd(nvtxRangeId_t id)
{
    do_end(id);
}

static int NVTX_API cb_RangePushEx(const nvtxEventAttributes_t *a)
{
    char *f;
    int level = do_push(NULL, attr_message(a, &f), a);
    free(f);
    return level;
}

static int NVTX_API cb_RangePushA(const char *m)
{
    return do_push(NULL, m ? m : "", NULL);
}

static int NVTX_API cb_RangePushW(const wchar_t *m)
{
    char *u = m ? wide_to_utf8(m) : NULL;
    int level = do_push(NULL, u ? u : "", NULL);
    free(u);
    return level;
}

static int NVTX_API cb_RangePop(void)
{
    return do_pop();
}

static void NVTX_API cb_NameCategoryA(uint32_t cat, const char *name)
{
    if (name)
        category_set(NULL, cat, name);
}

static void NVTX_API cb_NameCategoryW(uint32_t cat, const wchar_t *name)
{
    char *u = name ? wide_to_utf8(name) : NULL;
    if (u)
        category_set(NULL, cat, u);
    free(u);
}

static void name_thread(uint32_t tid, const char *name)
{
    if (act_capture_attached())
        act_rec_thread_name_emit(tid, name);
}

static void NVTX_API cb_NameOsThreadA(uint32_t tid, const char *name)
{
    if (name)
        name_thread(tid, name);
}

static void NVTX_API cb_NameOsThreadW(uint32_t tid, const wchar_t *name)
{
    char *u = name ? wide_to_utf8(name) : NULL;
    if (u)
        name_thread(tid, u);
    free(u);
}

/* ---- NVTX callbacks: core2 (domains) -------------------------------------- */

static void NVTX_API cb_DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    char *f;
    do_mark((const nvtx_domain *)d, attr_message(a, &f), a);
    free(f);
}

static nvtxRangeId_t NVTX_API cb_DomainRangeStartEx(nvtxDomainHandle_t d,
                                                    const nvtxEventAttributes_t *a)
{
    char *f;
    nvtxRangeId_t id = do_start((const nvtx_domain *)d, attr_message(a, &f), a);
    free(f);
    return id;
}

static void NVTX_API cb_DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    (void)d;
    do_end(id);
}

static int NVTX_API cb_DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    char *f;
    int level = do_push((const nvtx_domain *)d, attr_message(a, &f), a);
    free(f);
    return level;
}

static int NVTX_API cb_DomainRangePop(nvtxDomainHandle_t d)
{
    (void)d;
    return do_pop();
}

static void NVTX_API cb_DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t cat, const char *name)
{
    if (name)
        category_set((const nvtx_domain *)d, cat, name);
}

static void NVTX_API cb_DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t cat, const wchar_t *name)
{
    char *u = name ? wide_to_utf8(name) : NULL;
    if (u)
        category_set((const nvtx_domain *)d, cat, u);
    free(u);
}

static nvtxStringHandle_t register_string(char *text)
{
    nvtx_string *s = text ? calloc(1, sizeof(*s)) : NULL;
    if (!s) {
        free(text);
        return NULL;
    }
    s->text = text; /* lives as long as the process: NVTX has no unregister */
    return (nvtxStringHandle_t)s;
}

static nvtxStringHandle_t NVTX_API cb_DomainRegisterStringA(nvtxDomainHandle_t d, const char *s)
{
    (void)d;
    return register_string(s ? strdup(s) : NULL);
}

static nvtxStringHandle_t NVTX_API cb_DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t *s)
{
    (void)d;
    return register_string(s ? wide_to_utf8(s) : NULL);
}

static nvtxDomainHandle_t create_domain(char *name)
{
    nvtx_domain *d = name ? calloc(1, sizeof(*d)) : NULL;
    if (!d) {
        free(name);
        return NULL;
    }
    d->name = name;
    return (nvtxDomainHandle_t)d;
}

static nvtxDomainHandle_t NVTX_API cb_DomainCreateA(const char *name)
{
    return create_domain(name ? strdup(name) : NULL);
}

static nvtxDomainHandle_t NVTX_API cb_DomainCreateW(const wchar_t *name)
{
    return create_domain(name ? wide_to_utf8(name) : NULL);
}

static void NVTX_API cb_DomainDestroy(nvtxDomainHandle_t d)
{
    /* Kept: records already written name it, and a racing thread may still
     * hold the handle. */
    (void)d;
}

static void NVTX_API cb_Initialize(const void *reserved)
{
    (void)reserved;
}

/* ---- injection entry point ---------------------------------------------- */

static void table_set(NvtxFunctionTable t, unsigned size, unsigned id, NvtxFunctionPointer fn)
{
    if (id < size && t[id])
        *t[id] = fn;
}

#define FN(f) ((NvtxFunctionPointer)(f))

static int fill_core(const NvtxExportTableCallbacks *cb)
{
    NvtxFunctionTable t = NULL;
    unsigned n = 0;
    if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || !t)
        return -1;
    table_set(t, n, NVTX_CBID_CORE_MarkEx, FN(cb_MarkEx));
    table_set(t, n, NVTX_CBID_CORE_MarkA, FN(cb_MarkA));
    table_set(t, n, NVTX_CBID_CORE_MarkW, FN(cb_MarkW));
    table_set(t, n, NVTX_CBID_CORE_RangeStartEx, FN(cb_RangeStartEx));
    table_set(t, n, NVTX_CBID_CORE_RangeStartA, FN(cb_RangeStartA));
    table_set(t, n, NVTX_CBID_CORE_RangeStartW, FN(cb_RangeStartW));
    table_set(t, n, NVTX_CBID_CORE_RangeEnd, FN(cb_RangeEnd));
    table_set(t, n, NVTX_CBID_CORE_RangePushEx, FN(cb_RangePushEx));
    table_set(t, n, NVTX_CBID_CORE_RangePushA, FN(cb_RangePushA));
    table_set(t, n, NVTX_CBID_CORE_RangePushW, FN(cb_RangePushW));
    table_set(t, n, NVTX_CBID_CORE_RangePop, FN(cb_RangePop));
    table_set(t, n, NVTX_CBID_CORE_NameCategoryA, FN(cb_NameCategoryA));
    table_set(t, n, NVTX_CBID_CORE_NameCategoryW, FN(cb_NameCategoryW));
    table_set(t, n, NVTX_CBID_CORE_NameOsThreadA, FN(cb_NameOsThreadA));
    table_set(t, n, NVTX_CBID_CORE_NameOsThreadW, FN(cb_NameOsThreadW));
    return 0;
}

static int fill_core2(const NvtxExportTableCallbacks *cb)
{
    NvtxFunctionTable t = NULL;
    unsigned n = 0;
    if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) || !t)
        return -1;
    table_set(t, n, NVTX_CBID_CORE2_DomainMarkEx, FN(cb_DomainMarkEx));
    table_set(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, FN(cb_DomainRangeStartEx));
    table_set(t, n, NVTX_CBID_CORE2_DomainRangeEnd, FN(cb_DomainRangeEnd));
    table_set(t, n, NVTX_CBID_CORE2_DomainRangePushEx, FN(cb_DomainRangePushEx));
    table_set(t, n, NVTX_CBID_CORE2_DomainRangePop, FN(cb_DomainRangePop));
    table_set(t, n, NVTX_CBID_CORE2_DomainNameCategoryA, FN(cb_DomainNameCategoryA));
    table_set(t, n, NVTX_CBID_CORE2_DomainNameCategoryW, FN(cb_DomainNameCategoryW));
    table_set(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, FN(cb_DomainRegisterStringA));
    table_set(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, FN(cb_DomainRegisterStringW));
    table_set(t, n, NVTX_CBID_CORE2_DomainCreateA, FN(cb_DomainCreateA));
    table_set(t, n, NVTX_CBID_CORE2_DomainCreateW, FN(cb_DomainCreateW));
    table_set(t, n, NVTX_CBID_CORE2_DomainDestroy, FN(cb_DomainDestroy));
    table_set(t, n, NVTX_CBID_CORE2_Initialize, FN(cb_Initialize));
    return 0;
}

/*
 * Called by the NVTX code inside the program on its first NVTX call.
 * Returns nonzero when the callbacks are installed; 0 makes NVTX turn every
 * call into a no-op (no tool attached, or a table we cannot read).
 */
ACT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable)
{
    act_init();
    if (!act_capture_attached() || !getExportTable)
        return 0;
    const NvtxExportTableCallbacks *cb =
        (const NvtxExportTableCallbacks *)getExportTable(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable) {
        act_rec_error_emit("NVTX: the program's NVTX export table is unusable");
        return 0;
    }
    if (fill_core(cb) != 0 || fill_core2(cb) != 0) {
        act_rec_error_emit("NVTX: could not install the NVTX callbacks");
        return 0;
    }
    const NvtxExportTableVersionInfo *vi =
        (const NvtxExportTableVersionInfo *)getExportTable(NVTX_ETID_VERSIONINFO);
    if (vi && vi->struct_size >= sizeof(*vi) && vi->SetInjectionNvtxVersion)
        vi->SetInjectionNvtxVersion(NVTX_VERSION);
    return 1;
}

#endif /* ACT_HAVE_NVTX */
