/*
 * chrome_json.c -- the Chrome trace writer's stream (see chrome_json.h):
 * the encoder (chrome_event.c, chrome_members.c) into a buffered file
 * whose life is outfile.c's, or into memory; and the same stream as the
 * writer seam's "chrome-json" writer (writer.h), the one the export uses.
 */
#include "chrome_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "chrome_int.h"
#include "outfile.h"

struct act_chrome_stream {
    act_writer base; /* the writer seam's view (act_writer_chrome_json) */
    act_chrome_enc w;
    act_obuf b;
    act_chrome_opts o;
    act_outfile *file; /* NULL: in memory */
    int *replaced_fd;  /* the writer's facts: where the close leaves a replaced file */
};

int act_path_is_gzip(const char *path)
{
    size_t n = strlen(path);
    return n > 3 && strcmp(path + n - 3, ".gz") == 0;
}

void act_chrome_stream_keep_replaced(act_chrome_stream *s, int *fd)
{
    act_outfile_keep_replaced(s ? s->file : NULL, fd);
}

static int stream_open(act_chrome_stream **out, act_timeline *tl, const act_chrome_opts *o,
                       const act_writer_facts *f, char *err, size_t errlen)
{
    *out = NULL;
    act_outfile *file;
    int rc = act_outfile_open(&file, f->path, f->force, f->mode, 0, err, errlen);
    if (rc)
        return rc;
    act_chrome_stream *s = calloc(1, sizeof(*s));
    if (!s) {
        act_outfile_close(file, 0, 0, 0, err, errlen);
        snprintf(err, errlen, "%s: out of memory", f->path);
        return ACT_E_NOMEM;
    }
    s->base.ops = &act_writer_chrome_json;
    s->file = file;
    s->o = *o;
    *out = s;
    /* 1 MiB: large enough that write(2) calls cost nothing, small enough
     * to stay in cache between formatting and the copy into the page
     * cache (a larger buffer was no faster and cost more memory,
     * BENCHMARKS.md "Figures behind design comments"). Written by a
     * thread of the buffer's: the copy into the page cache is a large
     * part of the export's time, and overlaps the formatting. */
    act_obuf_init_bg(&s->b, act_outfile_fd(file), 1u << 20);
    if (f->options & ACT_WRITER_GZIP)
        act_obuf_gzip(&s->b, ACT_GZIP_LEVEL);
    act_chrome_enc_init(&s->w, tl, &s->b);
    act_chrome_head_write(&s->w, &s->o);
    return s->b.err;
}

int act_chrome_stream_open(act_chrome_stream **out, act_timeline *tl, const act_chrome_opts *o,
                           const char *path, int force, unsigned mode, char *err, size_t errlen)
{
    act_writer_facts f = {.path = path,
                          .force = force,
                          .mode = mode,
                          .options = act_path_is_gzip(path) ? ACT_WRITER_GZIP : 0};
    return stream_open(out, tl, o, &f, err, errlen);
}

int act_chrome_stream_write(act_chrome_stream *s, act_timeline *tl)
{
    s->w.tl = tl;
    act_chrome_events_write(&s->w);
    return s->b.err;
}

void act_chrome_stream_set_opts(act_chrome_stream *s, const act_chrome_opts *o)
{
    int first = s->o.events_first;
    s->o = *o;
    s->o.events_first = first; /* the head is written */
}

int act_chrome_stream_sink(act_timeline *tl, void *ctx)
{
    int rc = act_chrome_stream_write(ctx, tl);
    tl->n_ev = 0;
    tl->n_args = 0;
    return rc;
}

int act_chrome_stream_close(act_chrome_stream *s, int ok, char *err, size_t errlen)
{
    if (!s)
        return ok ? 0 : ACT_E_INVAL;
    int rc = ok ? 0 : ACT_E_INVAL;
    /* A write that failed while the events were made is why ok is 0: its
     * reason (ENOSPC, EFBIG) is said all the same. */
    int write_errno = !ok && s->b.err == ACT_E_IO ? s->b.sys_errno : 0;
    if (!rc) {
        act_chrome_tail_write(&s->w, &s->o);
        rc = s->b.err ? s->b.err : s->w.err ? s->w.err : s->w.tl->err;
    }
    act_chrome_enc_free_errors(&s->w);
    if (!rc)
        rc = act_obuf_flush(&s->b);
    int saved = errno;
    free(s->w.esc);
    act_obuf_free(&s->b);
    rc = act_outfile_close(s->file, ok, rc, ok ? saved : write_errno, err, errlen);
    free(s);
    return rc;
}

