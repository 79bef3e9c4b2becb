/*
 * spool_dump.c -- test helper: the Python tests' view of spool files,
 * through the suite's one independent spool walker (tests/unit/
 * spool_walk.h), not the timeline reader, so a spool is checked until (and
 * besides) the trace builder.
 *
 *   spool_dump DIR              annotation records of every spool in DIR
 *   spool_dump --records FILE   the source records of one spool (API calls,
 *                               device ops, devices, queues, clocks, errors)
 *
 * One JSON line per record (strings as hex, so Python compares bytes),
 * after one line with the header's counters.
 */
#include <dirent.h>

#include "annotate_collect.h"

static void hex(const char *key, cstring s)
{
    printf(",\"%s\":\"", key);
    for (uint32_t i = 0; s.p && i < s.len; i++)
        printf("%02x", (unsigned char)s.p[i]);
    printf("\"");
}

static const char *kind_name(uint16_t k)
{
    static const char *names[] = {"pad",   "segment",   "thread",  "string",  "push",
                                  "pop",   "start",     "end",     "mark",    "counter",
                                  "api",   "device_op", "device",  "queue",   "metadata",
                                  "clock", "error",     "capture", "extcorr", "arg"};
    return k < sizeof(names) / sizeof(names[0]) ? names[k] : "unknown";
}

static int dump(const char *path)
{
    collect *c = collect_spool(path);
    if (!c)
        return -1;
    const act_spool_header *h = c->ws.hdr;
    printf("{\"kind\":\"header\",\"pid\":%u,\"flags\":%u,\"torn\":%llu,\"unbalanced_pops\":%llu",
           h->pid, h->flags, (unsigned long long)c->ws.torn,
           (unsigned long long)h->unbalanced_pops);
    printf(",\"outside\":{");
    for (int k = 0; k < ACT_REC_KIND_MAX; k++)
        printf("%s\"%s\":%llu", k ? "," : "", kind_name((uint16_t)k),
               (unsigned long long)h->outside_window[k]);
    printf("},\"dropped\":{");
    for (int k = 0; k < ACT_REC_KIND_MAX; k++)
        printf("%s\"%s\":%llu", k ? "," : "", kind_name((uint16_t)k),
               (unsigned long long)h->dropped[k]);
    printf("}}\n");
    for (size_t i = 0; i < c->n; i++) {
        const cevent *e = &c->ev[i];
        printf("{\"kind\":\"%s\",\"serial\":%u,\"aux\":%u,\"ts\":%llu,\"id\":%llu,\"value\":%.17g,"
               "\"type\":%u",
               kind_name(e->kind), e->serial, e->aux, (unsigned long long)e->ts,
               (unsigned long long)e->id, e->value, e->is_json);
        hex("name", e->name);
        hex("str", e->value_s);
        printf("}\n");
    }
    collect_free(c);
    return 0;
}

/* ---- --records: the source records of one spool ---------------------- */

typedef struct rec_strings {
    struct {
        uint32_t serial, id;
        cstring s;
    } * v;
    size_t n, cap;
} rec_strings;

static cstring rec_str(const rec_strings *t, uint32_t serial, uint32_t id)
{
    for (size_t i = t->n; id && i-- > 0;)
        if (t->v[i].serial == serial && t->v[i].id == id)
            return t->v[i].s;
    return (cstring){NULL, 0};
}

static void u64s(const char *key, const uint64_t *v, int n)
{
    printf(",\"%s\":[", key);
    for (int i = 0; i < n; i++)
        printf("%s%llu", i ? "," : "", (unsigned long long)v[i]);
    printf("]");
}

