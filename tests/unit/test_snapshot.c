/*
 * test_snapshot.c -- the device-op snapshot (src/timeline/snapshot.c) that
 * the torch plugin reads: records written by the real recorder, as a source
 * writes them (launch on one thread, completion on another), come back
 * joined to their launch, described, converted and in start order; damaged
 * spools give clear errors or counted skips, never garbage. The snapshot is
 * the builder's answer: correlation ids a vendor reused link each op to its
 * own launch, and the Chrome trace of the same spool shows the same device
 * ops, launches, flows and External ids.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first. */
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <jansson.h>

#include "acceltrace.h"
#include "api/export.h"
#include "core/internal.h"
#include "timeline/snapshot.h"
#include "tmpdir.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    tmpdir_make(dir, sizeof(dir), "snap");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tmpdir_remove(dir);
}

static void emit_device(uint64_t dev, const char *name, const char *vendor, uint32_t index)
{
    uint32_t n = act_str_intern_cstr(name), v = act_str_intern_cstr(vendor);
    act_rec_device *r = act_rec_reserve(ACT_REC_DEVICE, sizeof(*r));
    assert_non_null(r);
    r->h.aux = n;
    r->device = dev;
    r->vendor = v;
    r->source = ACT_SOURCE_OPENCL;
    r->index = index;
    act_rec_commit();
}

static void emit_queue(uint64_t q, uint64_t dev, const char *label)
{
    uint32_t l = act_str_intern_cstr(label);
    act_rec_queue *r = act_rec_reserve(ACT_REC_QUEUE, sizeof(*r));
    assert_non_null(r);
    r->h.aux = l;
    r->queue = q;
    r->device = dev;
    act_rec_commit();
}

typedef struct op_args {
    const char *name;
    uint64_t corr, start, end, queue;
    uint8_t kind;
} op_args;

static void emit_op(const op_args *a)
{
    uint32_t n = act_str_intern_cstr(a->name), d = act_str_intern_cstr("NDRange");
    act_rec_device_op *r = act_rec_reserve(ACT_REC_DEVICE_OP, sizeof(*r));
    assert_non_null(r);
    memset((char *)r + sizeof(r->h), 0, sizeof(*r) - sizeof(r->h));
    r->h.aux = n;
    r->op = a->kind;
    r->source = ACT_SOURCE_OPENCL;
    r->device = 0xd1;
    r->queue = a->queue;
    r->start = a->start;
    r->end = a->end;
    r->corr = a->corr;
    r->detail = d;
    r->gsize[0] = 1024;
    r->bytes = 0;
    act_rec_commit();
}

/* Completion callbacks arrive on a thread of the runtime. */
static void *completion_thread(void *arg)
{
    const op_args *ops = arg;
    for (; ops->name; ops++)
        emit_op(ops);
    return NULL;
}

