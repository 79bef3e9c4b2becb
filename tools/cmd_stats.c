/*
 * cmd_stats.c -- `acceltrace stats [--report NAME,...] [--format F]
 * [--timeunit U] FILE...`: named reports over SQLite traces, as nsys
 * users know them (kern_sum, api_sum, mem_sum, ...). A JSON trace (ours or
 * torch.profiler's) is made a SQLite trace first, in a temporary folder
 * (trace_import.c), so that the same SQL answers for it.
 *
 * A report is a SQL file in the reports folder (tools/reports in the tree,
 * share/acceltrace/reports installed, ACCELTRACE_REPORTS_DIR to use
 * another): its first line, "-- NAME: what it shows", is its description;
 * the query runs over the views of docs/sqlite.md, with two aggregates this
 * command adds: median(x) and stdev(x) (sample standard deviation). A
 * column whose name ends in "(ns)" is a time: printed in --timeunit and
 * renamed so. Users read, copy and change the reports; nothing about them
 * is compiled in.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "core/common.h"
#include "help.h"
#include "self_dir.h"
#include "trace_import.h"
#include "writers/sqlite_api.h"

#define DEFAULT_REPORTS "kern_sum,api_sum,mem_time_sum,mem_sum,range_sum"

enum { F_TABLE, F_CSV, F_JSON };

typedef struct stats_opts {
    char reports[1024];
    int format;
    int unit; /* index in units[] */
    char dir[PATH_MAX];
} stats_opts;

static const char *const units[] = {"ns", "us", "ms", "s"};
static const double unit_div[] = {1.0, 1e3, 1e6, 1e9};

/* ---- median and stdev ---------------------------------------------------- */

typedef struct agg {
    double *v;
    size_t n, cap;
    int nomem;
} agg;

static void agg_step(sqlite3_context *c, int argc, sqlite3_value **argv)
{
    (void)argc;
    agg *a = sq.sqlite3_aggregate_context(c, sizeof(*a));
    if (!a || sq.sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        double *v = realloc(a->v, cap * sizeof(*v));
        if (!v) {
            a->nomem = 1;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = sq.sqlite3_value_double(argv[0]);
}

static int dbl_cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static agg *agg_final(sqlite3_context *c)
{
    agg *a = sq.sqlite3_aggregate_context(c, 0);
    if (a && a->nomem) {
        free(a->v);
        sq.sqlite3_result_error_nomem(c);
        return NULL;
    }
    if (!a || !a->n) {
        if (a)
            free(a->v);
        sq.sqlite3_result_null(c);
        return NULL;
    }
    return a;
}

static void median_final(sqlite3_context *c)
{
    agg *a = agg_final(c);
    if (!a)
        return;
    qsort(a->v, a->n, sizeof(double), dbl_cmp);
    double m = a->n % 2 ? a->v[a->n / 2] : (a->v[a->n / 2 - 1] + a->v[a->n / 2]) / 2.0;
    free(a->v);
    sq.sqlite3_result_double(c, m);
}

/* Sample standard deviation (n - 1), 0 for one value: what nsys prints. */
static void stdev_final(sqlite3_context *c)
{
    agg *a = agg_final(c);
    if (!a)
        return;
    double mean = 0, m2 = 0;
    for (size_t i = 0; i < a->n; i++) { /* Welford */
        double d = a->v[i] - mean;
        mean += d / (double)(i + 1);
        m2 += d * (a->v[i] - mean);
    }
    free(a->v);
    sq.sqlite3_result_double(c, a->n > 1 ? sqrt(m2 / (double)(a->n - 1)) : 0.0);
}

/* ---- reports --------------------------------------------------------------- */

/* The reports folder: ACCELTRACE_REPORTS_DIR, else beside this command
 * (../share/acceltrace/reports installed and in the build tree). */
static int reports_dir(char *out, size_t len)
{
    const char *env = getenv("ACCELTRACE_REPORTS_DIR");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return 0;
    }
    char exe[PATH_MAX];
    if (act_self_dir(exe, sizeof(exe)) != 0)
        return -1;
    if ((size_t)snprintf(out, len, "%.*s/../share/acceltrace/reports", (int)(len - 32), exe) >= len)
        return -1;
    return access(out, R_OK) == 0 ? 0 : -1;
}

/* A report's SQL (malloc'd), NULL with errno. */
static char *report_sql(const stats_opts *o, const char *name)
{
    char path[PATH_MAX + 64];
    for (const char *c = name; *c; c++)
        if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9'))) {
            errno = ENOENT;
            return NULL;
        }
    snprintf(path, sizeof(path), "%s/%s.sql", o->dir, name);
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *sql = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&sql, &cap, '\0', f);
    fclose(f);
    if (n < 0) {
        free(sql);
        errno = EIO;
        return NULL;
    }
    return sql;
}

