/*
 * obuf.c -- buffered output and hand-rolled number formatting for the
 * writers (see obuf.h).
 */
#include "obuf.h"

#include <assert.h>
#include <errno.h>
#include <libdeflate.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "acceltrace.h"

int act_obuf_init(act_obuf *b, int fd, size_t cap)
{
    memset(b, 0, sizeof(*b));
    b->fd = fd;
    b->cap = cap ? cap : 4096;
    b->buf = malloc(b->cap);
    if (!b->buf) {
        b->cap = 0;
        b->err = ACT_E_NOMEM;
        return b->err;
    }
    return 0;
}

/* write(2) all of it; 0 or the errno of the failure. */
static int write_all(int fd, const char *p, size_t n)
{
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, p + off, n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno ? errno : EIO;
        }
        off += (size_t)w;
    }
    return 0;
}

/* ---- gzip --------------------------------------------------------------- */

/* Each flushed buffer becomes one complete gzip member (RFC 1952 2.2: a
 * gzip file is a series of members, and gzip, zlib, Python's gzip module
 * and Perfetto read them all). Whole-buffer compression with libdeflate
 * runs at about 1.7x zlib's streaming speed at a better ratio on trace
 * JSON (BENCHMARKS.md), and the members need no trailer at the end. Used
 * by one thread at a time: the writer thread while it holds a buffer, the
 * caller otherwise (the same hand-over as the buffers'). */
struct act_obuf_gz {
    struct libdeflate_compressor *c;
    char *out;
    size_t out_cap;
    uint64_t members; /* members written */
};

/* Compress p[0..n) as one member and write it; 0 or an errno. */
static int gz_write(int fd, act_obuf_gz *g, const char *p, size_t n)
{
    size_t bound = libdeflate_gzip_compress_bound(g->c, n);
    if (bound > g->out_cap) {
        char *o = realloc(g->out, bound);
        if (!o)
            return ENOMEM;
        g->out = o;
        g->out_cap = bound;
    }
    size_t z = libdeflate_gzip_compress(g->c, p, n, g->out, g->out_cap);
    if (!z)
        return EIO; /* cannot happen within the bound */
    g->members++;
    return write_all(fd, g->out, z);
}

/* What every flush calls: the bytes go out as they are or compressed. */
static int sink_write(int fd, act_obuf_gz *gz, const char *p, size_t n)
{
    return gz ? gz_write(fd, gz, p, n) : write_all(fd, p, n);
}

/* ---- background writer ------------------------------------------------ */

/* One full buffer at a time goes to the thread (`busy`); the caller waits
 * for it only when it has filled the other buffer too. The thread owns
 * `pending` while busy, the caller owns everything else. */
struct act_obuf_bg {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int fd;
    act_obuf_gz *gz; /* the stream the writes go through, or NULL */
    const char *pending;
    size_t pending_len;
    int busy, quit;
    int sys_errno; /* first write failure, sticky */
    char *spare;   /* the buffer not being filled */
};

static void *bg_main(void *arg)
{
    act_obuf_bg *g = arg;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->busy && !g->quit)
            pthread_cond_wait(&g->cv, &g->mu);
        if (!g->busy)
            break; /* quit, nothing pending */
        const char *p = g->pending;
        size_t n = g->pending_len;
        int failed = g->sys_errno;
        pthread_mutex_unlock(&g->mu);
        /* after a failure: nothing more */
        int e = failed ? 0 : sink_write(g->fd, g->gz, p, n);
        pthread_mutex_lock(&g->mu);
        if (e && !g->sys_errno)
            g->sys_errno = e;
        g->busy = 0;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Wait until the thread is idle; ACT_E_IO (errno set) if a write failed. */
static int bg_wait(act_obuf *b)
{
    act_obuf_bg *g = b->bg;
    pthread_mutex_lock(&g->mu);
    while (g->busy)
        pthread_cond_wait(&g->cv, &g->mu);
    int e = g->sys_errno;
    pthread_mutex_unlock(&g->mu);
    if (e && !b->err) {
        b->err = ACT_E_IO;
        b->sys_errno = e;
    }
    return b->err;
}