static void test_ops_are_joined_to_their_launch(void **state)
{
    (void)state;
    assert_int_equal(act_recorder_open(dir, 8ull << 20, 64u << 10), 0);
    emit_device(0xd1, "pthread-cpu", "OpenCL", 0);
    emit_queue(0x51, 0xd1, "queue 0x51");

    assert_int_equal(act_range_push("aten::outer"), ACT_OK);
    assert_int_equal(act_range_push("aten::mm"), ACT_OK);
    uint64_t ext_mm = act_snapshot_current_ext();
    assert_true(ext_mm != 0);
    uint64_t c1 = act_corr_next(), c2 = act_corr_next();
    uint64_t t0 = act_snapshot_clock_now();
    assert_int_equal(act_rec_api_emit("clEnqueueNDRangeKernel", t0, t0 + 100, c1,
                                      act_range_current_ext(), 0, ACT_SOURCE_OPENCL),
                     0);
    assert_int_equal(act_range_pop(), ACT_OK);
    uint64_t ext_outer = act_snapshot_current_ext();
    assert_true(ext_outer != 0 && ext_outer != ext_mm);
    assert_int_equal(act_rec_api_emit("clEnqueueWriteBuffer", t0 + 200, t0 + 300, c2,
                                      act_range_current_ext(), 0, ACT_SOURCE_OPENCL),
                     0);
    assert_int_equal(act_range_pop(), ACT_OK);
    assert_int_equal(act_snapshot_current_ext(), 0);

    /* Out of start order on purpose, plus one op with no launch. */
    op_args ops[] = {
        {"copy", c2, t0 + 5000, t0 + 6000, 0x51, ACT_OP_MEMCPY_HTOD},
        {"saxpy", c1, t0 + 1000, t0 + 4000, 0x51, ACT_OP_KERNEL},
        {"orphan", 0, t0 + 7000, t0 + 8000, 0x99, ACT_OP_KERNEL},
        {NULL, 0, 0, 0, 0, 0},
    };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, completion_thread, ops), 0);
    assert_int_equal(pthread_join(th, NULL), 0);

    act_snapshot *s = NULL;
    assert_int_equal(act_snapshot_open(NULL, &s), 0);
    assert_int_equal(act_snapshot_count(s), 3);
    assert_int_equal(act_snapshot_skipped(s), 0);
    act_snap_op op;
    assert_int_equal(act_snapshot_next(s, &op), 1);
    assert_string_equal(op.name, "saxpy");
    assert_string_equal(op.detail, "NDRange");
    assert_string_equal(op.vendor, "OpenCL");
    assert_string_equal(op.device_name, "pthread-cpu");
    assert_string_equal(op.queue_label, "queue 0x51");
    assert_string_equal(op.launch_name, "clEnqueueNDRangeKernel");
    assert_int_equal(op.kind, ACT_OP_KERNEL);
    assert_int_equal(op.ext, ext_mm);
    assert_int_equal(op.launch_tid, (uint32_t)syscall(SYS_gettid));
    assert_int_equal(op.launch_start_ns, t0);
    assert_int_equal(op.start_ns, t0 + 1000);
    assert_int_equal(op.end_ns, t0 + 4000);
    assert_int_equal(op.gsize[0], 1024);
    assert_int_equal(op.queue, 0x51);

    assert_int_equal(act_snapshot_next(s, &op), 1);
    assert_string_equal(op.name, "copy");
    assert_int_equal(op.kind, ACT_OP_MEMCPY_HTOD);
    assert_int_equal(op.ext, ext_outer);

    assert_int_equal(act_snapshot_next(s, &op), 1);
    assert_string_equal(op.name, "orphan");
    assert_int_equal(op.ext, 0);
    assert_int_equal(op.launch_tid, 0);
    assert_string_equal(op.launch_name, "");
    assert_string_equal(op.queue_label, "");
    assert_int_equal(act_snapshot_next(s, &op), 0);
    act_snapshot_close(s);

    /* The same file read by path after the recorder closed. */
    char path[4096];
    snprintf(path, sizeof(path), "%s", act_recorder_path());
    act_recorder_close();
    assert_int_equal(act_snapshot_open(NULL, &s), ACT_E_DISABLED);
    assert_int_equal(act_snapshot_open(path, &s), 0);
    assert_int_equal(act_snapshot_count(s), 3);
    act_snapshot_close(s);

    /* And through a descriptor held across the file's removal (a session
     * discards its spool when it ends). */
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(act_snapshot_open_fd(fd, &s), 0);
    assert_int_equal(act_snapshot_count(s), 3);
    assert_int_equal(act_snapshot_next(s, &op), 1);
    assert_string_equal(op.name, "saxpy");
    act_snapshot_close(s);
    close(fd);
    assert_int_equal(act_snapshot_open_fd(-1, &s), ACT_E_INVAL);
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void test_damaged_spools(void **state)
{
    (void)state;
    act_snapshot *s = (act_snapshot *)1;
    char path[128];
    snprintf(path, sizeof(path), "%s/missing.acts", dir);
    assert_int_equal(act_snapshot_open(path, &s), ACT_E_IO);
    assert_null(s);

    snprintf(path, sizeof(path), "%s/short.acts", dir);
    write_file(path, "ACTSPOOL", 8);
    assert_int_equal(act_snapshot_open(path, &s), ACT_E_FORMAT);

    /* A header with a wrong magic. */
    static char buf[ACT_SPOOL_HEADER_SIZE + 8192];
    memset(buf, 0, sizeof(buf));
    snprintf(path, sizeof(path), "%s/magic.acts", dir);
    write_file(path, buf, sizeof(buf));
    assert_int_equal(act_snapshot_open(path, &s), ACT_E_FORMAT);

    /* A valid header, one chunk holding a segment then a torn record
     * (size 0): the walk stops there and counts it. */
    act_spool_header *h = (act_spool_header *)buf;
    h->magic = ACT_SPOOL_MAGIC;
    h->version = ACT_SPOOL_VERSION;
    h->header_size = ACT_SPOOL_HEADER_SIZE;
    h->capacity = sizeof(buf);
    h->chunk_size = 8192;
    h->chunk_count = 1;
    h->chunks_used = 5; /* more than exist: bounded by chunk_count */
    act_chunk_header *c = (act_chunk_header *)(buf + ACT_SPOOL_HEADER_SIZE);
    c->magic = ACT_CHUNK_MAGIC;
    act_rec_segment *seg = (act_rec_segment *)(c + 1);
    seg->h.kind = ACT_REC_SEGMENT;
    seg->h.size8 = sizeof(*seg) / 8;
    seg->h.aux = 1;
    act_rec_hdr *torn = (act_rec_hdr *)(seg + 1);
    torn->kind = ACT_REC_DEVICE_OP;
    torn->size8 = 0;
    c->used = sizeof(*seg) + 16;
    snprintf(path, sizeof(path), "%s/torn.acts", dir);
    write_file(path, buf, sizeof(buf));
    assert_int_equal(act_snapshot_open(path, &s), 0);
    assert_int_equal(act_snapshot_count(s), 0);
    assert_int_equal(act_snapshot_skipped(s), 1);
    act_snap_op op;
    assert_int_equal(act_snapshot_next(s, &op), 0);
    act_snapshot_close(s);

    /* A device op record too short for its kind is skipped, not read. */
    torn->size8 = 2;
    c->used = sizeof(*seg) + 16;
    write_file(path, buf, sizeof(buf));
    assert_int_equal(act_snapshot_open(path, &s), 0);
    assert_int_equal(act_snapshot_count(s), 0);
    assert_int_equal(act_snapshot_skipped(s), 1);
    act_snapshot_close(s);
    assert_int_equal(act_snapshot_open(NULL, NULL), ACT_E_INVAL);
}

