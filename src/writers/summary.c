/*
 * summary.c -- the summary table (see summary.h). Slices are collected,
 * sorted by (group, name) to aggregate and by (group, lane, start) to
 * measure busy time; counters come from an "acceltrace" metadata object,
 * which for a built timeline is made here from its counts.
 */
#include "summary.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acceltrace.h"
#include "json_escape.h"
#include "summary_cl.h"

typedef struct sslice {
    const char *name;
    size_t len;
    uint64_t lane, ext;
    double ts, dur;
    int device;
} sslice;

typedef struct srange {
    uint64_t ext;
    const char *name;
    size_t len;
} srange;

struct act_summary {
    sslice *sl;
    size_t n, cap;
    srange *rg;
    size_t n_rg, cap_rg;
    json_t *counters;
    json_t *cl_failed; /* OpenCL section (summary_cl.c): {name: {error: n}} */
    json_t *cl_leaks;  /* the trace's "opencl_leaks" (owned) */
};

typedef struct row {
    const char *name;
    size_t len;
    uint64_t count;
    double total, min, max;
} row;

act_summary *act_summary_new(void)
{
    return calloc(1, sizeof(act_summary));
}

void act_summary_free(act_summary *s)
{
    if (!s)
        return;
    free(s->sl);
    free(s->rg);
    json_decref(s->cl_failed);
    json_decref(s->cl_leaks);
    free(s);
}

int act_summary_add_slice(act_summary *s, const char *name, size_t len, int device, uint64_t lane,
                          double ts_us, double dur_us, uint64_t ext)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 1024;
        sslice *ns = realloc(s->sl, nc * sizeof(*ns));
        if (!ns)
            return ACT_E_NOMEM;
        s->sl = ns;
        s->cap = nc;
    }
    if (!isfinite(dur_us) || dur_us < 0)
        dur_us = 0;
    s->sl[s->n++] = (sslice){name, len, lane, ext, ts_us, dur_us, device != 0};
    return 0;
}

int act_summary_add_range(act_summary *s, uint64_t ext, const char *name, size_t len)
{
    if (s->n_rg == s->cap_rg) {
        size_t nc = s->cap_rg ? s->cap_rg * 2 : 256;
        srange *nr = realloc(s->rg, nc * sizeof(*nr));
        if (!nr)
            return ACT_E_NOMEM;
        s->rg = nr;
        s->cap_rg = nc;
    }
    s->rg[s->n_rg++] = (srange){ext, name, len};
    return 0;
}

void act_summary_set_counters(act_summary *s, json_t *acceltrace)
{
    s->counters = acceltrace;
}

/* ---- aggregation ------------------------------------------------------ */

static int name_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an < bn ? -1 : an > bn);
}

static int by_name(const void *a, const void *b)
{
    const sslice *x = a, *y = b;
    if (x->device != y->device)
        return x->device - y->device;
    return name_cmp(x->name, x->len, y->name, y->len);
}

static int by_lane(const void *a, const void *b)
{
    const sslice *x = a, *y = b;
    if (x->device != y->device)
        return x->device - y->device;
    if (x->lane != y->lane)
        return x->lane < y->lane ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int by_total(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return name_cmp(x->name, x->len, y->name, y->len);
}

/* Union of slice intervals per lane, summed over lanes, for one group. */
static double busy_time(sslice *sl, size_t n, int device, size_t *lanes)
{
    if (n) /* qsort's pointer must not be NULL, even for 0 items */
        qsort(sl, n, sizeof(*sl), by_lane);
    double busy = 0, cur_s = 0, cur_e = 0;
    uint64_t lane = 0;
    int open = 0;
    *lanes = 0;
    for (size_t i = 0; i < n; i++) {
        if (sl[i].device != device)
            continue;
        double s = sl[i].ts, e = sl[i].ts + sl[i].dur;
        if (!open || sl[i].lane != lane || s > cur_e) {
            if (open)
                busy += cur_e - cur_s;
            if (!open || sl[i].lane != lane)
                (*lanes)++;
            lane = sl[i].lane;
            cur_s = s;
            cur_e = e;
            open = 1;
        } else if (e > cur_e) {
            cur_e = e;
        }
    }
    if (open)
        busy += cur_e - cur_s;
    return busy;
}

static size_t aggregate(sslice *sl, size_t n, int device, row *rows)
{
    if (n)
        qsort(sl, n, sizeof(*sl), by_name);
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        if (sl[i].device != device)
            continue;
        if (!nr || name_cmp(rows[nr - 1].name, rows[nr - 1].len, sl[i].name, sl[i].len))
            rows[nr++] = (row){sl[i].name, sl[i].len, 0, 0, sl[i].dur, sl[i].dur};
        row *r = &rows[nr - 1];
        r->count++;
        r->total += sl[i].dur;
        if (sl[i].dur < r->min)
            r->min = sl[i].dur;
        if (sl[i].dur > r->max)
            r->max = sl[i].dur;
    }
    if (nr)
        qsort(rows, nr, sizeof(*rows), by_total);
    return nr;
}

