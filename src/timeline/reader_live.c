/*
 * reader_live.c -- a spool read while its program writes it (spool.h,
 * act_spool_open_live .. act_spool_live_end): each scan cuts what the
 * threads published since into segments, and a walk hands records out in
 * the batch order (docs/architecture.md, "Streaming", invariants 1-3),
 * with the same checks and decoder as the batch read (reader_int.h).
 */
#include "reader_int.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/vec.h"

/* A live spool is read while the program writes it, in many places at
 * once (each thread's chunk, the records and strings of the events
 * written early): its windows are counted as they map (live_touch), each
 * once, and the pages dropped once LIVE_DROP_EVERY of them are resident.
 * What a read maps: the whole folio it falls in, up to 2 MiB. Page cache
 * folios are that large on ext4 since Linux 6.16 (large folios), and a
 * read fault maps all of its folio (not only the kernel's
 * fault_around_bytes, 64 KiB): counted in 64 KiB windows, the 1 MiB
 * between drops was up to 32 MiB mapped (measured: the launcher's RssFile
 * in 2 MiB steps, 35 MiB peaks at 1.6 M launches). A window is the largest
 * folio; elsewhere this counts high, which only drops a little sooner.
 * Six windows between drops: at four (8 MiB) what the reader touches
 * between drops no longer fitted and drops rose from ~1 to ~7 per 1 000
 * launches (stream.launcher_memory bounds them); at six, 1.5-3. */
#define LIVE_PAGE       (2u << 20)
#define LIVE_DROP_EVERY (12u << 20)

/* A chunk as the live scans left it: how much of its published prefix was
 * parsed, and its last segment while that one is open (record.h S1: its
 * records may still grow, and its end is not known). */
typedef struct live_chunk {
    uint32_t scanned; /* bytes after the chunk header */
    uint32_t idle;    /* scans in a row that found nothing new */
    uint8_t dead;     /* a problem was reported: not read further */
    uint8_t done;     /* full, its last segment ended: nothing can be added (live_done) */
    uint8_t has_seg;  /* a SEGMENT record was seen in it */
    uint32_t open;    /* its last segment's index in l->open + 1 (0: ended, or none) */
} live_chunk;

/* A segment seen and not ended yet (its seq still ACT_SEQ_OPEN at the last
 * look): its end grows as its chunk is parsed; `capped` once a later
 * SEGMENT record in its chunk fixed the end. */
typedef struct live_open {
    segment sg;
    int capped;
} live_open;

/* A chunk that stayed unchanged LIVE_IDLE scans in a row is looked at in
 * one scan of LIVE_SWEEP only: a scan costs a page touch per chunk in use,
 * and a 64 GiB spool has 512 Ki. (Its open segment, if any, is looked at
 * every scan all the same: live_ends.) */
#define LIVE_IDLE  4
#define LIVE_SWEEP 16

struct act_sp_live {
    reader rd;          /* survey = 1: one walk counts, reports and decodes */
    live_chunk *chunks; /* chunk_count of them */
    size_t n_chunks;
    uint32_t round; /* scans so far */
    /* sp->segs holds the ended segments, in seq order from `seg` on. */
    size_t seg; /* segments before it have been read whole */
    size_t off; /* next record of segs[seg] (0: not started) */
    uint64_t next_seq;
    live_open *open; /* segments not ended yet: about one per live thread */
    size_t n_open, cap_open;
    /* The walk waits on a seq taken whose segment was not seen: the next
     * scan looks at every chunk (that segment may be in one idle until
     * its thread took it again: a chunk recycled, S2). */
    int gap;
    /* The mapping's LIVE_PAGE windows touched since the last drop, one bit
     * each, and their bytes (act_spool_touch): what is resident, counted
     * once per window, not once per read. */
    uint8_t *touched;
    size_t n_windows, touched_bytes;
    uint64_t segs_gone;           /* read whole and compacted away (live_compact) */
    int fd;                       /* the spool, for live_idle_same (-1: none) */
    struct act_sp_settle *settle; /* being made by the final scan (live_settle_*) */
};

/* The mapping was dropped: nothing of it is resident. */
void act_rd_live_untouch(const act_spool *sp)
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
        act_rd_drop_pages(sp);
}

void act_spool_touch(const act_spool *sp, const void *p, size_t len)
{
    if (sp->live && p)
        live_touch(sp, (size_t)((const unsigned char *)p - sp->map), len);
}

/* A segment ended (its seq known, its end final): into sp->segs, which
 * stays in seq order from l->seg on (those still open at the final scan,
 * ACT_SEQ_OPEN, last by chunk and offset, as the batch read sorts them).
 * Segments end in about seq order: the insertion moves few. */
