/*
 * reader.c -- decode one spool file (record.h) for the builder; see
 * spool.h. act_spool_open walks every chunk's published prefix and cuts it
 * into segments (a SEGMENT record starts each), then surveys the segments
 * in global sequence order (strings per thread serial, threads, counts,
 * times, problems). Records are decoded again, one at a time, by an
 * iterator (act_spool_iter_*) instead of being listed: a list of every
 * record cost 48 bytes per record, as much memory as the spool itself.
 * Both walks drop the pages of the mapping they have read (they are file
 * pages and come back on the next touch), so reading a spool does not
 * keep it resident. The same spool read while it is written:
 * reader_live.c; a directory's spools listed: spool_dir.c.
 *
 * Nothing in the file is trusted: the header's geometry is checked against
 * the file size, each chunk's `used` against the chunk size, each record's
 * size against what remains and against its kind's structure, and every
 * string id against the thread's table.
 */
#include "reader_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/vec.h"

/* The mapping is read-only and never written: dropping its pages loses
 * nothing (the next touch maps the page cache's copy again), and keeps
 * the resident size of a spool near the bytes read since the last drop.
 * Pointers into the mapping (strings, records) stay valid. */
#define DROP_EVERY (4u << 20)

/* Drops in this process: each is a system call that unmaps the whole
 * mapping (pages touched again fault back in), a cost a live reader pays
 * while the program runs (act_spool_drop_count). */
static _Atomic uint64_t act_spool_drops;

void act_rd_drop_pages(const act_spool *sp)
{
    /* A private copy is anonymous memory: dropping it would zero it. */
    if (sp->map && sp->map_len && !sp->private_copy) {
        (void)madvise((void *)sp->map, sp->map_len, MADV_DONTNEED);
        atomic_fetch_add_explicit(&act_spool_drops, 1, memory_order_relaxed);
    }
    if (sp->live_untouch)
        sp->live_untouch(sp);
}

uint64_t act_spool_drop_count(void)
{
    return atomic_load_explicit(&act_spool_drops, memory_order_relaxed);
}

void act_spool_drop_pages(const act_spool *sp)
{
    act_rd_drop_pages(sp);
}

void act_rd_note_read(reader *rd, size_t bytes)
{
    rd->read_since_drop += bytes;
    if (rd->read_since_drop >= DROP_EVERY) {
        act_rd_drop_pages(rd->sp);
        rd->read_since_drop = 0;
    }
}

void act_rd_set_err(char *err, size_t errlen, const char *path, const char *what)
{
    if (err && errlen)
        snprintf(err, errlen, "%s: %s", path, what);
}

/* ---- header ----------------------------------------------------------- */

int act_rd_parse_cmdline(act_spool *sp)
{
    const char *c = sp->hdr.cmdline;
    size_t max = sizeof(sp->hdr.cmdline), i = 0;
    while (i < max && c[i]) {
        size_t len = strnlen(c + i, max - i);
        char **na = realloc(sp->argv, (size_t)(sp->argc + 1) * sizeof(*na));
        if (!na)
            return ACT_E_NOMEM;
        sp->argv = na;
        char *a = malloc(len + 1);
        if (!a)
            return ACT_E_NOMEM;
        memcpy(a, c + i, len);
        a[len] = '\0';
        sp->argv[sp->argc++] = a;
        i += len + 1;
    }
    return 0;
}

