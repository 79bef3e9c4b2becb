/*
 * test_cupti.c -- the CUPTI source against the fake libcupti (compiled
 * with the real cupti.h), one case per run (argv[1]). The fake is loaded
 * by the source through its ordinary dlopen path (ACCELTRACE_CUPTI_LIB);
 * the test opens the same file for the fake-only launch functions.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>

#include "sources/activity/activity.h"
#include "vendor_test.h"

static struct {
    void (*set)(const char *, long);
    void (*stats)(uint64_t *, uint64_t *, uint64_t *, uint64_t *);
    uint32_t (*kernel)(const char *, uint32_t, uint32_t, uint64_t, int32_t, int32_t);
    uint32_t (*cu_kernel)(const char *, uint32_t, uint32_t, uint64_t);
    uint32_t (*memcpy_)(uint8_t, uint64_t, uint32_t, uint32_t, uint64_t);
    uint32_t (*memset_)(uint64_t, uint32_t, uint32_t, uint64_t);
    void (*sync)(uint32_t, uint32_t);
} fk;

static void fake_open(void)
{
    const char *lib = getenv("ACCELTRACE_CUPTI_LIB");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) {
        fprintf(stderr, "cannot open the fake cupti (%s)\n",
                lib ? lib : "ACCELTRACE_CUPTI_LIB unset");
        exit(2);
    }
    *(void **)&fk.set = dlsym(h, "fake_cupti_set");
    *(void **)&fk.stats = dlsym(h, "fake_cupti_stats");
    *(void **)&fk.kernel = dlsym(h, "fake_cuda_launch_kernel");
    *(void **)&fk.cu_kernel = dlsym(h, "fake_cu_launch_kernel");
    *(void **)&fk.memcpy_ = dlsym(h, "fake_cuda_memcpy");
    *(void **)&fk.memset_ = dlsym(h, "fake_cuda_memset");
    *(void **)&fk.sync = dlsym(h, "fake_cuda_stream_sync");
    if (!fk.set || !fk.kernel || !fk.sync) {
        fprintf(stderr, "fake cupti lacks its test entry points\n");
        exit(2);
    }
}

static act_activity_opts fast_opts(void)
{
    act_activity_opts o = {.buffer_size = 64 << 10, .buffer_count = 8, .drain_timeout_ms = 3000};
    return o;
}

static void case_kinds(int callbacks)
{
    fk.set("delay_ms", 20);
    fk.set("no_callbacks", !callbacks);
    rec_open();
    act_activity_opts o = fast_opts();
    uint64_t t_before = act_clock_now();
    CHECK(act_source_cupti_start(&o) == 0, "start");
    act_range_push("step");
    fk.kernel("_Z4saxpyifPfS_", 0, 7, 5000, 256, 128);
    fk.cu_kernel("driver_kernel", 1, 2, 3000);
    act_range_pop();
    fk.memcpy_(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, 0, 7, 4000);
    fk.memcpy_(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 1 << 20, 0, 7, 4000);
    fk.memcpy_(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 4096, 0, 7, 1000);
    fk.memset_(4096, 0, 7, 1000);
    fk.sync(0, 7);
    wait_device_idle(fk.stats);
    act_source_cupti_stop();
    uint64_t t_after = act_clock_now();
    act_activity_stats st;
    act_source_cupti_stats(&st);
    spool_scan s;
    rec_close(&s);

    CHECK(count_ops(&s, ACT_OP_KERNEL) == 2, "kernels %zu", count_ops(&s, ACT_OP_KERNEL));
    const scan_op *k = find_op(&s, "_Z4saxpyifPfS_");
    CHECK(k && k->r.source == ACT_SOURCE_CUPTI && k->detail && strcmp(k->detail, "regular") == 0,
          "kernel type");
    CHECK(k && k->r.gsize[0] == 256 * 128 && k->r.lsize[0] == 128, "grid/block");
    /* CUPTI stamped with our clock through the timestamp callback. */
    CHECK(k && k->r.start > t_before && k->r.end < t_after, "kernel on the timeline");
    CHECK(count_ops(&s, ACT_OP_MEMCPY_HTOD) == 1 && count_ops(&s, ACT_OP_MEMCPY_DTOH) == 1 &&
              count_ops(&s, ACT_OP_MEMCPY_DTOD) == 1,
          "memcpy kinds");
    CHECK(count_ops(&s, ACT_OP_MEMSET) == 1, "memset");
    const scan_op *sy = find_op(&s, "Stream Sync");
    CHECK(sy && sy->r.op == ACT_OP_SYNC, "synchronization");
    CHECK(s.n_devices == 2, "devices %zu", s.n_devices);
    CHECK(s.n_clocks == 2, "clock records %zu", s.n_clocks);
    /* A source records, it formats no output: the "cupti_clock" object is
     * the builder's, derived from the clock records (check_vendor_trace). */
    CHECK(!spool_scan_metadata(&s, "cupti_clock"), "the source wrote the clock metadata itself");
    CHECK(s.n_errors == 0, "errors %zu (%s)", s.n_errors, s.n_errors ? s.errors[0] : "");
    /* Host slices: the 7 outermost calls (the nested driver call of a
     * runtime launch is not a second slice). */
    CHECK(s.n_apis == 7, "api slices %zu", s.n_apis);
    if (callbacks) {
        const scan_api *l = k ? spool_scan_launch_of(&s, k) : NULL;
        CHECK(l && l->name && strcmp(l->name, "cudaLaunchKernel") == 0,
              "kernel -> cudaLaunchKernel");
        const char *r = l ? spool_scan_range_name(&s, l->r.ext) : NULL;
        CHECK(r && strcmp(r, "step") == 0, "launch in range");
        const scan_op *dk = find_op(&s, "driver_kernel");
        const scan_api *dl = dk ? spool_scan_launch_of(&s, dk) : NULL;
        CHECK(dl && dl->name && strcmp(dl->name, "cuLaunchKernel") == 0, "driver launch");
        /* CUPTI's own records for the ids we pushed (2 launches in the
         * range), agreeing with the launch slices. */
        CHECK(s.n_ext == 2, "extcorr %zu", s.n_ext);
        for (size_t i = 0; i < s.n_ext; i++) {
            const char *rn = spool_scan_range_name(&s, s.ext[i].ext);
            CHECK(rn && strcmp(rn, "step") == 0, "ext %zu -> step", i);
        }
        CHECK(st.api_superseded == 7, "superseded %llu", (unsigned long long)st.api_superseded);
    } else {
        CHECK(st.callbacks == 0 && s.n_ext == 0, "degraded mode");
        CHECK(s.n_apis == 7 && s.apis[0].name && strstr(s.apis[0].name, "cbid"),
              "activity API records");
    }
    spool_scan_free(&s);
}

