/*
 * summary_print.c -- prints what summary.c aggregated: a table fitted to
 * the terminal (names shortened so distinct names stay distinct), CSV
 * blocks or one JSON document; per-process or per-rank rows with their
 * spread; the trace's counters and its error lines. Nothing from a trace
 * reaches the terminal raw: control bytes and invalid UTF-8 become '?'.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "acceltrace.h"
#include "json_escape.h"
#include "summary.h"
#include "summary_cl.h"
#include "summary_impl.h"

#define MAX_ERROR_LINES 5

static const char *const unit_name[] = {"ns", "us", "ms", "s"};
static const double unit_scale[] = {1000.0, 1.0, 1e-3, 1e-6};
static const int unit_prec[] = {0, 3, 3, 6};

/* ---- safe text ------------------------------------------------------- */

/* Copy name[0..len) to out (at most cap-1 bytes), turning control bytes
 * (C0, DEL, C1) and invalid UTF-8 into '?'. Returns the columns (code
 * points) written. */
static size_t clean(const char *name, size_t len, char *out, size_t cap)
{
    size_t o = 0, cols = 0, i = 0;
    while (i < len && o + 5 < cap) {
        const unsigned char *u = (const unsigned char *)name + i;
        size_t skip = 1, n = act_utf8_seq(u, len - i, &skip);
        int c1 = n == 2 && u[0] == 0xc2 && u[1] < 0xa0;
        if (!n || u[0] < 0x20 || u[0] == 0x7f || c1) {
            out[o++] = '?';
            i += n ? n : skip;
        } else {
            memcpy(out + o, u, n);
            o += n;
            i += n;
        }
        cols++;
    }
    out[o] = '\0';
    return cols;
}

static size_t cols_of(const char *s)
{
    size_t c = 0;
    for (; *s; s++)
        c += ((unsigned char)*s & 0xc0) != 0x80;
    return c;
}

/* Byte offset of column `col` in s. */
static size_t byte_at(const char *s, size_t col)
{
    size_t i = 0, c = 0;
    while (s[i] && c < col) {
        i++;
        while (((unsigned char)s[i] & 0xc0) == 0x80)
            i++;
        c++;
    }
    return i;
}

/* ---- demangling ------------------------------------------------------- */

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* libstdc++'s __cxa_demangle, looked up once (the tool is C; CUDA kernel
 * names arrive mangled, as CUPTI reports them). NULL when unavailable. */
static demangle_fn demangler(void)
{
    static int tried;
    static demangle_fn fn;
    if (!tried) {
        tried = 1;
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (h)
            *(void **)&fn = dlsym(h, "__cxa_demangle");
    }
    return fn;
}

/* The demangled form of an Itanium-mangled name (malloc'ed), or NULL. */
static char *demangle(const char *name)
{
    demangle_fn fn = name[0] == '_' && name[1] == 'Z' ? demangler() : NULL;
    int st = -1;
    char *d = fn ? fn(name, NULL, NULL, &st) : NULL;
    if (d && st != 0) {
        free(d);
        d = NULL;
    }
    return d;
}

/* ---- base names (as nsys's --base) ------------------------------------ */

/* "void ns::kern<T, 4>(float*, int)" -> "ns::kern": template and argument
 * lists and a return type go; names that do not look like C++ signatures
 * (annotations, API calls) are kept as they are; a demangled name always
 * is one. */
static void base_name(const char *full, char *out, size_t cap, int demangled)
{
    size_t n = strlen(full), o = 0;
    int cxx = demangled || strchr(full, '<') || (strchr(full, '(') && strstr(full, "::"));
    if (!cxx || full[0] == '(') {
        snprintf(out, cap, "%s", full);
        return;
    }
    int depth = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        char c = full[i];
        if (c == '<' && !(i >= 8 && !strncmp(full + i - 8, "operator", 8)))
            depth++;
        else if (c == '>' && depth > 0)
            depth--;
        else if (c == '(' && depth == 0 && o > 0)
            break;
        else if (depth == 0)
            out[o++] = c;
    }
    out[o] = '\0';
    char *sp = strrchr(out, ' '); /* a return type before the name */
    if (sp && sp[1])
        memmove(out, sp + 1, strlen(sp + 1) + 1);
    if (!out[0])
        snprintf(out, cap, "%s", full);
}

