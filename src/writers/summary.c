/*
 * summary.c -- the summary table (see summary.h). Slices are collected,
 * sorted by (group, name) to aggregate and by (group, lane, start) to
 * measure busy time. The counters underneath come from a built timeline's
 * counts (and what its trace writer found), or from the "acceltrace"
 * object of a trace file: both are read into one sum_counts, and the plain
 * ones are the timeline's one counters table (act_tl_counters), read by
 * field or by key.
 */
#include "summary.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acceltrace.h"
#include "core/vec.h"
#include "json_escape.h"

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

#define SUM_MAX_KINDS 64 /* per-kind counts listed (a file may name any) */

typedef struct sum_kind {
    const char *name;
    uint64_t n;
} sum_kind;

/* The counters printed underneath the tables. */
typedef struct sum_counts {
    int present;
    sum_kind dropped[SUM_MAX_KINDS], outside[SUM_MAX_KINDS];
    size_t n_dropped, n_outside;
    uint64_t pending, lost, skew, skew_max_ns;
    uint64_t plain[32]; /* by index of act_tl_counters */
    uint64_t invalid_utf8;
    size_t errors;
    uint64_t *truncated; /* pids */
    size_t n_truncated;
} sum_counts;

struct act_summary {
    sslice *sl;
    size_t n, cap;
    srange *rg;
    size_t n_rg, cap_rg;
    sum_counts counts;
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
    free(s->counts.truncated);
    free(s);
}

int act_summary_add_slice(act_summary *s, const char *name, size_t len, int device, uint64_t lane,
                          double ts_us, double dur_us, uint64_t ext)
{
    if (act_vec_reserve(s->sl, s->cap, s->n + 1, 1024))
        return ACT_E_NOMEM;
    if (!isfinite(dur_us) || dur_us < 0)
        dur_us = 0;
    s->sl[s->n++] = (sslice){name, len, lane, ext, ts_us, dur_us, device != 0};
    return 0;
}

int act_summary_add_range(act_summary *s, uint64_t ext, const char *name, size_t len)
{
    if (act_vec_reserve(s->rg, s->cap_rg, s->n_rg + 1, 256))
        return ACT_E_NOMEM;
    s->rg[s->n_rg++] = (srange){ext, name, len};
    return 0;
}

static uint64_t jnum(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static size_t jkinds(json_t *o, sum_kind *out)
{
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        if (n < SUM_MAX_KINDS)
            out[n++] = (sum_kind){k, json_is_integer(v) && json_integer_value(v) > 0
                                         ? (uint64_t)json_integer_value(v)
                                         : 0};
    }
    return n;
}

static void counts_reset(sum_counts *c)
{
    free(c->truncated);
    memset(c, 0, sizeof(*c));
}

_Static_assert(sizeof(((sum_counts *)0)->plain) / sizeof(uint64_t) >= 11,
               "room for every counter of act_tl_counters");

void act_summary_set_counters(act_summary *s, json_t *a)
{
    sum_counts *c = &s->counts;
    counts_reset(c);
    if (!json_is_object(a))
        return;
    c->present = 1;
    c->n_dropped = jkinds(json_object_get(a, "dropped"), c->dropped);
    c->n_outside = jkinds(json_object_get(a, "outside_window"), c->outside);
    json_t *cb = json_object_get(a, "callbacks"), *sk = json_object_get(a, "skew");
    c->pending = jnum(cb, "pending");
    c->lost = jnum(cb, "lost");
    c->skew = jnum(sk, "device_before_launch");
    c->skew_max_ns = jnum(sk, "max_ns");
    for (size_t i = 0; i < act_tl_n_counters && i < 32; i++)
        c->plain[i] = jnum(a, act_tl_counters[i].key);
    c->invalid_utf8 = jnum(a, "invalid_utf8");
    c->errors = json_array_size(json_object_get(a, "errors"));
    json_t *tr = json_object_get(a, "truncated_processes");
    c->truncated = calloc(json_array_size(tr) + 1, sizeof(*c->truncated));
    size_t i;
    json_t *v;
    json_array_foreach(tr, i, v)
    {
        if (c->truncated)
            c->truncated[c->n_truncated++] = (uint64_t)json_integer_value(v);
    }
}

