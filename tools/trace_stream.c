/*
 * trace_stream.c -- a trace file read as a stream of events (trace_stream.h).
 *
 * yajl parses; the value being captured (one event, or one top-level
 * member) is built as a jansson value with a stack of open containers.
 * Nothing else of the file is kept: memory is one event deep.
 */
#include "trace_stream.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "trace_file.h"

#define MAX_NEST 512 /* deeper is refused, as jansson's loader does (2048) */

enum place { P_TOP, P_TOP_OBJECT, P_EVENTS, P_CAPTURE };

typedef struct stream {
    const act_trace_stream_cb *cb;
    int depth;             /* open containers */
    int events_depth;      /* depth of the traceEvents array (0: not in it) */
    int saw_events;        /* a traceEvents array was found */
    char *top_key;         /* the member whose value comes next (top object) */
    json_t *cap[MAX_NEST]; /* the containers being built */
    /* the key of each object being built whose value comes next: a
     * buffer per level, reused (a key per member: no allocation each) */
    char *cap_key[MAX_NEST];
    size_t key_len[MAX_NEST], key_cap[MAX_NEST];
    unsigned char has_key[MAX_NEST];
    int n_cap;
    int skip;           /* nesting inside a value left out (shallow events) */
    int skip_value;     /* the next value is left out (not in cb->only) */
    size_t index;       /* events delivered */
    int stopped;        /* a callback said stop */
    const char *failed; /* our own reason (nomem, a number) */
} stream;

static enum place place_of(const stream *s)
{
    if (s->n_cap)
        return P_CAPTURE;
    if (s->depth == 0)
        return P_TOP;
    if (s->events_depth && s->depth == s->events_depth)
        return P_EVENTS;
    return s->depth == 1 ? P_TOP_OBJECT : P_CAPTURE;
}

/* A value is complete: into its container, or handed over as a whole. */
static int give(stream *s, json_t *v)
{
    if (!v) {
        s->failed = "out of memory";
        return 0;
    }
    if (s->n_cap) {
        json_t *parent = s->cap[s->n_cap - 1];
        int rc;
        if (json_is_object(parent)) {
            int l = s->n_cap - 1;
            if (!s->has_key[l]) { /* yajl gives a key before each value */
                json_decref(v);
                s->failed = "a value without a key";
                return 0;
            }
            /* yajl checked the key's UTF-8 */
            rc = json_object_setn_new_nocheck(parent, s->cap_key[l], s->key_len[l], v);
            s->has_key[l] = 0;
        } else {
            rc = json_array_append_new(parent, v);
        }
        if (rc)
            s->failed = "out of memory";
        return !rc;
    }
    int stop = 0;
    if (s->events_depth && s->depth == s->events_depth)
        stop = s->cb->event ? s->cb->event(s->cb->ctx, s->index++, v) : 0;
    else if (s->depth == 1 && s->top_key && s->cb->member)
        stop = s->cb->member(s->cb->ctx, s->top_key, v);
    json_decref(v);
    free(s->top_key);
    s->top_key = NULL;
    if (stop)
        s->stopped = 1;
    return !stop;
}

static int on_scalar(stream *s, json_t *v)
{
    if (s->skip || s->skip_value) {
        s->skip_value = 0;
        json_decref(v);
        return 1;
    }
    enum place p = place_of(s);
    if (p == P_TOP) { /* a bare scalar: not a trace */
        json_decref(v);
        return 1;
    }
    return give(s, v);
}

static int cb_null(void *c)
{
    return on_scalar(c, json_null());
}

/* A value that will be left out is not built. */
static int skipped(stream *s)
{
    if (s->skip)
        return 1;
    if (s->skip_value) {
        s->skip_value = 0;
        return 1;
    }
    return 0;
}

static int cb_bool(void *c, int b)
{
    return on_scalar(c, json_boolean(b));
}

/* As jansson reads numbers: an integer that fits, else a real; an integer
 * beyond 64 bits is refused (jansson: "too big integer"). */
