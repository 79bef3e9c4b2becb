/*
 * test_timeline_builder.c -- the timeline builder on spools built byte by
 * byte: device op <-> launch joins, External ids from ranges, exactly one
 * ac2g flow pair per linked op with unique ids, device lanes and
 * sub-lanes that never overlap, recycled chunks, vendor correlation reuse,
 * the capture window, unbalanced pops and truncated processes. Each trace
 * is written as JSON and read back with jansson.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "timeline_util.h"

#define T(us)            (2000000ull + (uint64_t)(us)*1000ull) /* spool ns of trace µs (us + 1000) */
#define TS(us)           ((double)(us) + 1000.0)               /* the trace's ts for T(us) */
#define EXT(serial, seq) ((uint64_t)(serial) << 32 | (seq))
#define Q1               0x5500aa00ull
#define Q2               0x5500bb00ull
#define DEV              0xd1ull

/* pid 100: main thread (serial 1, tid 100) launches 3 kernels inside the
 * range "step"; the callback thread (serial 2, tid 101) records the device
 * side: two overlapping ops on Q1 (one needs a sub-lane), one after, one on
 * Q2, one with an unknown correlation and one without timestamps. */
/* The device's pid: its number in the trace (kineto's GPU pids, which the
 * TensorBoard plugin requires), the host pids here being >= 64. */
#define DEV_PID 0

static void scenario_opencl(sb *s)
{
    sb_init(s, 100, 4096, 4);
    sb_use_chunk(s, 0);
    sb_segment(s, 1);
    sb_thread(s, 1, 100, 0);
    sb_str(s, 1, "step");
    sb_str(s, 2, "clEnqueueNDRangeKernel");
    sb_ts(s, ACT_REC_RANGE_PUSH, 1, T(0));
    sb_api(s, 2, T(10), T(20), 1, EXT(1, 1), ACT_SOURCE_OPENCL);
    sb_api(s, 2, T(30), T(40), 2, EXT(1, 1), ACT_SOURCE_OPENCL);
    sb_api(s, 2, T(50), T(60), 3, EXT(1, 1), ACT_SOURCE_OPENCL);
    sb_api(s, 2, T(70), T(80), 4, EXT(1, 1), ACT_SOURCE_OPENCL);
    sb_ts(s, ACT_REC_RANGE_POP, 0, T(900));
    sb_use_chunk(s, 1);
    sb_segment(s, 2);
    sb_thread(s, 2, 101, 0);
    sb_str(s, 1, "saxpy");
    sb_str(s, 2, "OpenCL");
    sb_str(s, 3, "pthread-cpu");
    sb_device(s, 3, DEV, 2, ACT_SOURCE_OPENCL, 0);
    act_rec_device_op *op =
        sb_op(s, 1, ACT_OP_KERNEL, DEV, Q1, T(100), T(200), 1, ACT_SOURCE_OPENCL);
    op->gsize[0] = 1024;
    op->gsize[1] = op->gsize[2] = 1;
    sb_op(s, 1, ACT_OP_KERNEL, DEV, Q1, T(150), T(250), 2, ACT_SOURCE_OPENCL);
    sb_op(s, 1, ACT_OP_KERNEL, DEV, Q1, T(200), T(220), 3, ACT_SOURCE_OPENCL);
    op = sb_op(s, 0, ACT_OP_MEMCPY_DTOH, DEV, Q2, T(300), T(310), 4, ACT_SOURCE_OPENCL);
    op->bytes = 4096;
    sb_op(s, 1, ACT_OP_KERNEL, DEV, Q1, T(400), T(410), 99, ACT_SOURCE_OPENCL);
    op = sb_op(s, 1, ACT_OP_KERNEL, DEV, Q1, 0, 0, 5, ACT_SOURCE_OPENCL);
    op->flags = ACT_OPF_NO_TIMES;
}