/* ---- one report's rows ------------------------------------------------------- */

typedef struct table {
    int ncol;
    char **head;  /* column names as printed */
    int *is_time; /* "(ns)" columns */
    json_t *rows; /* array of arrays of values (unit applied) */
} table;

static void table_free(table *t)
{
    for (int i = 0; i < t->ncol; i++)
        free(t->head[i]);
    free(t->head);
    free(t->is_time);
    json_decref(t->rows);
}

static char *column_head(const char *name, int unit, int *is_time)
{
    size_t n = strlen(name);
    *is_time = n >= 4 && !strcmp(name + n - 4, "(ns)");
    char *h = malloc(n + 4);
    if (!h)
        return NULL;
    if (*is_time)
        snprintf(h, n + 4, "%.*s(%s)", (int)(n - 4), name, units[unit]);
    else
        memcpy(h, name, n + 1);
    return h;
}

static json_t *cell(sqlite3_stmt *st, int i, int is_time, int unit)
{
    switch (sq.sqlite3_column_type(st, i)) {
    case SQLITE_NULL: return json_null();
    case SQLITE_INTEGER:
        if (!is_time || unit == 0)
            return json_integer((json_int_t)sq.sqlite3_column_int64(st, i));
        return json_real((double)sq.sqlite3_column_int64(st, i) / unit_div[unit]);
    case SQLITE_FLOAT: {
        double d = sq.sqlite3_column_double(st, i);
        return json_real(is_time ? d / unit_div[unit] : d);
    }
    default: return json_string((const char *)sq.sqlite3_column_text(st, i));
    }
}

/* Runs sql; 0 and the table, or -1 with the reason in err. */
static int run_report(sqlite3 *db, const char *sql, int unit, table *t, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    memset(t, 0, sizeof(*t));
    if (sq.sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s", sq.sqlite3_errmsg(db));
        return -1;
    }
    t->ncol = sq.sqlite3_column_count(st);
    t->head = calloc((size_t)t->ncol + 1, sizeof(*t->head));
    t->is_time = calloc((size_t)t->ncol + 1, sizeof(*t->is_time));
    t->rows = json_array();
    int rc = t->head && t->is_time && t->rows ? 0 : -1;
    for (int i = 0; !rc && i < t->ncol; i++)
        if (!(t->head[i] = column_head(sq.sqlite3_column_name(st, i), unit, &t->is_time[i])))
            rc = -1;
    int s;
    while (!rc && (s = sq.sqlite3_step(st)) == SQLITE_ROW) {
        json_t *row = json_array();
        for (int i = 0; row && i < t->ncol; i++)
            json_array_append_new(row, cell(st, i, t->is_time[i], unit));
        if (!row || json_array_append_new(t->rows, row))
            rc = -1;
    }
    if (!rc && s != SQLITE_DONE) {
        snprintf(err, errlen, "%s", sq.sqlite3_errmsg(db));
        rc = -1;
    } else if (rc) {
        snprintf(err, errlen, "out of memory");
    }
    sq.sqlite3_finalize(st);
    return rc;
}

/* ---- printing -------------------------------------------------------------- */

/* Digits of |x| grouped by thousands into out. */
static void grouped(unsigned long long x, char *out, size_t len)
{
    char raw[32];
    int n = snprintf(raw, sizeof(raw), "%llu", x);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < len; i++) {
        out[o++] = raw[i];
        if ((n - i - 1) % 3 == 0 && i != n - 1)
            out[o++] = ',';
    }
    out[o] = '\0';
}