static int cb_number(void *c, const char *n, size_t len)
{
    stream *s = c;
    if (skipped(s))
        return 1;
    /* the common case, an integer of up to 18 digits, read here */
    size_t neg = len && n[0] == '-', at = neg;
    long long iv = 0;
    while (at < len && at - neg < 18 && n[at] >= '0' && n[at] <= '9')
        iv = iv * 10 + (n[at++] - '0');
    if (at == len && at > neg)
        return on_scalar(s, json_integer(neg ? -iv : iv));
    char buf[128];
    if (len >= sizeof(buf)) {
        s->failed = "a number of more than 127 characters";
        return 0;
    }
    memcpy(buf, n, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    if (!strpbrk(buf, ".eE")) {
        long long v = strtoll(buf, &end, 10);
        if (errno == ERANGE) {
            s->failed = "an integer beyond 64 bits";
            return 0;
        }
        return on_scalar(s, json_integer(v));
    }
    double d = strtod(buf, &end);
    if (errno == ERANGE && (d > 1.0 || d < -1.0)) {
        s->failed = "a real number out of range";
        return 0;
    }
    return on_scalar(s, json_real(d));
}

static int cb_string(void *c, const unsigned char *str, size_t len)
{
    if (skipped(c))
        return 1;
    return on_scalar(c, json_stringn_nocheck((const char *)str, len)); /* yajl checked UTF-8 */
}

static int cb_key(void *c, const unsigned char *k, size_t len)
{
    stream *s = c;
    if (s->skip)
        return 1;
    if (s->cb->only && s->events_depth && s->depth == s->events_depth + 1) {
        int want = 0;
        for (const char *const *o = s->cb->only; *o && !want; o++)
            want = strlen(*o) == len && !memcmp(*o, k, len);
        if (!want) {
            s->skip_value = 1; /* its value, scalar or container, is left out */
            return 1;
        }
    }
    if (s->n_cap) {
        int l = s->n_cap - 1;
        if (s->key_cap[l] < len + 1) {
            size_t cap = len + 1 > 64 ? len + 1 : 64;
            char *b = realloc(s->cap_key[l], cap);
            if (!b) {
                s->failed = "out of memory";
                return 0;
            }
            s->cap_key[l] = b;
            s->key_cap[l] = cap;
        }
        memcpy(s->cap_key[l], k, len);
        s->cap_key[l][len] = '\0';
        s->key_len[l] = len;
        s->has_key[l] = 1;
        return 1;
    }
    char *key = strndup((const char *)k, len);
    if (!key) {
        s->failed = "out of memory";
        return 0;
    }
    free(s->top_key);
    s->top_key = key;
    return 1;
}

static int open_container(stream *s, int is_map)
{
    if (s->depth >= MAX_NEST) {
        s->failed = "nested deeper than 512 levels";
        return 0;
    }
    enum place p = place_of(s);
    s->depth++;
    if (s->skip || s->skip_value ||
        (s->cb->shallow && s->events_depth && s->depth > s->events_depth + 1)) {
        s->skip_value = 0;
        s->skip++; /* inside an event, and only its scalars are wanted */
        return 1;
    }
    if (p == P_TOP) { /* the object form, or the bare array of events */
        if (!is_map) {
            s->events_depth = 1;
            s->saw_events = 1;
        }
        return 1;
    }
    if (p == P_TOP_OBJECT && !is_map && s->top_key && !strcmp(s->top_key, "traceEvents")) {
        s->events_depth = 2;
        s->saw_events = 1;
        free(s->top_key);
        s->top_key = NULL;
        return 1;
    }
    json_t *v = is_map ? json_object() : json_array();
    if (!v) {
        s->failed = "out of memory";
        return 0;
    }
    s->cap[s->n_cap] = v;
    s->has_key[s->n_cap++] = 0;
    return 1;
}

static int cb_start_map(void *c)
{
    return open_container(c, 1);
}

static int cb_start_array(void *c)
{
    return open_container(c, 0);
}

static int cb_end(void *c)
{
    stream *s = c;
    if (s->skip) {
        s->skip--;
        s->depth--;
        return 1;
    }
    if (s->n_cap && s->depth > (s->events_depth ? s->events_depth : 1)) {
        json_t *v = s->cap[--s->n_cap];
        s->has_key[s->n_cap] = 0;
        s->depth--;
        return give(s, v);
    }
    if (s->events_depth && s->depth == s->events_depth)
        s->events_depth = 0;
    s->depth--;
    return 1;
}

static const yajl_callbacks callbacks = {
    cb_null,      cb_bool, NULL,   NULL,           cb_number, cb_string,
    cb_start_map, cb_key,  cb_end, cb_start_array, cb_end,
};

static void stream_free(stream *s)
{
    for (int i = 0; i < s->n_cap; i++)
        json_decref(s->cap[i]);
    for (int i = 0; i < MAX_NEST; i++)
        free(s->cap_key[i]);
    free(s->top_key);
}

/* The parse error yajl reports, on one line. */
static void parse_error(yajl_handle h, const unsigned char *buf, size_t n, const char *path,
                        char *err, size_t errlen)
{
    unsigned char *e = yajl_get_error(h, 0, buf, n);
    snprintf(err, errlen, "%s: not valid JSON: %s", path, e ? (const char *)e : "parse error");
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (e)
        yajl_free_error(h, e);
}

int act_trace_stream(const char *path, const act_trace_stream_cb *cb, char *err, size_t errlen)
{
    int orc;
    gzFile f = act_trace_open(path, &orc, err, errlen);
    if (!f)
        return -1;
    stream s = {.cb = cb};
    yajl_handle h = yajl_alloc(&callbacks, NULL, &s);
    if (!h) {
        gzclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    unsigned char buf[1 << 16];
    int rc = 0, n;
    yajl_status st = yajl_status_ok;
    while (st == yajl_status_ok && (n = gzread(f, buf, sizeof(buf))) > 0)
        st = yajl_parse(h, buf, (size_t)n);
    int gz_errnum = Z_OK;
    const char *gz_msg = st == yajl_status_ok ? gzerror(f, &gz_errnum) : NULL;
    if (st == yajl_status_ok && n < 0) {
        snprintf(err, errlen, "%s: cannot read: %s", path,
                 gz_errnum == Z_ERRNO ? strerror(errno) : gz_msg);
        rc = -1;
    } else if (st == yajl_status_ok) {
        st = yajl_complete_parse(h);
    }
    if (!rc && st != yajl_status_ok) {
        if (s.stopped)
            rc = 1;
        else if (s.failed)
            snprintf(err, errlen, "%s: %s", path, s.failed), rc = -1;
        else
            parse_error(h, buf, 0, path, err, errlen), rc = -1;
    }
    if (!rc && !s.saw_events) {
        snprintf(err, errlen, "%s: not a Chrome trace (no traceEvents)", path);
        rc = -1;
    }
    yajl_free(h);
    gzclose(f);
    stream_free(&s);
    return rc;
}