static void test_joins_and_flows(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    scenario_opencl(&s);
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    assert_non_null(tu_build(&b, 0, 0));

    assert_int_equal(tu_count(&b, "X", "saxpy"), 4);
    assert_int_equal(tu_count(&b, "X", "Memcpy DtoH"), 1);
    assert_int_equal(tu_count(&b, "s", NULL), 4); /* four linked ops, one pair each */
    assert_int_equal(tu_count(&b, "f", NULL), 4);

    json_t *range = tu_find(&b, "X", "step", 0);
    assert_non_null(range);
    assert_string_equal(ev_str(range, "cat"), "user_annotation");
    long long ext = arg_int(range, "External id");
    assert_true(ext > 0);
    assert_int_equal(ev_int(range, "tid"), 100);

    /* Every launch and every linked op carries the range's External id. */
    for (size_t k = 0; k < 4; k++) {
        json_t *api = tu_find(&b, "X", "clEnqueueNDRangeKernel", k);
        assert_string_equal(ev_str(api, "cat"), "opencl_runtime");
        assert_int_equal(arg_int(api, "External id"), ext);
        assert_int_equal(arg_int(api, "correlation"), (long long)k + 1);
    }
    size_t i;
    json_t *ev;
    long long ids[16];
    size_t n_ids = 0;
    json_array_foreach(b.events, i, ev)
    {
        const char *ph = ev_str(ev, "ph");
        if (!strcmp(ph, "X") && ev_int(ev, "pid") == DEV_PID) {
            long long corr = arg_int(ev, "correlation");
            if (corr != 99)
                assert_int_equal(arg_int(ev, "External id"), ext);
            else
                assert_null(json_object_get(json_object_get(ev, "args"), "External id"));
        }
        if (!strcmp(ph, "s")) {
            assert_string_equal(ev_str(ev, "cat"), "ac2g");
            assert_int_equal(ev_int(ev, "pid"), 100);
            assert_int_equal(ev_int(ev, "tid"), 100);
            for (size_t j = 0; j < n_ids; j++)
                assert_true(ids[j] != ev_int(ev, "id"));
            ids[n_ids++] = ev_int(ev, "id");
        }
        if (!strcmp(ph, "f")) {
            assert_string_equal(ev_str(ev, "bp"), "e");
            assert_int_equal(ev_int(ev, "pid"), DEV_PID);
        }
    }
    /* Each flow: "s" at its launch start on the host, "f" at the op's start. */
    for (size_t k = 0; k < n_ids; k++) {
        json_t *s_ev = NULL, *f_ev = NULL;
        json_array_foreach(b.events, i, ev)
        {
            if (json_object_get(ev, "id") && ev_int(ev, "id") == ids[k]) {
                if (!strcmp(ev_str(ev, "ph"), "s"))
                    s_ev = ev;
                else if (!strcmp(ev_str(ev, "ph"), "f"))
                    f_ev = ev;
            }
        }
        assert_non_null(s_ev);
        assert_non_null(f_ev);
        assert_true(ev_num(f_ev, "ts") >= ev_num(s_ev, "ts"));
    }
    json_t *k0 = tu_find(&b, "X", "saxpy", 0);
    assert_near(ev_num(k0, "ts"), TS(100), 1e-9);
    assert_near(ev_num(k0, "dur"), 100.0, 1e-9);
    json_t *gs = json_object_get(json_object_get(k0, "args"), "global size");
    assert_int_equal(json_integer_value(json_array_get(gs, 0)), 1024);
    assert_string_equal(ev_str(json_object_get(k0, "args"), "queue"), "0x5500aa00");
    json_t *cp = tu_find(&b, "X", "Memcpy DtoH", 0);
    assert_string_equal(ev_str(cp, "cat"), "gpu_memcpy");
    assert_int_equal(arg_int(cp, "bytes"), 4096);

    assert_int_equal(b.tl.counts.unlinked_device_ops, 1);
    assert_int_equal(b.tl.counts.device_ops_without_times, 1);
    assert_int_equal(b.tl.counts.skew, 0);
    assert_int_equal(b.tl.counts.nesting_violations, 0);
    assert_int_equal(tu_meta_int(&b, "flows"), 4);
    sb_free(&s);
    tu_free(&b);
}

static int overlaps(double s1, double d1, double s2, double d2)
{
    return s1 < s2 + d2 && s2 < s1 + d1;
}

static void test_lanes_and_device_process(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    scenario_opencl(&s);
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    assert_non_null(tu_build(&b, 0, 0));

    /* One device process named after vendor and device, sorted last. */
    size_t i;
    json_t *ev;
    int named = 0, sorted = 0;
    json_array_foreach(b.events, i, ev)
    {
        if (strcmp(ev_str(ev, "ph"), "M") || ev_int(ev, "pid") != DEV_PID)
            continue;
        if (!strcmp(ev_str(ev, "name"), "process_name")) {
            assert_string_equal(ev_str(json_object_get(ev, "args"), "name"),
                                "OpenCL pthread-cpu (device 0)");
            named++;
        }
        if (!strcmp(ev_str(ev, "name"), "process_sort_index")) {
            assert_true(arg_int(ev, "sort_index") >= 5000000); /* below every host lane */
            sorted++;
        }
    }
    assert_int_equal(named, 1);
    assert_int_equal(sorted, 1);

    /* Overlapping ops of Q1 are on different lanes; op 3 reuses lane 1. */
    json_t *k1 = tu_find(&b, "X", "saxpy", 0), *k2 = tu_find(&b, "X", "saxpy", 1),
           *k3 = tu_find(&b, "X", "saxpy", 2);
    assert_true(ev_int(k1, "tid") != ev_int(k2, "tid"));
    assert_int_equal(ev_int(k1, "tid"), ev_int(k3, "tid"));
    /* No two device ops on one lane overlap at all (the user ranges
     * projected onto it, gpu_user_annotation, enclose them). */
    json_t *a, *c;
    size_t j;
    json_array_foreach(b.events, i, a)
    {
        if (strcmp(ev_str(a, "ph"), "X") || ev_int(a, "pid") != DEV_PID ||
            !strcmp(ev_str(a, "cat"), "gpu_user_annotation"))
            continue;
        json_array_foreach(b.events, j, c)
        {
            if (j <= i || strcmp(ev_str(c, "ph"), "X") || ev_int(c, "pid") != ev_int(a, "pid") ||
                ev_int(c, "tid") != ev_int(a, "tid") ||
                !strcmp(ev_str(c, "cat"), "gpu_user_annotation"))
                continue;
            assert_false(
                overlaps(ev_num(a, "ts"), ev_num(a, "dur"), ev_num(c, "ts"), ev_num(c, "dur")));
        }
    }
    /* deviceProperties lists the device. */
    json_t *dp = json_object_get(b.doc, "deviceProperties");
    assert_int_equal(json_array_size(dp), 1);
    assert_string_equal(ev_str(json_array_get(dp, 0), "name"), "pthread-cpu");
    sb_free(&s);
    tu_free(&b);
}

