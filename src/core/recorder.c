/*
 * recorder.c -- per-thread, lock-free recording into a file-backed spool.
 *
 * This is the hot path of the whole tool. A thread owns one chunk of the
 * mmap'ed spool file (format: record.h). Appending a record is: check that
 * it fits, write it, publish the new fill count with a release store. No
 * lock, no system call. Only when a chunk is full does the thread take the
 * slow path: grab a recycled chunk (mutex, rare) or the next fresh one
 * (atomic fetch-add), or count the record as dropped when the spool is full.
 *
 * Because the spool is a MAP_SHARED file mapping, every published byte is
 * in the page cache the moment it is written: if the program is killed, the
 * launcher still reads everything published before the death.
 *
 * Lifetime: act_recorder_open() maps a new spool (generation++);
 * act_recorder_close() seals it but never unmaps it while threads might
 * still be writing (a device callback can arrive late); stale per-thread
 * state is detected by generation on the slow path.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include <link.h>

#include "acceltrace.h"
#include "internal.h"

#define ACT_STR_CACHE   256 /* per-thread interned-string cache slots (power of 2) */
#define ACT_RANGE_STACK 256 /* nesting tracked for External ids; deeper still recorded */
/* Range stack entries: a sequence number, or one of these for a push that
 * was not written. */
#define RANGE_MARK_OUTSIDE 0u
#define RANGE_MARK_DROPPED UINT32_MAX

_Atomic int act__recording;

typedef struct act_str_slot {
    uint64_t hash;
    const char *ptr; /* the caller's pointer, a fast first check */
    char *copy;      /* our copy of the bytes */
    uint32_t len;
    uint32_t id;
} act_str_slot;

/* Pointer cache of the range fast path: a caller's string pointer that
 * lies in a read-only segment of a loaded object (a literal) always names
 * the same bytes, so its id can be found without reading the string. */
#define ACT_PTR_CACHE 64 /* power of 2 */
typedef struct act_ptr_slot {
    const char *ptr;     /* immutable string whose id is `id` */
    const char *mutable; /* last pointer found writable: skip the segment lookup */
    uint32_t id;
    uint32_t pad;
} act_ptr_slot;

struct act_thread {
    /* Hot fields first: one cache line serves a push or a pop. */
    char *data;           /* first byte after the chunk header */
    _Atomic uint32_t cap; /* usable bytes; 0 forces the slow path */
    uint32_t pos;         /* bytes written (published with commit) */
    act_chunk_header *chunk;
    uint64_t anc_tsc;  /* fast clock anchor: TSC ... */
    uint64_t anc_ns;   /* ... and the timeline ns it maps to */
    uint64_t anc_mult; /* ns per TSC tick << 32 */
    uint64_t last_ns;  /* last fast-clock reading (monotonic floor) */
    uint32_t gen;      /* spool generation of `chunk` and the string ids */
    uint32_t serial;   /* thread serial, never reused in a process */
    uint32_t next_str; /* next string id */
    uint32_t tid;
    uint32_t range_depth;
    uint32_t range_seq; /* sequence number of the last push */
    uint32_t range_stack[ACT_RANGE_STACK];
    act_str_slot strs[ACT_STR_CACHE];
    act_ptr_slot ptrs[ACT_PTR_CACHE];
    struct act_thread *next; /* all-threads list, under sp.lock */
    int announced;           /* THREAD record written in this generation */
};

static struct {
    pthread_mutex_t lock; /* guards open/close, the thread list, the free list */
    /* Written under `lock` (open, close, fork); read without it by drop
     * counting and the header/path queries, which may race a close: so
     * every access goes through hdr_get/hdr_set (acquire/release). The
     * record hot path never reads it (it checks its chunk's cap). */
    _Atomic(act_spool_header *) hdr;
    char *map;
    size_t map_size;
    uint32_t chunk_size;
    uint32_t chunk_count;
    _Atomic uint32_t gen;
    uint32_t *free_chunks; /* recycled chunk indices */
    uint32_t free_top;
    act_thread *threads;
    char path[PATH_MAX];
    char dir[PATH_MAX];
    pid_t pid;
    int reopen_pending; /* forked child: open a spool on the next record */
} sp = {.lock = PTHREAD_MUTEX_INITIALIZER};

static inline act_spool_header *hdr_get(void)
{
    return atomic_load_explicit(&sp.hdr, memory_order_acquire);
}

static inline void hdr_set(act_spool_header *h)
{
    atomic_store_explicit(&sp.hdr, h, memory_order_release);
}

/* Set when no chunk could be handed out (spool full, nothing to recycle),
 * cleared when a chunk is recycled or a spool opened. While set, a thread
 * without a chunk drops its records without taking sp.lock: a full spool
 * must not turn every record into a mutex round trip. */
static _Atomic int spool_exhausted;

static __thread act_thread *tls_thread __attribute__((tls_model("initial-exec")));
static pthread_key_t tls_key;
static pthread_once_t tls_key_once = PTHREAD_ONCE_INIT;
static _Atomic uint32_t next_serial = 1;
static _Atomic uint64_t next_corr = 1;
static _Atomic uint64_t next_range_id = 1;