static int check_header(act_spool *sp, size_t file_size, char *err, size_t errlen)
{
    const act_spool_header *h = &sp->hdr;
    char msg[256];
    if (h->magic != ACT_SPOOL_MAGIC) {
        act_rd_set_err(err, errlen, sp->path, "not an acceltrace spool (bad magic)");
        return ACT_E_FORMAT;
    }
    if (h->version != ACT_SPOOL_VERSION) {
        snprintf(msg, sizeof(msg), "spool format version %u, this acceltrace reads version %u",
                 h->version, ACT_SPOOL_VERSION);
        act_rd_set_err(err, errlen, sp->path, msg);
        return ACT_E_FORMAT;
    }
    if (h->header_size < sizeof(act_spool_header) || h->header_size % 8 ||
        h->header_size > file_size) {
        snprintf(msg, sizeof(msg), "invalid header size %u", h->header_size);
        act_rd_set_err(err, errlen, sp->path, msg);
        return ACT_E_FORMAT;
    }
    if (h->chunk_size < sizeof(act_chunk_header) + sizeof(act_rec_segment) || h->chunk_size % 8 ||
        h->chunk_size > (1u << 30)) {
        snprintf(msg, sizeof(msg), "invalid chunk size %u", h->chunk_size);
        act_rd_set_err(err, errlen, sp->path, msg);
        return ACT_E_FORMAT;
    }
    if (h->clock_kind == ACT_CLOCK_TSC &&
        !(h->calib_ts[1] > h->calib_ts[0] && h->calib_ns[1] > h->calib_ns[0])) {
        act_rd_set_err(err, errlen, sp->path, "TSC timestamps without a valid calibration");
        return ACT_E_FORMAT;
    }
    if (h->clock_kind != ACT_CLOCK_TSC && h->clock_kind != ACT_CLOCK_MONOTONIC_RAW) {
        snprintf(msg, sizeof(msg), "unknown clock kind %u", h->clock_kind);
        act_rd_set_err(err, errlen, sp->path, msg);
        return ACT_E_FORMAT;
    }
    return 0;
}

/* The bytes of spool file `fd` (of `file_size`) that hold something: the
 * header and the chunks used so far. Only those are mapped: a spool file
 * is as large as its buffer (256 MiB by default, sparse), and a launcher
 * that mapped whole files for every process of the run ran out of address
 * space under `ulimit -v` with a dozen of them. The header is checked
 * again once mapped (check_header); here a value that makes no sense maps
 * the whole file, and the checks say what is wrong. */
static size_t used_length(int fd, size_t file_size)
{
    act_spool_header h;
    if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != ACT_SPOOL_MAGIC ||
        !h.chunk_size || h.header_size > file_size)
        return file_size;
    uint64_t len = act_spool_used_bytes(&h);
    return len < file_size ? (size_t)len : file_size;
}

/* A ring spool whose process has ended is read in place: nobody recycles
 * its chunks any more, so the consistent private copy (ring_copy), which
 * took memory in proportion to the ring (30 GiB for --ring=30G, refused as
 * out of memory on a 24 GiB machine), is only made for a process that may
 * still be writing. A pid now used by another process only costs the copy. */
static int writer_gone(const act_spool *sp)
{
    return sp->hdr.pid && (pid_t)sp->hdr.pid != getpid() && kill((pid_t)sp->hdr.pid, 0) != 0 &&
           errno == ESRCH;
}

/* Map `len` bytes of spool file `fd` read-only and check its header. */
int act_rd_map_spool(act_spool *sp, int fd, size_t len, const char *path, char *err, size_t errlen)
{
    /* The header is read and checked before anything is mapped: a spool
     * whose header page was never written is a hole, and on a full tmpfs
     * a read of a hole through a mapping must allocate it, which fails
     * with SIGBUS (the recorder makes the file, then reserves that page,
     * and removes the file when it cannot: a reader may open it between). */
    memset(&sp->hdr, 0, sizeof(sp->hdr)); /* a shorter file reads as zeros past its end */
    ssize_t got = pread(fd, &sp->hdr, sizeof(sp->hdr), 0);
    if (got < 0 || !sp->hdr.magic) {
        act_rd_set_err(err, errlen, path,
                       got < 0 ? strerror(errno)
                               : "its header was never written (its process ended, or found its "
                                 "file system full, before it could)");
        return got < 0 ? ACT_E_IO : ACT_E_FORMAT;
    }
    int rc = check_header(sp, len, err, errlen);
    if (rc)
        return rc;
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
        int e = errno;
        char msg[160];
        snprintf(msg, sizeof(msg), "cannot map %zu MiB of it: %s%s", (len + (1u << 20) - 1) >> 20,
                 strerror(e), e == ENOMEM ? " (address space limit, ulimit -v?)" : "");
        act_rd_set_err(err, errlen, path, msg);
        return e == ENOMEM ? ACT_E_NOMEM : ACT_E_IO;
    }
    sp->map = m;
    sp->map_len = len; /* sp->hdr: the copy read and checked above */
    return 0;
}

