/*
 * summary_load.c -- a Chrome trace read as a stream of yajl events (see
 * summary_load.h). Only what the summary needs is kept from an event
 * while it is parsed (ph, cat, name, pid, tid, ts, dur, args["External
 * id"], args.name of a process_name); the top-level "acceltrace" and
 * "distributedInfo" objects, small, are built as jansson values. The file
 * is opened by trace_file.c (gzip and plain alike).
 *
 * yajl lexes a token that spans two reads again from its start at every
 * read, and keeps all of it: time quadratic and memory linear in one
 * string's length (BENCHMARKS.md "Summary at scale"). So the
 * bytes pass through a string cap first (strcap below) that hands yajl at
 * most ACT_SUM_STR_MAX bytes of any string, then a marker naming the cut;
 * the bytes it holds back go to a second yajl handle in bounded pieces, so
 * that a file yajl would refuse is still refused. The cap only follows
 * where strings begin and end (quote, backslash escape); yajl parses.
 */
#include "summary_load.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#include "acceltrace.h"
#include "trace_file.h"

#define MAX_CAPTURE_DEPTH 64
#define NAME_MAX_BYTES    (ACT_SUM_STR_MAX + 128) /* the cap and its marker */
#define NUM_MAX_CHARS     4096                    /* a longer number is no trace's: refused */
#define MAX_NESTING       1000                    /* deeper than Python's json reads: not a trace */

enum where { W_TOP_VALUE, W_TOP_OBJ, W_EVENTS, W_EVENT, W_ARGS, W_CAPTURE, W_SKIP };
enum field {
    F_NONE,
    F_PH,
    F_CAT,
    F_NAME,
    F_PID,
    F_TID,
    F_TS,
    F_DUR,
    F_EXT,
    F_ARGNAME,
    F_TAG,
    F_ERROR,
    F_CORR,
    F_PYSTACK,
    F_QUEUED,
    F_PROGRAM
};

/* args.acceltrace of the builder's process-lifetime slice (one cpu_op per
 * process, for the TensorBoard plugin): no host call, left out. */
#define PROCESS_SLICE_TAG "process lifetime"

typedef struct ev_fields {
    char ph[4], cat[40];
    char *name;
    size_t name_len;
    int has_name, has_ts, has_dur, name_is_str, process_slice;
    char error[64];   /* args.error (an OpenCL error name), "" = none */
    char program[64]; /* args.program of an OpenCL kernel, "" = none */
    double ts, dur;
    uint64_t pid, tid, ext, corr;
    double queued; /* args.queued of a device op, us */
    int has_queued;
    char *argname;
    size_t argname_len;
    char *pyline; /* with --by-python-line: the launching line, "" = none */
    size_t pyline_len;
} ev_fields;

typedef struct loader {
    act_summary *s;
    enum where stack[8];
    int depth;      /* levels in stack */
    int skip;       /* nesting inside a skipped value */
    enum field key; /* the key whose value comes next */
    int top_key;    /* 1 = traceEvents, 2 = acceltrace, 3 = distributedInfo */
    int saw_events;
    ev_fields ev;
    json_t *cap[MAX_CAPTURE_DEPTH + 1];
    char *cap_key[MAX_CAPTURE_DEPTH + 1];
    int cap_depth, cap_what;
    int nomem, nest, too_deep, long_number;
    unsigned long long events;
} loader;

static void *xrealloc(void **p, size_t n)
{
    void *q = realloc(*p, n);
    if (q)
        *p = q;
    return q;
}

static int set_str(loader *L, char **dst, size_t *dlen, const unsigned char *v, size_t n)
{
    if (n > NAME_MAX_BYTES)
        n = NAME_MAX_BYTES;
    if (!xrealloc((void **)dst, n + 1)) {
        L->nomem = 1;
        return 0;
    }
    memcpy(*dst, v, n);
    (*dst)[n] = '\0';
    *dlen = n;
    return 1;
}

static uint64_t str_id(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h | 1ull << 63; /* apart from integer ids */
}

/* ---- capture of small top-level objects into jansson ------------------ */

