/*
 * sqlite_writer.c -- the timeline as a SQLite database (`-o trace.sqlite`;
 * schema and views in docs/sqlite.md): the same events, args, flows and
 * metadata as the Chrome trace, for SQL. One more writer on the seam
 * (writer.h): one file and one row in writers.c.
 *
 * Layout: every event is a row of `events` (its phase, category, name,
 * process, thread, start and duration in integer nanoseconds of the
 * timeline) with its args as one JSON object (json_extract reads one);
 * names are interned once in `strings`. One row an event, not one an
 * arg: a kernel has a dozen args, and a row costs about a microsecond
 * (schema 1 had an args table: 3.2 M rows for 160 000 launches). Views (kernels, api_calls, memops,
 * ranges, marks, counters, flows, processes, threads) give the questions users ask a name, so
 * nobody has to learn the tables first. PRAGMA user_version is the schema
 * version (ACT_SQLITE_SCHEMA).
 *
 * libsqlite3 is not linked: the library is loaded into traced programs,
 * which must not get a second SQLite (or any new NEEDED entry) because of
 * us. It is loaded with dlopen the first time a SQLite file is written
 * (sqlite_api.c, shared with `acceltrace stats`); where it is missing the
 * writer says so and fails.
 *
 * The database is written into outfile.c's named temporary file with the
 * journal off and in one transaction (a file that is not complete is
 * removed anyway), then put in place like every other output.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "core/vec.h"
#include "json_escape.h"
#include "obuf.h"
#include "outfile.h"
#include "sqlite_api.h"
#include "timeline/strtab.h"
#include "writer.h"

#define ACT_SQLITE_SCHEMA 2
#define SW_STR_(x)        #x
#define SW_STR(x)         SW_STR_(x)

/* ---- the writer's state ------------------------------------------------- */

enum { ST_EVENT, ST_EVENTS, ST_STRING, ST_N };

/* Events are inserted SW_ROWS to a statement (ST_EVENTS, made at the open),
 * the rest of a batch one by one: a row costs SQLite less in a statement
 * of many. */
#define SW_ROWS 64
#define SW_COLS 12

static const char *const stmt_sql[ST_N] = {
    [ST_EVENT] = "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [ST_EVENTS] = NULL, /* ST_EVENT's row SW_ROWS times (sw_events_sql) */
    [ST_STRING] = "INSERT INTO strings VALUES (?1, ?2)",
};

/* An event's row until it is inserted (its args are text in w->args). */
typedef struct sw_row {
    int64_t id, name;
    uint64_t ts, dur, flow, corr; /* corr 0: NULL */
    uint32_t pid, tid;
    size_t args_at, args_len; /* args_len 0: NULL */
    int cat;                  /* 0: NULL */
    char ph;
    uint8_t has_tid, has_dur, has_flow, error;
} sw_row;

typedef struct sqlite_writer {
    act_writer base;
    act_outfile *file;
    sqlite3 *db;
    sqlite3_stmt *st[ST_N];
    act_strtab strs; /* the strings table's rows (their bytes valid until the close) */
    char **owned;    /* strings made valid UTF-8 here */
    size_t n_owned, cap_owned;
    int64_t next_event;
    act_obuf args; /* the pending rows' args, each a JSON object (memory) */
    sw_row rows[SW_ROWS];
    size_t n_rows;
    uint64_t first_ns; /* the earliest event's time (an imported trace's time zero) */
    act_writer_facts f;
    int err; /* sticky ACT_E_* */
    char why[256];
} sqlite_writer;

static int sw_fail(sqlite_writer *w, int err, const char *what)
{
    if (!w->err) {
        w->err = err;
        snprintf(w->why, sizeof(w->why), "%s%s%s", what, w->db ? ": " : "",
                 w->db ? sq.sqlite3_errmsg(w->db) : "");
    }
    return w->err;
}