/* ---- ids -------------------------------------------------------------- */

uint64_t act_corr_next(void)
{
    return atomic_fetch_add_explicit(&next_corr, 1, memory_order_relaxed);
}

uint64_t act_range_id_next(void)
{
    return atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed);
}

/* ---- spool file ------------------------------------------------------- */

static void spool_fill_cmdline(act_spool_header *h)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, h->cmdline, sizeof(h->cmdline) - 2);
    close(fd);
    if (n < 0)
        n = 0;
    h->cmdline[n] = '\0';
    h->cmdline[n + 1] = '\0';
}

static int spool_map(const char *dir, uint64_t capacity, uint32_t chunk_size)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return ACT_E_IO;
    /* <pid>.acts, or <pid>-N.acts when this pid already has one (a forked
     * child that recorded and then called exec keeps its pid). */
    char path[PATH_MAX];
    int fd = -1, n = 0;
    for (int i = 0; i < 64 && fd < 0; i++) {
        n = i ? snprintf(path, sizeof(path), "%s/%ld-%d.acts", dir, (long)getpid(), i)
              : snprintf(path, sizeof(path), "%s/%ld.acts", dir, (long)getpid());
        if (n < 0 || (size_t)n >= sizeof(path))
            return ACT_E_INVAL;
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            return ACT_E_IO;
    }
    if (fd < 0)
        return ACT_E_IO;
    if (ftruncate(fd, (off_t)capacity) != 0) {
        close(fd);
        unlink(path);
        return ACT_E_IO;
    }
    void *m = mmap(NULL, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        unlink(path);
        return ACT_E_NOMEM;
    }
    sp.map = m;
    sp.map_size = capacity;
    hdr_set(m);
    sp.chunk_size = chunk_size;
    sp.chunk_count = (uint32_t)((capacity - ACT_SPOOL_HEADER_SIZE) / chunk_size);
    memcpy(sp.path, path, (size_t)n + 1);
    snprintf(sp.dir, sizeof(sp.dir), "%s", dir);
    return 0;
}

static void spool_init_header(void)
{
    act_spool_header *h = hdr_get();
    h->version = ACT_SPOOL_VERSION;
    h->header_size = ACT_SPOOL_HEADER_SIZE;
    h->capacity = sp.map_size;
    h->chunk_size = sp.chunk_size;
    h->chunk_count = sp.chunk_count;
    h->pid = (uint32_t)getpid();
    h->ppid = (uint32_t)getppid();
    h->clock_kind = ACT_CLOCK_MONOTONIC_RAW;
    h->start_realtime_ns = act_clock_realtime();
    h->start_ns = act_clock_now();
    spool_fill_cmdline(h);
    /* The magic goes last: a reader that sees it sees a whole header. */
    atomic_store_explicit((_Atomic uint64_t *)&h->magic, ACT_SPOOL_MAGIC, memory_order_release);
}

static void recorder_atfork_register(void)
{
    pthread_atfork(NULL, NULL, act_recorder_atfork_child);
}

/* ---- pre-faulting ahead ------------------------------------------------
 *
 * The first write to a fresh page of the spool costs a page fault that
 * zeroes the page (and on a VM may fault on the host too): measured at
 * ~10 ns per PUSH+POP pair amortised, a third of the hot path
 * (BENCHMARKS.md). A helper thread keeps up to the next ACT_PREFAULT_AHEAD bytes
 * of fresh chunks faulted in (MADV_POPULATE_WRITE) ahead of the chunks
 * handed out, so recording threads find their pages present. It never
 * touches records; when it falls behind, chunk_acquire populates the chunk
 * itself. It only runs while a spool is open. The distance ahead grows
 * with use (see prefault_main), so a light recorder pays for little.
 */
#define ACT_PREFAULT_AHEAD (8u << 20)

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    _Atomic int running; /* a thread exists (this process, this spool) */
    int stop;
    _Atomic uint32_t done; /* chunks [0, done) are faulted in */
} pf = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static void chunk_prefault(act_chunk_header *c);

static void *prefault_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pf.lock);
    uint64_t max_ahead = ACT_PREFAULT_AHEAD / sp.chunk_size + 1;
    while (!pf.stop) {
        uint64_t used = atomic_load((_Atomic uint64_t *)&hdr_get()->chunks_used);
        /* As far ahead as has been used so far, from 2 chunks up to the
         * window: a process that records little (an OpenCL program writes
         * a few hundred bytes per launch) is not charged the window's
         * zeroed pages at start-up, in its RSS and again when the spool
         * is deleted; a heavy recorder reaches the whole window once it
         * has used as much. */
        uint64_t ahead = used < 2 ? 2 : used > max_ahead ? max_ahead : used;
        uint64_t want = used + ahead < sp.chunk_count ? used + ahead : sp.chunk_count;
        uint32_t idx = atomic_load(&pf.done);
        if (idx < want) {
            pthread_mutex_unlock(&pf.lock);
            chunk_prefault(
                (act_chunk_header *)(sp.map + ACT_SPOOL_HEADER_SIZE + (size_t)idx * sp.chunk_size));
            pthread_mutex_lock(&pf.lock);
            atomic_store(&pf.done, idx + 1);
            continue;
        }
        pthread_cond_wait(&pf.wake, &pf.lock);
    }
    pthread_mutex_unlock(&pf.lock);
    return NULL;
}

