/*
 * summary_rows.c -- the rows the summary prints (summary_rows.h): names
 * cleaned (control bytes and invalid UTF-8 become '?'), demangled and
 * shortened so distinct names stay distinct; figures; each section's top
 * rows by total with an exact "other" row; the processes or ranks of the
 * per-process rows, in a batch export's order.
 */
#include "summary_rows.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "json_escape.h"

/* ---- safe text ------------------------------------------------------- */

/* Copy name[0..len) to out (at most cap-1 bytes), turning control bytes
 * (C0, DEL, C1) and invalid UTF-8 into '?'. Returns the columns (code
 * points) written. */
size_t act_sum_clean(const char *name, size_t len, char *out, size_t cap)
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

size_t act_sum_cols_of(const char *s)
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

/* The columns of a parenthesised end ("(program 24)"), if the name has
 * one that fits in half of w; else 0. */
static size_t paren_tail(const char *s, size_t w)
{
    size_t n = strlen(s);
    const char *open = n && s[n - 1] == ')' ? strrchr(s, '(') : NULL;
    if (!open || open == s || open[-1] != ' ')
        return 0;
    size_t t = act_sum_cols_of(open); /* UTF-8: columns, not bytes */
    return t <= w / 2 ? t : 0;
}

/* Cut to `w` columns keeping head and tail ("abc...xyz"): names often
 * differ at the end (suffixes, template arguments), and a parenthesised
 * end (the program of a kernel, "exec (program 12)") is kept whole. */
void act_sum_fit(char *s, size_t w)
{
    size_t c = act_sum_cols_of(s);
    if (c <= w || w < 8)
        return;
    size_t tail = paren_tail(s, w);
    if (!tail)
        tail = w / 3;
    size_t head = w - 3 - tail;
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
    act_sum_clean(src, strlen(src), c, cap);
    if (b) {
        base_name(c, b, cap, d != NULL);
        free(c);
        c = b;
    }
    free(d);
    if (w)
        act_sum_fit(c, w);
    size_t want = strlen(c) + SHOWN_SUFFIX_ROOM;
    char *shrunk = realloc(c, want);
    if (shrunk) {
        c = shrunk;
        cap = want;
    }
    r->shown = c;
    r->shown_cap = cap;
    return 0;
}

/* Every row's `shown` name: clean, shortened per mode, within w columns,
 * and no two rows alike (a clash gets the full name's hash appended, then
 * its row number). */
int act_sum_show_names(prow *r, size_t n, int names, size_t w)
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
                act_sum_fit(r[i].shown, w);
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
                if (w && act_sum_cols_of(q->shown) + sl > w)
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
#define FIG_FIXED_MAX 1e15

int act_sum_fig_text(char *b, size_t cap, double v, int prec)
{
    if (!isfinite(v))
        return snprintf(b, cap, "%s", FIG_OVERFLOW);
    if (fabs(v) >= FIG_FIXED_MAX)
        return snprintf(b, cap, "%.*e", prec ? prec : 3, v);
    return snprintf(b, cap, "%.*f", prec, v);
}

/* The same, counted in s->overflowed when it is one (said under the
 * tables, and as "overflowed" in the JSON). */
const char *act_sum_fig(act_summary *s, char *b, size_t cap, double v, int prec)
{
    if (!isfinite(v))
        s->overflowed++;
    act_sum_fig_text(b, cap, v, prec);
    return b;
}

/* Digits grouped by thousands in place ("91700.248" -> "91,700.248"), in
 * the integer part of a fixed-point figure or a count; an exponent form,
 * "overflow" or a figure that would not fit cap is left as it is. */
void act_sum_digits_group(char *b, size_t cap)
{
    size_t lead = b[0] == '-' ? 1 : 0, digits = 0, len = strlen(b);
    while (b[lead + digits] >= '0' && b[lead + digits] <= '9')
        digits++;
    if (digits < 4 || strchr(b, 'e'))
        return;
    size_t commas = (digits - 1) / 3;
    if (len + commas + 1 > cap)
        return;
    memmove(b + lead + digits + commas, b + lead + digits, len - lead - digits + 1);
    size_t from = lead + digits, to = from + commas;
    for (size_t n = 0; from > lead; n++) {
        if (n && n % 3 == 0)
            b[--to] = ',';
        b[--to] = b[--from];
    }
}

