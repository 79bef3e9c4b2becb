/*
 * summary_print.c -- prints what summary.c aggregated: a table fitted to
 * the terminal, CSV blocks or one JSON document; per-process or per-rank
 * rows with their spread; the trace's counters and its error lines. The
 * rows themselves (safe names, figures, top rows) are summary_rows.c's.
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
#include "summary_rows.h"

#define MAX_ERROR_LINES 5

static const char *const unit_name[] = {"ns", "us", "ms", "s"};
static const double unit_scale[] = {1000.0, 1.0, 1e-3, 1e-6};
static const int unit_prec[] = {0, 3, 3, 6};

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

/* The columns a figure takes in the table (grouped). */
static int numw(double v, int prec)
{
    char b[64];
    act_sum_fig_text(b, sizeof(b), v, prec);
    act_sum_digits_group(b, sizeof(b));
    return (int)strlen(b);
}

/* A count as the table prints it (grouped). */
static const char *count_text(char *b, size_t cap, unsigned long long n)
{
    snprintf(b, cap, "%llu", n);
    act_sum_digits_group(b, cap);
    return b;
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
    fprintf(f, "%s: %llu names", title, (unsigned long long)t->names);
    if (busy)
        fprintf(f, ", busy %s %s", busy, unit);
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
    /* busy < 0: times that are no share of busy time (the delays) */
    print_head(f, title, t, busy < 0 ? NULL : act_sum_tfig(s, fb, sizeof(fb), busy * k, pr), lanes,
               with_lanes, unit_name[u]);
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
    tcol c[7] = {{"count", 5, 1}, {h[1], 0, 1}, {h[2], 0, with_self},   {h[3], 0, 1},
                 {h[4], 0, 1},    {h[5], 0, 1}, {"busy%", 6, busy >= 0}};
    for (int j = 1; j < 6; j++)
        c[j].w = (int)strlen(c[j].head);
    for (size_t i = 0; i < nr; i++) {
        const prow *r = sect_row(t, i);
        char b[32];
        int cw = (int)strlen(count_text(b, sizeof(b), (unsigned long long)r->count));
        c[0].w = cw > c[0].w ? cw : c[0].w;
        double v[5];
        row_figs(r, v);
        for (int j = 0; j < 5; j++) {
            int w = numw(v[j] * k, pr);
            c[j + 1].w = w > c[j + 1].w ? w : c[j + 1].w;
        }
        int w = numw(act_sum_pct_of(r->total, busy), 1) + 1;
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
    act_sum_show_names(t->rows, t->nr, fmt->names, (size_t)namew);
    fprintf(f, "  %-*s", namew, "name");
    for (int j = 0; j < 7; j++)
        if (c[j].on)
            fprintf(f, " %*s", c[j].w, c[j].head);
    fprintf(f, "\n");
    for (size_t i = 0; i < nr; i++) {
        const prow *r = sect_row(t, i);
        const char *name = i < t->nr ? (r->shown ? r->shown : "?") : t->other_label;
        size_t sc = act_sum_cols_of(name);
        fprintf(f, "  %s%*s", name, (int)(sc < (size_t)namew ? namew - sc : 0), "");
        fprintf(f, " %*s", c[0].w, count_text(fb, sizeof(fb), (unsigned long long)r->count));
        double v[5];
        row_figs(r, v);
        for (int j = 0; j < 5; j++)
            if (c[j + 1].on)
                fprintf(f, " %*s", c[j + 1].w, act_sum_tfig(s, fb, sizeof(fb), v[j] * k, pr));
        if (c[6].on)
            fprintf(f, " %*s%%", c[6].w - 1,
                    act_sum_fig(s, fb, sizeof(fb), act_sum_pct_of(r->total, busy), 1));
        fputc('\n', f);
    }
    act_sum_free_shown(t->rows, t->nr);
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
        if (*slow == SIZE_MAX || act_sum_span_of(&g[i]) > act_sum_span_of(&g[*slow]))
            *slow = i;
        if (*fast == SIZE_MAX || act_sum_span_of(&g[i]) < act_sum_span_of(&g[*fast]))
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
        act_sum_fig(s, fp, sizeof(fp), pc, 1);
    int l = snprintf(line, sizeof(line), "  spread of span: %s..%s %s (%s%%), slowest: ",
                     act_sum_tfig(s, fa, sizeof(fa), a * k, pr),
                     act_sum_tfig(s, fb, sizeof(fb), b * k, pr), unit_name[u], fp);
    snprintf(label, sizeof(label), "%s", slowest);
    act_sum_fit(label, width - l > 12 ? (size_t)(width - l) : 12);
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
        double v[3] = {act_sum_span_of(&g[i]), g[i].dev_busy, g[i].host_busy};
        for (int j = 0; j < 3; j++)
            w[j + 1] = numw(v[j] * k, pr) > w[j + 1] ? numw(v[j] * k, pr) : w[j + 1];
    }
    int lw = width - 2 - (w[0] + w[1] + w[2] + w[3] + 4);
    lw = lw < 16 ? 16 : lw;
    fprintf(f, "  %-*s %*s %*s %*s %*s\n", lw, s->n_src > 1 ? "rank" : "process", w[0], "dev ops",
            w[1], hd[0], w[2], hd[1], w[3], hd[2]);
    for (size_t i = 0; i < n; i++) {
        char label[160], f1[64], f2[64], f3[64];
        act_sum_group_label(s, &g[i], label, sizeof(label));
        act_sum_fit(label, (size_t)lw);
        size_t sc = act_sum_cols_of(label);
        char f0[32];
        fprintf(f, "  %s%*s %*s %*s %*s %*s\n", label, (int)(sc < (size_t)lw ? lw - sc : 0), "",
                w[0], count_text(f0, sizeof(f0), (unsigned long long)g[i].dev_slices), w[1],
                act_sum_tfig(s, f1, sizeof(f1), act_sum_span_of(&g[i]) * k, pr), w[2],
                act_sum_tfig(s, f2, sizeof(f2), g[i].dev_busy * k, pr), w[3],
                act_sum_tfig(s, f3, sizeof(f3), g[i].host_busy * k, pr));
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
    size_t n = act_sum_groups_of(s, g), hosts_seen = 0;
    for (size_t i = 0; i < n; i++)
        hosts_seen += g[i].host_slices > 0;
    if (n >= 2 && (s->n_src > 1 || hosts_seen >= 2)) {
        fprintf(f, "Per %s: %zu%s\n", s->n_src > 1 ? "rank" : "process", n,
                n > rows_cap(fmt) ? " (the first ones shown)" : "");
        size_t slow, fast;
        spread_of(g, n, &slow, &fast);
        double a = act_sum_span_of(&g[fast]), b = act_sum_span_of(&g[slow]);
        char slowest[160];
        act_sum_group_label(s, &g[slow], slowest, sizeof(slowest));
        print_group_rows(f, s, g, act_sum_groups_cap(g, n, rows_cap(fmt)), fmt, width);
        print_spread(f, s, a, b, slowest, fmt, width);
    }
    free(g);
}

static uint64_t jnum(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

/* A per-kind count ("dropped records 4 (api 3, mark 1)"), when not 0;
 * returns whether it printed. */
static int print_kind_counts(FILE *f, const char *label, json_t *o)
{
    uint64_t total = 0;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) total += json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
    if (!total)
        return 0;
    char line[2048];
    size_t at =
        (size_t)snprintf(line, sizeof(line), "  %-34s %llu", label, (unsigned long long)total);
    const char *sep = " (";
    json_object_foreach(o, k, v)
    {
        if (json_is_integer(v) && json_integer_value(v) > 0 && at < sizeof(line)) {
            char kc[128];
            act_sum_clean(k, strlen(k), kc, sizeof(kc));
            at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%s %lld", sep, kc,
                                   (long long)json_integer_value(v));
            sep = ", ";
        }
    }
    if (at < sizeof(line))
        snprintf(line + at, sizeof(line) - at, ")");
    act_sum_wrap(f, line, 4, 1);
    return 1;
}