/* ---- ring spools: a consistent copy ---------------------------------- */

/* Copy `n` bytes (a multiple of 8, both ends 8-byte aligned: chunks and
 * records are) word by word with acquire loads: no later load, the
 * seqlock's second read of `gen` included, can move before any of them.
 * This is the seqlock reader's ordering without a fence (which
 * ThreadSanitizer does not support). */
static void copy_acquire(void *dst, const void *src, size_t n)
{
    const _Atomic uint64_t *s = src;
    uint64_t *d = dst;
    assert(n % 8 == 0 && (uintptr_t)src % 8 == 0);
    for (size_t i = 0; i < n / 8; i++)
        d[i] = atomic_load_explicit(&s[i], memory_order_acquire);
}

/* What the copy of one chunk was taken at: its gen and published fill;
 * ok 0 when it stayed busy being recycled (nothing kept). */
typedef struct ring_seen {
    uint32_t gen, used;
    int ok;
} ring_seen;

/* Copy chunk `src` (its header and published prefix) under its seqlock
 * (record.h R2): 1 when the copy is consistent, 0 when the chunk stayed
 * busy being recycled. */
static int ring_copy_chunk(unsigned char *dst, const act_chunk_header *src, uint32_t avail,
                           ring_seen *seen)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        uint32_t g1 =
            atomic_load_explicit((const _Atomic uint32_t *)&src->gen, memory_order_acquire);
        if (g1 & 1u) {
            sched_yield();
            continue;
        }
        uint32_t used =
            atomic_load_explicit((const _Atomic uint32_t *)&src->used, memory_order_acquire);
        copy_acquire(dst, src, sizeof(*src) + ((used < avail ? used : avail) & ~7u));
        if (atomic_load_explicit((const _Atomic uint32_t *)&src->gen, memory_order_relaxed) == g1) {
            ((act_chunk_header *)dst)->used = used;
            *seen = (ring_seen){g1, used, 1};
            return 1;
        }
    }
    memset(dst, 0, sizeof(*src));
    *seen = (ring_seen){0, 0, 0};
    return 0;
}

/* How many times the copy of a live ring is checked again (ring_copy). */
#define RING_COPY_PASSES 64

/* A live ring's file mapped for its copy (ring_copy): the chunks its
 * process may use, of which only those below its header's live
 * chunks_used are ever touched (record.h: the others may be holes). */
typedef struct ring_src {
    const unsigned char *map;
    size_t len;
    uint64_t chunks; /* chunks the mapping covers */
    int own;         /* 1: mapped here (else the spool's own mapping) */
} ring_src;

/* The chunks in use now: the live header's count, at most the mapping's. */
static uint64_t ring_src_used(const ring_src *s)
{
    const act_spool_header *h = (const act_spool_header *)s->map;
    uint64_t used =
        atomic_load_explicit((const _Atomic uint64_t *)&h->chunks_used, memory_order_acquire);
    return used < s->chunks ? used : s->chunks;
}

/* One pass over the chunks in use: each one whose gen or fill moved since
 * its copy, or that was not in use at the last pass, is copied (again).
 * Returns 1 when one was recycled (its gen moved), stayed busy or is new:
 * a thread may have moved to another chunk, and the copy may be torn. */
