/*
 * chunks.c -- per-thread recording into chunks of the spool: the hot path
 * of the whole tool.
 *
 * A thread owns one chunk of the mmap'ed spool file (format: record.h).
 * Appending a record is: check that it fits, write it, publish the new fill
 * count with a release store. No lock, no system call. Only when a chunk is
 * full does the thread take the slow path: grab a recycled chunk (mutex,
 * rare) or the next fresh one (its space reserved first), or count the
 * record as dropped when the spool or its file system is full. In ring
 * mode (ring.c) the oldest chunk no thread owns is written over instead.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

_Atomic int act__recording;

__thread act_thread *act_rec_tls __attribute__((tls_model("initial-exec")));
static pthread_key_t tls_key;
static pthread_once_t tls_key_once = PTHREAD_ONCE_INIT;
static _Atomic uint32_t next_serial = 1;

/* ---- per-thread state ------------------------------------------------- */

/* Pages of the spool leave the program's resident set once every chunk in
 * their region is given up (docs/reliability.md, "Memory"): the mapping
 * is shared with the file, so the records stay in the page cache for the
 * launcher to read, and a later touch maps them again. The region is the
 * kernel's largest file folio (2 MiB): a fault maps a whole folio, so
 * dropping less than one would be mapped again by the next write beside
 * it. Caller holds act_rec_state.lock (the mapping, the threads' chunks and
 * the free list cannot change meanwhile). */
#define ACT_DROP_REGION (2u << 20)

/* Chunk idx is not being written: handed out already (below chunks_used)
 * and no thread's current chunk (`self` is being released). A chunk on the
 * free list counts as given up: most are never taken again (too little
 * room left), and one that is faults its pages back in. */
static int chunk_done(uint64_t idx, uint64_t used, const act_thread *self)
{
    if (idx >= used)
        return 0;
    for (const act_thread *t = act_rec_state.threads; t; t = t->next)
        if (t != self && t->owned == idx + 1)
            return 0;
    return 1;
}

/* Drop the region at file offset lo when every chunk in it is given up. */
static void region_drop(const act_thread *self, uint64_t lo)
{
    uint64_t cs = act_rec_state.chunk_size, head = ACT_SPOOL_HEADER_SIZE;
    uint64_t hi = lo + ACT_DROP_REGION;
    if (hi > act_rec_state.map_size)
        return; /* the spool's last, partial region stays */
    uint64_t used = atomic_load((_Atomic uint64_t *)&act_rec_hdr_get()->chunks_used);
    uint64_t first = lo > head ? (lo - head) / cs : 0, last = (hi - 1 - head) / cs;
    for (uint64_t k = first; k <= last; k++)
        if (!chunk_done(k, used, self))
            return;
    if (!act_rec_prefault_defer_drop(lo, hi)) /* else the helper does it (prefault.c) */
        (void)madvise(act_rec_state.map + lo, ACT_DROP_REGION, MADV_DONTNEED);
}

/* The regions chunk c lies in (a chunk can straddle two: the spool's
 * header puts chunks off the region boundaries). */
static void chunk_drop_region(const act_thread *self, const act_chunk_header *c)
{
    uint64_t off = (uint64_t)((const char *)c - act_rec_state.map);
    uint64_t mask = ~(uint64_t)(ACT_DROP_REGION - 1);
    uint64_t lo = off & mask, end = (off + act_rec_state.chunk_size - 1) & mask;
    for (uint64_t r = lo; r <= end; r += ACT_DROP_REGION)
        region_drop(self, r);
}

/* End the thread's open segment (record.h S1): the next global seq, stored
 * with release. Only while t->chunk is in the open spool's generation;
 * caller is the thread itself, or holds act_rec_state.lock for a thread
 * that has ended. A thread still recording when the spool closes leaves
 * its last segment open (readers take it last). */
