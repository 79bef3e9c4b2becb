/*
 * devices.c -- the device side of the timeline: one process per device
 * (pid above every real pid, named "<vendor> <device> (device N)", e.g.
 * "Ascend NPU 0 (device 0)"; a lane of no device, such as a vendor's
 * host-side markers, just "<vendor> <name>"), one thread per queue,
 * concurrent work on a queue spread over sub-lanes so no two slices of a
 * lane partially overlap, and exactly one ac2g flow pair per device op
 * that has a host launch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "builder_int.h"
#include "core/source_traits.h"

static const char *source_name(uint32_t s)
{
    return act_source_traits_of(s)->name;
}

static int str_eq(act_str a, act_str b)
{
    return a.n == b.n && (!a.n || !memcmp(a.p, b.p, a.n));
}

static uint32_t device_add(bld *b, const act_tl_device *d, uint64_t handle, uint32_t pid)
{
    act_timeline *tl = b->tl;
    act_tl_device *nd = realloc(tl->devices, (tl->n_devices + 1) * sizeof(*nd));
    uint64_t *nh = realloc(b->dev_handle, (tl->n_devices + 1) * sizeof(*nh));
    if (nd)
        tl->devices = nd;
    if (nh)
        b->dev_handle = nh;
    uint32_t *np = realloc(b->dev_host_pid, (tl->n_devices + 1) * sizeof(*np));
    if (np)
        b->dev_host_pid = np;
    if (!nd || !nh || !np) {
        tl->err = ACT_E_NOMEM;
        return 0;
    }
    tl->devices[tl->n_devices] = *d;
    b->dev_handle[tl->n_devices] = handle;
    b->dev_host_pid[tl->n_devices] = pid;
    return (uint32_t)tl->n_devices++;
}

static void note_user(bld *b, uint32_t dev, uint32_t pid)
{
    if (b->dev_host_pid[dev] != pid)
        b->dev_host_pid[dev] = UINT32_MAX; /* used by several processes */
}

uint32_t bld_device_for(bld *b, bld_proc *p, const act_sp_rec *drec, uint64_t handle,
                        uint32_t source)
{
    act_timeline *tl = b->tl;
    if (drec) {
        /* Described devices are shared by every process that uses them:
         * the same (source, vendor, name, ordinal) is one device. */
        const act_rec_device *r = (const act_rec_device *)drec->r;
        act_tl_device d = {
            .index = r->index, .model = drec->s1, .vendor = drec->s2, .source = r->source};
        for (size_t i = 0; i < tl->n_devices; i++) {
            act_tl_device *e = &tl->devices[i];
            if (!b->dev_handle[i] && e->source == d.source && e->index == d.index &&
                str_eq(e->model, d.model) && str_eq(e->vendor, d.vendor)) {
                note_user(b, (uint32_t)i, p->pid);
                return (uint32_t)i;
            }
        }
        return device_add(b, &d, 0, p->pid);
    }
    /* Known only by a handle: private to its process. */
    for (size_t i = 0; i < tl->n_devices; i++)
        if (b->dev_handle[i] == handle && b->dev_host_pid[i] == p->pid &&
            tl->devices[i].source == source)
            return (uint32_t)i;
    act_tl_device d = {.index = 0,
                       .model = act_tl_printf(tl, "device 0x%llx", (unsigned long long)handle),
                       .vendor = act_str_c(source_name(source)),
                       .source = source};
    return device_add(b, &d, handle ? handle : 1, p->pid);
}

/* Vendor markers (mstx) are annotations on the device timeline, as
 * kineto files them; an OpenCL marker is a synchronisation point. */