/* Hand the filled buffer to the thread and go on in the spare one. */
static int bg_flush(act_obuf *b)
{
    act_obuf_bg *g = b->bg;
    if (bg_wait(b))
        return b->err;
    if (!b->len)
        return 0;
    pthread_mutex_lock(&g->mu);
    assert(!g->busy); /* one buffer at the thread at a time (bg_wait above) */
    g->pending = b->buf;
    g->pending_len = b->len;
    g->busy = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    char *next = g->spare;
    g->spare = b->buf;
    b->buf = next;
    b->written += b->len;
    b->len = 0;
    return 0;
}

int act_obuf_init_bg(act_obuf *b, int fd, size_t cap)
{
    if (act_obuf_init(b, fd, cap) || fd < 0)
        return b->err;
    act_obuf_bg *g = calloc(1, sizeof(*g));
    if (g)
        g->spare = malloc(b->cap);
    if (!g || !g->spare || pthread_mutex_init(&g->mu, NULL)) {
        if (g)
            free(g->spare);
        free(g);
        return 0; /* writes itself */
    }
    pthread_cond_init(&g->cv, NULL);
    g->fd = fd;
    /* The thread takes no signal of the program's (an in-process session
     * exports inside the traced program). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&g->thread, NULL, bg_main, g);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g->spare);
        free(g);
        return 0;
    }
    b->bg = g;
    return 0;
}

int act_obuf_gzip(act_obuf *b, int level)
{
    if (b->err)
        return b->err;
    assert(b->fd >= 0 && !b->len && !b->written && !b->gz); /* before the first byte */
    act_obuf_gz *g = calloc(1, sizeof(*g));
    if (g)
        g->c = libdeflate_alloc_compressor(level);
    if (!g || !g->c) {
        free(g);
        b->err = ACT_E_NOMEM;
        return b->err;
    }
    b->gz = g;
    if (b->bg)
        b->bg->gz = g;
    return 0;
}

static int flush_now(act_obuf *b)
{
    if (b->fd < 0 || b->err)
        return b->err;
    if (b->bg) {
        bg_flush(b);
        return bg_wait(b);
    }
    int e = sink_write(b->fd, b->gz, b->buf, b->len);
    if (e) {
        b->err = ACT_E_IO;
        b->sys_errno = e;
        return b->err;
    }
    b->written += b->len;
    b->len = 0;
    return 0;
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
    if (b->fd >= 0) {
        if (b->bg ? bg_flush(b) : flush_now(b))
            return b->err;
        if (b->cap - b->len >= n)
            return 0;
        if (b->bg) {
            /* A record larger than the buffer: both buffers grow alike
             * once the thread is done with the spare one. */
            if (bg_wait(b))
                return b->err;
            size_t ncap = b->cap;
            while (ncap - b->len < n) {
                if (ncap > SIZE_MAX / 2) {
                    b->err = ACT_E_NOMEM;
                    return b->err;
                }
                ncap *= 2;
            }
            char *ns = realloc(b->bg->spare, ncap);
            if (!ns) {
                b->err = ACT_E_NOMEM;
                return b->err;
            }
            b->bg->spare = ns;
        }
    }
    size_t ncap = b->cap ? b->cap : 4096;
    while (ncap - b->len < n) {
        if (ncap > SIZE_MAX / 2) {
            b->err = ACT_E_NOMEM;
            return b->err;
        }
        ncap *= 2;
    }
    char *nb = realloc(b->buf, ncap);
    if (!nb) {
        b->err = ACT_E_NOMEM;
        return b->err;
    }
    b->buf = nb;
    b->cap = ncap;
    return 0;
}

void act_obuf_free(act_obuf *b)
{
    act_obuf_bg *g = b->bg;
    if (g) {
        pthread_mutex_lock(&g->mu);
        g->quit = 1;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->thread, NULL); /* finishes a pending write first */
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g->spare);
        free(g);
        b->bg = NULL;
    }
    if (b->gz) {
        libdeflate_free_compressor(b->gz->c);
        free(b->gz->out);
        free(b->gz);
        b->gz = NULL;
    }
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

void act_obuf_u64(act_obuf *b, uint64_t v)
{
    char tmp[20];
    size_t i = u64_digits(tmp, v);
    act_obuf_put(b, tmp + i, 20 - i);
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
    char tmp[18];
    int i = 18;
    do {
        tmp[--i] = hexd[v & 15];
        v >>= 4;
    } while (v);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    act_obuf_put(b, tmp + i, (size_t)(18 - i));
}
