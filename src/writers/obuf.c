/*
 * obuf.c -- buffered output and hand-rolled number formatting for the
 * writers (see obuf.h).
 */
#include "obuf.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/common.h"
#include "core/config.h"
#include "core/vec.h"
#include "writers/gz.h"

static char *buf_alloc(size_t cap);

int act_obuf_init(act_obuf *b, int fd, size_t cap)
{
    memset(b, 0, sizeof(*b));
    b->fd = fd;
    b->cap = cap ? cap : 4096;
    b->buf = fd >= 0 ? buf_alloc(b->cap) : malloc(b->cap);
    if (!b->buf) {
        b->cap = 0;
        b->err = ACT_E_NOMEM;
        return b->err;
    }
    return 0;
}

/* ---- direct I/O --------------------------------------------------------- */

/* A long trace is written past the page cache. Copying a trace into fresh
 * page-cache pages is the largest cost of writing one: 0.17-1.77 CPU-s a
 * GB on the machines measured (the most when the pages are new to the
 * guest), against 0.08 with O_DIRECT (BENCHMARKS.md, "Direct I/O"); and a
 * trace of GBs, read once later, need not push the program's files out of
 * the cache. A trace of at most `after` bytes (ACCELTRACE_DIRECT_IO, 64
 * MiB) is left in the cache for the viewer that opens it next.
 *
 * Invariants:
 *  1. Only a regular file, only plain output (gzip members are small and
 *     of any length), only a buffer made by act_obuf_init_bg.
 *  2. A flush hands over bytes up to an aligned file offset; the rest
 *     (under one block) moves to the front of the next buffer (flush_len),
 *     and an explicit flush hands it over after. Buffers are allocated
 *     aligned.
 *  3. A write is direct only when its offset, length and address are all
 *     aligned (STATX_DIOALIGN, at least 4 KiB) and the file has `after`
 *     bytes; any other goes through the cache, O_DIRECT cleared first
 *     (one fcntl where the mode changes).
 *  4. A file system that refuses O_DIRECT (fcntl or write EINVAL), or a
 *     device slower with it than the cache would be (under DIO_SLOW_MBS
 *     over DIO_SLOW_RUN writes of DIO_SLOW_MIN or more in a row), is written through the cache
 *     from then on. Nothing is lost or written twice: the loop goes on
 *     from the offset reached.
 *  5. Writes are serial (the caller's, or the one writer thread's), so the
 *     state has no lock; `direct` alone is read by others (atomic).
 *  6. What an explicit flush (act_obuf_flush: a writer's close) writes
 *     goes through the cache: a direct write returns once the device has
 *     the bytes, a cached one once they are copied, and at the close the
 *     caller waits for them (1.0-1.3 ms for the last buffers of a
 *     1.6 M-launch trace, on `run`'s tail). Direct writes resume with the
 *     next full buffer. The flush writes in the caller, after the threads
 *     have written what they were handed (flush_now). */
#define DIO_SLOW_MBS 256
#define DIO_SLOW_RUN 4
#define DIO_SLOW_MIN (512u << 10)

struct act_obuf_dio {
    uint64_t after;  /* direct from this file offset on */
    uint64_t start;  /* the file offset at the first byte */
    uint64_t off;    /* the file offset reached */
    uint64_t direct; /* bytes written with O_DIRECT (atomic) */
    size_t align;    /* offset, length and address alignment */
    int on;          /* O_DIRECT is set on the descriptor */
    int usable;      /* 0: refused or slow: through the cache for good */
    int slow;        /* direct writes in a row under DIO_SLOW_MBS */
};

/* The alignment O_DIRECT needs on fd's file system: at least 4 KiB. */
static size_t dio_align(int fd)
{
    size_t a = 4096;
#if defined(STATX_DIOALIGN)
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
        if (!sx.stx_dio_offset_align)
            return 0; /* the file system says: no O_DIRECT */
        if (sx.stx_dio_offset_align > a)
            a = sx.stx_dio_offset_align;
        if (sx.stx_dio_mem_align > a)
            a = sx.stx_dio_mem_align;
    }
