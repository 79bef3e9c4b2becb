/*
 * sqlite_writer.c -- the timeline as a SQLite database (`-o trace.sqlite`;
 * schema and views in docs/sqlite.md): the same events, args, flows and
 * metadata as the Chrome trace, for SQL. One more writer on the seam
 * (writer.h): one file and one row in writers.c.
 *
 * Layout: every event is a row of `events` (its phase, category, name,
 * process, thread, start and duration in integer nanoseconds of the
 * timeline), every arg a row of `args`; strings are interned once in
 * `strings`. Views (kernels, api_calls, memops, ranges, marks, counters,
 * flows, processes, threads) give the questions users ask a name, so
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
#include "outfile.h"
#include "sqlite_api.h"
#include "timeline/u64map.h"
#include "writer.h"

#define ACT_SQLITE_SCHEMA 1
#define SW_STR_(x)        #x
#define SW_STR(x)         SW_STR_(x)

/* ---- the writer's state ------------------------------------------------- */

enum { ST_EVENT, ST_ARG, ST_STRING, ST_N };

static const char *const stmt_sql[ST_N] = {
    [ST_EVENT] = "INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [ST_ARG] = "INSERT INTO args VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_STRING] = "INSERT INTO strings VALUES (?1, ?2)",
};

typedef struct sqlite_writer {
    act_writer base;
    act_outfile *file;
    sqlite3 *db;
    sqlite3_stmt *st[ST_N];
    act_u64map str_ids; /* hash of the bytes (probed on a clash) -> string id */
    act_str *strs;      /* string id - 1 -> its bytes (valid until the close) */
    size_t n_strs, cap_strs;
    char **owned; /* strings made valid UTF-8 here */
    size_t n_owned, cap_owned;
    int64_t next_event;
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

static uint64_t str_hash(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h ? h : 1;
}

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
    uint64_t key = str_hash(s.p, s.n), id;
    while (act_u64map_get(&w->str_ids, key, &id)) {
        const act_str *o = &w->strs[id - 1];
        if (o->n == s.n && !memcmp(o->p, s.p, s.n))
            return (int64_t)id;
        key = key + 1 ? key + 1 : 1; /* a clash of hashes: probe on */
    }
    if (act_vec_reserve(w->strs, w->cap_strs, w->n_strs + 1, 1024)) {
        sw_fail(w, ACT_E_NOMEM, "out of memory");
        return 0;
    }
    act_str v = str_valid(w, s);
    w->strs[w->n_strs++] = s;
    id = w->n_strs;
    if (act_u64map_put(&w->str_ids, key, id)) {
        sw_fail(w, ACT_E_NOMEM, "out of memory");
        return 0;
    }
    sqlite3_stmt *st = w->st[ST_STRING];
    sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    sq.sqlite3_bind_text(st, 2, v.p, (int)v.n, SQLITE_STATIC);
    return sw_step(w, st) ? 0 : (int64_t)id;
}

/* ---- schema ------------------------------------------------------------- */