static int ring_copy_pass(const act_spool *sp, const ring_src *src, unsigned char *m,
                          ring_seen *seen, uint64_t *n)
{
    const act_spool_header *h = &sp->hdr;
    uint32_t avail = h->chunk_size - (uint32_t)sizeof(act_chunk_header);
    int recycled = 0;
    *n = ring_src_used(src);
    for (uint64_t i = 0; i < *n; i++) {
        size_t base = h->header_size + (size_t)i * h->chunk_size;
        const act_chunk_header *c = (const act_chunk_header *)(src->map + base);
        uint32_t g = atomic_load_explicit((const _Atomic uint32_t *)&c->gen, memory_order_acquire);
        uint32_t u = atomic_load_explicit((const _Atomic uint32_t *)&c->used, memory_order_acquire);
        if (seen[i].ok && g == seen[i].gen && u == seen[i].used)
            continue;
        /* Recycled since its copy, or between that look and this copy:
         * ring_copy_chunk takes the gen it finds. */
        recycled |= !seen[i].ok || g != seen[i].gen;
        recycled |= !ring_copy_chunk(m + base, c, avail, &seen[i]) || seen[i].gen != g;
    }
    return recycled;
}

/* Map what a live ring's process may use: the ring's chunks, or as many as
 * it has used where every ring chunk was owned at once and it took more
 * (ring.c), within the file. Without the address space, the chunks mapped
 * at open do (a thread that moved beyond them is then cut at the hole). */
static void ring_src_map(ring_src *s, const act_spool *sp, int fd, size_t file_size)
{
    const act_spool_header *h = &sp->hdr;
    uint64_t used = act_spool_chunks_used(h);
    uint64_t want = h->ring_chunks > used ? h->ring_chunks : used;
    uint64_t in_file = (file_size - h->header_size) / h->chunk_size;
    want = want < h->chunk_count ? want : h->chunk_count;
    want = want < in_file ? want : in_file;
    size_t len = h->header_size + (size_t)want * h->chunk_size;
    void *m = len > sp->map_len ? mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (m != MAP_FAILED) {
        *s = (ring_src){m, len, want, 1};
        return;
    }
    *s = (ring_src){sp->map, sp->map_len, (sp->map_len - h->header_size) / h->chunk_size, 0};
}

/* Replace the mapping of a ring spool by a consistent private copy of its
 * header and chunks. A process still writing moves on while the chunks are
 * copied one by one: a thread's chunk copied before it filled it, with the
 * chunk it took next copied after, is a torn copy that the reader must cut
 * at the hole (ring_cut), keeping only what follows it. So the copy is
 * checked again until a pass finds no chunk recycled, or newly used, since
 * its copy, each chunk that grew copied again on the way: then no thread
 * changed chunks while that pass ran (a thread changes chunks only by
 * recycling one, or by taking a fresh one), so each thread's chunks, each
 * copied when the pass looked at it, add up, and nothing is cut. The
 * chunks in use are counted anew at each pass: a ring that fills while it
 * is copied has its fresh chunks copied too, before the ones its threads
 * recycle next. A process that changes chunks faster than a pass can check
 * them still gets the cut, after RING_COPY_PASSES passes. Chunks that
 * stayed busy are counted as overwritten; the header's counts of what was
 * overwritten are read again at the end. */