/* Chunk 0 holds serial 1's segment and later serial 3's (recycled); each
 * has its own string id 1. Segment order comes from seq, not position. */
static void test_recycled_chunks(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    sb_init(&s, 200, 4096, 2);
    sb_use_chunk(&s, 1);
    s.seq = 1;
    sb_segment(&s, 2); /* seq 1 */
    sb_thread(&s, 2, 202, 0);
    sb_str(&s, 1, "middle");
    sb_ts(&s, ACT_REC_MARK, 1, T(5));
    sb_use_chunk(&s, 0);
    s.seq = 0;
    sb_segment(&s, 1); /* seq 0 */
    sb_thread(&s, 1, 201, 0);
    sb_str(&s, 1, "first");
    sb_ts(&s, ACT_REC_RANGE_PUSH, 1, T(1));
    sb_ts(&s, ACT_REC_RANGE_POP, 0, T(2));
    s.seq = 2;
    sb_segment(&s, 3); /* seq 2: a new thread reuses the chunk */
    sb_thread(&s, 3, 203, 0);
    sb_str(&s, 1, "third");
    sb_ts(&s, ACT_REC_RANGE_PUSH, 1, T(10));
    sb_ts(&s, ACT_REC_RANGE_POP, 0, T(20));
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    assert_int_equal(b.sp[0].n_errors, 0);
    assert_non_null(tu_build(&b, 0, 0));
    json_t *first = tu_find(&b, "X", "first", 0), *third = tu_find(&b, "X", "third", 0);
    assert_non_null(first);
    assert_non_null(third);
    assert_int_equal(ev_int(first, "tid"), 201);
    assert_int_equal(ev_int(third, "tid"), 203);
    assert_int_equal(ev_int(tu_find(&b, "i", "middle", 0), "tid"), 202);
    assert_true(arg_int(first, "External id") != arg_int(third, "External id"));
    sb_free(&s);
    tu_free(&b);
}

/* CUPTI-style: the vendor reuses correlation 7; each device op pairs with
 * the latest launch that started before it. EXTCORR gives the range. */
static void test_vendor_corr_reuse(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    sb_init(&s, 300, 4096, 2);
    sb_open_thread(&s, 0, 1, 300);
    sb_str(&s, 1, "region");
    sb_str(&s, 2, "cudaLaunchKernel");
    sb_ts(&s, ACT_REC_RANGE_PUSH, 1, T(0));
    act_rec_extcorr *x = sb_rec(&s, ACT_REC_EXTCORR, ACT_SOURCE_CUPTI, sizeof(*x));
    x->corr = 7;
    x->ext = EXT(1, 1);
    sb_api(&s, 2, T(10), T(11), 7, 0, ACT_SOURCE_CUPTI);
    sb_api(&s, 2, T(50), T(51), 7, 0, ACT_SOURCE_CUPTI);
    sb_ts(&s, ACT_REC_RANGE_POP, 0, T(100));
    sb_str(&s, 3, "gemm");
    sb_op(&s, 3, ACT_OP_KERNEL, 0x1, 7, T(12), T(20), 7, ACT_SOURCE_CUPTI);
    sb_op(&s, 3, ACT_OP_KERNEL, 0x1, 7, T(52), T(60), 7, ACT_SOURCE_CUPTI);
    /* A device op that starts before its only launch: skew is counted. */
    sb_api(&s, 2, T(200), T(201), 8, 0, ACT_SOURCE_CUPTI);
    sb_op(&s, 3, ACT_OP_KERNEL, 0x1, 7, T(199), T(205), 8, ACT_SOURCE_CUPTI);
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    assert_non_null(tu_build(&b, 0, 0));
    assert_int_equal(tu_count(&b, "s", NULL), 3);
    json_t *s0 = tu_find(&b, "s", NULL, 0), *s1 = tu_find(&b, "s", NULL, 1);
    double t0 = ev_num(s0, "ts"), t1 = ev_num(s1, "ts");
    /* Flow starts at 10 and 50, whichever order they were written in. */
    assert_true((t0 == TS(10) && t1 == TS(50)) || (t0 == TS(50) && t1 == TS(10)));
    json_t *g0 = tu_find(&b, "X", "gemm", 0);
    assert_int_equal(arg_int(g0, "External id"),
                     arg_int(tu_find(&b, "X", "region", 0), "External id"));
    assert_string_equal(ev_str(tu_find(&b, "X", "cudaLaunchKernel", 0), "cat"), "cuda_runtime");
    assert_int_equal(b.tl.counts.skew, 1);
    assert_int_equal(b.tl.counts.skew_max_ns, 1000);
    sb_free(&s);
    tu_free(&b);
}

/* The process_name of the process holding `ev`. */
static const char *proc_name_of(built *b, json_t *ev)
{
    size_t i;
    json_t *m;
    json_array_foreach(b->events, i, m)
    {
        if (!strcmp(ev_str(m, "ph"), "M") && !strcmp(ev_str(m, "name"), "process_name") &&
            ev_int(m, "pid") == ev_int(ev, "pid"))
            return json_string_value(json_object_get(json_object_get(m, "args"), "name"));
    }
    return NULL;
}