static int live_seg_add(reader *rd, struct act_sp_live *l, const segment *s)
{
    act_spool *sp = rd->sp;
    if (act_rd_seg_add(rd, s))
        return ACT_E_NOMEM;
    size_t i = sp->n_segs - 1;
    for (; i > l->seg && act_rd_seg_cmp(&sp->segs[i - 1], s) > 0; i--)
        sp->segs[i] = sp->segs[i - 1];
    sp->segs[i] = *s;
    return 0;
}

/* A new open segment, the last of its chunk. */
static int live_open_add(struct act_sp_live *l, live_chunk *lc, const segment *s)
{
    if (act_vec_reserve(l->open, l->cap_open, l->n_open + 1, 16))
        return ACT_E_NOMEM;
    l->open[l->n_open] = (live_open){*s, 0};
    lc->open = (uint32_t)++l->n_open;
    return 0;
}

/* A chunk left with ACT_CHUNK_REUSE_MIN bytes free or fewer takes no new
 * thread (record.h S2), and once its last segment ended its own thread
 * has left it: nothing more can appear in it, and scans pass it by.
 * Without this a sweep (LIVE_SWEEP: every 16th chunk each round, one per
 * 2 MiB window) touched a page of every window of the run each round: 24
 * windows a round at 400 000 launches, four drops of the mapping. */
static void live_done(live_chunk *lc, size_t avail)
{
    if (avail - lc->scanned <= ACT_CHUNK_REUSE_MIN && lc->has_seg && !lc->open)
        lc->done = 1;
}

/* Open segment i ended (or the spool did: final): out of l->open, its
 * chunk told when it was the chunk's last. */
static int live_open_end(reader *rd, struct act_sp_live *l, size_t i, uint64_t seq)
{
    live_open o = l->open[i];
    live_chunk *lc = &l->chunks[o.sg.chunk];
    if (lc->open == i + 1) {
        lc->open = 0;
        /* Its chunk's last segment ended: full, the chunk is done. (One
         * left open at the final scan is not: its thread may still add a
         * record that fits.) */
        if (seq != ACT_SEQ_OPEN)
            live_done(lc, rd->sp->hdr.chunk_size - sizeof(act_chunk_header));
    }
    if (i + 1 < l->n_open) { /* the last one takes its place */
        l->open[i] = l->open[l->n_open - 1];
        live_chunk *moved = &l->chunks[l->open[i].sg.chunk];
        if (moved->open == l->n_open)
            moved->open = (uint32_t)i + 1;
    }
    l->n_open--;
    o.sg.seq = seq;
    return live_seg_add(rd, l, &o.sg);
}

/* An idle chunk (looked at in a sweep) that has not changed: its header
 * read with pread(2), not through the mapping. A sweep looks at one chunk
 * in LIVE_SWEEP, one in every 2 MiB window: through the mapping each
 * would map its window (a large folio) and count toward a drop, and a
 * round touched every window of the run (43 a round at 1.6 M launches,
 * seven drops of the whole mapping). 1: unchanged, nothing to do. */
static int live_idle_same(const struct act_sp_live *l, const live_chunk *lc, size_t base)
{
    act_chunk_header h;
    if (l->fd < 0 || lc->idle < LIVE_IDLE ||
        pread(l->fd, &h, sizeof(h), (off_t)base) != (ssize_t)sizeof(h))
        return 0;
    return h.magic == ACT_CHUNK_MAGIC && h.used == lc->scanned;
}

/* A SEGMENT record at file offset `top` of chunk idx: the chunk's open
 * segment, if any, ends where it begins (its records are final once its
 * seq shows: live_ends). */
static int live_segment(struct act_sp_live *l, uint32_t idx, size_t top, size_t size,
                        uint32_t serial)
{
    live_chunk *lc = &l->chunks[idx];
    if (lc->open)
        l->open[lc->open - 1].capped = 1;
    lc->open = 0;
    lc->has_seg = 1;
    segment sg = {ACT_SEQ_OPEN, serial, idx, top + size, top + size, top, 0, 0};
    return live_open_add(l, lc, &sg);
}

/* The part of chunk idx published since the last scan: its SEGMENT records
 * start segments, the others grow the chunk's open one. */
