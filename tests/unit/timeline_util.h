/*
 * timeline_util.h -- shared steps of the timeline tests: write spool
 * builders into a private directory, read them back with the real reader,
 * build the timeline, write the Chrome JSON into memory and parse it with
 * jansson, then query the events.
 */
#ifndef ACT_TEST_TIMELINE_UTIL_H
#define ACT_TEST_TIMELINE_UTIL_H

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spool_build.h"
#include "timeline/spool.h"
#include "timeline/timeline.h"
#include "writers/chrome_json.h"

/* cmocka 1.1.5 has no double comparison. */
#define assert_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

/* A whole (nonempty) file in memory, NUL-terminated; free() it. */
static inline char *tu_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

typedef struct built {
    act_spool sp[8];
    act_spool *ptr[8];
    size_t n;
    act_timeline tl;
    json_t *doc;
    json_t *events;
    char dir[64];
} built;

static inline void tu_mkdir(built *b)
{
    snprintf(b->dir, sizeof(b->dir), "/tmp/act_tl_XXXXXX");
    if (!mkdtemp(b->dir))
        abort();
}

/* Write `s` as <pid>.acts, read it, add it to b. Returns act_spool_open's rc. */
static inline int tu_add(built *b, sb *s, char *err, size_t errlen)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%u.acts", b->dir, sb_hdr(s)->pid);
    if (sb_write(s, path))
        abort();
    int rc = act_spool_open(&b->sp[b->n], path, err, errlen);
    unlink(path);
    if (rc) {
        act_spool_close(&b->sp[b->n]);
        return rc;
    }
    b->ptr[b->n] = &b->sp[b->n];
    b->n++;
    return 0;
}

/* The Chrome trace of a built timeline, written by the real writer (the
 * stream export uses) into memory: malloc'ed text, or NULL. */
static inline char *tu_trace_text(act_timeline *tl, const act_chrome_opts *co, size_t *len)
{
    act_chrome_stream *cs;
    char *text = NULL;
    int rc = act_chrome_stream_open_mem(&cs, tl, co);
    if (!rc)
        rc = act_chrome_stream_write(cs, tl);
    if (act_chrome_stream_close_mem(cs, &text, len) || rc) {
        free(text);
        return NULL;
    }
    return text;
}

static inline json_t *tu_build(built *b, uint64_t ws, uint64_t we)
{
    act_build_opts o = {ws, we};
    if (act_timeline_build(&b->tl, b->ptr, b->n, &o))
        return NULL;
    const char *argv[] = {"prog", "arg1"};
    act_chrome_opts co = {NULL, argv, 2, NULL, 0, NULL, 0};
    size_t len;
    char *text = tu_trace_text(&b->tl, &co, &len);
    if (!text)
        return NULL;
    json_error_t e;
    b->doc = json_loadb(text, len, JSON_ALLOW_NUL, &e);
    if (!b->doc)
        fprintf(stderr, "json error: %s at %d:%d\n", e.text, e.line, e.column);
    free(text);
    b->events = json_object_get(b->doc, "traceEvents");
    return b->doc;
}

static inline void tu_free(built *b)
{
    json_decref(b->doc);
    act_timeline_free(&b->tl);
    for (size_t i = 0; i < b->n; i++)
        act_spool_close(&b->sp[i]);
    rmdir(b->dir);
}

static inline const char *ev_str(json_t *ev, const char *k)
{
    return json_string_value(json_object_get(ev, k));
}

static inline long long ev_int(json_t *ev, const char *k)
{
    return json_integer_value(json_object_get(ev, k));
}

static inline double ev_num(json_t *ev, const char *k)
{
    return json_number_value(json_object_get(ev, k));
}

static inline long long arg_int(json_t *ev, const char *k)
{
    return json_integer_value(json_object_get(json_object_get(ev, "args"), k));
}

/* Count events with ph (and name when not NULL). */
static inline size_t tu_count(built *b, const char *ph, const char *name)
{
    size_t i, n = 0;
    json_t *ev;
    json_array_foreach(b->events, i, ev)
    {
        if (strcmp(ev_str(ev, "ph"), ph))
            continue;
        if (name && (!ev_str(ev, "name") || strcmp(ev_str(ev, "name"), name)))
            continue;
        n++;
    }
    return n;
}

/* The k-th event with ph and name. */
static inline json_t *tu_find(built *b, const char *ph, const char *name, size_t k)
{
    size_t i;
    json_t *ev;
    json_array_foreach(b->events, i, ev)
    {
        if (strcmp(ev_str(ev, "ph"), ph))
            continue;
        if (name && (!ev_str(ev, "name") || strcmp(ev_str(ev, "name"), name)))
            continue;
        if (k-- == 0)
            return ev;
    }
    return NULL;
}

static inline long long tu_meta_int(built *b, const char *k)
{
    return json_integer_value(json_object_get(json_object_get(b->doc, "acceltrace"), k));
}

#endif
