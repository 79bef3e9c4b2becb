/*
 * trace_file.h -- reading and writing trace files for the commands that
 * read traces (summary, merge): a file is plain JSON or gzip (zlib reads
 * both alike), "-" is standard input, and a whole document is loaded or
 * written through jansson with gzip chosen by the name.
 */
#ifndef ACT_TRACE_FILE_H
#define ACT_TRACE_FILE_H

#include <jansson.h>
#include <stddef.h>
#include <zlib.h>

/* Open a trace for reading. NULL with a one-line reason in err; *rc is
 * then ACT_E_FORMAT (an empty file: not a trace), ACT_E_IO or
 * ACT_E_NOMEM. */
gzFile act_trace_open(const char *path, int *rc, char *err, size_t errlen);
/* A whole trace (plain or gzip) as a jansson document (`flags` as
 * json_loadb's); NULL with the reason, "PATH:LINE: text" or
 * "PATH: text", in err. */
json_t *act_trace_load(const char *path, size_t flags, char *err, size_t errlen);
/* Write doc to path (`flags` as json_dumpf's), gzip-compressed when
 * `gzip`; 0, or -1 with errno set. */
int act_trace_dump(const json_t *doc, const char *path, int gzip, size_t flags);

#endif