static int has_arg(json_t *ev, const char *k)
{
    return json_object_get(json_object_get(ev, "args"), k) != NULL;
}

static const char *arg_str(json_t *ev, const char *k)
{
    return json_string_value(json_object_get(json_object_get(ev, "args"), k));
}

/* What the vendor helper asked of the builder: the time-joined launch's
 * range wins over the (reused) extcorr mapping; `detail` is named by op
 * kind; vendor ops carry their stream id; mstx markers are
 * gpu_user_annotation; device processes read "Ascend NPU 0 (device 0)" and
 * the host-marker lane has no device number. */
static void test_vendor_args_and_labels(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    const uint64_t npu = 0x7700000000000001ull, host = 0x7700000000ffffffull;
    const uint64_t stream9 = 0x7700000100000009ull, hq = 0x77000002000000aaull;
    tu_mkdir(&b);
    sb_init(&s, 400, 8192, 2);
    sb_open_thread(&s, 0, 1, 400);
    const char *strs[] = {"outer",     "aclrtLaunchKernel", "inner",        "k",        "AI_CORE",
                          "allreduce", "hccl_world",        "mark",         "mydomain", "NPU 0",
                          "Ascend",    "stream 9",          "host markers", "clmark",   "OpenCL",
                          "queue A"};
    for (uint32_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        sb_str(&s, i + 1, strs[i]);
    sb_device(&s, 10, npu, 11, ACT_SOURCE_MSPTI, 0);
    sb_device(&s, 13, host, 11, ACT_SOURCE_MSPTI, ACT_DEVICE_INDEX_NONE);
    act_rec_queue *q = sb_rec(&s, ACT_REC_QUEUE, 12, sizeof(*q));
    q->queue = stream9;
    q->device = npu;
    q->properties = 9;
    q = sb_rec(&s, ACT_REC_QUEUE, 16, sizeof(*q));
    q->queue = Q1;
    q->device = DEV;
    q->properties = 0x2; /* CL_QUEUE_PROFILING_ENABLE: no stream */

    sb_ts(&s, ACT_REC_RANGE_PUSH, 1, T(0)); /* outer: EXT(1,1) */
    sb_ts(&s, ACT_REC_RANGE_PUSH, 3, T(5)); /* inner: EXT(1,2) */
    /* The vendor's table maps corr 7 to outer (a stale, reused id); the
     * launch itself was made inside inner. */
    act_rec_extcorr *x = sb_rec(&s, ACT_REC_EXTCORR, ACT_SOURCE_MSPTI, sizeof(*x));
    x->corr = 7;
    x->ext = EXT(1, 1);
    sb_api(&s, 2, T(10), T(11), 7, EXT(1, 2), ACT_SOURCE_MSPTI);
    /* corr 8: the launch carries no range; the table is the fallback. */
    x = sb_rec(&s, ACT_REC_EXTCORR, ACT_SOURCE_MSPTI, sizeof(*x));
    x->corr = 8;
    x->ext = EXT(1, 1);
    sb_api(&s, 2, T(12), T(13), 8, 0, ACT_SOURCE_MSPTI);
    sb_ts(&s, ACT_REC_RANGE_POP, 0, T(90));
    sb_ts(&s, ACT_REC_RANGE_POP, 0, T(100));

    act_rec_device_op *o =
        sb_op(&s, 4, ACT_OP_KERNEL, npu, stream9, T(20), T(30), 7, ACT_SOURCE_MSPTI);
    o->detail = 5;
    o = sb_op(&s, 4, ACT_OP_KERNEL, npu, stream9, T(31), T(35), 8, ACT_SOURCE_MSPTI);
    o->detail = 5;
    o = sb_op(&s, 6, ACT_OP_COLLECTIVE, npu, stream9, T(40), T(50), 0, ACT_SOURCE_MSPTI);
    o->detail = 7;
    o = sb_op(&s, 8, ACT_OP_MARKER, npu, stream9, T(60), T(61), 0, ACT_SOURCE_MSPTI);
    o->detail = 9;
    o = sb_op(&s, 8, ACT_OP_MARKER, host, hq, T(62), T(63), 0, ACT_SOURCE_MSPTI);
    o->detail = 9;
    sb_op(&s, 14, ACT_OP_MARKER, DEV, Q1, T(70), T(71), 0, ACT_SOURCE_OPENCL);
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    assert_non_null(tu_build(&b, 0, 0));

    long long outer = arg_int(tu_find(&b, "X", "outer", 0), "External id");
    long long inner = arg_int(tu_find(&b, "X", "inner", 0), "External id");
    assert_true(outer && inner && outer != inner);
    json_t *k0 = tu_find(&b, "X", "k", 0), *k1 = tu_find(&b, "X", "k", 1);
    assert_int_equal(arg_int(k0, "External id"), inner);
    assert_int_equal(arg_int(k1, "External id"), outer);

    assert_string_equal(arg_str(k0, "type"), "AI_CORE");
    assert_false(has_arg(k0, "detail"));
    assert_int_equal(arg_int(k0, "stream"), 9);
    /* kineto's pairing: args.device is the lane's pid; the ordinal beside */
    assert_int_equal(arg_int(k0, "device index"), 0);
    assert_int_equal(arg_int(k0, "device"), json_integer_value(json_object_get(k0, "pid")));
    assert_string_equal(proc_name_of(&b, k0), "Ascend NPU 0 (device 0)");

    json_t *c = tu_find(&b, "X", "allreduce", 0);
    assert_string_equal(ev_str(c, "cat"), "kernel");
    assert_string_equal(arg_str(c, "commName"), "hccl_world");
    assert_int_equal(arg_int(c, "stream"), 9);

    json_t *m0 = tu_find(&b, "X", "mark", 0), *m1 = tu_find(&b, "X", "mark", 1);
    assert_string_equal(ev_str(m0, "cat"), "gpu_user_annotation");
    assert_string_equal(ev_str(m1, "cat"), "gpu_user_annotation");
    assert_string_equal(arg_str(m0, "domain"), "mydomain");
    json_t *hm = !strcmp(proc_name_of(&b, m0), "Ascend host markers") ? m0 : m1;
    assert_string_equal(proc_name_of(&b, hm), "Ascend host markers");
    assert_false(has_arg(hm, "device index"));

    json_t *cl = tu_find(&b, "X", "clmark", 0);
    assert_string_equal(ev_str(cl, "cat"), "gpu_sync");
    /* an OpenCL queue has no stream id: the lane is the stream */
    assert_int_equal(arg_int(cl, "stream"), json_integer_value(json_object_get(cl, "tid")));
    sb_free(&s);
    tu_free(&b);
}

static void test_capture_window(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    sb_init(&s, 400, 4096, 2);
    sb_open_thread(&s, 0, 1, 400);
    sb_str(&s, 1, "call");
    sb_str(&s, 2, "k");
    sb_api(&s, 1, T(10), T(11), 1, 0, ACT_SOURCE_OPENCL);   /* before */
    sb_api(&s, 1, T(100), T(101), 2, 0, ACT_SOURCE_OPENCL); /* inside */
    sb_api(&s, 1, T(900), T(901), 3, 0, ACT_SOURCE_OPENCL); /* after */
    sb_ts(&s, ACT_REC_MARK, 2, T(950));                     /* after */
    sb_op(&s, 2, ACT_OP_KERNEL, 1, 1, T(20), T(30), 1, ACT_SOURCE_OPENCL);
    /* Launched inside the window, runs after its end: kept. */
    sb_op(&s, 2, ACT_OP_KERNEL, 1, 1, T(600), T(700), 2, ACT_SOURCE_OPENCL);
    sb_op(&s, 2, ACT_OP_KERNEL, 1, 1, T(910), T(920), 3, ACT_SOURCE_OPENCL);
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    assert_non_null(tu_build(&b, T(50), T(500)));
    assert_int_equal(tu_count(&b, "X", "call"), 1);
    assert_int_equal(tu_count(&b, "X", "k"), 1);
    assert_int_equal(arg_int(tu_find(&b, "X", "k", 0), "correlation"), 2);
    assert_int_equal(b.tl.counts.outside_window[ACT_REC_API], 2);
    assert_int_equal(b.tl.counts.outside_window[ACT_REC_DEVICE_OP], 2);
    assert_int_equal(b.tl.counts.outside_window[ACT_REC_MARK], 1);
    json_t *ow = json_object_get(json_object_get(b.doc, "acceltrace"), "outside_window");
    assert_int_equal(json_integer_value(json_object_get(ow, "api")), 2);
    sb_free(&s);
    tu_free(&b);
}

/* act_start/act_stop: CAPTURE records bound what is kept in that process. */
static void test_capture_records(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    sb_init(&s, 450, 4096, 2);
    sb_hdr(&s)->flags |= ACT_SPOOL_F_CAPTURE_API; /* starts off */
    sb_open_thread(&s, 0, 1, 450);
    sb_str(&s, 1, "call");
    sb_api(&s, 1, T(50), T(51), 0, 0, ACT_SOURCE_OPENCL);
    sb_ts(&s, ACT_REC_CAPTURE, 1, T(100));
    sb_api(&s, 1, T(150), T(151), 0, 0, ACT_SOURCE_OPENCL);
    sb_ts(&s, ACT_REC_CAPTURE, 0, T(200));
    sb_api(&s, 1, T(250), T(251), 0, 0, ACT_SOURCE_OPENCL);
    sb_ts(&s, ACT_REC_CAPTURE, 1, T(300));
    sb_api(&s, 1, T(350), T(351), 0, 0, ACT_SOURCE_OPENCL);
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    assert_non_null(tu_build(&b, 0, 0));
    assert_int_equal(tu_count(&b, "X", "call"), 2);
    assert_near(ev_num(tu_find(&b, "X", "call", 0), "ts"), TS(150), 1e-9);
    assert_near(ev_num(tu_find(&b, "X", "call", 1), "ts"), TS(350), 1e-9);
    assert_int_equal(b.tl.counts.outside_window[ACT_REC_API], 2);
    sb_free(&s);
    tu_free(&b);
}

static void sb_arg(sb *s, uint32_t key, uint32_t type, uint64_t bits)
{
    act_rec_arg *a = sb_rec(s, ACT_REC_ARG, key, sizeof(*a));
    a->type = type;
    a->v.u = bits;
}

/* ARG records attach to the latest push/start/mark of their thread (STRING
 * records may come between); a THREAD record with serial 0 names a tid. */
static void test_recorded_args_and_thread_names(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    sb_init(&s, 460, 4096, 2);
    sb_open_thread(&s, 0, 1, 460);
    sb_str(&s, 1, "r");
    sb_str(&s, 2, "payload");
    sb_str(&s, 3, "External id");
    sb_ts(&s, ACT_REC_RANGE_PUSH, 1, T(1));
    sb_arg(&s, 2, ACT_RECARG_I64, (uint64_t)-5);
    sb_str(&s, 4, "domain");
    sb_str(&s, 5, "io");
    sb_arg(&s, 4, ACT_RECARG_STR, 5);
    sb_arg(&s, 3, ACT_RECARG_U64, 99); /* collides with the builder's key */
    sb_ts(&s, ACT_REC_RANGE_POP, 0, T(2));
    sb_str(&s, 6, "m");
    sb_ts(&s, ACT_REC_MARK, 6, T(3));
    double d = 2.5;
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    sb_arg(&s, 2, ACT_RECARG_F64, bits);
    sb_str(&s, 7, "main-thread");
    act_rec_thread *t = sb_rec(&s, ACT_REC_THREAD, 0, sizeof(*t));
    t->tid = 460;
    t->name = 7;
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    assert_non_null(tu_build(&b, 0, 0));
    json_t *r = tu_find(&b, "X", "r", 0);
    json_t *args = json_object_get(r, "args");
    assert_int_equal(json_integer_value(json_object_get(args, "payload")), -5);
    assert_string_equal(json_string_value(json_object_get(args, "domain")), "io");
    assert_int_equal(json_integer_value(json_object_get(args, "External id (recorded)")), 99);
    assert_true(json_integer_value(json_object_get(args, "External id")) != 99);
    json_t *m = tu_find(&b, "i", "m", 0);
    assert_near(json_real_value(json_object_get(json_object_get(m, "args"), "payload")), 2.5, 0);
    json_t *tn = tu_find(&b, "M", "thread_name", 0);
    assert_string_equal(ev_str(json_object_get(tn, "args"), "name"), "main-thread");
    assert_int_equal(b.tl.counts.orphan_args, 0);
    sb_free(&s);
    tu_free(&b);
}

/* A process that died: not sealed; a pop without push is counted; the
 * range it left open is closed at its last timestamp and flagged. */
static void test_truncated_and_unbalanced(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    sb_init(&s, 500, 4096, 2);
    sb_hdr(&s)->flags = 0;           /* not sealed */
    sb_hdr(&s)->unbalanced_pops = 2; /* counted by the recorder */
    sb_open_thread(&s, 0, 1, 500);
    sb_str(&s, 1, "outer");
    sb_str(&s, 2, "x");
    sb_ts(&s, ACT_REC_RANGE_POP, 0, T(1)); /* pop with nothing open */
    sb_ts(&s, ACT_REC_RANGE_PUSH, 1, T(5));
    sb_api(&s, 2, T(10), T(40), 0, EXT(1, 1), ACT_SOURCE_OPENCL);
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    assert_non_null(tu_build(&b, 0, 0));
    json_t *outer = tu_find(&b, "X", "outer", 0);
    assert_non_null(outer);
    assert_true(json_is_true(json_object_get(json_object_get(outer, "args"), "truncated")));
    assert_near(ev_num(outer, "dur"), 35.0, 1e-9); /* closed at the last ts, 40 */
    assert_int_equal(tu_meta_int(&b, "unbalanced_pops"), 3);
    assert_int_equal(tu_meta_int(&b, "unclosed_ranges"), 1);
    json_t *tr = json_object_get(json_object_get(b.doc, "acceltrace"), "truncated_processes");
    assert_int_equal(json_array_size(tr), 1);
    assert_int_equal(json_integer_value(json_array_get(tr, 0)), 500);
    assert_int_equal(tu_count(&b, "M", "process_labels"), 1);
    sb_free(&s);
    tu_free(&b);
}

/* Two threads whose ranges and API calls interleave in the spool, so that
 * neither list is in lane order (the nesting check sorts copies): a
 * partial overlap on each lane is counted, slices of different lanes that
 * overlap are not. */
static void test_nesting_interleaved_threads(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    sb_init(&s, 620, 4096, 1);
    sb_open_thread(&s, 0, 2, 621);
    sb_str(&s, 1, "B");
    sb_str(&s, 2, "call");
    sb_ts(&s, ACT_REC_RANGE_PUSH, 1, T(2));
    sb_segment(&s, 1);
    sb_thread(&s, 1, 620, 0);
    sb_str(&s, 1, "A");
    sb_str(&s, 2, "call");
    sb_ts(&s, ACT_REC_RANGE_PUSH, 1, T(0));
    sb_api(&s, 2, T(1), T(3), 0, 0, ACT_SOURCE_OPENCL);
    sb_segment(&s, 2);
    sb_api(&s, 2, T(15), T(25), 0, 0, ACT_SOURCE_OPENCL); /* ends after B */
    sb_ts(&s, ACT_REC_RANGE_POP, 0, T(20));
    sb_segment(&s, 1);
    sb_api(&s, 2, T(8), T(12), 0, 0, ACT_SOURCE_OPENCL); /* ends after A */
    sb_ts(&s, ACT_REC_RANGE_POP, 0, T(10));
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    assert_non_null(tu_build(&b, 0, 0));
    assert_int_equal(b.tl.counts.nesting_violations, 2);
    sb_free(&s);
    tu_free(&b);
}

/* Two processes: the device pid sits above both, host lanes keep OS tids,
 * and a partially overlapping host slice is counted as a nesting
 * violation, not hidden. */
static void test_two_processes_and_nesting(void **state)
{
    (void)state;
    built b = {0};
    sb s1, s2;
    char err[256];
    tu_mkdir(&b);
    sb_init(&s1, 600, 4096, 1);
    sb_use_chunk(&s1, 0);
    sb_segment(&s1, 1);
    sb_thread(&s1, 1, 600, 0);
    sb_str(&s1, 1, "a");
    sb_api(&s1, 1, T(0), T(10), 0, 0, ACT_SOURCE_OPENCL);
    sb_api(&s1, 1, T(5), T(15), 0, 0, ACT_SOURCE_OPENCL); /* partial overlap */
    sb_init(&s2, 601, 4096, 1);
    sb_hdr(&s2)->ppid = 600;
    sb_use_chunk(&s2, 0);
    sb_segment(&s2, 1);
    sb_thread(&s2, 1, 601, 0);
    sb_str(&s2, 1, "b");
    sb_api(&s2, 1, T(0), T(10), 0, 0, ACT_SOURCE_OPENCL);
    assert_int_equal(tu_add(&b, &s1, err, sizeof(err)), 0);
    assert_int_equal(tu_add(&b, &s2, err, sizeof(err)), 0);
    assert_non_null(tu_build(&b, 0, 0));
    assert_int_equal(ev_int(tu_find(&b, "X", "b", 0), "pid"), 601);
    assert_int_equal(b.tl.counts.nesting_violations, 1);
    json_t *procs = json_object_get(json_object_get(b.doc, "acceltrace"), "processes");
    assert_int_equal(json_array_size(procs), 2);
    sb_free(&s1);
    sb_free(&s2);
    tu_free(&b);
}

/* Sizes a hostile or unusual spool can reach must stay fast (every step is
 * O(n log n)): thousands of ops overlapping on one queue, one vendor
 * correlation id shared by thousands of launches, one metadata key set
 * thousands of times (the last value wins). */
static void test_pathological_sizes(void **state)
{
    (void)state;
    enum { N = 3000 };
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    sb_init(&s, 1000, 1u << 20, 1);
    sb_open_thread(&s, 0, 1, 1000);
    sb_str(&s, 1, "launch");
    sb_str(&s, 2, "k");
    sb_str(&s, 3, "key");
    for (uint32_t i = 0; i < N; i++) {
        sb_api(&s, 1, T(i), T(i) + 100, 7, 0, ACT_SOURCE_CUPTI);
        sb_op(&s, 2, ACT_OP_KERNEL, 1, 1, T(i) + 500, T(N) + 1000, 7, ACT_SOURCE_CUPTI);
        char v[16];
        snprintf(v, sizeof(v), "v%u", i);
        sb_str(&s, 10 + i, v);
        act_rec_metadata *m = sb_rec(&s, ACT_REC_METADATA, 3, sizeof(*m));
        m->value = 10 + i;
    }
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    assert_non_null(tu_build(&b, 0, 0));
    assert_int_equal(tu_count(&b, "f", NULL), N);
    assert_int_equal(tu_count(&b, "M", "thread_name"), N + 1); /* N sub-lanes + host thread */
    char last[16];
    snprintf(last, sizeof(last), "v%u", N - 1);
    assert_string_equal(json_string_value(json_object_get(b.doc, "key")), last);
    /* Op i (start i + 0.5 us) pairs with launch i, the latest before it. */
    json_t *f0 = tu_find(&b, "s", NULL, 0);
    assert_near(ev_num(f0, "ts"), TS(0), 1e-9);
    sb_free(&s);
    tu_free(&b);
}

static void test_partition_helper(void **state)
{
    (void)state;
    uint64_t st[] = {0, 1, 2, 10, 10, 11};
    uint64_t en[] = {10, 5, 3, 20, 12, 13};
    uint32_t lane[6];
    size_t n = act_lanes_partition(st, en, 6, lane);
    assert_int_equal(n, 3);
    /* No two items of one lane overlap. */
    for (size_t i = 0; i < 6; i++)
        for (size_t j = i + 1; j < 6; j++)
            if (lane[i] == lane[j])
                assert_true(en[i] <= st[j] || en[j] <= st[i]);
    /* [1,3) nests in [0,10); [2,4) straddles [1,3); [5,12) straddles [0,10). */
    uint64_t hs[] = {0, 1, 2, 5}, he[] = {10, 3, 4, 12};
    assert_int_equal(act_lanes_nesting_violations(hs, he, 4), 2);
    uint64_t ns[] = {0, 1, 3, 10}, ne[] = {10, 3, 10, 11}; /* nested or disjoint */
    assert_int_equal(act_lanes_nesting_violations(ns, ne, 4), 0);
}

/* An event holds at most 65 535 args (act_tl_event.nargs is 16 bits): a
 * hostile spool's ARG records beyond that were counted modulo 65 536
 * (70 000 args became 4 464, and the next event's args were read as
 * this one's); now the rest are not kept and the trace says so, once for
 * the event. */
static void test_args_beyond_an_event(void **state)
{
    (void)state;
    act_timeline tl;
    act_build_opts o = {0, 0};
    assert_int_equal(act_timeline_build(&tl, NULL, 0, &o), 0);
    size_t errors = tl.n_errors;
    assert_non_null(act_tl_event_add(&tl, 'X', ACT_CAT_CPU_OP, act_str_c("many"), 1, 1, 0, 10));
    for (uint64_t i = 0; i < 70000; i++)
        act_tl_arg_u64(&tl, "k", i);
    assert_int_equal(tl.ev[tl.n_ev - 1].nargs, UINT16_MAX);
    assert_int_equal(tl.n_args - tl.ev[tl.n_ev - 1].arg0, UINT16_MAX);
    assert_int_equal(tl.n_errors, errors + 1);
    assert_non_null(strstr(tl.errors[errors], "'many' at 0 ns has more than 65535 args"));
    assert_int_equal(tl.err, 0);
    /* the next event starts afresh */
    assert_non_null(act_tl_event_add(&tl, 'X', ACT_CAT_CPU_OP, act_str_c("next"), 1, 1, 20, 1));
    act_tl_arg_u64(&tl, "k", 1);
    assert_int_equal(tl.ev[tl.n_ev - 1].nargs, 1);
    assert_int_equal(tl.n_errors, errors + 1);
    act_timeline_free(&tl);
}

/* A built-in category's answer, worked out once, is the name's. */
static void test_cat_is_device_cached(void **state)
{
    (void)state;
    for (int round = 0; round < 2; round++)
        for (int c = 0; c < ACT_CAT_MAX; c++)
            assert_int_equal(act_tl_cat_is_device(NULL, c),
                             act_cat_is_device_name(act_cat_name(c)));
    assert_int_equal(act_tl_cat_is_device(NULL, ACT_CAT_KERNEL), 1);
    assert_int_equal(act_tl_cat_is_device(NULL, ACT_CAT_OPENCL_RUNTIME), 0);
    assert_int_equal(act_tl_cat_is_device(NULL, ACT_CAT_AC2G), -1);
}

/* A device's clock mapping (anchor_enqueue) is recorded by the thread
 * whose completion anchored it; the DEVICE record by the thread that made
 * the queue. Segments are read in the order they closed (record.h S1),
 * so the CLOCK record can come first: the trace still states the
 * device's offset (CI once lost "opencl_clock_*" this way). */
static void test_device_clock_before_device(void **state)
{
    (void)state;
    built b = {0};
    sb s;
    char err[256];
    tu_mkdir(&b);
    sb_init(&s, 300, 4096, 2);
    sb_open_thread(&s, 0, 1, 300); /* the app's thread: queue creation */
    sb_str(&s, 1, "pthread-cpu");
    sb_str(&s, 2, "OpenCL");
    sb_device(&s, 1, DEV, 2, ACT_SOURCE_OPENCL, 0);
    sb_open_thread(&s, 1, 2, 301); /* the completion thread */
    sb_str(&s, 1, "anchor_enqueue");
    /* A first mapping, replaced by a later one before the DEVICE record
     * is read: one waits, the latest (the waiting list holds one per
     * handle: a vendor source's never-described key does not pile up). */
    for (int k = 0; k < 2; k++) {
        act_rec_clock *c = sb_rec(&s, ACT_REC_CLOCK, 1, sizeof(*c));
        c->device = DEV;
        c->offset_ns = k ? -12345 : -1;
        c->error_ns = k ? 678 : 1;
    }
    sb_end(&s, 2); /* closed first: read first */
    sb_end(&s, 1);
    assert_int_equal(tu_add(&b, &s, err, sizeof(err)), 0);
    assert_non_null(tu_build(&b, 0, 0));
    size_t keys = 0;
    for (size_t i = 0; i < b.tl.n_meta; i++)
        keys += b.tl.meta[i].key.n == 18 && !memcmp(b.tl.meta[i].key.p, "opencl_clock_300_0", 18);
    assert_int_equal(keys, 1);
    json_t *clk = json_object_get(b.doc, "opencl_clock_300_0");
    assert_non_null(clk);
    assert_string_equal(ev_str(clk, "method"), "anchor_enqueue");
    assert_int_equal(ev_int(clk, "offset_ns"), -12345);
    assert_int_equal(ev_int(clk, "error_ns"), 678);
    sb_free(&s);
    tu_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cat_is_device_cached),
        cmocka_unit_test(test_joins_and_flows),
        cmocka_unit_test(test_args_beyond_an_event),
        cmocka_unit_test(test_lanes_and_device_process),
        cmocka_unit_test(test_recycled_chunks),
        cmocka_unit_test(test_vendor_corr_reuse),
        cmocka_unit_test(test_vendor_args_and_labels),
        cmocka_unit_test(test_capture_window),
        cmocka_unit_test(test_capture_records),
        cmocka_unit_test(test_recorded_args_and_thread_names),
        cmocka_unit_test(test_truncated_and_unbalanced),
        cmocka_unit_test(test_two_processes_and_nesting),
        cmocka_unit_test(test_nesting_interleaved_threads),
        cmocka_unit_test(test_pathological_sizes),
        cmocka_unit_test(test_partition_helper),
        cmocka_unit_test(test_device_clock_before_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