/* Caller holds sp.lock, with a freshly mapped spool. */
static void prefault_start(void)
{
    atomic_store(&pf.done, 0);
    pf.stop = 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the app's signals are not ours */
    pf.running = pthread_create(&pf.thread, NULL, prefault_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pf.running)
        pthread_setname_np(pf.thread, "act-prefault");
}

/* Caller holds sp.lock. */
static void prefault_stop(void)
{
    if (!pf.running)
        return;
    pthread_mutex_lock(&pf.lock);
    pf.stop = 1;
    pthread_cond_signal(&pf.wake);
    pthread_mutex_unlock(&pf.lock);
    pthread_join(pf.thread, NULL);
    pf.running = 0;
}

uint32_t act_recorder_prefaulted(void)
{
    return atomic_load(&pf.done);
}

static void prefault_kick(void)
{
    if (!pf.running)
        return;
    pthread_mutex_lock(&pf.lock);
    pthread_cond_signal(&pf.wake);
    pthread_mutex_unlock(&pf.lock);
}

int act_recorder_open(const char *dir, uint64_t capacity, uint32_t chunk_size)
{
    if (!dir || !*dir)
        return ACT_E_INVAL;
    if (chunk_size < 4096 || chunk_size % 8 || chunk_size > (1u << 24))
        return ACT_E_INVAL;
    if (capacity < (uint64_t)ACT_SPOOL_HEADER_SIZE + chunk_size)
        return ACT_E_INVAL;
    pthread_mutex_lock(&sp.lock);
    if (hdr_get() && sp.pid == getpid()) {
        pthread_mutex_unlock(&sp.lock);
        return ACT_E_STATE;
    }
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
    pthread_once(&atfork_once, recorder_atfork_register);
    int rc = spool_map(dir, capacity, chunk_size);
    if (rc == 0) {
        free(sp.free_chunks);
        sp.free_chunks = calloc(sp.chunk_count, sizeof(uint32_t));
        sp.free_top = 0;
        if (!sp.free_chunks) {
            munmap(sp.map, sp.map_size);
            unlink(sp.path);
            hdr_set(NULL);
            rc = ACT_E_NOMEM;
        }
    }
    if (rc == 0) {
        sp.pid = getpid();
        spool_init_header();
        atomic_store(&spool_exhausted, 0);
        atomic_fetch_add(&sp.gen, 1);
        prefault_start();
    }
    pthread_mutex_unlock(&sp.lock);
    /* Outside sp.lock: the capture window decides whether act__recording
     * turns on, and may write records. */
    if (rc == 0)
        act_capture_recorder_opened();
    return rc;
}

void act_recorder_close(void)
{
    pthread_mutex_lock(&sp.lock);
    if (!hdr_get() || sp.pid != getpid()) {
        pthread_mutex_unlock(&sp.lock);
        return;
    }
    atomic_store(&act__recording, 0);
    prefault_stop();
    /* Send every thread to the slow path; it will find a new generation. */
    for (act_thread *t = sp.threads; t; t = t->next)
        atomic_store_explicit(&t->cap, 0, memory_order_relaxed);
    act_spool_header *h = hdr_get();
#if defined(__x86_64__)
    if (atomic_load(&act_tsc.usable) == 1) {
        /* Informational: timestamps are already ns (see record.h). */
        h->calib_ts[0] = act_tsc.tsc0;
        h->calib_ns[0] = act_tsc.ns0;
        act_tsc_pair(&h->calib_ts[1], &h->calib_ns[1]);
    }
#endif
    atomic_fetch_or((_Atomic uint32_t *)&h->flags, ACT_SPOOL_F_SEALED);
    msync(sp.map, sp.map_size, MS_ASYNC);
    /* Keep the mapping: a late device callback may still be writing to it.
     * It is address space only; the file itself is removed by its owner. */
    hdr_set(NULL);
    atomic_fetch_add(&sp.gen, 1);
    pthread_mutex_unlock(&sp.lock);
    act_capture_recorder_closed();
}

/* No getpid() here: the fork handler clears sp.hdr in a child, so the
 * header seen is always this process' own, and sources may call this on
 * every command. */
act_spool_header *act_recorder_header(void)
{
    return hdr_get();
}

const char *act_recorder_path(void)
{
    return hdr_get() ? sp.path : "";
}

/* ---- per-thread state ------------------------------------------------- */