static int live_scan_chunk(reader *rd, struct act_sp_live *l, uint32_t idx)
{
    act_spool *sp = rd->sp;
    live_chunk *lc = &l->chunks[idx];
    size_t base = sp->hdr.header_size + (size_t)idx * sp->hdr.chunk_size;
    const act_chunk_header *ch = (const act_chunk_header *)(const void *)(sp->map + base);
    if (lc->dead || lc->done)
        return 0;
    if (live_idle_same(l, lc, base)) {
        lc->idle++; /* scanned: what it held is all it holds */
        return 0;
    }
    live_touch(sp, base, sizeof(act_chunk_header)); /* touched on every scan */
    uint32_t magic = __atomic_load_n(&ch->magic, __ATOMIC_ACQUIRE);
    if (magic != ACT_CHUNK_MAGIC) {
        if (!lc->dead && magic) {
            act_rd_problem(sp, "chunk %u: bad chunk magic 0x%08x; chunk skipped", idx, magic);
            lc->dead = 1;
        }
        return 0; /* magic 0: handed out, not initialised yet */
    }
    size_t used = __atomic_load_n(&ch->used, __ATOMIC_ACQUIRE);
    size_t avail = sp->hdr.chunk_size - sizeof(act_chunk_header);
    if (ch->index != idx || used > avail) {
        act_rd_problem(sp, "chunk %u: bad index %u or fill count %zu; chunk skipped", idx,
                       ch->index, used);
        lc->dead = 1;
        return 0;
    }
    size_t start = base + sizeof(act_chunk_header), off = lc->scanned;
    lc->idle = off == used ? lc->idle + 1 : 0;
    while (off + sizeof(act_rec_hdr) <= used) {
        act_rec_hdr h;
        memcpy(&h, sp->map + start + off, sizeof(h));
        size_t size = (size_t)h.size8 * 8;
        if (!size || size > used - off ||
            (h.kind == ACT_REC_SEGMENT && size < sizeof(act_rec_segment))) {
            act_rd_problem(sp,
                           "chunk %u offset %zu: invalid record of size %zu; rest of chunk skipped",
                           idx, off, size);
            lc->dead = 1;
            break;
        }
        if (h.kind == ACT_REC_SEGMENT) {
            if (live_segment(l, idx, start + off, size, h.aux))
                return ACT_E_NOMEM;
        } else if (!lc->open && h.kind != ACT_REC_PAD) {
            act_rd_problem(sp, "chunk %u offset %zu: record %s; skipped", idx, off,
                           lc->has_seg ? "after its segment ended" : "before any SEGMENT record");
        }
        off += size;
        if (lc->open)
            l->open[lc->open - 1].sg.end = start + off;
    }
    /* The walk faulted its pages in: counted (as the header above), so
     * that a scan of many chunks does not hold them all; the records are
     * mapped again from the page cache when read. */
    live_touch(sp, start + lc->scanned, off - lc->scanned);
    lc->scanned = (uint32_t)off;
    live_done(lc, avail);
    return 0;
}

/* An open segment's seq, as its thread stored it last (record.h S1). In a
 * chunk that changed this round, through the mapping (its page is mapped
 * already); else with pread(2), which maps nothing: an idle thread's
 * segment is looked at every round. A seq found set is loaded again
 * through the mapping, with acquire: what its thread wrote before is then
 * seen. */
static uint64_t live_seq(const act_spool *sp, const struct act_sp_live *l, const live_open *o)
{
    size_t at = o->sg.top + offsetof(act_rec_segment, seq);
    if (!o->capped && l->chunks[o->sg.chunk].idle && l->fd >= 0) {
        uint64_t v;
        if (pread(l->fd, &v, sizeof(v), (off_t)at) == (ssize_t)sizeof(v) && v == ACT_SEQ_OPEN)
            return v;
    }
    live_touch(sp, at, sizeof(uint64_t));
    return __atomic_load_n((const uint64_t *)(const void *)(sp->map + at), __ATOMIC_ACQUIRE);
}

/* A segment left open by the final scan: its seq is looked at again. */
static int live_settle_seq(struct act_sp_live *l, const live_open *o)
{
    struct act_sp_settle *st = l->settle;
    if (act_vec_reserve(st->seqs, st->cap_seqs, st->n_seqs + 1, 16))
        return ACT_E_NOMEM;
    st->seqs[st->n_seqs++] = o->sg.top + offsetof(act_rec_segment, seq);
    return 0;
}

/* The chunks the final scan parsed that could still take records (the
 * header: the copy the scan ends with). */
static int live_settle_chunks(struct act_sp_live *l, size_t n)
{
    struct act_sp_settle *st = l->settle;
    for (size_t i = 0; i < n; i++) {
        const live_chunk *lc = &l->chunks[i];
        st->unsure |= lc->dead;
        if (lc->done || lc->dead)
            continue;
        if (act_vec_reserve(st->chunks, st->cap_chunks, st->n_chunks + 1, 64))
            return ACT_E_NOMEM;
        st->chunks[st->n_chunks++] = (settle_chunk){(uint32_t)i, lc->scanned};
    }
    return 0;
}