/* ---- printing --------------------------------------------------------- */

#define NAME_W 48

/* Names go on one line of a terminal: control bytes and invalid UTF-8
 * become '?', long names are cut (on a character boundary) with "...". */
static void print_name(FILE *f, const char *name, size_t len)
{
    char buf[NAME_W * 4 + 4];
    size_t o = 0, cols = 0, i = 0;
    while (i < len && cols < NAME_W - 3) {
        unsigned char c = (unsigned char)name[i];
        size_t skip = 1, n = act_utf8_seq((const unsigned char *)name + i, len - i, &skip);
        if (!n || c < 0x20 || c == 0x7f) {
            buf[o++] = '?';
            i += n ? n : skip;
        } else {
            memcpy(buf + o, name + i, n);
            o += n;
            i += n;
        }
        cols++;
    }
    if (i < len) {
        memcpy(buf + o, "...", 3);
        o += 3;
        cols += 3;
    }
    buf[o] = '\0';
    fprintf(f, "  %s%*s", o ? buf : "(unnamed)", (int)(NAME_W - (o ? cols : 9)), "");
}

static void print_table(FILE *f, const char *title, const row *rows, size_t nr, double busy,
                        size_t lanes)
{
    fprintf(f, "%s: %zu names, busy %.3f us on %zu lane%s\n", title, nr, busy, lanes,
            lanes == 1 ? "" : "s");
    if (!nr) {
        fprintf(f, "  (none)\n");
        return;
    }
    fprintf(f, "  %-*s %8s %14s %12s %12s %12s %7s\n", NAME_W, "name", "count", "total us",
            "mean us", "min us", "max us", "busy%");
    for (size_t i = 0; i < nr; i++) {
        const row *r = &rows[i];
        print_name(f, r->name, r->len);
        fprintf(f, " %8llu %14.3f %12.3f %12.3f %12.3f %6.1f%%\n", (unsigned long long)r->count,
                r->total, r->total / (double)r->count, r->min, r->max,
                busy > 0 ? 100.0 * r->total / busy : 0.0);
    }
}

static int range_cmp(const void *a, const void *b)
{
    const srange *x = a, *y = b;
    return x->ext < y->ext ? -1 : x->ext > y->ext;
}

static const srange *find_range(const act_summary *s, uint64_t ext)
{
    size_t lo = 0, hi = s->n_rg;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->rg[mid].ext == ext)
            return &s->rg[mid];
        if (s->rg[mid].ext < ext)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Device time per launching range, aggregated by range name. */
static void print_by_range(act_summary *s, FILE *f, double busy)
{
    if (s->n_rg)
        qsort(s->rg, s->n_rg, sizeof(*s->rg), range_cmp);
    sslice *tmp = malloc((s->n ? s->n : 1) * sizeof(*tmp));
    row *rows = malloc((s->n ? s->n : 1) * sizeof(*rows));
    if (!tmp || !rows) {
        free(tmp);
        free(rows);
        fprintf(f, "device time by range: out of memory\n");
        return;
    }
    static const char none[] = "(no range)";
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!s->sl[i].device)
            continue;
        const srange *r = s->sl[i].ext ? find_range(s, s->sl[i].ext) : NULL;
        tmp[m] = s->sl[i];
        tmp[m].name = r ? r->name : none;
        tmp[m].len = r ? r->len : sizeof(none) - 1;
        m++;
    }
    size_t nr = aggregate(tmp, m, 1, rows);
    print_table(f, "Device time by launching range", rows, nr, busy, 0);
    free(tmp);
    free(rows);
}