static int cap_add(loader *L, json_t *v)
{
    if (!v) {
        L->nomem = 1;
        return 0;
    }
    if (L->cap_depth == 0) {
        if (L->cap_what == 2)
            act_summary_source_counters(L->s, v);
        else if (L->cap_what == 4 || L->cap_what == 5) {
            if (L->cap_what == 4)
                act_summary_source_cl_leaks(L->s, v);
            else
                act_summary_source_cl_undrawn(L->s, v);
            json_decref(v);
        } else {
            json_t *r = json_object_get(v, "rank");
            if (json_is_integer(r))
                act_summary_source_rank(L->s, json_integer_value(r));
            json_decref(v);
        }
        return 1;
    }
    json_t *parent = L->cap[L->cap_depth - 1];
    if (json_is_array(parent))
        json_array_append_new(parent, v);
    else if (L->cap_key[L->cap_depth - 1])
        json_object_set_new(parent, L->cap_key[L->cap_depth - 1], v);
    else
        json_decref(v);
    return 1;
}

static int cap_open(loader *L, json_t *c)
{
    if (!c) {
        L->nomem = 1;
        return 0;
    }
    if (L->cap_depth >= MAX_CAPTURE_DEPTH) {
        json_decref(c);
        return 0;
    }
    L->cap[L->cap_depth] = c;
    L->cap_key[L->cap_depth] = NULL;
    L->cap_depth++;
    return 1;
}

static int cap_close(loader *L)
{
    json_t *c = L->cap[--L->cap_depth];
    free(L->cap_key[L->cap_depth]);
    L->cap_key[L->cap_depth] = NULL;
    int ok = cap_add(L, c);
    if (L->cap_depth == 0)
        L->depth--; /* leaves W_CAPTURE */
    return ok;
}

/* ---- events ----------------------------------------------------------- */

static void ev_reset(ev_fields *e)
{
    char *name = e->name, *an = e->argname, *py = e->pyline;
    *e = (ev_fields){.name = name, .argname = an, .pyline = py};
}

static int ev_done(loader *L)
{
    ev_fields *e = &L->ev;
    L->events++;
    if (!strcmp(e->ph, "M") && e->has_name && e->argname && e->name_len == 12 &&
        !memcmp(e->name, "process_name", 12))
        return !act_summary_process_label(L->s, e->pid, e->argname, e->argname_len);
    if (e->error[0] && e->name_is_str)
        act_summary_add_failure(L->s, e->name, e->name_len, e->error, strlen(e->error));
    if (strcmp(e->ph, "X") || !e->cat[0] || !e->name_is_str || !e->has_ts || !e->has_dur)
        return 1;
    int dev = act_cat_is_device_name(e->cat);
    if (dev < 0 || (e->process_slice && !strcmp(e->cat, "cpu_op")))
        return 1;
    int rc;
    char key[1024];
    const char *name = e->name;
    size_t len = e->name_len;
    if (dev && e->program[0]) {
        len = act_summary_op_key(key, sizeof(key), e->name, e->name_len, e->program,
                                 strlen(e->program));
        name = len != e->name_len ? key : e->name;
    }
    if (act_summary_by_python_line(L->s)) {
        /* Keyed by correlation: the launch's Python line names the op. */
        rc = act_summary_add_slice(L->s, name, len, dev, e->pid, e->tid, e->ts, e->dur,
                                   dev ? e->corr : 0);
        if (!rc && !dev && e->corr && e->pyline_len)
            rc = act_summary_add_range(L->s, e->corr, e->pyline, e->pyline_len);
    } else {
        rc = act_summary_add_slice(L->s, name, len, dev, e->pid, e->tid, e->ts, e->dur, e->ext);
        if (!rc && !dev && e->ext &&
            (!strcmp(e->cat, "user_annotation") || !strcmp(e->cat, "cpu_op")))
            rc = act_summary_add_range(L->s, e->ext, e->name, e->name_len);
    }
    if (!rc && dev && e->has_queued)
        rc = act_summary_add_delay(L->s, name, len, e->ts - e->queued);
    if (rc)
        L->nomem = 1;
    return !rc;
}

/* Whether a frame ("file(line): function") is the program's own code
 * rather than an installed package's or generated code's. */