static int op_cat(uint8_t op, uint8_t source)
{
    if (op == ACT_OP_MARKER && (act_source_traits_of(source)->flags & ACT_SRC_F_MARKER_ANNOTATES))
        return ACT_CAT_GPU_USER_ANNOTATION;
    switch (op) {
    case ACT_OP_KERNEL:
    case ACT_OP_COLLECTIVE: return ACT_CAT_KERNEL;
    case ACT_OP_MEMCPY_HTOD:
    case ACT_OP_MEMCPY_DTOH:
    case ACT_OP_MEMCPY_DTOD:
    case ACT_OP_MAP:
    case ACT_OP_UNMAP: return ACT_CAT_GPU_MEMCPY;
    case ACT_OP_MEMSET: return ACT_CAT_GPU_MEMSET;
    case ACT_OP_MARKER:
    case ACT_OP_BARRIER:
    case ACT_OP_SYNC: return ACT_CAT_GPU_SYNC;
    default: return ACT_CAT_GPU_OP;
    }
}

/* What the source's `detail` string is, by op kind: the kernel type, the
 * collective's communicator, the marker's domain. */
static const char *detail_key(uint8_t op, uint32_t source)
{
    switch (op) {
    case ACT_OP_KERNEL: return source == ACT_SOURCE_OPENCL ? "program" : "type";
    case ACT_OP_COLLECTIVE: return "commName";
    case ACT_OP_MARKER: return "domain";
    default: return "detail";
    }
}

static const char *op_default_name(uint8_t op)
{
    static const char *const names[ACT_OP_KIND_MAX] = {
        "Kernel", "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memset", "Map",
        "Unmap",  "Marker",      "Barrier",     "Collective",  "Sync",   "Device op"};
    return op < ACT_OP_KIND_MAX ? names[op] : "Device op";
}

/* Sort key of a device op, packed and contiguous so that sorting never
 * reaches into the ops: device and host process, queue, start, end. */
typedef struct op_key {
    uint64_t dev_pid; /* dev << 32 | pid */
    uint64_t queue;
    uint64_t start, end;
    size_t idx;
} op_key;

_Static_assert(sizeof(op_key) % sizeof(uint64_t) == 0, "the scratch block's arrays follow op_key");

/* Sort order of device work: device, host process, queue, start, longer
 * first, then record order. */
static int op_cmp(const void *a, const void *c)
{
    const op_key *x = a, *y = c;
    if (x->dev_pid != y->dev_pid)
        return x->dev_pid < y->dev_pid ? -1 : 1;
    if (x->queue != y->queue)
        return x->queue < y->queue ? -1 : 1;
    int span = bld_span_cmp(x->start, x->end, y->start, y->end);
    if (span)
        return span;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Device work mostly arrives in order: check before sorting. */
static void sort_keys(op_key *k, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (op_cmp(&k[i - 1], &k[i]) > 0) {
            qsort(k, n, sizeof(*k), op_cmp);
            return;
        }
    }
}

/*
 * Device pids follow kineto's GPUs: the device's number in the trace (0, 1,
 * ...), which the TensorBoard plugin requires of every device event (pid ==
 * args.device, below 64); their sort indices sit above every host pid, so
 * device lanes still render below host lanes. When a traced process has so
 * small a pid (pid 1 in a container) or there are more than 64 devices, the
 * pids are the sort indices instead (above every host pid).
 */
#define ACT_SMALL_DEVICE_PIDS 64

void bld_devices_name(bld *b)
{
    act_timeline *tl = b->tl;
    int small = tl->n_devices <= ACT_SMALL_DEVICE_PIDS && b->min_host_pid >= ACT_SMALL_DEVICE_PIDS;
    for (size_t i = 0; i < tl->n_devices; i++) {
        act_tl_device *d = &tl->devices[i];
        d->pid = small ? (uint32_t)i : b->dev_pid_base + (uint32_t)i;
        act_str vendor = d->vendor.n ? d->vendor : act_str_c(source_name(d->source));
        /* "<vendor> <device> (device N)", without repeating a vendor the
         * device name already starts with ("CUDA GPU 0"). */
        int prefixed = d->model.n > vendor.n && !memcmp(d->model.p, vendor.p, vendor.n) &&
                       d->model.p[vendor.n] == ' ';
        if (d->index == ACT_DEVICE_INDEX_NONE) /* a lane of no device */
            d->name = act_tl_printf(tl, "%.*s %.*s", (int)vendor.n, vendor.p, (int)d->model.n,
                                    d->model.p);
        else if (prefixed)
            d->name = act_tl_printf(tl, "%.*s (device %u)", (int)d->model.n, d->model.p, d->index);
        else
            d->name = act_tl_printf(tl, "%.*s %.*s (device %u)", (int)vendor.n, vendor.p,
                                    (int)d->model.n, d->model.p, d->index);
    }
}

