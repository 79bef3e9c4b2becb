/*
 * snapshot.c -- reads the device operations of an in-process session out of
 * its spool (see snapshot.h), for the torch.profiler plugin.
 *
 * The spool is read-only mapped and walked chunk by chunk, trusting only
 * each chunk's published fill (record.h). Three passes, so that the order of
 * chunks does not matter: strings first (ids are per thread serial and never
 * reused within one spool), then the descriptions and launches (devices,
 * queues, API calls by correlation id, external correlations), then the
 * device ops, joined to all of that. Malformed records end the walk of their
 * chunk and are counted, never trusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/rec_read.h"
#include "timeline/snapshot.h"
#include "timeline/u64map.h"

/* Keys of 0 (an API call that failed has no correlation id) are not
 * stored; act_u64map refuses them. */
static int map_put(act_u64map *m, uint64_t k, uint64_t v)
{
    return k ? act_u64map_put(m, k, v) : 0;
}

/* ---- the snapshot ------------------------------------------------------- */

struct act_snapshot {
    const char *base; /* the mapped spool */
    size_t size;
    const act_spool_header *hdr;
    char **strs; /* NUL-terminated copies, owned */
    size_t nstrs, capstrs;
    act_u64map str_by_key; /* (serial << 32 | id) -> index in strs + 1 */
    act_u64map tid_by_serial;
    act_u64map dev_by_handle;   /* device handle -> record offset */
    act_u64map queue_by_handle; /* queue handle -> record offset */
    act_u64map api_by_corr;     /* corr -> record offset */
    act_u64map api_serial;      /* corr -> serial of the launching thread */
    act_u64map ext_by_corr;     /* (source << 56) ^ corr -> ext */
    act_snap_op *ops;
    size_t nops, capops, pos;
    uint64_t skipped;
};

typedef int (*rec_fn)(act_snapshot *s, const act_rec_hdr *r, uint32_t serial);

/* Walk every published record of every chunk, naming its thread serial.
 * Damage is counted on the first pass only (every pass sees the same). */
static int walk(act_snapshot *s, rec_fn fn, int count_damage)
{
    const act_spool_header *h = s->hdr;
    uint64_t used = h->chunks_used < h->chunk_count ? h->chunks_used : h->chunk_count;
    for (uint64_t i = 0; i < used; i++) {
        size_t off = ACT_SPOOL_HEADER_SIZE + (size_t)i * h->chunk_size;
        if (off + h->chunk_size > s->size)
            break;
        const act_chunk_header *ch = (const act_chunk_header *)(s->base + off);
        if (ch->magic != ACT_CHUNK_MAGIC)
            continue;
        uint32_t fill = atomic_load_explicit((_Atomic uint32_t *)&ch->used, memory_order_acquire);
        if (fill > h->chunk_size - sizeof(*ch)) {
            s->skipped += (uint64_t)count_damage;
            continue;
        }
        const char *p = (const char *)(ch + 1), *end = p + fill;
        uint32_t serial = 0;
        while (p + sizeof(act_rec_hdr) <= end) {
            const act_rec_hdr *r = (const act_rec_hdr *)p;
            size_t sz = (size_t)r->size8 * 8;
            if (sz < sizeof(*r) || p + sz > end || r->kind >= ACT_REC_KIND_MAX) {
                s->skipped += (uint64_t)count_damage;
                break;
            }
            if (r->kind == ACT_REC_SEGMENT)
                serial = r->aux;
            int rc = fn(s, r, serial);
            if (rc < 0)
                return rc;
            p += sz;
        }
    }
    return 0;
}

/* Records too short for their kind are skipped and counted. */
#define NEED(s, r, type)                                                                           \
    do {                                                                                           \
        if ((size_t)(r)->size8 * 8 < sizeof(type)) {                                               \
            (s)->skipped++;                                                                        \
            return 0;                                                                              \
        }                                                                                          \
    } while (0)

static uint64_t skey(uint32_t serial, uint32_t id)
{
    return ((uint64_t)serial << 32) | id;
}

static int pass_strings(act_snapshot *s, const act_rec_hdr *r, uint32_t serial)
{
    if (r->kind != ACT_REC_STRING)
        return 0;
    NEED(s, r, act_rec_string);
    const act_rec_string *rs = (const act_rec_string *)r;
    if (sizeof(*rs) + rs->len > (size_t)r->size8 * 8) {
        s->skipped++;
        return 0;
    }
    if (s->nstrs == s->capstrs) {
        size_t ncap = s->capstrs ? s->capstrs * 2 : 256;
        char **n = realloc(s->strs, ncap * sizeof(*n));
        if (!n)
            return ACT_E_NOMEM;
        s->strs = n;
        s->capstrs = ncap;
    }
    char *copy = malloc(rs->len + 1);
    if (!copy)
        return ACT_E_NOMEM;
    memcpy(copy, rs + 1, rs->len);
    copy[rs->len] = '\0';
    s->strs[s->nstrs++] = copy;
    return map_put(&s->str_by_key, skey(serial, r->aux), s->nstrs);
}

