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
 *
 * The CLOCK record may be read before the DEVICE record it refers to: an
 * anchor_enqueue mapping is recorded by the thread whose completion
 * anchored it, the device by the thread that made the queue, and the
 * reader takes segments in the order they closed (record.h S1). Such a
 * record waits for its device; one whose device is never described is
 * not an OpenCL calibration and is dropped, as before.
 */
#include <ctype.h>
#include <string.h>

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

/* The metadata of device `v` (devices index + 1) of process p. */
static void write_clock(bld *b, bld_proc *p, uint64_t v, act_str method, int64_t offset,
                        int64_t error)
{
    act_timeline *tl = b->tl;
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
    act_str json =
        act_tl_printf(tl, "{\"method\": \"%.*s\", \"offset_ns\": %lld, \"error_ns\": %lld}",
                      method_len(method), method.p, (long long)offset, (long long)error);
    act_tl_meta_add(tl, key, json, 1);
}

/* Held until its DEVICE record comes: the method copied (the spool's
 * pages may be let go before then). One per handle, the latest: a vendor
 * source's all-devices key, which no DEVICE record describes
 * (vendor_clock.c), holds one entry, not one per capture cycle. */
static void wait_for_device(bld *b, bld_proc *p, const act_rec_clock *c, act_str method)
{
    uint64_t handle = c->device ? c->device : 1;
    size_t i = 0;
    while (i < p->n_clock_wait && p->clock_wait[i].device != handle)
        i++;
    if (i == p->n_clock_wait &&
        act_vec_reserve(p->clock_wait, p->cap_clock_wait, p->n_clock_wait + 1, 4)) {
        b->tl->err = ACT_E_NOMEM;
        return;
    }
    if (i == p->n_clock_wait)
        p->n_clock_wait++;
    bld_clock_wait *w = &p->clock_wait[i];
    w->device = handle;
    w->offset = c->offset_ns;
    w->error = c->error_ns;
    w->method_len = (uint8_t)method_len(method);
    memcpy(w->method, method.p, w->method_len);
}

void bld_device_clock(bld *b, bld_proc *p, const act_sp_rec *rec)
{
    const act_rec_clock *c = (const act_rec_clock *)rec->r;
    uint64_t v;
    if (!act_u64map_get(&p->dev_by_handle, c->device ? c->device : 1, &v)) {
        wait_for_device(b, p, c, rec->s1); /* or never: not an OpenCL calibration */
        return;
    }
    if (v <= b->tl->n_devices)
        write_clock(b, p, v, rec->s1, c->offset_ns, c->error_ns);
}

void bld_device_clock_described(bld *b, bld_proc *p, uint64_t handle)
{
    uint64_t v;
    if (!act_u64map_get(&p->dev_by_handle, handle, &v) || v > b->tl->n_devices)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < p->n_clock_wait; i++) {
        bld_clock_wait *w = &p->clock_wait[i];
        if (w->device == handle)
            write_clock(b, p, v, (act_str){w->method, w->method_len}, w->offset, w->error);
        else
            p->clock_wait[kept++] = *w;
    }
    p->n_clock_wait = kept;
}