#endif
    return a;
}

/* The state for fd, or NULL: not a regular file, never direct. */
static act_obuf_dio *dio_new(int fd, uint64_t after)
{
    struct stat st;
    if (after == ACT_DIRECT_IO_OFF || fstat(fd, &st) || !S_ISREG(st.st_mode))
        return NULL;
    off_t at = lseek(fd, 0, SEEK_CUR);
    size_t align = dio_align(fd);
    if (at < 0 || !align)
        return NULL;
    act_obuf_dio *d = calloc(1, sizeof(*d));
    if (d) {
        d->after = after;
        d->start = d->off = (uint64_t)at;
        d->align = align;
        d->usable = 1;
    }
    return d;
}

/* Set or clear O_DIRECT; 0, or -1 (the mode is as it was). */
static int dio_mode(int fd, act_obuf_dio *d, int on)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, on ? fl | O_DIRECT : fl & ~O_DIRECT) < 0)
        return -1;
    d->on = on;
    return 0;
}

/* Rule 3: may p[0..n) go out direct at d->off? */
static int dio_wanted(const act_obuf_dio *d, const char *p, size_t n)
{
    size_t a = d->align;
    return d->usable && d->off >= d->after && n >= a && !(d->off % a) && !(n % a) &&
           !((uintptr_t)p % a);
}

/* Rule 4's second half: a device that writes direct slower than the
 * cache takes bytes is left to the cache. */
static void dio_timed(act_obuf_dio *d, size_t n, uint64_t ns)
{
    if (n < DIO_SLOW_MIN)
        return; /* small writes are latency, not throughput */
    d->slow = (uint64_t)n * 1000u < (uint64_t)DIO_SLOW_MBS * ns ? d->slow + 1 : 0;
    if (d->slow >= DIO_SLOW_RUN)
        d->usable = 0;
}

/* write(2) all of p[0..n), whole aligned blocks with O_DIRECT where d
 * allows (rule 3; d NULL or `cached`: never, rule 6); 0 or the errno of
 * the failure. A trace over the program's `ulimit -f` (an in-process
 * session writes in the program) fails with EFBIG: the SIGXFSZ it raises
 * is not the program's. */
static int write_all(int fd, act_obuf_dio *d, const char *p, size_t n, int cached)
{
    int want = d && !cached && dio_wanted(d, p, n);
    if (d && want != d->on && dio_mode(fd, d, want) && want) {
        d->usable = 0; /* rule 4: refused */
        want = 0;
    }
    uint64_t t0 = want ? act_clock_now() : 0;
    size_t off = 0;
    int rc = 0;
    act_xfsz_guard g;
    act_xfsz_block(&g);
    while (off < n && !rc) {
        ssize_t w = write(fd, p + off, n - off);
        if (w < 0 && errno == EINVAL && d && d->on) {
            d->usable = 0; /* rule 4: refused at the write */
            rc = dio_mode(fd, d, 0) ? EINVAL : 0;
        } else if (w < 0 && errno != EINTR) {
            rc = errno ? errno : EIO;
        } else if (w > 0) {
            off += (size_t)w;
            if (d)
                d->off += (uint64_t)w;
            if (d && d->on)
                __atomic_add_fetch(&d->direct, (uint64_t)w, __ATOMIC_RELAXED);
        }
    }
    act_xfsz_restore(&g, rc);
    if (d && want && d->on && !rc)
        dio_timed(d, n, act_clock_now() - t0);
    return rc;
}

/* Rule 2: what a flush hands over; an explicit flush (all) everything. */
static size_t flush_len(const act_obuf *b, int all)
{
    const act_obuf_dio *d = b->dio;
    if (all || !d || b->gz || b->len < d->align)
        return b->len;
    uint64_t at = d->start + b->written;
    uint64_t end = (at + b->len) / d->align * d->align;
    return end > at ? (size_t)(end - at) : b->len;
}

