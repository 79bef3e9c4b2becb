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
    uint32_t id; /* name id, UINT32_MAX = "(no range)" */
    const char *full;
    uint64_t count;
    double total, self, min, max;
    char *shown;
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
static int show_names(prow *r, size_t n, int names, size_t w)
{
    size_t cap = 4096;
    for (size_t i = 0; i < n; i++) {
        char *c = malloc(cap), *b = malloc(cap);
        if (!c || !b) {
            free(c);
            free(b);
            return ACT_E_NOMEM;
        }
        char *d = names == ACT_SUM_NAMES_MANGLED ? NULL : demangle(r[i].full);
        const char *src = d ? d : r[i].full;
        clean(src, strlen(src), c, cap);
        int was_mangled = d != NULL;
        free(d);
        if (names == ACT_SUM_NAMES_BASE) {
            base_name(c, b, cap, was_mangled);
            free(c);
            r[i].shown = b;
        } else {
            free(b);
            r[i].shown = c;
        }
    }
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
                if (l + sl + 1 > cap)
                    l = cap - sl - 1;
                memcpy(q->shown + l, sfx, sl + 1);
            }
        }
        if (!clash)
            break;
    }
    free(p);
    return 0;
}

/* ---- rows ------------------------------------------------------------- */

static int by_total(const void *a, const void *b)
{
    const prow *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return strcmp(x->full, y->full);
}

static size_t rows_of(act_summary *s, int device, prow *rows)
{
    size_t nr = 0;
    for (size_t i = 0; i < s->n_nm; i++) {
        const act_sum_name *n = &s->nm[i];
        if (n->device != device || !n->count)
            continue;
        rows[nr++] = (prow){(uint32_t)i, n->s, n->count, n->total, n->self, n->min, n->max, NULL};
    }
    if (nr)
        qsort(rows, nr, sizeof(*rows), by_total);
    return nr;
}

static size_t range_rows(act_summary *s, prow *rows)
{
    size_t nr = 0;
    for (size_t i = 0; i < s->n_nm; i++) {
        const act_sum_rrow *r = &s->nm[i].by_range;
        if (r->count)
            rows[nr++] =
                (prow){(uint32_t)i, s->nm[i].s, r->count, r->total, r->total, r->min, r->max, NULL};
    }
    if (s->no_range.count)
        rows[nr++] =
            (prow){UINT32_MAX,        "(no range)",    s->no_range.count, s->no_range.total,
                   s->no_range.total, s->no_range.min, s->no_range.max,   NULL};
    if (nr)
        qsort(rows, nr, sizeof(*rows), by_total);
    return nr;
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
    char label[160];
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
        if (!per_src) {
            o->pid = g->pid;
            char raw[160];
            if (g->label)
                snprintf(raw, sizeof(raw), "%s", g->label);
            else
                snprintf(raw, sizeof(raw), "pid %llu", (unsigned long long)g->pid);
            clean(raw, strlen(raw), o->label, sizeof(o->label));
        }
    }
    if (per_src)
        for (size_t i = 0; i < s->n_src; i++) {
            char raw[160];
            const act_sum_src *src = &s->src[i];
            if (src->rank >= 0)
                snprintf(raw, sizeof(raw), "rank %lld (%s)", src->rank,
                         src->path ? base_of(src->path) : "-");
            else
                snprintf(raw, sizeof(raw), "%s", src->path ? base_of(src->path) : "-");
            clean(raw, strlen(raw), out[i].label, sizeof(out[i].label));
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
    return snprintf(b, sizeof(b), "%.*f", prec, v);
}

