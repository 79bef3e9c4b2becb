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
 * keep it resident.
 *
 * Nothing in the file is trusted: the header's geometry is checked against
 * the file size, each chunk's `used` against the chunk size, each record's
 * size against what remains and against its kind's structure, and every
 * string id against the thread's table.
 */
#include "spool.h"

#include <assert.h>
#include <dirent.h>
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
#include "u64map.h"

typedef struct act_sp_seg {
    uint64_t seq;
    uint32_t serial;
    uint32_t chunk;
    size_t begin, end; /* byte offsets in the file */
    uint32_t closed;   /* live reading: the scan round that saw it end (0: may grow) */
} segment;

/* Decoding state of one walk over the segments: the string tables as they
 * stand at the current record (a string id may be redefined later). */
typedef struct reader {
    act_spool *sp;
    int survey; /* 1: the walk of act_spool_open (counts, problems) */
    size_t cap_segs;
    size_t read_since_drop;    /* bytes read since the mapping was last dropped */
    uint64_t raw_min, raw_max; /* survey: earliest (nonzero) / latest raw time */
    act_u64map strings;        /* (serial << 32 | id) -> index + 1 into strs */
    act_str *strs;
    size_t n_strs, cap_strs;
    uint64_t unknown_strings;
#define STR_HITS 8
    struct str_hit {
        uint64_t key; /* (serial << 32 | id); 0: empty (id 0 is never looked up) */
        size_t idx;   /* into strs */
    } hits[STR_HITS];
} reader;

/* Smallest size of a record of each kind (larger is accepted: fields
 * appended by a later writer are ignored). */
static const uint32_t min_size[ACT_REC_KIND_MAX] = {
    [ACT_REC_PAD] = sizeof(act_rec_hdr),
    [ACT_REC_SEGMENT] = sizeof(act_rec_segment),
    [ACT_REC_THREAD] = sizeof(act_rec_thread),
    [ACT_REC_STRING] = sizeof(act_rec_string),
    [ACT_REC_RANGE_PUSH] = sizeof(act_rec_ts),
    [ACT_REC_RANGE_POP] = sizeof(act_rec_ts),
    [ACT_REC_RANGE_START] = sizeof(act_rec_range_id),
    [ACT_REC_RANGE_END] = sizeof(act_rec_range_id),
    [ACT_REC_MARK] = sizeof(act_rec_ts),
    [ACT_REC_COUNTER] = sizeof(act_rec_counter),
    [ACT_REC_API] = sizeof(act_rec_api),
    [ACT_REC_DEVICE_OP] = sizeof(act_rec_device_op),
    [ACT_REC_DEVICE] = sizeof(act_rec_device),
    [ACT_REC_QUEUE] = sizeof(act_rec_queue),
    [ACT_REC_METADATA] = sizeof(act_rec_metadata),
    [ACT_REC_CLOCK] = sizeof(act_rec_clock),
    [ACT_REC_ERROR] = sizeof(act_rec_ts),
    [ACT_REC_CAPTURE] = sizeof(act_rec_ts),
    [ACT_REC_EXTCORR] = sizeof(act_rec_extcorr),
    [ACT_REC_ARG] = sizeof(act_rec_arg),
};