/* A buffer for fd mode: aligned for O_DIRECT. */
static char *buf_alloc(size_t cap)
{
    void *p = NULL;
    return posix_memalign(&p, 4096, cap) ? NULL : p;
}

/* ---- gzip --------------------------------------------------------------- */

/* Each flushed buffer becomes one complete gzip member (RFC 1952 2.2: a
 * gzip file is a series of members, and gzip, zlib, Python's gzip module
 * and Perfetto read them all). Whole-buffer compression (gz.h: ISA-L, or
 * libdeflate) runs several times faster than zlib's streaming deflate at
 * the same ratio on trace JSON (BENCHMARKS.md), the members need no
 * trailer at the end, and being independent they are compressed in
 * parallel (the pool below).
 * This compressor is the caller's, for a buffer that writes itself and
 * for the empty member; `members` is counted under the pool's mutex when
 * there is a pool. */
struct act_obuf_gz {
    act_gz *c;
    char *out;
    size_t out_cap;
    int level;
    uint64_t members; /* members written */
};

/* Compress in[0..n) with c as one member into *out, grown to the bound
 * (capacity *cap); its size in *len. 0 or an errno. */
static int member_make(act_gz *c, const char *in, size_t n, char **out, size_t *cap, size_t *len)
{
    size_t bound = act_gz_bound(n);
    if (act_vec_reserve(*out, *cap, bound, bound))
        return ENOMEM;
    *len = act_gz_compress(c, in, n, *out, *cap);
    return *len ? 0 : ENOMEM; /* within the bound: only memory can fail */
}

/* Compress p[0..n) as one member and write it; 0 or an errno. */
static int gz_write(int fd, act_obuf_gz *g, const char *p, size_t n)
{
    size_t z;
    int e = member_make(g->c, p, n, &g->out, &g->out_cap, &z);
    if (e)
        return e;
    g->members++;
    return write_all(fd, NULL, g->out, z, 1);
}

/* What every flush calls: the bytes go out as they are or compressed;
 * `cached`: never with O_DIRECT (rule 6). */
static int sink_write(const act_obuf *b, const char *p, size_t n, int cached)
{
    return b->gz ? gz_write(b->fd, b->gz, p, n) : write_all(b->fd, b->dio, p, n, cached);
}

/* ---- background writer and compressor pool --------------------------- */

/* Full buffers go to the writer's threads through a ring of `nslots`
 * slots, in order (seq). Plain output: one thread and one slot, so the
 * caller formats into one buffer while the thread writes the other. Gzip:
 * each flushed buffer is an independent member, so a pool of threads
 * compresses several at once, each with its own compressor, and whichever
 * finishes the oldest one writes the finished members in order. Memory is
 * bounded by the slots: a caller that finds the next slot still in flight
 * waits for it (back-pressure). A slot belongs to the caller while FREE,
 * to one thread while BUSY, and is under the mutex otherwise. */
#define BG_MAX_THREADS 16

enum { SLOT_FREE, SLOT_FILLED, SLOT_BUSY, SLOT_DONE };

typedef struct bg_slot {
    char *raw; /* the buffer handed over (a former b->buf) */
    size_t raw_cap, raw_len;
    char *out; /* its gzip member */
    size_t out_cap, out_len;
    int state;
} bg_slot;

typedef struct bg_worker {
    act_obuf_bg *g;
    pthread_t thread;
    act_gz *c; /* gzip only */
} bg_worker;