/* Tables, then the views a user queries (docs/sqlite.md). */
static const char schema_sql[] = "PRAGMA user_version = " SW_STR(
    ACT_SQLITE_SCHEMA) ";"
                       "CREATE TABLE strings (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
                       "CREATE TABLE categories (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
                       "CREATE TABLE events (id INTEGER PRIMARY KEY, ph TEXT NOT NULL, cat "
                       "INTEGER, name INTEGER,"
                       " pid INTEGER, tid INTEGER, start_ns INTEGER, dur_ns INTEGER, flow INTEGER,"
                       " error INTEGER NOT NULL);"
                       "CREATE TABLE args (event INTEGER NOT NULL, key INTEGER NOT NULL, int_value "
                       "INTEGER,"
                       " real_value REAL, text_value INTEGER, json_value TEXT);"
                       "CREATE TABLE meta (key TEXT NOT NULL, value TEXT, is_json INTEGER NOT "
                       "NULL);"
                       "CREATE TABLE devices (pid INTEGER PRIMARY KEY, device_index INTEGER, name "
                       "TEXT,"
                       " model TEXT, vendor TEXT);"
                       "CREATE TABLE errors (line TEXT NOT NULL);"
                       "CREATE VIEW arg_values AS SELECT a.event AS event, k.value AS key,"
                       " coalesce(a.int_value, a.real_value, t.value, a.json_value) AS value"
                       " FROM args a JOIN strings k ON k.id = a.key LEFT JOIN strings t ON t.id = "
                       "a.text_value;"
                       "CREATE VIEW slices AS SELECT e.id AS id, e.ph AS ph, c.name AS category, "
                       "s.value AS name,"
                       " e.pid AS pid, e.tid AS tid, e.start_ns AS start_ns, e.start_ns + e.dur_ns "
                       "AS end_ns,"
                       " e.dur_ns AS dur_ns, e.error AS error"
                       " FROM events e LEFT JOIN categories c ON c.id = e.cat LEFT JOIN strings s "
                       "ON s.id = e.name;"
                       "CREATE VIEW kernels AS SELECT id, start_ns, end_ns, dur_ns, name, pid AS "
                       "device, tid AS lane,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'queue') AS "
                       "queue,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'stream') AS "
                       "stream,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'correlation') "
                       "AS correlation,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'External id') "
                       "AS external_id,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'global size') "
                       "AS global_size,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'local size') AS "
                       "local_size"
                       " FROM slices WHERE ph = 'X' AND category = 'kernel';"
                       "CREATE VIEW api_calls AS SELECT id, start_ns, end_ns, dur_ns, name, pid, "
                       "tid,"
                       " category AS api,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'correlation') "
                       "AS correlation,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'External id') "
                       "AS external_id,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'error') AS error"
                       " FROM slices WHERE ph = 'X' AND category IN ('opencl_runtime', "
                       "'cuda_runtime',"
                       " 'cuda_driver', 'privateuse1_runtime', 'runtime');"
                       "CREATE VIEW memops AS SELECT id, start_ns, end_ns, dur_ns, name, pid AS "
                       "device, tid AS lane,"
                       " CASE category WHEN 'gpu_memcpy' THEN 'copy' ELSE 'fill' END AS kind,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'bytes') AS "
                       "bytes,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'correlation') "
                       "AS correlation,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'External id') "
                       "AS external_id"
                       " FROM slices WHERE ph = 'X' AND category IN ('gpu_memcpy', 'gpu_memset');"
                       "CREATE VIEW ranges AS SELECT id, start_ns, end_ns, dur_ns, name, pid, tid,"
                       " (SELECT value FROM arg_values WHERE event = id AND key = 'External id') "
                       "AS external_id"
                       " FROM slices WHERE ph = 'X' AND category IN ('user_annotation', 'cpu_op');"
                       "CREATE VIEW marks AS SELECT id, start_ns AS ts_ns, name, pid, tid, category"
                       " FROM slices WHERE ph = 'i';"
                       "CREATE VIEW counters AS SELECT e.start_ns AS ts_ns, e.name AS name, e.pid "
                       "AS pid,"
                       " v.key AS series, v.value AS value"
                       " FROM slices e JOIN arg_values v ON v.event = e.id WHERE e.ph = 'C';"
                       "CREATE VIEW flows AS SELECT s.flow AS id, s.pid AS from_pid, s.tid AS "
                       "from_tid,"
                       " s.start_ns AS from_ns, f.pid AS to_pid, f.tid AS to_tid, f.start_ns AS "
                       "to_ns"
                       " FROM events s JOIN events f ON f.flow = s.flow AND f.ph = 'f' WHERE s.ph "
                       "= 's';"
                       "CREATE VIEW processes AS SELECT e.pid AS pid, v.value AS name FROM slices e"
                       " JOIN arg_values v ON v.event = e.id AND v.key = 'name'"
                       " WHERE e.ph = 'M' AND e.name = 'process_name';"
                       "CREATE VIEW threads AS SELECT e.pid AS pid, e.tid AS tid, v.value AS name "
                       "FROM slices e"
                       " JOIN arg_values v ON v.event = e.id AND v.key = 'name'"
                       " WHERE e.ph = 'M' AND e.name = 'thread_name';";

