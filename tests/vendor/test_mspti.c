/*
 * test_mspti.c -- the mspti source against the fake libmspti.so, one case
 * per run (argv[1]), each registered as its own CTest test. The fake is
 * loaded by the source through its ordinary dlopen path
 * (ACCELTRACE_MSPTI_LIB); the test opens the same file to reach the
 * fake-only "launch" functions. Results are checked in the spool itself
 * (spool_scan), independently of the timeline builder.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acceltrace.h"
#include "internal.h"
#include "sources/activity/activity.h"
#include "sources/mspti/mspti_decls.h"
#include "spool_scan.h"
#include "vendor_test.h"

static struct {
    void (*set)(const char *, long);
    void (*stats)(uint64_t *, uint64_t *, uint64_t *, uint64_t *);
    uint64_t (*kernel)(const char *, const char *, uint32_t, uint32_t, uint64_t);
    uint64_t (*memcpy_)(uint32_t, uint64_t, uint32_t, uint32_t, uint64_t);
    uint64_t (*memset_)(uint64_t, uint32_t, uint32_t, uint64_t);
    uint64_t (*comm)(const char *, const char *, uint32_t, uint32_t, uint64_t);
    void (*marker)(uint32_t, uint32_t, uint64_t, const char *, const char *, uint32_t, uint32_t);
    void (*inject_unknown)(void);
    msptiActivityPushExternalCorrelationId_fn push;
    msptiActivityPopExternalCorrelationId_fn pop;
} fk;

static void fake_open(void)
{
    const char *lib = getenv("ACCELTRACE_MSPTI_LIB");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) {
        fprintf(stderr, "cannot open the fake mspti (%s)\n",
                lib ? lib : "ACCELTRACE_MSPTI_LIB unset");
        exit(2);
    }
    *(void **)&fk.set = dlsym(h, "fake_mspti_set");
    *(void **)&fk.stats = dlsym(h, "fake_mspti_stats");
    *(void **)&fk.kernel = dlsym(h, "fake_mspti_launch_kernel");
    *(void **)&fk.memcpy_ = dlsym(h, "fake_mspti_launch_memcpy");
    *(void **)&fk.memset_ = dlsym(h, "fake_mspti_launch_memset");
    *(void **)&fk.comm = dlsym(h, "fake_mspti_launch_comm");
    *(void **)&fk.marker = dlsym(h, "fake_mspti_marker");
    *(void **)&fk.inject_unknown = dlsym(h, "fake_mspti_inject_unknown");
    *(void **)&fk.push = dlsym(h, "msptiActivityPushExternalCorrelationId");
    *(void **)&fk.pop = dlsym(h, "msptiActivityPopExternalCorrelationId");
    if (!fk.set || !fk.kernel || !fk.marker) {
        fprintf(stderr, "fake mspti lacks its test entry points\n");
        exit(2);
    }
}

static act_activity_opts fast_opts(void)
{
    act_activity_opts o = {.buffer_size = 64 << 10, .buffer_count = 8, .drain_timeout_ms = 3000};
    return o;
}

/* ---- cases ------------------------------------------------------------ */

/* Every record kind converts, in callback mode and in degraded mode. */