static void chunk_release(act_thread *t)
{
    /* Caller holds sp.lock. A chunk with room left is recycled for the
     * next thread that needs one; its published fill stays as it is. */
    if (!t->chunk || t->gen != atomic_load(&sp.gen) || !hdr_get())
        return;
    if (t->pos + 64 < atomic_load_explicit(&t->cap, memory_order_relaxed)) {
        sp.free_chunks[sp.free_top++] = t->chunk->index;
        atomic_store_explicit(&spool_exhausted, 0, memory_order_relaxed);
    }
    t->chunk = NULL;
    /* The fast path must never write to a chunk this thread gave up:
     * another thread may own it now, and commit needs t->chunk. */
    atomic_store_explicit(&t->cap, 0, memory_order_relaxed);
}

static void thread_destroy(void *arg)
{
    act_thread *t = arg;
    pthread_mutex_lock(&sp.lock);
    chunk_release(t);
    for (act_thread **p = &sp.threads; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            break;
        }
    }
    pthread_mutex_unlock(&sp.lock);
    for (size_t i = 0; i < ACT_STR_CACHE; i++)
        free(t->strs[i].copy);
    tls_thread = NULL;
    free(t);
}

static void tls_key_create(void)
{
    pthread_key_create(&tls_key, thread_destroy);
}

static act_thread *thread_get(void)
{
    act_thread *t = tls_thread;
    if (ACT_LIKELY(t != NULL))
        return t;
    pthread_once(&tls_key_once, tls_key_create);
    t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->serial = atomic_fetch_add(&next_serial, 1);
    t->tid = (uint32_t)syscall(SYS_gettid);
    pthread_setspecific(tls_key, t);
    pthread_mutex_lock(&sp.lock);
    t->next = sp.threads;
    sp.threads = t;
    pthread_mutex_unlock(&sp.lock);
    tls_thread = t;
    return t;
}

static void thread_reset_strings(act_thread *t)
{
    for (size_t i = 0; i < ACT_STR_CACHE; i++) {
        free(t->strs[i].copy);
        memset(&t->strs[i], 0, sizeof(t->strs[i]));
    }
    memset(t->ptrs, 0, sizeof(t->ptrs));
    t->next_str = 1;
    t->announced = 0;
}

/* A new spool numbers ranges afresh; ranges still open from the previous
 * one are not in it, so their pops must not be written. */
static void thread_reset_ranges(act_thread *t)
{
    uint32_t d = t->range_depth < ACT_RANGE_STACK ? t->range_depth : ACT_RANGE_STACK;
    for (uint32_t i = 0; i < d; i++)
        t->range_stack[i] = RANGE_MARK_OUTSIDE;
    t->range_seq = 0;
}