static int frame_is_users(const char *f, size_t n)
{
    if (n == 0 || f[0] == '<')
        return 0;
    static const char *const lib[] = {"/site-packages/", "/dist-packages/", "/lib/python3."};
    for (size_t i = 0; i < sizeof(lib) / sizeof(lib[0]); i++) {
        size_t m = strlen(lib[i]);
        for (size_t j = 0; j + m <= n; j++)
            if (!memcmp(f + j, lib[i], m))
                return 0;
    }
    return 1;
}

/* The line a launch is attributed to (docs/python.md): the innermost frame
 * of the program's own code, else the innermost frame. */
static int set_pyline(loader *L, ev_fields *e, const char *s, size_t n)
{
    const char *pick = NULL;
    size_t pick_n = 0;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t len = nl ? (size_t)(nl - (s + i)) : n - i;
        if (!pick) {
            pick = s + i;
            pick_n = len;
        }
        if (frame_is_users(s + i, len)) {
            pick = s + i;
            pick_n = len;
            break;
        }
        i += len + 1;
    }
    if (!pick)
        return 1;
    return set_str(L, &e->pyline, &e->pyline_len, (const unsigned char *)pick, pick_n);
}

/* A scalar value: where it lands depends on where we are. */
static int on_scalar(loader *L, json_t *jv, const unsigned char *str, size_t n, int is_str,
                     const char *num, size_t numlen)
{
    if (L->skip || L->depth == 0) {
        json_decref(jv);
        return 1;
    }
    enum where w = L->stack[L->depth - 1];
    if (w == W_CAPTURE)
        return cap_add(L, jv);
    json_decref(jv);
    ev_fields *e = &L->ev;
    enum field k = L->key;
    L->key = F_NONE;
    char nb[NUM_MAX_CHARS + 1]; /* cb_number refused longer ones */
    if (num) {
        size_t m = numlen < sizeof(nb) - 1 ? numlen : sizeof(nb) - 1;
        memcpy(nb, num, m);
        nb[m] = '\0';
    }
    if (w == W_EVENT) {
        switch (k) {
        case F_PH:
            if (is_str)
                snprintf(e->ph, sizeof(e->ph), "%.*s", (int)(n < 3 ? n : 3), str);
            break;
        case F_CAT:
            if (is_str && n < sizeof(e->cat))
                snprintf(e->cat, sizeof(e->cat), "%.*s", (int)n, str);
            break;
        case F_NAME:
            if (is_str) {
                e->has_name = e->name_is_str = 1;
                return set_str(L, &e->name, &e->name_len, str, n);
            }
            break;
        case F_PID:
        case F_TID: {
            uint64_t id = is_str ? str_id(str, n) : num ? (uint64_t)strtoull(nb, NULL, 10) : 0;
            *(k == F_PID ? &e->pid : &e->tid) = id;
            break;
        }
        case F_TS:
        case F_DUR:
            if (num) {
                *(k == F_TS ? &e->ts : &e->dur) = strtod(nb, NULL);
                *(k == F_TS ? &e->has_ts : &e->has_dur) = 1;
            }
            break;
        default: break;
        }
    } else if (w == W_ARGS) {
        if (k == F_EXT && num && nb[0] != '-')
            e->ext = strtoull(nb, NULL, 10);
        else if (k == F_CORR && num && nb[0] != '-')
            e->corr = strtoull(nb, NULL, 10);
        else if (k == F_QUEUED && num) {
            e->queued = strtod(nb, NULL);
            e->has_queued = 1;
        } else if (k == F_PYSTACK && is_str)
            return set_pyline(L, e, (const char *)str, n);
        else if (k == F_ARGNAME && is_str)
            return set_str(L, &e->argname, &e->argname_len, str, n);
        else if (k == F_ERROR && is_str)
            snprintf(e->error, sizeof(e->error), "%.*s", (int)(n < 63 ? n : 63), str);
        else if (k == F_PROGRAM && is_str)
            snprintf(e->program, sizeof(e->program), "%.*s", (int)(n < 63 ? n : 63), str);
        else if (k == F_TAG && is_str)
            e->process_slice =
                n == sizeof(PROCESS_SLICE_TAG) - 1 && !memcmp(str, PROCESS_SLICE_TAG, n);
    }
    return 1;
}

static int cb_null(void *c)
{
    return on_scalar(c, json_null(), NULL, 0, 0, NULL, 0);
}

static int cb_bool(void *c, int b)
{
    return on_scalar(c, json_boolean(b), NULL, 0, 0, NULL, 0);
}

