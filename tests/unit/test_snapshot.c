/*
 * test_snapshot.c -- the device-op snapshot (src/timeline/snapshot.c) that
 * the torch plugin reads: records written by the real recorder, as a source
 * writes them (launch on one thread, completion on another), come back
 * joined to their launch, described, converted and in start order; damaged
 * spools give clear errors or counted skips, never garbage.
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

#include "acceltrace.h"
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_are_joined_to_their_launch),
        cmocka_unit_test(test_damaged_spools),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