static void emit_device_procs(bld *b)
{
    act_timeline *tl = b->tl;
    for (size_t i = 0; i < tl->n_devices; i++) {
        const act_tl_device *d = &tl->devices[i];
        act_tl_event *e =
            act_tl_event_add(tl, 'M', ACT_CAT_NONE, act_str_c("process_name"), d->pid, 0, 0, 0);
        if (e)
            e->flags |= ACT_EVF_NO_TID;
        act_tl_arg_str(tl, "name", d->name);
        e = act_tl_event_add(tl, 'M', ACT_CAT_NONE, act_str_c("process_sort_index"), d->pid, 0, 0,
                             0);
        if (e)
            e->flags |= ACT_EVF_NO_TID;
        act_tl_arg_u64(tl, "sort_index", b->dev_pid_base + i);
    }
}

/* The label of the op's queue (its QUEUE record's name; empty when none). */
static act_str queue_label(const bld *b, const bld_op *op)
{
    return op->queue_ref ? b->queues[op->queue_ref - 1].label : (act_str){"", 0};
}

/* OpenCL's out-of-order bit (CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) in
 * the properties the program asked for. */
static int queue_out_of_order(const bld *b, const bld_op *op)
{
    return (act_source_traits_of(op->source)->flags & ACT_SRC_F_QUEUE_OOO_BIT) && op->queue_ref &&
           (b->queues[op->queue_ref - 1].properties & 1u);
}

/* The stream of an op, as kineto and HolisticTraceAnalysis read
 * `args.stream` (a lane whose work runs one op at a time): the vendor's
 * stream id where it has one (CUDA, Ascend), else the op's lane on its
 * device (its tid: an in-order queue is one lane; an out-of-order queue's
 * concurrent work is spread over sub-lanes, each a stream of its own). */
static uint64_t op_stream(const bld *b, const bld_op *op)
{
    if (op->queue_ref && (act_source_traits_of(op->source)->flags & ACT_SRC_F_STREAM_IDS))
        return b->queues[op->queue_ref - 1].properties;
    return op->lane_tid;
}

/* The name of sub-lane k (0-based) of the op's queue, one a user can read:
 * the queue's label, or "<device> · queue N (out-of-order)" (the handle
 * stays in each op's args); the host pid when several processes share the
 * device, the sub-lane number from the second one on. */
static act_str lane_name(bld *b, const bld_op *op, size_t k)
{
    char qname[256];
    act_str label = queue_label(b, op);
    const act_tl_device *d = &b->tl->devices[op->dev];
    act_str dev = d->model.n ? d->model : d->vendor;
    if (label.n)
        snprintf(qname, sizeof(qname), "%.*s", (int)label.n, label.p);
    else if (act_source_traits_of(op->source)->flags & ACT_SRC_F_STREAM_IDS)
        snprintf(qname, sizeof(qname), "%.*s \xc2\xb7 stream %llu", (int)dev.n, dev.p,
                 (unsigned long long)op_stream(b, op));
    else
        snprintf(qname, sizeof(qname), "%.*s \xc2\xb7 queue %u%s", (int)dev.n, dev.p, op->queue_no,
                 queue_out_of_order(b, op) ? " (out-of-order)" : "");
    char extra[64] = "";
    if (b->dev_host_pid[op->dev] == UINT32_MAX)
        snprintf(extra, sizeof(extra), " (pid %u)", op->pid);
    char sub[48] = "";
    if (k)
        snprintf(sub, sizeof(sub), " (sub-lane %zu)", k + 1);
    return act_tl_printf(b->tl, "%s%s%s", qname, extra, sub);
}