#define LINK_THREADS 4
#define LINK_KERNELS 250

static void *link_thread(void *arg)
{
    int t = (int)(intptr_t)arg;
    char name[32];
    for (int i = 0; i < LINK_KERNELS; i++) {
        snprintf(name, sizeof(name), "t%d.r%d", t, i % 10);
        act_range_push(name);
        fk.kernel(name, 0, (uint32_t)t, 1000, 1, 32);
        act_range_pop();
    }
    return NULL;
}

static void case_link(void)
{
    fk.set("delay_ms", 30);
    fk.set("corr_wrap", 500);
    rec_open();
    act_activity_opts o = fast_opts();
    CHECK(act_source_cupti_start(&o) == 0, "start");
    pthread_t th[LINK_THREADS];
    for (int t = 0; t < LINK_THREADS; t++)
        pthread_create(&th[t], NULL, link_thread, (void *)(intptr_t)t);
    for (int t = 0; t < LINK_THREADS; t++)
        pthread_join(th[t], NULL);
    wait_device_idle(fk.stats);
    act_source_cupti_stop();
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
    printf("link: %zu kernels, %zu linked, %zu wrong, %zu unlinked\n", kernels, linked, wrong,
           kernels - linked - wrong);
    CHECK(kernels == total, "kernels %zu", kernels);
    CHECK(linked * 100 >= total * 99, "linked %zu of %zu", linked, total);
    /* Correlation ids wrap every 500 launches here (as vendor ids repeat):
     * when a stream is backed up, a later launch with the same id can
     * precede a kernel's start, and the time join then picks it. That is
     * the residue the issue allows ("the rest counted"); keep it rare. */
    CHECK(wrong * 100 <= total, "mislinked %zu of %zu", wrong, total);
    CHECK(backwards == 0, "backwards %zu", backwards);
    spool_scan_free(&s);
}

