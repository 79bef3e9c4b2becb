/*
 * trace_import.c -- `acceltrace export -o OUT TRACE.json`: a trace file
 * (ours, torch.profiler's or any Chrome trace, plain or gzip) written again
 * in the format OUT's name picks (SQLite, Perfetto protobuf, JSON, gzip),
 * through the same writers a run's export uses (writers.c).
 *
 * The file is read as a stream (trace_stream.c), twice: first its
 * top-level members and its categories (the writers are opened knowing
 * them), then its events, each made a timeline event (timeline.h) and
 * handed to the writers in batches of ACT_TL_SINK_BATCH. The timeline is
 * marked imported: its members are written as they were, in place of a
 * run's facts.
 *
 * Design notes:
 *  I1. Times: ts and dur are microseconds; an event's time is
 *      llround(ts * 1000) ns, exact for ts below 2^53 / 1000 us (104 days
 *      of a trace's time), the range every trace we read has. A negative
 *      time is put at 0 and counted.
 *  I2. Strings (names, keys, string values) are interned: each distinct
 *      one is kept once until the writers close, which is what bounds
 *      memory (writers may refer to an event's strings until then).
 *  I3. What a timeline event cannot hold is counted and said on stderr,
 *      never dropped silently: members other than ph, cat, name, pid, tid,
 *      ts, dur, id, bp, s, cname and args; a cname other than "terrible";
 *      an instant's scope other than "t"; a pid or tid that is not an
 *      unsigned 32-bit integer or a string; an event without ph; args of
 *      an event beyond the 65 535 a timeline event holds. A lane
 *      named by a string gets a number and a name event (lane_named); a
 *      metadata event's ts, which no reader uses, is not kept.
 *  I4. Args keep their JSON type: integers, reals, booleans, null and
 *      strings as such; arrays and objects as their JSON text.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "core/record.h"
#include "timeline/strtab.h"
#include "timeline/timeline.h"
#include "timeline/u64map.h"
#include "trace_import.h"
#include "trace_stream.h"
#include "writers/writer.h"

typedef struct importer {
    act_timeline tl;
    act_strtab strs;       /* the interned strings, in the timeline's arena */
    act_u64map lanes;      /* a string pid (tid: with its pid) -> its number */
    uint32_t n_lanes, pid; /* lanes numbered; the pid of the event being read */
    act_writer_pick pick[ACT_WRITERS_MAX];
    act_writer *w[ACT_WRITERS_MAX];
    size_t n_pick, n_w;
    volatile const sig_atomic_t *cancel;
    uint64_t unkept;       /* I3: what was not kept */
    char first_unkept[64]; /* the first of them, named */
    uint64_t cats_dropped; /* events beyond ACT_CAT_EXTRA_MAX categories */
    uint64_t events;       /* events written */
} importer;

/* ---- strings -------------------------------------------------------------- */

/* `p` (n bytes) interned: one copy for the life of the import (I2). */
static act_str intern(importer *im, const char *p, size_t n)
{
    uint64_t id = act_strtab_find(&im->strs, p, n);
    if (id)
        return act_strtab_get(&im->strs, id);
    act_str s = act_tl_strdup(&im->tl, p, n);
    if (im->tl.err || !act_strtab_add(&im->strs, s)) {
        im->tl.err = ACT_E_NOMEM;
        return (act_str){"", 0};
    }
    return s;
}

/* A lane name's key in im->lanes: its string's number, and for a thread
 * the pid it belongs to. */
static uint64_t lane_key(importer *im, act_str name, int is_tid, uint32_t pid)
{
    uint64_t id = act_strtab_find(&im->strs, name.p, name.n);
    return id << 33 | (uint64_t)is_tid << 32 | (is_tid ? pid : 0);
}

static act_str intern_json_str(importer *im, const json_t *v)
{
    return intern(im, json_string_value(v), json_string_length(v));
}

/* A JSON value's compact text, interned (I4). */
static act_str intern_json_text(importer *im, const json_t *v)
{
    char *t = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY |
                                JSON_REAL_PRECISION(17));
    if (!t) {
        im->tl.err = ACT_E_NOMEM;
        return (act_str){"", 0};
    }
    act_str s = intern(im, t, strlen(t));
    free(t);
    return s;
}

static void unkept(importer *im, const char *what)
{
    if (!im->unkept++)
        snprintf(im->first_unkept, sizeof(im->first_unkept), "%s", what);
}

/* ---- the first pass: members and categories --------------------------------- */