static void emit_lane_names(bld *b, const bld_op *op, uint32_t first_tid, size_t lanes)
{
    act_timeline *tl = b->tl;
    const act_tl_device *d = &tl->devices[op->dev];
    for (size_t k = 0; k < lanes; k++) {
        uint32_t tid = first_tid + (uint32_t)k;
        act_tl_event_add(tl, 'M', ACT_CAT_NONE, act_str_c("thread_name"), d->pid, tid, 0, 0);
        act_tl_arg_str(tl, "name", lane_name(b, op, k));
        act_tl_event_add(tl, 'M', ACT_CAT_NONE, act_str_c("thread_sort_index"), d->pid, tid, 0, 0);
        act_tl_arg_u64(tl, "sort_index", tid);
    }
}

/* Hand the op, as laid out, to the timeline's in-process consumer. */
static void hand_out(bld *b, const bld_op *op, act_str name, uint32_t sub_lane, uint64_t flow)
{
    act_timeline *tl = b->tl;
    const act_rec_device_op *r = op->r;
    int has_stream =
        op->queue_ref && (act_source_traits_of(op->source)->flags & ACT_SRC_F_STREAM_IDS);
    act_tl_devop d = {
        .name = name,
        .detail = op->detail,
        .queue_label = queue_label(b, op),
        .lane_name = lane_name(b, op, sub_lane),
        .launch_name = op->linked ? op->launch_name : (act_str){"", 0},
        .device = &tl->devices[op->dev],
        .kind = r->op,
        .source = op->source,
        .flags = r->flags,
        .status = r->status,
        .cat = op_cat(r->op, op->source),
        .lane_tid = op->lane_tid,
        .pid = op->pid,
        .launch_tid = op->linked ? op->launch_tid : 0,
        .has_stream = has_stream,
        .queue = op->queue,
        .stream = op_stream(b, op),
        .start = op->start,
        .end = op->end,
        .launch_start = op->linked ? op->d.launch_start : 0,
        .launch_end = op->linked ? op->launch_end : 0,
        .corr = op->corr,
        .ext_id = op->x.ext_id,
        .range_ref = op->range_ref,
        .flow_id = flow,
        .bytes = r->bytes,
    };
    if (op->ua) { /* handed out before the op's span can free the range's slot */
        const bld_gua_range *u = &b->gua.ranges[op->ua - 1];
        d.user_ref = u->ref;
        d.user_ext_id = u->ext_id;
        d.user_name = u->name;
    }
    memcpy(d.gsize, r->gsize, sizeof(d.gsize));
    memcpy(d.lsize, r->lsize, sizeof(d.lsize));
    int rc = tl->err ? tl->err : tl->on_devop(&d, tl->devop_ctx);
    if (rc)
        tl->err = rc;
}

static void emit_flow(bld *b, const bld_op *op, const act_tl_device *d, uint64_t id);
static void emit_op(bld *b, const bld_op *op, uint32_t sub_lane);

/* When the command was queued and submitted (OpenCL gives both: QUEUED at
 * the enqueue, SUBMIT when handed to the device), on the trace's time axis
 * in microseconds like "ts", so that queued -> submitted -> ts shows where
 * a kernel waited. Written only when the source recorded them, in order. */
static void op_queue_times(bld *b, const bld_op *op)
{
    act_timeline *tl = b->tl;
    uint64_t q = op->queued, s = op->submit;
    if (!q || q > s || s > op->start || q < tl->base_ns)
        return; /* not a sequence the trace can show */
    act_tl_arg *a = act_tl_arg_add(tl, "queued");
    if (a) {
        a->type = ACT_ARG_F64;
        a->v.d = (double)(q - tl->base_ns) / 1000.0;
    }
    a = act_tl_arg_add(tl, "submitted");
    if (a) {
        a->type = ACT_ARG_F64;
        a->v.d = (double)(s - tl->base_ns) / 1000.0;
    }
}

void bld_devices_emit_op(bld *b, const bld_op *op, uint32_t sub_lane)
{
    emit_op(b, op, sub_lane);
}

