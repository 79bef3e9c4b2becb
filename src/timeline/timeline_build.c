/*
 * timeline_build.c -- the whole timeline from a run's spools (timeline.h):
 * the time base and clock, then each process's pass (builder.c) in spool
 * order with its host events (host_events.c), the joins and device lanes;
 * as one batch (act_timeline_build) or fed while the program runs
 * (act_timeline_build_live/feed/online, then _continue at the exit:
 * docs/architecture.md "Streaming").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "builder_int.h"
#include "core/vec.h"

static void set_time_base(act_timeline *tl, act_spool *const *sp, size_t n)
{
    uint64_t base = UINT64_MAX;
    const act_spool *ref = NULL;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = act_spool_ns(sp[i], sp[i]->hdr.start_ns);
        if (s && s < base)
            base = s;
        if (sp[i]->first_ts && sp[i]->first_ts < base)
            base = sp[i]->first_ts;
        if (s && (!ref || s < act_spool_ns(ref, ref->hdr.start_ns)))
            ref = sp[i];
    }
    tl->base_ns = base == UINT64_MAX ? 0 : base;
    if (ref) {
        uint64_t s = act_spool_ns(ref, ref->hdr.start_ns);
        tl->base_wall_ns = ref->hdr.start_realtime_ns - (s - tl->base_ns);
    }
}

static void set_clock_default(act_timeline *tl, act_spool *const *sp, size_t n)
{
    if (tl->clock_method[0])
        return;
    int tsc = 0;
    for (size_t i = 0; i < n; i++)
        tsc |= sp[i]->hdr.clock_kind == ACT_CLOCK_TSC;
    snprintf(tl->clock_method, sizeof(tl->clock_method), "%s", tsc ? "tsc" : "monotonic_raw");
    tl->clock_error_ns = 0;
}

/* Records a live pass reads before it settles and frees what it can
 * (16384 before BENCHMARKS.md item 23: on a shared vCPU the launcher left
 * twice as much for after the exit). */
#define BLD_SLICE 4096

struct act_tl_build {
    bld b;
    bld_proc *procs;
    pass_state *ps;
    size_t n;
    act_spool *live; /* procs[0]'s spool, read while its process runs */
    int online;      /* its host events are made while it runs (emit_online) */
    int emitted;     /* some were: they used online_base */
    uint64_t online_base;
};

/* The builder with room for n processes (procs[0] kept when it grows). */
static int build_alloc(act_tl_build *s, size_t n)
{
    if (n < s->n)
        n = s->n;
    bld_proc *np = realloc(s->procs, (n ? n : 1) * sizeof(*np));
    if (np)
        s->procs = np;
    pass_state *nps = np ? realloc(s->ps, (n ? n : 1) * sizeof(*nps)) : NULL;
    if (nps)
        s->ps = nps;
    if (!np || !nps)
        return ACT_E_NOMEM;
    memset(np + s->n, 0, (n - s->n) * sizeof(*np));
    memset(nps + s->n, 0, (n - s->n) * sizeof(*nps));
    s->n = n;
    return 0;
}

int act_timeline_build_live(act_timeline *tl, act_spool *sp, const act_build_opts *opts,
                            act_tl_build **out)
{
    memset(tl, 0, sizeof(*tl));
    act_tl_build *s = calloc(1, sizeof(*s));
    *out = s;
    if (!s || build_alloc(s, 1))
        return tl->err = ACT_E_NOMEM;
    s->b = (bld){.tl = tl,
                 .ws = opts ? opts->window_start_ns : 0,
                 .we = opts && opts->window_end_ns ? opts->window_end_ns : UINT64_MAX};
    s->live = sp;
    bld_pass_begin(&s->b, &s->procs[0], sp);
    return 0;
}

/* Room for n items of `size` at *v (capacity *cap), the new part touched. */
static int reserve_touched(void **v, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return 0;
    void *nv = realloc(*v, n * size);
    if (!nv)
        return ACT_E_NOMEM;
    memset((char *)nv + *cap * size, 0, (n - *cap) * size);
    *v = nv;
    *cap = n;
    return 0;
}