static int sw_exec(sqlite_writer *w, const char *sql)
{
    if (w->err)
        return w->err;
    char *msg = NULL;
    if (sq.sqlite3_exec(w->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(w->why, sizeof(w->why), "%s", msg ? msg : "SQL failed");
        w->err = ACT_E_IO;
    }
    sq.sqlite3_free(msg);
    return w->err;
}

/* Run a bound statement once and make it ready for the next row. */
static int sw_step(sqlite_writer *w, sqlite3_stmt *s)
{
    int rc = sq.sqlite3_step(s);
    sq.sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : sw_fail(w, ACT_E_IO, "insert");
}

/* ---- strings ------------------------------------------------------------ */

/* `s` as valid UTF-8: itself, or a copy with each invalid sequence
 * replaced by U+FFFD (as the Chrome writer does), owned by the writer. */
static act_str str_valid(sqlite_writer *w, act_str s)
{
    size_t skip, i = 0, seq;
    while (i < s.n && (seq = act_utf8_seq((const unsigned char *)s.p + i, s.n - i, &skip)) != 0)
        i += seq;
    if (i == s.n)
        return s;
    char *c = malloc(s.n * 3 + 1);
    if (!c || act_vec_reserve(w->owned, w->cap_owned, w->n_owned + 1, 16)) {
        free(c);
        sw_fail(w, ACT_E_NOMEM, "out of memory");
        return (act_str){"", 0};
    }
    size_t o = 0;
    for (i = 0; i < s.n;) {
        size_t n = act_utf8_seq((const unsigned char *)s.p + i, s.n - i, &skip);
        if (n) {
            memcpy(c + o, s.p + i, n);
            o += n;
            i += n;
        } else {
            memcpy(c + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += skip ? skip : 1;
        }
    }
    w->owned[w->n_owned++] = c;
    return (act_str){c, o};
}

/* The id of string `s` in `strings`, added on first use; 0 on error. */
static int64_t str_id(sqlite_writer *w, act_str s)
{
    uint64_t id = act_strtab_find(&w->strs, s.p, s.n);
    if (id)
        return (int64_t)id;
    act_str v = str_valid(w, s);
    if (!(id = act_strtab_add(&w->strs, s))) {
        sw_fail(w, ACT_E_NOMEM, "out of memory");
        return 0;
    }
    sqlite3_stmt *st = w->st[ST_STRING];
    sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    sq.sqlite3_bind_text(st, 2, v.p, (int)v.n, SQLITE_STATIC);
    return sw_step(w, st) ? 0 : (int64_t)id;
}

/* ---- schema ------------------------------------------------------------- */

/* Tables, then the views a user queries (docs/sqlite.md). An arg named
 * KEY of event e is json_extract(e.args, '$."KEY"'). */
#define ARG(key, as) " json_extract(args, '$.\"" key "\"') AS " as
/* One clause a line reads as SQL. */
/* clang-format off */
static const char schema_sql[] =
    "PRAGMA user_version = " SW_STR(ACT_SQLITE_SCHEMA) ";"
    "CREATE TABLE strings (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE categories (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
    "CREATE TABLE events (id INTEGER PRIMARY KEY, ph TEXT NOT NULL, cat INTEGER, name INTEGER,"
    " pid INTEGER, tid INTEGER, start_ns INTEGER, dur_ns INTEGER, flow INTEGER,"
    " error INTEGER NOT NULL, correlation INTEGER, args TEXT);"
    "CREATE TABLE meta (key TEXT NOT NULL, value TEXT, is_json INTEGER NOT NULL);"
    "CREATE TABLE devices (pid INTEGER PRIMARY KEY, device_index INTEGER, name TEXT,"
    " model TEXT, vendor TEXT);"
    "CREATE TABLE errors (line TEXT NOT NULL);"
    "CREATE VIEW arg_values AS SELECT e.id AS event, j.key AS key, j.value AS value"
    " FROM events e, json_each(e.args) j WHERE e.args IS NOT NULL;"
    "CREATE VIEW slices AS SELECT e.id AS id, e.ph AS ph, c.name AS category, s.value AS name,"
    " e.pid AS pid, e.tid AS tid, e.start_ns AS start_ns, e.start_ns + e.dur_ns AS end_ns,"
    " e.dur_ns AS dur_ns, e.error AS error, e.correlation AS correlation, e.args AS args"
    " FROM events e LEFT JOIN categories c ON c.id = e.cat LEFT JOIN strings s ON s.id = e.name;"
    "CREATE VIEW kernels AS SELECT id, start_ns, end_ns, dur_ns, name, pid AS device, tid AS lane,"
    ARG("queue", "queue") "," ARG("stream", "stream") ", correlation,"
    ARG("External id", "external_id") "," ARG("global size", "global_size") ","
    ARG("local size", "local_size")
    " FROM slices WHERE ph = 'X' AND category = 'kernel';"
    "CREATE VIEW api_calls AS SELECT id, start_ns, end_ns, dur_ns, name, pid, tid,"
    " category AS api, correlation," ARG("External id", "external_id") "," ARG("error", "error")
    " FROM slices WHERE ph = 'X' AND category IN ('opencl_runtime', 'cuda_runtime',"
    " 'cuda_driver', 'privateuse1_runtime', 'runtime');"
    "CREATE VIEW memops AS SELECT id, start_ns, end_ns, dur_ns, name, pid AS device, tid AS lane,"
    " CASE category WHEN 'gpu_memcpy' THEN 'copy' ELSE 'fill' END AS kind,"
    ARG("bytes", "bytes") ", correlation," ARG("External id", "external_id")
    " FROM slices WHERE ph = 'X' AND category IN ('gpu_memcpy', 'gpu_memset');"
    "CREATE VIEW ranges AS SELECT id, start_ns, end_ns, dur_ns, name, pid, tid,"
    ARG("External id", "external_id")
    " FROM slices WHERE ph = 'X' AND category IN ('user_annotation', 'cpu_op');"
    "CREATE VIEW marks AS SELECT id, start_ns AS ts_ns, name, pid, tid, category"
    " FROM slices WHERE ph = 'i';"
    "CREATE VIEW counters AS SELECT e.start_ns AS ts_ns, e.name AS name, e.pid AS pid,"
    " j.key AS series, j.value AS value"
    " FROM slices e, json_each(e.args) j WHERE e.ph = 'C' AND e.args IS NOT NULL;"
    "CREATE VIEW flows AS SELECT s.flow AS id, s.pid AS from_pid, s.tid AS from_tid,"
    " s.start_ns AS from_ns, f.pid AS to_pid, f.tid AS to_tid, f.start_ns AS to_ns"
    " FROM events s JOIN events f ON f.flow = s.flow AND f.ph = 'f' WHERE s.ph = 's';"
    "CREATE VIEW processes AS SELECT pid, json_extract(args, '$.name') AS name FROM slices"
    " WHERE ph = 'M' AND name = 'process_name';"
    "CREATE VIEW threads AS SELECT pid, tid, json_extract(args, '$.name') AS name FROM slices"
    " WHERE ph = 'M' AND name = 'thread_name';";
/* clang-format on */
#undef ARG

/* No index is made: building two over 640 000 events (160 000 launches)
 * took 0.3 s of a 0.9 s export, and SQLite makes an automatic index for
 * the joins the views and reports do (kern_trace over those events: 2.4 s
 * without, 2.0 s with). A user who queries a file often makes their own. */

/* The categories table: act_cat's names, then an imported trace's own. */
static int sw_categories(sqlite_writer *w, const act_timeline *tl)
{
    sqlite3_stmt *s;
    if (sq.sqlite3_prepare_v2(w->db, "INSERT INTO categories VALUES (?1, ?2)", -1, &s, NULL))
        return sw_fail(w, ACT_E_IO, "prepare");
    for (int c = 1; c < ACT_CAT_MAX + (int)tl->n_cat_extra && !w->err; c++) {
        const char *n = act_tl_cat_name(tl, c);
        sq.sqlite3_bind_int64(s, 1, c);
        sq.sqlite3_bind_text(s, 2, n, -1, SQLITE_TRANSIENT);
        sw_step(w, s);
    }
    sq.sqlite3_finalize(s);
    return w->err;
}

/* ST_EVENTS: ST_EVENT's row of parameters SW_ROWS times. */
static void sw_events_sql(char *b, size_t cap)
{
    const char *row = strchr(stmt_sql[ST_EVENT], '(');
    size_t n = (size_t)snprintf(b, cap, "INSERT INTO events VALUES %s", row);
    for (int i = 1; i < SW_ROWS && n < cap; i++)
        n += (size_t)snprintf(b + n, cap - n, ",%s", row);
}

static int sw_schema(sqlite_writer *w, const act_timeline *tl)
{
    if (sw_exec(w, "PRAGMA page_size = 65536; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
                   "PRAGMA locking_mode = EXCLUSIVE;"
                   "BEGIN;") ||
        sw_exec(w, schema_sql) || sw_categories(w, tl))
        return w->err;
    char many[SW_ROWS * 48];
    sw_events_sql(many, sizeof(many));
    for (int i = 0; i < ST_N; i++)
        if (sq.sqlite3_prepare_v2(w->db, stmt_sql[i] ? stmt_sql[i] : many, -1, &w->st[i], NULL) !=
            SQLITE_OK)
            return sw_fail(w, ACT_E_IO, "prepare");
    return 0;
}

/* ---- events ------------------------------------------------------------- */

static void bind_u64(sqlite3_stmt *s, int i, uint64_t v)
{
    sq.sqlite3_bind_int64(s, i, (sqlite3_int64)v); /* ids and times fit in 63 bits */
}

/* One arg's value as JSON: numbers as numbers (a pointer too, so that SQL
 * compares it as one), strings escaped (invalid UTF-8 replaced as in the
 * Chrome trace), vectors as arrays, an imported JSON value as it is. */
static void sw_arg_value(sqlite_writer *w, const act_tl_arg *a)
{
    act_obuf *b = &w->args;
    switch (a->type) {
    case ACT_ARG_U64:
    case ACT_ARG_HEX: act_obuf_u64(b, a->v.u); break;
    case ACT_ARG_I64: act_obuf_i64(b, a->v.i); break;
    case ACT_ARG_BOOL: act_obuf_puts(b, a->v.u ? "true" : "false"); break;
    case ACT_ARG_F64: act_obuf_f64(b, a->v.d); break;
    case ACT_ARG_STR: act_json_string(b, a->v.s.p, a->v.s.n); break;
    case ACT_ARG_JSON: act_obuf_put(b, a->v.s.p, a->v.s.n); break;
    case ACT_ARG_U64X3:
    case ACT_ARG_U64V: {
        act_obuf_putc(b, '[');
        for (uint32_t i = 0; i < act_tl_arg_vec_len(a); i++) {
            if (i)
                act_obuf_putc(b, ',');
            act_obuf_u64(b, act_tl_arg_vec_at(a, i));
        }
        act_obuf_putc(b, ']');
        break;
    }
    default: act_obuf_lit(b, "null"); break; /* ACT_ARG_NULL */
    }
}

/* The event's args as one JSON object appended to w->args (nothing: none). A key
 * given twice keeps its last value, as a JSON reader of the trace does.
 * Returns its correlation arg (0: none), which gets a column of its own:
 * it is what kernels and their launches are joined by. */
static uint64_t sw_args(sqlite_writer *w, const act_timeline *tl, const act_tl_event *e)
{
    act_obuf *b = &w->args;
    uint64_t corr = 0;
    if (!e->nargs)
        return 0;
    act_obuf_putc(b, '{');
    for (uint32_t i = 0; i < e->nargs; i++) {
        const act_tl_arg *a = &tl->args[e->arg0 + i];
        if (i)
            act_obuf_putc(b, ',');
        act_json_string(b, a->key.p, a->key.n);
        act_obuf_putc(b, ':');
        sw_arg_value(w, a);
        if (a->type == ACT_ARG_U64 && a->v.u <= INT64_MAX && act_str_is(a->key, "correlation"))
            corr = a->v.u;
    }
    act_obuf_putc(b, '}');
    if (b->err)
        sw_fail(w, ACT_E_NOMEM, "out of memory");
    return corr;
}

static void bind_opt(sqlite3_stmt *s, int i, int has, uint64_t v)
{
    if (has)
        bind_u64(s, i, v);
    else
        sq.sqlite3_bind_null(s, i);
}

/* Row r's columns into parameters at + 1 .. at + SW_COLS of s. */
static void bind_row(sqlite_writer *w, sqlite3_stmt *s, int at, const sw_row *r)
{
    static const char phs[] = "XMsfiCbeBEnNDOPpt";
    const char *ph = strchr(phs, r->ph);
    char one[2] = {r->ph, 0};
    sq.sqlite3_bind_int64(s, at + 1, r->id);
    sq.sqlite3_bind_text(s, at + 2, ph && r->ph ? ph : one, 1,
                         ph && r->ph ? SQLITE_STATIC : SQLITE_TRANSIENT);
    bind_opt(s, at + 3, r->cat != 0, (uint64_t)r->cat);
    sq.sqlite3_bind_int64(s, at + 4, r->name);
    sq.sqlite3_bind_int64(s, at + 5, r->pid);
    bind_opt(s, at + 6, r->has_tid, r->tid);
    bind_u64(s, at + 7, r->ts);
    bind_opt(s, at + 8, r->has_dur, r->dur);
    bind_opt(s, at + 9, r->has_flow, r->flow);
    sq.sqlite3_bind_int64(s, at + 10, r->error);
    bind_opt(s, at + 11, r->corr != 0, r->corr);
    if (r->args_len)
        sq.sqlite3_bind_text(s, at + 12, w->args.buf + r->args_at, (int)r->args_len, SQLITE_STATIC);
    else
        sq.sqlite3_bind_null(s, at + 12);
}

/* Insert the pending rows: SW_ROWS in one statement, fewer one by one. */
static int sw_flush(sqlite_writer *w)
{
    if (w->n_rows == SW_ROWS) {
        for (size_t i = 0; i < SW_ROWS; i++)
            bind_row(w, w->st[ST_EVENTS], (int)i * SW_COLS, &w->rows[i]);
        sw_step(w, w->st[ST_EVENTS]);
    } else {
        for (size_t i = 0; i < w->n_rows && !w->err; i++) {
            bind_row(w, w->st[ST_EVENT], 0, &w->rows[i]);
            sw_step(w, w->st[ST_EVENT]);
        }
    }
    w->n_rows = 0;
    w->args.len = 0;
    return w->err;
}

static int sw_event(sqlite_writer *w, act_timeline *tl, const act_tl_event *e)
{
    int64_t name = str_id(w, e->name);
    if (!name)
        return w->err;
    int flow = e->ph == 's' || e->ph == 'f' || e->ph == 'b' || e->ph == 'e';
    sw_row *r = &w->rows[w->n_rows++];
    *r = (sw_row){.id = ++w->next_event,
                  .name = name,
                  .ts = e->ts,
                  .dur = e->dur,
                  .flow = e->id,
                  .pid = e->pid,
                  .tid = e->tid,
                  .args_at = w->args.len,
                  .cat = e->cat,
                  .ph = e->ph,
                  .has_tid = !(e->flags & ACT_EVF_NO_TID),
                  .has_dur = e->ph == 'X',
                  .has_flow = (uint8_t)flow,
                  .error = (e->flags & ACT_EVF_ERROR) != 0};
    if (e->ph != 'M' && e->ts < w->first_ns)
        w->first_ns = e->ts;
    r->corr = sw_args(w, tl, e);
    r->args_len = w->args.len - r->args_at;
    return w->n_rows == SW_ROWS ? sw_flush(w) : w->err;
}

/* ---- what is known at the close ------------------------------------------ */

static int sw_meta(sqlite_writer *w, const char *key, act_str value, int is_json)
{
    sqlite3_stmt *s;
    if (sq.sqlite3_prepare_v2(w->db, "INSERT INTO meta VALUES (?1, ?2, ?3)", -1, &s, NULL))
        return sw_fail(w, ACT_E_IO, "prepare");
    act_str v = str_valid(w, value);
    sq.sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
    sq.sqlite3_bind_text(s, 2, v.p, (int)v.n, SQLITE_TRANSIENT);
    sq.sqlite3_bind_int64(s, 3, is_json != 0);
    sw_step(w, s);
    sq.sqlite3_finalize(s);
    return w->err;
}

static int sw_meta_u64(sqlite_writer *w, const char *key, uint64_t v)
{
    char b[32];
    snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
    return sw_meta(w, key, (act_str){b, strlen(b)}, 1);
}

/* The command as one line (arguments joined by spaces). */
static void sw_meta_command(sqlite_writer *w)
{
    size_t n = 1;
    for (int i = 0; i < w->f.argc && w->f.argv; i++)
        n += strlen(w->f.argv[i]) + 1;
    char *c = calloc(1, n);
    if (!c) {
        sw_fail(w, ACT_E_NOMEM, "out of memory");
        return;
    }
    for (int i = 0; i < w->f.argc && w->f.argv; i++) {
        if (i)
            strcat(c, " ");
        strcat(c, w->f.argv[i]);
    }
    sw_meta(w, "command", (act_str){c, strlen(c)}, 0);
    free(c);
}

static int sw_devices(sqlite_writer *w, const act_timeline *tl)
{
    sqlite3_stmt *s;
    if (sq.sqlite3_prepare_v2(w->db, "INSERT OR REPLACE INTO devices VALUES (?1, ?2, ?3, ?4, ?5)",
                              -1, &s, NULL))
        return sw_fail(w, ACT_E_IO, "prepare");
    for (size_t i = 0; i < tl->n_devices && !w->err; i++) {
        const act_tl_device *d = &tl->devices[i];
        act_str name = str_valid(w, d->name), model = str_valid(w, d->model),
                vendor = str_valid(w, d->vendor);
        sq.sqlite3_bind_int64(s, 1, d->pid);
        sq.sqlite3_bind_int64(s, 2, d->index);
        sq.sqlite3_bind_text(s, 3, name.p, (int)name.n, SQLITE_TRANSIENT);
        sq.sqlite3_bind_text(s, 4, model.p, (int)model.n, SQLITE_TRANSIENT);
        sq.sqlite3_bind_text(s, 5, vendor.p, (int)vendor.n, SQLITE_TRANSIENT);
        sw_step(w, s);
    }
    sq.sqlite3_finalize(s);
    return w->err;
}

static int sw_errors(sqlite_writer *w, const act_timeline *tl)
{
    sqlite3_stmt *s;
    if (sq.sqlite3_prepare_v2(w->db, "INSERT INTO errors VALUES (?1)", -1, &s, NULL))
        return sw_fail(w, ACT_E_IO, "prepare");
    for (size_t i = 0; i < tl->n_errors && !w->err; i++) {
        act_str v = str_valid(w, (act_str){tl->errors[i], strlen(tl->errors[i])});
        sq.sqlite3_bind_text(s, 1, v.p, (int)v.n, SQLITE_TRANSIENT);
        sw_step(w, s);
    }
    sq.sqlite3_finalize(s);
    return w->err;
}

/* An imported trace's time zero, from which reports count: ts 0 in one of
 * ours (its times are from the run's time zero already), else its first
 * event (a torch.profiler trace counts from the machine's boot). */
static uint64_t imported_zero(const sqlite_writer *w, const act_timeline *tl)
{
    for (size_t i = 0; i < tl->n_meta; i++)
        if (act_str_is(tl->meta[i].key, "acceltrace"))
            return 0;
    return w->first_ns == UINT64_MAX ? 0 : w->first_ns;
}

/* The trace's facts: the timeline's metadata as recorded, then the run's
 * (schema, version, command, exit status, clock, time base, counts),
 * its devices and its error lines. */
static int sw_close_facts(sqlite_writer *w, act_timeline *tl)
{
    for (size_t i = 0; i < tl->n_meta && !w->err; i++) {
        act_str k = str_valid(w, tl->meta[i].key);
        char *key = strndup(k.p, k.n);
        if (!key)
            return sw_fail(w, ACT_E_NOMEM, "out of memory");
        sw_meta(w, key, tl->meta[i].value, tl->meta[i].is_json & ACT_META_JSON);
        free(key);
    }
    sw_meta_u64(w, "schema_version", ACT_SQLITE_SCHEMA);
    sw_meta(w, "acceltrace_version", (act_str){ACT_VERSION, strlen(ACT_VERSION)}, 0);
    if (tl->imported) /* its members are its facts */
        return sw_meta_u64(w, "base_ns", imported_zero(w, tl));
    sw_meta_command(w);
    if (w->f.child_status >= 0)
        sw_meta_u64(w, "exit_status", (uint64_t)w->f.child_status);
    sw_meta(w, "clock_method", (act_str){tl->clock_method, strlen(tl->clock_method)}, 0);
    if (tl->clock_error_ns >= 0)
        sw_meta_u64(w, "clock_error_ns", (uint64_t)tl->clock_error_ns);
    sw_meta_u64(w, "base_ns", tl->base_ns);
    sw_meta_u64(w, "base_wall_ns", tl->base_wall_ns);
    for (int k = 0; k < ACT_REC_KIND_MAX && !w->err; k++) {
        char key[64];
        snprintf(key, sizeof(key), "records.%s", act_rec_kind_name(k));
        if (tl->counts.records[k])
            sw_meta_u64(w, key, tl->counts.records[k]);
        snprintf(key, sizeof(key), "dropped.%s", act_rec_kind_name(k));
        if (tl->counts.dropped[k])
            sw_meta_u64(w, key, tl->counts.dropped[k]);
    }
    if (!w->err && !sw_devices(w, tl))
        sw_errors(w, tl);
    return w->err;
}

/* ---- the seam ------------------------------------------------------------ */

static void sw_free(sqlite_writer *w)
{
    act_obuf_free(&w->args);
    for (int i = 0; i < ST_N; i++)
        if (w->st[i])
            sq.sqlite3_finalize(w->st[i]);
    if (w->db)
        sq.sqlite3_close(w->db);
    for (size_t i = 0; i < w->n_owned; i++)
        free(w->owned[i]);
    free(w->owned);
    act_strtab_free(&w->strs);
    free(w);
}

static int sqlite_writer_open(act_writer **out, act_timeline *tl, const act_writer_facts *f,
                              char *err, size_t errlen)
{
    *out = NULL;
    if (act_sqlite_load() != 0) {
        snprintf(err, errlen, "%s: SQLite output needs libsqlite3.so.0 (Debian: libsqlite3-0)",
                 f->path);
        return ACT_E_IO;
    }
    sqlite_writer *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(err, errlen, "%s: out of memory", f->path);
        return ACT_E_NOMEM;
    }
    w->base.ops = &act_writer_sqlite;
    w->f = *f;
    w->first_ns = UINT64_MAX;
    *out = &w->base;
    if (act_obuf_init(&w->args, -1, 4096)) {
        snprintf(err, errlen, "%s: out of memory", f->path);
        return ACT_E_NOMEM;
    }
    int rc = act_outfile_open(&w->file, f->path, f->force, f->mode, ACT_OUTFILE_NAMED, err, errlen);
    if (rc)
        return rc;
    if (sq.sqlite3_open_v2(act_outfile_temp(w->file), &w->db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
        sw_schema(w, tl)) {
        sw_fail(w, ACT_E_IO, "cannot open the database");
        snprintf(err, errlen, "%s: %s", f->path, w->why);
        return w->err;
    }
    return 0;
}

static int sqlite_writer_batch(act_writer *aw, act_timeline *tl)
{
    sqlite_writer *w = (sqlite_writer *)aw;
    for (size_t i = 0; i < tl->n_ev && !w->err; i++)
        sw_event(w, tl, &tl->ev[i]);
    return w->err; /* pending rows hold no pointer into the batch */
}

static void sqlite_writer_set_facts(act_writer *aw, const act_writer_facts *f)
{
    ((sqlite_writer *)aw)->f = *f;
}

static int sqlite_writer_close(act_writer *aw, act_timeline *tl, int ok, char *err, size_t errlen)
{
    sqlite_writer *w = (sqlite_writer *)aw;
    if (ok && !w->err && !sw_flush(w) && !sw_close_facts(w, tl))
        (void)sw_exec(w, "COMMIT;");
    int rc = ok ? w->err : ACT_E_INVAL;
    if (rc && ok)
        snprintf(err, errlen, "%s: %s", w->f.path, w->why);
    for (int i = 0; i < ST_N; i++)
        if (w->st[i])
            sq.sqlite3_finalize(w->st[i]);
    memset(w->st, 0, sizeof(w->st));
    if (w->db && sq.sqlite3_close(w->db) != SQLITE_OK && !rc) {
        rc = ACT_E_IO;
        snprintf(err, errlen, "%s: cannot close the database", w->f.path);
    }
    w->db = NULL;
    act_outfile_keep_replaced(w->file, w->f.replaced_fd);
    int crc =
        w->file ? act_outfile_close(w->file, ok && !rc, rc ? ACT_E_IO : 0, 0, err, errlen) : rc;
    sw_free(w);
    return rc ? rc : crc;
}

const act_writer_ops act_writer_sqlite = {
    .name = "sqlite",
    .flags = ACT_WRITER_EARLY, /* rows do not depend on the header's facts */
    .open = sqlite_writer_open,
    .batch = sqlite_writer_batch,
    .set_facts = sqlite_writer_set_facts,
    .close = sqlite_writer_close,
};