static void emit_op(bld *b, const bld_op *op, uint32_t sub_lane)
{
    act_timeline *tl = b->tl;
    const act_rec_device_op *r = op->r;
    const act_tl_device *d = &tl->devices[op->dev];
    uint64_t dur = 0;
    if (op->end >= op->start)
        dur = op->end - op->start;
    else
        tl->counts.negative_durations++;
    act_str name = op->name.n ? op->name : act_str_c(op_default_name(r->op));
    act_tl_event *ev = act_tl_event_add(tl, 'X', op_cat(r->op, op->source), name, d->pid,
                                        op->lane_tid, op->start, dur);
    if (ev && r->status < 0)
        ev->flags |= ACT_EVF_ERROR;
    if (op->corr)
        act_tl_arg_u64(tl, "correlation", op->corr);
    if (op->x.ext_id)
        act_tl_arg_u64(tl, "External id", op->x.ext_id);
    /* kineto's fields: the device as the lane's pid (what the TensorBoard
     * plugin matches each device event's pid against) and an integer
     * stream; the device's ordinal and the queue's handle stay beside. */
    act_tl_arg_u64(tl, "device", d->pid);
    if (d->index != ACT_DEVICE_INDEX_NONE)
        act_tl_arg_u64(tl, "device index", d->index);
    act_tl_arg_u64(tl, "stream", op_stream(b, op));
    act_str label = queue_label(b, op);
    if (label.n)
        act_tl_arg_str(tl, "queue", label);
    else
        act_tl_arg_hex(tl, "queue", op->queue);
    if (r->op == ACT_OP_KERNEL) {
        act_tl_arg *a = act_tl_arg_add(tl, "global size");
        if (a) {
            a->type = ACT_ARG_U64X3;
            memcpy(a->v.v3, r->gsize, sizeof(a->v.v3));
        }
        a = act_tl_arg_add(tl, "local size");
        /* All zero: the app let the runtime choose (OpenCL's NULL). */
        if (a && (r->lsize[0] | r->lsize[1] | r->lsize[2])) {
            a->type = ACT_ARG_U64X3;
            memcpy(a->v.v3, r->lsize, sizeof(a->v.v3));
        } else if (a) {
            a->type = ACT_ARG_NULL;
        }
    } else if (r->bytes || op_cat(r->op, op->source) == ACT_CAT_GPU_MEMCPY ||
               op_cat(r->op, op->source) == ACT_CAT_GPU_MEMSET) {
        act_tl_arg_u64(tl, "bytes", r->bytes);
        /* kineto's name and unit: bytes per ns are GB/s. */
        if (dur) {
            act_tl_arg *a = act_tl_arg_add(tl, "memory bandwidth (GB/s)");
            if (a) {
                a->type = ACT_ARG_F64;
                a->v.d = (double)r->bytes / (double)dur;
            }
        }
    }
    if (op->detail.n)
        act_tl_arg_str(tl, detail_key(r->op, op->source), op->detail);
    op_queue_times(b, op);
    if (r->status) {
        act_tl_arg *a = act_tl_arg_add(tl, "status");
        if (a) {
            a->type = ACT_ARG_I64;
            a->v.i = r->status;
        }
    }
    uint64_t id = op->linked ? ++b->next_flow : 0;
    if (op->linked)
        emit_flow(b, op, d, id);
    if (tl->on_devop)
        hand_out(b, op, name, sub_lane, id);
    if (op->ua)
        bld_gua_extend(b, op);
}

/* The ac2g pair of a linked op: start on its launch, finish on the op. */
static void emit_flow(bld *b, const bld_op *op, const act_tl_device *d, uint64_t id)
{
    act_timeline *tl = b->tl;
    tl->counts.flows++;
    act_tl_event *s = act_tl_event_add(tl, 's', ACT_CAT_AC2G, act_str_c("ac2g"), op->pid,
                                       op->launch_tid, op->d.launch_start, 0);
    if (s)
        s->id = id;
    act_tl_event *f = act_tl_event_add(tl, 'f', ACT_CAT_AC2G, act_str_c("ac2g"), d->pid,
                                       op->lane_tid, op->start, 0);
    if (f) {
        f->id = id;
        f->flags |= ACT_EVF_BP_E;
    }
}