static uint32_t name_hash32(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

typedef struct prow {
    uint32_t id; /* name id, UINT32_MAX = "(no range)" or "other" */
    const char *full;
    uint64_t count;
    double total, self, min, max;
    char *shown;
    size_t shown_cap;
} prow;

/* Cut to `w` columns keeping head and tail ("abc...xyz"): names often
 * differ at the end (suffixes, template arguments). */
static void fit(char *s, size_t w)
{
    size_t c = cols_of(s);
    if (c <= w || w < 8)
        return;
    size_t tail = w / 3, head = w - 3 - tail;
    size_t hb = byte_at(s, head), tb = byte_at(s, c - tail);
    memmove(s + hb + 3, s + tb, strlen(s + tb) + 1);
    memcpy(s + hb, "...", 3);
}

static int shown_cmp(const void *a, const void *b)
{
    const prow *x = *(prow *const *)a, *y = *(prow *const *)b;
    return strcmp(x->shown, y->shown);
}

/* Every row's `shown` name: clean, shortened per mode, within w columns,
 * and no two rows alike (a clash gets the full name's hash appended, then
 * its row number). */
#define SHOWN_SUFFIX_ROOM 40 /* "~xxxx" then "~#N" after a clash */

/* One row's shown name, fitted to w columns: sized to the name (a kept
 * name may be 64 KiB), then shrunk to what is shown. */
static int show_one(prow *r, int names, size_t w)
{
    char *d = names == ACT_SUM_NAMES_MANGLED ? NULL : demangle(r->full);
    const char *src = d ? d : r->full;
    size_t cap = strlen(src) + SHOWN_SUFFIX_ROOM;
    char *c = malloc(cap), *b = names == ACT_SUM_NAMES_BASE ? malloc(cap) : NULL;
    if (!c || (names == ACT_SUM_NAMES_BASE && !b)) {
        free(c);
        free(b);
        free(d);
        return ACT_E_NOMEM;
    }
    clean(src, strlen(src), c, cap);
    if (b) {
        base_name(c, b, cap, d != NULL);
        free(c);
        c = b;
    }
    free(d);
    if (w)
        fit(c, w);
    r->shown_cap = strlen(c) + SHOWN_SUFFIX_ROOM;
    char *shrunk = realloc(c, r->shown_cap);
    r->shown = shrunk ? shrunk : c;
    if (!shrunk)
        r->shown_cap = cap;
    return 0;
}

/* Every row's `shown` name: clean, shortened per mode, within w columns,
 * and no two rows alike (a clash gets the full name's hash appended, then
 * its row number). */
static int show_names(prow *r, size_t n, int names, size_t w)
{
    for (size_t i = 0; i < n; i++)
        if (show_one(&r[i], names, w))
            return ACT_E_NOMEM;
    prow **p = malloc((n ? n : 1) * sizeof(*p));
    if (!p)
        return ACT_E_NOMEM;
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < n; i++) {
            if (w)
                fit(r[i].shown, w);
            p[i] = &r[i];
        }
        if (n)
            qsort(p, n, sizeof(*p), shown_cmp);
        int clash = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            if (strcmp(p[i]->shown, p[i + 1]->shown))
                continue;
            clash = 1;
            for (size_t j = i; j < i + 2; j++) {
                prow *q = p[j];
                char sfx[32];
                if (pass == 0)
                    snprintf(sfx, sizeof(sfx), "~%04x", name_hash32(q->full) & 0xffff);
                else
                    snprintf(sfx, sizeof(sfx), "~#%zu", (size_t)(q - r) + 1);
                size_t l = strlen(q->shown), sl = strlen(sfx);
                if (w && cols_of(q->shown) + sl > w)
                    l = byte_at(q->shown, w > sl ? w - sl : 0);
                if (l + sl + 1 > q->shown_cap)
                    l = q->shown_cap - sl - 1;
                memcpy(q->shown + l, sfx, sl + 1);
            }
        }
        if (!clash)
            break;
    }
    free(p);
    return 0;
}

/* ---- figures ---------------------------------------------------------- */

/* A figure as text, the same in the table and the CSV: a value beyond a
 * double (a sum of durations of 1e308) is named "overflow", never "inf" or
 * "nan"; one too long for fixed point (1e300 us) is written with an
 * exponent instead of three hundred digits. */
#define FIG_OVERFLOW  "overflow"
#define FIG_FIXED_MAX 1e15

static int fig_text(char *b, size_t cap, double v, int prec)
{
    if (!isfinite(v))
        return snprintf(b, cap, "%s", FIG_OVERFLOW);
    if (fabs(v) >= FIG_FIXED_MAX)
        return snprintf(b, cap, "%.*e", prec ? prec : 3, v);
    return snprintf(b, cap, "%.*f", prec, v);
}

/* The same, counted in s->overflowed when it is one (said under the
 * tables, and as "overflowed" in the JSON). */
static const char *fig(act_summary *s, char *b, size_t cap, double v, int prec)
{
    if (!isfinite(v))
        s->overflowed++;
    fig_text(b, cap, v, prec);
    return b;
}

static double pct_of(double part, double busy)
{
    return busy > 0 ? 100.0 * part / busy : 0.0;
}

/* ---- rows ------------------------------------------------------------- */

static int by_total(const void *a, const void *b)
{
    const prow *x = a, *y = b;
    if (x->total != y->total && !(isnan(x->total) && isnan(y->total))) {
        if (isnan(x->total) || isnan(y->total)) /* overflowed: at the top */
            return isnan(x->total) ? -1 : 1;
        return x->total > y->total ? -1 : 1;
    }
    return strcmp(x->full, y->full);
}

/* A section: its top rows by total (at most `cap`, sorted) and one "other"
 * row summing the rest, so that printing holds no more than `cap` rows
 * whatever the number of names; its count and times are exact. */
typedef struct sect {
    prow *rows;
    size_t nr, cap;
    uint64_t names;       /* distinct names in the section */
    uint64_t other_names; /* of which summed in `other` */
    prow other;
    char other_label[64];
} sect;

static void other_add(sect *t, const prow *r)
{
    prow *o = &t->other;
    if (!t->other_names || r->min < o->min)
        o->min = r->min;
    if (!t->other_names || r->max > o->max)
        o->max = r->max;
    o->count += r->count;
    o->total += r->total;
    o->self += r->self;
    t->other_names++;
}

/* rows[] as a heap whose top is the row that sorts last. */
static void heap_down(prow *h, size_t n, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && by_total(&h[c + 1], &h[c]) > 0)
            c++;
        if (by_total(&h[c], &h[i]) <= 0)
            return;
        prow t = h[i];
        h[i] = h[c];
        h[c] = t;
        i = c;
    }
}