/* Three ops launched with one correlation id (the vendor reused it), each
 * inside its own range; the device records arrive after all launches. */
#define NREUSE 3
static const char *const reuse_ranges[NREUSE] = {"op_a", "op_b", "op_c"};
static const char *const reuse_kernels[NREUSE] = {"k_a", "k_b", "k_c"};

static void record_reused_ids(uint64_t ext[NREUSE], uint64_t launch[NREUSE])
{
    emit_device(0xd1, "pthread-cpu", "OpenCL", 0);
    emit_queue(0x51, 0xd1, "queue 0x51");
    uint64_t t0 = act_snapshot_clock_now();
    static op_args ops[NREUSE + 1];
    for (int i = 0; i < NREUSE; i++) {
        uint64_t t = t0 + (uint64_t)i * 100000;
        assert_int_equal(act_range_push(reuse_ranges[i]), ACT_OK);
        ext[i] = act_snapshot_current_ext();
        launch[i] = t;
        assert_int_equal(act_rec_api_emit("clEnqueueNDRangeKernel", t, t + 500, 7,
                                          act_range_current_ext(), 0, ACT_SOURCE_OPENCL),
                         0);
        assert_int_equal(act_range_pop(), ACT_OK);
        ops[i] = (op_args){reuse_kernels[i], 7, t + 1000, t + 2000, 0x51, ACT_OP_KERNEL};
    }
    ops[NREUSE] = (op_args){NULL, 0, 0, 0, 0, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, completion_thread, ops), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
}

static void test_reused_correlation_ids_link_to_their_own_launch(void **state)
{
    (void)state;
    assert_int_equal(act_recorder_open(dir, 8ull << 20, 64u << 10), 0);
    uint64_t ext[NREUSE], launch[NREUSE];
    record_reused_ids(ext, launch);
    act_snapshot *s = NULL;
    assert_int_equal(act_snapshot_open(NULL, &s), 0);
    assert_int_equal(act_snapshot_count(s), NREUSE);
    act_snap_op op;
    for (int i = 0; i < NREUSE; i++) {
        assert_int_equal(act_snapshot_next(s, &op), 1);
        assert_string_equal(op.name, reuse_kernels[i]);
        assert_int_equal(op.corr, 7);
        assert_int_equal(op.ext, ext[i]);
        assert_int_equal(op.launch_start_ns, launch[i]);
        assert_int_equal(op.launch_end_ns, launch[i] + 500);
    }
    act_snapshot_close(s);
    char path[4096];
    snprintf(path, sizeof(path), "%s", act_recorder_path());
    act_recorder_close();
    unlink(path);
}

