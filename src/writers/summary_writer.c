/*
 * summary_writer.c -- the summary table as one more writer (writer.h):
 * it keeps only the slices of each batch (summary.h, memory bounded by
 * names and lanes) and prints once the trace file is in place, with the
 * trace writer's counts (invalid UTF-8, error lines) final then: the same
 * output as act_summary_from_timeline on the whole timeline.
 */
#include <stdio.h>
#include <stdlib.h>

#include "acceltrace.h"
#include "summary.h"
#include "writer.h"

typedef struct summary_writer {
    act_writer base;
    act_summary *sum;
    act_writer_facts f; /* report, by_range, found */
} summary_writer;

static int summary_writer_open(act_writer **out, act_timeline *tl, const act_writer_facts *f,
                               char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    *out = NULL;
    summary_writer *s = calloc(1, sizeof(*s));
    if (!s || !(s->sum = act_summary_new_for(tl))) {
        free(s);
        return ACT_E_NOMEM;
    }
    s->base.ops = &act_writer_summary;
    s->f = *f;
    *out = &s->base;
    return 0;
}

static int summary_writer_batch(act_writer *w, act_timeline *tl)
{
    return act_summary_add_events(((summary_writer *)w)->sum, tl);
}

static void summary_writer_set_facts(act_writer *w, const act_writer_facts *f)
{
    ((summary_writer *)w)->f = *f;
}

/* The table, in one write: the report stream is stderr, unbuffered, and
 * printed there directly the table cost a write(2) per cell (about 300 for
 * a short run: 0.5-1.4 ms of `run`'s time after the exit). Printed
 * directly when memory is short. */
static void summary_report(summary_writer *s, act_timeline *tl)
{
    act_writer_found none = {0, 0}, *found = s->f.found ? s->f.found : &none;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m) {
        act_summary_print_timeline(s->sum, tl, found->invalid_utf8, found->errors, m,
                                   s->f.by_range);
        int bad = ferror(m);
        if (fclose(m) == 0 && !bad) {
            fwrite(buf, 1, len, s->f.report);
            fflush(s->f.report);
            free(buf);
            return;
        }
        free(buf);
    }
    act_summary_print_timeline(s->sum, tl, found->invalid_utf8, found->errors, s->f.report,
                               s->f.by_range);
}

static int summary_writer_close(act_writer *w, act_timeline *tl, int ok, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    summary_writer *s = (summary_writer *)w;
    /* Nothing recorded: no table of zeros (the caller says so in a line). */
    if (ok && s->f.report && act_tl_counts_events(&tl->counts))
        summary_report(s, tl);
    act_summary_free(s->sum);
    free(s);
    return ok ? 0 : ACT_E_INVAL;
}

const act_writer_ops act_writer_summary = {
    .name = "summary",
    .flags = ACT_WRITER_EARLY | ACT_WRITER_REPORT,
    .open = summary_writer_open,
    .batch = summary_writer_batch,
    .set_facts = summary_writer_set_facts,
    .close = summary_writer_close,
};