/* Indexes once the rows are in (cheaper than keeping them up to date). */
static const char index_sql[] = "CREATE INDEX args_event ON args (event, key);"
                                "CREATE INDEX events_cat ON events (cat, start_ns);"
                                "CREATE INDEX events_flow ON events (flow) WHERE flow IS NOT NULL;";

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

static int sw_schema(sqlite_writer *w, const act_timeline *tl)
{
    if (sw_exec(w, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
                   "PRAGMA locking_mode = EXCLUSIVE; BEGIN;") ||
        sw_exec(w, schema_sql) || sw_categories(w, tl))
        return w->err;
    for (int i = 0; i < ST_N; i++)
        if (sq.sqlite3_prepare_v2(w->db, stmt_sql[i], -1, &w->st[i], NULL) != SQLITE_OK)
            return sw_fail(w, ACT_E_IO, "prepare");
    return 0;
}

/* ---- events ------------------------------------------------------------- */

static void bind_u64(sqlite3_stmt *s, int i, uint64_t v)
{
    sq.sqlite3_bind_int64(s, i, (sqlite3_int64)v); /* ids and times fit in 63 bits */
}

/* An arg vector ([a,b,c] or any length) as JSON text. */
static void json_vec(char *b, size_t cap, const uint64_t *v, size_t n, int unaligned)
{
    size_t o = (size_t)snprintf(b, cap, "[");
    for (size_t i = 0; i < n && o < cap; i++) {
        uint64_t x;
        if (unaligned)
            memcpy(&x, (const char *)v + i * 8, 8);
        else
            x = v[i];
        o += (size_t)snprintf(b + o, cap - o, "%s%llu", i ? "," : "", (unsigned long long)x);
    }
    if (o < cap)
        snprintf(b + o, cap - o, "]");
}

static int sw_arg(sqlite_writer *w, int64_t event, const act_tl_arg *a)
{
    sqlite3_stmt *s = w->st[ST_ARG];
    int64_t key = str_id(w, a->key);
    if (!key)
        return w->err;
    char buf[512];
    sq.sqlite3_bind_int64(s, 1, event);
    sq.sqlite3_bind_int64(s, 2, key);
    for (int i = 3; i <= 6; i++)
        sq.sqlite3_bind_null(s, i);
    switch (a->type) {
    case ACT_ARG_U64:
    case ACT_ARG_HEX:
        if (a->v.u <= INT64_MAX) {
            bind_u64(s, 3, a->v.u);
        } else { /* beyond SQLite's integers: its decimal digits, as JSON */
            snprintf(buf, sizeof(buf), "%llu", (unsigned long long)a->v.u);
            sq.sqlite3_bind_text(s, 6, buf, -1, SQLITE_TRANSIENT);
        }
        break;
    case ACT_ARG_I64: sq.sqlite3_bind_int64(s, 3, a->v.i); break;
    case ACT_ARG_BOOL: sq.sqlite3_bind_int64(s, 3, a->v.u != 0); break;
    case ACT_ARG_F64: sq.sqlite3_bind_double(s, 4, a->v.d); break;
    case ACT_ARG_STR: {
        int64_t t = str_id(w, a->v.s);
        if (!t)
            return w->err;
        sq.sqlite3_bind_int64(s, 5, t);
        break;
    }
    case ACT_ARG_U64X3:
        json_vec(buf, sizeof(buf), a->v.v3, 3, 0);
        sq.sqlite3_bind_text(s, 6, buf, -1, SQLITE_TRANSIENT);
        break;
    case ACT_ARG_U64V:
        json_vec(buf, sizeof(buf), a->v.vec.p, a->v.vec.n, 1);
        sq.sqlite3_bind_text(s, 6, buf, -1, SQLITE_TRANSIENT);
        break;
    case ACT_ARG_JSON: sq.sqlite3_bind_text(s, 6, a->v.s.p, (int)a->v.s.n, SQLITE_STATIC); break;
    default: break; /* ACT_ARG_NULL: every value NULL */
    }
    return sw_step(w, s);
}

