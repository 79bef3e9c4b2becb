/*
 * obuf.h -- the big buffered output used by every writer: bytes are
 * appended to one large buffer that is flushed to a file descriptor with
 * write(2) when full, or grown in memory when there is no descriptor (tests,
 * strings built for later use). A file buffer may hand its writes to a
 * thread of its own (act_obuf_init_bg): while the kernel copies one full
 * buffer into the page cache, the caller formats the next one; gzip
 * output is compressed by a pool of such threads. Numbers
 * are formatted by hand because the
 * Chrome writer is benchmarked (millions of events per second) and fprintf
 * per field is an order of magnitude too slow.
 */
#ifndef ACT_OBUF_H
#define ACT_OBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct act_obuf_bg act_obuf_bg;
typedef struct act_obuf_gz act_obuf_gz;
typedef struct act_obuf_dio act_obuf_dio;

typedef struct act_obuf {
    char *buf;
    size_t len;
    size_t cap;
    int fd;            /* -1: memory buffer that grows */
    int err;           /* first error (negative ACT_E_*), sticky */
    int sys_errno;     /* errno of the write(2) failure behind ACT_E_IO */
    uint64_t written;  /* bytes handed to write(2) so far */
    act_obuf_bg *bg;   /* background writer (act_obuf_init_bg), or NULL */
    act_obuf_gz *gz;   /* gzip stream the writes go through (act_obuf_gzip), or NULL */
    act_obuf_dio *dio; /* direct I/O past a size (act_obuf_init_bg), or NULL */
} act_obuf;

/* fd >= 0: flush to fd; fd < 0: grow in memory. */
int act_obuf_init(act_obuf *b, int fd, size_t cap);
/* fd mode with a writer thread and a second buffer of `cap`: a full
 * buffer is handed to the thread and formatting goes on in the other.
 * The thread starts when a buffer is first handed over (full, or by
 * act_obuf_flush_ready), never for act_obuf_flush alone.
 * Without a thread (it could not be started) the buffer writes itself,
 * as act_obuf_init's does. b->buf changes at every flush: keep offsets,
 * not pointers, across a reserve. */
int act_obuf_init_bg(act_obuf *b, int fd, size_t cap);
/* A file buffer made by act_obuf_init_bg writes a regular file's bytes
 * past `after` (ACCELTRACE_DIRECT_IO, 64 MiB by default) with O_DIRECT,
 * plain output only (obuf.c says why and how). This sets another
 * threshold (ACT_DIRECT_IO_OFF: never), before the first byte. */
void act_obuf_direct(act_obuf *b, uint64_t after);
/* Bytes written with O_DIRECT so far (for the debug log and the tests). */
uint64_t act_obuf_direct_bytes(const act_obuf *b);
/* Write out what is buffered (fd mode) and wait until it is written.
 * Returns b->err; after ACT_E_IO, errno says why. */
int act_obuf_flush(act_obuf *b);
/* A file buffer made by act_obuf_init_bg, between bursts of output (a
 * live trace while the program is quiet): hand what is buffered to the
 * writer thread when the thread is free and there is enough to be worth a
 * write (64 KiB; 256 KiB of gzip output, where each flush is a member of
 * its own whose compression starts afresh), else nothing. Never waits: the
 * bytes are written while the caller sleeps instead of at the close, which
 * then has only the rest to write. Returns b->err. */
int act_obuf_flush_ready(act_obuf *b);
/* fd mode, before anything is put: what reaches the descriptor is gzip
 * (level 1..12), one member per flushed buffer. With writer threads
 * (act_obuf_init_bg) a pool of `threads` compresses several buffers at
 * once and writes the members in order, at most threads + 2 buffers in
 * flight; threads < 1: ACCELTRACE_GZIP_THREADS, else the online CPUs - 1,
 * 1 to 4. Without, the caller compresses at each flush. */
int act_obuf_gzip_threads(act_obuf *b, int level, int threads);
/* act_obuf_gzip_threads with the default pool. */
int act_obuf_gzip(act_obuf *b, int level);
/* Write out what is buffered (act_obuf_flush) and stop the writer
 * threads, if any: from then on the buffer writes itself, in the
 * caller, as act_obuf_init's does (a trace whose last bytes are few:
 * its close then wakes no thread and waits for none). Returns b->err. */
int act_obuf_threads_stop(act_obuf *b);
/* Stops the writer thread, if any (call act_obuf_flush first: what is
 * still buffered is not written). */
void act_obuf_free(act_obuf *b);
/* Make room for `n` more bytes; returns 0 or the sticky error. */
int act_obuf_reserve_slow(act_obuf *b, size_t n);

static inline int act_obuf_reserve(act_obuf *b, size_t n)
{
    if (b->cap - b->len >= n)
        return 0;
    return act_obuf_reserve_slow(b, n);
}

static inline void act_obuf_put(act_obuf *b, const void *p, size_t n)
{
    if (act_obuf_reserve(b, n))
        return;
    memcpy(b->buf + b->len, p, n);
    b->len += n;
}

static inline void act_obuf_putc(act_obuf *b, char c)
{
    if (act_obuf_reserve(b, 1))
        return;
    b->buf[b->len++] = c;
}

#define act_obuf_lit(b, s) act_obuf_put((b), (s), sizeof(s) - 1)

static inline void act_obuf_puts(act_obuf *b, const char *s)
{
    act_obuf_put(b, s, strlen(s));
}

void act_obuf_u64(act_obuf *b, uint64_t v);
void act_obuf_i64(act_obuf *b, int64_t v);
/* Nanoseconds as microseconds with exactly three decimals ("12.345"). */
void act_obuf_us3(act_obuf *b, int64_t ns);
/* A double as JSON (shortest round-trip via %.17g; NaN/inf become null). */
void act_obuf_f64(act_obuf *b, double v);
/* "0x" followed by lower-case hex. */
void act_obuf_hex(act_obuf *b, uint64_t v);

#endif
