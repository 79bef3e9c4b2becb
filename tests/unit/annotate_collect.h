/*
 * annotate_collect.h -- for the annotation tests: walk a spool with the
 * independent walker (spool_walk.h) and collect annotation records with
 * their strings resolved through each thread's string table, so tests can
 * compare names byte for byte.
 */
#ifndef ACT_TEST_ANNOTATE_COLLECT_H
#define ACT_TEST_ANNOTATE_COLLECT_H

#include "spool_walk.h"

#define COLLECT_MAX_EVENTS  200000
#define COLLECT_MAX_THREADS 512
#define COLLECT_MAX_STRINGS 4096

typedef struct cstring {
    const char *p;
    uint32_t len;
} cstring;

typedef struct cevent {
    uint16_t kind;
    uint32_t serial;
    uint64_t ts;
    uint64_t id;     /* range id (START/END) */
    double value;    /* counter */
    cstring name;    /* name / metadata key / arg key */
    cstring value_s; /* metadata value / string arg */
    uint32_t aux;
    uint32_t is_json;
} cevent;

typedef struct collect {
    cevent *ev;
    size_t n;
    /* per serial: string id -> bytes (ids are dense from 1) */
    cstring str[COLLECT_MAX_THREADS][COLLECT_MAX_STRINGS];
    walk_stats ws;
} collect;

static inline cstring collect_str(collect *c, uint32_t serial, uint32_t id)
{
    cstring none = {NULL, 0};
    if (serial >= COLLECT_MAX_THREADS || id == 0 || id >= COLLECT_MAX_STRINGS)
        return none;
    return c->str[serial][id];
}

static inline void collect_cb(const act_rec_hdr *r, uint32_t serial, void *arg)
{
    collect *c = arg;
    if (r->kind == ACT_REC_STRING) {
        const act_rec_string *s = (const act_rec_string *)r;
        if (serial < COLLECT_MAX_THREADS && s->h.aux < COLLECT_MAX_STRINGS)
            c->str[serial][s->h.aux] = (cstring){(const char *)(s + 1), s->len};
        return;
    }
    if (r->kind == ACT_REC_SEGMENT || c->n >= COLLECT_MAX_EVENTS)
        return;
    cevent *e = &c->ev[c->n++];
    memset(e, 0, sizeof(*e));
    e->kind = r->kind;
    e->serial = serial;
    e->aux = r->aux;
    switch (r->kind) {
    case ACT_REC_RANGE_PUSH:
    case ACT_REC_RANGE_POP:
    case ACT_REC_MARK:
    case ACT_REC_CAPTURE:
    case ACT_REC_ERROR:
        e->ts = ((const act_rec_ts *)r)->ts;
        e->name = collect_str(c, serial, r->aux);
        break;
    case ACT_REC_RANGE_START:
    case ACT_REC_RANGE_END:
        e->ts = ((const act_rec_range_id *)r)->ts;
        e->id = ((const act_rec_range_id *)r)->id;
        e->name = collect_str(c, serial, r->aux);
        break;
    case ACT_REC_COUNTER:
        e->ts = ((const act_rec_counter *)r)->ts;
        e->value = ((const act_rec_counter *)r)->value;
        e->name = collect_str(c, serial, r->aux);
        break;
    case ACT_REC_METADATA: {
        const act_rec_metadata *m = (const act_rec_metadata *)r;
        e->name = collect_str(c, serial, m->h.aux);
        e->value_s = collect_str(c, serial, m->value);
        e->is_json = m->is_json;
        break;
    }
    case ACT_REC_ARG: {
        const act_rec_arg *a = (const act_rec_arg *)r;
        e->name = collect_str(c, serial, a->h.aux);
        e->is_json = a->type;
        e->id = a->v.u;
        if (a->type == ACT_RECARG_STR)
            e->value_s = collect_str(c, serial, (uint32_t)a->v.u);
        break;
    }
    case ACT_REC_THREAD: /* aux = serial (0: a name for OS thread `tid`) */
        e->id = ((const act_rec_thread *)r)->tid;
        e->name = collect_str(c, serial, ((const act_rec_thread *)r)->name);
        break;
    case ACT_REC_DEVICE_OP:
        e->id = ((const act_rec_device_op *)r)->corr;
        e->ts = ((const act_rec_device_op *)r)->end;
        break;
    default: break;
    }
}

/* Collect everything in `path`; the caller frees with collect_free(). */
static inline collect *collect_spool(const char *path)
{
    collect *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->ev = calloc(COLLECT_MAX_EVENTS, sizeof(cevent));
    if (!c->ev || spool_walk(path, &c->ws, collect_cb, c) != 0) {
        free(c->ev);
        free(c);
        return NULL;
    }
    return c;
}

static inline void collect_free(collect *c)
{
    if (!c)
        return;
    spool_unwalk(&c->ws);
    free(c->ev);
    free(c);
}

static inline size_t collect_count(const collect *c, uint16_t kind)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        n += c->ev[i].kind == kind;
    return n;
}

static inline int cstring_eq(cstring s, const char *want, size_t len)
{
    return s.p && s.len == len && memcmp(s.p, want, len) == 0;
}

#endif