/* The category named `name` (0: none): act_cat's, or an imported one. */
static int cat_of(importer *im, const char *name, int add)
{
    for (int c = 1; c < ACT_CAT_MAX; c++)
        if (!strcmp(act_cat_name(c), name))
            return c;
    act_timeline *tl = &im->tl;
    for (size_t i = 0; i < tl->n_cat_extra; i++)
        if (!strcmp(tl->cat_extra[i], name))
            return ACT_CAT_MAX + (int)i;
    if (!add || tl->n_cat_extra == ACT_CAT_EXTRA_MAX)
        return 0;
    tl->cat_extra[tl->n_cat_extra] = intern(im, name, strlen(name)).p;
    return ACT_CAT_MAX + (int)tl->n_cat_extra++;
}

static int on_member(void *ctx, const char *key, json_t *v)
{
    importer *im = ctx;
    act_str k = intern(im, key, strlen(key));
    if (json_is_string(v))
        act_tl_meta_add(&im->tl, k, intern_json_str(im, v), 0);
    else
        act_tl_meta_add(&im->tl, k, intern_json_text(im, v), ACT_META_JSON);
    if (!strcmp(key, "baseTimeNanoseconds") && json_is_integer(v) && json_integer_value(v) > 0)
        im->tl.base_wall_ns = (uint64_t)json_integer_value(v);
    return im->tl.err;
}

static int on_cat(void *ctx, size_t index, json_t *ev)
{
    (void)index;
    importer *im = ctx;
    json_t *c = json_object_get(ev, "cat");
    if (json_is_string(c))
        cat_of(im, json_string_value(c), 1);
    return im->tl.err;
}

/* ---- the second pass: events ------------------------------------------------ */

/* A time member in ns (I1); 0 when absent. */
static uint64_t time_ns(importer *im, const json_t *v, const char *what)
{
    if (!json_is_number(v))
        return 0;
    double ns = json_number_value(v) * 1000.0;
    if (!(ns >= 0)) {
        unkept(im, what);
        return 0;
    }
    return ns >= 1.8e19 ? UINT64_MAX : (uint64_t)llround(ns);
}

/* A lane named by a string (torch.profiler's "Spans", "Traces"): a number
 * of its own from ACT_IMPORT_NAMED_LANE down, and a process_name or
 * thread_name event that gives it its name, once (I3). */
#define ACT_IMPORT_NAMED_LANE 0xfffffff0u

static uint32_t lane_named(importer *im, const json_t *v, int is_tid, uint32_t pid)
{
    act_str name = intern_json_str(im, v);
    uint64_t key = lane_key(im, name, is_tid, pid), id;
    if (act_u64map_get(&im->lanes, key, &id))
        return (uint32_t)id;
    id = ACT_IMPORT_NAMED_LANE - im->n_lanes++;
    if (act_u64map_put(&im->lanes, key, id)) {
        im->tl.err = ACT_E_NOMEM;
        return 0;
    }
    act_tl_event *e =
        act_tl_event_add(&im->tl, 'M', 0, act_str_c(is_tid ? "thread_name" : "process_name"),
                         is_tid ? pid : (uint32_t)id, is_tid ? (uint32_t)id : 0, 0, 0);
    if (e) {
        e->flags |= is_tid ? 0 : ACT_EVF_NO_TID;
        act_tl_arg_str(&im->tl, "name", name);
    }
    return (uint32_t)id;
}

static uint32_t lane_of(importer *im, const json_t *v, const char *what)
{
    if (json_is_string(v))
        return lane_named(im, v, what[0] == 't', im->pid);
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;
    if (n < 0 || n > UINT32_MAX) {
        unkept(im, what);
        return 0;
    }
    return (uint32_t)n;
}

static uint64_t id_of(importer *im, const json_t *v)
{
    if (json_is_integer(v))
        return (uint64_t)json_integer_value(v);
    if (json_is_string(v)) {
        char *end;
        uint64_t id = strtoull(json_string_value(v), &end, 0);
        if (!*end && end != json_string_value(v))
            return id;
    }
    unkept(im, "id");
    return 0;
}

/* A string as the writers write an ACT_ARG_HEX ("0x" and lower-case digits,
 * no leading zero), read back as that number. */
static int hex_of(const char *s, uint64_t *v)
{
    size_t n = strlen(s);
    if (n < 3 || n > 18 || s[0] != '0' || s[1] != 'x' || (s[2] == '0' && n > 3))
        return 0;
    uint64_t x = 0;
    for (size_t i = 2; i < n; i++) {
        int d = s[i] >= '0' && s[i] <= '9'   ? s[i] - '0'
                : s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10
                                             : -1;
        if (d < 0)
            return 0;
        x = x << 4 | (uint64_t)d;
    }
    *v = x;
    return 1;
}