static void print_record(const act_rec_hdr *r, uint32_t serial, void *arg)
{
    rec_strings *t = arg;
    switch (r->kind) {
    case ACT_REC_STRING: {
        const act_rec_string *s = (const act_rec_string *)r;
        if (t->n == t->cap) {
            t->cap = t->cap ? t->cap * 2 : 256;
            t->v = realloc(t->v, t->cap * sizeof(*t->v));
        }
        t->v[t->n].serial = serial;
        t->v[t->n].id = r->aux;
        t->v[t->n++].s = (cstring){(const char *)(s + 1), s->len};
        return;
    }
    case ACT_REC_API: {
        const act_rec_api *a = (const act_rec_api *)r;
        printf("{\"kind\":\"api\",\"thread\":%u,\"start\":%llu,\"end\":%llu,\"corr\":%llu,"
               "\"ext\":%llu,\"result\":%d,\"source\":%u",
               serial, (unsigned long long)a->start, (unsigned long long)a->end,
               (unsigned long long)a->corr, (unsigned long long)a->ext, a->result, a->source);
        break;
    }
    case ACT_REC_DEVICE_OP: {
        const act_rec_device_op *o = (const act_rec_device_op *)r;
        printf("{\"kind\":\"device_op\",\"thread\":%u,\"op\":%u,\"source\":%u,\"flags\":%u,"
               "\"status\":%d,\"device\":%llu,\"queue\":%llu,\"queued\":%llu,\"submit\":%llu,"
               "\"start\":%llu,\"end\":%llu,\"corr\":%llu,\"ext\":%llu,\"bytes\":%llu",
               serial, o->op, o->source, o->flags, o->status, (unsigned long long)o->device,
               (unsigned long long)o->queue, (unsigned long long)o->queued,
               (unsigned long long)o->submit, (unsigned long long)o->start,
               (unsigned long long)o->end, (unsigned long long)o->corr, (unsigned long long)o->ext,
               (unsigned long long)o->bytes);
        u64s("gsize", o->gsize, 3);
        u64s("lsize", o->lsize, 3);
        hex("detail", rec_str(t, serial, o->detail));
        break;
    }
    case ACT_REC_DEVICE: {
        const act_rec_device *d = (const act_rec_device *)r;
        printf("{\"kind\":\"device\",\"device\":%llu,\"source\":%u,\"index\":%u",
               (unsigned long long)d->device, d->source, d->index);
        hex("vendor", rec_str(t, serial, d->vendor));
        break;
    }
    case ACT_REC_QUEUE: {
        const act_rec_queue *q = (const act_rec_queue *)r;
        printf("{\"kind\":\"queue\",\"queue\":%llu,\"device\":%llu,\"properties\":%llu",
               (unsigned long long)q->queue, (unsigned long long)q->device,
               (unsigned long long)q->properties);
        break;
    }
    case ACT_REC_CLOCK: {
        const act_rec_clock *c = (const act_rec_clock *)r;
        printf("{\"kind\":\"clock\",\"device\":%llu,\"offset\":%lld,\"error\":%lld",
               (unsigned long long)c->device, (long long)c->offset_ns, (long long)c->error_ns);
        break;
    }
    case ACT_REC_ERROR: printf("{\"kind\":\"error\""); break;
    default: return;
    }
    hex("name", rec_str(t, serial, r->aux));
    printf("}\n");
}

static int dump_records(const char *path)
{
    walk_stats ws;
    rec_strings t = {0};
    if (spool_walk(path, &ws, NULL, NULL) != 0) {
        spool_unwalk(&ws);
        fprintf(stderr, "%s: not a spool\n", path);
        return 1;
    }
    const act_spool_header *h = ws.hdr;
    printf("{\"kind\":\"header\",\"pid\":%u,\"flags\":%u,\"torn\":%llu,\"pending\":%llu,"
           "\"lost\":%llu",
           h->pid, h->flags, (unsigned long long)ws.torn, (unsigned long long)h->callbacks_pending,
           (unsigned long long)h->callbacks_lost);
    u64s("dropped", h->dropped, ACT_REC_KIND_MAX);
    u64s("outside", h->outside_window, ACT_REC_KIND_MAX);
    printf("}\n");
    spool_unwalk(&ws);
    int rc = spool_walk(path, &ws, print_record, &t);
    spool_unwalk(&ws);
    free(t.v);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--records"))
        return dump_records(argv[2]);
    if (argc != 2) {
        fprintf(stderr, "usage: spool_dump DIR | spool_dump --records FILE\n");
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d)
        return 1;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".acts"))
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", argv[1], e->d_name);
        if (dump(path) != 0)
            rc = 1;
    }
    closedir(d);
    return rc;
}