/* Write a record straight into the current chunk (slow-path helper). */
static void *chunk_put(act_thread *t, uint16_t kind, size_t size, uint32_t aux)
{
    act_rec_hdr *h = (act_rec_hdr *)(t->data + t->pos);
    h->kind = kind;
    h->size8 = (uint16_t)(size / 8);
    h->aux = aux;
    t->pos += (uint32_t)size;
    return h;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Fault a fresh chunk's pages in with one system call instead of one
 * page fault per 4 KiB later on the hot path (a fault costs microseconds
 * on VMs; a page holds 256 PUSH/POP records). Older kernels refuse the
 * advice; the pages then fault in as they are written. */
static void chunk_prefault(act_chunk_header *c)
{
    static _Atomic int unsupported;
    /* Page-align; populating a neighbour's already-present page is a no-op. */
    uintptr_t a = (uintptr_t)c & ~(uintptr_t)4095;
    size_t len = (uintptr_t)c + sp.chunk_size - a;
    if (!atomic_load_explicit(&unsupported, memory_order_relaxed) &&
        madvise((void *)a, len, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
        atomic_store(&unsupported, 1);
}

/* Caller holds sp.lock. Pop a recycled chunk with room for `need` more
 * bytes (UINT32_MAX if none). A chunk without that room stays listed for
 * smaller records: taking it back would only fail again (the chunk just
 * released by this very thread is usually on top). */
static uint32_t free_chunk_take(size_t need)
{
    uint32_t usable = sp.chunk_size - (uint32_t)sizeof(act_chunk_header);
    for (uint32_t i = sp.free_top; i-- > 0;) {
        uint32_t idx = sp.free_chunks[i];
        const act_chunk_header *c = (const act_chunk_header *)(sp.map + ACT_SPOOL_HEADER_SIZE +
                                                               (size_t)idx * sp.chunk_size);
        uint32_t used = atomic_load_explicit((_Atomic uint32_t *)&c->used, memory_order_relaxed);
        if (used + need <= usable) {
            sp.free_chunks[i] = sp.free_chunks[--sp.free_top];
            return idx;
        }
    }
    return UINT32_MAX;
}

/* Take a chunk with room for `need` bytes of records after the segment
 * header (recycled first, then fresh) and start a segment in it. */
static int chunk_acquire(act_thread *t, size_t need)
{
    uint32_t idx = UINT32_MAX;
    if (atomic_load_explicit(&spool_exhausted, memory_order_relaxed) && !t->chunk &&
        t->gen == atomic_load(&sp.gen))
        return -1;
    if (ACT_UNLIKELY(sp.reopen_pending)) {
        char dir[PATH_MAX];
        memcpy(dir, sp.dir, sizeof(dir));
        sp.reopen_pending = 0;
        if (act_recorder_open(dir, sp.map_size, sp.chunk_size) != 0)
            atomic_store(&act__recording, 0);
    }
    pthread_mutex_lock(&sp.lock);
    act_spool_header *h = hdr_get();
    if (!h) {
        pthread_mutex_unlock(&sp.lock);
        return -1;
    }
    uint32_t gen = atomic_load(&sp.gen);
    if (t->gen != gen) {
        t->chunk = NULL;
        atomic_store_explicit(&t->cap, 0, memory_order_relaxed);
        t->gen = gen;
        thread_reset_strings(t);
        thread_reset_ranges(t);
    }
    chunk_release(t);
    idx = free_chunk_take(need + sizeof(act_rec_segment) + sizeof(act_rec_thread));
    if (idx == UINT32_MAX) {
        uint64_t used = atomic_fetch_add((_Atomic uint64_t *)&h->chunks_used, 1);
        if (used < sp.chunk_count)
            idx = (uint32_t)used;
        else
            atomic_store((_Atomic uint64_t *)&h->chunks_used, sp.chunk_count);
    }
    if (idx == UINT32_MAX)
        atomic_store_explicit(&spool_exhausted, 1, memory_order_relaxed);
    pthread_mutex_unlock(&sp.lock);
    if (idx == UINT32_MAX)
        return -1;

    act_chunk_header *c =
        (act_chunk_header *)(sp.map + ACT_SPOOL_HEADER_SIZE + (size_t)idx * sp.chunk_size);
    if (c->magic != ACT_CHUNK_MAGIC) {
        if (idx >= atomic_load(&pf.done))
            chunk_prefault(c); /* the helper is behind: do it now, once */
        prefault_kick();
        c->index = idx;
        atomic_store_explicit((_Atomic uint32_t *)&c->used, 0, memory_order_relaxed);
        atomic_store_explicit((_Atomic uint32_t *)&c->magic, ACT_CHUNK_MAGIC, memory_order_release);
    }
    t->chunk = c;
    t->data = (char *)(c + 1);
    t->pos = atomic_load_explicit((_Atomic uint32_t *)&c->used, memory_order_relaxed);
    uint32_t cap = sp.chunk_size - (uint32_t)sizeof(*c);
    /* A segment header, then everything this thread writes. */
    act_rec_segment *s = chunk_put(t, ACT_REC_SEGMENT, sizeof(*s), t->serial);
    s->seq = atomic_fetch_add((_Atomic uint64_t *)&h->segment_seq, 1);
    if (!t->announced) {
        act_rec_thread *r = chunk_put(t, ACT_REC_THREAD, sizeof(*r), t->serial);
        r->tid = t->tid;
        r->name = 0;
        t->announced = 1;
    }
    atomic_store_explicit((_Atomic uint32_t *)&c->used, t->pos, memory_order_release);
    atomic_store_explicit(&t->cap, cap, memory_order_relaxed);
    return 0;
}

void act_rec_drop(uint16_t kind)
{
    act_spool_header *h = hdr_get();
    if (h && kind < ACT_REC_KIND_MAX)
        atomic_fetch_add_explicit((_Atomic uint64_t *)&h->dropped[kind], 1, memory_order_relaxed);
}

static void *reserve_slow(act_thread *t, uint16_t kind, size_t size)
{
    /* Room for a segment + thread record in a fresh chunk, then the record. */
    size_t need = size + sizeof(act_rec_segment) + sizeof(act_rec_thread);
    if (need > sp.chunk_size - sizeof(act_chunk_header) || chunk_acquire(t, size) != 0) {
        act_rec_drop(kind);
        return NULL;
    }
    if (t->pos + size > atomic_load_explicit(&t->cap, memory_order_relaxed)) {
        /* A recycled chunk without enough room: take another. */
        if (chunk_acquire(t, size) != 0 ||
            t->pos + size > atomic_load_explicit(&t->cap, memory_order_relaxed)) {
            act_rec_drop(kind);
            return NULL;
        }
    }
    return chunk_put(t, kind, size, 0);
}

void *act_rec_reserve(uint16_t kind, size_t size)
{
    assert(size % 8 == 0 && size >= sizeof(act_rec_hdr) && size / 8 <= UINT16_MAX);
    act_thread *t = thread_get();
    if (ACT_UNLIKELY(!t)) {
        act_rec_drop(kind);
        return NULL;
    }
    if (ACT_LIKELY(t->pos + size <= atomic_load_explicit(&t->cap, memory_order_relaxed)))
        return chunk_put(t, kind, size, 0);
    return reserve_slow(t, kind, size);
}

void act_rec_commit(void)
{
    act_thread *t = tls_thread;
    assert(t && t->chunk);
    atomic_store_explicit((_Atomic uint32_t *)&t->chunk->used, t->pos, memory_order_release);
}

/* ---- strings ---------------------------------------------------------- */

static uint64_t str_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h | 1; /* 0 marks an empty slot */
}

static uint32_t str_emit(act_thread *t, const char *s, size_t len)
{
    size_t max = sp.chunk_size - sizeof(act_chunk_header) - sizeof(act_rec_segment) -
                 sizeof(act_rec_thread) - sizeof(act_rec_string) - 8;
    if (len > max) {
        len = max;
        act_spool_header *h = hdr_get();
        if (h)
            atomic_fetch_add((_Atomic uint64_t *)&h->strings_truncated, 1);
    }
    size_t size = (sizeof(act_rec_string) + len + 7) & ~(size_t)7;
    act_rec_string *r = act_rec_reserve(ACT_REC_STRING, size);
    if (!r)
        return 0;
    uint32_t id = t->next_str++;
    r->h.aux = id;
    r->len = (uint32_t)len;
    r->pad = 0;
    char *dst = (char *)(r + 1);
    memcpy(dst, s, len);
    memset(dst + len, 0, size - sizeof(*r) - len);
    act_rec_commit();
    return id;
}

uint32_t act_str_intern(const char *s, size_t len)
{
    act_thread *t = thread_get();
    if (!t || !s)
        return 0;
    /* Make sure the thread has a chunk of the current generation first, so
     * the id below belongs to the spool it will be written to. */
    if (t->gen != atomic_load_explicit(&sp.gen, memory_order_relaxed) || !t->chunk) {
        if (chunk_acquire(t, 0) != 0) {
            act_rec_drop(ACT_REC_STRING);
            return 0;
        }
    }
    uint64_t h = str_hash(s, len);
    size_t i = (size_t)h & (ACT_STR_CACHE - 1);
    act_str_slot *slot = &t->strs[i];
    if (slot->hash == h && slot->len == len && memcmp(slot->copy, s, len) == 0)
        return slot->id;
    uint32_t id = str_emit(t, s, len);
    if (!id)
        return 0;
    /* The cache only saves repeats; a collision just replaces the slot. */
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
        free(slot->copy);
        slot->copy = copy;
        slot->hash = h;
        slot->len = (uint32_t)len;
        slot->id = id;
        slot->ptr = s;
    }
    return id;
}

uint32_t act_str_intern_cstr(const char *s)
{
    return s ? act_str_intern(s, strlen(s)) : 0;
}

/* ---- ranges ----------------------------------------------------------- */

uint64_t act_range_current_ext(void)
{
    act_thread *t = tls_thread;
    if (!t)
        return 0;
    uint32_t d = t->range_depth < ACT_RANGE_STACK ? t->range_depth : ACT_RANGE_STACK;
    /* Usually the top entry; skip ranges that are not in the spool. */
    while (d > 0) {
        uint32_t seq = t->range_stack[d - 1];
        if (seq != RANGE_MARK_OUTSIDE && seq != RANGE_MARK_DROPPED)
            return ((uint64_t)t->serial << 32) | seq;
        d--;
    }
    return 0;
}

/* Called by act_range_push after its record was written (or not). */
void act_recorder_range_pushed(int how)
{
    act_thread *t = thread_get();
    if (ACT_UNLIKELY(!t))
        return;
    uint32_t mark = how == ACT_RANGE_RECORDED  ? ++t->range_seq
                    : how == ACT_RANGE_DROPPED ? RANGE_MARK_DROPPED
                                               : RANGE_MARK_OUTSIDE;
    if (t->range_depth < ACT_RANGE_STACK)
        t->range_stack[t->range_depth] = mark;
    t->range_depth++;
}

/* Returns enum act_range_how of the popped range's push;
 * ACT_RANGE_UNBALANCED (counted) when nothing was open. */
int act_recorder_range_popped(void)
{
    act_thread *t = tls_thread;
    if (!t || t->range_depth == 0) {
        act_spool_header *h = act_recorder_header();
        if (h)
            atomic_fetch_add((_Atomic uint64_t *)&h->unbalanced_pops, 1);
        return ACT_RANGE_UNBALANCED;
    }
    uint32_t d = --t->range_depth;
    if (d >= ACT_RANGE_STACK) /* too deep to track: as the window is now */
        return atomic_load_explicit(&act__recording, memory_order_relaxed) ? ACT_RANGE_RECORDED
                                                                           : ACT_RANGE_OUTSIDE;
    uint32_t mark = t->range_stack[d];
    return mark == RANGE_MARK_OUTSIDE   ? ACT_RANGE_OUTSIDE
           : mark == RANGE_MARK_DROPPED ? ACT_RANGE_DROPPED
                                        : ACT_RANGE_RECORDED;
}

/* ---- fast clock --------------------------------------------------------
 *
 * Per-thread anchor (tsc, ns) plus the global rate from clock.c: a reading
 * is anchor_ns + (rdtsc - anchor_tsc) * rate, a few cycles instead of a
 * clock_gettime. A thread re-anchors on the true clock every
 * ACT_TSC_REANCHOR ticks (~0.4 ms at 2.5 GHz), which bounds the error by
 * rate error x 0.4 ms + bracket (a few ns; tests/unit/test_range_fast_path.c
 * checks it stays under 1 us) and also catches a migration onto a CPU
 * whose TSC reads lower (the difference wraps to a huge value). A thread's
 * readings never go backwards: a re-anchor never lands below the last
 * reading. Without a usable TSC every reading is a clock_gettime.
 */
#define ACT_TSC_REANCHOR (1ull << 20)

static uint64_t thread_clock_slow(act_thread *t)
{
    uint64_t tsc = 0, ns, m = 0;
#if defined(__x86_64__)
    /* Acquire: the calibrating thread wrote the origin pair before it
     * published usable = 1, and act_tsc_refine reads that pair. */
    int usable = atomic_load_explicit(&act_tsc.usable, memory_order_acquire);
    if (ACT_UNLIKELY(usable < 0))
        usable = act_tsc_calibrate();
    if (usable == 1) {
        act_tsc_pair(&tsc, &ns);
        m = act_tsc_refine(tsc, ns);
    } else
#endif
        ns = act_clock_now();
    if (ns < t->last_ns)
        ns = t->last_ns;
    t->anc_tsc = tsc;
    t->anc_ns = ns;
    t->anc_mult = m;
    t->last_ns = ns;
    return ns;
}

static inline uint64_t thread_clock(act_thread *t)
{
#if defined(__x86_64__)
    uint64_t d = __rdtsc() - t->anc_tsc;
    if (ACT_LIKELY(d < ACT_TSC_REANCHOR)) {
        uint64_t ns = t->anc_ns + ((d * t->anc_mult) >> 32);
        t->last_ns = ns;
        return ns;
    }
#endif
    return thread_clock_slow(t);
}

uint64_t act_rec_now(void)
{
    act_thread *t = tls_thread;
    return t ? thread_clock(t) : act_clock_now();
}

/* ---- range fast path ---------------------------------------------------
 *
 * act_range_push/pop try these first while recording. The common case --
 * thread state present, the name a literal seen before, the range recorded,
 * room in the chunk -- writes the 16-byte record and publishes it with no
 * call, no hashing and no string read. Anything else returns
 * ACT_RANGE_SLOW having changed nothing, and annotate.c takes the general
 * path (intern, reserve, commit, capture window, drops), whose interning
 * (act_str_intern_literal) fills the pointer cache.
 *
 * NOTE for anything that gates recording (capture window, pause): the fast
 * path does not go through act_rec_reserve. Gate it where it is gated
 * already: act__recording (checked by the callers) or a thread's `cap`
 * (0 sends every record of that thread to the slow path, as close does).
 */

struct ro_query {
    uintptr_t lo, hi;
    int ro;
};

static int ro_segment_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct ro_query *q = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (q->lo >= lo && q->lo < hi) {
            q->ro = q->hi <= hi && !(ph->p_flags & PF_W);
            return 1;
        }
    }
    return 0;
}