/* ---- memory ----------------------------------------------------------- */

int act_chrome_stream_open_mem(act_chrome_stream **out, act_timeline *tl, const act_chrome_opts *o)
{
    act_chrome_stream *s = calloc(1, sizeof(*s));
    *out = s;
    if (!s)
        return ACT_E_NOMEM;
    s->base.ops = &act_writer_chrome_json;
    s->o = *o;
    act_obuf_init(&s->b, -1, 1u << 16);
    act_chrome_enc_init(&s->w, tl, &s->b);
    act_chrome_head_write(&s->w, &s->o);
    return s->b.err;
}

int act_chrome_stream_close_mem(act_chrome_stream *s, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    if (!s)
        return ACT_E_INVAL;
    act_chrome_tail_write(&s->w, &s->o);
    act_obuf_putc(&s->b, '\0');
    int rc = s->b.err ? s->b.err : s->w.err ? s->w.err : s->w.tl->err;
    if (!rc) {
        *text = s->b.buf; /* handed over */
        *len = s->b.len - 1;
        s->b.buf = NULL;
    }
    free(s->w.esc);
    act_chrome_enc_free_errors(&s->w);
    act_obuf_free(&s->b);
    free(s);
    return rc;
}

/* ---- the writer seam -------------------------------------------------- */

/* The stream's options from the writer's facts. */
static act_chrome_opts opts_of(const act_writer_facts *f)
{
    return (act_chrome_opts){.trace_name = f->trace_name,
                             .argv = f->argv,
                             .argc = f->argc,
                             .extra_metadata = f->extra_metadata,
                             .child_status = f->child_status,
                             .stats = f->found,
                             .events_first = f->events_first};
}

static int chrome_writer_open(act_writer **out, act_timeline *tl, const act_writer_facts *f,
                              char *err, size_t errlen)
{
    act_chrome_opts o = opts_of(f);
    act_chrome_stream *s;
    int rc = stream_open(&s, tl, &o, f, err, errlen);
    if (s)
        s->replaced_fd = f->replaced_fd;
    *out = s ? &s->base : NULL;
    return rc;
}

static int chrome_writer_batch(act_writer *w, act_timeline *tl)
{
    return act_chrome_stream_write((act_chrome_stream *)w, tl);
}

static void chrome_writer_set_facts(act_writer *w, const act_writer_facts *f)
{
    act_chrome_stream *s = (act_chrome_stream *)w;
    act_chrome_opts o = opts_of(f);
    act_chrome_stream_set_opts(s, &o);
    s->replaced_fd = f->replaced_fd;
}

static int chrome_writer_close(act_writer *w, act_timeline *tl, int ok, char *err, size_t errlen)
{
    (void)tl; /* the stream's: the one its events came from */
    act_chrome_stream *s = (act_chrome_stream *)w;
    act_chrome_stream_keep_replaced(s, s->replaced_fd);
    return act_chrome_stream_close(s, ok, err, errlen);
}

static int chrome_writer_idle(act_writer *w)
{
    return act_obuf_flush_ready(&((act_chrome_stream *)w)->b);
}

/* Every event written, the exit to come: they go to the file now (its
 * close writes the header's facts and the metadata after them), and the
 * writer thread goes: the close has a few KiB left, written by the
 * caller, with no thread to wake or wait for after the program's exit. */
static void chrome_writer_settle(act_writer *w, act_timeline *tl)
{
    (void)tl;
    (void)act_obuf_threads_stop(&((act_chrome_stream *)w)->b); /* an error is the close's */
}

const act_writer_ops act_writer_chrome_json = {
    .name = "chrome-json",
    .flags = ACT_WRITER_EARLY,
    .open = chrome_writer_open,
    .batch = chrome_writer_batch,
    .set_facts = chrome_writer_set_facts,
    .close = chrome_writer_close,
    .idle = chrome_writer_idle,
    .settle = chrome_writer_settle,
};