static void heap_up(prow *h, size_t i)
{
    while (i && by_total(&h[i], &h[(i - 1) / 2]) > 0) {
        prow t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static void sect_add(sect *t, prow r)
{
    t->names++;
    if (t->nr < t->cap) {
        t->rows[t->nr] = r;
        heap_up(t->rows, t->nr++);
    } else if (t->cap && by_total(&r, &t->rows[0]) < 0) {
        other_add(t, &t->rows[0]);
        t->rows[0] = r;
        heap_down(t->rows, t->nr, 0);
    } else {
        other_add(t, &r);
    }
}

static void sect_begin(sect *t, prow *rows, size_t cap)
{
    *t = (sect){.rows = rows, .cap = cap};
    t->other.id = UINT32_MAX;
}

static void sect_end(sect *t)
{
    if (t->nr)
        qsort(t->rows, t->nr, sizeof(*t->rows), by_total);
    snprintf(t->other_label, sizeof(t->other_label), "(other: %llu names)",
             (unsigned long long)t->other_names);
    t->other.full = t->other_label;
}

static void sect_of(act_summary *s, int device, sect *t)
{
    for (size_t i = 0; i < s->n_nm; i++) {
        const act_sum_name *n = &s->nm[i];
        if (n->device == device && n->count)
            sect_add(
                t, (prow){(uint32_t)i, n->s, n->count, n->total, n->self, n->min, n->max, NULL, 0});
    }
    sect_end(t);
}

static void range_sect(act_summary *s, sect *t)
{
    for (size_t i = 0; i < s->n_nm; i++) {
        const act_sum_rrow *r = &s->nm[i].by_range;
        if (r->count)
            sect_add(t, (prow){(uint32_t)i, s->nm[i].s, r->count, r->total, r->total, r->min,
                               r->max, NULL, 0});
    }
    if (s->no_range.count)
        sect_add(t, (prow){UINT32_MAX, "(no range)", s->no_range.count, s->no_range.total,
                           s->no_range.total, s->no_range.min, s->no_range.max, NULL, 0});
    sect_end(t);
}

static void free_shown(prow *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].shown);
        r[i].shown = NULL;
    }
}

static double busy_of(const act_summary *s, int device, size_t *lanes)
{
    double b = 0;
    *lanes = 0;
    for (size_t i = 0; i < s->n_ln; i++)
        if (s->ln[i].device == device && s->ln[i].popped) {
            b += s->ln[i].busy;
            (*lanes)++;
        }
    return b;
}

/* ---- processes / ranks ------------------------------------------------ */

typedef struct pgroup {
    uint32_t idx;   /* its act_sum_group, or its source when per source */
    uint32_t other; /* >0: the row summing this many left-out rows */
    long long rank; /* distributedInfo.rank of its trace; -1 = none */
    uint64_t pid;   /* one trace: its process */
    uint64_t dev_slices, host_slices;
    double dev_busy, dev_total, host_busy, first, last;
} pgroup;

/* The processes of one trace in the order a batch export writes them,
 * whatever order their events came in (a streamed trace writes device ops
 * before later processes' events): host pids, then device pids (kineto's
 * 0..63, or acceltrace's from 5 000 000), each ascending. */
static uint64_t pid_order(uint64_t pid)
{
    return pid < 64 || pid >= 5000000 ? pid + (1ull << 40) : pid;
}

static int by_pid_order(const void *a, const void *b)
{
    uint64_t x = pid_order(((const pgroup *)a)->pid), y = pid_order(((const pgroup *)b)->pid);
    return x < y ? -1 : x > y;
}