static uint64_t jnum(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static void print_kind_counts(FILE *f, const char *label, json_t *o)
{
    uint64_t total = 0;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) total += json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
    fprintf(f, "  %-34s %llu", label, (unsigned long long)total);
    if (total) {
        const char *sep = " (";
        json_object_foreach(o, k, v)
        {
            if (json_is_integer(v) && json_integer_value(v) > 0) {
                fprintf(f, "%s%s %lld", sep, k, (long long)json_integer_value(v));
                sep = ", ";
            }
        }
        fprintf(f, ")");
    }
    fprintf(f, "\n");
}

static void print_counters(FILE *f, json_t *a)
{
    if (!json_is_object(a)) {
        fprintf(f, "Counters: none in this trace (not written by acceltrace)\n");
        return;
    }
    fprintf(f, "Counters:\n");
    print_kind_counts(f, "dropped records", json_object_get(a, "dropped"));
    print_kind_counts(f, "outside the capture window", json_object_get(a, "outside_window"));
    json_t *cb = json_object_get(a, "callbacks");
    fprintf(f, "  %-34s %llu pending, %llu lost\n", "device callbacks outstanding",
            (unsigned long long)jnum(cb, "pending"), (unsigned long long)jnum(cb, "lost"));
    json_t *sk = json_object_get(a, "skew");
    fprintf(f, "  %-34s %llu (max %.3f us)\n", "device start before host launch",
            (unsigned long long)jnum(sk, "device_before_launch"),
            (double)jnum(sk, "max_ns") / 1000.0);
    static const struct {
        const char *key, *label;
    } plain[] = {
        {"unbalanced_pops", "unbalanced range pops"},
        {"unclosed_ranges", "ranges left open"},
        {"negative_durations", "negative durations"},
        {"nesting_violations", "host nesting violations"},
        {"device_ops_without_times", "device ops without timestamps"},
        {"unlinked_device_ops", "device ops without host launch"},
        {"strings_truncated", "strings truncated"},
        {"invalid_utf8", "invalid UTF-8 sequences replaced"},
    };
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
        fprintf(f, "  %-34s %llu\n", plain[i].label, (unsigned long long)jnum(a, plain[i].key));
    json_t *tr = json_object_get(a, "truncated_processes");
    fprintf(f, "  %-34s %zu", "truncated processes", json_array_size(tr));
    size_t i;
    json_t *v;
    json_array_foreach(tr, i, v)
        fprintf(f, "%s%lld", i ? ", " : " (pid ", (long long)json_integer_value(v));
    fprintf(f, "%s\n", json_array_size(tr) ? ")" : "");
    fprintf(f, "  %-34s %zu\n", "errors", json_array_size(json_object_get(a, "errors")));
}

/* The OpenCL section: builds are the host calls that build programs. */
static void print_opencl(const act_summary *s, FILE *f)
{
    uint64_t builds = 0;
    double build_us = 0;
    for (size_t i = 0; i < s->n; i++) {
        const sslice *x = &s->sl[i];
        if (!x->device && ((x->len == 14 && !memcmp(x->name, "clBuildProgram", 14)) ||
                           (x->len == 16 && !memcmp(x->name, "clCompileProgram", 16)) ||
                           (x->len == 13 && !memcmp(x->name, "clLinkProgram", 13)))) {
            builds++;
            build_us += x->dur;
        }
    }
    act_summary_cl_print(f, s->cl_failed, s->cl_leaks, builds, build_us);
}

void act_summary_print(act_summary *s, FILE *f, int by_range)
{
    size_t dlanes = 0, hlanes = 0;
    double dbusy = busy_time(s->sl, s->n, 1, &dlanes);
    double hbusy = busy_time(s->sl, s->n, 0, &hlanes);
    row *rows = malloc((s->n ? s->n : 1) * sizeof(*rows));
    if (!rows) {
        fprintf(f, "summary: out of memory\n");
        return;
    }
    size_t nr = aggregate(s->sl, s->n, 1, rows);
    print_table(f, "Device ops", rows, nr, dbusy, dlanes);
    nr = aggregate(s->sl, s->n, 0, rows);
    print_table(f, "Host calls", rows, nr, hbusy, hlanes);
    free(rows);
    if (by_range)
        print_by_range(s, f, dbusy);
    print_counters(f, s->counters);
    print_opencl(s, f);
}

