/*
 * recorder_int.h -- what the files of the recorder (src/core/recorder/)
 * share and nobody else sees: the state of the open spool, the per-thread
 * state, and the inline pieces of the hot path (thread lookup, fast clock,
 * pointer cache). The recorder's users include core/rec_write.h (writers)
 * or core/internal.h (its lifecycle).
 *
 * Listed bottom up: a file calls only the files above it in this list
 * (scripts/check_layers.py --build finds any circle):
 *   spool_file.c  the spool file: directory, mapping, header, space
 *                 reservation, drop counts (act_rec_drop)
 *   ring.c        ring mode (flight recorder): the oldest chunk written
 *                 over, on the chunk-full path (record.h R1-R6)
 *   prefault.c    the helper thread that faults chunks in ahead of use
 *   fork.c        what a forked child does with its parent's recorder
 *   lifecycle.c   open/attach/close, and the listener told of them
 *                 (the capture window: core/internal.h)
 *   thread_reset.c  a thread's caches and range stack on a new spool
 *   chunks.c      per-thread state, chunks handed out and recycled,
 *                 act_rec_reserve/commit
 *   strings.c     string interning (per-thread cache, cut to fit)
 *   literals.c    literal detection: the pointer cache of string literals
 *   ranges.c      the range stack, range ids and the range fast path
 *   fast_clock.c  the per-thread TSC clock
 *   emit.c        correlation ids and the convenience writers of sources
 */
#ifndef ACT_RECORDER_INT_H
#define ACT_RECORDER_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "core/internal.h"

#define ACT_STR_CACHE   256 /* per-thread interned-string cache slots (power of 2) */
#define ACT_RANGE_STACK 256 /* nesting tracked for External ids; deeper still recorded */
/* Range stack entries: a sequence number, or one of these for a push that
 * was not written. */
#define RANGE_MARK_OUTSIDE 0u
#define RANGE_MARK_DROPPED UINT32_MAX

typedef struct act_str_slot {
    uint64_t hash;
    const char *ptr; /* the caller's pointer, a fast first check */
    char *copy;      /* our copy of the bytes */
    uint32_t len;
    uint32_t id;
} act_str_slot;

/* Pointer cache of the range fast path: a caller's string pointer that
 * lies in a read-only segment of a loaded object (a literal) always names
 * the same bytes, so its id can be found without reading the string.
 * Two-way: two names a thread uses in turn that hash alike both stay (one
 * way each, the newest first); direct-mapped, they evicted each other and
 * every call paid the full intern and the segment walk. */
#define ACT_PTR_CACHE 64 /* power of 2: ACT_PTR_CACHE / 2 sets of two */
typedef struct act_ptr_slot {
    const char *ptr;     /* immutable string whose id is `id` */
    const char *mutable; /* last pointer found writable: skip the segment lookup */
    uint32_t id;
    uint32_t pad;
} act_ptr_slot;

#define ACT_RECENT_STRS 4 /* power of 2 */
typedef struct act_ring_name {
    uint32_t id, len;
    char *copy;
} act_ring_name;
/* A thread announces itself at the top of its first chunk of a spool
 * (outside ring mode): its OS name as a STRING record (at most
 * ACT_THREAD_NAME_MAX bytes: Linux keeps 15), then its THREAD record
 * naming that string. The room a fresh chunk must keep for it: */
#define ACT_THREAD_NAME_MAX 16u
/* A name the program gave the thread (act_thread_name) before it recorded
 * anything follows, as a THREAD record of serial 0 (record.h): a name alone
 * must not make a process that records nothing leave a trace. */
#define ACT_THREAD_GIVEN_MAX 64u
#define ACT_THREAD_ANNOUNCE                                                                        \
    (2 * (sizeof(act_rec_string) + sizeof(act_rec_thread)) + ACT_THREAD_NAME_MAX +                 \
     ACT_THREAD_GIVEN_MAX + 16)

/* A chunk given up with room left, and how full it was then (kept here so
 * that looking for one reads no page of the spool: chunks.c drops them). */
typedef struct act_free_chunk {
    uint32_t index, used;
} act_free_chunk;