static const char *base_of(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* A row's label, made safe: a process's name (or "pid N"), a rank and
 * its file, or "(other: N processes)". Made when printed, not kept per
 * process: a trace may hold a million. */
static void group_label(const act_summary *s, const pgroup *g, char *out, size_t cap)
{
    char raw[160];
    if (g->other) {
        snprintf(raw, sizeof(raw), "(other: %u %s)", g->other,
                 s->n_src > 1 ? "ranks" : "processes");
    } else if (s->n_src > 1) {
        const act_sum_src *src = &s->src[g->idx];
        if (src->rank >= 0)
            snprintf(raw, sizeof(raw), "rank %lld (%s)", src->rank,
                     src->path ? base_of(src->path) : "-");
        else
            snprintf(raw, sizeof(raw), "%s", src->path ? base_of(src->path) : "-");
    } else if (s->gr[g->idx].label) {
        snprintf(raw, sizeof(raw), "%s", s->gr[g->idx].label);
    } else {
        snprintf(raw, sizeof(raw), "pid %llu", (unsigned long long)g->pid);
    }
    clean(raw, strlen(raw), out, cap);
}

/* Rows from `cap` on summed into row `cap` (its `other` = how many), so
 * that a trace of a million processes prints cap + 1 rows. Returns the
 * rows to print. */
static size_t groups_cap(pgroup *g, size_t n, size_t cap)
{
    if (n <= cap)
        return n;
    pgroup o = {.other = (uint32_t)(n - cap), .rank = -1, .first = INFINITY, .last = -INFINITY};
    for (size_t i = cap; i < n; i++) {
        o.dev_slices += g[i].dev_slices;
        o.host_slices += g[i].host_slices;
        o.dev_busy += g[i].dev_busy;
        o.dev_total += g[i].dev_total;
        o.host_busy += g[i].host_busy;
        o.first = g[i].first < o.first ? g[i].first : o.first;
        o.last = g[i].last > o.last ? g[i].last : o.last;
    }
    g[cap] = o;
    return cap + 1;
}

/* One row per source (rank or file) when several traces were read, else
 * one per process of the one trace. */
static size_t groups_of(const act_summary *s, pgroup *out)
{
    size_t n = 0;
    int per_src = s->n_src > 1;
    size_t rows = per_src ? s->n_src : s->n_gr;
    for (size_t i = 0; i < rows; i++)
        out[i] = (pgroup){.rank = -1, .first = INFINITY, .last = -INFINITY};
    for (size_t i = 0; i < s->n_gr; i++) {
        const act_sum_group *g = &s->gr[i];
        pgroup *o = &out[per_src ? g->src : i];
        o->rank = s->src[g->src].rank;
        o->dev_slices += g->dev_slices;
        o->host_slices += g->host_slices;
        o->dev_busy += g->dev_busy;
        o->dev_total += g->dev_total;
        o->host_busy += g->host_busy;
        o->first = g->first < o->first ? g->first : o->first;
        o->last = g->last > o->last ? g->last : o->last;
        o->idx = per_src ? g->src : (uint32_t)i;
        if (!per_src)
            o->pid = g->pid;
    }
    for (size_t i = 0; i < rows; i++)
        if (out[i].dev_slices || out[i].host_slices)
            out[n++] = out[i];
    if (!per_src)
        qsort(out, n, sizeof(*out), by_pid_order);
    return n;
}

static double span_of(const pgroup *g)
{
    return g->last > g->first ? g->last - g->first : 0;
}

/* ---- table ------------------------------------------------------------ */

static int term_width(FILE *f)
{
    const char *c = getenv("COLUMNS");
    if (c && atoi(c) >= 20 && atoi(c) <= 1000)
        return atoi(c);
    struct winsize ws;
    if (isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col;
    return 80;
}

typedef struct tcol {
    const char *head;
    int w, on;
} tcol;

static int numw(double v, int prec)
{
    char b[64];
    return fig_text(b, sizeof(b), v, prec);
}

/* Row i of a section as printed: its top rows, then "other" if any. */
static prow *sect_row(sect *t, size_t i)
{
    return i < t->nr ? &t->rows[i] : &t->other;
}

static size_t sect_shown(const sect *t)
{
    return t->nr + (t->other_names ? 1 : 0);
}

static void print_head(FILE *f, const char *title, const sect *t, const char *busy, size_t lanes,
                       int with_lanes, const char *unit)
{
    fprintf(f, "%s: %llu names, busy %s %s", title, (unsigned long long)t->names, busy, unit);
    if (with_lanes)
        fprintf(f, " on %zu lane%s", lanes, lanes == 1 ? "" : "s");
    if (t->other_names)
        fprintf(f, " (top %zu shown)", t->nr);
    fprintf(f, "\n");
}

static void row_figs(const prow *r, double *v)
{
    v[0] = r->total;
    v[1] = r->self;
    v[2] = r->total / (double)r->count;
    v[3] = r->min;
    v[4] = r->max;
}

static void print_ops(act_summary *s, FILE *f, const char *title, sect *t, double busy,
                      size_t lanes, int with_self, int with_lanes, const act_summary_fmt *fmt,
                      int width)
{
    int u = fmt->unit, pr = unit_prec[u];
    double k = unit_scale[u];
    char fb[64];
    print_head(f, title, t, fig(s, fb, sizeof(fb), busy * k, pr), lanes, with_lanes, unit_name[u]);
    size_t nr = sect_shown(t);
    if (!nr) {
        fprintf(f, "  (none)\n");
        return;
    }
    char h[7][16];
    snprintf(h[1], 16, "total %s", unit_name[u]);
    snprintf(h[2], 16, "self %s", unit_name[u]);
    snprintf(h[3], 16, "mean %s", unit_name[u]);
    snprintf(h[4], 16, "min %s", unit_name[u]);
    snprintf(h[5], 16, "max %s", unit_name[u]);
    tcol c[7] = {{"count", 5, 1}, {h[1], 0, 1}, {h[2], 0, with_self}, {h[3], 0, 1},
                 {h[4], 0, 1},    {h[5], 0, 1}, {"busy%", 6, 1}};
    for (int j = 1; j < 6; j++)
        c[j].w = (int)strlen(c[j].head);
    for (size_t i = 0; i < nr; i++) {
        const prow *r = sect_row(t, i);
        char b[32];
        int cw = snprintf(b, sizeof(b), "%llu", (unsigned long long)r->count);
        c[0].w = cw > c[0].w ? cw : c[0].w;
        double v[5];
        row_figs(r, v);
        for (int j = 0; j < 5; j++) {
            int w = numw(v[j] * k, pr);
            c[j + 1].w = w > c[j + 1].w ? w : c[j + 1].w;
        }
        int w = numw(pct_of(r->total, busy), 1) + 1;
        c[6].w = w > c[6].w ? w : c[6].w;
    }
    int namew = 0;
    for (int pass = 0; pass < 2; pass++) {
        int used = 2;
        for (int j = 0; j < 7; j++)
            used += c[j].on ? c[j].w + 1 : 0;
        namew = width - used;
        if (namew >= 28 || pass)
            break;
        c[4].on = c[5].on = 0; /* narrow: min and max give way to the name */
    }
    if (namew < 12)
        namew = 12;
    show_names(t->rows, t->nr, fmt->names, (size_t)namew);
    fprintf(f, "  %-*s", namew, "name");
    for (int j = 0; j < 7; j++)
        if (c[j].on)
            fprintf(f, " %*s", c[j].w, c[j].head);
    fprintf(f, "\n");
    for (size_t i = 0; i < nr; i++) {
        const prow *r = sect_row(t, i);
        const char *name = i < t->nr ? (r->shown ? r->shown : "?") : t->other_label;
        size_t sc = cols_of(name);
        fprintf(f, "  %s%*s", name, (int)(sc < (size_t)namew ? namew - sc : 0), "");
        fprintf(f, " %*llu", c[0].w, (unsigned long long)r->count);
        double v[5];
        row_figs(r, v);
        for (int j = 0; j < 5; j++)
            if (c[j + 1].on)
                fprintf(f, " %*s", c[j + 1].w, fig(s, fb, sizeof(fb), v[j] * k, pr));
        fprintf(f, " %*s%%\n", c[6].w - 1, fig(s, fb, sizeof(fb), pct_of(r->total, busy), 1));
    }
    free_shown(t->rows, t->nr);
}

static size_t rows_cap(const act_summary_fmt *fmt)
{
    return fmt->rows ? fmt->rows : ACT_SUM_ROWS;
}

/* The slowest and fastest rows by span (ranks are compared by their
 * processes, not devices, when there are hosts). */
static void spread_of(const pgroup *g, size_t n, size_t *slow, size_t *fast)
{
    size_t hosts = 0;
    for (size_t i = 0; i < n; i++)
        hosts += g[i].host_slices > 0;
    *slow = *fast = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (hosts >= 2 && !g[i].host_slices)
            continue;
        if (*slow == SIZE_MAX || span_of(&g[i]) > span_of(&g[*slow]))
            *slow = i;
        if (*fast == SIZE_MAX || span_of(&g[i]) < span_of(&g[*fast]))
            *fast = i;
    }
}

static void print_spread(FILE *f, act_summary *s, double a, double b, const char *slowest,
                         const act_summary_fmt *fmt, int width)
{
    int u = fmt->unit, pr = unit_prec[u];
    double k = unit_scale[u];
    char line[200], fa[64], fb[64], fp[64], label[160];
    double pc = a > 0 ? 100.0 * (b - a) / a : 0.0;
    if (isfinite(pc))
        snprintf(fp, sizeof(fp), "%+.1f", pc);
    else
        fig(s, fp, sizeof(fp), pc, 1);
    int l =
        snprintf(line, sizeof(line),
                 "  spread of span: %s..%s %s (%s%%), slowest: ", fig(s, fa, sizeof(fa), a * k, pr),
                 fig(s, fb, sizeof(fb), b * k, pr), unit_name[u], fp);
    snprintf(label, sizeof(label), "%s", slowest);
    fit(label, width - l > 12 ? (size_t)(width - l) : 12);
    fprintf(f, "%s%s\n", line, label);
}

static void print_group_rows(FILE *f, act_summary *s, const pgroup *g, size_t n,
                             const act_summary_fmt *fmt, int width)
{
    int u = fmt->unit, pr = unit_prec[u];
    double k = unit_scale[u];
    char hd[4][24];
    snprintf(hd[0], 24, "span %s", unit_name[u]);
    snprintf(hd[1], 24, "dev busy %s", unit_name[u]);
    snprintf(hd[2], 24, "host busy %s", unit_name[u]);
    int w[4] = {9, (int)strlen(hd[0]), (int)strlen(hd[1]), (int)strlen(hd[2])};
    for (size_t i = 0; i < n; i++) {
        double v[3] = {span_of(&g[i]), g[i].dev_busy, g[i].host_busy};
        for (int j = 0; j < 3; j++)
            w[j + 1] = numw(v[j] * k, pr) > w[j + 1] ? numw(v[j] * k, pr) : w[j + 1];
    }
    int lw = width - 2 - (w[0] + w[1] + w[2] + w[3] + 4);
    lw = lw < 16 ? 16 : lw;
    fprintf(f, "  %-*s %*s %*s %*s %*s\n", lw, s->n_src > 1 ? "rank" : "process", w[0], "dev ops",
            w[1], hd[0], w[2], hd[1], w[3], hd[2]);
    for (size_t i = 0; i < n; i++) {
        char label[160], f1[64], f2[64], f3[64];
        group_label(s, &g[i], label, sizeof(label));
        fit(label, (size_t)lw);
        size_t sc = cols_of(label);
        fprintf(f, "  %s%*s %*llu %*s %*s %*s\n", label, (int)(sc < (size_t)lw ? lw - sc : 0), "",
                w[0], (unsigned long long)g[i].dev_slices, w[1],
                fig(s, f1, sizeof(f1), span_of(&g[i]) * k, pr), w[2],
                fig(s, f2, sizeof(f2), g[i].dev_busy * k, pr), w[3],
                fig(s, f3, sizeof(f3), g[i].host_busy * k, pr));
    }
}

static void print_groups(FILE *f, act_summary *s, const act_summary_fmt *fmt, int width)
{
    size_t cap = s->n_src > s->n_gr ? s->n_src : s->n_gr;
    if (cap < 2)
        return;
    pgroup *g = calloc(cap + 1, sizeof(*g));
    if (!g)
        return;
    size_t n = groups_of(s, g), hosts_seen = 0;
    for (size_t i = 0; i < n; i++)
        hosts_seen += g[i].host_slices > 0;
    if (n >= 2 && (s->n_src > 1 || hosts_seen >= 2)) {
        fprintf(f, "Per %s: %zu%s\n", s->n_src > 1 ? "rank" : "process", n,
                n > rows_cap(fmt) ? " (the first ones shown)" : "");
        size_t slow, fast;
        spread_of(g, n, &slow, &fast);
        double a = span_of(&g[fast]), b = span_of(&g[slow]);
        char slowest[160];
        group_label(s, &g[slow], slowest, sizeof(slowest));
        print_group_rows(f, s, g, groups_cap(g, n, rows_cap(fmt)), fmt, width);
        print_spread(f, s, a, b, slowest, fmt, width);
    }
    free(g);
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
                char kc[128];
                clean(k, strlen(k), kc, sizeof(kc));
                fprintf(f, "%s%s %lld", sep, kc, (long long)json_integer_value(v));
                sep = ", ";
            }
        }
        fprintf(f, ")");
    }
    fprintf(f, "\n");
}