/* Is [s, s+len] inside a read-only segment of a loaded object? Such bytes
 * cannot change while the object stays loaded. (An object unloaded and
 * another loaded at the same address with a different string at the same
 * pointer would defeat this; the cache is cleared with each new spool.) */
static int str_is_immutable(const char *s, size_t len)
{
    struct ro_query q = {(uintptr_t)s, (uintptr_t)s + len + 1, 0};
    dl_iterate_phdr(ro_segment_cb, &q);
    return q.ro;
}

static inline act_ptr_slot *ptr_slot(act_thread *t, const char *s)
{
    uintptr_t p = (uintptr_t)s;
    return &t->ptrs[(p ^ (p >> 6)) & (ACT_PTR_CACHE - 1)];
}

uint32_t act_str_intern_literal(const char *s)
{
    if (!s)
        return 0;
    /* A literal seen before is answered from the pointer cache, without
     * hashing it. A slot is valid for this spool only (the strings of a new
     * generation are reset when the thread takes its first chunk). */
    act_thread *t = tls_thread;
    if (ACT_LIKELY(t && t->chunk &&
                   t->gen == atomic_load_explicit(&sp.gen, memory_order_relaxed))) {
        const act_ptr_slot *hit = ptr_slot(t, s);
        if (hit->ptr == s)
            return hit->id;
    }
    size_t len = strlen(s);
    uint32_t id = act_str_intern(s, len);
    t = tls_thread; /* made by act_str_intern on a thread's first record */
    if (!id || !t || t->gen != atomic_load_explicit(&sp.gen, memory_order_relaxed))
        return id;
    act_ptr_slot *ps = ptr_slot(t, s);
    if (ps->ptr != s && ps->mutable != s) {
        if (str_is_immutable(s, len)) {
            ps->ptr = s;
            ps->id = id;
        } else {
            ps->mutable = s;
        }
    }
    return id;
}