/* The counters of a built timeline and of what its writer found. */
static void counts_of_timeline(sum_counts *c, const act_timeline *tl, uint64_t invalid_utf8,
                               size_t errors)
{
    counts_reset(c);
    const act_tl_counts *t = &tl->counts;
    c->present = 1;
    for (int k = 1; k < ACT_REC_KIND_MAX; k++) {
        c->dropped[c->n_dropped++] = (sum_kind){act_rec_kind_name(k), t->dropped[k]};
        c->outside[c->n_outside++] = (sum_kind){act_rec_kind_name(k), t->outside_window[k]};
    }
    c->pending = t->callbacks_pending;
    c->lost = t->callbacks_lost;
    c->skew = t->skew;
    c->skew_max_ns = t->skew_max_ns;
    for (size_t i = 0; i < act_tl_n_counters && i < 32; i++)
        c->plain[i] = act_tl_counter_value(t, &act_tl_counters[i]);
    c->invalid_utf8 = invalid_utf8;
    c->errors = errors;
    c->truncated = calloc(tl->n_truncated + 1, sizeof(*c->truncated));
    for (size_t i = 0; c->truncated && i < tl->n_truncated; i++)
        c->truncated[c->n_truncated++] = tl->truncated_pids[i];
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

static void print_kind_counts(FILE *f, const char *label, const sum_kind *k, size_t n)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += k[i].n;
    fprintf(f, "  %-34s %llu", label, (unsigned long long)total);
    if (total) {
        const char *sep = " (";
        for (size_t i = 0; i < n; i++) {
            if (k[i].n) {
                fprintf(f, "%s%s %llu", sep, k[i].name, (unsigned long long)k[i].n);
                sep = ", ";
            }
        }
        fprintf(f, ")");
    }
    fprintf(f, "\n");
}

static void print_counters(FILE *f, const sum_counts *c)
{
    if (!c->present) {
        fprintf(f, "Counters: none in this trace (not written by acceltrace)\n");
        return;
    }
    fprintf(f, "Counters:\n");
    print_kind_counts(f, "dropped records", c->dropped, c->n_dropped);
    print_kind_counts(f, "outside the capture window", c->outside, c->n_outside);
    fprintf(f, "  %-34s %llu pending, %llu lost\n", "device callbacks outstanding",
            (unsigned long long)c->pending, (unsigned long long)c->lost);
    fprintf(f, "  %-34s %llu (max %.3f us)\n", "device start before host launch",
            (unsigned long long)c->skew, (double)c->skew_max_ns / 1000.0);
    for (size_t i = 0; i < act_tl_n_counters && i < 32; i++)
        fprintf(f, "  %-34s %llu\n", act_tl_counters[i].label, (unsigned long long)c->plain[i]);
    fprintf(f, "  %-34s %llu\n", "invalid UTF-8 sequences replaced",
            (unsigned long long)c->invalid_utf8);
    fprintf(f, "  %-34s %zu", "truncated processes", c->n_truncated);
    for (size_t i = 0; i < c->n_truncated; i++)
        fprintf(f, "%s%llu", i ? ", " : " (pid ", (unsigned long long)c->truncated[i]);
    fprintf(f, "%s\n", c->n_truncated ? ")" : "");
    fprintf(f, "  %-34s %zu\n", "errors", c->errors);
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
    print_counters(f, &s->counts);
}

/* ---- from a built timeline -------------------------------------------- */

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

void act_summary_print_timeline(act_summary *s, const act_timeline *tl, uint64_t invalid_utf8,
                                size_t errors, FILE *f, int by_range)
{
    counts_of_timeline(&s->counts, tl, invalid_utf8, errors);
    act_summary_print(s, f, by_range);
}

int act_summary_from_timeline(const act_timeline *tl, uint64_t invalid_utf8, size_t errors, FILE *f,
                              int by_range)
{
    act_summary *s = act_summary_new();
    if (!s)
        return ACT_E_NOMEM;
    int rc = act_summary_add_events(s, tl);
    if (!rc)
        act_summary_print_timeline(s, tl, invalid_utf8, errors, f, by_range);
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
    if (json_is_object(doc))
        act_summary_set_counters(s, json_object_get(doc, "acceltrace"));
    *root = doc;
    return 0;
}
