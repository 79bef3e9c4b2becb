/*
 * test_summary.c -- the summary table: numbers on constructed slices
 * (count, total, mean, min, max, busy share with overlaps merged per
 * lane, sorting by total), device time by range, and reading traces:
 * acceltrace's object form, torch.profiler's bare array, and files that
 * are missing, empty, truncated or not JSON. The reorder window starts
 * small for the builder's timelines and grows where a lane's slices come
 * out of order (test_window_grows). The ranges' External ids are kept as
 * runs of consecutive ids of one name (test_range_runs), and what the
 * summary holds does not grow with a run's launches (test_memory_flat).
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "summary_load.h"
#include "writers/summary.h"
#include "writers/summary_impl.h"
#include "writers/summary_rows.h"

/* The buffer lives in a heap cell, not in a local whose address the
 * stream keeps (gcc 12 -O3 would call the result a dangling pointer). */
static char *print(act_summary *s, int by_range)
{
    struct membuf {
        char *out;
        size_t len;
    } *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    FILE *f = open_memstream(&m->out, &m->len);
    act_summary_fmt fmt = {.by_range = by_range, .unit = ACT_SUM_US, .width = 120};
    act_summary_print_fmt(s, f, &fmt);
    fclose(f);
    char *out = m->out;
    free(m);
    return out;
}

/* Whether `row` (up to its newline) holds `want`, runs of blanks alike. */
static int row_has(const char *row, const char *want)
{
    char buf[512];
    size_t o = 0;
    for (const char *p = row; *p && *p != '\n' && o + 1 < sizeof(buf); p++)
        if (*p != ' ' || (o && buf[o - 1] != ' '))
            buf[o++] = *p;
    buf[o] = '\0';
    return strstr(buf, want) != NULL;
}

/* The row of `name` in the table starting at `title`. */
static const char *row_of(const char *out, const char *title, const char *name)
{
    const char *t = strstr(out, title);
    assert_non_null(t);
    char pat[64];
    snprintf(pat, sizeof(pat), "\n  %s ", name);
    const char *r = strstr(t, pat);
    assert_non_null(r);
    return r + 1;
}

/* A name cut to its column keeps a parenthesised end whole: kernels of
 * different programs differ only there ("(program 24)"), which the cut
 * made "...ogram 24)". */