static int print_errors(FILE *f, json_t *er)
{
    size_t n = json_array_size(er), i;
    json_t *v;
    if (!n)
        return 0;
    fprintf(f, "  %-34s %zu\n", "errors", n);
    json_array_foreach(er, i, v)
    {
        if (i == MAX_ERROR_LINES) {
            fprintf(f, "    and %zu more (see the trace's acceltrace.errors)\n", n - i);
            break;
        }
        char line[512];
        if (json_is_string(v))
            act_sum_clean(json_string_value(v), json_string_length(v), line, sizeof(line));
        else
            snprintf(line, sizeof(line), "(not a string)");
        char ind[sizeof(line) + 4];
        snprintf(ind, sizeof(ind), "    %s", line[0] ? line : "(no reason given)");
        act_sum_wrap(f, ind, 6, 0);
    }
    return 1;
}

/* A plain counter's line, when not 0; returns whether it printed. */
static int print_count(FILE *f, const char *label, uint64_t n)
{
    if (n)
        fprintf(f, "  %-34s %llu\n", label, (unsigned long long)n);
    return n != 0;
}

/* The processes whose spool was cut short: their pids, the first
 * MAX_TRUNCATED_PIDS of them, wrapped to 80 columns. */
#define MAX_TRUNCATED_PIDS 32