static int ring_copy(act_spool *sp, int fd, size_t file_size)
{
    ring_src src;
    ring_src_map(&src, sp, fd, file_size);
    unsigned char *m = mmap(NULL, src.len, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ring_seen *seen = calloc(src.chunks ? src.chunks : 1, sizeof(*seen));
    if (m == MAP_FAILED || !seen) {
        if (m != MAP_FAILED)
            munmap(m, src.len);
        if (src.own)
            munmap((void *)src.map, src.len);
        free(seen);
        return ACT_E_NOMEM;
    }
    act_spool_header *h = &sp->hdr;
    memcpy(m, sp->map, h->header_size);
    uint64_t n = 0;
    for (int pass = 0; pass < RING_COPY_PASSES; pass++)
        if (!ring_copy_pass(sp, &src, m, seen, &n))
            break;
    const act_spool_header *live = (const act_spool_header *)src.map;
    h->chunks_used = n;
    h->chunks_overwritten = atomic_load((const _Atomic uint64_t *)&live->chunks_overwritten);
    h->bytes_overwritten = atomic_load((const _Atomic uint64_t *)&live->bytes_overwritten);
    h->records_overwritten = atomic_load((const _Atomic uint64_t *)&live->records_overwritten);
    for (uint64_t i = 0; i < n; i++)
        h->chunks_overwritten += !seen[i].ok;
    memcpy(m, h, sizeof(*h)); /* the copy's header says what it holds */
    free(seen);
    if (src.own)
        munmap((void *)src.map, src.len);
    munmap((void *)sp->map, sp->map_len);
    sp->map = m;
    sp->map_len = src.len;
    sp->private_copy = 1;
    return 0;
}

/* ---- pass 1: chunks into segments ------------------------------------- */

int act_rd_seg_add(reader *rd, const segment *s)
{
    act_spool *sp = rd->sp;
    if (act_vec_reserve(sp->segs, rd->cap_segs, sp->n_segs + 1, 64))
        return ACT_E_NOMEM;
    sp->segs[sp->n_segs++] = *s;
    return 0;
}

static int scan_chunk(reader *rd, uint32_t idx)
{
    act_spool *sp = rd->sp;
    size_t base = sp->hdr.header_size + (size_t)idx * sp->hdr.chunk_size;
    act_chunk_header ch;
    memcpy(&ch, sp->map + base, sizeof(ch));
    if (ch.magic != ACT_CHUNK_MAGIC) {
        if (ch.magic || ch.used)
            act_rd_problem(sp, "chunk %u: bad chunk magic 0x%08x; chunk skipped", idx, ch.magic);
        return 0; /* magic 0: handed out but never initialised (crash) */
    }
    if (ch.index != idx) {
        act_rd_problem(sp, "chunk %u: header says index %u; chunk skipped", idx, ch.index);
        return 0;
    }
    if ((sp->hdr.flags & ACT_SPOOL_F_RING) && !sp->private_copy && (ch.gen & 1u)) {
        sp->hdr.chunks_overwritten++; /* read in place: its process died recycling it */
        return 0;
    }
    size_t avail = sp->hdr.chunk_size - sizeof(act_chunk_header);
    size_t used = ch.used;
    if (used > avail) {
        act_rd_problem(sp, "chunk %u: fill count %zu exceeds chunk capacity %zu; chunk skipped",
                       idx, used, avail);
        return 0;
    }
    size_t start = base + sizeof(act_chunk_header), off = 0;
    segment cur = {0};
    int have = 0;
    while (off + sizeof(act_rec_hdr) <= used) {
        act_rec_hdr h;
        memcpy(&h, sp->map + start + off, sizeof(h));
        size_t size = (size_t)h.size8 * 8;
        if (!size || size > used - off) {
            act_rd_problem(sp,
                           "chunk %u offset %zu: invalid record size %zu; rest of chunk skipped",
                           idx, off, size);
            break;
        }
        if (h.kind == ACT_REC_SEGMENT) {
            if (size < sizeof(act_rec_segment)) {
                act_rd_problem(
                    sp, "chunk %u offset %zu: SEGMENT record too short; rest of chunk skipped", idx,
                    off);
                break;
            }
            if (have && act_rd_seg_add(rd, &cur))
                return ACT_E_NOMEM;
            const act_rec_segment *s = (const act_rec_segment *)(sp->map + start + off);
            cur.seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE); /* S1: may end meanwhile */
            cur.serial = h.aux;
            cur.chunk = idx;
            cur.top = start + off;
            cur.begin = start + off + size;
            cur.end = cur.begin;
            cur.before = 0;
            have = 1;
        } else if (have && h.kind == ACT_REC_THREAD && h.aux == cur.serial && !cur.before &&
                   size >= sizeof(act_rec_thread_ring) && (sp->hdr.flags & ACT_SPOOL_F_RING)) {
            const act_rec_thread_ring *t = (const act_rec_thread_ring *)(sp->map + start + off);
            cur.before = t->before;
        } else if (!have && h.kind != ACT_REC_PAD) {
            act_rd_problem(sp, "chunk %u offset %zu: record before any SEGMENT record; skipped",
                           idx, off);
        }
        off += size;
        if (have)
            cur.end = start + off;
    }
    if (have && act_rd_seg_add(rd, &cur))
        return ACT_E_NOMEM;
    return 0;
}