static void print_ops(FILE *f, const char *title, prow *rows, size_t nr, double busy, size_t lanes,
                      int with_self, int with_lanes, const act_summary_fmt *fmt, int width)
{
    int u = fmt->unit, pr = unit_prec[u];
    double k = unit_scale[u];
    if (with_lanes)
        fprintf(f, "%s: %zu names, busy %.*f %s on %zu lane%s\n", title, nr, pr, busy * k,
                unit_name[u], lanes, lanes == 1 ? "" : "s");
    else
        fprintf(f, "%s: %zu names, busy %.*f %s\n", title, nr, pr, busy * k, unit_name[u]);
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
        const prow *r = &rows[i];
        char b[32];
        int cw = snprintf(b, sizeof(b), "%llu", (unsigned long long)r->count);
        c[0].w = cw > c[0].w ? cw : c[0].w;
        double v[5] = {r->total, r->self, r->total / (double)r->count, r->min, r->max};
        for (int j = 0; j < 5; j++) {
            int w = numw(v[j] * k, pr);
            c[j + 1].w = w > c[j + 1].w ? w : c[j + 1].w;
        }
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
    show_names(rows, nr, fmt->names, (size_t)namew);
    fprintf(f, "  %-*s", namew, "name");
    for (int j = 0; j < 7; j++)
        if (c[j].on)
            fprintf(f, " %*s", c[j].w, c[j].head);
    fprintf(f, "\n");
    for (size_t i = 0; i < nr; i++) {
        const prow *r = &rows[i];
        size_t sc = cols_of(r->shown);
        fprintf(f, "  %s%*s", r->shown, (int)(sc < (size_t)namew ? namew - sc : 0), "");
        fprintf(f, " %*llu", c[0].w, (unsigned long long)r->count);
        double v[5] = {r->total, r->self, r->total / (double)r->count, r->min, r->max};
        for (int j = 0; j < 5; j++)
            if (c[j + 1].on)
                fprintf(f, " %*.*f", c[j + 1].w, pr, v[j] * k);
        fprintf(f, " %*.1f%%\n", c[6].w - 1, busy > 0 ? 100.0 * r->total / busy : 0.0);
    }
    free_shown(rows, nr);
}

