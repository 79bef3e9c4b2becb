/*
 * device_clock.c -- the trace's "opencl_clock_<pid>_<device>" metadata
 * (for each source with ACT_SRC_F_DEVICE_CLOCK, core/source_traits.h,
 * named after it): how the source in host process <pid> put the profiling
 * times of its device <device> (the device's ordinal) on the timeline: the method,
 * the offset added to every device timestamp and its error bound, from the
 * source's CLOCK record (sources/opencl/clock.c). A reader holding the
 * device's own timestamps maps them with it and finds the trace's times
 * (tests/integration/check_clock_truth.py does). One offset per device
 * and process: every device time of that pair moved by the same amount.
 */
#include <ctype.h>

#include "builder_int.h"
#include "core/source_traits.h"

/* The method's name as written into JSON: its leading [a-z_] characters
 * (the source's names are all of them; anything else is cut, never
 * escaped). */
static int method_len(act_str m)
{
    size_t n = 0;
    while (n < m.n && ((m.p[n] >= 'a' && m.p[n] <= 'z') || m.p[n] == '_'))
        n++;
    return (int)(n < 64 ? n : 64);
}

void bld_device_clock(bld *b, bld_proc *p, const act_sp_rec *rec)
{
    const act_rec_clock *c = (const act_rec_clock *)rec->r;
    act_timeline *tl = b->tl;
    uint64_t v;
    if (!act_u64map_get(&p->dev_by_handle, c->device ? c->device : 1, &v) || v > tl->n_devices)
        return; /* no DEVICE record before it: not an OpenCL calibration */
    const act_tl_device *d = &tl->devices[v - 1];
    const act_source_traits *st = act_source_traits_of(d->source);
    if (!(st->flags & ACT_SRC_F_DEVICE_CLOCK))
        return; /* vendor activity clocks: vendor_clock.c */
    char name[32];
    size_t n = 0;
    for (; st->name[n] && n + 1 < sizeof(name); n++)
        name[n] = (char)tolower((unsigned char)st->name[n]);
    name[n] = '\0';
    act_str key = act_tl_printf(tl, "%s_clock_%u_%u", name, p->pid, d->index);
    act_str json = act_tl_printf(
        tl, "{\"method\": \"%.*s\", \"offset_ns\": %lld, \"error_ns\": %lld}", method_len(rec->s1),
        rec->s1.p, (long long)c->offset_ns, (long long)c->error_ns);
    act_tl_meta_add(tl, key, json, 1);
}
