/*
 * test_init.c -- staged start-up (init.c), lifecycle and drain
 * (lifecycle.c): stage order, stop-on-failure and its one-line report,
 * queries that never start anything, quiet "no tool attached", a session
 * opened after that, exit handling (reverse order, failures reported, the
 * spool sealed, exit() from a secondary thread) and the drain rules.
 *
 * Start-up is once per process, so every case that runs act_init() runs in
 * a forked child; the child's stderr comes back through a pipe and its
 * checks report through its exit status.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "config.h"
#include "init/hooks.h"
#include "init/init.h"
#include "internal.h"

/* ---- a hook of this program, applied by start-up ------------------------ */

static int n_init_hook, nested_rc = 1;

static int init_hook(void)
{
    n_init_hook++;
    nested_rc = act_init(); /* a hook calling back into start-up */
    return 0;
}
ACT_HOOK("t.init", init_hook, init_hook);

/* ---- child harness ------------------------------------------------------ */

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "CHECK failed at line %d: %s\n", __LINE__, #c);                        \
            _exit(99);                                                                             \
        }                                                                                          \
    } while (0)

extern char **environ;

static void clean_env(void)
{
    for (;;) {
        char name[256] = "";
        for (char **e = environ; *e; e++)
            if (!strncmp(*e, "ACCELTRACE_", 11)) {
                snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
                break;
            }
        if (!name[0])
            return;
        unsetenv(name);
    }
}

/* Run fn(dir) in a child with stderr captured; returns the exit status
 * (or 128+signal). */
static int in_child(void (*fn)(const char *), const char *dir, char *err, size_t len)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        dup2(p[1], 2);
        clean_env();
        fn(dir);
        exit(0);
    }
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < len && (r = read(p[0], err + n, len - 1 - n)) > 0)
        n += (size_t)r;
    err[n] = '\0';
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *make_dir(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/act-init-test-XXXXXX");
    assert_non_null(mkdtemp(buf));
    return buf;
}

/* Number of spool files in `dir` that are complete (magic) and sealed;
 * `total` gets the number of files. */
static int sealed_spools(const char *dir, int *total)
{
    DIR *d = opendir(dir);
    int sealed = 0;
    *total = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        act_spool_header h;
        int fd = open(path, O_RDONLY);
        ssize_t r = fd >= 0 ? read(fd, &h, sizeof(h)) : -1;
        if (fd >= 0)
            close(fd);
        (*total)++;
        if (r == (ssize_t)sizeof(h) && h.magic == ACT_SPOOL_MAGIC && (h.flags & ACT_SPOOL_F_SEALED))
            sealed++;
    }
    if (d)
        closedir(d);
    return sealed;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* ---- queries never start anything (runs first, in this process) ---------- */

static void test_queries_do_not_start(void **state)
{
    (void)state;
    assert_non_null(act_version());
    assert_int_equal(act_is_enabled(), 0);
    assert_non_null(act_strerror(ACT_E_CONFIG));
    assert_int_equal(act_init_state(NULL), ACT_INIT_NONE);
    assert_int_equal(n_init_hook, 0);
}

/* ---- the stage list and the runner ----------------------------------------- */

static void test_stage_list(void **state)
{
    (void)state;
    size_t n;
    const act_stage *st = act_init_stages(&n);
    const char *want[] = {"check conflicts",   "load core", "register sources",
                          "apply hook groups", "lifecycle", "optional features"};
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(st[i].name, want[i]);
}

static char trail[16];
static int st_a(char *why, size_t len)
{
    (void)why, (void)len;
    strcat(trail, "a");
    return 0;
}
static int st_b(char *why, size_t len)
{
    strcat(trail, "b");
    snprintf(why, len, "b broke");
    return ACT_E_IO;
}
static int st_c(char *why, size_t len)
{
    (void)why, (void)len;
    strcat(trail, "c");
    return 0;
}
static int st_off(char *why, size_t len)
{
    (void)why, (void)len;
    strcat(trail, "o");
    return ACT_E_DISABLED;
}
static int st_noreason(char *why, size_t len)
{
    (void)why, (void)len;
    return ACT_E_NOMEM;
}

