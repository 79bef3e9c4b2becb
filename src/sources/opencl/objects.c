/*
 * objects.c -- the lifetime of the OpenCL objects the app creates, for
 * leak checking (as CLIntercept's) and the device memory counter track.
 *
 * Every object the app creates through an intercepted call gets a node,
 * keyed by handle: the references the app holds (create = 1, clRetain* +1,
 * clRelease* -1; a handle we never saw created is ignored, so a program
 * that releases everything shows no leak) and, for memory, its bytes and
 * its context. When the app's count reaches 0 the node leaves the table;
 * it is finished (bytes off the context's counter, freed) once nothing
 * holds it any more: a buffer stays allocated while sub-buffers cut from
 * it live, as the runtime keeps it. Contexts hold their memory objects'
 * nodes the same way, so a counter never points at a freed context.
 *
 * Each change of a context's live bytes (buffers, images, pipes, SVM;
 * not sub-buffers, which alias their parent) is a counter sample named
 * "OpenCL device memory (context N)". At stop, the objects the app still
 * holds are counted per type into the metadata "opencl_leaks".
 *
 * Creation and release are not hot except for events (one per enqueue
 * that asks for one), which evtab.c keeps without a lock: for the rest a
 * chained table under one mutex, a node malloc'ed per object.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cl_source.h"
#include "init/init.h"

#define ACT_CL_OBJ_BUCKETS 4096u /* power of two */
#define ACT_CL_KARGS_MAX   256u

typedef struct obj {
    const void *h;
    struct obj *next;   /* bucket chain */
    struct obj *holder; /* the context, or a sub-buffer's parent */
    uint32_t refs;      /* held by the app */
    uint32_t holds;     /* nodes that name this one as holder */
    uint8_t type;
    uint8_t in_table;
    uint8_t counted;   /* bytes are on the context's counter */
    uint8_t untracked; /* a context seen only through its objects */
    uint32_t index;    /* contexts: ordinal; programs: ordinal from 1 */
    uint64_t bytes;    /* memory: size; contexts: live bytes */
    uint64_t *kargs;   /* kernels: argument sizes */
    uint32_t n_kargs;
    const void *queue;   /* command buffers: the first queue it was created for */
    const char *program; /* kernels: "program N" of their program, kept by names.c */
} obj;

static obj *act_cl_objs[ACT_CL_OBJ_BUCKETS];
static pthread_mutex_t act_cl_obj_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t act_cl_ctx_count;
static uint32_t act_cl_prog_count;
static _Atomic int act_cl_obj_used;
/* Bumped whenever a kernel's argument sizes change or a kernel node comes
 * or goes: a launch reads the sizes and the name from its thread's cache
 * while this is unchanged, without the lock (the sizes rarely change
 * between launches). A cached name belongs to a kernel whose creation was
 * seen: its handle cannot be reused before its release (a bump). */
static _Atomic uint64_t act_cl_karg_gen;
typedef act_cl_kinfo karg_cache;
/* Only a pointer is thread-local: the library's static TLS must stay
 * small (a second copy of it may be dlopen'ed). Initial-exec, as the
 * recorder's own (recorder_int.h): a launch reads it without a call to
 * __tls_get_addr. Freed at thread exit. */
static __thread karg_cache *act_cl_karg_cache __attribute__((tls_model("initial-exec")));
static pthread_key_t act_cl_karg_key;
static pthread_once_t act_cl_karg_once = PTHREAD_ONCE_INIT;

static void act_cl_karg_key_make(void)
{
    (void)pthread_key_create(&act_cl_karg_key, free);
}

static karg_cache *karg_cache_get(void)
{
    karg_cache *c = act_cl_karg_cache;
    if (ACT_LIKELY(c != NULL))
        return c;
    pthread_once(&act_cl_karg_once, act_cl_karg_key_make);
    if (!(c = calloc(1, sizeof *c)))
        return NULL;
    (void)pthread_setspecific(act_cl_karg_key, c);
    return act_cl_karg_cache = c;
}

static const char *const act_cl_obj_names[ACT_CL_OBJ_TYPES] = {
    "context", "command_queue", "buffer",  "image", "pipe",           "program",
    "kernel",  "event",         "sampler", "svm",   "command_buffer",
};

static inline uint32_t obj_hash(const void *p)
{
    return (uint32_t)act_cl_ptr_mix(p) & (ACT_CL_OBJ_BUCKETS - 1);
}

static obj *obj_find(const void *h)
{
    for (obj *o = act_cl_objs[obj_hash(h)]; o; o = o->next)
        if (o->h == h)
            return o;
    return NULL;
}