/* ---- from a built timeline -------------------------------------------- */

static json_t *kind_obj(const uint64_t *c)
{
    json_t *o = json_object();
    for (int k = 1; k < ACT_REC_KIND_MAX; k++)
        json_object_set_new(o, act_rec_kind_name(k), json_integer((json_int_t)c[k]));
    return o;
}

static json_t *counters_of(const act_timeline *tl)
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
    json_object_set_new(a, "unbalanced_pops", json_integer((json_int_t)c->unbalanced_pops));
    json_object_set_new(a, "unclosed_ranges", json_integer((json_int_t)c->unclosed_ranges));
    json_object_set_new(a, "negative_durations", json_integer((json_int_t)c->negative_durations));
    json_object_set_new(a, "nesting_violations", json_integer((json_int_t)c->nesting_violations));
    json_object_set_new(a, "device_ops_without_times",
                        json_integer((json_int_t)c->device_ops_without_times));
    json_object_set_new(a, "unlinked_device_ops", json_integer((json_int_t)c->unlinked_device_ops));
    json_object_set_new(a, "strings_truncated", json_integer((json_int_t)c->strings_truncated));
    json_object_set_new(a, "invalid_utf8", json_integer((json_int_t)c->invalid_utf8));
    json_t *tr = json_array();
    for (size_t i = 0; i < tl->n_truncated; i++)
        json_array_append_new(tr, json_integer(tl->truncated_pids[i]));
    json_object_set_new(a, "truncated_processes", tr);
    json_t *er = json_array();
    for (size_t i = 0; i < tl->n_errors; i++)
        json_array_append_new(er, json_string(""));
    json_object_set_new(a, "errors", er);
    return a;
}

static uint64_t arg_ext(const act_timeline *tl, const act_tl_event *e)
{
    for (uint32_t i = 0; i < e->nargs; i++) {
        const act_tl_arg *a = &tl->args[e->arg0 + i];
        if (a->type == ACT_ARG_U64 && a->key.n == 11 && !memcmp(a->key.p, "External id", 11))
            return a->v.u;
    }
    return 0;
}

int act_summary_add_events(act_summary *s, const act_timeline *tl)
{
    int rc = 0;
    for (size_t i = 0; i < tl->n_ev && !rc; i++) {
        const act_tl_event *e = &tl->ev[i];
        if (e->flags & ACT_EVF_ERROR)
            act_summary_cl_failure_event(&s->cl_failed, tl, e);
        if (e->ph != 'X')
            continue;
        int dev = act_cat_is_device_name(act_cat_name(e->cat));
        if (dev < 0)
            continue;
        uint64_t ext = arg_ext(tl, e);
        rc = act_summary_add_slice(s, e->name.p, e->name.n, dev, (uint64_t)e->pid << 32 | e->tid,
                                   (double)(e->ts - tl->base_ns) / 1000.0, (double)e->dur / 1000.0,
                                   ext);
        if (!rc && !dev && ext && (e->cat == ACT_CAT_USER_ANNOTATION || e->cat == ACT_CAT_CPU_OP))
            rc = act_summary_add_range(s, ext, e->name.p, e->name.n);
    }
    return rc;
}

void act_summary_print_timeline(act_summary *s, const act_timeline *tl, FILE *f, int by_range)
{
    json_t *counters = counters_of(tl); /* NULL (no memory): printed as none */
    for (size_t i = 0; i < tl->n_meta && !s->cl_leaks; i++)
        if (tl->meta[i].is_json && tl->meta[i].key.n == 12 &&
            !memcmp(tl->meta[i].key.p, "opencl_leaks", 12))
            s->cl_leaks = json_loadb(tl->meta[i].value.p, tl->meta[i].value.n, 0, NULL);
    act_summary_set_counters(s, counters);
    act_summary_print(s, f, by_range);
    act_summary_set_counters(s, NULL);
    json_decref(counters);
}

int act_summary_from_timeline(const act_timeline *tl, FILE *f, int by_range)
{
    act_summary *s = act_summary_new();
    if (!s)
        return ACT_E_NOMEM;
    int rc = act_summary_add_events(s, tl);
    if (!rc)
        act_summary_print_timeline(s, tl, f, by_range);
    act_summary_free(s);
    return rc;
}