/* A captured number as jansson holds it; one it cannot hold (1e400, an
 * integer beyond 64 bits) is kept as its text, named, never lost or
 * taken for running out of memory. */
static json_t *capture_number(const char *s, size_t n)
{
    char b[NUM_MAX_CHARS + 1];
    snprintf(b, sizeof(b), "%.*s", (int)n, s);
    int real = memchr(s, '.', n) || memchr(s, 'e', n) || memchr(s, 'E', n);
    errno = 0;
    if (real) {
        double d = strtod(b, NULL);
        if (isfinite(d) && errno != ERANGE)
            return json_real(d);
    } else {
        long long v = strtoll(b, NULL, 10);
        if (errno != ERANGE)
            return json_integer(v);
    }
    return json_stringn(s, n);
}

static int cb_number(void *c, const char *s, size_t n)
{
    loader *L = c;
    json_t *jv = NULL;
    if (n > NUM_MAX_CHARS) {
        L->long_number = 1;
        return 0;
    }
    if (!L->skip && L->depth && L->stack[L->depth - 1] == W_CAPTURE)
        jv = capture_number(s, n);
    return on_scalar(L, jv, NULL, 0, 0, s, n);
}

static int cb_string(void *c, const unsigned char *s, size_t n)
{
    loader *L = c;
    json_t *jv = NULL;
    if (!L->skip && L->depth && L->stack[L->depth - 1] == W_CAPTURE)
        jv = json_stringn_nocheck((const char *)s, n);
    return on_scalar(L, jv, s, n, 1, NULL, 0);
}

static int key_is(const unsigned char *k, size_t n, const char *lit)
{
    return n == strlen(lit) && !memcmp(k, lit, n);
}

static int cb_key(void *c, const unsigned char *k, size_t n)
{
    loader *L = c;
    if (L->skip || !L->depth)
        return 1;
    enum where w = L->stack[L->depth - 1];
    L->key = F_NONE;
    if (w == W_CAPTURE) {
        free(L->cap_key[L->cap_depth - 1]);
        L->cap_key[L->cap_depth - 1] = strndup((const char *)k, n);
        if (!L->cap_key[L->cap_depth - 1])
            L->nomem = 1;
        return !L->nomem;
    }
    if (w == W_TOP_OBJ) {
        L->top_key = key_is(k, n, "traceEvents")              ? 1
                     : key_is(k, n, "acceltrace")             ? 2
                     : key_is(k, n, "distributedInfo")        ? 3
                     : key_is(k, n, "opencl_leaks")           ? 4
                     : key_is(k, n, "opencl_calls_not_drawn") ? 5
                                                              : 0;
    } else if (w == W_EVENT) {
        L->key = key_is(k, n, "ph")     ? F_PH
                 : key_is(k, n, "cat")  ? F_CAT
                 : key_is(k, n, "name") ? F_NAME
                 : key_is(k, n, "pid")  ? F_PID
                 : key_is(k, n, "tid")  ? F_TID
                 : key_is(k, n, "ts")   ? F_TS
                 : key_is(k, n, "dur")  ? F_DUR
                 : key_is(k, n, "args") ? F_EXT /* marks args below */
                                        : F_NONE;
    } else if (w == W_ARGS) {
        L->key = key_is(k, n, "External id")                                        ? F_EXT
                 : key_is(k, n, "name")                                             ? F_ARGNAME
                 : key_is(k, n, "acceltrace")                                       ? F_TAG
                 : key_is(k, n, "error")                                            ? F_ERROR
                 : key_is(k, n, "correlation")                                      ? F_CORR
                 : key_is(k, n, "queued")                                           ? F_QUEUED
                 : key_is(k, n, "program")                                          ? F_PROGRAM
                 : key_is(k, n, "Python stack") && act_summary_by_python_line(L->s) ? F_PYSTACK
                                                                                    : F_NONE;
    }
    return 1;
}

static int push(loader *L, enum where w)
{
    if (L->depth >= 8) {
        L->skip++;
        return 1;
    }
    L->stack[L->depth++] = w;
    return 1;
}