static void problem(act_spool *sp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void problem(act_spool *sp, const char *fmt, ...)
{
    sp->n_problems++;
    if (sp->n_errors >= ACT_SPOOL_MAX_ERRORS)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    size_t len = strlen(sp->path) + strlen(msg) + 3;
    char *line = malloc(len);
    char **ne = realloc(sp->errors, (sp->n_errors + 1) * sizeof(*ne));
    if (!line || !ne) {
        free(line);
        if (ne)
            sp->errors = ne;
        return;
    }
    snprintf(line, len, "%s: %s", sp->path, msg);
    sp->errors = ne;
    sp->errors[sp->n_errors++] = line;
}

/* Problems are reported by the survey only; the iterator's walk decodes
 * the same bytes again and would only repeat them. */
#define rd_problem(rd, ...)                                                                        \
    do {                                                                                           \
        if ((rd)->survey)                                                                          \
            problem((rd)->sp, __VA_ARGS__);                                                        \
    } while (0)

/* The mapping is read-only and never written: dropping its pages loses
 * nothing (the next touch maps the page cache's copy again), and keeps
 * the resident size of a spool near the bytes read since the last drop.
 * Pointers into the mapping (strings, records) stay valid. */
#define DROP_EVERY (4u << 20)

static void live_untouch(const act_spool *sp);

/* Drops in this process: each is a system call that unmaps the whole
 * mapping (pages touched again fault back in), a cost a live reader pays
 * while the program runs (act_spool_drop_count). */
static _Atomic uint64_t act_spool_drops;

static void drop_pages(const act_spool *sp)
{
    /* A private copy is anonymous memory: dropping it would zero it. */
    if (sp->map && sp->map_len && !sp->private_copy) {
        (void)madvise((void *)sp->map, sp->map_len, MADV_DONTNEED);
        atomic_fetch_add_explicit(&act_spool_drops, 1, memory_order_relaxed);
    }
    live_untouch(sp);
}

uint64_t act_spool_drop_count(void)
{
    return atomic_load_explicit(&act_spool_drops, memory_order_relaxed);
}

void act_spool_drop_pages(const act_spool *sp)
{
    drop_pages(sp);
}

/* A live spool is read while the program writes it, in many places at
 * once (each thread's chunk, the records and strings of the events
 * written early): its windows are counted as they map (live_touch), each
 * once, and the pages dropped once LIVE_DROP_EVERY of them are resident.
 * What a read maps: up to 64 KiB around it (the kernel's
 * fault_around_bytes). */
#define LIVE_PAGE       (64u << 10)
#define LIVE_DROP_EVERY (1u << 20)

static void note_read(reader *rd, size_t bytes)
{
    rd->read_since_drop += bytes;
    if (rd->read_since_drop >= DROP_EVERY) {
        drop_pages(rd->sp);
        rd->read_since_drop = 0;
    }
}

static void set_err(char *err, size_t errlen, const char *path, const char *what)
{
    if (err && errlen)
        snprintf(err, errlen, "%s: %s", path, what);
}

/* ---- header ----------------------------------------------------------- */

static int parse_cmdline(act_spool *sp)
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
        set_err(err, errlen, sp->path, "not an acceltrace spool (bad magic)");
        return ACT_E_FORMAT;
    }
    if (h->version != ACT_SPOOL_VERSION) {
        snprintf(msg, sizeof(msg), "spool format version %u, this acceltrace reads version %u",
                 h->version, ACT_SPOOL_VERSION);
        set_err(err, errlen, sp->path, msg);
        return ACT_E_FORMAT;
    }
    if (h->header_size < sizeof(act_spool_header) || h->header_size % 8 ||
        h->header_size > file_size) {
        snprintf(msg, sizeof(msg), "invalid header size %u", h->header_size);
        set_err(err, errlen, sp->path, msg);
        return ACT_E_FORMAT;
    }
    if (h->chunk_size < sizeof(act_chunk_header) + sizeof(act_rec_segment) || h->chunk_size % 8 ||
        h->chunk_size > (1u << 30)) {
        snprintf(msg, sizeof(msg), "invalid chunk size %u", h->chunk_size);
        set_err(err, errlen, sp->path, msg);
        return ACT_E_FORMAT;
    }
    if (h->clock_kind == ACT_CLOCK_TSC &&
        !(h->calib_ts[1] > h->calib_ts[0] && h->calib_ns[1] > h->calib_ns[0])) {
        set_err(err, errlen, sp->path, "TSC timestamps without a valid calibration");
        return ACT_E_FORMAT;
    }
    if (h->clock_kind != ACT_CLOCK_TSC && h->clock_kind != ACT_CLOCK_MONOTONIC_RAW) {
        snprintf(msg, sizeof(msg), "unknown clock kind %u", h->clock_kind);
        set_err(err, errlen, sp->path, msg);
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
    uint64_t chunks = h.chunks_used < h.chunk_count ? h.chunks_used : h.chunk_count;
    uint64_t len = h.header_size + chunks * h.chunk_size;
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
static int map_spool(act_spool *sp, int fd, size_t len, const char *path, char *err, size_t errlen)
{
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
        int e = errno;
        char msg[160];
        snprintf(msg, sizeof(msg), "cannot map %zu MiB of it: %s%s", (len + (1u << 20) - 1) >> 20,
                 strerror(e), e == ENOMEM ? " (address space limit, ulimit -v?)" : "");
        set_err(err, errlen, path, msg);
        return e == ENOMEM ? ACT_E_NOMEM : ACT_E_IO;
    }
    sp->map = m;
    sp->map_len = len;
    memcpy(&sp->hdr, sp->map, sizeof(sp->hdr));
    return check_header(sp, sp->map_len, err, errlen);
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

/* Copy chunk `src` (its header and published prefix) under its seqlock
 * (record.h R2): 1 when the copy is consistent, 0 when the chunk stayed
 * busy being recycled. */
static int ring_copy_chunk(unsigned char *dst, const act_chunk_header *src, uint32_t avail)
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
            return 1;
        }
    }
    memset(dst, 0, sizeof(*src));
    return 0;
}

/* Replace the mapping of a ring spool by a consistent private copy of its
 * header and chunks. Chunks that stayed busy are counted as overwritten. */