static const char *str_of(const act_snapshot *s, uint32_t serial, uint32_t id)
{
    uint64_t idx;
    if (id && act_u64map_get(&s->str_by_key, skey(serial, id), &idx))
        return s->strs[idx - 1];
    return "";
}

static int pass_context(act_snapshot *s, const act_rec_hdr *r, uint32_t serial)
{
    uint64_t off = (uint64_t)((const char *)r - s->base);
    switch (r->kind) {
    case ACT_REC_THREAD:
        NEED(s, r, act_rec_thread);
        return map_put(&s->tid_by_serial, (uint64_t)r->aux + 1, ((const act_rec_thread *)r)->tid);
    case ACT_REC_DEVICE:
        NEED(s, r, act_rec_device);
        return map_put(&s->dev_by_handle, ((const act_rec_device *)r)->device + 1,
                       off | ((uint64_t)serial << 40));
    case ACT_REC_QUEUE:
        NEED(s, r, act_rec_queue);
        return map_put(&s->queue_by_handle, ((const act_rec_queue *)r)->queue + 1,
                       off | ((uint64_t)serial << 40));
    case ACT_REC_API: {
        NEED(s, r, act_rec_api);
        const act_rec_api *a = (const act_rec_api *)r;
        if (!a->corr)
            return 0;
        int rc = map_put(&s->api_by_corr, a->corr, off);
        return rc ? rc : map_put(&s->api_serial, a->corr, serial);
    }
    case ACT_REC_EXTCORR: {
        NEED(s, r, act_rec_extcorr);
        const act_rec_extcorr *e = (const act_rec_extcorr *)r;
        return map_put(&s->ext_by_corr, ((uint64_t)r->aux << 56) ^ e->corr, e->ext);
    }
    default: return 0;
    }
}

/* Spool timestamps -> timeline nanoseconds. */
static uint64_t to_ns(const act_spool_header *h, uint64_t ts)
{
    if (h->clock_kind != ACT_CLOCK_TSC || !ts)
        return ts;
    uint64_t dts = h->calib_ts[1] - h->calib_ts[0];
    if (!dts)
        return ts;
    double scale = (double)(h->calib_ns[1] - h->calib_ns[0]) / (double)dts;
    return h->calib_ns[0] + (uint64_t)((double)(int64_t)(ts - h->calib_ts[0]) * scale);
}

/* Fill the device and queue descriptions of `op`. Offsets carry the
 * writer's serial in bits 40.. so its strings can be resolved. */
static void describe(act_snapshot *s, act_snap_op *op)
{
    uint64_t v;
    if (act_u64map_get(&s->dev_by_handle, op->device + 1, &v)) {
        const act_rec_device *d = (const act_rec_device *)(s->base + (v & ((1ull << 40) - 1)));
        uint32_t serial = (uint32_t)(v >> 40);
        op->device_name = str_of(s, serial, d->h.aux);
        op->vendor = str_of(s, serial, d->vendor);
        op->device_index = d->index;
    }
    if (act_u64map_get(&s->queue_by_handle, op->queue + 1, &v)) {
        const act_rec_queue *q = (const act_rec_queue *)(s->base + (v & ((1ull << 40) - 1)));
        op->queue_label = str_of(s, (uint32_t)(v >> 40), q->h.aux);
    }
}

/* Join `op` to its launch: the API record with its correlation id. */
static void join_launch(act_snapshot *s, act_snap_op *op)
{
    uint64_t off, serial, tid, ext;
    if (op->corr && act_u64map_get(&s->api_by_corr, op->corr, &off)) {
        const act_rec_api *a = (const act_rec_api *)(s->base + off);
        act_u64map_get(&s->api_serial, op->corr, &serial);
        op->launch_name = str_of(s, (uint32_t)serial, a->h.aux);
        op->launch_start_ns = to_ns(s->hdr, a->start);
        op->launch_end_ns = to_ns(s->hdr, a->end);
        if (!op->ext)
            op->ext = a->ext;
        if (act_u64map_get(&s->tid_by_serial, serial + 1, &tid))
            op->launch_tid = (uint32_t)tid;
    }
    if (!op->ext && op->corr &&
        act_u64map_get(&s->ext_by_corr, ((uint64_t)op->source << 56) ^ op->corr, &ext))
        op->ext = ext;
}