static void seg_end(act_thread *t)
{
    act_spool_header *h = act_rec_hdr_get();
    if (!t->seg || !t->chunk || t->gen != atomic_load(&act_rec_state.gen) || !h) {
        t->seg = NULL;
        return;
    }
    uint64_t seq = atomic_fetch_add((_Atomic uint64_t *)&h->segment_seq, 1);
    atomic_store_explicit((_Atomic uint64_t *)&t->seg->seq, seq, memory_order_release);
    t->seg = NULL;
}

static void chunk_release(act_thread *t)
{
    /* Caller holds act_rec_state.lock. A chunk with room left is recycled for the
     * next thread that needs one; its published fill stays as it is. */
    if (!t->chunk || t->gen != atomic_load(&act_rec_state.gen) || !act_rec_hdr_get())
        return;
    seg_end(t); /* its records there are final (record.h S1) */
    if (act_rec_state.ring_chunks) {
        /* Ring mode: the chunk stays in the ring's order, to be recycled.
         * Its final fill goes into the next segment's R4 `before`. */
        t->ring_before +=
            atomic_load_explicit((_Atomic uint32_t *)&t->chunk->used, memory_order_relaxed);
        act_rec_ring_disown(t->chunk->index);
        atomic_store_explicit(&act_rec_exhausted, 0, memory_order_relaxed);
    } else {
        if (t->pos + ACT_CHUNK_REUSE_MIN < t->room) { /* record.h S2 */
            act_rec_state.free_chunks[act_rec_state.free_top++] =
                (act_free_chunk){t->chunk->index, t->pos};
            atomic_store_explicit(&act_rec_exhausted, 0, memory_order_relaxed);
        }
        chunk_drop_region(t, t->chunk);
    }
    t->chunk = NULL;
    t->owned = 0;
    t->room = 0;
    /* The fast path must never write to a chunk this thread gave up:
     * another thread may own it now, and commit needs t->chunk. */
    atomic_store_explicit(&t->cap, 0, memory_order_relaxed);
}

/* The fast path's limit outside ring mode: the next split check, at most
 * the chunk's room (record.h S1). */
static uint32_t soft_cap(const act_thread *t)
{
    return t->room - t->pos > ACT_SEG_SPLIT_BYTES ? t->pos + ACT_SEG_SPLIT_BYTES : t->room;
}

static void thread_destroy(void *arg)
{
    act_thread *t = arg;
    pthread_mutex_lock(&act_rec_state.lock);
    chunk_release(t);
    for (act_thread **p = &act_rec_state.threads; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            break;
        }
    }
    pthread_mutex_unlock(&act_rec_state.lock);
    for (size_t i = 0; i < ACT_STR_CACHE; i++)
        free(t->strs[i].copy);
    act_rec_ring_thread_free(t);
    free(t->pystack_ids);
    free(t->given_name);
    act_rec_tls = NULL;
    free(t);
}

static void tls_key_create(void)
{
    pthread_key_create(&tls_key, thread_destroy);
}

/* First record of a thread: its state, on the all-threads list. */
/* The OS's name of the calling thread (one prctl): what the program or a
 * library gave it with pthread_setname_np, else the program's name. */
static void thread_os_name(act_thread *t)
{
    char name[ACT_THREAD_NAME_MAX + 1] = {0};
    if (pthread_getname_np(pthread_self(), name, sizeof(name)) != 0)
        return;
    size_t n = act_rec_utf8_cut(name, strnlen(name, ACT_THREAD_NAME_MAX), ACT_THREAD_NAME_MAX);
    memcpy(t->os_name, name, n);
    t->os_name_len = (uint8_t)n;
}

act_thread *act_rec_thread_new(void)
{
    act_thread *t;
    pthread_once(&tls_key_once, tls_key_create);
    t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->serial = atomic_fetch_add(&next_serial, 1);
    t->tid = (uint32_t)syscall(SYS_gettid);
    thread_os_name(t);
    pthread_setspecific(tls_key, t);
    pthread_mutex_lock(&act_rec_state.lock);
    t->next = act_rec_state.threads;
    act_rec_state.threads = t;
    pthread_mutex_unlock(&act_rec_state.lock);
    act_rec_tls = t;
    return t;
}

