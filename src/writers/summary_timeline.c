/*
 * summary_timeline.c -- the summary of a built timeline (summary.h): its
 * slices added a batch at a time (act_summary_add_events, the summary
 * writer's batch), then the timeline's counters and OpenCL facts taken
 * and the table printed (act_summary_print_timeline). Apart from the
 * aggregator (summary.c) so that it calls the printer and the printer
 * calls it, never both ways.
 */
#include "summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "summary_cl.h"
#include "summary_impl.h"

static json_t *kind_obj(const uint64_t *c)
{
    json_t *o = json_object();
    for (int k = 1; k < ACT_REC_KIND_MAX; k++)
        json_object_set_new(o, act_rec_kind_name(k), json_integer((json_int_t)c[k]));
    return o;
}

/* The "acceltrace" object a trace of tl would carry: the timeline's
 * counters (the one table, act_tl_counters) and what its trace writer
 * found (act_chrome_stats: writers only read the timeline). */
json_t *act_summary_counters_of(const act_timeline *tl, uint64_t invalid_utf8, size_t errors)
{
    const act_tl_counts *c = &tl->counts;
    json_t *a = json_object();
    if (!a)
        return NULL;
    json_object_set_new(a, "dropped", kind_obj(c->dropped));
    json_object_set_new(a, "outside_window", kind_obj(c->outside_window));
    json_object_set_new(a, "callbacks",
                        json_pack("{s:I,s:I}", "pending", (json_int_t)c->callbacks_pending, "lost",
                                  (json_int_t)c->callbacks_lost));
    json_object_set_new(a, "skew",
                        json_pack("{s:I,s:I}", "device_before_launch", (json_int_t)c->skew,
                                  "max_ns", (json_int_t)c->skew_max_ns));
    for (size_t i = 0; i < act_tl_n_counters; i++)
        json_object_set_new(a, act_tl_counters[i].key,
                            json_integer((json_int_t)act_tl_counter_value(c, &act_tl_counters[i])));
    json_object_set_new(a, "invalid_utf8", json_integer((json_int_t)invalid_utf8));
    json_t *tr = json_array();
    for (size_t i = 0; i < tl->n_truncated; i++)
        json_array_append_new(tr, json_integer(tl->truncated_pids[i]));
    json_object_set_new(a, "truncated_processes", tr);
    json_t *er = json_array();
    for (size_t i = 0; i < tl->n_errors; i++)
        json_array_append_new(er, json_string(tl->errors[i] ? tl->errors[i] : ""));
    if (errors > tl->n_errors) { /* the writer's own lines are in the trace only */
        char more[96];
        snprintf(more, sizeof(more), "%zu more error lines in the trace", errors - tl->n_errors);
        json_array_append_new(er, json_string(more));
    }
    json_object_set_new(a, "errors", er);
    return a;
}

/* What the summary reads of an event's args: its External id (0: none)
 * and, for a device op, its "program" (an OpenCL kernel's; "" when none)
 * and "queued" (devices.c: us on the trace's axis; -1 when none). Each the
 * first arg of its key and type, found in one pass. */
typedef struct ev_args {
    uint64_t ext;
    act_str prog;
    double queued;
} ev_args;

#define KEY_IS(k, lit) ((k).n == sizeof(lit) - 1 && !memcmp((k).p, lit, sizeof(lit) - 1))

static ev_args args_of(const act_timeline *tl, const act_tl_event *e, int dev)
{
    ev_args o = {0, {"", 0}, -1};
    int ext = 0, prog = !dev, queued = !dev; /* found (or not wanted) */
    for (uint32_t i = 0; i < e->nargs && !(ext && prog && queued); i++) {
        const act_tl_arg *a = &tl->args[e->arg0 + i];
        if (!ext && a->type == ACT_ARG_U64 && KEY_IS(a->key, "External id")) {
            o.ext = a->v.u;
            ext = 1;
        } else if (!prog && a->type == ACT_ARG_STR && KEY_IS(a->key, "program")) {
            o.prog = a->v.s;
            prog = 1;
        } else if (!queued && a->type == ACT_ARG_F64 && KEY_IS(a->key, "queued")) {
            o.queued = a->v.d;
            queued = 1;
        }
    }
    return o;
}

/* Name ids already looked up in this batch, by the addresses and lengths
 * of the event's name and program: the builder interns its strings
 * (timeline/strtab.c), so a batch's events of one name share their bytes,
 * and the batch's strings stay in place while it is read, so equal
 * addresses and lengths are equal bytes. Saves hashing and comparing the
 * name a slice (issue 32 item 4). */
#define NAME_MEMO 16

typedef struct name_memo {
    const char *name, *prog;
    uint32_t n, pn, id;
    int dev, used;
} name_memo;

/* The key a device op is summed under (act_summary_op_key) and its id. */
static int name_id_slow(act_summary *s, act_str name, act_str prog, int dev, uint32_t *id)
{
    char key[1024];
    size_t len = act_summary_op_key(key, sizeof(key), name.p, name.n, prog.p, prog.n);
    return act_summary_name_id(s, len != name.n ? key : name.p, len, dev, id);
}

