/*
 * sqlite_api.h -- libsqlite3, loaded on first use (sqlite_api.c) for the
 * SQLite writer and `acceltrace stats`: the library is injected into
 * traced programs and must not get a second SQLite (or any new NEEDED
 * entry) because of us, and the command stays free of it until a .sqlite
 * file is asked for. The functions are called through `sq`.
 */
#ifndef ACT_SQLITE_API_H
#define ACT_SQLITE_API_H

#include <sqlite3.h>

#define ACT_SQLITE_FNS(X)                                                                          \
    X(int, sqlite3_open_v2, (const char *, sqlite3 **, int, const char *))                         \
    X(int, sqlite3_close, (sqlite3 *))                                                             \
    X(int, sqlite3_exec,                                                                           \
      (sqlite3 *, const char *, int (*)(void *, int, char **, char **), void *, char **))          \
    X(int, sqlite3_prepare_v2, (sqlite3 *, const char *, int, sqlite3_stmt **, const char **))     \
    X(int, sqlite3_bind_int64, (sqlite3_stmt *, int, sqlite3_int64))                               \
    X(int, sqlite3_bind_double, (sqlite3_stmt *, int, double))                                     \
    X(int, sqlite3_bind_text, (sqlite3_stmt *, int, const char *, int, void (*)(void *)))          \
    X(int, sqlite3_bind_null, (sqlite3_stmt *, int))                                               \
    X(int, sqlite3_step, (sqlite3_stmt *))                                                         \
    X(int, sqlite3_reset, (sqlite3_stmt *))                                                        \
    X(int, sqlite3_finalize, (sqlite3_stmt *))                                                     \
    X(const char *, sqlite3_errmsg, (sqlite3 *))                                                   \
    X(void, sqlite3_free, (void *))                                                                \
    X(int, sqlite3_column_count, (sqlite3_stmt *))                                                 \
    X(const char *, sqlite3_column_name, (sqlite3_stmt *, int))                                    \
    X(int, sqlite3_column_type, (sqlite3_stmt *, int))                                             \
    X(sqlite3_int64, sqlite3_column_int64, (sqlite3_stmt *, int))                                  \
    X(double, sqlite3_column_double, (sqlite3_stmt *, int))                                        \
    X(const unsigned char *, sqlite3_column_text, (sqlite3_stmt *, int))                           \
    X(int, sqlite3_create_function_v2,                                                             \
      (sqlite3 *, const char *, int, int, void *,                                                  \
       void (*)(sqlite3_context *, int, sqlite3_value **),                                         \
       void (*)(sqlite3_context *, int, sqlite3_value **), void (*)(sqlite3_context *),            \
       void (*)(void *)))                                                                          \
    X(void *, sqlite3_aggregate_context, (sqlite3_context *, int))                                 \
    X(int, sqlite3_value_type, (sqlite3_value *))                                                  \
    X(double, sqlite3_value_double, (sqlite3_value *))                                             \
    X(void, sqlite3_result_double, (sqlite3_context *, double))                                    \
    X(void, sqlite3_result_null, (sqlite3_context *))                                              \
    X(void, sqlite3_result_error_nomem, (sqlite3_context *))

typedef struct act_sqlite_api {
#define X(ret, name, args) ret(*name) args;
    ACT_SQLITE_FNS(X)
#undef X
} act_sqlite_api;

extern act_sqlite_api sq;

/* Load libsqlite3.so.0 once: 0, or -1 when it (or a function) is missing. */
int act_sqlite_load(void);

#endif
