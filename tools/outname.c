/*
 * outname.c -- `run -o` with an output name template: one trace per traced
 * process (see outname.h). Each process expands the template itself when
 * its spool opens (ACCELTRACE_OUTPUT_TEMPLATE, src/core/dist.c: its pid,
 * host, rank and environment) and records the name; a process that
 * recorded none is named here from its pid and the launcher's environment.
 */
#include "outname.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/common.h"
#include "core/dist.h"
#include "core/record.h"
#include "timeline/spool.h"

static const char *env_get(const char *name)
{
    return getenv(name);
}

/* The part of every process's trace name that does not depend on the
 * process (%p, %r): the common prefix of two expansions for different
 * processes, %q{VAR} and %h as the launcher sees them (the program
 * inherits its environment). The directory is its part up to the last
 * '/'. Whether a file is in the way is known only at the end: a process
 * may set the variable of a %q{VAR} itself. */
int act_run_template_check(const char *tmpl, char *err, size_t errlen)
{
    char a[4096], b[4096], probe[4096];
    act_dist_info d1 = {1, 1, 1, 3, "check"}, d2 = {1, 2, 2, 3, "check"};
    if (act_outname_expand(tmpl, 1, NULL, &d1, env_get, a, sizeof(a), err, errlen) ||
        act_outname_expand(tmpl, 2, NULL, &d2, env_get, b, sizeof(b), err, errlen))
        return -1;
    size_t i = 0, dir = 0;
    for (; a[i] && a[i] == b[i]; i++)
        if (a[i] == '/')
            dir = i + 1;
    snprintf(probe, sizeof(probe), "%.*sx", (int)dir, a);
    return act_out_dir_probe(probe, err, errlen) ? -1 : 0;
}

static int meta_is(const act_sp_rec *rec, const char *key)
{
    size_t klen = strlen(key);
    return rec->r->kind == ACT_REC_METADATA && rec->s1.n == klen && !memcmp(rec->s1.p, key, klen);
}

/* The rank the process recorded in its distributedInfo, if any. */
static void rank_of(const act_sp_rec *rec, act_dist_info *d)
{
    json_t *o = json_loadb(rec->s2.p, rec->s2.n, 0, NULL);
    json_t *r = json_object_get(o, "rank");
    if (json_is_integer(r) && json_integer_value(r) >= 0 && json_integer_value(r) <= INT32_MAX) {
        d->known = 1;
        d->rank = (long)json_integer_value(r);
    }
    json_decref(o);
}

/* The name the process recorded (its ACT_OUTNAME_META_KEY record), or,
 * with `rename` or when it recorded none, the template expanded here for
 * it (its pid, its recorded rank, this host and environment). */
static void name_of(const act_spool *sp, const char *tmpl, int rename, char *out, size_t n)
{
    out[0] = '\0';
    act_dist_info d = {0, -1, -1, -1, NULL};
    act_spool_iter *it = act_spool_iter_new(sp);
    act_sp_rec rec;
    while (it && act_spool_iter_next(it, &rec) == 1 && !out[0]) {
        if (meta_is(&rec, "distributedInfo"))
            rank_of(&rec, &d);
        else if (!rename && meta_is(&rec, ACT_OUTNAME_META_KEY) && rec.s2.n && rec.s2.n < n)
            snprintf(out, n, "%.*s", (int)rec.s2.n, rec.s2.p);
    }
    act_spool_iter_free(it);
    if (out[0])
        return;
    char err[128];
    if (act_outname_expand(tmpl, sp->hdr.pid, NULL, &d, env_get, out, n, err, sizeof(err)))
        snprintf(out, n, "acceltrace.%u.trace.json", sp->hdr.pid);
}

/* A name already written by this run gets ".PID" before its ".json". */
static void make_unique(char *name, size_t n, char **used, size_t n_used, unsigned pid)
{
    for (size_t i = 0; i < n_used; i++) {
        if (strcmp(used[i], name))
            continue;
        char *ext = strstr(name, ".json");
        char tail[64] = "";
        if (ext) {
            snprintf(tail, sizeof(tail), "%s", ext);
            *ext = '\0';
        }
        size_t len = strlen(name);
        snprintf(name + len, n - len, ".%u%s", pid, tail);
        fprintf(stderr,
                "acceltrace: two processes expand the output template to the same name; "
                "pid %u writes %s\n",
                pid, name);
        return;
    }
}