static void obj_unlink(obj *o)
{
    obj **pp = &act_cl_objs[obj_hash(o->h)];
    while (*pp && *pp != o)
        pp = &(*pp)->next;
    if (*pp)
        *pp = o->next;
    o->in_table = 0;
}

/* A context's live bytes as a counter sample (lock held). */
static void ctx_sample(const obj *ctx)
{
    if (!atomic_load_explicit(&act__recording, memory_order_relaxed))
        return;
    char name[64];
    snprintf(name, sizeof name, "OpenCL device memory (context %u)", ctx->index);
    act_counter(name, (double)ctx->bytes);
}

/* Finish `o` (no one holds it, it left the table): its bytes leave its
 * context's counter, and the hold it had on its holder is dropped, which
 * may finish that one too (lock held). */
static void obj_final(obj *o)
{
    while (o) {
        obj *up = o->holder;
        if (o->counted && up) {
            up->bytes -= o->bytes < up->bytes ? o->bytes : up->bytes;
            ctx_sample(up);
        }
        if (o->type == ACT_CL_OBJ_KERNEL)
            atomic_fetch_add(&act_cl_karg_gen, 1);
        free(o->kargs);
        free(o);
        if (!up || --up->holds > 0 || up->in_table)
            return;
        o = up;
    }
}

/* The app's last reference is gone (`o` left the table). */
static void obj_finish(obj *o)
{
    if (o->holds == 0)
        obj_final(o);
}

/* The node of context `ctx`, made (untracked) if we never saw it created. */
static obj *ctx_node(cl_context ctx)
{
    obj *c = obj_find(ctx);
    if (c || !(c = calloc(1, sizeof *c)))
        return c;
    c->h = ctx;
    c->type = ACT_CL_OBJ_CONTEXT;
    c->untracked = 1;
    c->in_table = 1;
    c->index = act_cl_ctx_count++;
    uint32_t b = obj_hash(ctx);
    c->next = act_cl_objs[b];
    act_cl_objs[b] = c;
    return c;
}

/* A forked child holds none of its parent's objects (OpenCL objects do
 * not survive fork): it starts with an empty table, so its own report
 * never lists the parent's. The parent's nodes are left allocated. */
/* The event table (evtab.c) hands these over at its first use, so that
 * the objects' report counts its events without this file calling into
 * evtab.c, which calls this one. */
static uint64_t (*events_live)(void);
static void (*events_forget)(void);

void act_cl_obj_events_table(uint64_t (*live)(void), void (*forget)(void))
{
    events_forget = forget;
    events_live = live;
}

static void act_cl_obj_atfork_child(void)
{
    pthread_mutex_init(&act_cl_obj_lock, NULL);
    memset(act_cl_objs, 0, sizeof act_cl_objs);
    if (events_forget)
        events_forget();
    atomic_fetch_add(&act_cl_karg_gen, 1);
    (void)act_cl_undrawn_take(ACT_CL_UNDRAWN_RETAIN_EVENT); /* the parent's calls */
    (void)act_cl_undrawn_take(ACT_CL_UNDRAWN_RELEASE_EVENT);
}

static void act_cl_obj_register_stop(void)
{
    act_lifecycle_on_stop("opencl.objects", act_cl_obj_report);
    pthread_atfork(NULL, NULL, act_cl_obj_atfork_child);
}

void act_cl_obj_use(void)
{
    if (!atomic_load_explicit(&act_cl_obj_used, memory_order_relaxed)) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        pthread_once(&once, act_cl_obj_register_stop);
        atomic_store(&act_cl_obj_used, 1);
    }
}