/* ---- from a Chrome trace file ----------------------------------------- */

/* A lane key from pid/tid values that may be integers or strings. */
static uint64_t id_of(json_t *v)
{
    if (json_is_integer(v))
        return (uint64_t)json_integer_value(v);
    if (json_is_string(v)) {
        uint64_t h = 1469598103934665603ull;
        const char *p = json_string_value(v);
        for (size_t i = 0; i < json_string_length(v); i++) {
            h ^= (unsigned char)p[i];
            h *= 1099511628211ull;
        }
        return h;
    }
    return 0;
}

static int add_event(act_summary *s, json_t *ev)
{
    const char *ph = json_string_value(json_object_get(ev, "ph"));
    const char *cat = json_string_value(json_object_get(ev, "cat"));
    json_t *name = json_object_get(ev, "name");
    act_summary_cl_failure_json(&s->cl_failed, ev);
    if (!ph || strcmp(ph, "X") || !cat || !json_is_string(name))
        return 0;
    int dev = act_cat_is_device_name(cat);
    if (dev < 0)
        return 0;
    json_t *ts = json_object_get(ev, "ts"), *dur = json_object_get(ev, "dur");
    if (!json_is_number(ts) || !json_is_number(dur))
        return 0;
    uint64_t lane =
        id_of(json_object_get(ev, "pid")) * 1000003u ^ id_of(json_object_get(ev, "tid"));
    json_t *x = json_object_get(json_object_get(ev, "args"), "External id");
    uint64_t ext =
        json_is_integer(x) && json_integer_value(x) > 0 ? (uint64_t)json_integer_value(x) : 0;
    int rc = act_summary_add_slice(s, json_string_value(name), json_string_length(name), dev, lane,
                                   json_number_value(ts), json_number_value(dur), ext);
    if (!rc && !dev && ext && (!strcmp(cat, "user_annotation") || !strcmp(cat, "cpu_op")))
        rc = act_summary_add_range(s, ext, json_string_value(name), json_string_length(name));
    return rc;
}

static int load_json(act_summary *s, const char *path, json_t **root, char *err, size_t errlen);

/* The reason is one line whatever the file or its name holds: jansson
 * quotes the bytes it choked on and a path may hold a newline, so control
 * bytes become '?' (fuzz_summary checks this). */
int act_summary_load_json(act_summary *s, const char *path, json_t **root, char *err, size_t errlen)
{
    int rc = load_json(s, path, root, err, errlen);
    for (char *p = err; rc != 0 && errlen && *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return rc;
}

static int load_json(act_summary *s, const char *path, json_t **root, char *err, size_t errlen)
{
    *root = NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return ACT_E_IO;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: is a directory, not a trace file", path);
        return ACT_E_IO;
    }
    /* A FIFO nobody writes would block forever, a device may never end. */
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file, not a trace file", path);
        return ACT_E_IO;
    }
    if (S_ISREG(st.st_mode) && st.st_size == 0) {
        snprintf(err, errlen, "%s: empty file, not a trace", path);
        return ACT_E_FORMAT;
    }
    json_error_t jerr;
    json_t *doc = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!doc) {
        snprintf(err, errlen, "%s: not valid JSON (line %d, column %d: %s)", path, jerr.line,
                 jerr.column, jerr.text);
        return ACT_E_FORMAT;
    }
    json_t *events = json_is_array(doc) ? doc : json_object_get(doc, "traceEvents");
    if (!json_is_array(events)) {
        snprintf(err, errlen, "%s: not a Chrome trace (no traceEvents array)", path);
        json_decref(doc);
        return ACT_E_FORMAT;
    }
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev)
    {
        if (json_is_object(ev) && add_event(s, ev)) {
            snprintf(err, errlen, "%s: out of memory", path);
            json_decref(doc);
            return ACT_E_NOMEM;
        }
    }
    if (json_is_object(doc)) {
        act_summary_set_counters(s, json_object_get(doc, "acceltrace"));
        s->cl_leaks = json_incref(json_object_get(doc, "opencl_leaks"));
    }
    *root = doc;
    return 0;
}