static int ring_copy(act_spool *sp)
{
    unsigned char *m = mmap(NULL, sp->map_len, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return ACT_E_NOMEM;
    const act_spool_header *h = &sp->hdr;
    memcpy(m, sp->map, h->header_size);
    uint64_t n = (sp->map_len - h->header_size) / h->chunk_size;
    if (n > h->chunk_count)
        n = h->chunk_count;
    if (n > h->chunks_used)
        n = h->chunks_used;
    uint32_t avail = h->chunk_size - (uint32_t)sizeof(act_chunk_header);
    for (uint64_t i = 0; i < n; i++) {
        size_t base = h->header_size + (size_t)i * h->chunk_size;
        if (!ring_copy_chunk(m + base, (const act_chunk_header *)(sp->map + base), avail))
            sp->hdr.chunks_overwritten++;
    }
    munmap((void *)sp->map, sp->map_len);
    sp->map = m;
    sp->private_copy = 1;
    return 0;
}

/* ---- pass 1: chunks into segments ------------------------------------- */

static int seg_add(reader *rd, const segment *s)
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
            problem(sp, "chunk %u: bad chunk magic 0x%08x; chunk skipped", idx, ch.magic);
        return 0; /* magic 0: handed out but never initialised (crash) */
    }
    if (ch.index != idx) {
        problem(sp, "chunk %u: header says index %u; chunk skipped", idx, ch.index);
        return 0;
    }
    if ((sp->hdr.flags & ACT_SPOOL_F_RING) && !sp->private_copy && (ch.gen & 1u)) {
        sp->hdr.chunks_overwritten++; /* read in place: its process died recycling it */
        return 0;
    }
    size_t avail = sp->hdr.chunk_size - sizeof(act_chunk_header);
    size_t used = ch.used;
    if (used > avail) {
        problem(sp, "chunk %u: fill count %zu exceeds chunk capacity %zu; chunk skipped", idx, used,
                avail);
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
            problem(sp, "chunk %u offset %zu: invalid record size %zu; rest of chunk skipped", idx,
                    off, size);
            break;
        }
        if (h.kind == ACT_REC_SEGMENT) {
            if (size < sizeof(act_rec_segment)) {
                problem(sp, "chunk %u offset %zu: SEGMENT record too short; rest of chunk skipped",
                        idx, off);
                break;
            }
            if (have && seg_add(rd, &cur))
                return ACT_E_NOMEM;
            const act_rec_segment *s = (const act_rec_segment *)(sp->map + start + off);
            cur.seq = s->seq;
            cur.serial = h.aux;
            cur.chunk = idx;
            cur.begin = start + off + size;
            cur.end = cur.begin;
            have = 1;
        } else if (!have && h.kind != ACT_REC_PAD) {
            problem(sp, "chunk %u offset %zu: record before any SEGMENT record; skipped", idx, off);
        }
        off += size;
        if (have)
            cur.end = start + off;
    }
    if (have && seg_add(rd, &cur))
        return ACT_E_NOMEM;
    return 0;
}

static int seg_cmp(const void *a, const void *b)
{
    const segment *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->chunk < y->chunk ? -1 : x->chunk > y->chunk;
}

/* ---- records in segment order ----------------------------------------- */

static int str_define(reader *rd, uint32_t serial, uint32_t id, const char *p, uint32_t n)
{
    if (act_vec_reserve(rd->strs, rd->cap_strs, rd->n_strs + 1, 256))
        return ACT_E_NOMEM;
    rd->strs[rd->n_strs] = (act_str){p, n};
    rd->n_strs++;
    rd->hits[id & (STR_HITS - 1)].key = 0; /* a redefinition replaces the old one */
    return act_u64map_put(&rd->strings, (uint64_t)serial << 32 | id, rd->n_strs);
}

static act_str str_get_slow(reader *rd, uint32_t serial, uint32_t id, uint64_t key,
                            struct str_hit *c)
{
    uint64_t v;
    if (act_u64map_get(&rd->strings, key, &v)) {
        *c = (struct str_hit){key, (size_t)v - 1};
        return rd->strs[v - 1];
    }
    rd->unknown_strings++;
    if (rd->unknown_strings <= 3)
        rd_problem(rd, "thread serial %u: string id %u used before it was defined", serial, id);
    static const char unknown[] = "(unknown string)";
    return (act_str){unknown, sizeof(unknown) - 1};
}

static inline act_str str_get(reader *rd, uint32_t serial, uint32_t id)
{
    if (!id)
        return (act_str){"", 0};
    /* A few names recur record after record: a small cache before the map
     * (str_define clears the slot of an id it (re)defines). */
    uint64_t key = (uint64_t)serial << 32 | id;
    struct str_hit *c = &rd->hits[id & (STR_HITS - 1)];
    if (c->key == key)
        return rd->strs[c->idx];
    return str_get_slow(rd, serial, id, key, c);
}

/* Threads stay sorted by serial: a live walk (act_spool_live_next) looks
 * them up while it is still adding them. */
static int thread_set(act_spool *sp, uint32_t serial, uint32_t tid, act_str name)
{
    size_t i = 0;
    while (i < sp->n_threads && sp->threads[i].serial < serial)
        i++;
    if (i < sp->n_threads && sp->threads[i].serial == serial) {
        sp->threads[i].tid = tid;
        sp->threads[i].name = name;
        return 0;
    }
    act_sp_thread *nt = realloc(sp->threads, (sp->n_threads + 1) * sizeof(*nt));
    if (!nt)
        return ACT_E_NOMEM;
    sp->threads = nt;
    memmove(&nt[i + 1], &nt[i], (sp->n_threads - i) * sizeof(*nt));
    nt[i] = (act_sp_thread){serial, tid, name};
    sp->n_threads++;
    return 0;
}

/* Raw times are compared and converted once at the end: act_spool_ns is
 * non-decreasing (the header check ensures a positive TSC rate), so the
 * earliest and latest raw times give the earliest and latest ns. */
static inline void note_ts(reader *rd, uint64_t raw)
{
    if (!raw)
        return;
    if (raw < rd->raw_min)
        rd->raw_min = raw;
    if (raw > rd->raw_max)
        rd->raw_max = raw;
}

/* Timestamps a record carries, for the process's first/last time. */
static inline void note_times(reader *rd, const act_rec_hdr *h)
{
    switch (h->kind) {
    case ACT_REC_RANGE_PUSH:
    case ACT_REC_RANGE_POP:
    case ACT_REC_MARK:
    case ACT_REC_ERROR:
    case ACT_REC_CAPTURE: note_ts(rd, ((const act_rec_ts *)h)->ts); break;
    case ACT_REC_RANGE_START:
    case ACT_REC_RANGE_END: note_ts(rd, ((const act_rec_range_id *)h)->ts); break;
    case ACT_REC_COUNTER: note_ts(rd, ((const act_rec_counter *)h)->ts); break;
    case ACT_REC_API:
        note_ts(rd, ((const act_rec_api *)h)->start);
        note_ts(rd, ((const act_rec_api *)h)->end);
        break;
    case ACT_REC_DEVICE_OP:
        note_ts(rd, ((const act_rec_device_op *)h)->start);
        note_ts(rd, ((const act_rec_device_op *)h)->end);
        break;
    default: break;
    }
}