static int cb_start(loader *L, int is_map)
{
    if (++L->nest > MAX_NESTING) {
        L->too_deep = 1;
        return 0;
    }
    if (L->skip) {
        L->skip++;
        return 1;
    }
    enum where w = L->depth ? L->stack[L->depth - 1] : W_TOP_VALUE;
    enum field k = L->key;
    L->key = F_NONE;
    if (w == W_CAPTURE) {
        if (L->cap_depth >= MAX_CAPTURE_DEPTH) {
            L->skip = 1; /* deeper than any counter object: left out */
            return 1;
        }
        return cap_open(L, is_map ? json_object() : json_array());
    }
    if (!L->depth)
        return push(L, is_map ? W_TOP_OBJ : (L->saw_events = 1, W_EVENTS));
    if (w == W_TOP_OBJ && L->top_key == 1 && !is_map) {
        L->saw_events = 1;
        return push(L, W_EVENTS);
    }
    if (w == W_TOP_OBJ && L->top_key >= 2 && is_map) {
        L->cap_what = L->top_key;
        push(L, W_CAPTURE);
        return cap_open(L, json_object());
    }
    if (w == W_EVENTS && is_map) {
        ev_reset(&L->ev);
        return push(L, W_EVENT);
    }
    if (w == W_EVENT && k == F_EXT && is_map)
        return push(L, W_ARGS);
    L->skip = 1;
    return 1;
}

static int cb_end(loader *L)
{
    L->nest--;
    if (L->skip) {
        L->skip--;
        return 1;
    }
    if (!L->depth)
        return 1;
    enum where w = L->stack[L->depth - 1];
    if (w == W_CAPTURE)
        return cap_close(L);
    L->depth--;
    if (w == W_EVENT)
        return ev_done(L);
    return 1;
}

static int cb_start_map(void *c)
{
    return cb_start(c, 1);
}

static int cb_start_array(void *c)
{
    return cb_start(c, 0);
}

static int cb_end_any(void *c)
{
    return cb_end(c);
}

static const yajl_callbacks callbacks = {
    cb_null,      cb_bool, NULL,       NULL,           cb_number,  cb_string,
    cb_start_map, cb_key,  cb_end_any, cb_start_array, cb_end_any,
};

/* yajl's allocations fail visibly: an out-of-memory is reported as such. */
static int alloc_failed;

static void *ya_malloc(void *ctx, size_t n)
{
    void *p = malloc(n);
    alloc_failed |= !p;
    return p;
}

static void *ya_realloc(void *ctx, void *p, size_t n)
{
    void *q = realloc(p, n);
    alloc_failed |= !q;
    return q;
}

static void ya_free(void *ctx, void *p)
{
    free(p);
}

/* ---- the string cap ----------------------------------------------------- */

#define PIECE_MAX (1u << 16) /* held-back bytes checked at a time */

typedef struct strcap {
    yajl_handle main, check; /* check: validates what main is not given */
    int in_str, cutting;
    int esc;                /* -1 after a backslash, 1..4 hex digits left, 0 */
    unsigned long long len; /* bytes of the current string so far */
    uint64_t hash;          /* of its bytes held back */
    unsigned char *piece;   /* '"' + held-back bytes + '"' for check */
    size_t n_piece;
    unsigned long long truncated, raw, raw_at;
    int check_failed;
} strcap;

/* Byte c inside a string: 1 when it is the closing quote. */
static int str_step(strcap *C, unsigned char c)
{
    if (C->esc == -1) {
        C->esc = c == 'u' ? 4 : 0;
        return 0;
    }
    if (C->esc > 0) {
        C->esc--;
        return 0;
    }
    if (c == '\\')
        C->esc = -1;
    return c == '"';
}

static yajl_status cap_give(strcap *C, const unsigned char *p, size_t n, unsigned long long raw_at)
{
    if (!n)
        return yajl_status_ok;
    C->raw_at = raw_at;
    return yajl_parse(C->main, p, n);
}

/* Held-back bytes go to check as one whole string value each time, so
 * check never holds a token across reads either. */
static void piece_flush(strcap *C)
{
    if (!C->n_piece || C->check_failed)
        return;
    C->piece[0] = C->piece[C->n_piece + 1] = '"';
    C->check_failed = yajl_parse(C->check, C->piece, C->n_piece + 2) != yajl_status_ok;
    C->n_piece = 0;
}