struct act_thread {
    /* Hot fields first: one cache line serves a push or a pop. */
    char *data;           /* first byte after the chunk header */
    _Atomic uint32_t cap; /* usable bytes; 0 forces the slow path */
    uint32_t pos;         /* bytes written (published with commit) */
    act_chunk_header *chunk;
    uint64_t anc_tsc;                  /* fast clock anchor: TSC ... */
    uint64_t anc_ns;                   /* ... and the timeline ns it maps to */
    uint64_t anc_mult;                 /* ns per TSC tick << 32 */
    uint64_t last_ns;                  /* last fast-clock reading (monotonic floor) */
    uint32_t gen;                      /* spool generation of `chunk` and the string ids */
    uint32_t serial;                   /* thread serial, never reused in a process */
    uint32_t next_str;                 /* next string id */
    uint8_t os_name_len;               /* the OS's name of the thread when it first recorded */
    char os_name[ACT_THREAD_NAME_MAX]; /* (pthread_getname_np; not NUL-terminated) */
    uint32_t tid;
    uint32_t range_depth;
    uint32_t range_seq; /* sequence number of the last push */
    /* Entries: (name string id << 32) | push sequence number or RANGE_MARK_*;
     * the name serves ring mode (ring.c) and costs no store of its own. */
    uint64_t range_stack[ACT_RANGE_STACK];
    act_str_slot strs[ACT_STR_CACHE];
    act_ptr_slot ptrs[ACT_PTR_CACHE];
    struct act_thread *next; /* all-threads list, under act_rec_state.lock */
    /* The index of `chunk` + 1 (0: none), under act_rec_state.lock: what
     * other threads read to know the chunk is being written (chunks.c). */
    uint32_t owned;
    int announced; /* THREAD record written in this generation */
    /* Ring mode (ring.c): the last string ids interned (a record about to be
     * written may use them; the next chunk defines them again), and the
     * names of the open ranges (defined again atop every chunk). */
    uint32_t recent[ACT_RECENT_STRS];
    uint32_t n_recent;
    uint32_t ring_before; /* bytes published in earlier ring chunks (R4), mod 2^32 */
    uint32_t n_ring_names;
    act_ring_name ring_names[ACT_RING_OPEN_MAX];
    /* Segment splitting (chunks.c, record.h S1): outside ring mode `cap`
     * is a soft limit ACT_SEG_SPLIT_BYTES past the last check, so the fast
     * path needs no test of its own; `room` is the chunk's real limit. */
    uint32_t room;     /* usable bytes of `chunk` (cap <= room) */
    void *pystack_ids; /* recent Python stacks' string ids (emit.c), lazily */
    char *given_name;  /* act_thread_name's, announced with the thread (NULL: none) */
    /* Its segment not ended yet (record.h S1: outside ring mode; NULL:
     * none), whose seq seg_end (chunks.c) stores when it ends. */
    act_rec_segment *seg;
};
/* Publish what t wrote in its chunk so far: the fill count, with release
 * (record.h: a reader trusts only the published prefix). */
static inline void act_rec_publish(act_thread *t)
{
    atomic_store_explicit((_Atomic uint32_t *)&t->chunk->used, t->pos, memory_order_release);
}

/* Bytes a thread appends between two segment splits (record.h S1). */
#define ACT_SEG_SPLIT_BYTES 4096u

/* The recorder's state: the open spool and the threads that record. */
struct act_rec_state {
    pthread_mutex_t lock; /* guards open/close, the thread list, the free list */
    /* Written under `lock` (open, close, fork); read without it by drop
     * counting and the header/path queries, which may race a close: so
     * every access goes through act_rec_hdr_get/set (acquire/release). The
     * record hot path never reads it (it checks its chunk's cap). */
    _Atomic(act_spool_header *) hdr;
    char *map;
    size_t map_size;
    uint64_t capacity_asked; /* as asked, 0 = auto (a forked child asks the same) */
    int size_limited;        /* map_size < capacity_asked: RLIMIT_FSIZE (spool_file.c) */
    uint32_t chunk_size;
    uint32_t chunk_count;
    _Atomic uint32_t gen;
    act_free_chunk *free_chunks; /* recycled chunks, with their fill when given up */
    uint32_t free_top;
    act_thread *threads;
    /* Ring mode (ring.c): 0 = off, else chunks the ring cycles through. */
    uint32_t ring_chunks;
    uint32_t ring_n;      /* chunks in ring_order */
    uint32_t *ring_order; /* chunks handed out, oldest first */
    /* Per chunk: 1 a thread writes to it, 2 the pre-fault helper surveys
     * it (ring.c), 0 neither; written under `lock`, but for the helper's
     * 2 -> 0 (release: its survey is published with it), which a thread
     * that needs that chunk (the oldest) waits for. */
    _Atomic uint8_t *ring_owned;
    /* Per chunk: its survey, made ahead by the helper (NULL: not yet). */
    struct act_ring_survey **ring_surveys;
    uint32_t ring_survey_count;
    char path[PATH_MAX];
    char dir[PATH_MAX];
    pid_t pid;
    int reopen_pending; /* forked child: open a spool on the next record */
    /* The pre-fault helper thread exists (prefault.c writes it; ring.c
     * reads it: a helper that is gone never ends a survey). */
    _Atomic int prefault_running;
    /* A spool is open, or a forked child's is pending (act_recorder_attached). */
    _Atomic int attached;
    /* Who hears of open, close and fork (lifecycle.c; NULL: nobody). */
    const act_recorder_listener *_Atomic listener;
};
extern struct act_rec_state act_rec_state;