static void print_errors(FILE *f, json_t *er)
{
    size_t n = json_array_size(er), i;
    json_t *v;
    fprintf(f, "  %-34s %zu\n", "errors", n);
    json_array_foreach(er, i, v)
    {
        if (i == MAX_ERROR_LINES) {
            fprintf(f, "    and %zu more (see the trace's acceltrace.errors)\n", n - i);
            break;
        }
        char line[512];
        if (json_is_string(v))
            clean(json_string_value(v), json_string_length(v), line, sizeof(line));
        else
            snprintf(line, sizeof(line), "(not a string)");
        fprintf(f, "    %s\n", line[0] ? line : "(no reason given)");
    }
}

static void print_counters(FILE *f, json_t *a, const char *whose)
{
    if (!json_is_object(a)) {
        fprintf(f, "Counters%s: none in this trace (not written by acceltrace)\n", whose);
        return;
    }
    fprintf(f, "Counters%s:\n", whose);
    print_kind_counts(f, "dropped records", json_object_get(a, "dropped"));
    print_kind_counts(f, "outside the capture window", json_object_get(a, "outside_window"));
    json_t *cb = json_object_get(a, "callbacks");
    fprintf(f, "  %-34s %llu pending, %llu lost\n", "device callbacks outstanding",
            (unsigned long long)jnum(cb, "pending"), (unsigned long long)jnum(cb, "lost"));
    json_t *sk = json_object_get(a, "skew");
    fprintf(f, "  %-34s %llu (max %.3f us)\n", "device start before host launch",
            (unsigned long long)jnum(sk, "device_before_launch"),
            (double)jnum(sk, "max_ns") / 1000.0);
    /* The timeline's one counters table (timeline.c), then the writer's. */
    for (size_t k = 0; k < act_tl_n_counters; k++)
        if (!act_tl_counters[k].quiet_zero || jnum(a, act_tl_counters[k].key))
            fprintf(f, "  %-34s %llu\n", act_tl_counters[k].label,
                    (unsigned long long)jnum(a, act_tl_counters[k].key));
    fprintf(f, "  %-34s %llu\n", "invalid UTF-8 sequences replaced",
            (unsigned long long)jnum(a, "invalid_utf8"));
    json_t *tr = json_object_get(a, "truncated_processes");
    fprintf(f, "  %-34s %zu", "truncated processes", json_array_size(tr));
    size_t i;
    json_t *v;
    json_array_foreach(tr, i, v)
        fprintf(f, "%s%lld", i ? ", " : " (pid ", (long long)json_integer_value(v));
    fprintf(f, "%s\n", json_array_size(tr) ? ")" : "");
    print_errors(f, json_object_get(a, "errors"));
}