struct act_obuf_bg {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* every change of state: broadcast */
    int fd;
    size_t cap; /* the size every buffer is (re)made with */
    act_obuf_gz *gz;
    act_obuf_dio *dio; /* the act_obuf's: written here only while threads run */
    int want;          /* threads to start (act_obuf_gzip may raise it) */
    int nthreads;      /* started; 0 before the first flush */
    int started;       /* the first flush tried to start them */
    bg_slot *slots;    /* nslots of them */
    int nslots;
    uint64_t filled; /* seq of the next buffer the caller hands over */
    uint64_t taken;  /* seq of the next one a thread takes */
    uint64_t done;   /* seq of the next one to write */
    int writing;     /* a thread is writing slot `done` */
    int quit;
    int sys_errno; /* first write failure, sticky */
    bg_worker workers[BG_MAX_THREADS];
};

/* Compress a slot's bytes into its member; 0 or an errno. */
static int slot_compress(act_gz *c, bg_slot *s)
{
    return member_make(c, s->raw, s->raw_len, &s->out, &s->out_cap, &s->out_len);
}

/* Called with the mutex held: write the finished slots at the head of
 * the ring, in order, unless another thread is at it. */
static void bg_write_ready(act_obuf_bg *g)
{
    while (!g->writing && g->done < g->taken && g->slots[g->done % g->nslots].state == SLOT_DONE) {
        bg_slot *s = &g->slots[g->done % g->nslots];
        int failed = g->sys_errno;
        g->writing = 1;
        pthread_mutex_unlock(&g->mu);
        /* after a failure: nothing more */
        int e = failed  ? 0
                : g->gz ? write_all(g->fd, NULL, s->out, s->out_len, 1)
                        : write_all(g->fd, g->dio, s->raw, s->raw_len, 0);
        pthread_mutex_lock(&g->mu);
        if (e && !g->sys_errno)
            g->sys_errno = e;
        if (g->gz && !failed && !e)
            g->gz->members++;
        s->state = SLOT_FREE;
        g->done++;
        g->writing = 0;
        pthread_cond_broadcast(&g->cv);
    }
}