static void piece_add(strcap *C, unsigned char c)
{
    /* a piece ends where a string may be cut: outside an escape, before a
     * byte that starts a character */
    if (C->n_piece >= PIECE_MAX - 16 && C->esc == 0 && (c & 0xc0) != 0x80)
        piece_flush(C);
    else if (C->n_piece >= PIECE_MAX - 4) /* more continuation bytes than a character */
        piece_flush(C);                   /* has: invalid wherever it is cut */
    C->piece[1 + C->n_piece++] = c;
    C->hash = (C->hash ^ c) * 1099511628211ull;
}

/* The end of a cut string: the marker and the closing quote. */
static yajl_status cap_cut_end(strcap *C)
{
    char m[96];
    piece_flush(C);
    int n = snprintf(m, sizeof(m), "...[truncated: %llu bytes, id %08llx]\"", C->len,
                     (unsigned long long)(C->hash & 0xffffffffull));
    C->truncated++;
    C->cutting = C->in_str = 0;
    return cap_give(C, (const unsigned char *)m, (size_t)n, C->raw);
}

/* Where the next string starts after i (outside a string), or n. Byte
 * loops: the strings of a trace and the gaps between them are mostly a few
 * bytes, where a call to memchr costs more (and 8-byte steps gained
 * nothing measurable). */
static size_t next_quote(const unsigned char *b, size_t i, size_t n)
{
    while (i < n && b[i] != '"')
        i++;
    return i;
}

/* The end of the plain bytes of a string from i: its first quote or
 * backslash before lim, else lim. */
static size_t plain_span(const unsigned char *b, size_t i, size_t lim)
{
    while (i < lim && b[i] != '"' && b[i] != '\\')
        i++;
    return i;
}

static yajl_status cap_feed(strcap *C, const unsigned char *b, size_t n)
{
    size_t seg = 0;
    unsigned long long base = C->raw;
    yajl_status st = yajl_status_ok;
    for (size_t i = 0; i < n && st == yajl_status_ok; i++) {
        if (!C->in_str) {
            i = next_quote(b, i, n);
            if (i < n) {
                C->in_str = 1;
                C->len = 0;
                C->esc = 0;
            }
            continue;
        }
        if (!C->cutting && C->esc == 0 && C->len < ACT_SUM_STR_MAX) {
            size_t room = ACT_SUM_STR_MAX - (size_t)C->len;
            size_t stop = plain_span(b, i, n - i < room ? n : i + room);
            C->len += stop - i;
            i = stop;
            if (i == n)
                break;
        }
        unsigned char c = b[i];
        /* cut outside an escape, before a byte that starts a character (or
         * after 4 continuation bytes in a row: invalid UTF-8 anyway) */
        if (!C->cutting && C->len >= ACT_SUM_STR_MAX && C->esc == 0 && c != '"' &&
            ((c & 0xc0) != 0x80 || C->len >= ACT_SUM_STR_MAX + 4)) {
            st = cap_give(C, b + seg, i - seg, base + seg);
            C->cutting = 1;
            C->hash = 1469598103934665603ull;
        }
        int closes = str_step(C, c);
        if (!C->cutting) {
            C->in_str = !closes;
            C->len += !closes;
        } else if (closes) {
            C->raw = base + i;
            if (st == yajl_status_ok)
                st = cap_cut_end(C);
            seg = i + 1;
        } else {
            piece_add(C, c);
            C->len++;
        }
    }
    if (st == yajl_status_ok && !C->cutting)
        st = cap_give(C, b + seg, n - seg, base + seg);
    C->raw = base + n;
    return st;
}