/* Resolve the strings of a record that is handed out. */
static inline __attribute__((always_inline)) void rec_decode(reader *rd, const act_rec_hdr *h,
                                                             uint32_t serial, act_sp_rec *r)
{
    r->r = h;
    r->serial = serial;
    r->s1 = (act_str){"", 0};
    r->s2 = (act_str){"", 0};
    switch (h->kind) {
    case ACT_REC_RANGE_PUSH:
    case ACT_REC_MARK:
    case ACT_REC_ERROR:
    case ACT_REC_COUNTER:
    case ACT_REC_API:
    case ACT_REC_RANGE_START:
    case ACT_REC_CLOCK: r->s1 = str_get(rd, serial, h->aux); break;
    case ACT_REC_DEVICE_OP:
        r->s1 = str_get(rd, serial, h->aux);
        r->s2 = str_get(rd, serial, ((const act_rec_device_op *)h)->detail);
        break;
    case ACT_REC_DEVICE:
        r->s1 = str_get(rd, serial, h->aux);
        r->s2 = str_get(rd, serial, ((const act_rec_device *)h)->vendor);
        break;
    case ACT_REC_QUEUE: r->s1 = str_get(rd, serial, h->aux); break;
    case ACT_REC_METADATA:
        r->s1 = str_get(rd, serial, h->aux);
        r->s2 = str_get(rd, serial, ((const act_rec_metadata *)h)->value);
        break;
    case ACT_REC_THREAD: r->s2 = str_get(rd, serial, ((const act_rec_thread *)h)->name); break;
    case ACT_REC_ARG: {
        const act_rec_arg *a = (const act_rec_arg *)h;
        r->s1 = str_get(rd, serial, h->aux);
        if (a->type == ACT_RECARG_STR)
            r->s2 = a->v.u <= UINT32_MAX ? str_get(rd, serial, (uint32_t)a->v.u)
                                         : str_get(rd, serial, UINT32_MAX);
        break;
    }
    default: break;
    }
}

/* The next record of segment `sg` from *off: 1 with *out filled, 0 at the
 * end of the segment, or ACT_E_NOMEM. The survey also counts, notes times
 * and threads, and reports problems; both walks skip the same records and
 * define the same strings, so the iterator resolves what the survey did.
 * Sizes were checked by scan_chunk, and are checked again: the iterator
 * reads the file a second time. */
static inline __attribute__((always_inline)) int
seg_next_impl(reader *rd, const segment *sg, size_t *off, act_sp_rec *out, const int survey)
{
    act_spool *sp = rd->sp;
    while (*off + sizeof(act_rec_hdr) <= sg->end) {
        const act_rec_hdr *h = (const act_rec_hdr *)(sp->map + *off);
        size_t size = (size_t)h->size8 * 8;
        if (!size || size > sg->end - *off) {
            if (survey)
                problem(sp, "chunk %u: record size changed while reading; rest of segment skipped",
                        sg->chunk);
            *off = sg->end;
            return 0;
        }
        *off += size;
        assert(*off <= sg->end); /* a record never crosses its segment's end */
        if (h->kind >= ACT_REC_KIND_MAX) {
            if (survey)
                problem(sp, "chunk %u: unknown record kind %u; skipped", sg->chunk, h->kind);
            continue;
        }
        if (size < min_size[h->kind]) {
            if (survey)
                problem(sp, "chunk %u: record of kind %u is %zu bytes, needs %u; skipped",
                        sg->chunk, h->kind, size, min_size[h->kind]);
            continue;
        }
        if (h->kind == ACT_REC_PAD || h->kind == ACT_REC_SEGMENT)
            continue;
        if (survey)
            sp->records[h->kind]++;
        if (h->kind == ACT_REC_STRING) {
            const act_rec_string *s = (const act_rec_string *)h;
            if (s->len > size - sizeof(*s) || !h->aux) {
                if (survey)
                    problem(sp,
                            "chunk %u: STRING record with length %u in %zu bytes (id %u); skipped",
                            sg->chunk, s->len, size, h->aux);
                continue;
            }
            if (str_define(rd, sg->serial, h->aux, (const char *)(s + 1), s->len))
                return ACT_E_NOMEM;
            continue;
        }
        if (survey && h->kind == ACT_REC_THREAD && h->aux) {
            /* aux 0 names some OS thread of the process (nvtxNameOsThread);
             * the builder reads it from the records. */
            const act_rec_thread *t = (const act_rec_thread *)h;
            if (thread_set(sp, h->aux, t->tid, str_get(rd, sg->serial, t->name)))
                return ACT_E_NOMEM;
        }
        rec_decode(rd, h, sg->serial, out);
        if (survey)
            note_times(rd, h);
        return 1;
    }
    return 0;
}

/* Two copies, so that the iterator's walk carries none of the survey's
 * tests (this loop runs twice per record). */
