/*
 * window.c -- the capture window as the builder sees it: the run's window
 * (act_build_opts) and, for a process that recorded CAPTURE on/off records
 * (act_start/act_stop, ACCELTRACE_CAPTURE_RANGE), its capture intervals.
 * Helpers of builder.c and joins.c, which call them; they call nothing of
 * the builder back.
 */
#include <stdlib.h>

#include "acceltrace.h"
#include "builder_int.h"

/* ---- capture window --------------------------------------------------- */

int bld_in_window(const bld *b, const bld_proc *p, uint64_t start, uint64_t end)
{
    if (end < b->ws || start > b->we)
        return 0;
    if (!p->capture_used)
        return 1;
    /* First interval whose end is after start; it must begin before end. */
    size_t lo = 0, hi = p->n_capture;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->capture[2 * mid + 1] <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->n_capture && p->capture[2 * lo] <= end;
}

typedef struct cap_ev {
    uint64_t ts;
    uint32_t on;
} cap_ev;

static int cap_cmp(const void *a, const void *c)
{
    const cap_ev *x = a, *y = c;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* CAPTURE records (capture turned on/off by act_start/act_stop) become
 * intervals. Capture starts off when the spool says it waited for
 * act_start. A spool without CAPTURE records is not restricted. */
void bld_load_capture(bld *b, bld_proc *p)
{
    act_spool *sp = p->sp;
    size_t n = sp->records[ACT_REC_CAPTURE];
    if (!n)
        return;
    cap_ev *ev = malloc(n * sizeof(*ev));
    p->capture = malloc((n + 1) * 2 * sizeof(*p->capture));
    if (!ev || !p->capture) {
        free(ev);
        b->tl->err = ACT_E_NOMEM;
        return;
    }
    /* A walk of its own, before the main one: the window decides what
     * the main walk keeps. Only spools with CAPTURE records pay for it. */
    size_t m = 0;
    act_spool_iter *it = act_spool_iter_new(sp);
    act_sp_rec rec;
    int rc = it ? 0 : ACT_E_NOMEM;
    while (it && m < n && (rc = act_spool_iter_next(it, &rec)) > 0)
        if (rec.r->kind == ACT_REC_CAPTURE)
            ev[m++] = (cap_ev){act_spool_ns(sp, ((const act_rec_ts *)rec.r)->ts), rec.r->aux != 0};
    act_spool_iter_free(it);
    if (rc < 0) {
        free(ev);
        b->tl->err = ACT_E_NOMEM;
        return;
    }
    if (m)
        qsort(ev, m, sizeof(*ev), cap_cmp);
    int on = !(sp->hdr.flags & ACT_SPOOL_F_CAPTURE_API);
    if (on)
        p->capture[0] = 0;
    for (size_t i = 0; i < m; i++) {
        if (ev[i].on && !on) {
            p->capture[2 * p->n_capture] = ev[i].ts;
            on = 1;
        } else if (!ev[i].on && on) {
            p->capture[2 * p->n_capture + 1] = ev[i].ts;
            p->n_capture++;
            on = 0;
        }
    }
    if (on)
        p->capture[2 * p->n_capture++ + 1] = UINT64_MAX;
    p->capture_used = 1;
    free(ev);
}