static int parse_stream(loader *L, gzFile gz, strcap *C, const char *path, char *err, size_t errlen,
                        act_load_progress progress, void *pctx)
{
    static unsigned char buf[1 << 16];
    unsigned long long total = 0;
    int n;
    yajl_status st = yajl_status_ok;
    while ((n = gzread(gz, buf, sizeof(buf))) > 0) {
        total += (unsigned)n;
        st = cap_feed(C, buf, (size_t)n);
        if (st != yajl_status_ok || C->check_failed)
            break;
        if (progress)
            progress(pctx, total, L->events);
    }
    if (n < 0) {
        int zerr = 0;
        const char *m = gzerror(gz, &zerr);
        snprintf(err, errlen, "%s: %s", path,
                 zerr == Z_ERRNO ? strerror(errno)
                 : m             ? m
                                 : "read error");
        return zerr == Z_MEM_ERROR ? ACT_E_NOMEM : ACT_E_IO;
    }
    piece_flush(C);
    if (st == yajl_status_ok && !C->check_failed)
        st = yajl_complete_parse(C->main);
    act_summary_add_truncated(L->s, C->truncated);
    if (L->nomem || alloc_failed) {
        snprintf(err, errlen, "%s: out of memory", path);
        return ACT_E_NOMEM;
    }
    if (L->too_deep) {
        snprintf(err, errlen, "%s: not a trace (nested deeper than %d levels)", path, MAX_NESTING);
        return ACT_E_FORMAT;
    }
    if (L->long_number) {
        snprintf(err, errlen,
                 "%s: not a trace (a number of more than %d characters, near byte %llu)", path,
                 NUM_MAX_CHARS, C->raw_at + yajl_get_bytes_consumed(C->main));
        return ACT_E_FORMAT;
    }
    if (C->check_failed) {
        snprintf(err, errlen,
                 "%s: not valid JSON (invalid bytes in a string of over %u bytes, "
                 "before byte %llu)",
                 path, ACT_SUM_STR_MAX, C->raw);
        return ACT_E_FORMAT;
    }
    if (st != yajl_status_ok) {
        unsigned char *m = yajl_get_error(C->main, 0, NULL, 0);
        snprintf(err, errlen, "%s: not valid JSON (%s, near byte %llu)", path,
                 m ? (char *)m : "parse error", C->raw_at + yajl_get_bytes_consumed(C->main));
        if (m)
            yajl_free_error(C->main, m);
        return ACT_E_FORMAT;
    }
    if (!L->saw_events) {
        snprintf(err, errlen, "%s: not a Chrome trace (no traceEvents array)", path);
        return ACT_E_FORMAT;
    }
    if (total == 0) {
        snprintf(err, errlen, "%s: empty input, not a trace", path);
        return ACT_E_FORMAT;
    }
    return 0;
}

static int load(act_summary *s, const char *path, char *err, size_t errlen,
                act_load_progress progress, void *pctx)
{
    int rc;
    gzFile gz = act_trace_open(path, &rc, err, errlen);
    if (!gz)
        return rc;
    if (act_summary_begin_source(s, path)) {
        gzclose(gz);
        snprintf(err, errlen, "%s: out of memory", path);
        return ACT_E_NOMEM;
    }
    loader *L = calloc(1, sizeof(*L));
    yajl_alloc_funcs af = {ya_malloc, ya_realloc, ya_free, NULL};
    alloc_failed = 0;
    strcap C = {0};
    C.main = L ? yajl_alloc(&callbacks, &af, L) : NULL;
    C.check = yajl_alloc(NULL, &af, NULL);
    C.piece = malloc(PIECE_MAX + 2);
    if (!L || !C.main || !C.check || !C.piece) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = ACT_E_NOMEM;
    } else {
        L->s = s;
        yajl_config(C.main, yajl_allow_trailing_garbage, 0);
        yajl_config(C.check, yajl_allow_multiple_values, 1);
        rc = parse_stream(L, gz, &C, path, err, errlen, progress, pctx);
    }
    if (C.main)
        yajl_free(C.main);
    if (C.check)
        yajl_free(C.check);
    free(C.piece);
    gzclose(gz);
    if (L) {
        while (L->cap_depth > 0) {
            L->cap_depth--;
            json_decref(L->cap[L->cap_depth]);
            free(L->cap_key[L->cap_depth]);
        }
        free(L->ev.name);
        free(L->ev.argname);
        free(L->ev.pyline);
        free(L);
    }
    return rc;
}

/* The reason is one line whatever the file or its name holds: yajl quotes
 * the bytes it choked on and a path may hold a newline, so control bytes
 * become '?' (fuzz_summary checks this). */
int act_summary_load_json(act_summary *s, const char *path, char *err, size_t errlen,
                          act_load_progress progress, void *pctx)
{
    int rc = load(s, path, err, errlen, progress, pctx);
    for (char *p = err; rc != 0 && errlen && *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return rc;
}