static void test_fit_keeps_a_parenthesised_end(void **state)
{
    (void)state;
    char a[] = "winconv_3x3_bwd_filter (program 24)";
    act_sum_fit(a, 28);
    assert_string_equal(a, "winconv_3x3_b...(program 24)");
    char b[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    act_sum_fit(b, 28);
    assert_string_equal(b, "abcdefghijklmnop...123456789"); /* no suffix: as before */
    char c[] = "name (a parenthesis far too long to keep whole here)";
    act_sum_fit(c, 28);
    assert_int_equal(strlen(c), 28);
    char d[] = "short (program 1)";
    act_sum_fit(d, 28);
    assert_string_equal(d, "short (program 1)");
}

static void test_numbers(void **state)
{
    (void)state;
    act_summary *s = act_summary_new();
    /* Device lane 1: k1 at [0,10) [5,25) [100,130); lane 2: k2 [0,40). */
    act_summary_add_range(s, 5, "step", 4);
    act_summary_add_slice(s, "k1", 2, 1, 0, 1, 0, 10, 5);
    act_summary_add_slice(s, "k1", 2, 1, 0, 1, 5, 20, 5);
    act_summary_add_slice(s, "k1", 2, 1, 0, 1, 100, 30, 0);
    act_summary_add_slice(s, "k2", 2, 1, 0, 2, 0, 40, 0);
    /* Host: a range with a nested call. */
    act_summary_add_slice(s, "step", 4, 0, 0, 9, 0, 100, 5);
    act_summary_add_slice(s, "launch", 6, 0, 0, 9, 10, 2, 0);
    char *out = print(s, 1);
    /* busy device = 25 + 30 + 40 = 95; k1 share 60/95 = 63.2% */
    assert_non_null(strstr(out, "Device ops: 2 names, busy 95.000 us on 2 lanes"));
    const char *k1 = row_of(out, "Device ops", "k1");
    assert_true(row_has(k1, "3 60.000 20.000 10.000 30.000 63.2%"));
    assert_true(k1 < row_of(out, "Device ops", "k2")); /* sorted by total */
    /* Host busy = union of nested slices = 100. */
    assert_non_null(strstr(out, "Host calls: 2 names, busy 100.000 us on 1 lane"));
    const char *launch = row_of(out, "Host calls", "launch");
    assert_true(row_has(launch, "1 2.000 2.000 2.000 2.000 2.000 2.0%"));
    /* step: 100 total, 98 self (the nested launch is not its own time) */
    assert_true(row_has(row_of(out, "Host calls", "step"), "1 100.000 98.000 100.000"));
    /* By range: 30 us of k1 launched in "step", the rest in no range. */
    assert_true(row_has(row_of(out, "Device time by launching range", "step"), "2 30.000"));
    assert_true(row_has(row_of(out, "Device time by launching range", "(no range)"), "2 70.000"));
    assert_non_null(strstr(out, "Counters: none in this trace"));
    free(out);
    act_summary_free(s);
}

/* Steps of a lane written in post-order (a torch trace writes a step's
 * slice after its children): CHILDREN children, then the step enclosing
 * them. A window of 1 024 slices cannot hold a step's children until the
 * step comes: the first step is late (said in a note); the window then
 * holds twice what came between, and the later steps are exact. */
#define STEPS_N  3
#define CHILDREN 5000

static void post_order_steps(act_summary *s)
{
    for (int k = 0; k < STEPS_N; k++) {
        double base = k * 100000.0;
        for (int i = 0; i < CHILDREN; i++)
            act_summary_add_slice(s, "op", 2, 0, 1, 1, base + 10.0 * i + 1, 5, 0);
        act_summary_add_slice(s, "step", 4, 0, 1, 1, base, 10.0 * CHILDREN + 10, 0);
    }
}

static void test_window_grows(void **state)
{
    (void)state;
    act_summary *s = act_summary_new();
    act_summary_window(s, 1024);
    post_order_steps(s);
    char *out = print(s, 0);
    assert_non_null(strstr(out, "note: 1 slices came after later ones on their lane"));
    free(out);
    act_summary_free(s);
    /* The default window (a trace file of any origin) holds them all:
     * exact from the first step, and the same figures. */
    s = act_summary_new();
    post_order_steps(s);
    out = print(s, 0);
    assert_null(strstr(out, "came after later ones"));
    /* self time of a step: 50 010 - 5 000 x 5 = 25 010 us each */
    assert_true(row_has(row_of(out, "Host calls", "step"), "3 150,030.000 75,030.000"));
    free(out);
    act_summary_free(s);
}

static char *write_tmp(const char *content, size_t len)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/act_sum_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    if (len)
        assert_int_equal(write(fd, content, len), (ssize_t)len);
    close(fd);
    return path;
}

static int load(const char *content, char *err, size_t errlen, char **out)
{
    char *path = write_tmp(content, strlen(content));
    act_summary *s = act_summary_new();
    int rc = act_summary_load_json(s, path, err, errlen, NULL, NULL);
    if (!rc && out)
        *out = print(s, 1);
    act_summary_free(s);
    unlink(path);
    return rc;
}

static void test_bad_files(void **state)
{
    (void)state;
    char err[512];
    act_summary *s = act_summary_new();
    assert_int_equal(act_summary_load_json(s, "/nonexistent/t.json", err, sizeof(err), NULL, NULL),
                     ACT_E_IO);
    assert_non_null(strstr(err, "No such file"));
    assert_int_equal(act_summary_load_json(s, "/tmp", err, sizeof(err), NULL, NULL), ACT_E_IO);
    act_summary_free(s);
    assert_int_equal(load("", err, sizeof(err), NULL), ACT_E_FORMAT);
    assert_non_null(strstr(err, "empty"));
    assert_int_equal(load("{\"traceEvents\":[{\"ph\":\"X\"", err, sizeof(err), NULL), ACT_E_FORMAT);
    assert_non_null(strstr(err, "not valid JSON"));
    assert_null(strchr(err, '\n'));
    assert_int_equal(load("hello", err, sizeof(err), NULL), ACT_E_FORMAT);
    assert_int_equal(load("{\"a\": 1}", err, sizeof(err), NULL), ACT_E_FORMAT);
    assert_non_null(strstr(err, "traceEvents"));
    assert_int_equal(load("42", err, sizeof(err), NULL), ACT_E_FORMAT);
}

