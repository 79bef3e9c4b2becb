/*
 * test_config.c -- every ACCELTRACE_* variable through config.c: valid,
 * invalid, empty and boundary values, the exact error text, unknown
 * variables, defaults and the cross-field rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "config.h"

extern char **environ;

/* Remove every ACCELTRACE_* variable so each test starts clean. */
static int clean_env(void **state)
{
    (void)state;
    for (;;) {
        char name[256] = "";
        for (char **e = environ; *e; e++) {
            if (!strncmp(*e, "ACCELTRACE_", 11)) {
                size_t n = strcspn(*e, "=");
                snprintf(name, sizeof(name), "%.*s", (int)n, *e);
                break;
            }
        }
        if (!name[0])
            return 0;
        unsetenv(name);
    }
}

/* Load with one variable set; returns the rc, config and message. */
static int load_with(const char *name, const char *value, act_config *cfg, char *err, size_t len)
{
    clean_env(NULL);
    setenv(name, value, 1);
    int rc = act_config_load(cfg, err, len);
    unsetenv(name);
    return rc;
}

/* The value as error messages show it: control bytes as \xNN, so the
 * message stays one line whatever the value holds. */
static void shown_value(char *out, size_t len, const char *v)
{
    size_t o = 0;
    for (; *v && o + 5 < len; v++) {
        unsigned char ch = (unsigned char)*v;
        if (ch < 0x20 || ch == 0x7f)
            o += (size_t)snprintf(out + o, len - o, "\\x%02x", ch);
        else
            out[o++] = (char)ch;
    }
    out[o] = '\0';
}

static void expect_invalid(const char *name, const char *value)
{
    act_config c;
    char err[1024], want[1024], shown[512];
    int rc = load_with(name, value, &c, err, sizeof(err));
    if (rc != ACT_E_CONFIG)
        fail_msg("%s='%s' was accepted", name, value);
    assert_null(strchr(err, '\n'));
    shown_value(shown, sizeof(shown), value);
    snprintf(want, sizeof(want), "Invalid value for %s: '%s'. Allowed: %s", name, shown,
             act_config_allowed(name));
    assert_string_equal(err, want);
    /* The single-variable check gives the same verdict and text. */
    char err2[1024];
    assert_int_equal(act_config_check_var(name, value, err2, sizeof(err2)), ACT_E_CONFIG);
    assert_string_equal(err2, want);
}

static act_config expect_valid(const char *name, const char *value)
{
    act_config c;
    char err[1024];
    int rc = load_with(name, value, &c, err, sizeof(err));
    if (rc != 0)
        fail_msg("%s='%s' rejected: %s", name, value, err);
    assert_int_equal(act_config_check_var(name, value, err, sizeof(err)), 0);
    return c;
}

/* Empty, surrounding spaces and trailing garbage: invalid everywhere. */
static void expect_common_invalid(const char *name, const char *good)
{
    char buf[512];
    expect_invalid(name, "");
    snprintf(buf, sizeof(buf), " %s", good);
    expect_invalid(name, buf);
    snprintf(buf, sizeof(buf), "%s ", good);
    expect_invalid(name, buf);
    snprintf(buf, sizeof(buf), "%s\t", good);
    expect_invalid(name, buf);
}

