/*
 * vendor_clock.c -- the trace's "<source>_clock" metadata of a vendor
 * activity source (CUPTI, mspti), derived from the source's records: a
 * source records, it never formats output.
 *
 * The activity core (src/sources/activity/activity_core.c) writes one
 * CLOCK record when a capture cycle starts (the vendor clock's offset to
 * the timeline, or 0 when the vendor stamps the timeline clock) and one
 * when it stops, whose method reads "<source> ... at stop", both with the
 * source's all-devices key. The pair becomes the object that says how
 * vendor times were put on the timeline and the drift over the cycle; it
 * takes the place in the metadata where the stop record was written.
 */
#include <stdio.h>
#include <string.h>

#include "builder_int.h"

static const char STOP_SUFFIX[] = " at stop";

static int is_stop(act_str m)
{
    size_t n = sizeof(STOP_SUFFIX) - 1;
    return m.n > n && !memcmp(m.p + m.n - n, STOP_SUFFIX, n);
}

/* The open cycle of a device key (a slot for a new one); NULL when full. */
static bld_clock_open *open_of(bld_proc *p, uint64_t device, int add)
{
    for (size_t i = 0; i < p->n_clock_open; i++)
        if (p->clock_open[i].device == device)
            return &p->clock_open[i];
    if (!add || p->n_clock_open == BLD_MAX_CLOCK_OPEN)
        return NULL;
    p->clock_open[p->n_clock_open] = (bld_clock_open){.device = device};
    return &p->clock_open[p->n_clock_open++];
}

void bld_vendor_clock(bld *b, bld_proc *p, const act_sp_rec *rec)
{
    const act_rec_clock *c = (const act_rec_clock *)rec->r;
    if (!is_stop(rec->s1)) {
        bld_clock_open *o = open_of(p, c->device, 1);
        if (o)
            *o = (bld_clock_open){c->device, c->offset_ns, c->error_ns};
        return;
    }
    const char *space = memchr(rec->s1.p, ' ', rec->s1.n);
    int name_len = (int)(space - rec->s1.p);
    bld_clock_open none = {0}, *start = open_of(p, c->device, 0);
    if (!start)
        start = &none;
    act_timeline *tl = b->tl;
    act_str key = act_tl_printf(tl, "%.*s_clock", name_len, rec->s1.p);
    act_str json;
    if (start->offset == 0 && c->offset_ns == 0)
        json = act_tl_printf(tl, "{\"method\": \"vendor stamps the timeline clock\"}");
    else
        json = act_tl_printf(tl,
                             "{\"method\": \"CLOCK_REALTIME + offset measured at start\", "
                             "\"offset_start_ns\": %lld, \"offset_stop_ns\": %lld, \"drift_ns\": "
                             "%lld, \"error_start_ns\": %lld, \"error_stop_ns\": %lld}",
                             (long long)start->offset, (long long)c->offset_ns,
                             (long long)(c->offset_ns - start->offset), (long long)start->error,
                             (long long)c->error_ns);
    act_tl_meta_add(tl, key, json, 1);
    *start = (bld_clock_open){0};
}