static int pass_ops(act_snapshot *s, const act_rec_hdr *r, uint32_t serial)
{
    if (r->kind != ACT_REC_DEVICE_OP)
        return 0;
    NEED(s, r, act_rec_device_op);
    const act_rec_device_op *d = (const act_rec_device_op *)r;
    if (s->nops == s->capops) {
        size_t ncap = s->capops ? s->capops * 2 : 256;
        act_snap_op *n = realloc(s->ops, ncap * sizeof(*n));
        if (!n)
            return ACT_E_NOMEM;
        s->ops = n;
        s->capops = ncap;
    }
    act_snap_op *op = &s->ops[s->nops++];
    memset(op, 0, sizeof(*op));
    op->name = str_of(s, serial, r->aux);
    op->detail = str_of(s, serial, d->detail);
    op->vendor = op->device_name = op->queue_label = op->launch_name = "";
    op->kind = d->op;
    op->source = d->source;
    op->flags = d->flags;
    op->status = d->status;
    op->device = d->device;
    op->queue = d->queue;
    op->start_ns = to_ns(s->hdr, d->start);
    op->end_ns = to_ns(s->hdr, d->end);
    op->corr = d->corr;
    op->ext = d->ext;
    op->bytes = d->bytes;
    memcpy(op->gsize, d->gsize, sizeof(op->gsize));
    memcpy(op->lsize, d->lsize, sizeof(op->lsize));
    describe(s, op);
    join_launch(s, op);
    return 0;
}

static int op_cmp(const void *a, const void *b)
{
    const act_snap_op *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static int snapshot_map(act_snapshot *s, int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return ACT_E_IO;
    if ((size_t)st.st_size < ACT_SPOOL_HEADER_SIZE)
        return ACT_E_FORMAT;
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return ACT_E_IO;
    s->base = m;
    s->size = (size_t)st.st_size;
    s->hdr = m;
    const act_spool_header *h = s->hdr;
    if (h->magic != ACT_SPOOL_MAGIC || h->version != ACT_SPOOL_VERSION ||
        h->header_size != ACT_SPOOL_HEADER_SIZE || h->chunk_size <= sizeof(act_chunk_header) ||
        h->chunk_size % 8 != 0)
        return ACT_E_FORMAT;
    return 0;
}

static int snapshot_read(int fd, act_snapshot **out)
{
    act_snapshot *s = calloc(1, sizeof(*s));
    if (!s)
        return ACT_E_NOMEM;
    int rc = snapshot_map(s, fd);
    if (!rc)
        rc = walk(s, pass_strings, 1);
    if (!rc)
        rc = walk(s, pass_context, 0);
    if (!rc)
        rc = walk(s, pass_ops, 0);
    if (rc) {
        act_snapshot_close(s);
        return rc;
    }
    if (s->nops)
        qsort(s->ops, s->nops, sizeof(*s->ops), op_cmp);
    *out = s;
    return 0;
}

ACT_EXPORT int act_snapshot_open_fd(int fd, act_snapshot **out)
{
    if (!out)
        return ACT_E_INVAL;
    *out = NULL;
    if (fd < 0)
        return ACT_E_INVAL;
    return snapshot_read(fd, out);
}

ACT_EXPORT int act_snapshot_open(const char *spool_path, act_snapshot **out)
{
    if (!out)
        return ACT_E_INVAL;
    *out = NULL;
    if (!spool_path) {
        spool_path = act_recorder_path();
        if (!spool_path || !*spool_path)
            return ACT_E_DISABLED;
    }
    int fd = open(spool_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ACT_E_IO;
    int rc = snapshot_read(fd, out);
    close(fd); /* the mapping stays valid */
    return rc;
}

ACT_EXPORT int act_snapshot_next(act_snapshot *s, act_snap_op *op)
{
    if (!s || !op)
        return ACT_E_INVAL;
    if (s->pos >= s->nops)
        return 0;
    *op = s->ops[s->pos++];
    return 1;
}

ACT_EXPORT uint64_t act_snapshot_count(const act_snapshot *s)
{
    return s ? s->nops : 0;
}

ACT_EXPORT uint64_t act_snapshot_skipped(const act_snapshot *s)
{
    return s ? s->skipped : 0;
}

ACT_EXPORT void act_snapshot_close(act_snapshot *s)
{
    if (!s)
        return;
    if (s->base)
        munmap((void *)s->base, s->size);
    for (size_t i = 0; i < s->nstrs; i++)
        free(s->strs[i]);
    free(s->strs);
    act_u64map_free(&s->str_by_key);
    act_u64map_free(&s->tid_by_serial);
    act_u64map_free(&s->dev_by_handle);
    act_u64map_free(&s->queue_by_handle);
    act_u64map_free(&s->api_by_corr);
    act_u64map_free(&s->api_serial);
    act_u64map_free(&s->ext_by_corr);
    free(s->ops);
    free(s);
}

ACT_EXPORT uint64_t act_snapshot_current_ext(void)
{
    return act_range_current_ext();
}

ACT_EXPORT uint64_t act_snapshot_clock_now(void)
{
    return act_clock_now();
}

ACT_EXPORT const char *act_snapshot_path(void)
{
    return act_recorder_path();
}