/* A value as the table shows it: numbers grouped by thousands, reals with
 * one decimal (three in a unit above ns), text as is. */
static void cell_text(const json_t *v, int is_time, int unit, char *out, size_t len)
{
    char g[48];
    if (json_is_null(v)) {
        snprintf(out, len, "-");
    } else if (json_is_integer(v)) {
        long long x = (long long)json_integer_value(v);
        grouped(x < 0 ? 0ull - (unsigned long long)x : (unsigned long long)x, g, sizeof(g));
        snprintf(out, len, "%s%s", x < 0 ? "-" : "", g);
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        int decimals = is_time && unit > 0 ? 3 : 1;
        double scale = decimals == 3 ? 1000.0 : 10.0, a = fabs(d);
        if (!isfinite(d) || a >= 1e18) {
            snprintf(out, len, "%g", d);
            return;
        }
        unsigned long long r = (unsigned long long)llround(a * scale);
        grouped(r / (unsigned long long)scale, g, sizeof(g));
        snprintf(out, len, "%s%s.%0*llu", d < 0 ? "-" : "", g, decimals,
                 r % (unsigned long long)scale);
    } else {
        snprintf(out, len, "%s", json_string_value(v));
    }
}

static void print_table(const table *t, const char *title, int unit, FILE *f)
{
    int *w = calloc((size_t)t->ncol + 1, sizeof(int));
    if (!w)
        return;
    char buf[512];
    for (int i = 0; i < t->ncol; i++)
        w[i] = (int)strlen(t->head[i]);
    size_t r;
    json_t *row;
    json_array_foreach(t->rows, r, row)
    {
        for (int i = 0; i < t->ncol; i++) {
            cell_text(json_array_get(row, (size_t)i), t->is_time[i], unit, buf, sizeof(buf));
            if ((int)strlen(buf) > w[i])
                w[i] = (int)strlen(buf);
        }
    }
    fprintf(f, "\n ** %s:\n\n", title);
    if (!json_array_size(t->rows)) {
        fprintf(f, " (no rows: the trace has nothing this report counts)\n");
        free(w);
        return;
    }
    for (int i = 0; i < t->ncol; i++) {
        if (i == t->ncol - 1)
            fprintf(f, " %s", t->head[i]);
        else
            fprintf(f, " %*s", w[i], t->head[i]);
    }
    fputc('\n', f);
    for (int i = 0; i < t->ncol; i++) {
        fputc(' ', f);
        for (int k = 0; k < w[i]; k++)
            fputc('-', f);
    }
    fputc('\n', f);
    json_array_foreach(t->rows, r, row)
    {
        for (int i = 0; i < t->ncol; i++) {
            json_t *v = json_array_get(row, (size_t)i);
            cell_text(v, t->is_time[i], unit, buf, sizeof(buf));
            if (i == t->ncol - 1 && json_is_string(v))
                fprintf(f, " %s", buf); /* the last column unpadded */
            else
                fprintf(f, " %*s", json_is_string(v) ? -w[i] : w[i], buf);
        }
        fputc('\n', f);
    }
    free(w);
}

static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void print_csv(const table *t, const char *report, const char *file, FILE *f)
{
    fputs("Report,File", f);
    for (int i = 0; i < t->ncol; i++) {
        fputc(',', f);
        csv_field(f, t->head[i]);
    }
    fputc('\n', f);
    size_t r;
    json_t *row;
    json_array_foreach(t->rows, r, row)
    {
        csv_field(f, report);
        fputc(',', f);
        csv_field(f, file);
        for (int i = 0; i < t->ncol; i++) {
            json_t *v = json_array_get(row, (size_t)i);
            fputc(',', f);
            char buf[512];
            if (json_is_string(v))
                csv_field(f, json_string_value(v));
            else if (json_is_integer(v))
                fprintf(f, "%lld", (long long)json_integer_value(v));
            else if (json_is_real(v))
                snprintf(buf, sizeof(buf), "%.17g", json_real_value(v)), fputs(buf, f);
        }
        fputc('\n', f);
    }
}