/* The open segments whose thread ended them since: their end is made
 * final (the chunk parsed again after the seq was seen, when nothing
 * after it in the chunk fixed the end yet) and they join sp->segs. At the
 * final scan, those still open join them as such. */
static int live_ends(reader *rd, struct act_sp_live *l, int final)
{
    for (size_t i = l->n_open; i-- > 0;) {
        uint64_t seq = live_seq(rd->sp, l, &l->open[i]);
        if (seq == ACT_SEQ_OPEN && !final)
            continue;
        if (seq == ACT_SEQ_OPEN && live_settle_seq(l, &l->open[i]))
            return ACT_E_NOMEM;
        if (!l->open[i].capped && !final) {
            live_chunk *lc = &l->chunks[l->open[i].sg.chunk];
            lc->idle = 0; /* parsed now, not passed as unchanged */
            if (live_scan_chunk(rd, l, l->open[i].sg.chunk))
                return ACT_E_NOMEM;
        }
        /* The parse may have added open segments (after i): i is the same. */
        if (live_open_end(rd, l, i, seq))
            return ACT_E_NOMEM;
    }
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
        act_rd_set_err(err, errlen, path, "not ready");
        if (fd >= 0)
            close(fd);
        return ACT_E_IO;
    }
    int rc = act_rd_map_spool(sp, fd, (size_t)st.st_size, path, err, errlen);
    if (rc) {
        close(fd);
        return rc;
    }
    /* Refused for good (the caller stops trying): TSC times convert with
     * the pairs written at close, and a ring recycles chunks under the
     * reader (its records are read once, at the end, by ring_copy). */
    const char *refused =
        sp->hdr.clock_kind != ACT_CLOCK_MONOTONIC_RAW ? "TSC clock: read once the process has ended"
        : (sp->hdr.flags & ACT_SPOOL_F_RING) ? "ring spool: read once the process has ended"
                                             : NULL;
    if (refused) {
        act_rd_set_err(err, errlen, path, refused);
        close(fd);
        return ACT_E_UNSUPPORTED;
    }
    struct act_sp_live *l = calloc(1, sizeof(*l));
    size_t n_chunks = (sp->map_len - sp->hdr.header_size) / sp->hdr.chunk_size;
    if (sp->hdr.chunk_count > n_chunks)
        act_rd_problem(sp, "file holds %zu of the %u chunks its header declares (truncated file)",
                       n_chunks, sp->hdr.chunk_count);
    if (sp->hdr.chunk_count < n_chunks)
        n_chunks = sp->hdr.chunk_count;
    if (l) {
        l->chunks = calloc(n_chunks ? n_chunks : 1, sizeof(*l->chunks));
        l->n_windows = sp->map_len / LIVE_PAGE + 1;
        l->touched = calloc((l->n_windows + 7) / 8, 1);
    }
    if (!l || !l->chunks || !l->touched || act_rd_parse_cmdline(sp)) {
        free(l ? l->chunks : NULL);
        free(l ? l->touched : NULL);
        free(l);
        close(fd);
        act_rd_set_err(err, errlen, path, "out of memory");
        return ACT_E_NOMEM;
    }
    l->n_chunks = n_chunks;
    l->fd = fd;
    l->rd = (reader){.sp = sp, .survey = 1, .raw_min = UINT64_MAX};
    sp->live = l;
    sp->live_untouch = act_rd_live_untouch;
    sp->live_end = act_spool_live_end;
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
    int all = final || l->gap;
    l->gap = 0;
    if (final && !l->settle) {
        if (!(l->settle = calloc(1, sizeof(*l->settle))))
            return ACT_E_NOMEM;
        l->settle->fd = -1;
    }
    for (size_t i = 0; i < n; i++) {
        const live_chunk *lc = &l->chunks[i];
        if (!all && lc->idle >= LIVE_IDLE && (i + l->round) % LIVE_SWEEP)
            continue;
        if (live_scan_chunk(&l->rd, l, (uint32_t)i))
            return ACT_E_NOMEM;
    }
    if (live_ends(&l->rd, l, final) || (final && live_settle_chunks(l, n)))
        return ACT_E_NOMEM;
    if (final) { /* nobody writes any more: the header's counts are final */
        memcpy(&sp->hdr, sp->map, sizeof(sp->hdr));
        l->settle->hdr = sp->hdr; /* what act_spool_live_settled compares: the one used */
        /* act_spool_link_execs may have found it ended by exec already. */
        sp->sealed = (sp->hdr.flags & ACT_SPOOL_F_SEALED) != 0 || sp->ended_by_exec;
    }
    return 0;
}