static void *bg_main(void *arg)
{
    bg_worker *w = arg;
    act_obuf_bg *g = w->g;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (g->taken == g->filled && !g->quit)
            pthread_cond_wait(&g->cv, &g->mu);
        if (g->taken == g->filled)
            break; /* quit, nothing pending */
        bg_slot *s = &g->slots[g->taken++ % g->nslots];
        s->state = SLOT_BUSY;
        int failed = g->sys_errno;
        pthread_mutex_unlock(&g->mu);
        int e = w->c && !failed ? slot_compress(w->c, s) : 0;
        pthread_mutex_lock(&g->mu);
        if (e && !g->sys_errno)
            g->sys_errno = e;
        s->state = SLOT_DONE;
        bg_write_ready(g);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Record a failure of the threads in b (ACT_E_IO, errno kept). */
static int bg_take_error(act_obuf *b, int e)
{
    if (e && !b->err) {
        b->err = ACT_E_IO;
        b->sys_errno = e;
    }
    return b->err;
}

/* Wait until everything handed over is written; ACT_E_IO (sys_errno
 * set) if a write failed. */
static int bg_wait(act_obuf *b)
{
    act_obuf_bg *g = b->bg;
    pthread_mutex_lock(&g->mu);
    while (g->done != g->filled)
        pthread_cond_wait(&g->cv, &g->mu);
    int e = g->sys_errno;
    pthread_mutex_unlock(&g->mu);
    return bg_take_error(b, e);
}

/* How many threads compress by default: ACCELTRACE_GZIP_THREADS, else one
 * fewer than the online CPUs (the caller formats on one), 1 to 4. */
static int gzip_threads_default(void)
{
    unsigned n = act_config_gzip_threads(); /* config.c's rule: 1..16 */
    if (n)
        return n > BG_MAX_THREADS ? BG_MAX_THREADS : (int)n;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus - 1 < 1 ? 1 : cpus - 1 > 4 ? 4 : (int)(cpus - 1);
}

/* At the first flush: the slots and the threads (each with its
 * compressor), as many as can be had; none: the buffer writes itself. */
static void bg_start(act_obuf_bg *g)
{
    g->started = 1;
    /* plain: one buffer in flight; gzip: room for every thread and two
     * more finished ones waiting for their turn to be written */
    int nslots = g->gz ? g->want + 2 : 1;
    g->slots = calloc((size_t)nslots, sizeof(*g->slots));
    if (!g->slots)
        return;
    g->nslots = nslots;
    /* The threads take no signal of the program's (an in-process session
     * exports inside the traced program). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int i = 0; i < g->want; i++) {
        bg_worker *w = &g->workers[g->nthreads];
        w->g = g;
        w->c = g->gz ? act_gz_new(g->gz->level, ACT_GZ_AUTO) : NULL;
        if ((g->gz && !w->c) || pthread_create(&w->thread, NULL, bg_main, w)) {
            act_gz_free(w->c);
            w->c = NULL;
            break;
        }
        g->nthreads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Hand the filled buffer (its first n bytes) to the threads and go on
 * in a free one, the rest at its front (rule 2 of direct I/O). */
static int bg_flush(act_obuf *b, size_t n)
{
    act_obuf_bg *g = b->bg;
    if (!b->len)
        return 0;
    pthread_mutex_lock(&g->mu);
    bg_slot *s = &g->slots[g->filled % g->nslots];
    while (s->state != SLOT_FREE)
        pthread_cond_wait(&g->cv, &g->mu); /* back-pressure */
    int e = g->sys_errno;
    pthread_mutex_unlock(&g->mu);
    if (bg_take_error(b, e))
        return b->err;
    /* The slot is the caller's while FREE: swap buffers with it. */
    char *next = s->raw;
    size_t next_cap = s->raw_cap;
    char *full = b->buf;
    size_t rest = b->len - n;
    s->raw = full;
    s->raw_cap = b->cap;
    s->raw_len = n;
    b->written += n;
    b->len = 0;
    pthread_mutex_lock(&g->mu);
    s->state = SLOT_FILLED;
    g->filled++;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    if (next_cap < g->cap || next_cap < rest) {
        free(next);
        next_cap = g->cap > rest ? g->cap : rest;
        next = buf_alloc(next_cap);
        next_cap = next ? next_cap : 0;
    }
    b->buf = next;
    b->cap = next_cap;
    if (!next)
        b->err = ACT_E_NOMEM;
    else if (rest) /* the threads only read `full` */
        memcpy(next, full + n, rest);
    b->len = next ? rest : 0;
    return b->err;
}

int act_obuf_init_bg(act_obuf *b, int fd, size_t cap)
{
    if (act_obuf_init(b, fd, cap) || fd < 0)
        return b->err;
    act_obuf_bg *g = calloc(1, sizeof(*g));
    if (!g || pthread_mutex_init(&g->mu, NULL)) {
        free(g);
        return 0; /* writes itself */
    }
    if (pthread_cond_init(&g->cv, NULL)) {
        pthread_mutex_destroy(&g->mu);
        free(g);
        return 0;
    }
    g->fd = fd;
    g->cap = b->cap;
    g->want = 1;
    b->bg = g;
    b->dio = g->dio = dio_new(fd, act_config_direct_io());
    return 0;
}

void act_obuf_direct(act_obuf *b, uint64_t after)
{
    assert(!b->len && !b->written); /* before the first byte */
    if (!b->bg)
        return; /* a buffer that writes itself stays plain (rule 1) */
    free(b->dio);
    b->dio = b->bg->dio = dio_new(b->fd, after);
}

uint64_t act_obuf_direct_bytes(const act_obuf *b)
{
    return b->dio ? __atomic_load_n(&b->dio->direct, __ATOMIC_RELAXED) : 0;
}

/* Stop the threads (after what was handed over is written) and free. */
static void bg_free(act_obuf_bg *g)
{
    pthread_mutex_lock(&g->mu);
    g->quit = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    for (int i = 0; i < g->nthreads; i++) {
        pthread_join(g->workers[i].thread, NULL); /* finish pending writes first */
        act_gz_free(g->workers[i].c);
    }
    for (int i = 0; i < g->nslots; i++) {
        free(g->slots[i].raw);
        free(g->slots[i].out);
    }
    free(g->slots);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

int act_obuf_gzip_threads(act_obuf *b, int level, int threads)
{
    if (b->err)
        return b->err;
    assert(b->fd >= 0 && !b->len && !b->written && !b->gz); /* before the first byte */
    act_obuf_gz *g = calloc(1, sizeof(*g));
    if (g)
        g->c = act_gz_new(level, ACT_GZ_AUTO);
    if (!g || !g->c) {
        free(g);
        b->err = ACT_E_NOMEM;
        return b->err;
    }
    g->level = level;
    b->gz = g;
    if (b->bg) {
        b->bg->gz = g;
        if (threads < 1)
            threads = gzip_threads_default();
        b->bg->want = threads > BG_MAX_THREADS ? BG_MAX_THREADS : threads;
    }
    return 0;
}

int act_obuf_gzip(act_obuf *b, int level)
{
    return act_obuf_gzip_threads(b, level, 0);
}

/* Write the first `n` bytes buffered in the caller (no thread is writing:
 * rule 5) and keep the rest; `cached` as sink_write's. */
static int write_here(act_obuf *b, size_t n, int cached)
{
    int e = sink_write(b, b->buf, n, cached);
    if (e) {
        b->err = ACT_E_IO;
        b->sys_errno = e;
        return b->err;
    }
    b->written += n;
    memmove(b->buf, b->buf + n, b->len - n);
    b->len -= n;
    return 0;
}

/* Hand what is buffered over to the threads, or write it here when
 * there are none: all of it, or up to an aligned offset (flush_len). */
static int flush_async(act_obuf *b, int all)
{
    if (b->fd < 0 || b->err)
        return b->err;
    if (b->bg && !b->bg->started)
        bg_start(b->bg);
    size_t n = flush_len(b, all);
    if (b->bg && b->bg->nthreads)
        return bg_flush(b, n);
    return write_here(b, n, 0);
}

int act_obuf_flush_ready(act_obuf *b)
{
    size_t min = b->gz ? 256u << 10 : 64u << 10;
    if (b->fd < 0 || b->err || !b->bg || b->len < min)
        return b->err;
    act_obuf_bg *g = b->bg;
    if (!g->started)
        bg_start(g);
    if (!g->nthreads)
        return b->err; /* no thread: the next full buffer writes it */
    pthread_mutex_lock(&g->mu);
    int free_slot = g->slots[g->filled % g->nslots].state == SLOT_FREE;
    pthread_mutex_unlock(&g->mu);
    return free_slot ? bg_flush(b, flush_len(b, 0)) : b->err;
}

/* Write out what is buffered, through the cache (rule 6), and wait until
 * it is written. What the threads were handed goes first; the rest is
 * written here, not handed over: that would wake a thread and wait for
 * it, two trips through the scheduler where one write does (a run's last
 * bytes, at the program's seal and at the close, with the cores busy:
 * 0.1-0.5 ms each), and a trace that never filled a buffer starts no
 * thread at all. */
static int flush_now(act_obuf *b)
{
    if (b->fd < 0 || b->err)
        return b->err;
    int rc = b->bg && b->bg->nthreads ? bg_wait(b) : 0;
    return rc || !b->len ? rc : write_here(b, b->len, 1); /* the threads idle */
}

int act_obuf_flush(act_obuf *b)
{
    int rc = flush_now(b);
    /* Nothing put at all: still a gzip file (one empty member). */
    if (!rc && b->gz && !b->gz->members) {
        int e = gz_write(b->fd, b->gz, "", 0);
        if (e) {
            b->err = rc = ACT_E_IO;
            b->sys_errno = e;
        }
    }
    /* The failure may date from an earlier, implicit flush. */
    if (rc == ACT_E_IO && b->sys_errno)
        errno = b->sys_errno;
    return rc;
}

int act_obuf_reserve_slow(act_obuf *b, size_t n)
{
    if (b->err)
        return b->err;
    /* A record larger than the buffer that came back grows it: every
     * buffer has its own size (bg_flush swaps them). */
    if (b->fd >= 0 && (flush_async(b, 0) || b->cap - b->len >= n))
        return b->err;
    size_t ncap = b->cap ? b->cap : 4096;
    while (ncap - b->len < n) {
        if (ncap > SIZE_MAX / 2) {
            b->err = ACT_E_NOMEM;
            return b->err;
        }
        ncap *= 2;
    }
    char *nb = b->fd >= 0 ? buf_alloc(ncap) : realloc(b->buf, ncap);
    if (nb && b->fd >= 0) { /* stays aligned for O_DIRECT */
        memcpy(nb, b->buf, b->len);
        free(b->buf);
    }
    if (!nb) {
        b->err = ACT_E_NOMEM;
        return b->err;
    }
    b->buf = nb;
    b->cap = ncap;
    return 0;
}

/* The writer threads end, if any: the buffer writes itself from now on. */
static void bg_end(act_obuf *b)
{
    if (b->bg) {
        bg_free(b->bg);
        b->bg = NULL;
    }
}

int act_obuf_threads_stop(act_obuf *b)
{
    int rc = act_obuf_flush(b);
    bg_end(b);
    return rc;
}

void act_obuf_free(act_obuf *b)
{
    bg_end(b);
    if (b->gz) {
        act_gz_free(b->gz->c);
        free(b->gz->out);
        free(b->gz);
        b->gz = NULL;
    }
    free(b->dio);
    b->dio = NULL;
    free(b->buf);
    b->buf = NULL;
    b->len = b->cap = 0;
}

static const char digits2[201] = "00010203040506070809101112131415161718192021222324252627282930"
                                 "31323334353637383940414243444546474849505152535455565758596061"
                                 "62636465666768697071727374757677787980818283848586878889909192"
                                 "93949596979899";

/* Digits are produced backwards, two at a time, into a small stack buffer. */
static size_t u64_digits(char tmp[20], uint64_t v)
{
    int i = 20;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        tmp[--i] = digits2[d + 1];
        tmp[--i] = digits2[d];
    }
    if (v >= 10) {
        unsigned d = (unsigned)v * 2;
        tmp[--i] = digits2[d + 1];
        tmp[--i] = digits2[d];
    } else {
        tmp[--i] = (char)('0' + v);
    }
    return (size_t)i;
}

/* tmp[i..end) into the buffer. With `room` bytes free, as a copy of a
 * fixed `room` bytes (two vector moves, no call to memcpy): what lies
 * past end is scratch the next write overwrites; tmp must hold `room`
 * bytes from i. Otherwise as act_obuf_put, which flushes where it always
 * did: a gzip member ends at the same byte. */
static inline void put_fixed(act_obuf *b, const char *tmp, size_t i, size_t end, size_t room)
{
    if (b->cap - b->len < room) {
        act_obuf_put(b, tmp + i, end - i);
        return;
    }
    memcpy(b->buf + b->len, tmp + i, room);
    b->len += end - i;
}

void act_obuf_u64(act_obuf *b, uint64_t v)
{
    char tmp[40] = {0}; /* the scratch copied past the digits is defined */
    size_t i = u64_digits(tmp, v);
    put_fixed(b, tmp, i, 20, 20);
}

void act_obuf_i64(act_obuf *b, int64_t v)
{
    if (v < 0) {
        act_obuf_putc(b, '-');
        act_obuf_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        act_obuf_u64(b, (uint64_t)v);
    }
}

void act_obuf_us3(act_obuf *b, int64_t ns)
{
    uint64_t u;
    if (ns < 0) {
        act_obuf_putc(b, '-');
        u = (uint64_t)0 - (uint64_t)ns;
    } else {
        u = (uint64_t)ns;
    }
    /* integer microseconds, '.', exactly three digits of nanoseconds */
    char tmp[24];
    unsigned f = (unsigned)(u % 1000);
    tmp[23] = (char)('0' + f % 10);
    tmp[22] = (char)('0' + f / 10 % 10);
    tmp[21] = (char)('0' + f / 100);
    tmp[20] = '.';
    size_t i = u64_digits(tmp, u / 1000);
    act_obuf_put(b, tmp + i, 24 - i);
}

/* A value of at most three decimals below 1e12 (microseconds from
 * nanoseconds: the kernels' queued/submitted args) is written from the
 * integer m = v * 1000: the decimal m / 1000 has at most 15 significant
 * digits and reads back as v (checked), so %.15g would print exactly it,
 * trailing zeros trimmed -- the same bytes without printf's float path
 * (a tenth of the export's time, issue 32). 0 when v is not such a value. */
static int f64_milli(act_obuf *b, double v)
{
    if (!(fabs(v) < 1e12))
        return 0;
    double s = v * 1000.0;
    int64_t m = (int64_t)(s < 0 ? s - 0.5 : s + 0.5);
    if (!m || (double)m / 1000.0 != v)
        return 0;
    uint64_t u = m < 0 ? (uint64_t)0 - (uint64_t)m : (uint64_t)m;
    /* Sign, integer digits, then the fraction's digits with its trailing
     * zeros trimmed, in one buffer. */
    char tmp[56] = {0}; /* as in act_obuf_u64 */
    size_t i = u64_digits(tmp, u / 1000), n = 20;
    unsigned f = (unsigned)(u % 1000);
    if (f) {
        tmp[20] = '.';
        tmp[21] = (char)('0' + f / 100);
        tmp[22] = (char)('0' + f / 10 % 10);
        tmp[23] = (char)('0' + f % 10);
        n += f % 100 ? (f % 10 ? 4 : 3) : 2;
    }
    if (b->cap - b->len >= 32) { /* one copy: at most 17 bytes, no flush */
        if (m < 0)
            tmp[--i] = '-';
        put_fixed(b, tmp, i, n, 32);
        return 1;
    }
    /* Near the buffer's end: the pieces as they always went, each of
     * which may flush (a gzip member's end stays where it was). */
    if (m < 0)
        act_obuf_putc(b, '-');
    act_obuf_put(b, tmp + i, 20 - i);
    if (n > 20)
        act_obuf_put(b, tmp + 20, n - 20);
    return 1;
}

void act_obuf_f64(act_obuf *b, double v)
{
    if (!isfinite(v)) {
        act_obuf_lit(b, "null");
        return;
    }
    /* Range first: converting a double beyond int64 is undefined (a
     * counter value of 1e300 from a hostile spool reached it). */
    if (fabs(v) < 9e15 && v == (double)(int64_t)v) {
        act_obuf_i64(b, (int64_t)v);
        return;
    }
    if (f64_milli(b, v))
        return;
    char tmp[32];
    /* Shortest of %.15g/%.17g that reads back exactly. */
    int n = snprintf(tmp, sizeof(tmp), "%.15g", v);
    if (strtod(tmp, NULL) != v)
        n = snprintf(tmp, sizeof(tmp), "%.17g", v);
    act_obuf_put(b, tmp, (size_t)n);
}

void act_obuf_hex(act_obuf *b, uint64_t v)
{
    static const char hexd[] = "0123456789abcdef";
    /* Written in place, its length known first: no copy through a
     * variable-length memcpy (a queue handle on every device op). */
    size_t nd = v ? (size_t)(64 - __builtin_clzll(v) + 3) / 4 : 1;
    if (act_obuf_reserve(b, nd + 2))
        return;
    char *p = b->buf + b->len;
    p[0] = '0';
    p[1] = 'x';
    for (size_t i = nd + 2; i > 2; v >>= 4)
        p[--i] = hexd[v & 15];
    b->len += nd + 2;
}