void act_cl_obj_created(int type, const void *h, cl_context ctx, const void *parent, uint64_t bytes)
{
    if (!h || !act_capture_attached())
        return;
    act_cl_obj_use();
    obj *o = calloc(1, sizeof *o);
    if (!o)
        return;
    o->h = h;
    o->type = (uint8_t)type;
    o->refs = 1;
    o->bytes = bytes;
    pthread_mutex_lock(&act_cl_obj_lock);
    obj *old = obj_find(h);
    if (type == ACT_CL_OBJ_KERNEL)
        atomic_fetch_add(&act_cl_karg_gen, 1);
    if (old) {
        /* The handle is reused: the old object's release went unseen.
         * A context seen first through its objects is this very one. */
        if (old->type == ACT_CL_OBJ_CONTEXT && old->untracked && type == ACT_CL_OBJ_CONTEXT) {
            old->untracked = 0;
            old->refs = 1;
            pthread_mutex_unlock(&act_cl_obj_lock);
            free(o);
            return;
        }
        obj_unlink(old);
        obj_finish(old);
    }
    if (type == ACT_CL_OBJ_CONTEXT)
        o->index = act_cl_ctx_count++;
    else if (type == ACT_CL_OBJ_PROGRAM)
        o->index = ++act_cl_prog_count;
    obj *holder = parent ? obj_find(parent) : NULL;
    if (!holder && ctx && type != ACT_CL_OBJ_CONTEXT)
        holder = ctx_node(ctx);
    if (holder) {
        o->holder = holder;
        holder->holds++;
    }
    int memory = type == ACT_CL_OBJ_BUFFER || type == ACT_CL_OBJ_IMAGE || type == ACT_CL_OBJ_PIPE ||
                 type == ACT_CL_OBJ_SVM;
    if (memory && !parent && holder && holder->type == ACT_CL_OBJ_CONTEXT) {
        o->counted = 1;
        holder->bytes += bytes;
        ctx_sample(holder);
    }
    o->in_table = 1;
    uint32_t b = obj_hash(h);
    o->next = act_cl_objs[b];
    act_cl_objs[b] = o;
    pthread_mutex_unlock(&act_cl_obj_lock);
}

void act_cl_obj_retained(const void *h)
{
    if (!atomic_load_explicit(&act_cl_obj_used, memory_order_relaxed))
        return;
    pthread_mutex_lock(&act_cl_obj_lock);
    obj *o = obj_find(h);
    if (o && !o->untracked)
        o->refs++;
    pthread_mutex_unlock(&act_cl_obj_lock);
}

void act_cl_obj_released(const void *h)
{
    if (!atomic_load_explicit(&act_cl_obj_used, memory_order_relaxed))
        return;
    pthread_mutex_lock(&act_cl_obj_lock);
    obj *o = obj_find(h);
    if (o && !o->untracked && o->refs > 0 && --o->refs == 0) {
        obj_unlink(o);
        obj_finish(o);
    }
    pthread_mutex_unlock(&act_cl_obj_lock);
}

void act_cl_obj_kernel_arg(cl_kernel k, cl_uint index, size_t size)
{
    if (index >= ACT_CL_KARGS_MAX || !atomic_load_explicit(&act_cl_obj_used, memory_order_relaxed))
        return;
    pthread_mutex_lock(&act_cl_obj_lock);
    obj *o = obj_find(k);
    if (o && o->type == ACT_CL_OBJ_KERNEL) {
        if (index >= o->n_kargs || o->kargs[index] != size)
            atomic_fetch_add(&act_cl_karg_gen, 1);
        if (index >= o->n_kargs) {
            uint64_t *n = realloc(o->kargs, (index + 1) * sizeof *n);
            if (n) {
                for (uint32_t i = o->n_kargs; i <= index; i++)
                    n[i] = 0;
                o->kargs = n;
                o->n_kargs = index + 1;
            }
        }
        if (index < o->n_kargs)
            o->kargs[index] = size;
    }
    pthread_mutex_unlock(&act_cl_obj_lock);
}

void act_cl_obj_set_queue(const void *h, cl_command_queue q)
{
    if (!atomic_load_explicit(&act_cl_obj_used, memory_order_relaxed))
        return;
    pthread_mutex_lock(&act_cl_obj_lock);
    obj *o = obj_find(h);
    if (o)
        o->queue = q;
    pthread_mutex_unlock(&act_cl_obj_lock);
}

cl_command_queue act_cl_obj_queue(const void *h)
{
    if (!atomic_load_explicit(&act_cl_obj_used, memory_order_relaxed))
        return NULL;
    pthread_mutex_lock(&act_cl_obj_lock);
    const obj *o = obj_find(h);
    cl_command_queue q = o ? (cl_command_queue)(uintptr_t)o->queue : NULL;
    pthread_mutex_unlock(&act_cl_obj_lock);
    return q;
}

/* "program N", kept for the life of the process (names.c). */
static const char *program_label(uint32_t ord)
{
    char s[32];
    int n = snprintf(s, sizeof s, "program %u", ord);
    return ord ? act_cl_name_keep(s, (size_t)n) : NULL;
}