size_t bld_devices_scratch(size_t n_ops)
{
    /* Sort keys, then starts, ends and lanes of a queue's ops, in one
     * scratch block (op_key keeps the 8-byte alignment of what follows). */
    return (n_ops ? n_ops : 1) * (sizeof(op_key) + 2 * sizeof(uint64_t) + sizeof(uint32_t));
}

/* The group whose first ops were written while its process ran
 * (devstream.c), first in the batch order (bld_devstream_check): the rest
 * of its ops go on from its lanes and its flow ids; its lanes are named
 * now that their number is known. */
static int emit_streamed_group(bld *b, const op_key *key, size_t n, size_t *g, uint32_t *next_tid,
                               uint32_t *next_queue)
{
    bld_devstream *ds = &b->ds;
    size_t e = 0;
    while (e < n && key[e].dev_pid == ((uint64_t)ds->proto.dev << 32 | ds->proto.pid) &&
           key[e].queue == ds->queue)
        e++;
    for (size_t i = 0; i < e; i++) {
        uint32_t k = act_lanes_next(&ds->lanes, key[i].start, key[i].end);
        if (k == UINT32_MAX)
            return ACT_E_NOMEM;
        b->ops[key[i].idx].lane_tid = 1 + k;
        b->ops[key[i].idx].queue_no = 1;
    }
    next_tid[0] = ds->lanes.used;
    next_queue[0] = 1;
    emit_lane_names(b, &ds->proto, 1, ds->lanes.used);
    for (size_t i = 0; i < e; i++)
        emit_op(b, &b->ops[key[i].idx], b->ops[key[i].idx].lane_tid - 1);
    *g = e;
    return b->tl->err;
}

int bld_devices_emit(bld *b)
{
    act_timeline *tl = b->tl;
    emit_device_procs(b);
    size_t n = 0, m = b->n_ops ? b->n_ops : 1;
    op_key *key = bld_scratch(b, bld_devices_scratch(b->n_ops));
    if (!key)
        return ACT_E_NOMEM;
    for (size_t i = 0; i < b->n_ops; i++) {
        const bld_op *op = &b->ops[i];
        if (op->kept)
            key[n++] =
                (op_key){(uint64_t)op->dev << 32 | op->pid, op->queue, op->start, op->end, i};
    }
    sort_keys(key, n);
    uint32_t *next_tid = calloc(tl->n_devices ? tl->n_devices : 1, 2 * sizeof(*next_tid));
    uint32_t *next_queue = next_tid ? next_tid + (tl->n_devices ? tl->n_devices : 1) : NULL;
    uint64_t *st = (uint64_t *)(key + m);
    uint64_t *en = st + m;
    uint32_t *lane = (uint32_t *)(en + m);
    int rc = !next_tid ? ACT_E_NOMEM : 0;
    size_t g = 0;
    if (!rc && b->ds.started)
        rc = emit_streamed_group(b, key, n, &g, next_tid, next_queue);
    for (; !rc && g < n;) {
        const bld_op *first = &b->ops[key[g].idx];
        size_t e = g;
        while (e < n && key[e].dev_pid == key[g].dev_pid && key[e].queue == key[g].queue) {
            st[e - g] = key[e].start;
            en[e - g] = key[e].end;
            e++;
        }
        size_t lanes = act_lanes_partition(st, en, e - g, lane);
        if (!lanes) {
            rc = ACT_E_NOMEM;
            break;
        }
        uint32_t first_tid = ++next_tid[first->dev];
        next_tid[first->dev] += (uint32_t)lanes - 1;
        uint32_t queue_no = ++next_queue[first->dev];
        for (size_t i = g; i < e; i++)
            b->ops[key[i].idx].queue_no = queue_no;
        emit_lane_names(b, first, first_tid, lanes);
        for (size_t i = g; i < e; i++) {
            b->ops[key[i].idx].lane_tid = first_tid + lane[i - g];
            emit_op(b, &b->ops[key[i].idx], lane[i - g]);
            if (i % BLD_OPS_PER_DROP == BLD_OPS_PER_DROP - 1)
                for (size_t k = 0; k < b->n_spools; k++)
                    act_spool_drop_pages(b->spools[k]);
        }
        g = e;
    }
    free(next_tid);
    return rc ? rc : tl->err;
}