static void runner_child(const char *dir)
{
    (void)dir;
    const act_stage ok[] = {{"A", st_a}, {"C", st_c}};
    const act_stage bad[] = {{"A", st_a}, {"B", st_b}, {"C", st_c}};
    const act_stage off[] = {{"A", st_a}, {"OFF", st_off}, {"C", st_c}};
    const act_stage noreason[] = {{"N", st_noreason}};
    const char *failed = "x";
    CHECK(act_init_run_stages(ok, 2, &failed) == 0 && failed == NULL && !strcmp(trail, "ac"));
    trail[0] = '\0';
    CHECK(act_init_run_stages(bad, 3, &failed) == ACT_E_IO && !strcmp(failed, "B"));
    CHECK(!strcmp(trail, "ab")); /* C never ran */
    trail[0] = '\0';
    CHECK(act_init_run_stages(off, 3, &failed) == ACT_E_DISABLED && !strcmp(failed, "OFF"));
    CHECK(!strcmp(trail, "ao"));
    CHECK(act_init_run_stages(noreason, 1, &failed) == ACT_E_NOMEM);
}

static void test_runner_order_and_report(void **state)
{
    (void)state;
    char err[4096];
    assert_int_equal(in_child(runner_child, NULL, err, sizeof(err)), 0);
    /* One line per failure; a quiet stop (no tool) says nothing. */
    assert_string_equal(err,
                        "acceltrace: start-up stage 'B' failed: b broke; tracing is off\n"
                        "acceltrace: start-up stage 'N' failed: out of memory; tracing is off\n");
}

/* ---- act_init ----------------------------------------------------------------- */

static void not_attached_child(const char *dir)
{
    (void)dir;
    const char *stage = NULL;
    CHECK(act_init() == ACT_E_DISABLED);
    CHECK(act_init() == ACT_E_DISABLED);
    CHECK(act_init_state(&stage) == ACT_INIT_DISABLED && !strcmp(stage, "load core"));
    CHECK(n_init_hook == 0); /* later stages did not run */
    CHECK(act_is_enabled() == 0);
}

static void test_not_attached_is_quiet(void **state)
{
    (void)state;
    char err[4096];
    assert_int_equal(in_child(not_attached_child, NULL, err, sizeof(err)), 0);
    assert_string_equal(err, "");
}

static void attached_child(const char *dir)
{
    setenv("ACCELTRACE_SPOOL_DIR", dir, 1);
    CHECK(act_init() == 0);
    CHECK(act_init_state(NULL) == ACT_INIT_OK);
    CHECK(act_is_enabled() == 1);
    CHECK(n_init_hook == 1);
    CHECK(nested_rc == ACT_E_STATE); /* no deadlock, no second start-up */
    CHECK(act_init() == 0);
    CHECK(n_init_hook == 1);
    CHECK(act_range_push("work") == 0);
    CHECK(act_range_pop() == 0);
    /* exit(0) from the harness: the exit handler seals the spool. */
}