static json_t *table_json(const table *t, const char *report, const char *file)
{
    json_t *rows = json_array();
    size_t r;
    json_t *row;
    json_array_foreach(t->rows, r, row)
    {
        json_t *o = json_object();
        for (int i = 0; i < t->ncol; i++)
            json_object_set(o, t->head[i], json_array_get(row, (size_t)i));
        json_array_append_new(rows, o);
    }
    return json_pack("{s:s,s:s,s:o}", "report", report, "file", file, "rows", rows);
}

/* ---- one file --------------------------------------------------------------- */

/* Open a trace database read-only and check it is one: NULL with err. */
static sqlite3 *open_trace(const char *path, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    if (access(path, R_OK) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (sq.sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, db ? sq.sqlite3_errmsg(db) : "cannot open");
        sq.sqlite3_close(db);
        return NULL;
    }
    sqlite3_stmt *st = NULL;
    int ok = sq.sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1,
                                   &st, NULL) == SQLITE_OK &&
             sq.sqlite3_step(st) == SQLITE_ROW;
    if (!ok)
        snprintf(err, errlen,
                 "%s: not an acceltrace SQLite trace (%s); write one with 'acceltrace run -o "
                 "t.sqlite'",
                 path, sq.sqlite3_errmsg(db));
    sq.sqlite3_finalize(st);
    if (!ok) {
        sq.sqlite3_close(db);
        return NULL;
    }
    sq.sqlite3_create_function_v2(db, "median", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL,
                                  agg_step, median_final, NULL);
    sq.sqlite3_create_function_v2(db, "stdev", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL,
                                  agg_step, stdev_final, NULL);
    return db;
}

/* Whether path begins as a SQLite database does (else it is read as a
 * JSON trace). */
static int is_sqlite(const char *path)
{
    char head[16] = {0};
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(head, 1, sizeof(head), f) : 0;
    if (f)
        fclose(f);
    return n == sizeof(head) && !memcmp(head, "SQLite format 3", sizeof(head));
}

/* A JSON trace (ours, torch.profiler's; plain or gzip) as a SQLite trace in
 * a private temporary folder (trace_import.c): its path in db (removed by
 * act_dir_remove_flat), or 2 after saying why. */
