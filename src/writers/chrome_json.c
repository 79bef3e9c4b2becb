/*
 * chrome_json.c -- the Chrome trace writer's stream (see chrome_json.h):
 * the encoder (chrome_event.c, chrome_members.c) into a buffered file
 * whose life is outfile.c's, or into memory.
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
    act_chrome_enc w;
    act_obuf b;
    act_chrome_opts o;
    act_outfile *file; /* NULL: in memory */
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

int act_chrome_stream_open(act_chrome_stream **out, act_timeline *tl, const act_chrome_opts *o,
                           const char *path, int force, unsigned mode, char *err, size_t errlen)
{
    *out = NULL;
    act_outfile *file;
    int rc = act_outfile_open(&file, path, force, mode, 0, err, errlen);
    if (rc)
        return rc;
    act_chrome_stream *s = calloc(1, sizeof(*s));
    if (!s) {
        act_outfile_close(file, 0, 0, 0, err, errlen);
        snprintf(err, errlen, "%s: out of memory", path);
        return ACT_E_NOMEM;
    }
    s->file = file;
    s->o = *o;
    *out = s;
    /* 1 MiB: large enough that write(2) calls cost nothing, small enough
     * to stay in cache between formatting and the copy into the page
     * cache (4 MiB measured no faster and cost 3 MB more). Written by a
     * thread of the buffer's: the copy into the page cache was a quarter
     * to a half of the export's time, and overlaps the formatting. */
    act_obuf_init_bg(&s->b, act_outfile_fd(file), 1u << 20);
    if (act_path_is_gzip(path))
        act_obuf_gzip(&s->b, ACT_GZIP_LEVEL);
    act_chrome_enc_init(&s->w, tl, &s->b);
    act_chrome_head_write(&s->w, &s->o);
    return s->b.err;
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
    rc = act_outfile_close(s->file, ok, rc, saved, err, errlen);
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