static void case_kinds(int callbacks)
{
    fk.set("delay_ms", 20);
    fk.set("no_callbacks", !callbacks);
    rec_open();
    act_activity_opts o = fast_opts();
    CHECK(act_source_mspti_start(&o) == 0, "start");
    act_range_push("step");
    fk.push(MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 777); /* someone else's id */
    fk.kernel("matmul", "AI_CORE", 0, 3, 5000);
    uint64_t last = 0;
    fk.pop(MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
    fk.memcpy_(MSPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096, 0, 3, 2000);
    fk.memcpy_(MSPTI_ACTIVITY_MEMCPY_KIND_DTOH, 4096, 0, 3, 2000);
    fk.memcpy_(MSPTI_ACTIVITY_MEMCPY_KIND_DTOD, 4096, 1, 5, 2000);
    fk.memset_(512, 0, 3, 1000);
    fk.comm("allreduce", "hccl_world_group", 1, 7, 8000);
    fk.marker(MSPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, MSPTI_ACTIVITY_SOURCE_KIND_HOST, 1, "tick",
              "app", 0, 42);
    fk.marker(MSPTI_ACTIVITY_FLAG_MARKER_START_WITH_DEVICE, MSPTI_ACTIVITY_SOURCE_KIND_DEVICE, 9,
              "phase", NULL, 0, 3);
    fk.marker(MSPTI_ACTIVITY_FLAG_MARKER_END_WITH_DEVICE, MSPTI_ACTIVITY_SOURCE_KIND_DEVICE, 9,
              NULL, NULL, 0, 3);
    act_range_pop();
    wait_device_idle(fk.stats);
    act_source_mspti_stop();
    act_activity_stats st;
    act_source_mspti_stats(&st);
    spool_scan s;
    rec_close(&s);

    CHECK(count_ops(&s, ACT_OP_KERNEL) == 1, "kernels %zu", count_ops(&s, ACT_OP_KERNEL));
    const scan_op *k = find_op(&s, "matmul");
    CHECK(k && k->detail && strcmp(k->detail, "AI_CORE") == 0, "kernel type in detail");
    CHECK(k && k->r.source == ACT_SOURCE_MSPTI && k->r.start && k->r.end >= k->r.start,
          "kernel times");
    CHECK(count_ops(&s, ACT_OP_MEMCPY_HTOD) == 1 && count_ops(&s, ACT_OP_MEMCPY_DTOH) == 1 &&
              count_ops(&s, ACT_OP_MEMCPY_DTOD) == 1,
          "memcpy kinds");
    const scan_op *c = find_op(&s, "Memcpy HtoD");
    CHECK(c && c->r.bytes == 4096, "memcpy bytes");
    CHECK(count_ops(&s, ACT_OP_MEMSET) == 1, "memset");
    const scan_op *cc = find_op(&s, "allreduce");
    CHECK(cc && cc->r.op == ACT_OP_COLLECTIVE && cc->detail &&
              strcmp(cc->detail, "hccl_world_group") == 0,
          "collective with commName");
    CHECK(count_ops(&s, ACT_OP_MARKER) == 2, "markers %zu", count_ops(&s, ACT_OP_MARKER));
    const scan_op *ph = find_op(&s, "phase");
    CHECK(ph && ph->r.end >= ph->r.start, "start/end marker paired");
    /* Timestamps are on the host timeline: near "now" on MONOTONIC_RAW. */
    uint64_t now = act_clock_now();
    CHECK(k && k->r.start < now && now - k->r.start < 5000000000ull,
          "kernel mapped onto the timeline");
    CHECK(s.n_devices == 3, "device records %zu (device 0, 1, host markers)", s.n_devices);
    CHECK(s.n_queues >= 4, "queue records %zu", s.n_queues);
    CHECK(s.n_clocks == 2, "clock records at start and stop: %zu", s.n_clocks);
    /* A source records, it formats no output: the "mspti_clock" object is
     * the builder's, derived from the clock records (check_vendor_trace). */
    CHECK(!spool_scan_metadata(&s, "mspti_clock"), "the source wrote the clock metadata itself");
    CHECK(s.n_apis == 6, "api host slices %zu", s.n_apis);
    CHECK(s.n_errors == 0, "errors %zu (%s)", s.n_errors, s.n_errors ? s.errors[0] : "");
    if (callbacks) {
        CHECK(st.callbacks == 1 && st.api_superseded == 6, "callback mode (superseded %llu)",
              (unsigned long long)st.api_superseded);
        /* The launch slices carry the range (read on the launching
         * thread); the foreign 777 on mspti's process-global stack is
         * counted, never used: no corr -> ext records at all. */
        CHECK(s.n_ext == 0, "extcorr %zu", s.n_ext);
        for (size_t i = 0; i < s.n_apis; i++) {
            const char *rn = spool_scan_range_name(&s, s.apis[i].r.ext);
            CHECK(rn && strcmp(rn, "step") == 0, "api %zu -> step", i);
        }
        CHECK(st.foreign_extcorr == 1, "vendor ext records counted: %llu",
              (unsigned long long)st.foreign_extcorr);
        const scan_api *l = k ? spool_scan_launch_of(&s, k) : NULL;
        CHECK(l && l->name && strcmp(l->name, "aclrtLaunchKernel") == 0, "launch found");
        CHECK(l && spool_scan_range_name(&s, l->r.ext) &&
                  strcmp(spool_scan_range_name(&s, l->r.ext), "step") == 0,
              "launch in range 'step'");
    } else {
        CHECK(st.callbacks == 0, "degraded mode");
        /* The vendor's records are what there is: 777 -> the kernel's corr. */
        CHECK(s.n_ext == 1 && s.ext[0].ext == 777 && k && s.ext[0].corr == k->r.corr,
              "vendor extcorr converted");
    }
    spool_scan_free(&s);
}

/* >= 99 % of kernels launched inside a range link to that range, from
 * several threads at once (mspti's ext stack is process-global), with
 * correlation ids that repeat. Every linked kernel has exactly one launch
 * and starts at or after it. */
#define LINK_THREADS 4
#define LINK_KERNELS 250

static void *link_thread(void *arg)
{
    int t = (int)(intptr_t)arg;
    char rname[32], kname[32];
    for (int i = 0; i < LINK_KERNELS; i++) {
        snprintf(rname, sizeof(rname), "t%d.r%d", t, i % 10);
        snprintf(kname, sizeof(kname), "t%d.r%d", t, i % 10);
        act_range_push(rname);
        fk.kernel(kname, "AI_CORE", 0, (uint32_t)t, 1000);
        act_range_pop();
    }
    return NULL;
}

static void case_link(void)
{
    fk.set("delay_ms", 30);
    /* Ids repeat (twice over here), but not within the launch latency:
     * an id reused before its kernel ran would be ambiguous to anyone. */
    fk.set("corr_wrap", 500);
    rec_open();
    act_activity_opts o = fast_opts();
    CHECK(act_source_mspti_start(&o) == 0, "start");
    pthread_t th[LINK_THREADS];
    for (int t = 0; t < LINK_THREADS; t++)
        pthread_create(&th[t], NULL, link_thread, (void *)(intptr_t)t);
    for (int t = 0; t < LINK_THREADS; t++)
        pthread_join(th[t], NULL);
    wait_device_idle(fk.stats);
    act_source_mspti_stop();
    spool_scan s;
    rec_close(&s);
    size_t kernels = 0, linked = 0, wrong = 0, backwards = 0;
    for (size_t i = 0; i < s.n_ops; i++) {
        const scan_op *op = &s.ops[i];
        if (op->r.op != ACT_OP_KERNEL)
            continue;
        kernels++;
        const scan_api *l = spool_scan_launch_of(&s, op);
        const char *range = l ? spool_scan_range_name(&s, l->r.ext) : NULL;
        if (!range)
            continue;
        if (strcmp(range, op->name) != 0) {
            wrong++;
            continue;
        }
        linked++;
        backwards += op->r.start < l->r.start;
    }
    size_t total = LINK_THREADS * LINK_KERNELS;
    printf("link: %zu kernels, %zu linked to their range, %zu to a wrong one, %zu unlinked\n",
           kernels, linked, wrong, kernels - linked - wrong);
    CHECK(kernels == total, "all kernels recorded: %zu", kernels);
    CHECK(linked * 100 >= total * 99, "linked %zu of %zu", linked, total);
    /* Correlation ids wrap every 500 launches here (as vendor ids repeat):
     * when a stream is backed up, a later launch with the same id can
     * precede a kernel's start, and the time join then picks it. That is
     * the residue the issue allows ("the rest counted"); keep it rare. */
    CHECK(wrong * 100 <= total, "mislinked %zu of %zu", wrong, total);
    CHECK(backwards == 0, "flows backwards in time: %zu", backwards);
    spool_scan_free(&s);
}

/* Real delay (200 ms): stop right after the launches; nothing delivered
 * before the drain ends is lost. */
static void case_drain(void)
{
    fk.set("delay_ms", 200);
    rec_open();
    act_activity_opts o = fast_opts();
    CHECK(act_source_mspti_start(&o) == 0, "start");
    for (int i = 0; i < 200; i++)
        fk.kernel("k", "AI_CORE", 0, (uint32_t)(i % 4), 2000);
    act_source_mspti_stop();
    act_activity_stats st;
    act_source_mspti_stats(&st);
    uint64_t written, dropped, delivered, pending;
    fk.stats(&written, &dropped, &delivered, &pending);
    spool_scan s;
    rec_close(&s);
    CHECK(count_ops(&s, ACT_OP_KERNEL) == 200, "kernels %zu", count_ops(&s, ACT_OP_KERNEL));
    CHECK(st.records == delivered, "source read %llu, fake delivered %llu",
          (unsigned long long)st.records, (unsigned long long)delivered);
    CHECK(st.late == 0 && dropped == 0 && pending == 0, "late %llu dropped %llu pending %llu",
          (unsigned long long)st.late, (unsigned long long)dropped, (unsigned long long)pending);
    printf("drain: %llu polls\n", (unsigned long long)st.drain_polls);
    spool_scan_free(&s);
}

/* Records that arrive after stop are counted, not written. */
static void case_late(void)
{
    fk.set("delay_ms", 150);
    fk.set("late_after_disable", 1);
    rec_open();
    act_activity_opts o = fast_opts();
    CHECK(act_source_mspti_start(&o) == 0, "start");
    for (int i = 0; i < 50; i++)
        fk.kernel("late", "AI_CORE", 0, 0, 1000);
    act_source_mspti_stop(); /* drains ~75 ms: the kernels come at 150 ms */
    sleep_ms(400);
    act_activity_stats st;
    act_source_mspti_stats(&st);
    spool_scan s;
    rec_close(&s);
    CHECK(st.late == 50, "late %llu", (unsigned long long)st.late);
    CHECK(s.hdr.dropped[ACT_REC_DEVICE_OP] >= 50, "spool dropped %llu",
          (unsigned long long)s.hdr.dropped[ACT_REC_DEVICE_OP]);
    CHECK(count_ops(&s, ACT_OP_KERNEL) == 0, "no late kernel written");
    spool_scan_free(&s);
}

/* Activity still arriving at the drain bound: reported, and the bound holds. */
static _Atomic int keep_launching;
static void *launcher(void *arg)
{
    (void)arg;
    while (keep_launching) {
        fk.kernel("busy", "AI_CORE", 0, 1, 1000);
        sleep_ms(2);
    }
    return NULL;
}

static void case_bound(void)
{
    fk.set("delay_ms", 5);
    rec_open();
    act_activity_opts o = fast_opts();
    o.drain_timeout_ms = 120;
    CHECK(act_source_mspti_start(&o) == 0, "start");
    keep_launching = 1;
    pthread_t t;
    pthread_create(&t, NULL, launcher, NULL);
    sleep_ms(30);
    uint64_t t0 = act_clock_now();
    act_source_mspti_stop();
    uint64_t took_ms = (act_clock_now() - t0) / 1000000;
    keep_launching = 0;
    pthread_join(t, NULL);
    act_activity_stats st;
    act_source_mspti_stats(&st);
    spool_scan s;
    rec_close(&s);
    CHECK(st.drain_bound_hit == 1, "bound hit");
    CHECK(took_ms < 2000, "stop bounded (%llu ms)", (unsigned long long)took_ms);
    CHECK(count_errors(&s, "drain of mspti cut off") == 1, "bound reported once");
    CHECK(count_ops(&s, ACT_OP_KERNEL) > 0, "kernels recorded");
    spool_scan_free(&s);
}

/* A refused buffer (pool exhausted) is counted as dropped records. */
static void case_refused(void)
{
    fk.set("delay_ms", 1);
    fk.set("complete_delay_ms", 150); /* buffers come back slowly */
    rec_open();
    act_activity_opts o = {.buffer_size = 4096, .buffer_count = 2, .drain_timeout_ms = 3000};
    CHECK(act_source_mspti_start(&o) == 0, "start");
    for (int i = 0; i < 300; i++)
        fk.kernel("r", "AI_CORE", 0, 0, 1000);
    sleep_ms(50);
    act_source_mspti_stop();
    act_activity_stats st;
    act_source_mspti_stats(&st);
    uint64_t written, dropped, delivered, pending;
    fk.stats(&written, &dropped, &delivered, &pending);
    spool_scan s;
    rec_close(&s);
    CHECK(st.buffers_refused > 0 && st.buffers_refused == dropped,
          "refused %llu, fake dropped %llu", (unsigned long long)st.buffers_refused,
          (unsigned long long)dropped);
    CHECK(s.hdr.dropped[ACT_REC_DEVICE_OP] >= st.buffers_refused, "spool counts the drops");
    CHECK(count_errors(&s, "buffer pool") == 1, "reported once");
    /* Every record is either converted or counted. */
    CHECK(st.records + dropped == written + dropped && written == delivered,
          "written %llu delivered %llu", (unsigned long long)written,
          (unsigned long long)delivered);
    spool_scan_free(&s);
}

static void case_failure(const char *expect_msg, int expect_rc)
{
    rec_open();
    int rc = act_source_mspti_start(NULL);
    CHECK(rc == expect_rc, "start returned %d, expected %d", rc, expect_rc);
    act_source_mspti_stop();
    act_mark("program goes on");
    spool_scan s;
    rec_close(&s);
    CHECK(s.n_errors == 1, "one error record, got %zu", s.n_errors);
    CHECK(count_errors(&s, expect_msg) == 1, "error names the cause: %s",
          s.n_errors ? s.errors[0] : "(none)");
    CHECK(s.n_ops == 0 && s.n_devices == 0, "empty device lane");
    spool_scan_free(&s);
}

/* A record the library cannot iterate past: counted, reported once. */
static void case_unreadable(void)
{
    fk.set("delay_ms", 5);
    rec_open();
    act_activity_opts o = fast_opts();
    CHECK(act_source_mspti_start(&o) == 0, "start");
    fk.kernel("before", "AI_CORE", 0, 0, 1000); /* API record now, kernel soon */
    sleep_ms(30);
    fk.inject_unknown();
    act_source_mspti_stop();
    act_activity_stats st;
    act_source_mspti_stats(&st);
    spool_scan s;
    rec_close(&s);
    CHECK(st.unreadable_buffers == 1, "unreadable %llu", (unsigned long long)st.unreadable_buffers);
    CHECK(count_errors(&s, "unreadable record") == 1, "reported once");
    CHECK(find_op(&s, "before") != NULL, "records before it kept");
    spool_scan_free(&s);
}

/* Probing (opts.optional): a missing library is silent. */
static void case_probe_missing(void)
{
    rec_open();
    act_activity_opts o = {.optional = 1};
    CHECK(act_source_mspti_start(&o) == ACT_E_NOTFOUND, "probe finds nothing");
    spool_scan s;
    rec_close(&s);
    CHECK(s.n_errors == 0 && s.n_ops == 0, "no error record when probing");
    spool_scan_free(&s);
}

/* Two start/stop cycles in one process both collect. */
static void case_cycles(void)
{
    fk.set("delay_ms", 20);
    for (int cycle = 0; cycle < 2; cycle++) {
        rec_open();
        act_activity_opts o = fast_opts();
        CHECK(act_source_mspti_start(&o) == 0, "start %d", cycle);
        for (int i = 0; i < 20; i++)
            fk.kernel(cycle ? "second" : "first", "AI_CORE", 0, 0, 1000);
        wait_device_idle(fk.stats);
        act_source_mspti_stop();
        spool_scan s;
        rec_close(&s);
        CHECK(count_ops(&s, ACT_OP_KERNEL) == 20, "cycle %d kernels %zu", cycle,
              count_ops(&s, ACT_OP_KERNEL));
        CHECK(find_op(&s, cycle ? "second" : "first") != NULL, "cycle %d names", cycle);
        CHECK(s.n_devices == 1, "lanes announced again in cycle %d", cycle);
        spool_scan_free(&s);
    }
}

/* With --capture-range=api the spool starts paused: the source must still
 * start, so that kernels launched once act_start() opens the window are
 * seen. */
static void case_paused(void)
{
    fk.set("delay_ms", 20);
    CHECK(act_capture_configure(1, "", 0, 0) == 0, "configure api capture");
    rec_open();
    CHECK(!act_is_enabled(), "window starts closed");
    act_activity_opts o = fast_opts();
    CHECK(act_source_mspti_start(&o) == 0, "start while paused");
    CHECK(act_start() == 0, "open the window");
    for (int i = 0; i < 5; i++)
        fk.kernel("inside", "AI_CORE", 0, 0, 1000);
    act_stop();
    wait_device_idle(fk.stats);
    act_source_mspti_stop();
    spool_scan s;
    rec_close(&s);
    CHECK(find_op(&s, "inside") != NULL, "kernels launched inside the window recorded");
    CHECK(count_ops(&s, ACT_OP_KERNEL) == 5, "kernels %zu", count_ops(&s, ACT_OP_KERNEL));
    spool_scan_free(&s);
}

/* The whole path: ranges on several threads, launches, then the
 * project's builder and Chrome writer; check_vendor_trace.py validates
 * the JSON (flows, links, lanes). */
static int case_trace(const char *out)
{
    fk.set("delay_ms", 20);
    rec_open();
    act_activity_opts o = fast_opts();
    CHECK(act_source_mspti_start(&o) == 0, "start");
    pthread_t th[LINK_THREADS];
    for (int t = 0; t < LINK_THREADS; t++)
        pthread_create(&th[t], NULL, link_thread, (void *)(intptr_t)t);
    for (int t = 0; t < LINK_THREADS; t++)
        pthread_join(th[t], NULL);
    fk.comm("allreduce", "hccl_world_group", 0, 9, 8000);
    fk.memcpy_(MSPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096, 0, 9, 2000);
    wait_device_idle(fk.stats);
    act_source_mspti_stop();
    snprintf(spool_path, sizeof(spool_path), "%s", act_recorder_path());
    int rc = rec_export(out);
    if (!getenv("VENDOR_TEST_KEEP_SPOOL"))
        unlink(spool_path);
    return failures ? 1 : rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CASE\n", argv[0]);
        return 2;
    }
    const char *c = argv[1];
    if (strcmp(c, "trace") == 0 && argc == 3) {
        fake_open();
        int rc = case_trace(argv[2]);
        rmdir(spool_dir);
        return rc;
    }
    if (strcmp(c, "missing_library") == 0) {
        case_failure("not loadable", ACT_E_NOTFOUND);
        case_probe_missing();
    } else if (strcmp(c, "missing_symbol") == 0) {
        case_failure("msptiActivityFlushAll", ACT_E_NOTFOUND);
    } else {
        fake_open();
        if (strcmp(c, "kinds") == 0)
            case_kinds(1);
        else if (strcmp(c, "kinds_no_callbacks") == 0)
            case_kinds(0);
        else if (strcmp(c, "link") == 0)
            case_link();
        else if (strcmp(c, "drain") == 0)
            case_drain();
        else if (strcmp(c, "late") == 0)
            case_late();
        else if (strcmp(c, "bound") == 0)
            case_bound();
        else if (strcmp(c, "refused") == 0)
            case_refused();
        else if (strcmp(c, "conflict") == 0) {
            fk.set("foreign_subscriber", 1);
            case_failure("another mspti subscriber", ACT_E_CONFLICT);
        } else if (strcmp(c, "cycles") == 0)
            case_cycles();
        else if (strcmp(c, "unreadable") == 0)
            case_unreadable();
        else if (strcmp(c, "paused") == 0)
            case_paused();
        else {
            fprintf(stderr, "unknown case %s\n", c);
            return 2;
        }
    }
    if (!getenv("VENDOR_TEST_KEEP_SPOOL"))
        rmdir(spool_dir);
    else
        printf("spool kept in %s\n", spool_dir);
    if (failures)
        fprintf(stderr, "%s: %d check(s) failed\n", c, failures);
    return failures ? 1 : 0;
}