/* Spool files whose traces were written go from a spool kept for the
 * others: the export command then writes exactly the missing ones. */
static void drop_written(char **written, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (unlink(written[i]) != 0 && errno != ENOENT)
            fprintf(stderr, "acceltrace: could not remove %s: %s\n", written[i], strerror(errno));
}

/* One process's trace; 0 written (ACT_E_FORMAT: with errors, or a spool
 * too broken to name a trace, said), or why not. *wrote: a trace was
 * written. Records of events are added to *events. */
static int export_one(const act_export_opts *o, const char *spool, const char *tmpl, int rename,
                      char **used, size_t *n_used, uint64_t *events, int *wrote)
{
    *wrote = 0;
    char err[512], name[4096];
    act_spool sp;
    unsigned pid = 0;
    int rc = act_spool_open(&sp, spool, err, sizeof(err));
    if (!rc) {
        pid = sp.hdr.pid;
        name_of(&sp, tmpl, rename, name, sizeof(name));
    }
    act_spool_close(&sp);
    if (rc) {
        fprintf(stderr, "acceltrace: %s\n", err);
        return rc;
    }
    make_unique(name, sizeof(name), used, *n_used, pid);
    if (!(used[(*n_used)++] = strdup(name)))
        return ACT_E_NOMEM;
    act_export_times t = {0};
    act_export_opts one = *o;
    one.out_path = name;
    one.only_spool = spool;
    one.times = &t;
    rc = act_trace_export(&one);
    *events += t.events;
    if (rc < 0 && rc != ACT_E_FORMAT && !(o->cancel && *o->cancel))
        fprintf(stderr, "acceltrace: the trace '%s' of pid %u was not written%s%s\n", name, pid,
                rc == ACT_E_IO ? "" : ": ", rc == ACT_E_IO ? "" : act_strerror(rc));
    else if ((*wrote = rc >= 0 || rc == ACT_E_FORMAT))
        fprintf(stderr, "acceltrace: trace of pid %u written to %s\n", pid, name);
    return rc;
}

int act_run_export_each(const act_export_opts *o, const char *tmpl, unsigned flags, int *n_missing)
{
    char err[512];
    char **paths;
    size_t n;
    *n_missing = 0;
    int rc = act_spool_dir_list(o->spool_dir, &paths, &n, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "acceltrace: %s\n", err);
        return rc;
    }
    char **used = calloc(n ? n : 1, sizeof(*used));
    char **written = calloc(n ? n : 1, sizeof(*written));
    size_t n_used = 0, n_written = 0;
    uint64_t events = 0;
    int worst = 0; /* the first trace not written, else ACT_E_FORMAT or 0 */
    for (size_t i = 0; i < n; i++) {
        int wrote = 0;
        int erc = !used || !written ? ACT_E_NOMEM
                  : o->cancel && *o->cancel
                      ? ACT_E_STATE /* the rest is not written either */
                      : export_one(o, paths[i], tmpl, (flags & ACT_EACH_RENAME) != 0, used, &n_used,
                                   &events, &wrote);
        if (wrote)
            written[n_written++] = paths[i];
        if (erc == 0 || erc == ACT_E_FORMAT) {
            worst = worst ? worst : erc;
        } else {
            ++*n_missing;
            worst = !worst || worst == ACT_E_FORMAT ? erc : worst;
        }
    }
    if (worst && worst != ACT_E_FORMAT && (flags & ACT_EACH_KEEP_MISSING))
        drop_written(written, n_written);
    if (o->times)
        o->times->events = events;
    for (size_t i = 0; i < n_used; i++)
        free(used[i]);
    free(used);
    free(written);
    act_spool_dir_free(paths, n);
    return worst;
}