/* A line of the summary in 80 columns: cut at the last space that fits
 * (a list: after the last ", ", so that its items stay whole), each further piece
 * indented by `indent` columns; a word longer than a line is cut where
 * the line ends. */
void act_sum_wrap(FILE *f, const char *line, int indent, int list)
{
    size_t width = 80, n = strlen(line), at = 0, first = 1;
    while (at < n) {
        size_t room = first ? width : width - (size_t)indent, len = n - at;
        if (len > room) { /* after the last ", " that fits, else the last space */
            size_t cut = 0;
            for (size_t i = room / 3; list && i + 1 < room; i++)
                if (line[at + i] == ',' && line[at + i + 1] == ' ')
                    cut = i + 1;
            for (size_t i = room; !cut && i > room / 3; i--)
                if (line[at + i] == ' ')
                    cut = i;
            len = cut ? cut : room;
        }
        fprintf(f, "%*s%.*s\n", first ? 0 : indent, "", (int)len, line + at);
        at += len;
        while (line[at] == ' ')
            at++;
        first = 0;
    }
}

/* act_sum_fig for the table: grouped (the CSV keeps plain figures). */
const char *act_sum_tfig(act_summary *s, char *b, size_t cap, double v, int prec)
{
    act_sum_fig(s, b, cap, v, prec);
    act_sum_digits_group(b, cap);
    return b;
}

double act_sum_pct_of(double part, double busy)
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

void act_sum_sect_begin(sect *t, prow *rows, size_t cap)
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

void act_sum_sect_of(act_summary *s, int device, sect *t)
{
    for (size_t i = 0; i < s->n_nm; i++) {
        const act_sum_name *n = &s->nm[i];
        if (n->device == device && n->count)
            sect_add(
                t, (prow){(uint32_t)i, n->s, n->count, n->total, n->self, n->min, n->max, NULL, 0});
    }
    sect_end(t);
}

void act_sum_range_sect(act_summary *s, sect *t)
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

void act_sum_delay_sect(act_summary *s, sect *t)
{
    for (size_t i = 0; i < s->n_nm; i++) {
        const act_sum_rrow *r = &s->nm[i].delay;
        if (r->count)
            sect_add(t, (prow){(uint32_t)i, s->nm[i].s, r->count, r->total, r->total, r->min,
                               r->max, NULL, 0});
    }
    sect_end(t);
}

void act_sum_free_shown(prow *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].shown);
        r[i].shown = NULL;
    }
}

double act_sum_busy_of(const act_summary *s, int device, size_t *lanes)
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

const char *act_sum_base_of(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* A row's label, made safe: a process's name (or "pid N"), a rank and
 * its file, or "(other: N processes)". Made when printed, not kept per
 * process: a trace may hold a million. */
void act_sum_group_label(const act_summary *s, const pgroup *g, char *out, size_t cap)
{
    char raw[160];
    if (g->other) {
        snprintf(raw, sizeof(raw), "(other: %u %s)", g->other,
                 s->n_src > 1 ? "ranks" : "processes");
    } else if (s->n_src > 1) {
        const act_sum_src *src = &s->src[g->idx];
        if (src->rank >= 0)
            snprintf(raw, sizeof(raw), "rank %lld (%s)", src->rank,
                     src->path ? act_sum_base_of(src->path) : "-");
        else
            snprintf(raw, sizeof(raw), "%s", src->path ? act_sum_base_of(src->path) : "-");
    } else if (s->gr[g->idx].label) {
        snprintf(raw, sizeof(raw), "%s", s->gr[g->idx].label);
    } else {
        snprintf(raw, sizeof(raw), "pid %llu", (unsigned long long)g->pid);
    }
    act_sum_clean(raw, strlen(raw), out, cap);
}

/* Rows from `cap` on summed into row `cap` (its `other` = how many), so
 * that a trace of a million processes prints cap + 1 rows. Returns the
 * rows to print. */
size_t act_sum_groups_cap(pgroup *g, size_t n, size_t cap)
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
size_t act_sum_groups_of(const act_summary *s, pgroup *out)
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

double act_sum_span_of(const pgroup *g)
{
    return g->last > g->first ? g->last - g->first : 0;
}