static int name_id(act_summary *s, name_memo *memo, act_str name, act_str prog, int dev,
                   uint32_t *id)
{
    uintptr_t h = ((uintptr_t)name.p ^ (uintptr_t)prog.p * 31u) * 0x9E3779B97F4A7C15ull;
    name_memo *m = &memo[(h >> 59 ^ (unsigned)dev) & (NAME_MEMO - 1)];
    if (m->used && m->name == name.p && m->n == name.n && m->prog == prog.p && m->pn == prog.n &&
        m->dev == dev) {
        *id = m->id;
        return 0;
    }
    if (name_id_slow(s, name, prog, dev, id))
        return ACT_E_NOMEM;
    *m = (name_memo){name.p, prog.p, name.n, prog.n, *id, dev, 1};
    return 0;
}

/* The builder's process-lifetime slice (one "cpu_op" per process, for the
 * TensorBoard plugin) is no host call: the summary leaves it out. */
#define ACT_PROCESS_SLICE "process lifetime"

static int is_process_slice_tl(const act_timeline *tl, const act_tl_event *e)
{
    if (e->cat != ACT_CAT_CPU_OP || e->nargs != 1)
        return 0;
    const act_tl_arg *a = &tl->args[e->arg0];
    return a->type == ACT_ARG_STR && act_str_is(a->key, "acceltrace") &&
           act_str_is(a->v.s, ACT_PROCESS_SLICE);
}

/* Event e's slice (and its delay and range) into s. */
static int add_event(act_summary *s, name_memo *memo, const act_timeline *tl, const act_tl_event *e,
                     int dev)
{
    ev_args a = args_of(tl, e, dev);
    double ts = (double)(e->ts - tl->base_ns) / 1000.0;
    uint32_t id;
    int rc = name_id(s, memo, e->name, a.prog, dev, &id);
    if (!rc)
        rc = act_summary_add_slice_id(s, id, dev, e->pid, e->tid, ts, (double)e->dur / 1000.0,
                                      a.ext);
    if (!rc && a.queued >= 0)
        rc = act_summary_add_delay_id(s, id, ts - a.queued);
    /* a host slice's id is its bare name's, the id a range is named by */
    if (!rc && !dev && a.ext && (e->cat == ACT_CAT_USER_ANNOTATION || e->cat == ACT_CAT_CPU_OP))
        rc = act_summary_add_range_id(s, a.ext, id);
    return rc;
}

int act_summary_add_events(act_summary *s, const act_timeline *tl)
{
    name_memo memo[NAME_MEMO] = {{0}};
    int rc = 0;
    for (size_t i = 0; i < tl->n_ev && !rc; i++) {
        const act_tl_event *e = &tl->ev[i];
        if (e->flags & ACT_EVF_ERROR)
            act_summary_cl_failure_event(&s->cl_failed, tl, e);
        if (e->ph != 'X')
            continue;
        int dev = act_tl_cat_is_device(tl, e->cat);
        if (dev < 0 || is_process_slice_tl(tl, e))
            continue;
        rc = add_event(s, memo, tl, e, dev);
    }
    return rc;
}

/* The tables the metadata carries (OpenCL leaks, calls not drawn), read
 * once. */
static void load_meta_tables(act_summary *s, const act_timeline *tl)
{
    for (size_t i = 0; i < tl->n_meta; i++) {
        const act_tl_meta *m = &tl->meta[i];
        json_t **into = !m->is_json                                    ? NULL
                        : act_str_is(m->key, "opencl_leaks")           ? &s->cl_leaks
                        : act_str_is(m->key, "opencl_calls_not_drawn") ? &s->cl_undrawn
                                                                       : NULL;
        if (into && !*into)
            *into = json_loadb(m->value.p, m->value.n, 0, NULL);
    }
}

/* The table to f with `counters` (NULL: printed as none). */
static void print_with(act_summary *s, const act_timeline *tl, json_t *counters, FILE *f,
                       int by_range)
{
    load_meta_tables(s, tl);
    act_summary_set_counters(s, counters);
    act_summary_print(s, f, by_range);
    act_summary_set_counters(s, NULL);
}

void act_summary_print_timeline(act_summary *s, const act_timeline *tl, uint64_t invalid_utf8,
                                size_t errors, FILE *f, int by_range)
{
    json_t *counters = act_summary_counters_of(tl, invalid_utf8, errors);
    print_with(s, tl, counters, f, by_range);
    json_decref(counters);
}

int act_summary_render_timeline(act_summary *s, const act_timeline *tl, uint64_t invalid_utf8,
                                size_t errors, int by_range, char **text, size_t *len,
                                json_t **counters)
{
    *text = NULL;
    *len = 0;
    *counters = act_summary_counters_of(tl, invalid_utf8, errors);
    FILE *m = *counters ? open_memstream(text, len) : NULL;
    if (m) {
        print_with(s, tl, *counters, m, by_range);
        int bad = ferror(m);
        if (fclose(m) == 0 && !bad)
            return 0;
    }
    free(*text);
    *text = NULL;
    *len = 0;
    json_decref(*counters);
    *counters = NULL;
    return ACT_E_NOMEM;
}

act_summary *act_summary_new_for(const act_timeline *tl)
{
    act_summary *s = act_summary_new();
    if (s && !tl->imported) /* the builder's lanes come in start order */
        act_summary_window(s, ACT_SUM_WINDOW_OWN);
    return s;
}

int act_summary_from_timeline(const act_timeline *tl, uint64_t invalid_utf8, size_t errors, FILE *f,
                              int by_range)
{
    act_summary *s = act_summary_new_for(tl);
    if (!s)
        return ACT_E_NOMEM;
    int rc = act_summary_add_events(s, tl);
    if (!rc)
        act_summary_print_timeline(s, tl, invalid_utf8, errors, f, by_range);
    act_summary_free(s);
    return rc;
}