static inline void put_ts(act_thread *t, uint32_t pos, uint16_t kind, uint32_t aux)
{
    act_rec_ts *r = (act_rec_ts *)(t->data + pos);
    r->h.kind = kind;
    r->h.size8 = sizeof(*r) / 8;
    r->h.aux = aux;
    r->ts = thread_clock(t);
    t->pos = pos + (uint32_t)sizeof(*r);
    atomic_store_explicit((_Atomic uint32_t *)&t->chunk->used, t->pos, memory_order_release);
}

int act_recorder_range_push_fast(const char *name)
{
    act_thread *t = tls_thread;
    if (ACT_UNLIKELY(t == NULL || name == NULL))
        return ACT_RANGE_SLOW;
    act_ptr_slot *ps = ptr_slot(t, name);
    uint32_t pos = t->pos;
    if (ACT_UNLIKELY(ps->ptr != name || pos + sizeof(act_rec_ts) >
                                            atomic_load_explicit(&t->cap, memory_order_relaxed)))
        return ACT_RANGE_SLOW;
    put_ts(t, pos, ACT_REC_RANGE_PUSH, ps->id);
    uint32_t seq = ++t->range_seq;
    if (t->range_depth < ACT_RANGE_STACK)
        t->range_stack[t->range_depth] = seq;
    t->range_depth++;
    return ACT_OK;
}