static void case_drain(void)
{
    fk.set("delay_ms", 200);
    rec_open();
    act_activity_opts o = fast_opts();
    CHECK(act_source_cupti_start(&o) == 0, "start");
    for (int i = 0; i < 200; i++)
        fk.kernel("k", 0, (uint32_t)(i % 4), 2000, 1, 1);
    /* CUPTI's device pipeline is not flushed by Disable: wait out the
     * delay as a synchronising program would (cudaDeviceSynchronize). */
    sleep_ms(250);
    act_source_cupti_stop();
    act_activity_stats st;
    act_source_cupti_stats(&st);
    uint64_t written, dropped, delivered, pending;
    fk.stats(&written, &dropped, &delivered, &pending);
    spool_scan s;
    rec_close(&s);
    CHECK(count_ops(&s, ACT_OP_KERNEL) == 200, "kernels %zu", count_ops(&s, ACT_OP_KERNEL));
    CHECK(st.records == delivered && st.late == 0 && dropped == 0,
          "read %llu delivered %llu late %llu", (unsigned long long)st.records,
          (unsigned long long)delivered, (unsigned long long)st.late);
    spool_scan_free(&s);
}

static void case_vendor_dropped(void)
{
    fk.set("delay_ms", 5);
    fk.set("drop_records", 5);
    rec_open();
    act_activity_opts o = fast_opts();
    CHECK(act_source_cupti_start(&o) == 0, "start");
    for (int i = 0; i < 20; i++)
        fk.kernel("d", 0, 0, 1000, 1, 1);
    sleep_ms(30);
    act_source_cupti_stop();
    act_activity_stats st;
    act_source_cupti_stats(&st);
    spool_scan s;
    rec_close(&s);
    CHECK(st.vendor_dropped == 5, "vendor dropped %llu", (unsigned long long)st.vendor_dropped);
    CHECK(count_ops(&s, ACT_OP_KERNEL) == 15, "kernels %zu", count_ops(&s, ACT_OP_KERNEL));
    CHECK(s.hdr.dropped[ACT_REC_DEVICE_OP] >= 5, "spool counts them");
    CHECK(count_errors(&s, "dropped by the vendor") == 1, "reported once");
    spool_scan_free(&s);
}

static void case_failure(const char *expect_msg, int expect_rc)
{
    rec_open();
    int rc = act_source_cupti_start(NULL);
    CHECK(rc == expect_rc, "start returned %d, expected %d", rc, expect_rc);
    act_source_cupti_stop();
    spool_scan s;
    rec_close(&s);
    CHECK(s.n_errors == 1 && count_errors(&s, expect_msg) == 1, "one error naming the cause: %s",
          s.n_errors ? s.errors[0] : "(none)");
    CHECK(s.n_ops == 0 && s.n_devices == 0, "empty device lane");
    spool_scan_free(&s);
}