static int seg_next(reader *rd, const segment *sg, size_t *off, act_sp_rec *out)
{
    return rd->survey ? seg_next_impl(rd, sg, off, out, 1) : seg_next_impl(rd, sg, off, out, 0);
}

static void reader_free(reader *rd)
{
    free(rd->strs);
    act_u64map_free(&rd->strings);
}

/* What every read of a spool ends with, batch or live: its time span, the
 * undefined string ids in all, and the reader's memory and pages let go. */
static void reader_finish(act_spool *sp, reader *rd)
{
    if (rd->raw_max) {
        sp->first_ts = act_spool_ns(sp, rd->raw_min);
        sp->last_ts = act_spool_ns(sp, rd->raw_max);
    }
    if (rd->unknown_strings > 3)
        problem(sp, "%llu uses of undefined string ids in all",
                (unsigned long long)rd->unknown_strings);
    reader_free(rd);
    drop_pages(sp);
}

static int decode(act_spool *sp, size_t file_size)
{
    reader rd = {.sp = sp, .survey = 1, .raw_min = UINT64_MAX};
    int rc = 0;
    size_t n_chunks = (file_size - sp->hdr.header_size) / sp->hdr.chunk_size;
    if (sp->hdr.chunk_count > n_chunks)
        problem(sp, "file holds %zu of the %u chunks its header declares (truncated file)",
                n_chunks, sp->hdr.chunk_count);
    if (sp->hdr.chunk_count < n_chunks)
        n_chunks = sp->hdr.chunk_count;
    if (sp->hdr.chunks_used < n_chunks)
        n_chunks = (size_t)sp->hdr.chunks_used;
    size_t mapped = (sp->map_len - sp->hdr.header_size) / sp->hdr.chunk_size;
    if (mapped < n_chunks) /* used after it was mapped: not ours to read */
        n_chunks = mapped;
    for (size_t i = 0; i < n_chunks && !rc; i++) {
        rc = scan_chunk(&rd, (uint32_t)i);
        note_read(&rd, sp->hdr.chunk_size);
    }
    if (!rc) {
        if (sp->n_segs) /* qsort's pointer must not be NULL, even for 0 items */
            qsort(sp->segs, sp->n_segs, sizeof(*sp->segs), seg_cmp);
        sp->records[ACT_REC_SEGMENT] = sp->n_segs;
        act_sp_rec rec;
        for (size_t i = 0; i < sp->n_segs && !rc; i++) {
            size_t off = sp->segs[i].begin;
            while ((rc = seg_next(&rd, &sp->segs[i], &off, &rec)) > 0)
                ;
            note_read(&rd, sp->segs[i].end - sp->segs[i].begin);
        }
    }
    /* sp->threads is in serial order already (thread_set keeps it so). */
    reader_finish(sp, &rd);
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
        note_read(&it->rd, sp->segs[it->seg].end - sp->segs[it->seg].begin);
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
    drop_pages(it->rd.sp);
    reader_free(&it->rd);
    free(it);
}

/* ---- live reading ------------------------------------------------------ */

/* A chunk as the live scans left it: how much of its published prefix was
 * cut into segments, and the sequence number of its last segment (the one
 * that may still grow). */
typedef struct live_chunk {
    uint32_t scanned; /* bytes after the chunk header */
    uint32_t round;   /* the last scan that looked at it */
    uint32_t idle;    /* scans in a row that found nothing new */
    uint8_t dead;     /* a problem was reported: not read further */
    uint8_t has_seg;
    uint64_t seq;   /* of its last segment */
    size_t seg_idx; /* that segment's index in sp->segs */
} live_chunk;

/* A chunk that stayed unchanged LIVE_IDLE scans in a row is looked at in
 * one scan of LIVE_SWEEP only (and whenever the walk waits on it): a scan
 * costs a page touch per chunk in use, and a 64 GiB spool has 512 Ki. */
#define LIVE_IDLE  4
#define LIVE_SWEEP 16

struct act_sp_live {
    reader rd;          /* survey = 1: one walk counts, reports and decodes */
    live_chunk *chunks; /* chunk_count of them */
    size_t n_chunks;
    uint32_t round; /* scans so far */
    size_t seg;     /* segments before it have been read whole */
    size_t off;     /* next record of segs[seg] (0: not started) */
    uint64_t next_seq;
    act_u64map last_seq;   /* thread serial + 1 -> seq + 1 of its latest segment */
    act_u64map last_chunk; /* thread serial + 1 -> chunk + 1 of that segment */
    /* The mapping's LIVE_PAGE windows touched since the last drop, one bit
     * each, and their bytes (act_spool_touch): what is resident, counted
     * once per window, not once per read. */
    uint8_t *touched;
    size_t n_windows, touched_bytes;
};

/* The mapping was dropped: nothing of it is resident. */
static void live_untouch(const act_spool *sp)
{
    struct act_sp_live *l = sp->live;
    if (l && l->touched && l->touched_bytes) {
        memset(l->touched, 0, (l->n_windows + 7) / 8);
        l->touched_bytes = 0;
    }
}

/* Bytes [off, off + len) of a live spool's mapping were read: each
 * LIVE_PAGE window among them not touched since the last drop now maps
 * (the kernel's fault-around), and the pages are dropped once
 * LIVE_DROP_EVERY of them are. A drop unmaps the whole mapping and what
 * is read again faults back in, so counting a window once, however often
 * it is read, keeps drops to what the resident size needs (a count per
 * read dropped the mapping every few KiB read: thousands of system calls
 * and refaults a second while the program ran). */