static void test_torch_bare_array(void **state)
{
    (void)state;
    char err[512];
    char *out = NULL;
    const char *trace =
        "[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,"
        "\"ts\":10,\"dur\":50,\"args\":{\"External id\":3}},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
        "\"tid\":1,\"ts\":12,\"dur\":4,\"args\":{\"External id\":3,\"correlation\":9}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":\"stream 7\","
        "\"ts\":20.5,\"dur\":100.25,\"args\":{\"External id\":3,\"correlation\":9}},"
        "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":\"ignored\",\"pid\":0,"
        "\"tid\":7,\"ts\":20,\"dur\":200},"
        "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":9,\"pid\":1,\"tid\":1,\"ts\":12},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"bad dur\",\"ts\":1},"
        "\"junk\", 7]";
    assert_int_equal(load(trace, err, sizeof(err), &out), 0);
    assert_non_null(strstr(out, "Device ops: 1 names"));
    assert_true(row_has(row_of(out, "Device ops", "gemm"), "1 100.250"));
    assert_non_null(strstr(out, "Host calls: 2 names"));
    assert_null(strstr(out, "ignored"));
    assert_non_null(strstr(strstr(out, "Device time by launching range"), "aten::mm"));
    free(out);
}

static void test_acceltrace_counters(void **state)
{
    (void)state;
    char err[512];
    char *out = NULL;
    const char *trace = "{\"traceEvents\":[],\"acceltrace\":{\"dropped\":{\"api\":3,\"mark\":1},"
                        "\"callbacks\":{\"pending\":2,\"lost\":1},"
                        "\"skew\":{\"device_before_launch\":4,\"max_ns\":1500},"
                        "\"truncated_processes\":[77],\"errors\":[\"x\"]}}";
    assert_int_equal(load(trace, err, sizeof(err), &out), 0);
    assert_non_null(strstr(out, "dropped records                    4 (api 3, mark 1)"));
    assert_non_null(strstr(out, "2 pending, 1 lost"));
    assert_non_null(strstr(out, "4 (max 1.500 us)"));
    assert_non_null(strstr(out, "1 (pid 77)"));
    assert_non_null(strstr(out, "errors                             1\n    x\n"));
    free(out);
}

/* Every counter of the trace's one counters table (act_tl_counters) is in
 * the summary, under its label, read from the trace by its key. */
static void test_every_table_counter_is_summarised(void **state)
{
    (void)state;
    char trace[4096], err[512];
    char *out = NULL;
    int n = snprintf(trace, sizeof(trace), "{\"traceEvents\":[],\"acceltrace\":{");
    for (size_t i = 0; i < act_tl_n_counters; i++)
        n += snprintf(trace + n, sizeof(trace) - (size_t)n, "%s\"%s\":%zu", i ? "," : "",
                      act_tl_counters[i].key, 101 + i);
    snprintf(trace + n, sizeof(trace) - (size_t)n, ",\"invalid_utf8\":99}}");
    assert_int_equal(load(trace, err, sizeof(err), &out), 0);
    for (size_t i = 0; i < act_tl_n_counters; i++) {
        char line[128];
        snprintf(line, sizeof(line), "  %-34s %zu\n", act_tl_counters[i].label, 101 + i);
        if (!strstr(out, line))
            fail_msg("no line '%s' in\n%s", line, out);
    }
    assert_non_null(strstr(out, "invalid UTF-8 sequences replaced   99\n"));
    free(out);
}

/* Nothing lost or wrong: one line says so, with what the informative
 * counters count, and no counter of 0 is listed. */