static void print_groups(FILE *f, const act_summary *s, const act_summary_fmt *fmt, int width)
{
    size_t cap = s->n_src > s->n_gr ? s->n_src : s->n_gr;
    if (cap < 2)
        return;
    pgroup *g = calloc(cap, sizeof(*g));
    if (!g)
        return;
    size_t n = groups_of(s, g), hosts_seen = 0;
    for (size_t i = 0; i < n; i++)
        hosts_seen += g[i].host_slices > 0;
    if (n >= 2 && (s->n_src > 1 || hosts_seen >= 2)) {
        int u = fmt->unit, pr = unit_prec[u];
        double k = unit_scale[u];
        int per_src = s->n_src > 1;
        fprintf(f, "Per %s: %zu\n", per_src ? "rank" : "process", n);
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
        fprintf(f, "  %-*s %*s %*s %*s %*s\n", lw, per_src ? "rank" : "process", w[0], "dev ops",
                w[1], hd[0], w[2], hd[1], w[3], hd[2]);
        size_t slow = SIZE_MAX, fast = SIZE_MAX, hosts = 0;
        for (size_t i = 0; i < n; i++)
            hosts += g[i].host_slices > 0;
        for (size_t i = 0; i < n; i++) {
            fit(g[i].label, (size_t)lw);
            size_t sc = cols_of(g[i].label);
            fprintf(f, "  %s%*s %*llu %*.*f %*.*f %*.*f\n", g[i].label,
                    (int)(sc < (size_t)lw ? lw - sc : 0), "", w[0],
                    (unsigned long long)g[i].dev_slices, w[1], pr, span_of(&g[i]) * k, w[2], pr,
                    g[i].dev_busy * k, w[3], pr, g[i].host_busy * k);
            if (hosts >= 2 && !g[i].host_slices)
                continue; /* ranks are compared by their processes, not devices */
            if (slow == SIZE_MAX || span_of(&g[i]) > span_of(&g[slow]))
                slow = i;
            if (fast == SIZE_MAX || span_of(&g[i]) < span_of(&g[fast]))
                fast = i;
        }
        double a = span_of(&g[fast]), b = span_of(&g[slow]);
        char line[160];
        int l =
            snprintf(line, sizeof(line), "  spread of span: %.*f..%.*f %s (%+.1f%%), slowest: ", pr,
                     a * k, pr, b * k, unit_name[u], a > 0 ? 100.0 * (b - a) / a : 0.0);
        fit(g[slow].label, width - l > 12 ? (size_t)(width - l) : 12);
        fprintf(f, "%s%s\n", line, g[slow].label);
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

static void print_table(act_summary *s, FILE *f, const act_summary_fmt *fmt, prow *rows)
{
    int width = fmt->width > 0 ? fmt->width : term_width(f);
    size_t dl = 0, hl = 0;
    double db = busy_of(s, 1, &dl), hb = busy_of(s, 0, &hl);
    size_t nr = rows_of(s, 1, rows);
    print_ops(f, "Device ops", rows, nr, db, dl, 0, 1, fmt, width);
    nr = rows_of(s, 0, rows);
    print_ops(f, "Host calls", rows, nr, hb, hl, 1, 1, fmt, width);
    if (fmt->by_range) {
        nr = range_rows(s, rows);
        print_ops(f, "Device time by launching range", rows, nr, db, 0, 0, 0, fmt, width);
    }
    print_groups(f, s, fmt, width);
    if (s->late)
        fprintf(f,
                "note: %llu slices came after later ones on their lane had been counted; "
                "their busy and self time are approximate\n",
                (unsigned long long)s->late);
    print_all_counters(f, s);
    print_opencl(s, f);
}

/* ---- CSV -------------------------------------------------------------- */

static void csv_field(FILE *f, const char *s)
{
    char c[4096];
    clean(s, strlen(s), c, sizeof(c));
    fputc('"', f);
    for (const char *p = c; *p; p++) {
        if (*p == '"')
            fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

static void csv_rows(FILE *f, const char *sec, prow *rows, size_t nr, double busy, double k, int pr)
{
    for (size_t i = 0; i < nr; i++) {
        const prow *r = &rows[i];
        fprintf(f, "%s,", sec);
        csv_field(f, r->full);
        fprintf(f, ",%llu,%.*f,%.*f,%.*f,%.*f,%.*f,%.3f\n", (unsigned long long)r->count, pr,
                r->total * k, pr, r->self * k, pr, r->total / (double)r->count * k, pr, r->min * k,
                pr, r->max * k, busy > 0 ? 100.0 * r->total / busy : 0.0);
    }
}

static void print_csv(act_summary *s, FILE *f, const act_summary_fmt *fmt, prow *rows)
{
    const char *u = unit_name[fmt->unit];
    double k = unit_scale[fmt->unit];
    int pr = unit_prec[fmt->unit];
    size_t dl, hl;
    double db = busy_of(s, 1, &dl), hb = busy_of(s, 0, &hl);
    fprintf(f, "section,name,count,total_%s,self_%s,mean_%s,min_%s,max_%s,busy_pct\n", u, u, u, u,
            u);
    size_t nr = rows_of(s, 1, rows);
    csv_rows(f, "device", rows, nr, db, k, pr);
    nr = rows_of(s, 0, rows);
    csv_rows(f, "host", rows, nr, hb, k, pr);
    if (fmt->by_range) {
        nr = range_rows(s, rows);
        csv_rows(f, "range", rows, nr, db, k, pr);
    }
    size_t cap = s->n_src > s->n_gr ? s->n_src : s->n_gr;
    pgroup *g = calloc(cap ? cap : 1, sizeof(*g));
    size_t n = g ? groups_of(s, g) : 0;
    if (n >= 2) {
        fprintf(f,
                "\n%s,device_ops,host_slices,span_%s,device_busy_%s,device_total_%s,"
                "host_busy_%s\n",
                s->n_src > 1 ? "rank" : "process", u, u, u, u);
        for (size_t i = 0; i < n; i++) {
            csv_field(f, g[i].label);
            fprintf(f, ",%llu,%llu,%.*f,%.*f,%.*f,%.*f\n", (unsigned long long)g[i].dev_slices,
                    (unsigned long long)g[i].host_slices, pr, span_of(&g[i]) * k, pr,
                    g[i].dev_busy * k, pr, g[i].dev_total * k, pr, g[i].host_busy * k);
        }
    }
    free(g);
}

/* ---- JSON ------------------------------------------------------------- */

static json_t *jstr(const char *s)
{
    char c[4096];
    clean(s, strlen(s), c, sizeof(c));
    return json_string(c);
}

static json_t *json_rows(prow *rows, size_t nr, double busy, double k)
{
    json_t *a = json_array();
    for (size_t i = 0; i < nr; i++) {
        const prow *r = &rows[i];
        json_array_append_new(
            a, json_pack("{s:o,s:I,s:f,s:f,s:f,s:f,s:f,s:f}", "name", jstr(r->full), "count",
                         (json_int_t)r->count, "total", r->total * k, "self", r->self * k, "mean",
                         r->total / (double)r->count * k, "min", r->min * k, "max", r->max * k,
                         "busy_pct", busy > 0 ? 100.0 * r->total / busy : 0.0));
    }
    return a;
}

static void print_json(act_summary *s, FILE *f, const act_summary_fmt *fmt, prow *rows)
{
    double k = unit_scale[fmt->unit];
    size_t dl, hl;
    double db = busy_of(s, 1, &dl), hb = busy_of(s, 0, &hl);
    json_t *o = json_object();
    json_object_set_new(o, "timeunit", json_string(unit_name[fmt->unit]));
    size_t nr = rows_of(s, 1, rows);
    json_object_set_new(o, "device",
                        json_pack("{s:f,s:I,s:o}", "busy", db * k, "lanes", (json_int_t)dl, "rows",
                                  json_rows(rows, nr, db, k)));
    nr = rows_of(s, 0, rows);
    json_object_set_new(o, "host",
                        json_pack("{s:f,s:I,s:o}", "busy", hb * k, "lanes", (json_int_t)hl, "rows",
                                  json_rows(rows, nr, hb, k)));
    if (fmt->by_range) {
        nr = range_rows(s, rows);
        json_object_set_new(o, "by_range", json_rows(rows, nr, db, k));
    }
    size_t cap = s->n_src > s->n_gr ? s->n_src : s->n_gr;
    pgroup *g = calloc(cap ? cap : 1, sizeof(*g));
    size_t n = g ? groups_of(s, g) : 0;
    json_t *pa = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(
            pa, json_pack("{s:s,s:o,s:I,s:I,s:f,s:f,s:f,s:f}", "label", g[i].label, "rank",
                          g[i].rank >= 0 ? json_integer(g[i].rank) : json_null(), "device_ops",
                          (json_int_t)g[i].dev_slices, "host_slices", (json_int_t)g[i].host_slices,
                          "span", span_of(&g[i]) * k, "device_busy", g[i].dev_busy * k,
                          "device_total", g[i].dev_total * k, "host_busy", g[i].host_busy * k));
    free(g);
    json_object_set_new(o, s->n_src > 1 ? "ranks" : "processes", pa);
    json_object_set_new(o, "late_slices", json_integer((json_int_t)s->late));
    if (s->counters || s->n_src <= 1) {
        json_t *c = s->counters ? s->counters : s->n_src ? s->src[0].counters : NULL;
        json_object_set(o, "counters", c ? c : json_null());
    } else {
        json_t *ca = json_array();
        for (size_t i = 0; i < s->n_src; i++)
            json_array_append(ca, s->src[i].counters ? s->src[i].counters : json_null());
        json_object_set_new(o, "counters", ca);
    }
    json_dumpf(o, f, JSON_INDENT(2) | JSON_REAL_PRECISION(17) | JSON_ENSURE_ASCII);
    fputc('\n', f);
    json_decref(o);
}

void act_summary_print_fmt(act_summary *s, FILE *f, const act_summary_fmt *fmt)
{
    act_summary_finish(s);
    prow *rows = malloc((s->n_nm + 1) * sizeof(*rows));
    if (!rows) {
        fprintf(f, "summary: out of memory\n");
        return;
    }
    if (fmt->format == ACT_SUM_CSV)
        print_csv(s, f, fmt, rows);
    else if (fmt->format == ACT_SUM_JSON)
        print_json(s, f, fmt, rows);
    else
        print_table(s, f, fmt, rows);
    free(rows);
}

void act_summary_print(act_summary *s, FILE *f, int by_range)
{
    act_summary_fmt fmt = {.by_range = by_range, .unit = ACT_SUM_US};
    act_summary_print_fmt(s, f, &fmt);
}