static void live_touch(const act_spool *sp, size_t off, size_t len)
{
    struct act_sp_live *l = sp->live;
    if (!l || !l->touched || !len || off >= sp->map_len)
        return;
    size_t w = off / LIVE_PAGE, last = (off + len - 1) / LIVE_PAGE;
    if (last >= l->n_windows)
        last = l->n_windows - 1;
    for (; w <= last; w++) {
        uint8_t bit = (uint8_t)(1u << (w % 8));
        if (l->touched[w / 8] & bit)
            continue;
        l->touched[w / 8] |= bit;
        l->touched_bytes += LIVE_PAGE;
    }
    if (l->touched_bytes >= LIVE_DROP_EVERY)
        drop_pages(sp);
}

void act_spool_touch(const act_spool *sp, const void *p, size_t len)
{
    if (sp->live && p)
        live_touch(sp, (size_t)((const unsigned char *)p - sp->map), len);
}

/* Close the segment `seq` in chunk c if it is still that chunk's last one
 * (else a later segment in the chunk closed it already). */
static void live_close(act_spool *sp, struct act_sp_live *l, uint64_t c, uint64_t seq)
{
    const live_chunk *lc = &l->chunks[c];
    if (lc->has_seg && lc->seq == seq && !sp->segs[lc->seg_idx].closed)
        sp->segs[lc->seg_idx].closed = l->round;
}

/* A new segment, at *idx: unread segments stay sorted by sequence (each
 * chunk's seg_idx follows them), and its thread's earlier segment is
 * closed by this round (the thread published its last record before it
 * began this one, so a later scan of that chunk reads it whole). Each
 * step costs what it moves, not the number of unread segments. */
static int live_seg_add(reader *rd, struct act_sp_live *l, segment *s, size_t *idx)
{
    act_spool *sp = rd->sp;
    uint64_t prev = 0, pc;
    if (act_u64map_get(&l->last_seq, (uint64_t)s->serial + 1, &prev) && prev - 1 > s->seq)
        s->closed = l->round; /* a later segment of its thread is known already */
    if (seg_add(rd, s))
        return ACT_E_NOMEM;
    size_t i = sp->n_segs - 1;
    for (; i > l->seg && sp->segs[i - 1].seq > s->seq; i--) {
        sp->segs[i] = sp->segs[i - 1];
        live_chunk *moved = &l->chunks[sp->segs[i].chunk];
        if (moved->has_seg && moved->seq == sp->segs[i].seq)
            moved->seg_idx = i;
    }
    sp->segs[i] = *s;
    *idx = i;
    if (s->closed)
        return 0;
    if (prev && act_u64map_get(&l->last_chunk, (uint64_t)s->serial + 1, &pc))
        live_close(sp, l, pc - 1, prev - 1);
    if (act_u64map_put(&l->last_seq, (uint64_t)s->serial + 1, s->seq + 1) ||
        act_u64map_put(&l->last_chunk, (uint64_t)s->serial + 1, (uint64_t)s->chunk + 1))
        return ACT_E_NOMEM;
    return 0;
}

/* The part of chunk idx published since the last scan, into segments. */
static int live_scan_chunk(reader *rd, struct act_sp_live *l, uint32_t idx)
{
    act_spool *sp = rd->sp;
    live_chunk *lc = &l->chunks[idx];
    size_t base = sp->hdr.header_size + (size_t)idx * sp->hdr.chunk_size;
    const act_chunk_header *ch = (const act_chunk_header *)(const void *)(sp->map + base);
    if (lc->dead)
        return 0;
    live_touch(sp, base, sizeof(act_chunk_header)); /* touched on every scan */
    uint32_t magic = __atomic_load_n(&ch->magic, __ATOMIC_ACQUIRE);
    if (magic != ACT_CHUNK_MAGIC) {
        if (!lc->dead && magic) {
            problem(sp, "chunk %u: bad chunk magic 0x%08x; chunk skipped", idx, magic);
            lc->dead = 1;
        }
        return 0; /* magic 0: handed out, not initialised yet */
    }
    size_t used = __atomic_load_n(&ch->used, __ATOMIC_ACQUIRE);
    size_t avail = sp->hdr.chunk_size - sizeof(act_chunk_header);
    if (ch->index != idx || used > avail) {
        problem(sp, "chunk %u: bad index %u or fill count %zu; chunk skipped", idx, ch->index,
                used);
        lc->dead = 1;
        return 0;
    }
    size_t start = base + sizeof(act_chunk_header), off = lc->scanned;
    lc->round = l->round;
    lc->idle = off == used ? lc->idle + 1 : 0;
    size_t cur = lc->has_seg ? lc->seg_idx : SIZE_MAX; /* its last segment, may grow */
    while (off + sizeof(act_rec_hdr) <= used) {
        act_rec_hdr h;
        memcpy(&h, sp->map + start + off, sizeof(h));
        size_t size = (size_t)h.size8 * 8;
        if (!size || size > used - off ||
            (h.kind == ACT_REC_SEGMENT && size < sizeof(act_rec_segment))) {
            problem(sp, "chunk %u offset %zu: invalid record of size %zu; rest of chunk skipped",
                    idx, off, size);
            lc->dead = 1;
            break;
        }
        if (h.kind == ACT_REC_SEGMENT) {
            if (cur != SIZE_MAX)
                sp->segs[cur].closed = 1; /* its thread left the chunk */
            const act_rec_segment *s =
                (const act_rec_segment *)(const void *)(sp->map + start + off);
            segment sg = {s->seq, h.aux, idx, start + off + size, start + off + size, 0};
            lc->has_seg = 0; /* its old last segment no longer moves with the insertion */
            if (live_seg_add(rd, l, &sg, &cur))
                return ACT_E_NOMEM;
            lc->has_seg = 1;
            lc->seq = sg.seq;
            lc->seg_idx = cur;
        } else if (!lc->has_seg && h.kind != ACT_REC_PAD) {
            problem(sp, "chunk %u offset %zu: record before any SEGMENT record; skipped", idx, off);
        }
        off += size;
        if (cur != SIZE_MAX)
            sp->segs[cur].end = start + off;
    }
    /* The walk faulted its pages in: counted (as the header above), so
     * that a scan of many chunks does not hold them all; the records are
     * mapped again from the page cache when read. */
    live_touch(sp, start + lc->scanned, off - lc->scanned);
    lc->scanned = (uint32_t)off;
    return 0;
}