/* A thread's ring segments in seq order must add up: each one's `before`
 * is the previous one's plus its bytes. A hole (a torn copy of a live
 * ring: a chunk copied before its thread filled it, or an old copy of a
 * chunk recycled under the reader with the one after it; or a chunk the
 * writer skipped) would keep records whose context is gone -- a pop whose
 * push was overwritten. Everything of the thread before the last hole is
 * cut: read for its definitions only, its other records counted as
 * overwritten. Segments are sorted by seq. */
static int ring_cut(act_spool *sp)
{
    act_u64map last = {0}, cut = {0};
    int rc = 0;
    for (size_t i = 0; i < sp->n_segs && !rc; i++) {
        const segment *g = &sp->segs[i];
        uint64_t v;
        if (act_u64map_get(&last, g->serial, &v)) {
            const segment *p = &sp->segs[v - 1];
            uint32_t want = p->before + (uint32_t)(p->end - p->top);
            if (p->before && g->before && g->before != want)
                rc = act_u64map_put(&cut, g->serial, i + 1);
        }
        if (!rc)
            rc = act_u64map_put(&last, g->serial, i + 1);
    }
    for (size_t i = 0; i < sp->n_segs && !rc; i++) {
        segment *g = &sp->segs[i];
        uint64_t v;
        if (act_u64map_get(&cut, g->serial, &v) && i + 1 < v) {
            g->cut = 1;
            sp->hdr.chunks_overwritten++;
            sp->hdr.bytes_overwritten += g->end - g->top;
        }
    }
    act_u64map_free(&last);
    act_u64map_free(&cut);
    return rc ? ACT_E_NOMEM : 0;
}

/* Segments in seq order; those never ended (ACT_SEQ_OPEN, record.h S1)
 * last, by chunk and offset. */