/* Once per kernel made, not per launch: its label, kept with its node. */
void act_cl_obj_kernel_program(cl_kernel k, const void *from)
{
    pthread_mutex_lock(&act_cl_obj_lock);
    const obj *f = obj_find(from);
    uint32_t ord = f && f->type == ACT_CL_OBJ_PROGRAM ? f->index : 0;
    const char *label = f && f->type == ACT_CL_OBJ_KERNEL ? f->program : NULL; /* a clone */
    pthread_mutex_unlock(&act_cl_obj_lock);
    if (ord)
        label = program_label(ord); /* outside the lock: names.c takes its own */
    if (!label)
        return;
    pthread_mutex_lock(&act_cl_obj_lock);
    obj *o = obj_find(k);
    if (o && o->type == ACT_CL_OBJ_KERNEL) {
        o->program = label;
        atomic_fetch_add(&act_cl_karg_gen, 1);
    }
    pthread_mutex_unlock(&act_cl_obj_lock);
}

/* The cache of this thread missed: look `k` up under the lock, and ask
 * for the name of a kernel whose creation was seen. */
static __attribute__((noinline)) void karg_cache_fill(karg_cache *c, cl_kernel k, uint64_t gen)
{
    pthread_mutex_lock(&act_cl_obj_lock);
    const obj *o = obj_find(k);
    uint32_t m = 0, known = o && o->type == ACT_CL_OBJ_KERNEL;
    const char *program = NULL;
    if (known) {
        m = o->n_kargs < ACT_CL_KARGS_CACHED ? o->n_kargs : ACT_CL_KARGS_CACHED;
        memcpy(c->sizes, o->kargs, m * sizeof(uint64_t));
        program = o->program;
    }
    pthread_mutex_unlock(&act_cl_obj_lock);
    c->k = k;
    c->gen = gen; /* read before the lookup: a later change misses */
    c->n = m;
    c->name = known ? act_cl_kernel_name(k) : NULL;
    c->program = program;
}

const act_cl_kinfo *act_cl_obj_kernel(cl_kernel k)
{
    karg_cache *c = act_cl_karg_cache;
    if (ACT_UNLIKELY(!c) &&
        (!atomic_load_explicit(&act_cl_obj_used, memory_order_relaxed) || !(c = karg_cache_get())))
        return NULL;
    uint64_t gen = atomic_load_explicit(&act_cl_karg_gen, memory_order_acquire);
    if (ACT_UNLIKELY(c->k != k || c->gen != gen))
        karg_cache_fill(c, k, gen);
    return c;
}

void act_cl_obj_report(void)
{
    uint64_t count[ACT_CL_OBJ_TYPES] = {0}, bytes[ACT_CL_OBJ_TYPES] = {0};
    pthread_mutex_lock(&act_cl_obj_lock);
    for (uint32_t b = 0; b < ACT_CL_OBJ_BUCKETS; b++)
        for (const obj *o = act_cl_objs[b]; o; o = o->next)
            if (!o->untracked && o->refs > 0) {
                count[o->type]++;
                if (o->type != ACT_CL_OBJ_CONTEXT)
                    bytes[o->type] += o->bytes;
            }
    pthread_mutex_unlock(&act_cl_obj_lock);
    count[ACT_CL_OBJ_EVENT] += events_live ? events_live() : 0;
    char json[1024];
    size_t len = 0;
    uint64_t total = 0;
    len += (size_t)snprintf(json + len, sizeof json - len, "{");
    for (int t = 0; t < ACT_CL_OBJ_TYPES; t++) {
        total += count[t];
        len += (size_t)snprintf(json + len, sizeof json - len, "%s\"%s\":{\"count\":%llu",
                                t ? "," : "", act_cl_obj_names[t], (unsigned long long)count[t]);
        if (t == ACT_CL_OBJ_BUFFER || t == ACT_CL_OBJ_IMAGE || t == ACT_CL_OBJ_PIPE ||
            t == ACT_CL_OBJ_SVM)
            len += (size_t)snprintf(json + len, sizeof json - len, ",\"bytes\":%llu",
                                    (unsigned long long)bytes[t]);
        len += (size_t)snprintf(json + len, sizeof json - len, "}");
    }
    snprintf(json + len, sizeof json - len, ",\"total\":%llu}", (unsigned long long)total);
    act_metadata_set_json("opencl_leaks", json);
    snprintf(json, sizeof json, "{\"clRetainEvent\":%llu,\"clReleaseEvent\":%llu}",
             (unsigned long long)act_cl_undrawn_take(ACT_CL_UNDRAWN_RETAIN_EVENT),
             (unsigned long long)act_cl_undrawn_take(ACT_CL_UNDRAWN_RELEASE_EVENT));
    act_metadata_set_json("opencl_calls_not_drawn", json);
}
