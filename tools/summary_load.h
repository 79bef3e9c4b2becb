/*
 * summary_load.h -- feeds a Chrome trace file (plain or gzip, or standard
 * input as "-") into a summary as a stream (yajl), so that memory is
 * bounded by the summary's names and lanes, not by the file.
 */
#ifndef ACT_SUMMARY_LOAD_H
#define ACT_SUMMARY_LOAD_H

#include <stddef.h>

#include "writers/summary.h"

/* Called now and then while reading: bytes read so far, events seen. */
typedef void (*act_load_progress)(void *ctx, unsigned long long bytes, unsigned long long events);

/* Load one trace (object form or bare array; "-" = standard input) as a
 * new source of s. Returns 0, or ACT_E_IO / ACT_E_FORMAT / ACT_E_NOMEM
 * with a one-line reason (no control bytes) in err. */
int act_summary_load_json(act_summary *s, const char *path, char *err, size_t errlen,
                          act_load_progress progress, void *pctx);

#endif