static void add_arg(importer *im, const char *key, const json_t *v)
{
    if (im->tl.n_ev && im->tl.ev[im->tl.n_ev - 1].nargs == UINT16_MAX) {
        unkept(im, "args beyond 65535"); /* act_tl_event.nargs holds no more */
        return;
    }
    act_str k = intern(im, key, strlen(key));
    act_tl_arg *a = act_tl_arg_add(&im->tl, k.p);
    if (!a)
        return;
    a->key = k;
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        a->type = ACT_ARG_U64;
        a->v.u = (uint64_t)json_integer_value(v);
    } else if (json_is_integer(v)) {
        a->type = ACT_ARG_I64;
        a->v.i = json_integer_value(v);
    } else if (json_is_real(v)) {
        a->type = ACT_ARG_F64;
        a->v.d = json_real_value(v);
    } else if (json_is_boolean(v)) {
        a->type = ACT_ARG_BOOL;
        a->v.u = json_is_true(v);
    } else if (json_is_string(v) && hex_of(json_string_value(v), &a->v.u)) {
        a->type = ACT_ARG_HEX; /* a pointer, as the writers write one */
    } else if (json_is_string(v)) {
        a->type = ACT_ARG_STR;
        a->v.s = intern_json_str(im, v);
    } else if (json_is_null(v)) {
        a->type = ACT_ARG_NULL;
    } else {
        a->type = ACT_ARG_JSON;
        a->v.s = intern_json_text(im, v);
    }
}