static void test_attached_start_and_exit_seals(void **state)
{
    (void)state;
    char dir[64], err[4096];
    make_dir(dir, sizeof(dir));
    assert_int_equal(in_child(attached_child, dir, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    int total;
    assert_int_equal(sealed_spools(dir, &total), 1);
    assert_int_equal(total, 1);
    remove_dir(dir);
}

static void invalid_config_child(const char *dir)
{
    setenv("ACCELTRACE_SPOOL_DIR", dir, 1);
    setenv("ACCELTRACE_BUFFER_SIZE", "12", 1);
    const char *stage = NULL;
    CHECK(act_init() == ACT_E_CONFIG);
    CHECK(act_init() == ACT_E_CONFIG); /* reported once */
    CHECK(act_range_push("x") == ACT_E_DISABLED);
    CHECK(act_init_state(&stage) == ACT_INIT_FAILED && !strcmp(stage, "load core"));
    CHECK(n_init_hook == 0);
    CHECK(act_is_enabled() == 0);
}

static void test_invalid_config_reported_once(void **state)
{
    (void)state;
    char dir[64], err[4096], want[1024];
    make_dir(dir, sizeof(dir));
    assert_int_equal(in_child(invalid_config_child, dir, err, sizeof(err)), 0);
    snprintf(want, sizeof(want),
             "acceltrace: start-up stage 'load core' failed: Invalid value for "
             "ACCELTRACE_BUFFER_SIZE: '12'. Allowed: %s; tracing is off\n",
             act_config_allowed("ACCELTRACE_BUFFER_SIZE"));
    assert_string_equal(err, want);
    int total;
    sealed_spools(dir, &total);
    assert_int_equal(total, 0); /* no spool was created */
    remove_dir(dir);
}

static void bad_spool_child(const char *dir)
{
    (void)dir;
    setenv("ACCELTRACE_SPOOL_DIR", "/proc/self/no/such/dir", 1);
    CHECK(act_init() < 0);
    CHECK(act_init_state(NULL) == ACT_INIT_FAILED);
    CHECK(n_init_hook == 0);
}

static void test_unusable_spool_dir(void **state)
{
    (void)state;
    char err[4096];
    assert_int_equal(in_child(bad_spool_child, NULL, err, sizeof(err)), 0);
    assert_non_null(strstr(err, "acceltrace: start-up stage 'load core' failed: cannot open a "
                                "spool in /proc/self/no/such/dir: "));
    assert_non_null(strstr(err, "; tracing is off\n"));
    int lines = 0;
    for (const char *p = err; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 1);
}

static void quiet_child(const char *dir)
{
    (void)dir;
    setenv("ACCELTRACE_LOG", "quiet", 1);
    setenv("ACCELTRACE_SPOOL_DIR", "/proc/self/no/such/dir", 1);
    CHECK(act_init() < 0);
}

static void debug_child(const char *dir)
{
    setenv("ACCELTRACE_LOG", "debug", 1);
    setenv("ACCELTRACE_SPOOL_DIR", dir, 1);
    CHECK(act_init() == 0);
}

/* ACCELTRACE_LOG: quiet silences even a failure; debug adds details. */
static void test_log_levels(void **state)
{
    (void)state;
    char dir[64], err[4096];
    assert_int_equal(in_child(quiet_child, NULL, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    make_dir(dir, sizeof(dir));
    assert_int_equal(in_child(debug_child, dir, err, sizeof(err)), 0);
    assert_non_null(strstr(err, "acceltrace: "));
    assert_non_null(strstr(err, " hooks registered\n"));
    remove_dir(dir);
}

/* A session opening the recorder after start-up found no tool. */
static void session_child(const char *dir)
{
    CHECK(act_init() == ACT_E_DISABLED);
    CHECK(act_recorder_open(dir, 4u << 20, 64u << 10) == 0);
    CHECK(act_init() == 0);
    CHECK(n_init_hook == 1);
    act_lifecycle_stop();
    CHECK(act_recorder_header() == NULL);
    _exit(0);
}

static void test_session_after_disabled(void **state)
{
    (void)state;
    char dir[64], err[4096];
    make_dir(dir, sizeof(dir));
    assert_int_equal(in_child(session_child, dir, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    int total;
    assert_int_equal(sealed_spools(dir, &total), 1);
    remove_dir(dir);
}

/* ---- lifecycle ---------------------------------------------------------------- */

static char stop_trail[16];
static void step_a(void)
{
    strcat(stop_trail, "a");
}
static int step_b(void)
{
    strcat(stop_trail, "b");
    return ACT_E_IO;
}
static void step_c(void)
{
    strcat(stop_trail, "c");
    CHECK(act_recorder_header() != NULL);
}

static void lifecycle_child(const char *dir)
{
    CHECK(act_recorder_open(dir, 4u << 20, 64u << 10) == 0);
    CHECK(act_lifecycle_on_stop("a", step_a) == 0);
    CHECK(act_lifecycle_on_stop_rc("b", step_b) == 0);
    CHECK(act_lifecycle_on_stop("c", step_c) == 0);
    CHECK(act_lifecycle_on_stop("c again", step_c) == 0); /* same function: once */
    CHECK(act_lifecycle_on_stop(NULL, step_a) == ACT_E_INVAL);
    CHECK(act_lifecycle_on_stop("", step_a) == ACT_E_INVAL);
    CHECK(act_lifecycle_on_stop("x", NULL) == ACT_E_INVAL);
    act_lifecycle_stop();
    CHECK(!strcmp(stop_trail, "cba")); /* reverse order; a ran after b failed */
    CHECK(act_recorder_header() == NULL);
    act_lifecycle_stop(); /* idempotent */
    CHECK(!strcmp(stop_trail, "cba"));
    _exit(0);
}

static void test_lifecycle_order_and_failure(void **state)
{
    (void)state;
    char dir[64], err[4096];
    make_dir(dir, sizeof(dir));
    assert_int_equal(in_child(lifecycle_child, dir, err, sizeof(err)), 0);
    assert_string_equal(err, "acceltrace: stop step 'b' failed: input/output error; the remaining "
                             "steps still run\n");
    int total;
    assert_int_equal(sealed_spools(dir, &total), 1);
    remove_dir(dir);
}

/* exit() from a secondary thread while the main thread records. */
static void *exiter(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
    act_mark("exiting");
    exit(7);
}

static void exit_thread_child(const char *dir)
{
    setenv("ACCELTRACE_SPOOL_DIR", dir, 1);
    CHECK(act_init() == 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, exiter, NULL) == 0);
    for (;;) {
        act_range_push("busy");
        act_range_pop();
    }
}

static void test_exit_from_secondary_thread(void **state)
{
    (void)state;
    char dir[64], err[4096];
    make_dir(dir, sizeof(dir));
    assert_int_equal(in_child(exit_thread_child, dir, err, sizeof(err)), 7);
    assert_string_equal(err, "");
    int total;
    assert_int_equal(sealed_spools(dir, &total), 1);
    assert_int_equal(total, 1);
    remove_dir(dir);
}

/* ---- drain -------------------------------------------------------------------- */

typedef struct fake_dev {
    const int64_t *script; /* items per poll, then 0 */
    int n, i;
    int64_t outstanding; /* reported as is (-1 = unknown) */
} fake_dev;

static int64_t fake_poll(void *arg, int64_t *outstanding)
{
    fake_dev *d = arg;
    *outstanding = d->outstanding;
    return d->i < d->n ? d->script[d->i++] : 0;
}

static int64_t endless_poll(void *arg, int64_t *outstanding)
{
    (void)arg;
    *outstanding = 5;
    return 1;
}

static int64_t failing_poll(void *arg, int64_t *outstanding)
{
    (void)arg;
    (void)outstanding;
    return ACT_E_IO;
}

static void test_drain_three_quiet_polls(void **state)
{
    (void)state;
    const int64_t script[] = {2, 0, 1, 0, 0, 0};
    fake_dev d = {script, 6, 0, -1};
    act_drain_result r;
    assert_int_equal(act_drain("fake", fake_poll, &d, 10000, &r), 0);
    /* the quiet run after "2" is broken by "1": 2,0,1,0,0,0 = six polls */
    assert_int_equal(r.polls, 6);
    assert_int_equal(r.items, 3);
    assert_int_equal(r.cut_off, 0);
    assert_true(r.elapsed_ns >= 5ull * 25 * 1000000); /* five waits of 25 ms between polls */
}

static void test_drain_nothing_outstanding(void **state)
{
    (void)state;
    const int64_t script[] = {4};
    fake_dev d = {script, 1, 0, 0};
    act_drain_result r;
    assert_int_equal(act_drain("fake", fake_poll, &d, 10000, &r), 0);
    assert_int_equal(r.polls, 1);
    assert_int_equal(r.items, 4);
}

static void test_drain_cut_off_counted(void **state)
{
    (void)state;
    uint64_t before = act_drain_cutoffs();
    act_drain_result r;
    assert_int_equal(act_drain("endless", endless_poll, NULL, 100, &r), 1);
    assert_int_equal(r.cut_off, 1);
    assert_int_equal(r.outstanding, 5);
    assert_true(r.elapsed_ns >= 100ull * 1000000);
    /* Waits are at least 25 ms, so at most 100/25 + 1 polls (+1 slack); a
     * loaded machine oversleeps, so only "polled again after a wait" is a
     * lower bound that cannot flake. */
    assert_true(r.polls >= 2 && r.polls <= 6);
    assert_int_equal(act_drain_cutoffs(), before + 1);
    /* The configured bound (ACCELTRACE_DRAIN_TIMEOUT) applies on request. */
    act_cfg.drain_timeout_ms = 0;
    assert_int_equal(act_drain("endless", endless_poll, NULL, ACT_DRAIN_CONFIGURED, &r), 1);
    assert_int_equal(r.polls, 1);
    assert_int_equal(act_drain_cutoffs(), before + 2);
}

static void test_drain_errors(void **state)
{
    (void)state;
    act_drain_result r;
    assert_int_equal(act_drain("bad", failing_poll, NULL, 1000, &r), ACT_E_IO);
    assert_int_equal(r.polls, 1);
    assert_int_equal(act_drain(NULL, fake_poll, NULL, 1000, &r), ACT_E_INVAL);
    assert_int_equal(act_drain("x", NULL, NULL, 1000, &r), ACT_E_INVAL);
}

int main(void)
{
    clean_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queries_do_not_start),
        cmocka_unit_test(test_stage_list),
        cmocka_unit_test(test_runner_order_and_report),
        cmocka_unit_test(test_not_attached_is_quiet),
        cmocka_unit_test(test_attached_start_and_exit_seals),
        cmocka_unit_test(test_invalid_config_reported_once),
        cmocka_unit_test(test_unusable_spool_dir),
        cmocka_unit_test(test_session_after_disabled),
        cmocka_unit_test(test_log_levels),
        cmocka_unit_test(test_lifecycle_order_and_failure),
        cmocka_unit_test(test_exit_from_secondary_thread),
        cmocka_unit_test(test_drain_three_quiet_polls),
        cmocka_unit_test(test_drain_nothing_outstanding),
        cmocka_unit_test(test_drain_cut_off_counted),
        cmocka_unit_test(test_drain_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