static void case_cycles(void)
{
    fk.set("delay_ms", 10);
    for (int cycle = 0; cycle < 2; cycle++) {
        rec_open();
        act_activity_opts o = fast_opts();
        CHECK(act_source_cupti_start(&o) == 0, "start %d", cycle);
        for (int i = 0; i < 20; i++)
            fk.kernel(cycle ? "second" : "first", 0, 0, 1000, 1, 1);
        sleep_ms(20);
        wait_device_idle(fk.stats);
        act_source_cupti_stop();
        spool_scan s;
        rec_close(&s);
        CHECK(count_ops(&s, ACT_OP_KERNEL) == 20 && find_op(&s, cycle ? "second" : "first"),
              "cycle %d: %zu kernels", cycle, count_ops(&s, ACT_OP_KERNEL));
        spool_scan_free(&s);
    }
}

/* The real libcupti of the toolkit (no fake). With a GPU it collects;
 * without one (build machines) cuptiSubscribe fails: one error record,
 * an empty lane, a stop that returns -- never a crash or a hang. */
static void case_real_library(void)
{
    rec_open();
    act_activity_opts o = fast_opts();
    int rc = act_source_cupti_start(&o);
    act_source_cupti_stop();
    spool_scan s;
    rec_close(&s);
    printf("real libcupti: start %d, %zu errors%s%s\n", rc, s.n_errors, s.n_errors ? ": " : "",
           s.n_errors ? s.errors[0] : "");
    if (rc == 0)
        CHECK(s.n_errors == 0 && s.n_clocks == 2, "a working CUPTI: clean start/stop");
    else
        CHECK(s.n_errors == 1 && s.n_ops == 0, "a refusing CUPTI: one error, empty lane");
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
    CHECK(act_source_cupti_start(&o) == 0, "start");
    pthread_t th[LINK_THREADS];
    for (int t = 0; t < LINK_THREADS; t++)
        pthread_create(&th[t], NULL, link_thread, (void *)(intptr_t)t);
    for (int t = 0; t < LINK_THREADS; t++)
        pthread_join(th[t], NULL);
    fk.memcpy_(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096, 0, 9, 2000);
    fk.sync(0, 9);
    wait_device_idle(fk.stats);
    act_source_cupti_stop();
    snprintf(spool_path, sizeof(spool_path), "%s", act_recorder_path());
    int rc = rec_export(out);
    if (!getenv("VENDOR_TEST_KEEP_SPOOL"))
        unlink(spool_path);
    return failures ? 1 : rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *c = argv[1];
    if (strcmp(c, "trace") == 0 && argc == 3) {
        fake_open();
        int rc = case_trace(argv[2]);
        rmdir(spool_dir);
        return rc;
    }
    if (strcmp(c, "missing_library") == 0)
        case_failure("not loadable", ACT_E_NOTFOUND);
    else if (strcmp(c, "missing_symbol") == 0)
        case_failure("cuptiActivityFlushAll", ACT_E_NOTFOUND);
    else if (strcmp(c, "real_library") == 0)
        case_real_library();
    else {
        fake_open();
        if (strcmp(c, "kinds") == 0)
            case_kinds(1);
        else if (strcmp(c, "kinds_no_callbacks") == 0)
            case_kinds(0);
        else if (strcmp(c, "link") == 0)
            case_link();
        else if (strcmp(c, "drain") == 0)
            case_drain();
        else if (strcmp(c, "vendor_dropped") == 0)
            case_vendor_dropped();
        else if (strcmp(c, "conflict") == 0) {
            fk.set("foreign_subscriber", 1);
            case_failure("another CUPTI subscriber", ACT_E_CONFLICT);
        } else if (strcmp(c, "version_mismatch") == 0) {
            fk.set("version", 130400); /* 13.4: Kernel13, Memcpy7, Memset5 */
            case_failure("does not match the record layouts", ACT_E_UNSUPPORTED);
        } else if (strcmp(c, "cycles") == 0)
            case_cycles();
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