/* The members an event's fields take; any other is counted (I3). */
static int member_known(const char *k)
{
    static const char *const known[] = {"ph",  "cat", "name", "pid", "tid",   "ts",
                                        "dur", "id",  "bp",   "s",   "cname", "args"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (!strcmp(k, known[i]))
            return 1;
    return 0;
}

static void event_flags(importer *im, act_tl_event *e, json_t *ev)
{
    const char *bp = json_string_value(json_object_get(ev, "bp"));
    const char *cname = json_string_value(json_object_get(ev, "cname"));
    const char *scope = json_string_value(json_object_get(ev, "s"));
    if (bp && !strcmp(bp, "e"))
        e->flags |= ACT_EVF_BP_E;
    if (cname && !strcmp(cname, "terrible"))
        e->flags |= ACT_EVF_ERROR;
    else if (cname)
        unkept(im, "cname");
    if (scope && e->ph == 'i' && !strcmp(scope, "g"))
        e->flags |= ACT_EVF_SCOPE_G;
    else if (scope && e->ph == 'i' && !strcmp(scope, "p"))
        e->flags |= ACT_EVF_SCOPE_P;
    else if (scope && (e->ph != 'i' || strcmp(scope, "t")))
        unkept(im, "s");
    if (!json_object_get(ev, "tid"))
        e->flags |= ACT_EVF_NO_TID;
}

static int on_event(void *ctx, size_t index, json_t *ev)
{
    (void)index;
    importer *im = ctx;
    const char *ph = json_string_value(json_object_get(ev, "ph"));
    if (!ph || !ph[0]) {
        unkept(im, "an event without ph");
        return 0;
    }
    const char *cat = json_string_value(json_object_get(ev, "cat"));
    int c = cat ? cat_of(im, cat, 0) : 0;
    im->cats_dropped += cat && !c;
    json_t *name = json_object_get(ev, "name");
    act_str nm = json_is_string(name) ? intern_json_str(im, name) : (act_str){"", 0};
    im->pid = lane_of(im, json_object_get(ev, "pid"), "pid");
    uint32_t tid = json_object_get(ev, "tid") ? lane_of(im, json_object_get(ev, "tid"), "tid") : 0;
    act_tl_event *e =
        act_tl_event_add(&im->tl, ph[0], c, nm, im->pid, tid,
                         ph[0] == 'M' ? 0 : time_ns(im, json_object_get(ev, "ts"), "ts"),
                         time_ns(im, json_object_get(ev, "dur"), "dur"));
    if (!e)
        return im->tl.err ? im->tl.err : ACT_E_NOMEM;
    if (json_object_get(ev, "id"))
        e->id = id_of(im, json_object_get(ev, "id"));
    event_flags(im, e, ev);
    json_t *args = json_object_get(ev, "args");
    for (void *it = json_object_iter(args); it; it = json_object_iter_next(args, it))
        add_arg(im, json_object_iter_key(it), json_object_iter_value(it));
    for (void *it = json_object_iter(ev); it; it = json_object_iter_next(ev, it))
        if (!member_known(json_object_iter_key(it)))
            unkept(im, json_object_iter_key(it));
    return im->tl.err;
}

/* ---- the writers ------------------------------------------------------------ */

static int writers_batch(act_timeline *tl, void *ctx)
{
    importer *im = ctx;
    if (im->cancel && *im->cancel)
        return ACT_E_STATE;
    int rc = 0;
    for (size_t i = 0; i < im->n_w && !rc; i++)
        rc = im->w[i]->ops->batch(im->w[i], tl);
    im->events += tl->n_ev;
    tl->n_ev = tl->n_args = 0;
    return rc;
}

static int writers_open(importer *im, const act_import_opts *o, act_writer_found *found)
{
    im->n_pick = act_writers_pick(o->out_path, 0, im->pick);
    for (size_t i = 0; i < im->n_pick; i++) {
        act_writer_facts f = {.path = o->out_path,
                              .force = o->force,
                              .mode = o->mode,
                              .options = im->pick[i].options,
                              .child_status = -1,
                              .found = found};
        act_writer *w = NULL;
        char err[512] = "";
        int rc = im->pick[i].ops->open(&w, &im->tl, &f, err, sizeof(err));
        if (w)
            im->w[im->n_w++] = w;
        if (rc) {
            fprintf(stderr, "acceltrace: %s: %s\n", o->who, err[0] ? err : act_strerror(rc));
            return rc;
        }
    }
    return 0;
}

static int writers_close(importer *im, const act_import_opts *o, int rc)
{
    for (size_t i = 0; i < im->n_w; i++) {
        char err[512] = "";
        int crc = im->w[i]->ops->close(im->w[i], &im->tl, !rc, err, sizeof(err));
        if (!rc && crc) {
            rc = crc;
            fprintf(stderr, "acceltrace: %s: %s\n", o->who, err[0] ? err : act_strerror(crc));
        }
    }
    im->n_w = 0;
    return rc;
}

/* ---- the import ------------------------------------------------------------- */

static void say_unkept(const importer *im, const act_import_opts *o)
{
    const char *in = o->in_path;
    if (im->unkept)
        fprintf(stderr,
                "acceltrace: %s: %s: %llu event member%s could not be kept (the first: "
                "'%s'; docs/cli.md, export)\n",
                o->who, in, (unsigned long long)im->unkept, im->unkept == 1 ? "" : "s",
                im->first_unkept);
    if (im->cats_dropped)
        fprintf(stderr,
                "acceltrace: %s: %s: %llu events lost their category (more than %d "
                "categories)\n",
                o->who, in, (unsigned long long)im->cats_dropped, ACT_CAT_EXTRA_MAX);
}

static void importer_free(importer *im)
{
    act_timeline_free(&im->tl);
    act_strtab_free(&im->strs);
    act_u64map_free(&im->lanes);
}

int act_trace_import(const act_import_opts *o, uint64_t *events)
{
    static const char *const cat_only[] = {"cat", NULL};
    importer im = {.cancel = o->cancel};
    im.tl.imported = 1;
    char err[512];
    act_trace_stream_cb facts = {
        .member = on_member, .event = on_cat, .ctx = &im, .shallow = 1, .only = cat_only};
    int rc = act_trace_stream(o->in_path, &facts, err, sizeof(err));
    if (rc) {
        if (rc < 0)
            fprintf(stderr, "acceltrace: %s: %s\n", o->who, err);
        rc = rc < 0 ? ACT_E_FORMAT : im.tl.err ? im.tl.err : ACT_E_NOMEM;
        importer_free(&im);
        return rc;
    }
    act_writer_found found = {0};
    rc = writers_open(&im, o, &found);
    if (!rc) {
        im.tl.sink = writers_batch;
        im.tl.sink_ctx = &im;
        act_trace_stream_cb evs = {.event = on_event, .ctx = &im};
        int src = act_trace_stream(o->in_path, &evs, err, sizeof(err));
        if (src < 0)
            fprintf(stderr, "acceltrace: %s: %s\n", o->who, err);
        rc = src < 0 ? ACT_E_FORMAT : src ? (im.tl.err ? im.tl.err : ACT_E_STATE) : im.tl.err;
        if (!rc && im.tl.n_ev)
            rc = writers_batch(&im.tl, &im);
    }
    rc = writers_close(&im, o, rc);
    if (!rc)
        say_unkept(&im, o);
    if (events)
        *events = im.events;
    importer_free(&im);
    return rc;
}