int act_recorder_range_pop_fast(void)
{
    act_thread *t = tls_thread;
    if (ACT_UNLIKELY(t == NULL))
        return ACT_RANGE_SLOW;
    uint32_t d = t->range_depth, pos = t->pos;
    if (ACT_UNLIKELY(d == 0 || d > ACT_RANGE_STACK ||
                     pos + sizeof(act_rec_ts) >
                         atomic_load_explicit(&t->cap, memory_order_relaxed)))
        return ACT_RANGE_SLOW;
    uint32_t mark = t->range_stack[d - 1];
    if (ACT_UNLIKELY(mark == RANGE_MARK_OUTSIDE || mark == RANGE_MARK_DROPPED))
        return ACT_RANGE_SLOW;
    t->range_depth = d - 1;
    put_ts(t, pos, ACT_REC_RANGE_POP, 0);
    return ACT_OK;
}

/* ---- convenience writers ---------------------------------------------- */

int act_rec_api_emit(const char *name, uint64_t start, uint64_t end, uint64_t corr, uint64_t ext,
                     int32_t result, uint32_t source)
{
    uint32_t id = act_str_intern_literal(name);
    act_rec_api *r = act_rec_reserve(ACT_REC_API, sizeof(*r));
    if (!r)
        return -1;
    r->h.aux = id;
    r->start = start;
    r->end = end;
    r->corr = corr;
    r->ext = ext;
    r->result = result;
    r->source = source;
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
    act_rec_arg *r = act_rec_reserve(ACT_REC_ARG, sizeof(*r));
    if (!r)
        return -1;
    r->h.aux = k;
    r->type = type;
    r->pad = 0;
    r->v.u = bits;
    act_rec_commit();
    return 0;
}

int act_rec_arg_emit_vec(const char *key, uint32_t type, const uint64_t *v, uint32_t n)
{
    if (n > ACT_RECARG_U64V_MAX)
        n = ACT_RECARG_U64V_MAX;
    uint32_t k = key ? act_str_intern_literal(key) : 0; /* LAUNCH needs none */
    act_rec_arg *r = act_rec_reserve(ACT_REC_ARG, sizeof(*r) + n * sizeof(uint64_t));
    if (!r)
        return -1;
    r->h.aux = k;
    r->type = type;
    r->pad = 0;
    r->v.u = n;
    if (n)
        memcpy(r + 1, v, n * sizeof(uint64_t));
    act_rec_commit();
    return 0;
}

int act_rec_error_emit(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    uint32_t id = act_str_intern_cstr(buf);
    act_rec_ts *r = act_rec_reserve(ACT_REC_ERROR, sizeof(*r));
    if (!r)
        return -1;
    r->h.aux = id;
    r->ts = act_clock_now();
    act_rec_commit();
    return 0;
}

/* ---- fork ------------------------------------------------------------- */

void act_recorder_atfork_child(void)
{
    /* The parent's spool is shared memory: the child must never write to
     * it. Forget it (leave the mapping: unmapping buys nothing) and let the
     * child start its own spool in the same directory on its next record. */
    pthread_mutex_init(&sp.lock, NULL);
    pthread_mutex_init(&pf.lock, NULL);
    pthread_cond_init(&pf.wake, NULL);
    pf.running = 0; /* the helper thread did not survive the fork */
    act_tsc_atfork_child();
    int was = hdr_get() != NULL; /* recording, or paused outside the window */
    atomic_store(&act__recording, 0);
    hdr_set(NULL);
    sp.threads = NULL;
    sp.free_top = 0;
    atomic_fetch_add(&sp.gen, 1);
    act_thread *t = tls_thread;
    if (t) {
        t->chunk = NULL;
        atomic_store(&t->cap, 0);
        t->range_depth = 0;
        t->tid = (uint32_t)syscall(SYS_gettid);
        t->next = NULL;
        sp.threads = t;
    }
    /* Recording goes on, but the spool is opened lazily on the child's
     * first record: a child that only calls exec never leaves a file. */
    if (was && sp.dir[0])
        sp.reopen_pending = 1;
    act_capture_atfork_child(was && sp.dir[0]);
}