int act_spool_open_live(act_spool *sp, const char *path, char *err, size_t errlen)
{
    memset(sp, 0, sizeof(*sp));
    sp->path = strdup(path);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC); /* act_spool_open's */
    struct stat st;
    if (!sp->path || fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < ACT_SPOOL_HEADER_SIZE) {
        set_err(err, errlen, path, "not ready");
        if (fd >= 0)
            close(fd);
        return ACT_E_IO;
    }
    int rc = map_spool(sp, fd, (size_t)st.st_size, path, err, errlen);
    close(fd);
    if (rc)
        return rc;
    /* Refused for good (the caller stops trying): TSC times convert with
     * the pairs written at close, and a ring recycles chunks under the
     * reader (its records are read once, at the end, by ring_copy). */
    if (sp->hdr.clock_kind != ACT_CLOCK_MONOTONIC_RAW) {
        set_err(err, errlen, path, "TSC clock: read once the process has ended");
        return ACT_E_UNSUPPORTED;
    }
    if (sp->hdr.flags & ACT_SPOOL_F_RING) {
        set_err(err, errlen, path, "ring spool: read once the process has ended");
        return ACT_E_UNSUPPORTED;
    }
    struct act_sp_live *l = calloc(1, sizeof(*l));
    size_t n_chunks = (sp->map_len - sp->hdr.header_size) / sp->hdr.chunk_size;
    if (sp->hdr.chunk_count > n_chunks)
        problem(sp, "file holds %zu of the %u chunks its header declares (truncated file)",
                n_chunks, sp->hdr.chunk_count);
    if (sp->hdr.chunk_count < n_chunks)
        n_chunks = sp->hdr.chunk_count;
    if (l) {
        l->chunks = calloc(n_chunks ? n_chunks : 1, sizeof(*l->chunks));
        l->n_windows = sp->map_len / LIVE_PAGE + 1;
        l->touched = calloc((l->n_windows + 7) / 8, 1);
    }
    if (!l || !l->chunks || !l->touched || parse_cmdline(sp)) {
        free(l ? l->chunks : NULL);
        free(l ? l->touched : NULL);
        free(l);
        set_err(err, errlen, path, "out of memory");
        return ACT_E_NOMEM;
    }
    l->n_chunks = n_chunks;
    l->rd = (reader){.sp = sp, .survey = 1, .raw_min = UINT64_MAX};
    sp->live = l;
    return 0;
}

int act_spool_live_scan(act_spool *sp, int final)
{
    struct act_sp_live *l = sp->live;
    if (!l)
        return ACT_E_STATE;
    l->round++;
    const act_spool_header *mh = (const act_spool_header *)(const void *)sp->map;
    uint64_t used = __atomic_load_n(&mh->chunks_used, __ATOMIC_ACQUIRE);
    size_t n = used < l->n_chunks ? (size_t)used : l->n_chunks;
    size_t waits = l->seg < sp->n_segs ? sp->segs[l->seg].chunk : SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        const live_chunk *lc = &l->chunks[i];
        if (!final && lc->idle >= LIVE_IDLE && i != waits && (i + l->round) % LIVE_SWEEP)
            continue;
        if (live_scan_chunk(&l->rd, l, (uint32_t)i))
            return ACT_E_NOMEM;
    }
    if (final) { /* nobody writes any more: the header's counts are final */
        memcpy(&sp->hdr, sp->map, sizeof(sp->hdr));
        /* act_spool_link_execs may have found it ended by exec already. */
        sp->sealed = (sp->hdr.flags & ACT_SPOOL_F_SEALED) != 0 || sp->ended_by_exec;
    }
    return 0;
}

int act_spool_live_next(act_spool *sp, act_sp_rec *rec, int final)
{
    struct act_sp_live *l = sp->live;
    while (l && l->seg < sp->n_segs) {
        segment *sg = &sp->segs[l->seg];
        if (!final && sg->seq != l->next_seq)
            return 0; /* an earlier segment is not published yet */
        if (!l->off)
            l->off = sg->begin;
        int rc = seg_next(&l->rd, sg, &l->off, rec);
        if (rc)
            return rc;
        /* Past it only once its chunk was scanned after the scan that saw
         * it end: that scan's loads see every record its thread wrote. */
        if (!final && !(sg->closed && sg->closed < l->chunks[sg->chunk].round))
            return 0; /* it may grow: what follows it waits */
        live_touch(sp, sg->begin, sg->end - sg->begin);
        l->next_seq = sg->seq + 1;
        l->seg++;
        l->off = 0;
    }
    return 0;
}