static void test_all_clean(void **state)
{
    (void)state;
    char err[512];
    char *out = NULL;
    const char *trace = "{\"traceEvents\":[],\"acceltrace\":{\"dropped\":{\"api\":0},"
                        "\"callbacks\":{\"pending\":0,\"lost\":0},\"flows\":12345,"
                        "\"unbalanced_pops\":0,\"invalid_utf8\":0,\"errors\":[]}}";
    assert_int_equal(load(trace, err, sizeof(err), &out), 0);
    assert_non_null(strstr(out, "Counters: all clean (12345 launch-to-device flows)\n"));
    assert_null(strstr(out, " 0\n"));
    free(out);
    trace = "{\"traceEvents\":[],\"acceltrace\":{\"flows\":7,\"unbalanced_pops\":2}}";
    assert_int_equal(load(trace, err, sizeof(err), &out), 0);
    assert_non_null(strstr(out, "Counters:\n  unbalanced range pops              2\n"
                                "  launch-to-device flows             7\n"));
    assert_null(strstr(out, "all clean"));
    free(out);
}

/* Table figures are grouped by thousands; short ones, exponents and
 * "overflow" are left as they are. */
static void test_digits_grouped(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"91700.248", "91,700.248"}, {"1470.584", "1,470.584"}, {"470.584", "470.584"},
        {"1234567", "1,234,567"},    {"-12345.5", "-12,345.5"}, {"999", "999"},
        {"1.5e+300", "1.5e+300"},    {"overflow", "overflow"},  {"1000", "1,000"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char b[64];
        snprintf(b, sizeof(b), "%s", cases[i][0]);
        act_sum_digits_group(b, sizeof(b));
        assert_string_equal(b, cases[i][1]);
    }
    char small[8] = "1234567"; /* no room for the commas: left alone */
    act_sum_digits_group(small, sizeof(small));
    assert_string_equal(small, "1234567");
}

/* Long lines are wrapped into 80 columns: prose at spaces, a list after
 * its commas, a word longer than a line cut; nothing is lost. */
/* Many truncated processes: the line is wrapped to 80 columns, a pid
 * never cut, and past 32 pids the rest are counted ("and N more"). */
static void test_truncated_processes_wrapped(void **state)
{
    (void)state;
    char err[512], trace[4096] = "{\"traceEvents\":[],\"acceltrace\":{\"truncated_processes\":[";
    for (int i = 0; i < 40; i++)
        snprintf(trace + strlen(trace), sizeof(trace) - strlen(trace), "%s%d", i ? "," : "",
                 1000000 + i);
    strcat(trace, "]}}");
    char *out = NULL;
    assert_int_equal(load(trace, err, sizeof(err), &out), 0);
    assert_non_null(strstr(out, "truncated processes                40 (pid 1000000, 1000001"));
    assert_non_null(strstr(out, "1000031, and 8 more)"));
    assert_null(strstr(out, "1000032"));
    for (char *ln = strtok(out, "\n"); ln; ln = strtok(NULL, "\n"))
        assert_true(strlen(ln) <= 80);
    free(out);
}