/* Segments read whole are not looked at again: once they are most of
 * sp->segs (and enough to pay for the move), the rest moves to the front,
 * so that the array holds what is unread, not the run. */
#define LIVE_COMPACT_MIN 4096

static void live_compact(act_spool *sp, struct act_sp_live *l)
{
    size_t gone = l->seg;
    if (gone < LIVE_COMPACT_MIN || gone < sp->n_segs / 2)
        return;
    memmove(sp->segs, sp->segs + gone, (sp->n_segs - gone) * sizeof(*sp->segs));
    sp->n_segs -= gone;
    l->segs_gone += gone;
    l->seg = 0;
}

int act_spool_live_next(act_spool *sp, act_sp_rec *rec, int final)
{
    struct act_sp_live *l = sp->live;
    while (l && l->seg < sp->n_segs) {
        segment *sg = &sp->segs[l->seg];
        /* An earlier seq taken, its segment not seen ended yet: wait. */
        if (!final && sg->seq != l->next_seq) {
            l->gap = 1;
            return 0;
        }
        if (!l->off)
            l->off = sg->begin;
        int rc = seg_next(&l->rd, sg, &l->off, rec);
        if (rc)
            return rc;
        live_touch(sp, sg->begin, sg->end - sg->begin);
        sp->records[ACT_REC_SEGMENT]++; /* as read: what was read while the program ran */
        l->next_seq = sg->seq + 1;
        l->seg++;
        l->off = 0;
        live_compact(sp, l);
    }
    return 0;
}

void act_spool_live_end(act_spool *sp)
{
    struct act_sp_live *l = sp->live;
    if (!l)
        return;
    sp->records[ACT_REC_SEGMENT] = sp->n_segs + l->segs_gone;
    act_rd_reader_finish(sp, &l->rd);
    act_rd_settle_free(sp);
    sp->settle = l->settle; /* act_spool_live_settled's, until act_spool_close */
    if (sp->settle) {       /* which reads the file, mapping nothing */
        sp->settle->fd = l->fd;
        l->fd = -1;
    }
    free(l->open);
    free(l->chunks);
    free(l->touched);
    if (l->fd >= 0)
        close(l->fd);
    free(l);
    sp->live = NULL;
}

int act_spool_live_sealed(const act_spool *sp)
{
    const act_spool_header *mh = (const act_spool_header *)(const void *)sp->map;
    return mh && (__atomic_load_n(&mh->flags, __ATOMIC_ACQUIRE) & ACT_SPOOL_F_SEALED) != 0;
}

/* `len` bytes of the spool at `off`, read from the file: a look at each
 * chunk through the mapping would map its page's whole folio (2 MiB,
 * LIVE_PAGE), the launcher's memory growing with the chunks looked at. */
static int settle_read(const struct act_sp_settle *st, void *buf, size_t len, size_t off)
{
    return st->fd >= 0 && pread(st->fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -1;
}

/* Chunk c as the final scan left it: no magic and nothing parsed, or its
 * magic and the same fill. */
static int settle_chunk_same(const act_spool *sp, const settle_chunk *c)
{
    act_chunk_header h;
    size_t base = sp->hdr.header_size + (size_t)c->idx * sp->hdr.chunk_size;
    if (settle_read(sp->settle, &h, sizeof(h), base))
        return 0;
    return h.magic == ACT_CHUNK_MAGIC ? h.used == c->used : !h.magic && !c->used;
}

int act_spool_live_settled(const act_spool *sp)
{
    const struct act_sp_settle *st = sp->settle;
    act_spool_header h;
    if (!st || st->unsure || sp->live || settle_read(st, &h, sizeof(h), 0) ||
        memcmp(&st->hdr, &h, sizeof(h)))
        return 0;
    for (size_t i = 0; i < st->n_chunks; i++)
        if (!settle_chunk_same(sp, &st->chunks[i]))
            return 0;
    for (size_t i = 0; i < st->n_seqs; i++) {
        uint64_t seq;
        if (settle_read(st, &seq, sizeof(seq), st->seqs[i]) || seq != ACT_SEQ_OPEN)
            return 0;
    }
    return 1;
}

void act_spool_live_times(const act_spool *sp, uint64_t *first, uint64_t *last)
{
    const struct act_sp_live *l = sp->live;
    *first = l && l->rd.raw_max ? act_spool_ns(sp, l->rd.raw_min) : sp->first_ts;
    *last = l && l->rd.raw_max ? act_spool_ns(sp, l->rd.raw_max) : sp->last_ts;
}