static int print_truncated(FILE *f, json_t *tr)
{
    size_t n = json_array_size(tr), i;
    if (!n)
        return 0;
    char line[64 + MAX_TRUNCATED_PIDS * 24];
    size_t at = (size_t)snprintf(line, sizeof(line), "  %-34s %zu", "truncated processes", n);
    json_t *v;
    json_array_foreach(tr, i, v)
    {
        if (i == MAX_TRUNCATED_PIDS) {
            at += (size_t)snprintf(line + at, sizeof(line) - at, ", and %zu more", n - i);
            break;
        }
        at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%lld", i ? ", " : " (pid ",
                               (long long)json_integer_value(v));
    }
    snprintf(line + at, sizeof(line) - at, ")");
    act_sum_wrap(f, line, 4, 1);
    return 1;
}

/* The counters of what was lost or went wrong, into f; returns how many
 * lines (0: all clean). Zero counters are not listed. */
static int print_problems(FILE *f, json_t *a)
{
    int n = print_kind_counts(f, "dropped records", json_object_get(a, "dropped"));
    n += print_kind_counts(f, "outside the capture window", json_object_get(a, "outside_window"));
    json_t *cb = json_object_get(a, "callbacks");
    if (jnum(cb, "pending") || jnum(cb, "lost"))
        n += fprintf(f, "  %-34s %llu pending, %llu lost\n", "device callbacks outstanding",
                     (unsigned long long)jnum(cb, "pending"),
                     (unsigned long long)jnum(cb, "lost")) > 0;
    json_t *sk = json_object_get(a, "skew");
    if (jnum(sk, "device_before_launch"))
        n += fprintf(f, "  %-34s %llu (max %.3f us)\n", "device start before host launch",
                     (unsigned long long)jnum(sk, "device_before_launch"),
                     (double)jnum(sk, "max_ns") / 1000.0) > 0;
    /* The timeline's one counters table (timeline.c), then the writer's. */
    for (size_t k = 0; k < act_tl_n_counters; k++)
        if (!act_tl_counters[k].info)
            n += print_count(f, act_tl_counters[k].label, jnum(a, act_tl_counters[k].key));
    n += print_count(f, "invalid UTF-8 sequences replaced", jnum(a, "invalid_utf8"));
    n += print_truncated(f, json_object_get(a, "truncated_processes"));
    return n + print_errors(f, json_object_get(a, "errors"));
}

