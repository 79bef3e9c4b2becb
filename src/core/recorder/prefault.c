/*
 * prefault.c -- a helper thread that reserves the space of the spool's
 * chunks and faults their pages in ahead of the chunks handed out, so that
 * recording threads find their pages present (see "pre-faulting ahead").
 * In ring mode it also surveys the chunks about to be recycled (ring.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Fault a fresh chunk's pages in with one system call instead of one
 * page fault per 4 KiB later on the hot path (a fault costs microseconds
 * on VMs; a page holds 256 PUSH/POP records). Older kernels refuse the
 * advice; the pages then fault in as they are written. */
void act_rec_chunk_prefault(act_chunk_header *c)
{
    static _Atomic int unsupported;
    /* Page-align; populating a neighbour's already-present page is a no-op. */
    uintptr_t a = (uintptr_t)c & ~(uintptr_t)4095;
    size_t len = (uintptr_t)c + act_rec_state.chunk_size - a;
    if (!atomic_load_explicit(&unsupported, memory_order_relaxed) &&
        madvise((void *)a, len, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
        atomic_store(&unsupported, 1);
}

/* ---- pre-faulting ahead ------------------------------------------------
 *
 * The first write to a fresh page of the spool costs a page fault that
 * zeroes the page (and on a VM may fault on the host too): a large share
 * of the hot path's cost, amortised (BENCHMARKS.md, pre-faulting). A helper thread keeps up to the
 * next ACT_PREFAULT_AHEAD bytes of fresh chunks faulted in (MADV_POPULATE_WRITE) ahead of the
 * chunks handed out, so recording threads find their pages present. It never touches records; when
 * it falls behind, act_rec_chunk_acquire (chunks.c) populates the chunk itself. It only runs while
 * a spool is open. The distance ahead grows with use (see prefault_main), so a light recorder pays
 * for little.
 */
#define ACT_PREFAULT_AHEAD (8u << 20)

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    int stop;
    int no_space;          /* a reservation failed: the helper stops */
    _Atomic uint32_t done; /* chunks [0, done) are faulted in */
    int left;              /* a helper left at an exit (act_rec_prefault_leave) still runs */
    /* The chunk being faulted in (index + 1, 0: none) and the spool's
     * bytes [redo_lo, redo_hi) given up meanwhile, which the helper gives
     * up again when done (see "overtaken"). */
    uint32_t claimed;
    uint64_t redo_lo, redo_hi;
} prefaulter = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

void (*act_rec_prefault_test_hook)(uint32_t idx, int stage);

/* ---- overtaken ---------------------------------------------------------
 *
 * The recording threads may overtake the helper: take the chunk it chose,
 * fill it and give up the pages of its region (chunks.c, region_drop)
 * before the helper faults it in, which would map those pages back for the
 * rest of the run (the program's resident set then exceeds the window of
 * docs/reliability.md). So the helper claims the chunk under
 * prefaulter.lock and checks, in the same hold, that it is still not handed
 * out; a region given up while a claimed chunk is faulted in is left to the
 * helper (act_rec_prefault_defer_drop), which gives it up when done. Either
 * the drop comes first (then the chunk was handed out before it, and the
 * helper sees that) or it sees the claim.
 */

/* Reserve and fault in chunk idx, unless the recording threads took it. */
static void prefault_one(uint32_t idx)
{
    if (act_rec_prefault_test_hook)
        act_rec_prefault_test_hook(idx, ACT_PREFAULT_CHOSEN);
    /* Never populate a page whose space is not reserved. A failure stops
     * the helper; act_rec_chunk_acquire (chunks.c) then tries (and counts). */
    int full = act_rec_space_reserve(idx + 1) != 0;
    pthread_mutex_lock(&prefaulter.lock);
    if (full)
        prefaulter.no_space = 1;
    /* Stopped meanwhile (the header may be gone: an exit's close leaves
     * the helper running), or the recording threads took the chunk. While
     * this lock is held and `stop` is clear, the spool stays open. */
    if (full || prefaulter.stop ||
        idx < atomic_load((_Atomic uint64_t *)&act_rec_hdr_get()->chunks_used)) {
        pthread_mutex_unlock(&prefaulter.lock); /* theirs: prefault_main moves on */
        return;
    }
    prefaulter.claimed = idx + 1;
    pthread_mutex_unlock(&prefaulter.lock);
    if (act_rec_prefault_test_hook)
        act_rec_prefault_test_hook(idx, ACT_PREFAULT_CLAIMED);
    act_rec_chunk_prefault(act_rec_chunk_at(idx));
    pthread_mutex_lock(&prefaulter.lock);
    prefaulter.claimed = 0;
    if (!prefaulter.stop && prefaulter.redo_hi > prefaulter.redo_lo)
        (void)madvise(act_rec_state.map + prefaulter.redo_lo,
                      prefaulter.redo_hi - prefaulter.redo_lo, MADV_DONTNEED);
    prefaulter.redo_lo = prefaulter.redo_hi = 0;
    atomic_store(&prefaulter.done, idx + 1);
    pthread_mutex_unlock(&prefaulter.lock);
}

/* Caller holds act_rec_state.lock and gives up the spool's bytes [lo, hi):
 * 1 if they overlap the chunk the helper is faulting in, which then gives
 * them up itself when done. */
int act_rec_prefault_defer_drop(uint64_t lo, uint64_t hi)
{
    pthread_mutex_lock(&prefaulter.lock);
    int defer = 0;
    if (prefaulter.claimed) {
        uint64_t c = act_rec_chunk_off(prefaulter.claimed - 1);
        defer = lo < c + act_rec_state.chunk_size && c < hi;
    }
    if (defer) {
        if (prefaulter.redo_hi == prefaulter.redo_lo || lo < prefaulter.redo_lo)
            prefaulter.redo_lo = lo;
        if (hi > prefaulter.redo_hi)
            prefaulter.redo_hi = hi;
    }
    pthread_mutex_unlock(&prefaulter.lock);
    return defer;
}

/* How far ahead the helper goes, in chunks, follows what the recording
 * threads take: an estimate of the chunks they take in ACT_PREFAULT_LEAD_NS,
 * from the chunks handed out over at least ACT_PREFAULT_SPAN_NS of the
 * helper's turns (two turns close together would make one chunk look like
 * a flood), which rises at once with a faster span and halves with each
 * slower one. Pages faulted in ahead and never used cost their
 * zeroing and, at the exit, their unmapping on the program's own exit
 * (0.38 us a page); at 16 000 launches of an OpenCL training loop (a
 * chunk every 2.6 ms) the window was 38 chunks, all of them unused at the
 * exit, where the helper needs a few to stay ahead. */
#define ACT_PREFAULT_LEAD_NS (20u * 1000000u)
#define ACT_PREFAULT_SPAN_NS (10u * 1000000u)

typedef struct prefault_rate {
    uint64_t used, at; /* chunks_used at the last estimate, and when */
    uint64_t est;      /* chunks taken in ACT_PREFAULT_LEAD_NS, estimated */
} prefault_rate;

static uint64_t prefault_ahead(prefault_rate *r, uint64_t used, uint64_t max_ahead)
{
    uint64_t now = act_clock_now(), dt = now - r->at;
    if (used > r->used && dt >= ACT_PREFAULT_SPAN_NS) {
        uint64_t inst = (used - r->used) * ACT_PREFAULT_LEAD_NS / dt;
        r->est = inst > r->est / 2 ? inst : r->est / 2;
        r->used = used;
        r->at = now;
    }
    uint64_t ahead = r->est + 2;
    if (ahead > max_ahead)
        ahead = max_ahead;
    /* Never more than has been used so far: a process that records little
     * (an OpenCL program writes a few hundred bytes per launch) is not
     * charged the window's zeroed pages at start-up. */
    if (ahead > used)
        ahead = used;
    return ahead < 2 ? 2 : ahead;
}

static void *prefault_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&prefaulter.lock);
    uint64_t max_ahead = ACT_PREFAULT_AHEAD / act_rec_state.chunk_size + 1;
    /* Until a rate is seen: as far ahead as has been used, up to the window. */
    prefault_rate rate = {.used = 0, .at = act_clock_now(), .est = max_ahead};
    while (!prefaulter.stop) {
        uint64_t used = atomic_load((_Atomic uint64_t *)&act_rec_hdr_get()->chunks_used);
        uint64_t ahead = prefault_ahead(&rate, used, max_ahead);
        /* A ring (ring.c) never goes beyond its chunks but when every one
         * of them is owned: those extra chunks are not prepared ahead. */
        uint64_t last =
            act_rec_state.ring_chunks ? act_rec_state.ring_chunks : act_rec_state.chunk_count;
        uint64_t want = used + ahead < last ? used + ahead : last;
        uint32_t idx = atomic_load(&prefaulter.done);
        if (idx < used) {
            /* Behind the recording threads: what they took they faulted in
             * themselves (chunks.c), and may have given up and dropped
             * since; populating it again would map it back for nothing. */
            atomic_store(&prefaulter.done, (uint32_t)used);
            continue;
        }
        if (idx < want && !prefaulter.no_space) {
            pthread_mutex_unlock(&prefaulter.lock);
            prefault_one(idx);
            pthread_mutex_lock(&prefaulter.lock);
            continue;
        }
        /* Ring mode: survey the chunks to be recycled next (ring.c), so
         * the recording threads do not walk them. */
        if (act_rec_state.ring_chunks) {
            pthread_mutex_unlock(&prefaulter.lock);
            int did = act_rec_ring_survey_ahead();
            pthread_mutex_lock(&prefaulter.lock);
            if (did || prefaulter.stop) /* a stop signalled meanwhile is not lost */
                continue;
        }
        pthread_cond_wait(&prefaulter.wake, &prefaulter.lock);
    }
    if (prefaulter.left) {
        prefaulter.left = 0;
        pthread_cond_broadcast(&prefaulter.wake);
    }
    pthread_mutex_unlock(&prefaulter.lock);
    return NULL;
}

