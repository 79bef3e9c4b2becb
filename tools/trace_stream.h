/*
 * trace_stream.h -- a Chrome trace file (plain or gzip) read as a stream
 * (yajl): each event of traceEvents handed over as a small jansson object,
 * one at a time, and each other top-level member as a jansson value; memory
 * is bounded by the largest single event or member, not by the file.
 * `merge` reads its inputs this way (twice: facts, then events).
 */
#ifndef ACT_TRACE_STREAM_H
#define ACT_TRACE_STREAM_H

#include <jansson.h>
#include <stddef.h>

typedef struct act_trace_stream_cb {
    /* A top-level member other than traceEvents (borrowed: incref to keep). */
    int (*member)(void *ctx, const char *key, json_t *value);
    /* One element of traceEvents, in file order (borrowed). index: its position. */
    int (*event)(void *ctx, size_t index, json_t *event);
    void *ctx;
    /* 1: events carry only their scalar members (their args and other
     * objects or arrays are skipped, not built): a pass that needs no more
     * reads faster. */
    int shallow;
    /* With shallow: only these members of an event are built (NULL: all
     * scalars); the rest are skipped as they are read. */
    const char *const *only;
} act_trace_stream_cb;

/* Read `path` ("-" is not accepted: it cannot be read twice). A callback
 * returning non-zero stops the read (its reason is the caller's). Returns
 * 0; 1 when a callback stopped it; or -1 with "PATH: reason" in err (not
 * a file, not JSON, no traceEvents array, a number out of range). The bare
 * array form is a trace whose events are the array. */
int act_trace_stream(const char *path, const act_trace_stream_cb *cb, char *err, size_t errlen);

#endif
