/*
 * summary_writer.c -- the summary table as one more writer (writer.h):
 * it keeps only the slices of each batch (summary.h, memory bounded by
 * names and lanes) and prints once the trace file is in place, with the
 * trace writer's counts (invalid UTF-8, error lines) final then: the same
 * output as act_summary_from_timeline on the whole timeline. When the
 * events were all written at the program's seal (the settle), the table is
 * made then, and printed at the close if its counts did not change.
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
    /* Made at the settle (every event written, before the program's
     * exit): the table and the counters it shows; printed as it is when
     * the close finds the same counters. */
    char *made;
    size_t made_len;
    json_t *made_counters;
    int made_by_range;
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

/* What the trace writer found (none when no trace writer says). */
static const act_writer_found *found_of(const summary_writer *s)
{
    static const act_writer_found none = {0, 0};
    return s->f.found ? s->f.found : &none;
}

/* The table, in one write: the report stream is stderr, unbuffered, and
 * printed there directly the table cost a write(2) per cell (about 300 for
 * a short run: 0.5-1.4 ms of `run`'s time after the exit). The one made at
 * the settle when the counters are still the same (they are unless the
 * exit brought an error line: a crash, a spool that could not be read);
 * made now otherwise. Printed directly when memory is short. */
static void summary_report(summary_writer *s, act_timeline *tl)
{
    const act_writer_found *found = found_of(s);
    json_t *now = s->made ? act_summary_counters_of(tl, found->invalid_utf8, found->errors) : NULL;
    int same = now && json_equal(now, s->made_counters) && s->made_by_range == s->f.by_range;
    json_decref(now);
    if (!same) {
        free(s->made);
        json_decref(s->made_counters);
        s->made = NULL;
        s->made_counters = NULL;
        if (act_summary_render_timeline(s->sum, tl, found->invalid_utf8, found->errors,
                                        s->f.by_range, &s->made, &s->made_len, &s->made_counters)) {
            act_summary_print_timeline(s->sum, tl, found->invalid_utf8, found->errors, s->f.report,
                                       s->f.by_range);
            return;
        }
    }
    fwrite(s->made, 1, s->made_len, s->f.report);
    fflush(s->f.report);
}

/* Every event written, the exit to come: the table is made now, with the
 * counts known so far (the close prints it when they are still the same). */
static void summary_writer_settle(act_writer *w, act_timeline *tl)
{
    summary_writer *s = (summary_writer *)w;
    if (!s->f.report || s->made || !act_tl_counts_events(&tl->counts))
        return;
    const act_writer_found *found = found_of(s);
    s->made_by_range = s->f.by_range;
    (void)act_summary_render_timeline(s->sum, tl, found->invalid_utf8, found->errors, s->f.by_range,
                                      &s->made, &s->made_len, &s->made_counters);
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
    free(s->made);
    json_decref(s->made_counters);
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
    .settle = summary_writer_settle,
};