static int json_db(const char *path, char *dir, size_t dirlen, char *db, size_t dblen)
{
    act_temp_template(dir, dirlen, "acceltrace-stats");
    if (!act_dir_make_temp(dir)) {
        fprintf(stderr, "acceltrace: stats: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    snprintf(db, dblen, "%s/trace.sqlite", dir);
    act_import_opts io = {.in_path = path, .out_path = db, .who = "stats"};
    if (act_trace_import(&io, NULL) == 0)
        return 0;
    act_dir_remove_flat(dir);
    return 2;
}

/* The reports of one file; 0, or 2 after saying why. */
static int stats_file(const stats_opts *o, const char *path, json_t *all)
{
    char err[PATH_MAX + 1024], dir[PATH_MAX], tmpdb[PATH_MAX + 16];
    int from_json = access(path, R_OK) == 0 && !is_sqlite(path);
    if (from_json && json_db(path, dir, sizeof(dir), tmpdb, sizeof(tmpdb)))
        return 2;
    sqlite3 *db = open_trace(from_json ? tmpdb : path, err, sizeof(err));
    if (from_json)
        act_dir_remove_flat(dir); /* open (or not): the file is no longer needed by name */
    if (!db) {
        fprintf(stderr, "acceltrace: stats: %s\n", err);
        return 2;
    }
    char list[1024];
    snprintf(list, sizeof(list), "%s", o->reports);
    int rc = 0;
    char *save = NULL;
    for (char *name = strtok_r(list, ",", &save); name && !rc; name = strtok_r(NULL, ",", &save)) {
        char *sql = report_sql(o, name);
        table t;
        if (run_report(db, sql, o->unit, &t, err, sizeof(err)) != 0) {
            fprintf(stderr, "acceltrace: stats: %s on %s: %s\n", name, path, err);
            rc = 2;
        } else if (o->format == F_TABLE) {
            char title[PATH_MAX + 128];
            snprintf(title, sizeof(title), "%s (%s)", name, path);
            print_table(&t, title, o->unit, stdout);
        } else if (o->format == F_CSV) {
            print_csv(&t, name, path, stdout);
        } else {
            json_array_append_new(all, table_json(&t, name, path));
        }
        table_free(&t);
        free(sql);
    }
    sq.sqlite3_close(db);
    return rc;
}

/* Every report named exists: 0, or 2 after naming the first that does not. */
static int check_reports(const stats_opts *o)
{
    char list[1024];
    snprintf(list, sizeof(list), "%s", o->reports);
    char *save = NULL;
    for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        char *sql = report_sql(o, name);
        if (!sql) {
            fprintf(stderr,
                    "acceltrace: stats: no report '%s' in %s ('acceltrace stats --list' lists "
                    "them)\n",
                    name, o->dir);
            return 2;
        }
        free(sql);
    }
    return 0;
}

/* --list: each report and the description of its first line. */
static int list_reports(const stats_opts *o)
{
    static const char *const known[] = {"kern_sum",  "api_sum",    "mem_sum",   "mem_time_sum",
                                        "range_sum", "kern_trace", "api_trace", "rank_sum",
                                        "cl_errors", "cl_leaks",   "cl_builds"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        char *sql = report_sql(o, known[i]);
        if (!sql)
            continue;
        const char *d = strstr(sql, ": ");
        const char *e = d ? strchr(d, '\n') : NULL;
        printf("%-13s %.*s\n", known[i], d && e ? (int)(e - d - 2) : 0, d ? d + 2 : "");
        free(sql);
    }
    printf("(SQL files in %s)\n", o->dir);
    return 0;
}

static int pick(const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i]))
            return i;
    return -1;
}

int act_cmd_stats(int argc, char **argv)
{
    static const char *const formats[] = {"table", "csv", "json"};
    static const struct option longs[] = {
        {"report", required_argument, NULL, 'r'},   {"format", required_argument, NULL, 'F'},
        {"timeunit", required_argument, NULL, 'U'}, {"list", no_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    stats_opts o = {.format = F_TABLE};
    snprintf(o.reports, sizeof(o.reports), "%s", DEFAULT_REPORTS);
    int c, list = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", longs, NULL)) != -1) {
        switch (c) {
        case 'r': snprintf(o.reports, sizeof(o.reports), "%s", optarg); break;
        case 'F':
            if ((o.format = pick(optarg, formats, 3)) < 0)
                return act_help_usage_error("stats", "--format wants table, csv or json, not '%s'",
                                            optarg);
            break;
        case 'U':
            if ((o.unit = pick(optarg, units, 4)) < 0)
                return act_help_usage_error("stats", "--timeunit wants ns, us, ms or s, not '%s'",
                                            optarg);
            break;
        case 'l': list = 1; break;
        case 'h': act_help_print("stats", stdout); return 0;
        default: return act_help_usage_error("stats", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (reports_dir(o.dir, sizeof(o.dir)) != 0) {
        fprintf(stderr, "acceltrace: stats: no reports folder beside this command (set "
                        "ACCELTRACE_REPORTS_DIR)\n");
        return 2;
    }
    if (list)
        return list_reports(&o);
    if (optind >= argc)
        return act_help_usage_error("stats", "no trace given (a .sqlite file: 'acceltrace run "
                                             "-o t.sqlite')");
    if (check_reports(&o))
        return 2;
    if (act_sqlite_load() != 0) {
        fprintf(stderr, "acceltrace: stats: needs libsqlite3.so.0 (Debian: libsqlite3-0)\n");
        return 2;
    }
    json_t *all = json_array();
    int rc = 0;
    for (int i = optind; i < argc && !rc; i++)
        rc = stats_file(&o, argv[i], all);
    if (!rc && o.format == F_JSON) {
        json_dumpf(all, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
        fputc('\n', stdout);
    }
    json_decref(all);
    return rc;
}