static int sw_event(sqlite_writer *w, act_timeline *tl, const act_tl_event *e)
{
    sqlite3_stmt *s = w->st[ST_EVENT];
    int64_t id = ++w->next_event, name = str_id(w, e->name);
    if (!name)
        return w->err;
    char ph[2] = {e->ph, 0};
    sq.sqlite3_bind_int64(s, 1, id);
    sq.sqlite3_bind_text(s, 2, ph, 1, SQLITE_TRANSIENT);
    if (e->cat)
        sq.sqlite3_bind_int64(s, 3, e->cat);
    else
        sq.sqlite3_bind_null(s, 3);
    sq.sqlite3_bind_int64(s, 4, name);
    sq.sqlite3_bind_int64(s, 5, e->pid);
    if (e->flags & ACT_EVF_NO_TID)
        sq.sqlite3_bind_null(s, 6);
    else
        sq.sqlite3_bind_int64(s, 6, e->tid);
    bind_u64(s, 7, e->ts);
    if (e->ph != 'M' && e->ts < w->first_ns)
        w->first_ns = e->ts;
    if (e->ph == 'X')
        bind_u64(s, 8, e->dur);
    else
        sq.sqlite3_bind_null(s, 8);
    if (e->ph == 's' || e->ph == 'f' || e->ph == 'b' || e->ph == 'e')
        bind_u64(s, 9, e->id);
    else
        sq.sqlite3_bind_null(s, 9);
    sq.sqlite3_bind_int64(s, 10, (e->flags & ACT_EVF_ERROR) != 0);
    if (sw_step(w, s))
        return w->err;
    for (uint32_t i = 0; i < e->nargs && !w->err; i++)
        sw_arg(w, id, &tl->args[e->arg0 + i]);
    return w->err;
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
    for (int i = 0; i < ST_N; i++)
        if (w->st[i])
            sq.sqlite3_finalize(w->st[i]);
    if (w->db)
        sq.sqlite3_close(w->db);
    for (size_t i = 0; i < w->n_owned; i++)
        free(w->owned[i]);
    free(w->owned);
    free(w->strs);
    act_u64map_free(&w->str_ids);
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
    int rc = act_outfile_open(&w->file, f->path, f->force, f->mode, ACT_OUTFILE_NAMED, err, errlen);
    if (rc)
        return rc;
    if (sq.sqlite3_open_v2(act_outfile_temp(w->file), &w->db, SQLITE_OPEN_READWRITE, NULL) !=
            SQLITE_OK ||
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
    return w->err;
}

static void sqlite_writer_set_facts(act_writer *aw, const act_writer_facts *f)
{
    ((sqlite_writer *)aw)->f = *f;
}

static int sqlite_writer_close(act_writer *aw, act_timeline *tl, int ok, char *err, size_t errlen)
{
    sqlite_writer *w = (sqlite_writer *)aw;
    if (ok && !w->err && !sw_close_facts(w, tl))
        (void)(sw_exec(w, index_sql) || sw_exec(w, "COMMIT;"));
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
    .flags = 0,
    .open = sqlite_writer_open,
    .batch = sqlite_writer_batch,
    .set_facts = sqlite_writer_set_facts,
    .close = sqlite_writer_close,
};