static void *chunk_put(act_thread *t, uint16_t kind, size_t size, uint32_t aux);

/* The name given to the thread, as a THREAD record of serial 0. */
static void announce_given(act_thread *t)
{
    size_t len = strnlen(t->given_name, ACT_THREAD_GIVEN_MAX);
    size_t sz = (sizeof(act_rec_string) + len + 7) & ~(size_t)7;
    uint32_t id = t->next_str++;
    act_rec_string *str = chunk_put(t, ACT_REC_STRING, sz, id);
    str->len = (uint32_t)len;
    str->pad = 0;
    memcpy(str + 1, t->given_name, len);
    memset((char *)(str + 1) + len, 0, sz - sizeof(*str) - len);
    act_rec_thread *r = chunk_put(t, ACT_REC_THREAD, sizeof(*r), 0);
    r->tid = t->tid;
    r->name = id;
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

/* Caller holds act_rec_state.lock. Pop a recycled chunk with room for `need` more
 * bytes (UINT32_MAX if none). A chunk without that room stays listed for
 * smaller records: taking it back would only fail again (the chunk just
 * released by this very thread is usually on top). */
static uint32_t free_chunk_take(size_t need)
{
    uint32_t usable = act_rec_state.chunk_size - (uint32_t)sizeof(act_chunk_header);
    for (uint32_t i = act_rec_state.free_top; i-- > 0;) {
        act_free_chunk f = act_rec_state.free_chunks[i];
        if (f.used + need <= usable) {
            act_rec_state.free_chunks[i] = act_rec_state.free_chunks[--act_rec_state.free_top];
            return f.index;
        }
    }
    return UINT32_MAX;
}

/* Take a chunk with room for `need` bytes of records after the segment
 * header (recycled first, then fresh) and start a segment in it. */
int act_rec_chunk_acquire(act_thread *t, size_t need)
{
    uint32_t idx = UINT32_MAX;
    int recycled = 0;
    if (atomic_load_explicit(&act_rec_exhausted, memory_order_relaxed) && !t->chunk &&
        t->gen == atomic_load(&act_rec_state.gen))
        return -1;
    if (ACT_UNLIKELY(act_rec_state.reopen_pending)) {
        char dir[PATH_MAX];
        memcpy(dir, act_rec_state.dir, sizeof(dir));
        act_rec_state.reopen_pending = 0;
        if (act_recorder_attach(dir, act_rec_state.capacity_asked, act_rec_state.chunk_size) != 0)
            atomic_store(&act__recording, 0);
    }
    pthread_mutex_lock(&act_rec_state.lock);
    act_spool_header *h = act_rec_hdr_get();
    if (!h) {
        pthread_mutex_unlock(&act_rec_state.lock);
        return -1;
    }
    uint32_t gen = atomic_load(&act_rec_state.gen);
    if (t->gen != gen) {
        t->chunk = NULL;
        t->seg = NULL; /* in a spool no longer open */
        t->owned = 0;
        atomic_store_explicit(&t->cap, 0, memory_order_relaxed);
        t->gen = gen;
        t->ring_before = 0;
        act_rec_thread_reset(t);
    }
    chunk_release(t);
    if (act_rec_state.ring_chunks) {
        idx = act_rec_ring_victim(atomic_load((_Atomic uint64_t *)&h->chunks_used));
        recycled = idx != UINT32_MAX;
    } else {
        idx = free_chunk_take(need + sizeof(act_rec_segment) + ACT_THREAD_ANNOUNCE);
    }
    if (idx == UINT32_MAX) {
        /* A fresh chunk is counted in chunks_used only once its space is
         * reserved: readers touch no page beyond. Without space (a full
         * file system) the record is dropped and counted like a full
         * spool, instead of faulting on the first store. */
        uint64_t used = atomic_load((_Atomic uint64_t *)&h->chunks_used);
        /* A spool cut short by the file size limit (spool_file.c) is
         * full for that reason, and says so. */
        int err = used < act_rec_state.chunk_count ? act_rec_space_reserve((uint32_t)used + 1)
                  : act_rec_state.size_limited     ? EFBIG
                                                   : 0;
        if (err)
            act_rec_space_note_failure(h, err);
        else if (used < act_rec_state.chunk_count) {
            idx = (uint32_t)used;
            atomic_store((_Atomic uint64_t *)&h->chunks_used, used + 1);
        }
    }
    if (idx == UINT32_MAX)
        atomic_store_explicit(&act_rec_exhausted, 1, memory_order_relaxed);
    else if (act_rec_state.ring_chunks)
        act_rec_ring_own(idx);
    t->owned = idx == UINT32_MAX ? 0 : idx + 1;
    pthread_mutex_unlock(&act_rec_state.lock);
    if (idx == UINT32_MAX)
        return -1;

    act_chunk_header *c = act_rec_chunk_at(idx);
    act_ring_defs *defs = NULL;
    if (recycled) {
        act_rec_ring_recycle(c, &defs);
        act_rec_prefault_kick(); /* the helper surveys the next chunk to recycle */
    }
    if (c->magic != ACT_CHUNK_MAGIC) {
        if (idx >= act_recorder_prefaulted())
            act_rec_chunk_prefault(c); /* the helper is behind: do it now, once */
        act_rec_prefault_kick();
        c->index = idx;
        atomic_store_explicit((_Atomic uint32_t *)&c->used, 0, memory_order_relaxed);
        atomic_store_explicit((_Atomic uint32_t *)&c->magic, ACT_CHUNK_MAGIC, memory_order_release);
    }
    t->chunk = c;
    t->data = (char *)(c + 1);
    t->pos = atomic_load_explicit((_Atomic uint32_t *)&c->used, memory_order_relaxed);
    uint32_t cap = act_rec_state.chunk_size - (uint32_t)sizeof(*c);
    /* A segment header, then everything this thread writes: its seq is
     * taken when it ends (record.h S1), in ring mode now (R1). */
    act_rec_segment *s = chunk_put(t, ACT_REC_SEGMENT, sizeof(*s), t->serial);
    if (act_rec_state.ring_chunks) {
        s->seq = atomic_fetch_add((_Atomic uint64_t *)&h->segment_seq, 1);
    } else {
        s->seq = ACT_SEQ_OPEN;
        t->seg = s;
    }
    t->room = cap;
    if (act_rec_state.ring_chunks) {
        act_rec_ring_segment_top(t);
        t->announced = 1;
        atomic_store_explicit(&t->cap, cap, memory_order_relaxed);
        act_rec_ring_finish(t, c, defs, need);
        return 0;
    }
    if (!t->announced) {
        uint32_t name = 0;
        if (t->os_name_len) { /* the thread's name, a string of its own (record.h) */
            size_t sz = (sizeof(act_rec_string) + t->os_name_len + 7) & ~(size_t)7;
            name = t->next_str++;
            act_rec_string *str = chunk_put(t, ACT_REC_STRING, sz, name);
            str->len = t->os_name_len;
            str->pad = 0;
            memcpy(str + 1, t->os_name, t->os_name_len);
            memset((char *)(str + 1) + t->os_name_len, 0, sz - sizeof(*str) - t->os_name_len);
        }
        act_rec_thread *r = chunk_put(t, ACT_REC_THREAD, sizeof(*r), t->serial);
        r->tid = t->tid;
        r->name = name;
        if (t->given_name) /* named before it recorded (ACT_THREAD_GIVEN_MAX) */
            announce_given(t);
        t->announced = 1;
    }
    act_rec_publish(t);
    atomic_store_explicit(&t->cap, soft_cap(t), memory_order_relaxed);
    return 0;
}

/* The fast path stopped at its soft limit with `size` bytes still fitting
 * the chunk (record.h S1): start the next segment in the same chunk (its
 * SEGMENT is published with the record that follows) and end this one, if
 * not ended already (act_rec_seg_idle), so that a live reader has what was
 * written so far; then move the limit on. 0, or -1 when the limit was not
 * the soft one (the spool closed or the process forked: cap was set to 0)
 * or a segment ended leaves no room for the next here: the caller must
 * take the chunk path. */
static int seg_check(act_thread *t, size_t size)
{
    uint32_t c = atomic_load_explicit(&t->cap, memory_order_relaxed);
    int room = t->pos + sizeof(act_rec_segment) + size <= t->room;
    if (!c || !t->chunk || t->pos + size > t->room || (!t->seg && !room))
        return -1;
    /* Only while cap is still the soft limit: a close or fork that zeroed
     * it must keep the thread off this chunk. */
    if (!atomic_compare_exchange_strong_explicit(&t->cap, &c, t->room, memory_order_relaxed,
                                                 memory_order_relaxed))
        return -1;
    if (room) {
        act_rec_segment *s = chunk_put(t, ACT_REC_SEGMENT, sizeof(*s), t->serial);
        s->seq = ACT_SEQ_OPEN;
        /* Published before the old one's seq, so that its end is where this
         * begins; and before a seq of its own can be taken (a thread that
         * ends now ends it: a seq in a record nobody sees would hold a live
         * reader back until the exit). */
        act_rec_publish(t);
        seg_end(t);
        t->seg = s;
    }
    c = t->room;
    atomic_compare_exchange_strong_explicit(&t->cap, &c, soft_cap(t), memory_order_relaxed,
                                            memory_order_relaxed);
    return 0;
}

void act_rec_seg_idle(void)
{
    act_thread *t = act_rec_tls;
    if (!t || !t->seg || !t->chunk || act_rec_state.ring_chunks ||
        t->pos == (uint32_t)((char *)(t->seg + 1) - t->data))
        return; /* no segment, or nothing in it yet */
    uint32_t c = atomic_load_explicit(&t->cap, memory_order_relaxed);
    /* Its next record takes the slow path, which starts a segment
     * (seg_check); not when a close or fork zeroed the limit meanwhile. */
    if (!c || !atomic_compare_exchange_strong_explicit(&t->cap, &c, t->pos, memory_order_relaxed,
                                                       memory_order_relaxed))
        return;
    seg_end(t);
}

static void *reserve_slow(act_thread *t, uint16_t kind, size_t size)
{
    /* Room for a segment + thread record in a fresh chunk, then the record
     * (in ring mode, the top of a ring segment instead of the thread record). */
    if (seg_check(t, size) == 0)
        return chunk_put(t, kind, size, 0);
    size_t need = size + sizeof(act_rec_segment) +
                  (act_rec_state.ring_chunks ? act_rec_ring_top_room() : ACT_THREAD_ANNOUNCE);
    if (need > act_rec_state.chunk_size - sizeof(act_chunk_header) ||
        act_rec_chunk_acquire(t, size) != 0) {
        act_rec_drop(kind);
        return NULL;
    }
    if (t->pos + size > t->room) {
        /* A recycled chunk without enough room: take another. */
        if (act_rec_chunk_acquire(t, size) != 0 || t->pos + size > t->room) {
            act_rec_drop(kind);
            return NULL;
        }
    }
    return chunk_put(t, kind, size, 0);
}

void *act_rec_reserve(uint16_t kind, size_t size)
{
    assert(size % 8 == 0 && size >= sizeof(act_rec_hdr) && size / 8 <= UINT16_MAX);
    act_thread *t = act_rec_thread_get();
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
    act_thread *t = act_rec_tls;
    assert(t && t->chunk);
    act_rec_publish(t);
}