/* Where chunk idx begins in the open spool: its file offset, and its
 * header in the mapping. */
static inline uint64_t act_rec_chunk_off(uint32_t idx)
{
    return ACT_SPOOL_HEADER_SIZE + (uint64_t)idx * act_rec_state.chunk_size;
}

static inline act_chunk_header *act_rec_chunk_at(uint32_t idx)
{
    return (act_chunk_header *)(act_rec_state.map + act_rec_chunk_off(idx));
}

static inline act_spool_header *act_rec_hdr_get(void)
{
    return atomic_load_explicit(&act_rec_state.hdr, memory_order_acquire);
}

static inline void act_rec_hdr_set(act_spool_header *h)
{
    atomic_store_explicit(&act_rec_state.hdr, h, memory_order_release);
}

/* Set when no chunk could be handed out (spool full, nothing to recycle),
 * cleared when a chunk is recycled or a spool opened. While set, a thread
 * without a chunk drops its records without taking act_rec_state.lock: a
 * full spool must not turn every record into a mutex round trip. */
extern _Atomic int act_rec_exhausted;

/* The calling thread's state (NULL before its first record). */
extern __thread act_thread *act_rec_tls __attribute__((tls_model("initial-exec")));

/* Thread t's innermost recorded open range as an external reference:
 * (serial << 32) | push sequence, skipping ranges not in the spool (0:
 * none). Usually the top entry: inlined into act_rec_api_here's fast path
 * and act_range_current_ext. */
static inline uint64_t act_rec_range_ext(const act_thread *t)
{
    uint32_t d = t->range_depth < ACT_RANGE_STACK ? t->range_depth : ACT_RANGE_STACK;
    while (d > 0) {
        uint32_t seq = (uint32_t)t->range_stack[d - 1];
        if (seq != RANGE_MARK_OUTSIDE && seq != RANGE_MARK_DROPPED)
            return ((uint64_t)t->serial << 32) | seq;
        d--;
    }
    return 0;
}

/* ---- chunks.c ---- */
act_thread *act_rec_thread_new(void);
static inline act_thread *act_rec_thread_get(void)
{
    act_thread *t = act_rec_tls;
    if (ACT_LIKELY(t != NULL))
        return t;
    return act_rec_thread_new();
}
/* Take a chunk with room for `need` bytes (recycled first, then fresh). */
int act_rec_chunk_acquire(act_thread *t, size_t need);

/* ---- ring.c (the lock: callers hold act_rec_state.lock) ---- */
typedef struct act_ring_defs act_ring_defs;
/* `capacity`, or the ring asked and the header when larger (no lock). */
uint64_t act_rec_ring_capacity(uint64_t capacity);
int act_rec_ring_setup(act_spool_header *h);        /* lock */
uint32_t act_rec_ring_victim(uint64_t chunks_used); /* lock */
void act_rec_ring_own(uint32_t idx);                /* lock */
void act_rec_ring_disown(uint32_t idx);             /* lock */
void act_rec_ring_recycle(act_chunk_header *c, act_ring_defs **defs);
uint32_t act_rec_ring_top_room(void);
/* The pre-fault helper (prefault.c): survey one chunk likely to be
 * recycled soon, off the recording threads; 1 if it did. */
int act_rec_ring_survey_ahead(void);
void act_rec_ring_segment_top(act_thread *t);
void act_rec_ring_thread_free(act_thread *t);
/* The string id a record is about to use (ring mode keeps the last few). */
static inline void act_rec_str_used(act_thread *t, uint32_t id)
{
    t->recent[t->n_recent++ & (ACT_RECENT_STRS - 1)] = id;
}
void act_rec_ring_finish(act_thread *t, act_chunk_header *c, act_ring_defs *d, size_t keep);

/* ---- spool_file.c ---- */
/* Make sure chunks [0, upto) have their space: 0 or an errno value. */
int act_rec_space_reserve(uint32_t upto);
void act_rec_space_note_failure(act_spool_header *h, int err);
void act_rec_space_atfork_child(void);
/* ftruncate(fd, size) with any SIGXFSZ it raises in this thread taken back
 * (the program's RLIMIT_FSIZE is the program's): 0 or an errno value. */
int act_rec_spool_truncate(int fd, off_t size);
/* The capacity of a spool asked with 0, for `avail` bytes free to this
 * user on its file system: a quarter, within ACT_SPOOL_AUTO_MIN..MAX. */
uint64_t act_rec_spool_auto_size(uint64_t avail);
/* Map a new spool in `dir` (act_rec_state: map, path, header), then fill
 * its header once the chunk tables are set up (lifecycle.c opens).
 * `capacity` 0: act_rec_spool_auto_size of the file's file system. */