void act_spool_live_end(act_spool *sp)
{
    struct act_sp_live *l = sp->live;
    if (!l)
        return;
    sp->records[ACT_REC_SEGMENT] = sp->n_segs;
    reader_finish(sp, &l->rd);
    act_u64map_free(&l->last_seq);
    act_u64map_free(&l->last_chunk);
    free(l->chunks);
    free(l->touched);
    free(l);
    sp->live = NULL;
}

void act_spool_live_times(const act_spool *sp, uint64_t *first, uint64_t *last)
{
    const struct act_sp_live *l = sp->live;
    *first = l && l->rd.raw_max ? act_spool_ns(sp, l->rd.raw_min) : sp->first_ts;
    *last = l && l->rd.raw_max ? act_spool_ns(sp, l->rd.raw_max) : sp->last_ts;
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
        set_err(err, errlen, path, strerror(errno));
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
        set_err(err, errlen, path, "out of memory");
        return ACT_E_NOMEM;
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        set_err(err, errlen, path, "not a regular file");
        return ACT_E_IO;
    }
    if ((uint64_t)st.st_size < ACT_SPOOL_HEADER_SIZE) {
        set_err(err, errlen, path, "too small to be a spool file (truncated or empty)");
        return ACT_E_FORMAT;
    }
    int rc = map_spool(sp, fd, used_length(fd, (size_t)st.st_size), path, err, errlen);
    if (rc)
        return rc;
    sp->sealed = (sp->hdr.flags & ACT_SPOOL_F_SEALED) != 0;
    if ((sp->hdr.flags & ACT_SPOOL_F_RING) && !writer_gone(sp) && ring_copy(sp)) {
        set_err(err, errlen, path, "out of memory for a copy of the ring of a running process");
        return ACT_E_NOMEM;
    }
    if (parse_cmdline(sp) || decode(sp, (size_t)st.st_size)) {
        set_err(err, errlen, path, "out of memory");
        return ACT_E_NOMEM;
    }
    return 0;
}

void act_spool_close(act_spool *sp)
{
    act_spool_live_end(sp);
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

/* Every name the recorder gives a spool (core/recorder/spool_file.c, spool_map):
 * <pid>.acts, and <pid>-<n>.acts for a later image of the same pid (a
 * process that records, then calls exec and records again). */
static int is_spool_name(const char *n, unsigned long *pid, unsigned long *image)
{
    const char *p = n;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p == n || p - n > 10)
        return 0;
    *pid = strtoul(n, NULL, 10);
    *image = 0;
    if (*p == '-') {
        const char *q = ++p;
        while (*p >= '0' && *p <= '9')
            p++;
        if (p == q || p - q > 4 || *q == '0')
            return 0;
        *image = strtoul(q, NULL, 10);
    }
    return strcmp(p, ".acts") == 0;
}

typedef struct named {
    unsigned long pid, image;
    char *path;
} named;

static int named_cmp(const void *a, const void *b)
{
    const named *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->image < y->image ? -1 : x->image > y->image;
}

static unsigned long spool_image(const act_spool *sp, unsigned long *pid)
{
    const char *base = strrchr(sp->path, '/');
    unsigned long image = 0;
    if (!is_spool_name(base ? base + 1 : sp->path, pid, &image))
        *pid = 0;
    return image;
}

void act_spool_link_execs(act_spool **sps, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        act_spool *a = sps[i], *b = sps[i + 1];
        unsigned long pa, pb;
        unsigned long ia = spool_image(a, &pa), ib = spool_image(b, &pb);
        /* The same pid, a later image that started after the earlier one's
         * last record: the earlier image ended in exec, not in a crash. */
        if (!a->sealed && pa && pa == pb && ib > ia && a->hdr.pid == b->hdr.pid &&
            b->hdr.start_ns >= a->last_ts) {
            a->sealed = 1;
            a->ended_by_exec = 1;
        }
    }
}

int act_spool_dir_list(const char *dir, char ***paths, size_t *n, char *err, size_t errlen)
{
    *paths = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        set_err(err, errlen, dir, strerror(errno));
        return ACT_E_IO;
    }
    named *v = NULL;
    size_t nv = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        unsigned long pid, image;
        if (!is_spool_name(e->d_name, &pid, &image))
            continue;
        named *nn = realloc(v, (nv + 1) * sizeof(*nn));
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *p = malloc(len);
        if (!nn || !p) {
            free(p);
            if (nn)
                v = nn;
            rc = ACT_E_NOMEM;
            break;
        }
        v = nn;
        snprintf(p, len, "%s/%s", dir, e->d_name);
        v[nv++] = (named){pid, image, p};
    }
    closedir(d);
    if (nv)
        qsort(v, nv, sizeof(*v), named_cmp);
    char **out = rc ? NULL : malloc((nv ? nv : 1) * sizeof(*out));
    for (size_t i = 0; i < nv; i++) {
        if (out)
            out[i] = v[i].path;
        else
            free(v[i].path);
    }
    free(v);
    if (!out) {
        set_err(err, errlen, dir, "out of memory");
        return ACT_E_NOMEM;
    }
    *paths = out;
    *n = nv;
    return 0;
}

void act_spool_dir_free(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}
