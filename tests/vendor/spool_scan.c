/*
 * spool_scan.c -- see spool_scan.h. The records come from the suite's one
 * independent spool walker (tests/unit/spool_walk.h); this file only
 * collects what the vendor tests ask about.
 */
#include "spool_scan.h"
#include "spool_walk.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct str_ent {
    uint32_t serial, id;
    char *s;
} str_ent;

static str_ent *strs;
static size_t n_strs, cap_strs;

static const char *str_get(uint32_t serial, uint32_t id)
{
    if (id == 0)
        return NULL;
    for (size_t i = 0; i < n_strs; i++)
        if (strs[i].serial == serial && strs[i].id == id)
            return strs[i].s;
    return "<missing string>";
}

#define PUSH(arr, n, val)                                                                          \
    do {                                                                                           \
        arr = realloc(arr, (n + 1) * sizeof(*arr));                                                \
        arr[n++] = val;                                                                            \
    } while (0)

static void add_string(uint32_t serial, const act_rec_hdr *h)
{
    const act_rec_string *r = (const void *)h;
    if (n_strs == cap_strs) {
        cap_strs = cap_strs ? cap_strs * 2 : 1024;
        strs = realloc(strs, cap_strs * sizeof(*strs));
    }
    str_ent e = {serial, h->aux, strndup((const char *)(r + 1), r->len)};
    strs[n_strs++] = e;
}

/* Range pushes are numbered per thread serial, as the recorder numbers
 * them. */
static uint32_t range_seq[65536];

/* One record, in the walker's order (segments in sequence order, so a
 * thread's strings come before their use). */
static void on_record(const act_rec_hdr *h, uint32_t serial, void *arg)
{
    spool_scan *s = arg;
    uint32_t *seq = &range_seq[serial & 0xffff];
    switch (h->kind) {
    case ACT_REC_STRING: add_string(serial, h); break;
    case ACT_REC_DEVICE_OP: {
        scan_op o = {.serial = serial};
        memcpy(&o.r, h, sizeof(o.r));
        o.name = str_get(serial, h->aux);
        o.detail = str_get(serial, o.r.detail);
        PUSH(s->ops, s->n_ops, o);
        break;
    }
    case ACT_REC_API: {
        scan_api a = {.serial = serial};
        memcpy(&a.r, h, sizeof(a.r));
        a.name = str_get(serial, h->aux);
        PUSH(s->apis, s->n_apis, a);
        break;
    }
    case ACT_REC_EXTCORR: {
        act_rec_extcorr e;
        memcpy(&e, h, sizeof(e));
        PUSH(s->ext, s->n_ext, e);
        break;
    }
    case ACT_REC_ERROR: {
        const char *m = str_get(serial, h->aux);
        PUSH(s->errors, s->n_errors, m);
        break;
    }
    case ACT_REC_CLOCK: {
        act_rec_clock c;
        memcpy(&c, h, sizeof(c));
        PUSH(s->clocks, s->n_clocks, c);
        break;
    }
    case ACT_REC_DEVICE: {
        act_rec_device d;
        memcpy(&d, h, sizeof(d));
        PUSH(s->devices, s->n_devices, d);
        break;
    }
    case ACT_REC_QUEUE: {
        act_rec_queue q;
        memcpy(&q, h, sizeof(q));
        PUSH(s->queues, s->n_queues, q);
        break;
    }
    case ACT_REC_METADATA: {
        const act_rec_metadata *m = (const void *)h;
        scan_meta e = {str_get(serial, h->aux), str_get(serial, m->value)};
        PUSH(s->meta, s->n_meta, e);
        break;
    }
    case ACT_REC_RANGE_PUSH: {
        scan_range r = {serial, ++*seq, str_get(serial, h->aux)};
        PUSH(s->ranges, s->n_ranges, r);
        break;
    }
    default: break;
    }
}

int spool_scan_read(const char *path, spool_scan *s)
{
    memset(s, 0, sizeof(*s));
    memset(range_seq, 0, sizeof(range_seq));
    n_strs = 0;
    walk_stats ws;
    int rc = spool_walk(path, &ws, on_record, s);
    if (ws.hdr)
        memcpy(&s->hdr, ws.hdr, sizeof(s->hdr));
    spool_unwalk(&ws);
    if (rc != 0)
        fprintf(stderr, "%s: not a spool\n", path);
    return rc;
}

void spool_scan_free(spool_scan *s)
{
    free(s->ops);
    free(s->apis);
    free(s->ext);
    free(s->errors);
    free(s->clocks);
    free(s->devices);
    free(s->queues);
    free(s->ranges);
    free(s->meta);
    memset(s, 0, sizeof(*s));
    /* The strings are shared by the one scan alive at a time. */
    for (size_t i = 0; i < n_strs; i++)
        free(strs[i].s);
    n_strs = 0;
}

const char *spool_scan_metadata(const spool_scan *s, const char *key)
{
    for (size_t i = 0; i < s->n_meta; i++)
        if (s->meta[i].key && strcmp(s->meta[i].key, key) == 0)
            return s->meta[i].value;
    return NULL;
}

const char *spool_scan_range_name(const spool_scan *s, uint64_t ext)
{
    uint32_t serial = (uint32_t)(ext >> 32), seq = (uint32_t)ext;
    for (size_t i = 0; i < s->n_ranges; i++)
        if (s->ranges[i].serial == serial && s->ranges[i].seq == seq)
            return s->ranges[i].name;
    return NULL;
}

const scan_api *spool_scan_launch_of(const spool_scan *s, const scan_op *op)
{
    const scan_api *best = NULL;
    for (size_t i = 0; i < s->n_apis; i++) {
        const scan_api *a = &s->apis[i];
        if (a->r.corr != op->r.corr || a->r.source != op->r.source || a->r.start > op->r.start)
            continue;
        if (!best || a->r.start > best->r.start)
            best = a;
    }
    return best;
}