/* Caller holds act_rec_state.lock, with a freshly mapped spool. */
void act_rec_prefault_start(void)
{
    /* A helper left at an exit (a spool opened by a later exit handler)
     * shares this state until it is gone. */
    pthread_mutex_lock(&prefaulter.lock);
    while (prefaulter.left)
        pthread_cond_wait(&prefaulter.wake, &prefaulter.lock);
    pthread_mutex_unlock(&prefaulter.lock);
    atomic_store(&prefaulter.done, 0);
    prefaulter.stop = 0;
    prefaulter.no_space = 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the app's signals are not ours */
    act_rec_state.prefault_running =
        pthread_create(&prefaulter.thread, NULL, prefault_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (act_rec_state.prefault_running)
        pthread_setname_np(prefaulter.thread, "act-prefault");
}

/* Caller holds act_rec_state.lock. */
void act_rec_prefault_stop(void)
{
    if (!act_rec_state.prefault_running)
        return;
    pthread_mutex_lock(&prefaulter.lock);
    prefaulter.stop = 1;
    pthread_cond_signal(&prefaulter.wake);
    pthread_mutex_unlock(&prefaulter.lock);
    pthread_join(prefaulter.thread, NULL);
    act_rec_state.prefault_running = 0;
}

/* Caller holds act_rec_state.lock; the process is exiting. The helper is
 * told to stop but not waited for: it ends on its own, or the exit ends
 * it, which interrupts a chunk being faulted in instead of waiting for the
 * rest of it (0.06-1.3 ms, more when the helper waits for a CPU; pages
 * that the exit would only unmap again). It touches nothing but the
 * mapping and the spool file (kept until the process is gone) once it
 * sees `stop`. Not with a ring, whose surveys count on
 * act_rec_prefault_running (ring.c): there it is stopped as usual. */
void act_rec_prefault_leave(void)
{
    if (!act_rec_state.prefault_running)
        return;
    if (act_rec_state.ring_chunks) {
        act_rec_prefault_stop();
        return;
    }
    pthread_mutex_lock(&prefaulter.lock);
    prefaulter.stop = 1;
    prefaulter.left = 1;
    pthread_cond_signal(&prefaulter.wake);
    pthread_mutex_unlock(&prefaulter.lock);
    pthread_detach(prefaulter.thread);
    act_rec_state.prefault_running = 0;
}

uint32_t act_recorder_prefaulted(void)
{
    return atomic_load(&prefaulter.done);
}

void act_rec_prefault_kick(void)
{
    if (!act_rec_state.prefault_running)
        return;
    pthread_mutex_lock(&prefaulter.lock);
    pthread_cond_signal(&prefaulter.wake);
    pthread_mutex_unlock(&prefaulter.lock);
}

void act_rec_prefault_atfork_child(void)
{
    pthread_mutex_init(&prefaulter.lock, NULL);
    pthread_cond_init(&prefaulter.wake, NULL);
    prefaulter.left = 0; /* nor one left at an exit */
    prefaulter.claimed = 0;
    prefaulter.redo_lo = prefaulter.redo_hi = 0;
    act_rec_state.prefault_running = 0; /* the helper thread did not survive the fork */
}