static void print_all_counters(FILE *f, act_summary *s)
{
    if (s->counters || s->n_src <= 1) {
        print_counters(f, s->counters ? s->counters : s->n_src ? s->src[0].counters : NULL, "");
        return;
    }
    for (size_t i = 0; i < s->n_src; i++) {
        char whose[200], raw[180];
        snprintf(raw, sizeof(raw), "%s", s->src[i].path ? base_of(s->src[i].path) : "-");
        clean(raw, strlen(raw), whose + 4, sizeof(whose) - 6);
        memcpy(whose, " of ", 4);
        print_counters(f, s->src[i].counters, whose);
    }
}

/* The OpenCL section: builds are the host calls that build programs. */
static void print_opencl(const act_summary *s, FILE *f)
{
    uint64_t builds = 0;
    double build_us = 0;
    for (size_t i = 0; i < s->n_nm; i++) {
        const act_sum_name *x = &s->nm[i];
        if (!x->device && ((x->len == 14 && !memcmp(x->s, "clBuildProgram", 14)) ||
                           (x->len == 16 && !memcmp(x->s, "clCompileProgram", 16)) ||
                           (x->len == 13 && !memcmp(x->s, "clLinkProgram", 13)))) {
            builds += x->count;
            build_us += x->total;
        }
    }
    act_summary_cl_print(f, s->cl_failed, s->cl_leaks, s->cl_undrawn, builds, build_us);
}

/* What the figures above could not show, one line each: slices whose
 * times were not numbers, strings the reader cut, figures that overflowed,
 * slices counted late. */
static void print_notes(act_summary *s, FILE *f)
{
    if (s->bad_dur)
        fprintf(f,
                "note: %llu slices had a duration that is not a finite non-negative number; "
                "counted with duration 0\n",
                (unsigned long long)s->bad_dur);
    if (s->bad_ts)
        fprintf(f, "note: %llu slices had a start that is not a finite number; counted at 0\n",
                (unsigned long long)s->bad_ts);
    if (s->truncated)
        fprintf(f,
                "note: %llu strings longer than %u bytes were truncated to their first %u bytes "
                "and a marker \"...[truncated: N bytes, id X]\"\n",
                (unsigned long long)s->truncated, ACT_SUM_STR_MAX, ACT_SUM_STR_MAX);
    if (s->overflowed)
        fprintf(f,
                "note: %llu figures overflowed a double (beyond about 1.8e308) and show as "
                "\"" FIG_OVERFLOW "\"\n",
                (unsigned long long)s->overflowed);
    if (s->late)
        fprintf(f,
                "note: %llu slices came after later ones on their lane had been counted; "
                "their busy and self time are approximate\n",
                (unsigned long long)s->late);
}

