/*
 * vendor_test.h -- helpers shared by the vendor-source test programs
 * (test_mspti.c, test_cupti.c): a CHECK macro that counts failures, a
 * recorder opened on a private spool directory and read back with
 * spool_scan, and small queries over the scanned records.
 */
#ifndef VENDOR_TEST_H
#define VENDOR_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acceltrace.h"
#include "api/export.h"
#include "internal.h"
#include "spool_scan.h"

static int failures;
static char spool_dir[256];
static char spool_path[4096];
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static inline void rec_open(void)
{
    snprintf(spool_dir, sizeof(spool_dir), "/tmp/act-vendor-XXXXXX");
    if (!mkdtemp(spool_dir)) {
        perror("mkdtemp");
        exit(2);
    }
    int rc = act_recorder_open(spool_dir, 64ull << 20, 1u << 20);
    if (rc != 0) {
        fprintf(stderr, "recorder open: %d\n", rc);
        exit(2);
    }
}

static inline void rec_close(spool_scan *s)
{
    snprintf(spool_path, sizeof(spool_path), "%s", act_recorder_path());
    act_recorder_close();
    if (spool_scan_read(spool_path, s) != 0)
        exit(2);
    if (!getenv("VENDOR_TEST_KEEP_SPOOL")) { /* set it to inspect the spool afterwards */
        unlink(spool_path);
        rmdir(spool_dir); /* every cycle has its own directory */
    }
}

static inline void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Tests that are not about the drain wait until the fake "device" has
 * produced every record before stopping, so a loaded machine (a delivery
 * thread starved past the drain's quiet period) cannot make them flaky.
 * `stats` is the fake's fake_<vendor>_stats. Bounded: 10 s. */
static inline void wait_device_idle(void (*stats)(uint64_t *, uint64_t *, uint64_t *, uint64_t *))
{
    for (int i = 0; i < 1000; i++) {
        uint64_t written, dropped, delivered, pending;
        stats(&written, &dropped, &delivered, &pending);
        if (pending == 0)
            return;
        sleep_ms(10);
    }
}

static inline size_t count_ops(const spool_scan *s, int op)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_ops; i++)
        n += s->ops[i].r.op == op;
    return n;
}

static inline const scan_op *find_op(const spool_scan *s, const char *name)
{
    for (size_t i = 0; i < s->n_ops; i++)
        if (s->ops[i].name && strcmp(s->ops[i].name, name) == 0)
            return &s->ops[i];
    return NULL;
}

static inline size_t count_errors(const spool_scan *s, const char *needle)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_errors; i++)
        n += s->errors[i] && strstr(s->errors[i], needle) != NULL;
    return n;
}

/* Close the recorder and write the Chrome trace of the spool to `out`
 * with the project's exporter. Returns the test's exit code: 77 (CTest
 * "skipped") while this build has no timeline builder yet, 1 when CI is
 * set. */
static inline int rec_export(const char *out)
{
    act_recorder_close();
    act_export_opts o = {.spool_dir = spool_dir, .out_path = out, .force = 1, .child_status = -1};
    int rc = act_trace_export(&o);
    if (rc == ACT_E_UNSUPPORTED) { /* under CI a missing part fails */
        fprintf(stderr, "no timeline builder in this build: %s\n",
                getenv("CI") ? "FAIL (CI)" : "skipped");
        return getenv("CI") ? 1 : 77;
    }
    if (rc != 0)
        fprintf(stderr, "export failed: %d\n", rc);
    return rc == 0 ? 0 : 1;
}

#endif