/* What the export at the exit allocates for what was read so far -- the
 * scratch block of the joins and the device lanes, a batch of events and
 * their args -- allocated and touched now: its page faults then cost the
 * feeding thread while the program runs, not the time after its exit.
 * The export would allocate as much: the peak is the same, held earlier. */
static void prefault_exit(bld *b, const bld_proc *p)
{
    act_timeline *tl = b->tl;
    size_t keys = (p->n_api - p->api_base + p->n_held) * sizeof(bld_key),
           lanes = bld_devices_scratch(b->n_ops);
    size_t want = keys > lanes ? keys : lanes;
    if (want > b->scratch_cap) {
        void *blk = bld_scratch(b, want + want / 4);
        if (blk)
            memset(blk, 0, b->scratch_cap);
    }
    size_t ev = p->n_read < ACT_TL_SINK_BATCH ? p->n_read : ACT_TL_SINK_BATCH;
    if (reserve_touched((void **)&tl->ev, &tl->cap_ev, ev, sizeof(*tl->ev)) ||
        reserve_touched((void **)&tl->args, &tl->cap_args, 2 * ev, sizeof(*tl->args)))
        tl->err = ACT_E_NOMEM;
}

/* The events that can no longer change, handed to the sink now. The time
 * base is the live spool's (its start, or an earlier first record): the
 * run's when no other spool starts earlier, which _continue checks. */
static void feed_online(act_tl_build *s)
{
    act_timeline *tl = s->b.tl;
    bld_proc *p = &s->procs[0];
    size_t before = p->marks_out + p->ranges_out + p->api_out + s->b.ds.written;
    if (!s->emitted)
        set_time_base(tl, &s->live, 1);
    bld_emit_online(&s->b, p);
    if (bld_online_allowed(&s->b, p))
        bld_devstream_feed(&s->b, p);
    bld_release(&s->b, p);
    if (p->marks_out + p->ranges_out + p->api_out + s->b.ds.written == before)
        return;
    if (!s->emitted)
        s->online_base = tl->base_ns;
    s->emitted = 1;
    if (!tl->err && tl->sink && tl->n_ev)
        tl->err = tl->sink(tl, tl->sink_ctx);
    /* Writing the events read their records and strings again: the
     * pages that mapped are dropped, as the reader drops its own. */
    act_spool_drop_pages(s->live);
}

int act_timeline_build_feed(act_tl_build *s, volatile const int *stop)
{
    if (!s->live || s->b.tl->err)
        return s->b.tl->err ? s->b.tl->err : ACT_E_STATE;
    /* Read in slices, each settled before the next: what is kept is what
     * is still open, not what one feed read. */
    int more;
    do {
        more = bld_pass_live(&s->b, &s->procs[0], &s->ps[0], 0, stop, s->online ? BLD_SLICE : 0);
        if (s->online && !s->b.tl->err)
            feed_online(s);
    } while (more && (!stop || !__atomic_load_n(stop, __ATOMIC_RELAXED)));
    if (!s->b.tl->err)
        prefault_exit(&s->b, &s->procs[0]);
    return s->b.tl->err;
}

void act_timeline_build_online(act_tl_build *s)
{
    if (!s->live)
        return;
    s->online = 1;
    s->b.ds.on = 1; /* its device ops too (devstream.c) */
    s->procs[0].track_launches = 1;
    s->procs[0].nest_live = 1; /* and what was written leaves (stream_free.c) */
    s->procs[0].frees = 1;
}

uint64_t act_timeline_build_devops_early(const act_tl_build *s)
{
    return s ? s->b.ds.written : 0;
}

int act_timeline_build_start(act_timeline *tl, act_spool *const *spools, size_t n,
                             const act_build_opts *opts, act_tl_build **out)
{
    memset(tl, 0, sizeof(*tl));
    act_tl_build *s = calloc(1, sizeof(*s));
    *out = s;
    if (!s)
        return tl->err = ACT_E_NOMEM;
    s->b = (bld){.tl = tl,
                 .ws = opts ? opts->window_start_ns : 0,
                 .we = opts && opts->window_end_ns ? opts->window_end_ns : UINT64_MAX};
    return act_timeline_build_continue(s, spools, n);
}