static void test_defaults(void **state)
{
    (void)state;
    act_config c;
    char err[256];
    assert_int_equal(act_config_load(&c, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    assert_string_equal(c.spool_dir, "");
    assert_int_equal(c.buffer_size, 0); /* automatic: act_recorder_open */
    assert_int_equal(c.chunk_size, 128u << 10);
    assert_int_equal(c.drain_timeout_ms, 10000);
    assert_string_equal(c.hooks, "all");
    assert_int_equal(c.capture_api, 0);
    assert_string_equal(c.capture_nvtx, "");
    assert_int_equal(c.delay_ns, 0);
    assert_int_equal(c.duration_ns, 0);
    assert_int_equal(c.log_level, 2);
    act_config d;
    act_config_defaults(&d);
    assert_memory_equal(&c, &d, sizeof(c));
}

static void test_parse_size(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(act_config_parse_size("4096", &v), 0);
    assert_int_equal(v, 4096);
    assert_int_equal(act_config_parse_size("64M", &v), 0);
    assert_int_equal(v, 64ull << 20);
    assert_int_equal(act_config_parse_size("1G", &v), 0);
    assert_int_equal(v, 1ull << 30);
    assert_int_equal(act_config_parse_size("8K", &v), 0);
    assert_int_equal(v, 8192);
    assert_int_equal(act_config_parse_size("0", &v), 0);
    assert_int_equal(v, 0);
    const char *bad[] = {"",
                         "64m",
                         "1g",
                         "64MB",
                         "M",
                         "-1",
                         "+1",
                         " 1",
                         "1 ",
                         "1.5M",
                         "0x10",
                         "18446744073709551616",
                         "17179869184G",
                         "1T",
                         "1KK"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (act_config_parse_size(bad[i], &v) != ACT_E_INVAL)
            fail_msg("size '%s' accepted", bad[i]);
    assert_int_equal(act_config_parse_size("18446744073709551615", &v), 0);
    assert_int_equal(v, UINT64_MAX);
    assert_int_equal(act_config_parse_size(NULL, &v), ACT_E_INVAL);
}

static void test_spool_dir(void **state)
{
    (void)state;
    act_config c = expect_valid("ACCELTRACE_SPOOL_DIR", "/tmp/acceltrace-x");
    assert_string_equal(c.spool_dir, "/tmp/acceltrace-x");
    expect_common_invalid("ACCELTRACE_SPOOL_DIR", "/tmp/x");
    expect_invalid("ACCELTRACE_SPOOL_DIR", "relative/dir");
    char longp[4200];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = '\0';
    act_config d;
    char err[1024];
    assert_int_equal(load_with("ACCELTRACE_SPOOL_DIR", longp, &d, err, sizeof(err)), ACT_E_CONFIG);
    /* The quoted value is cut, the message is not. */
    assert_non_null(strstr(err, "aaa...'. Allowed: an absolute directory path"));
    longp[4095] = '\0'; /* 4095 bytes + NUL fits exactly */
    c = expect_valid("ACCELTRACE_SPOOL_DIR", longp);
    assert_int_equal(strlen(c.spool_dir), 4095);
}

static void test_buffer_size(void **state)
{
    (void)state;
    assert_int_equal(expect_valid("ACCELTRACE_BUFFER_SIZE", "64M").buffer_size, 64ull << 20);
    assert_int_equal(expect_valid("ACCELTRACE_BUFFER_SIZE", "1G").buffer_size, 1ull << 30);
    assert_int_equal(expect_valid("ACCELTRACE_BUFFER_SIZE", "1048576").buffer_size, 1ull << 20);
    assert_int_equal(expect_valid("ACCELTRACE_BUFFER_SIZE", "1M").buffer_size, 1ull << 20);
    assert_int_equal(expect_valid("ACCELTRACE_BUFFER_SIZE", "64G").buffer_size, 64ull << 30);
    assert_int_equal(expect_valid("ACCELTRACE_BUFFER_SIZE", "auto").buffer_size, 0);
    expect_invalid("ACCELTRACE_BUFFER_SIZE", "AUTO");
    expect_invalid("ACCELTRACE_BUFFER_SIZE", "0");
    expect_invalid("ACCELTRACE_BUFFER_SIZE", "1048575");
    expect_invalid("ACCELTRACE_BUFFER_SIZE", "65G");
    expect_invalid("ACCELTRACE_BUFFER_SIZE", "68719476737");
    expect_invalid("ACCELTRACE_BUFFER_SIZE", "64m");
    expect_invalid("ACCELTRACE_BUFFER_SIZE", "4096"); /* below 1M */
    expect_invalid("ACCELTRACE_BUFFER_SIZE", "lots");
    expect_common_invalid("ACCELTRACE_BUFFER_SIZE", "64M");
}

static void test_chunk_size(void **state)
{
    (void)state;
    assert_int_equal(expect_valid("ACCELTRACE_CHUNK_SIZE", "4K").chunk_size, 4096);
    assert_int_equal(expect_valid("ACCELTRACE_CHUNK_SIZE", "4096").chunk_size, 4096);
    assert_int_equal(expect_valid("ACCELTRACE_CHUNK_SIZE", "256K").chunk_size, 256u << 10);
    assert_int_equal(expect_valid("ACCELTRACE_CHUNK_SIZE", "16M").chunk_size, 16u << 20);
    expect_invalid("ACCELTRACE_CHUNK_SIZE", "4095");
    expect_invalid("ACCELTRACE_CHUNK_SIZE", "6000"); /* not a multiple of 4K */
    expect_invalid("ACCELTRACE_CHUNK_SIZE", "17M");
    expect_invalid("ACCELTRACE_CHUNK_SIZE", "0");
    expect_invalid("ACCELTRACE_CHUNK_SIZE", "1G");
    expect_common_invalid("ACCELTRACE_CHUNK_SIZE", "64K");
}

static void test_chunk_vs_buffer(void **state)
{
    (void)state;
    clean_env(NULL);
    setenv("ACCELTRACE_BUFFER_SIZE", "16M", 1);
    setenv("ACCELTRACE_CHUNK_SIZE", "16M", 1);
    act_config c;
    char err[512];
    assert_int_equal(act_config_load(&c, err, sizeof(err)), ACT_E_CONFIG);
    assert_string_equal(err, "Invalid value for ACCELTRACE_CHUNK_SIZE: '16777216'. Allowed: at "
                             "most a quarter of ACCELTRACE_BUFFER_SIZE (16777216 bytes)");
    setenv("ACCELTRACE_CHUNK_SIZE", "4M", 1);
    assert_int_equal(act_config_load(&c, err, sizeof(err)), 0);
    clean_env(NULL);
}

/* The flight recorder (ACCELTRACE_RING): a size, at least two chunks. */
static void test_ring(void **state)
{
    (void)state;
    assert_int_equal(expect_valid("ACCELTRACE_RING", "64M").ring_size, 64ull << 20);
    assert_int_equal(expect_valid("ACCELTRACE_RING", "256K").ring_size, 256u << 10);
    assert_int_equal(expect_valid("ACCELTRACE_RING", "64G").ring_size, 64ull << 30);
    expect_invalid("ACCELTRACE_RING", "0");
    expect_invalid("ACCELTRACE_RING", "65535");
    expect_invalid("ACCELTRACE_RING", "65G");
    expect_invalid("ACCELTRACE_RING", "big");
    expect_common_invalid("ACCELTRACE_RING", "64M");
    clean_env(NULL);
    setenv("ACCELTRACE_RING", "128K", 1); /* the default chunk is 128K */
    act_config c;
    char err[512];
    assert_int_equal(act_config_load(&c, err, sizeof(err)), ACT_E_CONFIG);
    assert_string_equal(err, "Invalid value for ACCELTRACE_RING: '131072'. Allowed: at least "
                             "twice ACCELTRACE_CHUNK_SIZE (131072 bytes)");
    setenv("ACCELTRACE_CHUNK_SIZE", "64K", 1);
    assert_int_equal(act_config_load(&c, err, sizeof(err)), 0);
    assert_int_equal(c.ring_size, 128u << 10);
    clean_env(NULL);
}

static void test_drain_timeout(void **state)
{
    (void)state;
    assert_int_equal(expect_valid("ACCELTRACE_DRAIN_TIMEOUT", "0").drain_timeout_ms, 0);
    assert_int_equal(expect_valid("ACCELTRACE_DRAIN_TIMEOUT", "250").drain_timeout_ms, 250);
    assert_int_equal(expect_valid("ACCELTRACE_DRAIN_TIMEOUT", "600000").drain_timeout_ms, 600000);
    expect_invalid("ACCELTRACE_DRAIN_TIMEOUT", "600001");
    expect_invalid("ACCELTRACE_DRAIN_TIMEOUT", "-1");
    expect_invalid("ACCELTRACE_DRAIN_TIMEOUT", "10s");
    expect_invalid("ACCELTRACE_DRAIN_TIMEOUT", "1.5");
    expect_common_invalid("ACCELTRACE_DRAIN_TIMEOUT", "100");
}

/* Read by the writer (obuf.c) through act_config_gzip_threads: the same
 * rule as the check, so a value the check refuses is never used. */
static void test_gzip_threads(void **state)
{
    (void)state;
    assert_int_equal(expect_valid("ACCELTRACE_GZIP_THREADS", "1").gzip_threads, 1);
    assert_int_equal(expect_valid("ACCELTRACE_GZIP_THREADS", "16").gzip_threads, 16);
    setenv("ACCELTRACE_GZIP_THREADS", "3", 1);
    assert_int_equal(act_config_gzip_threads(), 3);
    const char *refused[] = {" 3", "3 ", "0", "17", "+3", ""};
    for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
        setenv("ACCELTRACE_GZIP_THREADS", refused[i], 1);
        assert_int_equal(act_config_gzip_threads(), 0);
    }
    unsetenv("ACCELTRACE_GZIP_THREADS");
    assert_int_equal(act_config_gzip_threads(), 0);
    expect_invalid("ACCELTRACE_GZIP_THREADS", "0");
    expect_invalid("ACCELTRACE_GZIP_THREADS", "17");
    expect_invalid("ACCELTRACE_GZIP_THREADS", "two");
    expect_common_invalid("ACCELTRACE_GZIP_THREADS", "2");
}

static void test_hooks(void **state)
{
    (void)state;
    assert_string_equal(expect_valid("ACCELTRACE_HOOKS", "all").hooks, "all");
    expect_valid("ACCELTRACE_HOOKS", "opencl.kernel");
    expect_valid("ACCELTRACE_HOOKS", "opencl.kernel,opencl.sync");
    expect_valid("ACCELTRACE_HOOKS", "opencl");
    expect_valid("ACCELTRACE_HOOKS", "all,-opencl.transfer");
    expect_valid("ACCELTRACE_HOOKS", "-opencl.transfer");
    expect_valid("ACCELTRACE_HOOKS", "a_1.b_2");
    expect_invalid("ACCELTRACE_HOOKS", "ALL");
    expect_invalid("ACCELTRACE_HOOKS", "OpenCL.kernel");
    expect_invalid("ACCELTRACE_HOOKS", "opencl.kernel,");
    expect_invalid("ACCELTRACE_HOOKS", ",opencl.kernel");
    expect_invalid("ACCELTRACE_HOOKS", "opencl.kernel,,opencl.sync");
    expect_invalid("ACCELTRACE_HOOKS", "opencl..kernel");
    expect_invalid("ACCELTRACE_HOOKS", ".opencl");
    expect_invalid("ACCELTRACE_HOOKS", "opencl.");
    expect_invalid("ACCELTRACE_HOOKS", "opencl.kernel, opencl.sync");
    expect_invalid("ACCELTRACE_HOOKS", "-");
    expect_invalid("ACCELTRACE_HOOKS", "--opencl");
    char longg[80];
    memset(longg, 'a', 64);
    longg[64] = '\0';
    expect_invalid("ACCELTRACE_HOOKS", longg);
    longg[63] = '\0';
    expect_valid("ACCELTRACE_HOOKS", longg);
    expect_common_invalid("ACCELTRACE_HOOKS", "all");
}

static void test_capture_range(void **state)
{
    (void)state;
    act_config c = expect_valid("ACCELTRACE_CAPTURE_RANGE", "none");
    assert_int_equal(c.capture_api, 0);
    c = expect_valid("ACCELTRACE_CAPTURE_RANGE", "api");
    assert_int_equal(c.capture_api, 1);
    c = expect_valid("ACCELTRACE_CAPTURE_RANGE", "nvtx:train step");
    assert_int_equal(c.capture_api, 0);
    assert_string_equal(c.capture_nvtx, "train step");
    expect_invalid("ACCELTRACE_CAPTURE_RANGE", "API");
    expect_invalid("ACCELTRACE_CAPTURE_RANGE", "nvtx:");
    expect_invalid("ACCELTRACE_CAPTURE_RANGE", "nvtx: x");
    expect_invalid("ACCELTRACE_CAPTURE_RANGE", "NVTX:x");
    expect_invalid("ACCELTRACE_CAPTURE_RANGE", "cudaProfilerApi");
    char longn[300] = "nvtx:";
    memset(longn + 5, 'n', 256);
    longn[261] = '\0';
    expect_invalid("ACCELTRACE_CAPTURE_RANGE", longn);
    longn[260] = '\0'; /* 255 bytes of name */
    expect_valid("ACCELTRACE_CAPTURE_RANGE", longn);
    expect_common_invalid("ACCELTRACE_CAPTURE_RANGE", "api");
}

static void test_delay_duration(void **state)
{
    (void)state;
    const char *names[] = {"ACCELTRACE_DELAY", "ACCELTRACE_DURATION"};
    for (int i = 0; i < 2; i++) {
        act_config c = expect_valid(names[i], "2");
        assert_int_equal(i ? c.duration_ns : c.delay_ns, 2000000000ull);
        c = expect_valid(names[i], "0.5");
        assert_int_equal(i ? c.duration_ns : c.delay_ns, 500000000ull);
        c = expect_valid(names[i], "0.000000001");
        assert_int_equal(i ? c.duration_ns : c.delay_ns, 1ull);
        c = expect_valid(names[i], "0");
        assert_int_equal(i ? c.duration_ns : c.delay_ns, 0);
        c = expect_valid(names[i], "86400");
        assert_int_equal(i ? c.duration_ns : c.delay_ns, 86400ull * 1000000000ull);
        expect_invalid(names[i], "86400.1");
        expect_invalid(names[i], "86401");
        expect_invalid(names[i], "0.0000000001");
        expect_invalid(names[i], "1.");
        expect_invalid(names[i], ".5");
        expect_invalid(names[i], "-1");
        expect_invalid(names[i], "1s");
        expect_invalid(names[i], "1e3");
        expect_common_invalid(names[i], "1");
    }
}

static void test_log(void **state)
{
    (void)state;
    assert_int_equal(expect_valid("ACCELTRACE_LOG", "quiet").log_level, 0);
    assert_int_equal(expect_valid("ACCELTRACE_LOG", "error").log_level, 1);
    assert_int_equal(expect_valid("ACCELTRACE_LOG", "info").log_level, 2);
    assert_int_equal(expect_valid("ACCELTRACE_LOG", "debug").log_level, 3);
    expect_invalid("ACCELTRACE_LOG", "Debug");
    expect_invalid("ACCELTRACE_LOG", "verbose");
    expect_invalid("ACCELTRACE_LOG", "2");
    expect_invalid("ACCELTRACE_LOG", "info\nACCELTRACE_LOG=debug"); /* one line in the error */
    expect_common_invalid("ACCELTRACE_LOG", "info");
}

/* Issue 30.6: each OpenCL clock mapping can be forced (tests, a user who
 * distrusts one); anything else is refused. */
static void test_opencl_clock(void **state)
{
    (void)state;
    assert_int_equal(expect_valid("ACCELTRACE_OPENCL_CLOCK", "auto").opencl_clock, 0);
    for (int i = 1; i < ACT_CL_CLOCK_METHODS; i++)
        assert_int_equal(
            expect_valid("ACCELTRACE_OPENCL_CLOCK", act_cl_clock_names[i]).opencl_clock, i);
    expect_invalid("ACCELTRACE_OPENCL_CLOCK", "Auto");
    expect_invalid("ACCELTRACE_OPENCL_CLOCK", "per_op");
    expect_invalid("ACCELTRACE_OPENCL_CLOCK", "1");
    expect_common_invalid("ACCELTRACE_OPENCL_CLOCK", "auto");
}

static void test_library_dir(void **state)
{
    (void)state;
    assert_string_equal(expect_valid("ACCELTRACE_LIBRARY_DIR", "/opt/x/lib").library_dir,
                        "/opt/x/lib");
    expect_invalid("ACCELTRACE_LIBRARY_DIR", "lib");
    expect_common_invalid("ACCELTRACE_LIBRARY_DIR", "/opt/x");
}

static void test_library_paths(void **state)
{
    (void)state;
    /* Library files are ACCELTRACE_<LIB>_LIB; the older *_PATH names of
     * the runtime tables still work. */
    const char *names[] = {"ACCELTRACE_LIBRARY",     "ACCELTRACE_TORCH_PLUGIN",
                           "ACCELTRACE_CUDART_LIB",  "ACCELTRACE_ASCENDCL_LIB",
                           "ACCELTRACE_CUDART_PATH", "ACCELTRACE_ASCENDCL_PATH",
                           "ACCELTRACE_CUPTI_LIB",   "ACCELTRACE_MSPTI_LIB"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        expect_valid(names[i], "/usr/lib/libx.so");
        expect_valid(names[i], "libx.so.12");
        expect_invalid(names[i], "a\nb");
        expect_common_invalid(names[i], "libx.so");
    }
}

static void test_python_binding(void **state)
{
    (void)state;
    expect_valid("ACCELTRACE_PYTHON_BINDING", "auto");
    expect_valid("ACCELTRACE_PYTHON_BINDING", "extension");
    expect_valid("ACCELTRACE_PYTHON_BINDING", "ctypes");
    expect_invalid("ACCELTRACE_PYTHON_BINDING", "native");
    expect_invalid("ACCELTRACE_PYTHON_BINDING", "Ctypes");
    expect_common_invalid("ACCELTRACE_PYTHON_BINDING", "auto");
}

static void test_sources(void **state)
{
    (void)state;
    assert_int_equal(expect_valid("ACCELTRACE_SOURCES", "ascend").sources, ACT_CFG_SOURCE_ASCEND);
    assert_int_equal(expect_valid("ACCELTRACE_SOURCES", "cuda").sources, ACT_CFG_SOURCE_CUDA);
    assert_int_equal(expect_valid("ACCELTRACE_SOURCES", "cuda,ascend").sources,
                     ACT_CFG_SOURCE_ASCEND | ACT_CFG_SOURCE_CUDA);
    assert_int_equal(expect_valid("ACCELTRACE_SOURCES", "ascend,ascend").sources,
                     ACT_CFG_SOURCE_ASCEND);
    expect_invalid("ACCELTRACE_SOURCES", "Ascend");
    expect_invalid("ACCELTRACE_SOURCES", "ascend,");
    expect_invalid("ACCELTRACE_SOURCES", ",cuda");
    expect_invalid("ACCELTRACE_SOURCES", "ascend, cuda");
    expect_invalid("ACCELTRACE_SOURCES", "npu");
    expect_invalid("ACCELTRACE_SOURCES", "opencl");
    expect_common_invalid("ACCELTRACE_SOURCES", "ascend");
}

static void test_unknown_variable(void **state)
{
    (void)state;
    clean_env(NULL);
    setenv("ACCELTRACE_BUFER_SIZE", "64M", 1);
    act_config c;
    char err[1024];
    assert_int_equal(act_config_load(&c, err, sizeof(err)), ACT_E_CONFIG);
    assert_true(
        !strncmp(err, "Unknown variable ACCELTRACE_BUFER_SIZE. Known: ACCELTRACE_SPOOL_DIR", 66));
    assert_int_equal(act_config_check_env(err, sizeof(err)), ACT_E_CONFIG);
    clean_env(NULL);
    /* Names merely starting like ours are not ours. */
    setenv("ACCELTRACEX", "1", 1);
    assert_int_equal(act_config_check_env(err, sizeof(err)), 0);
    unsetenv("ACCELTRACEX");
    assert_int_equal(act_config_check_var("ACCELTRACE_NOPE", "1", err, sizeof(err)),
                     ACT_E_NOTFOUND);
    assert_int_equal(act_config_check_var(NULL, "1", err, sizeof(err)), ACT_E_INVAL);
}

/* A long or control-laden value is shortened to fit the caller's buffer;
 * the name and the "Allowed:" part are always whole (issue 14.9: a 512-byte
 * buffer used to lose the "Allowed:" part). */
static void expect_fits(const char *name, const char *value, size_t len)
{
    act_config c;
    char err[2048];
    char want_tail[600];
    snprintf(want_tail, sizeof(want_tail), "...'. Allowed: %s", act_config_allowed(name));
    assert_true(len <= sizeof(err));
    memset(err, 0x7e, sizeof(err));
    assert_int_equal(load_with(name, value, &c, err, len), ACT_E_CONFIG);
    size_t n = strlen(err);
    assert_true(n < len);
    assert_null(strchr(err, '\n'));
    if (n < strlen(want_tail) || strcmp(err + n - strlen(want_tail), want_tail) != 0)
        fail_msg("message lost its end (%zu bytes): %s", n, err);
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "Invalid value for %s: '", name);
    assert_true(!strncmp(err, prefix, strlen(prefix)));
    /* A \xNN escape is never cut in the middle. */
    const char *v = err + strlen(prefix);
    const char *end = err + n - strlen(want_tail);
    for (const char *q = v; q < end; q++)
        if (*q == '\\')
            assert_true(end - q >= 4 && q[1] == 'x');
    char err2[2048];
    assert_int_equal(act_config_check_var(name, value, err2, len), ACT_E_CONFIG);
    assert_string_equal(err2, err);
}

static void test_error_keeps_allowed(void **state)
{
    (void)state;
    char v[1200];
    memset(v, 'a', sizeof(v) - 1);
    v[sizeof(v) - 1] = '\0';
    expect_fits("ACCELTRACE_HOOKS", v, 512);
    expect_fits("ACCELTRACE_TRACE_MODE", v, 512);
    expect_fits("ACCELTRACE_LOG", v, 200);
    memset(v, 0x01, 299); /* 299 control bytes: 4 bytes each when shown */
    v[299] = '\0';
    expect_fits("ACCELTRACE_HOOKS", v, 512);
    expect_fits("ACCELTRACE_SOURCES", v, 512);
    /* 250 multi-byte characters: never cut inside one. */
    char u[1200] = "";
    for (int i = 0; i < 250; i++)
        strcat(u, "\xc3\xa9");
    act_config c;
    char err[512];
    assert_int_equal(load_with("ACCELTRACE_HOOKS", u, &c, err, sizeof(err)), ACT_E_CONFIG);
    const char *cut = strstr(err, "...'. Allowed: ");
    assert_non_null(cut);
    assert_true((cut - strchr(err, '\'')) % 2 == 1); /* the quote, then whole pairs */
}

/* The first invalid variable is reported; the output config is untouched. */
static void test_error_leaves_config(void **state)
{
    (void)state;
    clean_env(NULL);
    act_config c;
    memset(&c, 0x5a, sizeof(c));
    act_config before = c;
    setenv("ACCELTRACE_LOG", "loud", 1);
    char err[512];
    assert_int_equal(act_config_load(&c, err, sizeof(err)), ACT_E_CONFIG);
    assert_memory_equal(&c, &before, sizeof(c));
    /* A tiny buffer truncates but stays terminated. */
    char small[8];
    assert_int_equal(act_config_load(&c, small, sizeof(small)), ACT_E_CONFIG);
    assert_string_equal(small, "Invalid");
    assert_int_equal(act_config_load(&c, NULL, 0), ACT_E_CONFIG);
    clean_env(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_defaults, clean_env),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_spool_dir),
        cmocka_unit_test(test_buffer_size),
        cmocka_unit_test(test_chunk_size),
        cmocka_unit_test(test_chunk_vs_buffer),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_drain_timeout),
        cmocka_unit_test(test_gzip_threads),
        cmocka_unit_test(test_hooks),
        cmocka_unit_test(test_capture_range),
        cmocka_unit_test(test_delay_duration),
        cmocka_unit_test(test_log),
        cmocka_unit_test(test_opencl_clock),
        cmocka_unit_test(test_library_dir),
        cmocka_unit_test(test_library_paths),
        cmocka_unit_test(test_python_binding),
        cmocka_unit_test(test_sources),
        cmocka_unit_test(test_unknown_variable),
        cmocka_unit_test(test_error_leaves_config),
        cmocka_unit_test(test_error_keeps_allowed),
    };
    return cmocka_run_group_tests(tests, clean_env, NULL);
}
