/*
 * outname.c -- `run -o` with an output name template: one trace per traced
 * process (see outname.h). Each process expands the template itself when
 * its spool opens (ACCELTRACE_OUTPUT_TEMPLATE, src/core/dist.c: its pid,
 * host, rank and environment) and records the name; a process that
 * recorded none is named here from its pid and the launcher's environment.
 */
#include "outname.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "core/dist.h"
#include "core/record.h"
#include "timeline/spool.h"

static const char *env_get(const char *name)
{
    return getenv(name);
}

int act_run_template_check(const char *tmpl, char *err, size_t errlen)
{
    char out[4096];
    act_dist_info d = {1, 0, 0, 1, "check"};
    return act_outname_expand(tmpl, 1, "host", &d, env_get, out, sizeof(out), err, errlen);
}

/* The name the process recorded (its ACT_OUTNAME_META_KEY record), or the
 * template expanded here. */
static void name_of(const act_spool *sp, const char *tmpl, char *out, size_t n)
{
    out[0] = '\0';
    act_spool_iter *it = act_spool_iter_new(sp);
    act_sp_rec rec;
    size_t klen = strlen(ACT_OUTNAME_META_KEY);
    while (it && act_spool_iter_next(it, &rec) == 1) {
        if (rec.r->kind != ACT_REC_METADATA || rec.s1.n != klen ||
            memcmp(rec.s1.p, ACT_OUTNAME_META_KEY, klen) || !rec.s2.n || rec.s2.n >= n)
            continue;
        snprintf(out, n, "%.*s", (int)rec.s2.n, rec.s2.p);
        break;
    }
    act_spool_iter_free(it);
    if (out[0])
        return;
    act_dist_info none = {0, -1, -1, -1, NULL};
    char err[128];
    if (act_outname_expand(tmpl, sp->hdr.pid, NULL, &none, env_get, out, n, err, sizeof(err)))
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

int act_run_export_each(const act_export_opts *o, const char *tmpl)
{
    char err[512];
    char **paths;
    size_t n;
    int rc = act_spool_dir_list(o->spool_dir, &paths, &n, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "acceltrace: %s\n", err);
        return rc;
    }
    char **used = calloc(n ? n : 1, sizeof(*used));
    size_t n_used = 0;
    int first = 0;
    for (size_t i = 0; used && i < n; i++) {
        act_spool sp;
        char name[4096];
        unsigned pid = 0;
        int orc = act_spool_open(&sp, paths[i], err, sizeof(err));
        if (orc == 0) {
            pid = sp.hdr.pid;
            name_of(&sp, tmpl, name, sizeof(name));
        }
        act_spool_close(&sp);
        if (orc) {
            fprintf(stderr, "acceltrace: %s\n", err);
            first = first ? first : orc;
            continue;
        }
        make_unique(name, sizeof(name), used, n_used, pid);
        used[n_used++] = strdup(name);
        act_export_opts one = *o;
        one.out_path = name;
        one.only_spool = paths[i];
        int erc = act_trace_export(&one);
        if (erc < 0 && erc != ACT_E_FORMAT)
            fprintf(stderr, "acceltrace: could not write the trace '%s': %s\n", name,
                    act_strerror(erc));
        else
            fprintf(stderr, "acceltrace: trace of pid %u written to %s\n", pid, name);
        first = first ? first : erc;
    }
    for (size_t i = 0; i < n_used; i++)
        free(used[i]);
    free(used);
    act_spool_dir_free(paths, n);
    return first;
}