typedef struct sections {
    sect dev, host, range;
    double db, hb;
    size_t dl, hl;
} sections;

/* The sections of s, each holding at most cap rows (rows: 3 * cap). */
static void sections_of(act_summary *s, prow *rows, size_t cap, int by_range, sections *x)
{
    x->db = busy_of(s, 1, &x->dl);
    x->hb = busy_of(s, 0, &x->hl);
    sect_begin(&x->dev, rows, cap);
    sect_of(s, 1, &x->dev);
    sect_begin(&x->host, rows + cap, cap);
    sect_of(s, 0, &x->host);
    sect_begin(&x->range, rows + 2 * cap, cap);
    if (by_range)
        range_sect(s, &x->range);
}

static void print_table(act_summary *s, FILE *f, const act_summary_fmt *fmt, sections *x)
{
    int width = fmt->width > 0 ? fmt->width : term_width(f);
    print_ops(s, f, "Device ops", &x->dev, x->db, x->dl, 0, 1, fmt, width);
    print_ops(s, f, "Host calls", &x->host, x->hb, x->hl, 1, 1, fmt, width);
    if (fmt->by_range)
        print_ops(s, f, "Device time by launching range", &x->range, x->db, 0, 0, 0, fmt, width);
    print_groups(f, s, fmt, width);
    print_notes(s, f);
    print_all_counters(f, s);
    print_opencl(s, f);
}

/* ---- CSV -------------------------------------------------------------- */

/* A name made safe, whole (a kept name may be 64 KiB): malloc'ed. */
static char *clean_dup(const char *s)
{
    size_t n = strlen(s);
    char *c = malloc(n + 8);
    if (c)
        clean(s, n, c, n + 8);
    return c;
}

static void csv_field(FILE *f, const char *s)
{
    char *c = clean_dup(s);
    fputc('"', f);
    for (const char *p = c ? c : "?"; *p; p++) {
        if (*p == '"')
            fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
    free(c);
}

static void csv_rows(act_summary *s, FILE *f, const char *sec, sect *t, double busy, double k,
                     int pr)
{
    for (size_t i = 0; i < sect_shown(t); i++) {
        const prow *r = sect_row(t, i);
        double v[5];
        row_figs(r, v);
        fprintf(f, "%s,", sec);
        csv_field(f, r->full);
        fprintf(f, ",%llu", (unsigned long long)r->count);
        char b[64];
        for (int j = 0; j < 5; j++)
            fprintf(f, ",%s", fig(s, b, sizeof(b), v[j] * k, pr));
        fprintf(f, ",%s\n", fig(s, b, sizeof(b), pct_of(r->total, busy), 3));
    }
}

static void print_csv(act_summary *s, FILE *f, const act_summary_fmt *fmt, sections *x)
{
    const char *u = unit_name[fmt->unit];
    double k = unit_scale[fmt->unit];
    int pr = unit_prec[fmt->unit];
    fprintf(f, "section,name,count,total_%s,self_%s,mean_%s,min_%s,max_%s,busy_pct\n", u, u, u, u,
            u);
    csv_rows(s, f, "device", &x->dev, x->db, k, pr);
    csv_rows(s, f, "host", &x->host, x->hb, k, pr);
    if (fmt->by_range)
        csv_rows(s, f, "range", &x->range, x->db, k, pr);
    size_t cap = s->n_src > s->n_gr ? s->n_src : s->n_gr;
    pgroup *g = calloc(cap + 1, sizeof(*g));
    size_t n = g ? groups_of(s, g) : 0;
    if (n >= 2) {
        fprintf(f,
                "\n%s,device_ops,host_slices,span_%s,device_busy_%s,device_total_%s,"
                "host_busy_%s\n",
                s->n_src > 1 ? "rank" : "process", u, u, u, u);
        n = groups_cap(g, n, rows_cap(fmt));
        for (size_t i = 0; i < n; i++) {
            char b[4][64], label[160];
            group_label(s, &g[i], label, sizeof(label));
            csv_field(f, label);
            fprintf(f, ",%llu,%llu,%s,%s,%s,%s\n", (unsigned long long)g[i].dev_slices,
                    (unsigned long long)g[i].host_slices,
                    fig(s, b[0], sizeof(b[0]), span_of(&g[i]) * k, pr),
                    fig(s, b[1], sizeof(b[1]), g[i].dev_busy * k, pr),
                    fig(s, b[2], sizeof(b[2]), g[i].dev_total * k, pr),
                    fig(s, b[3], sizeof(b[3]), g[i].host_busy * k, pr));
        }
    }
    free(g);
}

/* ---- JSON ------------------------------------------------------------- */

/* Every value is set one by one: a value jansson cannot hold (json_real
 * of inf or nan is NULL) must not take its row or section with it, as a
 * json_pack that fails does. */
static json_t *jstr(const char *s)
{
    char *c = clean_dup(s);
    json_t *v = c ? json_string(c) : NULL;
    free(c);
    return v ? v : json_string("?");
}

/* A figure: a number, or "overflow" (counted) when it is none. */
static json_t *jfig(act_summary *s, double v)
{
    if (isfinite(v))
        return json_real(v);
    s->overflowed++;
    return json_string(FIG_OVERFLOW);
}

static void jset(json_t *o, const char *k, json_t *v)
{
    json_object_set_new(o, k, v ? v : json_null());
}

static json_t *json_row(act_summary *s, const prow *r, double busy, double k)
{
    json_t *o = json_object();
    double v[5];
    row_figs(r, v);
    static const char *const keys[5] = {"total", "self", "mean", "min", "max"};
    jset(o, "name", jstr(r->full));
    jset(o, "count", json_integer((json_int_t)r->count));
    for (int j = 0; j < 5; j++)
        jset(o, keys[j], jfig(s, v[j] * k));
    jset(o, "busy_pct", jfig(s, pct_of(r->total, busy)));
    return o;
}

static json_t *json_rows(act_summary *s, const sect *t, double busy, double k)
{
    json_t *a = json_array();
    for (size_t i = 0; i < t->nr; i++)
        json_array_append_new(a, json_row(s, &t->rows[i], busy, k));
    return a;
}

/* A section: busy, lanes, names, its top rows and the other row. */
static json_t *json_sect(act_summary *s, const sect *t, double busy, size_t lanes, double k)
{
    json_t *o = json_object();
    jset(o, "busy", jfig(s, busy * k));
    jset(o, "lanes", json_integer((json_int_t)lanes));
    jset(o, "names", json_integer((json_int_t)t->names));
    jset(o, "rows", json_rows(s, t, busy, k));
    if (t->other_names) {
        json_t *x = json_row(s, &t->other, busy, k);
        jset(x, "names", json_integer((json_int_t)t->other_names));
        jset(o, "other", x);
    }
    return o;
}

static json_t *json_groups(act_summary *s, double k, size_t rows)
{
    size_t cap = s->n_src > s->n_gr ? s->n_src : s->n_gr;
    pgroup *g = calloc(cap + 1, sizeof(*g));
    size_t n = g ? groups_cap(g, groups_of(s, g), rows) : 0;
    json_t *pa = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        char label[160];
        group_label(s, &g[i], label, sizeof(label));
        jset(o, "label", jstr(label));
        jset(o, "rank", g[i].rank >= 0 ? json_integer(g[i].rank) : json_null());
        if (g[i].other)
            jset(o, "other", json_integer(g[i].other));
        jset(o, "device_ops", json_integer((json_int_t)g[i].dev_slices));
        jset(o, "host_slices", json_integer((json_int_t)g[i].host_slices));
        jset(o, "span", jfig(s, span_of(&g[i]) * k));
        jset(o, "device_busy", jfig(s, g[i].dev_busy * k));
        jset(o, "device_total", jfig(s, g[i].dev_total * k));
        jset(o, "host_busy", jfig(s, g[i].host_busy * k));
        json_array_append_new(pa, o);
    }
    free(g);
    return pa;
}