int act_rec_spool_map(const char *dir, uint64_t capacity, uint32_t chunk_size, int create);
void act_rec_spool_init_header(void);

/* ---- fork.c ---- */
/* Register the fork handler (once per process). */
void act_rec_fork_register(void);

/* ---- prefault.c (callers hold act_rec_state.lock for start/stop) ---- */
void act_rec_prefault_start(void);
void act_rec_prefault_stop(void);
/* At the exit: stop the helper without waiting for it (prefault.c). */
void act_rec_prefault_leave(void);
void act_rec_prefault_kick(void);
/* Whether the helper thread runs (it can end a survey, ring.c). */
static inline int act_rec_prefault_running(void)
{
    return atomic_load(&act_rec_state.prefault_running);
}
void act_rec_chunk_prefault(act_chunk_header *c);
/* Caller holds act_rec_state.lock and gives up the spool's bytes [lo, hi):
 * 1 if the helper, faulting in a chunk there, gives them up instead. */
int act_rec_prefault_defer_drop(uint64_t lo, uint64_t hi);
/* A test's stop in the helper, NULL outside tests (test_recorder_prefault):
 * called with the chunk the helper is about to fault in, once it has chosen
 * it (ACT_PREFAULT_CHOSEN) and once it has claimed it (ACT_PREFAULT_CLAIMED),
 * the two points where the recording threads may overtake it. */
enum { ACT_PREFAULT_CHOSEN, ACT_PREFAULT_CLAIMED };
extern void (*act_rec_prefault_test_hook)(uint32_t idx, int stage);
void act_rec_prefault_atfork_child(void);

/* ---- thread_reset.c: per-thread state of a new spool ---- */
void act_rec_thread_reset(act_thread *t);
/* Where to cut s[0, len) to at most `max` bytes on a UTF-8 boundary
 * (inline: strings.c and chunks.c cut, and neither calls the other). */
static inline size_t act_rec_utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t cut = max;
    for (int i = 0; i < 3 && cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80; i++)
        cut--;
    return ((unsigned char)s[cut] & 0xC0) == 0x80 ? max : cut;
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
 *
 * API calls are timed with the true clock (act_clock_now), ranges with
 * this one, and the two disagree by a nanosecond or so either way: a
 * range popped right after a call it encloses was stamped before the
 * call's end, or pushed right before it after the call's start, and the
 * call stuck out of its range (2 322 "host nesting violations" in 200 000
 * launches of bench_export's spool). So a call's end becomes the floor of
 * the thread's next readings (act_rec_clock_floor), and its start is
 * moved onto the thread's last reading when that is at most
 * ACT_CLOCK_SKEW_NS later (emit.c, api_times). The floor is taken only
 * from an end within ACT_CLOCK_FLOOR_NS of the thread's anchor: a later
 * next reading re-anchors on the true clock anyway, and an end from
 * another clock (a vendor's, converted) cannot stop the thread's clock.
 */
#define ACT_TSC_REANCHOR (1ull << 20)

uint64_t act_rec_thread_clock_slow(act_thread *t);

#define ACT_CLOCK_SKEW_NS  16u
#define ACT_CLOCK_FLOOR_NS (4u * 1000u * 1000u)

/* The thread recorded `ns`, read from the true clock: its fast-clock
 * readings from now on are not earlier (see "fast clock" above). */
static inline void act_rec_clock_floor(act_thread *t, uint64_t ns)
{
    if (t && ns > t->last_ns && ns - t->anc_ns <= ACT_CLOCK_FLOOR_NS)
        t->last_ns = ns;
}

static inline uint64_t act_rec_thread_clock(act_thread *t)
{
#if defined(__x86_64__)
    uint64_t d = __rdtsc() - t->anc_tsc;
    if (ACT_LIKELY(d < ACT_TSC_REANCHOR)) {
        uint64_t ns = t->anc_ns + ((d * t->anc_mult) >> 32);
        ns = ns < t->last_ns ? t->last_ns : ns;
        t->last_ns = ns;
        return ns;
    }
#endif
    return act_rec_thread_clock_slow(t);
}

/* ---- literals.c: the pointer cache ---- */
/* The set of two slots where `s` may be cached. */
static inline act_ptr_slot *act_rec_ptr_set(act_thread *t, const char *s)
{
    uintptr_t p = (uintptr_t)s;
    return &t->ptrs[((p ^ (p >> 6)) & (ACT_PTR_CACHE / 2 - 1)) * 2];
}

/* The slot caching `s`, or NULL. */
static inline const act_ptr_slot *act_rec_ptr_find(act_thread *t, const char *s)
{
    const act_ptr_slot *set = act_rec_ptr_set(t, s);
    return set[0].ptr == s ? &set[0] : set[1].ptr == s ? &set[1] : NULL;
}

#endif
