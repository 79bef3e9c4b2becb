/*
 * spool_check.c -- test helper: reads every spool of a directory with the
 * timeline's spool reader and checks the invariants the reliability tests
 * rely on, printing one JSON object of counts for the Python side:
 *
 *   {"spools":N,"sealed":N,"problems":N,"chunks_used":N,"chunk_count":N,
 *    "records":{kind:count},"dropped":{kind:count},
 *    "threads":[{"pid":p,"name":"r<t>","push":n,"pop":n,"counter":n,"bad":n}],
 *    "api":{name:count},"device_ops":{name:count},"pids":[...]}
 *
 * Per thread (segment serial) it checks that range pushes carry one name,
 * that pushes and pops alternate (depth 0/1, as conc_workload does), that
 * timestamps never go backwards and that counter "c<t>" values run
 * 0, 64, 128, ... in order: a torn, lost, duplicated or misplaced record
 * breaks one of these and is counted in "bad".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "timeline/spool.h"
#include "timeline/timeline.h"

#define MAXT 16384

typedef struct tstate {
    char name[16];
    uint64_t push, pop, counter, bad, depth, last_ts;
} tstate;

typedef struct namecount {
    char name[64];
    uint64_t n;
} namecount;

static tstate th[MAXT];
static char threads_json[4 << 20];
static size_t threads_len;

/* Append this spool's threads to threads_json. */
static void threads_flush(uint32_t pid)
{
    for (int i = 0; i < MAXT; i++) {
        const tstate *t = &th[i];
        if (!t->push && !t->pop && !t->counter)
            continue;
        size_t room = sizeof(threads_json) - threads_len;
        int w = snprintf(threads_json + threads_len, room,
                         "%s{\"pid\":%u,\"name\":\"%s\",\"push\":%llu,\"pop\":%llu,"
                         "\"counter\":%llu,\"bad\":%llu}",
                         threads_len ? "," : "", pid, t->name, (unsigned long long)t->push,
                         (unsigned long long)t->pop, (unsigned long long)t->counter,
                         (unsigned long long)(t->bad + (t->depth != 0)));
        if (w < 0 || (size_t)w >= room)
            abort();
        threads_len += (size_t)w;
    }
    memset(th, 0, sizeof(th)); /* serials are per process */
}
static namecount api[64], ops[64];

static void count_name(namecount *tab, act_str s)
{
    for (int i = 0; i < 64; i++) {
        if (!tab[i].name[0]) {
            snprintf(tab[i].name, sizeof(tab[i].name), "%.*s", (int)s.n, s.p);
        }
        if (strlen(tab[i].name) == s.n && !memcmp(tab[i].name, s.p, s.n)) {
            tab[i].n++;
            return;
        }
    }
}

static void check_ts(tstate *t, uint64_t ts)
{
    if (ts < t->last_ts)
        t->bad++;
    t->last_ts = ts;
}

static void check_rec(const act_sp_rec *r)
{
    if (r->serial >= MAXT)
        return;
    tstate *t = &th[r->serial];
    switch (r->r->kind) {
    case ACT_REC_RANGE_PUSH:
        if (!t->name[0])
            snprintf(t->name, sizeof(t->name), "%.*s", (int)(r->s1.n < 15 ? r->s1.n : 15), r->s1.p);
        else if (strlen(t->name) != r->s1.n || memcmp(t->name, r->s1.p, r->s1.n))
            t->bad++;
        if (t->depth++ != 0)
            t->bad++;
        check_ts(t, ((const act_rec_ts *)r->r)->ts);
        t->push++;
        break;
    case ACT_REC_RANGE_POP:
        if (t->depth-- != 1)
            t->bad++;
        check_ts(t, ((const act_rec_ts *)r->r)->ts);
        t->pop++;
        break;
    case ACT_REC_COUNTER: {
        const act_rec_counter *c = (const act_rec_counter *)r->r;
        if (r->s1.n < 2 || r->s1.p[0] != 'c' || t->depth != 1 ||
            c->value != (double)(t->counter * 64))
            t->bad++;
        check_ts(t, c->ts);
        t->counter++;
        break;
    }
    case ACT_REC_API: count_name(api, r->s1); break;
    case ACT_REC_DEVICE_OP: count_name(ops, r->s1); break;
    default: break;
    }
}

static void print_tab(const char *key, const namecount *tab)
{
    printf(",\"%s\":{", key);
    for (int i = 0; i < 64 && tab[i].name[0]; i++)
        printf("%s\"%s\":%llu", i ? "," : "", tab[i].name, (unsigned long long)tab[i].n);
    printf("}");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: spool_check DIR\n");
        return 2;
    }
    char err[512];
    char **paths;
    size_t n;
    if (act_spool_dir_list(argv[1], &paths, &n, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    uint64_t records[ACT_REC_KIND_MAX] = {0}, dropped[ACT_REC_KIND_MAX] = {0}, problems = 0;
    size_t sealed = 0;
    uint64_t chunks_used = 0, chunk_count = 0;
    printf("{\"pids\":[");
    for (size_t i = 0; i < n; i++) {
        act_spool sp;
        if (act_spool_open(&sp, paths[i], err, sizeof(err))) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        printf("%s%u", i ? "," : "", sp.hdr.pid);
        act_spool_iter *it = act_spool_iter_new(&sp);
        act_sp_rec rec;
        int rc = it ? 0 : ACT_E_NOMEM;
        while (it && (rc = act_spool_iter_next(it, &rec)) > 0)
            check_rec(&rec);
        act_spool_iter_free(it);
        if (rc < 0) {
            fprintf(stderr, "%s: out of memory\n", paths[i]);
            return 1;
        }
        for (int k = 0; k < ACT_REC_KIND_MAX; k++) {
            records[k] += sp.records[k];
            dropped[k] += sp.hdr.dropped[k];
        }
        problems += sp.n_problems;
        for (size_t e = 0; e < sp.n_errors; e++)
            fprintf(stderr, "%s\n", sp.errors[e]);
        sealed += sp.sealed != 0;
        chunks_used += sp.hdr.chunks_used;
        chunk_count += sp.hdr.chunk_count;
        threads_flush(sp.hdr.pid);
        act_spool_close(&sp);
    }
    act_spool_dir_free(paths, n);
    printf("],\"spools\":%zu,\"sealed\":%zu,\"problems\":%llu", n, sealed,
           (unsigned long long)problems);
    printf(",\"chunks_used\":%llu,\"chunk_count\":%llu", (unsigned long long)chunks_used,
           (unsigned long long)chunk_count);
    printf(",\"records\":{");
    for (int k = 1; k < ACT_REC_KIND_MAX; k++)
        printf("%s\"%s\":%llu", k > 1 ? "," : "", act_rec_kind_name(k),
               (unsigned long long)records[k]);
    printf("},\"dropped\":{");
    for (int k = 1; k < ACT_REC_KIND_MAX; k++)
        printf("%s\"%s\":%llu", k > 1 ? "," : "", act_rec_kind_name(k),
               (unsigned long long)dropped[k]);
    printf("}");
    print_tab("api", api);
    print_tab("device_ops", ops);
    printf(",\"threads\":[%s]", threads_json);
    printf("}\n");
    return 0;
}