/* The counters that count what is so (act_tl_counter.info), not 0,
 * joined: "111 launch-to-device flows". */
static void info_counts(json_t *a, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = 0;
    for (size_t k = 0; k < act_tl_n_counters && o < cap; k++)
        if (act_tl_counters[k].info && jnum(a, act_tl_counters[k].key))
            o += (size_t)snprintf(out + o, cap - o, "%s%llu %s", o ? ", " : "",
                                  (unsigned long long)jnum(a, act_tl_counters[k].key),
                                  act_tl_counters[k].label);
}

/* "Counters: all clean (111 launch-to-device flows)" when nothing was lost
 * or went wrong; else the counters that are not 0, one a line. */
static void print_counters(FILE *f, json_t *a, const char *whose)
{
    if (!json_is_object(a)) {
        fprintf(f, "Counters%s: none in this trace (not written by acceltrace)\n", whose);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    int n = m ? print_problems(m, a) : -1;
    if (m)
        fclose(m);
    char info[256];
    info_counts(a, info, sizeof(info));
    if (n == 0) {
        size_t cols = strlen(whose) + strlen(info) + 23; /* "Counters: all clean (...)" */
        if (!info[0])
            fprintf(f, "Counters%s: all clean\n", whose);
        else if (cols <= 80)
            fprintf(f, "Counters%s: all clean (%s)\n", whose, info);
        else
            fprintf(f, "Counters%s: all clean\n  %s\n", whose, info);
    } else {
        fprintf(f, "Counters%s:\n", whose);
        if (n > 0)
            fputs(text, f);
        else /* no memory for the buffer: print them straight */
            print_problems(f, a);
        for (size_t k = 0; k < act_tl_n_counters; k++)
            if (act_tl_counters[k].info)
                print_count(f, act_tl_counters[k].label, jnum(a, act_tl_counters[k].key));
    }
    free(text);
}

static void print_all_counters(FILE *f, act_summary *s)
{
    if (s->counters || s->n_src <= 1) {
        print_counters(f, s->counters ? s->counters : s->n_src ? s->src[0].counters : NULL, "");
        return;
    }
    for (size_t i = 0; i < s->n_src; i++) {
        char whose[200], raw[180];
        snprintf(raw, sizeof(raw), "%s", s->src[i].path ? act_sum_base_of(s->src[i].path) : "-");
        act_sum_clean(raw, strlen(raw), whose + 4, sizeof(whose) - 6);
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
    sect dev, host, range, delay;
    double db, hb;
    size_t dl, hl;
} sections;

/* The sections of s, each holding at most cap rows (rows: 4 * cap). */
static void sections_of(act_summary *s, prow *rows, size_t cap, int by_range, sections *x)
{
    x->db = act_sum_busy_of(s, 1, &x->dl);
    x->hb = act_sum_busy_of(s, 0, &x->hl);
    act_sum_sect_begin(&x->dev, rows, cap);
    act_sum_sect_of(s, 1, &x->dev);
    act_sum_sect_begin(&x->host, rows + cap, cap);
    act_sum_sect_of(s, 0, &x->host);
    act_sum_sect_begin(&x->range, rows + 2 * cap, cap);
    if (by_range)
        act_sum_range_sect(s, &x->range);
    act_sum_sect_begin(&x->delay, rows + 3 * cap, cap);
    act_sum_delay_sect(s, &x->delay);
}

static void print_table(act_summary *s, FILE *f, const act_summary_fmt *fmt, sections *x)
{
    int width = fmt->width > 0 ? fmt->width : term_width(f);
    print_ops(s, f, "Device ops", &x->dev, x->db, x->dl, 0, 1, fmt, width);
    print_ops(s, f, "Host calls", &x->host, x->hb, x->hl, 1, 1, fmt, width);
    if (fmt->by_range)
        print_ops(s, f,
                  fmt->by_python_line ? "Device time by launching Python line"
                                      : "Device time by launching range",
                  &x->range, x->db, 0, 0, 0, fmt, width);
    if (sect_shown(&x->delay))
        print_ops(s, f, "Launch to start (device ops: queued to start)", &x->delay, -1, 0, 0, 0,
                  fmt, width);
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
        act_sum_clean(s, n, c, n + 8);
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
            fprintf(f, ",%s", act_sum_fig(s, b, sizeof(b), v[j] * k, pr));
        fprintf(f, ",%s\n", act_sum_fig(s, b, sizeof(b), act_sum_pct_of(r->total, busy), 3));
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
        csv_rows(s, f, fmt->by_python_line ? "python_line" : "range", &x->range, x->db, k, pr);
    if (sect_shown(&x->delay))
        csv_rows(s, f, "launch_to_start", &x->delay, 0, k, pr);
    size_t cap = s->n_src > s->n_gr ? s->n_src : s->n_gr;
    pgroup *g = calloc(cap + 1, sizeof(*g));
    size_t n = g ? act_sum_groups_of(s, g) : 0;
    if (n >= 2) {
        fprintf(f,
                "\n%s,device_ops,host_slices,span_%s,device_busy_%s,device_total_%s,"
                "host_busy_%s\n",
                s->n_src > 1 ? "rank" : "process", u, u, u, u);
        n = act_sum_groups_cap(g, n, rows_cap(fmt));
        for (size_t i = 0; i < n; i++) {
            char b[4][64], label[160];
            act_sum_group_label(s, &g[i], label, sizeof(label));
            csv_field(f, label);
            fprintf(f, ",%llu,%llu,%s,%s,%s,%s\n", (unsigned long long)g[i].dev_slices,
                    (unsigned long long)g[i].host_slices,
                    act_sum_fig(s, b[0], sizeof(b[0]), act_sum_span_of(&g[i]) * k, pr),
                    act_sum_fig(s, b[1], sizeof(b[1]), g[i].dev_busy * k, pr),
                    act_sum_fig(s, b[2], sizeof(b[2]), g[i].dev_total * k, pr),
                    act_sum_fig(s, b[3], sizeof(b[3]), g[i].host_busy * k, pr));
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
    jset(o, "busy_pct", jfig(s, act_sum_pct_of(r->total, busy)));
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
    size_t n = g ? act_sum_groups_cap(g, act_sum_groups_of(s, g), rows) : 0;
    json_t *pa = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        char label[160];
        act_sum_group_label(s, &g[i], label, sizeof(label));
        jset(o, "label", jstr(label));
        jset(o, "rank", g[i].rank >= 0 ? json_integer(g[i].rank) : json_null());
        if (g[i].other)
            jset(o, "other", json_integer(g[i].other));
        jset(o, "device_ops", json_integer((json_int_t)g[i].dev_slices));
        jset(o, "host_slices", json_integer((json_int_t)g[i].host_slices));
        jset(o, "span", jfig(s, act_sum_span_of(&g[i]) * k));
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
        jset(o, fmt->by_python_line ? "by_python_line" : "by_range",
             json_rows(s, &x->range, x->db, k));
        if (x->range.other_names) { /* an array stays an array: the rest beside it */
            json_t *r = json_row(s, &x->range.other, x->db, k);
            jset(r, "names", json_integer((json_int_t)x->range.other_names));
            jset(o, fmt->by_python_line ? "by_python_line_other" : "by_range_other", r);
        }
    }
    if (sect_shown(&x->delay))
        jset(o, "launch_to_start", json_rows(s, &x->delay, 0, k));
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
    prow *rows = malloc(4 * cap * sizeof(*rows));
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