static void print_json(act_summary *s, FILE *f, const act_summary_fmt *fmt, sections *x)
{
    double k = unit_scale[fmt->unit];
    json_t *o = json_object();
    jset(o, "timeunit", json_string(unit_name[fmt->unit]));
    jset(o, "device", json_sect(s, &x->dev, x->db, x->dl, k));
    jset(o, "host", json_sect(s, &x->host, x->hb, x->hl, k));
    if (fmt->by_range) {
        jset(o, "by_range", json_rows(s, &x->range, x->db, k));
        if (x->range.other_names) { /* an array stays an array: the rest beside it */
            json_t *r = json_row(s, &x->range.other, x->db, k);
            jset(r, "names", json_integer((json_int_t)x->range.other_names));
            jset(o, "by_range_other", r);
        }
    }
    jset(o, s->n_src > 1 ? "ranks" : "processes", json_groups(s, k, rows_cap(fmt)));
    jset(o, "late_slices", json_integer((json_int_t)s->late));
    jset(o, "bad_durations", json_integer((json_int_t)s->bad_dur));
    jset(o, "bad_starts", json_integer((json_int_t)s->bad_ts));
    jset(o, "truncated_strings", json_integer((json_int_t)s->truncated));
    if (s->counters || s->n_src <= 1) {
        json_t *c = s->counters ? s->counters : s->n_src ? s->src[0].counters : NULL;
        json_object_set(o, "counters", c ? c : json_null());
    } else {
        json_t *ca = json_array();
        for (size_t i = 0; i < s->n_src; i++)
            json_array_append(ca, s->src[i].counters ? s->src[i].counters : json_null());
        json_object_set_new(o, "counters", ca);
    }
    jset(o, "overflowed", json_integer((json_int_t)s->overflowed)); /* last: counts the rest */
    if (json_dumpf(o, f, JSON_INDENT(2) | JSON_REAL_PRECISION(17) | JSON_ENSURE_ASCII) != 0)
        fprintf(f, "null\n"); /* no memory: still one JSON value */
    fputc('\n', f);
    json_decref(o);
}

void act_summary_print_fmt(act_summary *s, FILE *f, const act_summary_fmt *fmt)
{
    act_summary_finish(s);
    s->overflowed = 0;
    size_t cap = fmt->rows ? fmt->rows : ACT_SUM_ROWS;
    if (cap > s->n_nm + 1)
        cap = s->n_nm + 1;
    prow *rows = malloc(3 * cap * sizeof(*rows));
    if (!rows) {
        fprintf(f, "summary: out of memory\n");
        return;
    }
    sections x;
    sections_of(s, rows, cap, fmt->by_range, &x);
    if (fmt->format == ACT_SUM_CSV)
        print_csv(s, f, fmt, &x);
    else if (fmt->format == ACT_SUM_JSON)
        print_json(s, f, fmt, &x);
    else
        print_table(s, f, fmt, &x);
    free(rows);
}

void act_summary_print(act_summary *s, FILE *f, int by_range)
{
    act_summary_fmt fmt = {.by_range = by_range, .unit = ACT_SUM_US};
    act_summary_print_fmt(s, f, &fmt);
}