static void test_wrap(void **state)
{
    (void)state;
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    char list[400] = "  dropped records                    9";
    for (int i = 0; i < 12; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%skind_%d %d", i ? ", " : " (",
                 i, 1000 + i);
    strcat(list, ")");
    act_sum_wrap(f, list, 4, 1);
    char word[200];
    memset(word, 'w', 150);
    word[150] = 0;
    act_sum_wrap(f, word, 6, 0);
    fclose(f);
    size_t kept = 0;
    for (char *ln = strtok(out, "\n"); ln; ln = strtok(NULL, "\n")) {
        assert_true(strlen(ln) <= 80);
        kept += strlen(ln);
        if (strstr(ln, "kind_"))
            assert_non_null(strstr(ln, " 10")); /* an item stays whole: its name and count */
    }
    assert_true(kept >= strlen(list) + 150 - 3); /* only the spaces at the cuts go */
    free(out);
}

/* The range map against a plain array: ranges added mostly in rising id
 * order (as the builder numbers them), some out of order, renamed, or
 * past a gap; every id reads back the last name it was given. A loop's
 * ranges of one name are one run, whatever their number. */
#define RANGE_IDS 3000

static void test_range_runs(void **state)
{
    (void)state;
    static const char *const names[] = {"step", "fwd", "bwd"};
    act_summary *s = act_summary_new();
    for (uint64_t e = 1; e <= 100000; e++)
        assert_int_equal(act_summary_add_range(s, e, "step", 4), 0);
    assert_int_equal(s->n_rr, 1);
    assert_int_equal(s->n_rg, 0);
    uint32_t step = act_summary_range_name(s, 1);
    assert_int_equal(act_summary_range_name(s, 100000), step);
    assert_int_equal(act_summary_range_name(s, 100001), UINT32_MAX);
    assert_int_equal(act_summary_range_name(s, 0), UINT32_MAX);
    act_summary_free(s);

    s = act_summary_new();
    int model[RANGE_IDS + 2] = {0}; /* 0: none, else names[i - 1] */
    uint64_t next = 1;
    srand(7);
    for (int i = 0; i < 20000; i++) {
        int r = rand() % 100, nm = rand() % 3;
        uint64_t e;
        if (r < 70 && next <= RANGE_IDS)
            e = next++; /* in order */
        else if (r < 80 && next + 1 <= RANGE_IDS)
            e = (next += 2) - 1; /* past a gap */
        else
            e = 1 + (uint64_t)rand() % RANGE_IDS; /* anywhere: renamed or early */
        if (r < 70)
            nm = rand() % 8 ? model[e > 1 ? e - 1 : 1] - 1 : nm; /* mostly runs */
        if (nm < 0)
            nm = 0;
        assert_int_equal(act_summary_add_range(s, e, names[nm], strlen(names[nm])), 0);
        model[e] = nm + 1;
    }
    uint32_t id[3];
    for (int k = 0; k < 3; k++) {
        act_summary_add_range(s, RANGE_IDS + 1, names[k], strlen(names[k]));
        id[k] = act_summary_range_name(s, RANGE_IDS + 1);
    }
    for (uint64_t e = 0; e <= RANGE_IDS; e++)
        assert_int_equal(act_summary_range_name(s, e), model[e] ? id[model[e] - 1] : UINT32_MAX);
    act_summary_free(s);
}

/* Bytes malloc has handed out and not had back (0 where a sanitizer's
 * allocator stands in: the check is then void). */
static size_t heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* n launches of a loop as the builder's timeline has them: a range
 * "step" (External id i), the call inside it, and its kernel (id i). */
static void loop_launches(act_summary *s, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        double t = (double)i * 10;
        assert_int_equal(act_summary_add_slice(s, "step", 4, 0, 1, 1, t, 5, i), 0);
        assert_int_equal(act_summary_add_slice(s, "launch", 6, 0, 1, 1, t + 1, 1, 0), 0);
        assert_int_equal(act_summary_add_range(s, i, "step", 4), 0);
        assert_int_equal(act_summary_add_slice(s, "k", 1, 1, 2, 1, t + 2, 3, i), 0);
    }
}

/* The summary's memory does not grow with a run's launches (issue 32
 * section 2): from 40 000 to 400 000 launches each in a range, less than
 * 1 MiB more held. Before (a hash entry a range): 1 741 KiB, then 12 501;
 * with the range ids kept as runs: 206 KiB at both. */
static void test_memory_flat(void **state)
{
    (void)state;
    act_summary *s = act_summary_new();
    act_summary_window(s, ACT_SUM_WINDOW_OWN); /* as the builder's run and export */
    loop_launches(s, 1, 40001);
    size_t short_run = heap_in_use();
    loop_launches(s, 40001, 400001);
    size_t long_run = heap_in_use();
    print_message("summary heap: %zu KiB at 40 000 launches, %zu KiB at 400 000\n",
                  short_run / 1024, long_run / 1024);
    assert_true(long_run < short_run + (1u << 20));
    char *out = print(s, 1); /* every kernel still found in its range */
    assert_true(row_has(row_of(out, "Device time by launching range", "step"), "400,000 1,200"));
    assert_non_null(strstr(out, "Host calls: 2 names"));
    free(out);
    act_summary_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_grows),
        cmocka_unit_test(test_range_runs),
        cmocka_unit_test(test_memory_flat),
        cmocka_unit_test(test_every_table_counter_is_summarised),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_fit_keeps_a_parenthesised_end),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_torch_bare_array),
        cmocka_unit_test(test_acceltrace_counters),
        cmocka_unit_test(test_truncated_processes_wrapped),
        cmocka_unit_test(test_all_clean),
        cmocka_unit_test(test_digits_grouped),
        cmocka_unit_test(test_wrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