int act_rd_seg_cmp(const segment *x, const segment *y)
{
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    if (x->chunk != y->chunk)
        return x->chunk < y->chunk ? -1 : 1;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int seg_cmp(const void *a, const void *b)
{
    return act_rd_seg_cmp(a, b);
}

/* ---- records in segment order ----------------------------------------- */

void act_rd_reader_free(reader *rd)
{
    free(rd->strs);
    act_u64map_free(&rd->strings);
}

/* What every read of a spool ends with, batch or live: its time span, the
 * undefined string ids in all, and the reader's memory and pages let go. */
void act_rd_reader_finish(act_spool *sp, reader *rd)
{
    if (rd->raw_max) {
        sp->first_ts = act_spool_ns(sp, rd->raw_min);
        sp->last_ts = act_spool_ns(sp, rd->raw_max);
    }
    if (rd->unknown_strings > 3)
        act_rd_problem(sp, "%llu uses of undefined string ids in all",
                       (unsigned long long)rd->unknown_strings);
    act_rd_reader_free(rd);
    act_rd_drop_pages(sp);
}

static int decode(act_spool *sp, size_t file_size)
{
    reader rd = {.sp = sp, .survey = 1, .raw_min = UINT64_MAX};
    int rc = 0;
    size_t n_chunks = (file_size - sp->hdr.header_size) / sp->hdr.chunk_size;
    /* A kept spool is cut to the chunks it used (act_spool_dir_shrink):
     * only a file without all of those is short. */
    uint64_t used = act_spool_chunks_used(&sp->hdr);
    if (used > n_chunks)
        act_rd_problem(sp,
                       "file holds %zu of the %llu chunks its header says were used "
                       "(truncated file)",
                       n_chunks, (unsigned long long)used);
    else
        n_chunks = (size_t)used;
    size_t mapped = (sp->map_len - sp->hdr.header_size) / sp->hdr.chunk_size;
    if (mapped < n_chunks) /* used after it was mapped: not ours to read */
        n_chunks = mapped;
    for (size_t i = 0; i < n_chunks && !rc; i++) {
        rc = scan_chunk(&rd, (uint32_t)i);
        act_rd_note_read(&rd, sp->hdr.chunk_size);
    }
    if (!rc) {
        if (sp->n_segs) /* qsort's pointer must not be NULL, even for 0 items */
            qsort(sp->segs, sp->n_segs, sizeof(*sp->segs), seg_cmp);
        if (sp->hdr.flags & ACT_SPOOL_F_RING)
            rc = ring_cut(sp);
        sp->records[ACT_REC_SEGMENT] = sp->n_segs;
        act_sp_rec rec;
        for (size_t i = 0; i < sp->n_segs && !rc; i++) {
            size_t off = sp->segs[i].begin;
            while ((rc = seg_next(&rd, &sp->segs[i], &off, &rec)) > 0)
                ;
            act_rd_note_read(&rd, sp->segs[i].end - sp->segs[i].begin);
        }
    }
    /* sp->threads is in serial order already (thread_set keeps it so). */
    act_rd_reader_finish(sp, &rd);
    return rc;
}

/* ---- iteration --------------------------------------------------------- */

struct act_spool_iter {
    reader rd;
    size_t seg; /* current segment */
    size_t off; /* next record's offset in it */
};

act_spool_iter *act_spool_iter_new(const act_spool *sp)
{
    act_spool_iter *it = calloc(1, sizeof(*it));
    if (!it)
        return NULL;
    /* The iterator only reads the spool: it neither counts nor reports. */
    it->rd.sp = (act_spool *)sp;
    it->off = sp->n_segs ? sp->segs[0].begin : 0;
    return it;
}

int act_spool_iter_next(act_spool_iter *it, act_sp_rec *rec)
{
    const act_spool *sp = it->rd.sp;
    while (it->seg < sp->n_segs) {
        int rc = seg_next(&it->rd, &sp->segs[it->seg], &it->off, rec);
        if (rc)
            return rc;
        act_rd_note_read(&it->rd, sp->segs[it->seg].end - sp->segs[it->seg].begin);
        if (++it->seg < sp->n_segs)
            it->off = sp->segs[it->seg].begin;
    }
    return 0;
}

act_str act_spool_iter_str(act_spool_iter *it, uint32_t serial, uint32_t id)
{
    return str_get(&it->rd, serial, id);
}

void act_spool_iter_free(act_spool_iter *it)
{
    if (!it)
        return;
    act_rd_drop_pages(it->rd.sp);
    act_rd_reader_free(&it->rd);
    free(it);
}

/* ---- public ----------------------------------------------------------- */

int act_spool_open(act_spool *sp, const char *path, char *err, size_t errlen)
{
    memset(sp, 0, sizeof(*sp));
    /* O_NONBLOCK: a FIFO (or device) under a spool's name is refused by
     * act_spool_open_fd, never waited on; a regular file ignores it. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        sp->path = strdup(path);
        act_rd_set_err(err, errlen, path, strerror(errno));
        return sp->path ? ACT_E_IO : ACT_E_NOMEM;
    }
    int rc = act_spool_open_fd(sp, fd, path, err, errlen);
    close(fd);
    return rc;
}

int act_spool_open_fd(act_spool *sp, int fd, const char *path, char *err, size_t errlen)
{
    memset(sp, 0, sizeof(*sp));
    sp->path = strdup(path);
    if (!sp->path) {
        act_rd_set_err(err, errlen, path, "out of memory");
        return ACT_E_NOMEM;
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        act_rd_set_err(err, errlen, path, "not a regular file");
        return ACT_E_IO;
    }
    if ((uint64_t)st.st_size < ACT_SPOOL_HEADER_SIZE) {
        act_rd_set_err(err, errlen, path, "too small to be a spool file (truncated or empty)");
        return ACT_E_FORMAT;
    }
    int rc = act_rd_map_spool(sp, fd, used_length(fd, (size_t)st.st_size), path, err, errlen);
    if (rc)
        return rc;
    sp->sealed = (sp->hdr.flags & ACT_SPOOL_F_SEALED) != 0;
    if ((sp->hdr.flags & ACT_SPOOL_F_RING) && !writer_gone(sp) &&
        ring_copy(sp, fd, (size_t)st.st_size)) {
        act_rd_set_err(err, errlen, path,
                       "out of memory for a copy of the ring of a running process");
        return ACT_E_NOMEM;
    }
    if (act_rd_parse_cmdline(sp) || decode(sp, (size_t)st.st_size)) {
        act_rd_set_err(err, errlen, path, "out of memory");
        return ACT_E_NOMEM;
    }
    return 0;
}

void act_rd_settle_free(act_spool *sp)
{
    struct act_sp_settle *st = sp->settle;
    if (!st)
        return;
    free(st->chunks);
    free(st->seqs);
    if (st->fd >= 0)
        close(st->fd);
    free(st);
    sp->settle = NULL;
}

void act_spool_close(act_spool *sp)
{
    if (sp->live_end)
        sp->live_end(sp);
    act_rd_settle_free(sp);
    if (sp->map)
        munmap((void *)sp->map, sp->map_len);
    for (int i = 0; i < sp->argc; i++)
        free(sp->argv[i]);
    free(sp->argv);
    for (size_t i = 0; i < sp->n_errors; i++)
        free(sp->errors[i]);
    free(sp->errors);
    free(sp->segs);
    free(sp->threads);
    free(sp->path);
    memset(sp, 0, sizeof(*sp));
}

uint64_t act_spool_ns(const act_spool *sp, uint64_t ts)
{
    if (!ts || sp->hdr.clock_kind != ACT_CLOCK_TSC)
        return ts;
    const act_spool_header *h = &sp->hdr;
    /* check_header refused a TSC spool whose pairs do not both increase. */
    assert(h->calib_ts[1] > h->calib_ts[0] && h->calib_ns[1] > h->calib_ns[0]);
    uint64_t dt = h->calib_ts[1] - h->calib_ts[0], dn = h->calib_ns[1] - h->calib_ns[0];
    /* Unsigned, the sign apart: two factors below 2^64 cannot overflow 128
     * bits, where a signed product of a hostile timestamp could. */
    int before = ts < h->calib_ts[0];
    unsigned __int128 d = before ? h->calib_ts[0] - ts : ts - h->calib_ts[0];
    unsigned __int128 off = d * dn / dt;
    if (before) /* before the clock's origin: keep "known" (nonzero) */
        return off < h->calib_ns[0] ? (uint64_t)(h->calib_ns[0] - off) : 1;
    unsigned __int128 ns = h->calib_ns[0] + off;
    return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

const act_sp_thread *act_spool_thread(const act_spool *sp, uint32_t serial)
{
    size_t lo = 0, hi = sp->n_threads;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (sp->threads[mid].serial == serial)
            return &sp->threads[mid];
        if (sp->threads[mid].serial < serial)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