static json_t *event_where(json_t *events, const char *key, json_t *want, const char *ph)
{
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        json_t *args = json_object_get(e, "args");
        json_t *v = strcmp(key, "name") == 0 || strcmp(key, "id") == 0 ? json_object_get(e, key)
                                                                       : json_object_get(args, key);
        if (v && json_equal(v, want) &&
            (!ph || !strcmp(json_string_value(json_object_get(e, "ph")), ph)))
            return e;
    }
    return NULL;
}

static long long ival(json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

/* One spool exported both ways: the Chrome writer's trace and the
 * snapshot hold the same device ops, launches, flows and External ids. */
static void test_snapshot_and_chrome_trace_agree(void **state)
{
    (void)state;
    assert_int_equal(act_recorder_open(dir, 8ull << 20, 64u << 10), 0);
    uint64_t ext[NREUSE], launch[NREUSE];
    record_reused_ids(ext, launch);
    char spool[4096], trace[4096];
    snprintf(spool, sizeof(spool), "%s", act_recorder_path());
    act_recorder_close();
    snprintf(trace, sizeof(trace), "%s/both.json", dir);
    act_export_opts eo = {.spool_dir = dir, .out_path = trace, .force = 1, .child_status = -1};
    assert_int_equal(act_trace_export(&eo), 0);
    json_error_t jerr;
    json_t *root = json_load_file(trace, 0, &jerr);
    assert_non_null(root);
    json_t *events = json_object_get(root, "traceEvents");

    act_snapshot *s = NULL;
    assert_int_equal(act_snapshot_open(spool, &s), 0);
    act_snap_op op;
    int n = 0;
    while (act_snapshot_next(s, &op) == 1) {
        json_t *name = json_string(op.name);
        json_t *k = event_where(events, "name", name, "X");
        json_decref(name);
        assert_non_null(k);
        assert_int_equal(ival(k, "pid"), op.device_pid);
        assert_int_equal(ival(k, "tid"), op.lane_tid);
        json_t *args = json_object_get(k, "args");
        assert_int_equal(ival(args, "External id"), op.external_id);
        assert_int_equal(ival(args, "correlation"), op.corr);
        /* The range that External id names is the op's own. */
        json_t *want = json_integer((json_int_t)op.external_id);
        json_t *r = event_where(events, "External id", want, "X");
        json_decref(want);
        assert_non_null(r);
        assert_string_equal(json_string_value(json_object_get(r, "name")), reuse_ranges[n]);
        /* The flow: its start on the launch, its finish on the op. */
        want = json_integer((json_int_t)op.flow_id);
        json_t *fs = event_where(events, "id", want, "s");
        json_t *ff = event_where(events, "id", want, "f");
        json_decref(want);
        assert_non_null(fs);
        assert_non_null(ff);
        assert_int_equal(ival(fs, "tid"), op.launch_tid);
        assert_int_equal(ival(fs, "pid"), op.launch_pid);
        assert_int_equal(ival(ff, "tid"), op.lane_tid);
        double gap =
            json_real_value(json_object_get(k, "ts")) - json_real_value(json_object_get(fs, "ts"));
        assert_true(gap * 1000.0 > (double)(op.start_ns - op.launch_start_ns) - 2.0);
        assert_true(gap * 1000.0 < (double)(op.start_ns - op.launch_start_ns) + 2.0);
        n++;
    }
    assert_int_equal(n, NREUSE);
    act_snapshot_close(s);
    json_decref(root);
    unlink(trace);
    unlink(spool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_are_joined_to_their_launch),
        cmocka_unit_test(test_damaged_spools),
        cmocka_unit_test(test_reused_correlation_ids_link_to_their_own_launch),
        cmocka_unit_test(test_snapshot_and_chrome_trace_agree),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