int act_timeline_build_continue(act_tl_build *s, act_spool *const *spools, size_t n)
{
    act_timeline *tl = s->b.tl;
    if (s->live && (!n || spools[0] != s->live))
        return tl->err = ACT_E_STATE; /* the live spool must be the first one */
    if (build_alloc(s, n))
        return tl->err = ACT_E_NOMEM;
    bld *b = &s->b;
    b->spools = spools;
    b->n_spools = n;
    /* Its process has ended: the rest of its records, its times, settled
     * slice by slice as in the feeds. */
    while (s->live && bld_pass_live(b, &s->procs[0], &s->ps[0], 1, NULL, s->online ? BLD_SLICE : 0))
        feed_online(s);
    uint32_t max_pid = 0, min_pid = UINT32_MAX;
    size_t n_ops = 0;
    for (size_t i = 0; i < n; i++) {
        if (spools[i]->hdr.pid > max_pid)
            max_pid = spools[i]->hdr.pid;
        if (spools[i]->hdr.pid < min_pid)
            min_pid = spools[i]->hdr.pid;
        n_ops += spools[i]->records[ACT_REC_DEVICE_OP];
    }
    if (!b->ops)
        b->ops = bld_presize(b, n_ops, sizeof(*b->ops), &b->cap_ops);
    /* Device pids sort after every host pid, even implausible ones. */
    b->dev_pid_base = max_pid < ACT_DEVICE_PID_BASE ? ACT_DEVICE_PID_BASE : max_pid + 1;
    if (b->dev_pid_base > UINT32_MAX - 65536)
        b->dev_pid_base = UINT32_MAX - 65536;
    b->min_host_pid = min_pid;
    set_time_base(tl, spools, n);
    /* Events made while the process ran used a time base and no capture
     * window: when either proves wrong, the caller builds anew. */
    if (s->emitted && (tl->base_ns != s->online_base || !bld_online_allowed(b, &s->procs[0])))
        return tl->err = ACT_E_STATE;
    for (size_t i = 0; i < n && !tl->err; i++)
        bld_read_process(b, &s->procs[i], &s->ps[i], spools[i], i == 0 && s->live);
    s->live = NULL;
    if (!tl->err)
        bld_devices_name(b);
    /* Device ops written early assumed their group was the first. */
    if (!tl->err && bld_devstream_check(b, &s->procs[0]))
        return tl->err = ACT_E_STATE;
    set_clock_default(tl, spools, n);
    return tl->err;
}

int act_timeline_build_events(act_tl_build *s)
{
    bld *b = &s->b;
    act_timeline *tl = b->tl;
    for (size_t i = 0; i < s->n && !tl->err; i++) {
        bld_proc *p = &s->procs[i];
        bld_emit_counters(b, p);
        bld_emit_proc_meta(b, p);
        bld_emit_proc_span(b, p);
        bld_emit_host(b, p, &s->ps[i]);
        /* Device ops carry what they need from their process. */
        bld_proc_free(b, p, &s->ps[i]);
        memset(p, 0, sizeof(*p));
        memset(&s->ps[i], 0, sizeof(s->ps[i]));
    }
    if (!tl->err)
        tl->err = bld_devices_emit(b);
    if (!tl->err)
        bld_gua_emit(b);
    if (!tl->err && tl->sink && tl->n_ev)
        tl->err = tl->sink(tl, tl->sink_ctx);
    return tl->err;
}

void act_timeline_build_finish(act_tl_build *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        bld_proc_free(&s->b, &s->procs[i], &s->ps[i]);
    free(s->procs);
    free(s->ps);
    free(s->b.ops);
    free(s->b.scratch);
    bld_devstream_free(&s->b);
    bld_gua_free(&s->b);
    free(s->b.queues);
    free(s->b.dev_handle);
    free(s->b.dev_host_pid);
    act_u64map_free(&s->b.dev_by_desc);
    act_u64map_free(&s->b.dev_by_key);
    free(s);
}

int act_timeline_build(act_timeline *tl, act_spool *const *spools, size_t n,
                       const act_build_opts *opts)
{
    act_tl_build *s;
    int rc = act_timeline_build_start(tl, spools, n, opts, &s);
    if (!rc)
        rc = act_timeline_build_events(s);
    act_timeline_build_finish(s);
    return rc;
}
