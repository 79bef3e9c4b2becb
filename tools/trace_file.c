/*
 * trace_file.c -- trace files read and written as plain JSON or gzip
 * (see trace_file.h).
 */
#include "trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acceltrace.h"
#include "writers/chrome_json.h"
#include "writers/obuf.h"

/* A descriptor of a regular, non-empty file (or standard input). */
static int open_input(const char *path, int *rc, char *err, size_t errlen)
{
    *rc = ACT_E_IO;
    if (!strcmp(path, "-"))
        return dup(0);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path,
                 errno == EACCES ? "permission denied" : strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: %s", path,
                 S_ISDIR(st.st_mode) ? "is a directory, not a trace file"
                                     : "not a regular file, not a trace file");
        close(fd);
        return -1;
    }
    if (st.st_size == 0) {
        snprintf(err, errlen, "%s: empty file, not a trace", path);
        close(fd);
        errno = 0;
        *rc = ACT_E_FORMAT;
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

gzFile act_trace_open(const char *path, int *rc, char *err, size_t errlen)
{
    int fd = open_input(path, rc, err, errlen);
    if (fd < 0)
        return NULL;
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        close(fd);
        snprintf(err, errlen, "%s: out of memory", path);
        *rc = ACT_E_NOMEM;
    }
    return gz;
}

typedef struct reader {
    gzFile gz;
    int failed; /* gzread reported an error */
} reader;

static size_t read_cb(void *buf, size_t len, void *data)
{
    reader *r = data;
    int n = gzread(r->gz, buf, len > (1u << 30) ? 1u << 30 : (unsigned)len);
    if (n < 0) {
        r->failed = 1;
        return (size_t)-1;
    }
    return (size_t)n;
}

json_t *act_trace_load(const char *path, size_t flags, char *err, size_t errlen)
{
    int rc;
    reader r = {act_trace_open(path, &rc, err, errlen), 0};
    if (!r.gz)
        return NULL;
    json_error_t e;
    json_t *doc = json_load_callback(read_cb, &r, flags, &e);
    if (!doc && r.failed) {
        int zerr = 0;
        const char *m = gzerror(r.gz, &zerr);
        snprintf(err, errlen, "%s: %s", path,
                 zerr == Z_ERRNO ? strerror(errno)
                 : m             ? m
                                 : "read error");
    } else if (!doc) {
        snprintf(err, errlen, "%s:%d: %s", path, e.line, e.text);
    }
    gzclose(r.gz);
    return doc;
}

static int put_obuf(const char *buf, size_t size, void *data)
{
    act_obuf *b = data;
    act_obuf_put(b, buf, size);
    return b->err ? -1 : 0;
}

/* Plain or gzip through the writers' own buffer: the same gzip as
 * `run -o NAME.gz` (ACT_GZIP_LEVEL, one member per buffer, compressed by
 * the pool of ACCELTRACE_GZIP_THREADS). */
int act_trace_dump(const json_t *doc, const char *path, int gzip, size_t flags)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return -1;
    act_obuf b;
    int rc = act_obuf_init_bg(&b, fd, 1u << 20);
    if (!rc && gzip)
        rc = act_obuf_gzip(&b, ACT_GZIP_LEVEL);
    if (!rc)
        rc = json_dump_callback(doc, put_obuf, &b, flags);
    int frc = act_obuf_flush(&b);
    int saved = errno;
    act_obuf_free(&b);
    if (close(fd) != 0 && !frc) {
        saved = errno;
        frc = -1;
    }
    errno = rc || frc ? (saved ? saved : EIO) : 0;
    return rc || frc ? -1 : 0;
}
