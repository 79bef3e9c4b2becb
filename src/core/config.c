/*
 * config.c -- the one place where ACCELTRACE_* variables are read.
 *
 * Every variable is a row of `vars[]`: its name, a strict parser, the text
 * listing what is allowed (used verbatim in error messages and mirrored in
 * docs/configuration.md) and the `acceltrace run` option that sets it. The
 * parsers never guess: empty values, surrounding spaces, wrong case and
 * out-of-range numbers are errors. An ACCELTRACE_* name that is not in the
 * table is an error too (a misspelt variable must not be silently ignored).
 *
 * In set-uid/set-gid programs (AT_SECURE) nothing from the environment is
 * used at all: the defaults apply, so no tool is attached.
 */
#include "config.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "acceltrace.h"
#include "core/dist.h"
#include "core/internal.h"

act_config act_cfg;
/* ACCELTRACE_LOG of the loaded act_cfg (-1: not loaded), kept apart so that
 * logging from any thread never reads act_cfg while start-up writes it. */
static _Atomic int cfg_log_level = -1;

extern char **environ;

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)

typedef int (*act_var_parse)(const char *v, act_config *cfg);

typedef struct act_var {
    const char *name;
    act_var_parse parse;
    const char *allowed; /* after "Allowed: " */
} act_var;

/* ---- value parsers (each: 0 or -1, never partial writes on error) ----- */

/* Unsigned decimal integer, digits only, no sign/space, no overflow. */
static int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int act_config_parse_size(const char *s, uint64_t *out)
{
    if (!s || !out)
        return ACT_E_INVAL;
    size_t n = strlen(s);
    uint64_t mult = 1;
    char digits[32];
    if (n == 0 || n >= sizeof(digits))
        return ACT_E_INVAL;
    switch (s[n - 1]) { /* upper case only: "64m" is wrong case, not guessed */
    case 'K':
        mult = KIB;
        n--;
        break;
    case 'M':
        mult = MIB;
        n--;
        break;
    case 'G':
        mult = GIB;
        n--;
        break;
    default: break;
    }
    memcpy(digits, s, n);
    digits[n] = '\0';
    uint64_t v;
    if (parse_u64(digits, &v) < 0 || v > UINT64_MAX / mult)
        return ACT_E_INVAL;
    *out = v * mult;
    return 0;
}

/* Seconds with up to 9 decimals ("2", "0.5"), as nanoseconds, <= max_s. */
static int parse_seconds(const char *s, uint64_t max_s, uint64_t *out_ns)
{
    const char *dot = strchr(s, '.');
    char whole[24];
    size_t wn = dot ? (size_t)(dot - s) : strlen(s);
    if (wn == 0 || wn >= sizeof(whole))
        return -1;
    memcpy(whole, s, wn);
    whole[wn] = '\0';
    uint64_t sec, frac = 0;
    if (parse_u64(whole, &sec) < 0 || sec > max_s)
        return -1;
    if (dot) {
        const char *f = dot + 1;
        size_t fn = strlen(f);
        if (fn == 0 || fn > 9 || parse_u64(f, &frac) < 0)
            return -1;
        for (size_t i = fn; i < 9; i++)
            frac *= 10;
        if (sec == max_s && frac)
            return -1;
    }
    *out_ns = sec * 1000000000ull + frac;
    return 0;
}

static int parse_spool_dir(const char *v, act_config *cfg)
{
    size_t n = strlen(v);
    if (v[0] != '/' || n >= sizeof(cfg->spool_dir) || strchr(v, '\n'))
        return -1;
    memcpy(cfg->spool_dir, v, n + 1);
    return 0;
}

static int parse_library_dir(const char *v, act_config *cfg)
{
    size_t n = strlen(v);
    if (v[0] != '/' || n >= sizeof(cfg->library_dir) || strchr(v, '\n'))
        return -1;
    memcpy(cfg->library_dir, v, n + 1);
    return 0;
}

/* A library or plugin file named by path or soname; read by the component
 * that loads it (rt, sources, Python), validated here like every setting. */
static int parse_file_path(const char *v, act_config *cfg)
{
    (void)cfg;
    size_t n = strlen(v);
    return n == 0 || n >= 4096 || strchr(v, '\n') ? -1 : 0;
}

/* Octal permission bits, 3 or 4 digits ("0640", "644"), no set-id or
 * sticky bit, and the owner can always read and write the trace. */
static int parse_trace_mode(const char *v, act_config *cfg)
{
    size_t n = strlen(v);
    unsigned m = 0;
    if (n < 3 || n > 4)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '7')
            return -1;
        m = m * 8 + (unsigned)(v[i] - '0');
    }
    if (m > 0777 || (m & 0600) != 0600)
        return -1;
    cfg->trace_mode = m;
    return 0;
}

/* Threads compressing `-o NAME.gz` output (read by the writer itself,
 * src/writers/obuf.c: checked here like every other variable). */
static int parse_gzip_threads(const char *v, act_config *cfg)
{
    uint64_t n;
    if (parse_u64(v, &n) < 0 || n < 1 || n > 16)
        return -1;
    cfg->gzip_threads = (unsigned)n;
    return 0;
}

static int parse_direct_io(const char *v, act_config *cfg)
{
    uint64_t b;
    if (strcmp(v, "off") == 0)
        b = ACT_DIRECT_IO_OFF;
    else if (act_config_parse_size(v, &b) < 0 || b > 1024 * GIB)
        return -1;
    cfg->direct_io = b;
    return 0;
}

static int parse_buffer_size(const char *v, act_config *cfg)
{
    uint64_t b = 0; /* "auto": as the spool's file system can spare */
    if (strcmp(v, "auto") && (act_config_parse_size(v, &b) < 0 || b < MIB || b > 64 * GIB))
        return -1;
    cfg->buffer_size = b;
    return 0;
}

static int parse_chunk_size(const char *v, act_config *cfg)
{
    uint64_t b;
    if (act_config_parse_size(v, &b) < 0 || b < 4 * KIB || b > 16 * MIB || b % (4 * KIB))
        return -1;
    cfg->chunk_size = (uint32_t)b;
    return 0;
}

/* The flight recorder: keep the most recent SIZE of records. */
static int parse_ring(const char *v, act_config *cfg)
{
    uint64_t b;
    if (act_config_parse_size(v, &b) < 0 || b < 64 * KIB || b > 64 * GIB)
        return -1;
    cfg->ring_size = b;
    return 0;
}

const char *const act_cl_clock_names[ACT_CL_CLOCK_METHODS] = {
    "auto", "device_host_timer", "monotonic_raw", "anchor_marker", "anchor_enqueue"};

/* How OpenCL device times are put on the timeline: auto (the best that
 * works) or one method, forced (tests each; a user who distrusts one). */
static int parse_opencl_clock(const char *v, act_config *cfg)
{
    for (int i = 0; i < ACT_CL_CLOCK_METHODS; i++) {
        if (!strcmp(v, act_cl_clock_names[i])) {
            cfg->opencl_clock = i;
            return 0;
        }
    }
    return -1;
}

static int parse_drain_timeout(const char *v, act_config *cfg)
{
    uint64_t ms;
    if (parse_u64(v, &ms) < 0 || ms > 600000)
        return -1;
    cfg->drain_timeout_ms = ms;
    return 0;
}

/* One hook-group pattern: lower-case components [a-z0-9_] joined by dots. */
static int valid_group_pattern(const char *s, size_t n)
{
    if (n == 0 || n > 63 || s[0] == '.' || s[n - 1] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                 (c == '.' && s[i + 1] != '.');
        if (!ok)
            return 0;
    }
    return 1;
}

int act_config_hooks_valid(const char *v)
{
    if (!v || !*v || strlen(v) >= sizeof(act_cfg.hooks))
        return 0;
    for (const char *p = v;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *item = p;
        if (n && item[0] == '-') {
            item++;
            n--;
        }
        if (!valid_group_pattern(item, n))
            return 0;
        if (!end)
            return 1;
        p = end + 1;
    }
}

static int parse_hooks(const char *v, act_config *cfg)
{
    if (!act_config_hooks_valid(v))
        return -1;
    strcpy(cfg->hooks, v); /* length checked by act_config_hooks_valid */
    return 0;
}

static int parse_capture_range(const char *v, act_config *cfg)
{
    if (!strcmp(v, "none")) {
        cfg->capture_api = 0;
        cfg->capture_nvtx[0] = '\0';
        return 0;
    }
    if (!strcmp(v, "api")) {
        cfg->capture_api = 1;
        cfg->capture_nvtx[0] = '\0';
        return 0;
    }
    if (strncmp(v, "nvtx:", 5) != 0)
        return -1;
    const char *name = v + 5;
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof(cfg->capture_nvtx) || name[0] == ' ' || name[n - 1] == ' ')
        return -1;
    cfg->capture_api = 0;
    memcpy(cfg->capture_nvtx, name, n + 1);
    return 0;
}

static int parse_delay(const char *v, act_config *cfg)
{
    return parse_seconds(v, 86400, &cfg->delay_ns);
}

static int parse_duration(const char *v, act_config *cfg)
{
    return parse_seconds(v, 86400, &cfg->duration_ns);
}

static int parse_log(const char *v, act_config *cfg)
{
    static const char *const levels[] = {"quiet", "error", "info", "debug"};
    for (size_t i = 0; i < ACT_ARRAY_SIZE(levels); i++) {
        if (!strcmp(v, levels[i])) {
            cfg->log_level = (int)i;
            return 0;
        }
    }
    return -1;
}

/* Read by the Python package only (acceltrace/_binding.py): checked here so
 * that `run` refuses a bad value before the program starts. */
static int parse_python_binding(const char *v, act_config *cfg)
{
    (void)cfg;
    return strcmp(v, "auto") && strcmp(v, "extension") && strcmp(v, "ctypes") ? -1 : 0;
}

static const char *getenv_const(const char *name)
{
    return getenv(name);
}

/* A comma list of vendor source names; repeating one is harmless (a
 * launcher may add to what the user set). */
static int parse_sources(const char *v, act_config *cfg)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"ascend", ACT_CFG_SOURCE_ASCEND}, {"cuda", ACT_CFG_SOURCE_CUDA}};
    unsigned bits = 0;
    for (const char *p = v;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        size_t i = 0;
        while (i < ACT_ARRAY_SIZE(names) &&
               !(strlen(names[i].name) == n && !strncmp(names[i].name, p, n)))
            i++;
        if (i == ACT_ARRAY_SIZE(names))
            return -1;
        bits |= names[i].bit;
        if (!end)
            break;
        p = end + 1;
    }
    cfg->sources = bits;
    return 0;
}

/* An output name template (dist.h); each process expands it itself. */
static int parse_output_template(const char *v, act_config *cfg)
{
    (void)cfg;
    char out[4096], err[128];
    act_dist_info d = {1, 0, 0, 1, "check"};
    return act_outname_expand(v, 1, "host", &d, getenv_const, out, sizeof(out), err, sizeof(err));
}

/* --python-backtrace: N frames (1..64), "all" (16 frames, every call),
 * "N:all", or 0/off. */
static int parse_python_backtrace(const char *v, act_config *cfg)
{
    int all = 0, depth = 16;
    char num[16];
    const char *colon = strchr(v, ':');
    if (!strcmp(v, "off") || !strcmp(v, "0")) {
        cfg->python_backtrace = cfg->python_backtrace_all = 0;
        return 0;
    }
    if (!strcmp(v, "all")) {
        all = 1;
    } else {
        size_t n = colon ? (size_t)(colon - v) : strlen(v);
        if (n == 0 || n >= sizeof(num) || (colon && strcmp(colon, ":all")))
            return -1;
        memcpy(num, v, n);
        num[n] = '\0';
        char *end;
        long d = strtol(num, &end, 10);
        if (*end || d < 1 || d > 64)
            return -1;
        depth = (int)d;
        all = colon != NULL;
    }
    cfg->python_backtrace = depth;
    cfg->python_backtrace_all = all;
    return 0;
}

/* The table. Keep docs/configuration.md in step with it. */
static const act_var vars[] = {
    {"ACCELTRACE_SPOOL_DIR", parse_spool_dir, "an absolute directory path (set by acceltrace run)"},
    {"ACCELTRACE_BUFFER_SIZE", parse_buffer_size,
     "auto, or a size in bytes, optionally with suffix K, M or G (e.g. 4096, 64M, 1G), from 1M "
     "to 64G"},
    {"ACCELTRACE_CHUNK_SIZE", parse_chunk_size,
     "a size in bytes, optionally with suffix K or M, a multiple of 4K from 4K to 16M"},
    {"ACCELTRACE_RING", parse_ring,
     "a size in bytes, optionally with suffix K, M or G (e.g. 64M), from 64K to 64G and at "
     "least twice ACCELTRACE_CHUNK_SIZE"},
    {"ACCELTRACE_DRAIN_TIMEOUT", parse_drain_timeout,
     "an integer number of milliseconds from 0 to 600000"},
    {"ACCELTRACE_HOOKS", parse_hooks,
     "all, or a comma-separated list of hook groups or group prefixes (e.g. "
     "opencl.kernel,opencl.sync), "
     "each optionally preceded by - to exclude it (e.g. all,-opencl.transfer)"},
    {"ACCELTRACE_CAPTURE_RANGE", parse_capture_range, "none, api or nvtx:NAME"},
    {"ACCELTRACE_OPENCL_CLOCK", parse_opencl_clock,
     "auto, device_host_timer, monotonic_raw, anchor_marker or anchor_enqueue"},
    {"ACCELTRACE_PYTHON_BACKTRACE", parse_python_backtrace,
     "off, N (Python frames per launch, copy and synchronisation, 1 to 64), all (16 frames, "
     "every intercepted call) or N:all"},
    {"ACCELTRACE_DELAY", parse_delay, "seconds from 0 to 86400, up to 9 decimals (e.g. 2, 0.5)"},
    {"ACCELTRACE_DURATION", parse_duration,
     "seconds from 0 to 86400, up to 9 decimals (e.g. 10, 1.5); 0 means unbounded"},
    {"ACCELTRACE_LOG", parse_log, "quiet, error, info or debug"},
    {"ACCELTRACE_LIBRARY_DIR", parse_library_dir,
     "an absolute path to the directory holding libacceltrace.so (read by acceltrace run)"},
    {"ACCELTRACE_TRACE_MODE", parse_trace_mode,
     "octal permission bits for the trace file, 3 or 4 digits, at most 0777 and including 0600 "
     "(e.g. 0600, 0640, 0644)"},
    {"ACCELTRACE_GZIP_THREADS", parse_gzip_threads,
     "an integer from 1 to 16: threads compressing a .gz trace"},
    {"ACCELTRACE_DIRECT_IO", parse_direct_io,
     "off, or a size up to 1T (e.g. 64M, 0): the bytes of a trace written through the page "
     "cache before the rest goes out with O_DIRECT"},
    {"ACCELTRACE_LIBRARY", parse_file_path,
     "the path of libacceltrace.so (read by the Python package)"},
    {"ACCELTRACE_PYTHON_BINDING", parse_python_binding,
     "auto, extension or ctypes (read by the Python package)"},
    {"ACCELTRACE_TORCH_PLUGIN", parse_file_path,
     "the path of the torch.profiler plugin library (read by the Python package)"},
    {"ACCELTRACE_TORCH_TRACE", parse_file_path,
     "a path where the torch.profiler plugin also writes acceltrace's own trace of each cycle"},
    {"ACCELTRACE_CUDART_LIB", parse_file_path, "the path or soname of the libcudart library file"},
    {"ACCELTRACE_ASCENDCL_LIB", parse_file_path,
     "the path or soname of the libascendcl library file"},
    /* The older names of the two above, still read when the new one is unset. */
    {"ACCELTRACE_CUDART_PATH", parse_file_path, "the path or soname of the libcudart library file"},
    {"ACCELTRACE_ASCENDCL_PATH", parse_file_path,
     "the path or soname of the libascendcl library file"},
    {"ACCELTRACE_CUPTI_LIB", parse_file_path, "the path or soname of the libcupti library file"},
    {"ACCELTRACE_MSPTI_LIB", parse_file_path, "the path or soname of the libmspti library file"},
    {"ACCELTRACE_OUTPUT_TEMPLATE", parse_output_template,
     "an output name template with %p, %h, %r, %q{VAR} or %% (set by acceltrace run -o)"},
    {"ACCELTRACE_SOURCES", parse_sources,
     "a comma-separated list of ascend and cuda: vendor sources that start-up starts when "
     "ACCELTRACE_SPOOL_DIR is set (set by acceltrace run --ascend)"},
};

void act_config_defaults(act_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->buffer_size = 0;        /* auto (act_recorder_open) */
    cfg->chunk_size = 128 * KIB; /* a 64 KiB name fits in one record */
    cfg->drain_timeout_ms = 10000;
    strcpy(cfg->hooks, "all");
    cfg->log_level = 2;     /* info */
    cfg->trace_mode = 0600; /* traces can hold names and arguments: private */
    cfg->direct_io = ACT_DIRECT_IO_DEFAULT;
}

/* Nonzero in set-uid/set-gid (and otherwise privileged) processes. */
static int act_config_secure(void)
{
    return getauxval(AT_SECURE) != 0;
}

/* Surrounding white space is never trimmed: it is an error for every
 * variable (paths and names included). */
static int has_outer_space(const char *v)
{
    size_t n = strlen(v);
    return n && (isspace((unsigned char)v[0]) || isspace((unsigned char)v[n - 1]));
}

/* Bytes in the UTF-8 sequence starting at `s` (1 for anything else). */
static size_t utf8_len(const unsigned char *s)
{
    size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 1;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 1;
    return n;
}

/* Up to `max` bytes of `s` for an error message, shown in at most `room`
 * bytes (plus the NUL), control bytes written as \xNN: a hostile value (a
 * newline, an escape sequence) must not turn the one-line message into
 * several lines or drive the terminal. Neither an escape nor a UTF-8
 * sequence is ever cut. Returns 1 when all of `s` was shown. */
static int quote_printable(char *out, size_t room, const char *s, size_t max)
{
    size_t o = 0, i = 0;
    while (i < max && s[i]) {
        const unsigned char *c = (const unsigned char *)s + i;
        size_t n = c[0] < 0x20 || c[0] == 0x7f ? 1 : utf8_len(c);
        size_t w = n == 1 && (c[0] < 0x20 || c[0] == 0x7f) ? 4 : n;
        if (i + n > max || o + w > room)
            break;
        if (w == 4 && n == 1)
            snprintf(out + o, 5, "\\x%02x", c[0]);
        else
            memcpy(out + o, c, n);
        o += w;
        i += n;
    }
    out[o] = '\0';
    return s[i] == '\0';
}

/* The quoted value in an error message is shortened to what fits in
 * `len`, never the rest of the message: "Allowed: ..." always survives. */
static void set_error(char *err, size_t len, const char *name, const char *value,
                      const char *allowed)
{
    if (!err || !len)
        return;
    char shown[4 * 300 + 1];
    size_t fixed = strlen("Invalid value for : '...'. Allowed: ") + strlen(name) + strlen(allowed);
    size_t room = len > fixed + 1 ? len - fixed - 1 : 0;
    if (room > sizeof(shown) - 1)
        room = sizeof(shown) - 1;
    int whole = quote_printable(shown, room, value, 300);
    snprintf(err, len, "Invalid value for %s: '%s%s'. Allowed: %s", name, shown, whole ? "" : "...",
             allowed);
}

static const act_var *var_find(const char *name, size_t n)
{
    for (size_t i = 0; i < ACT_ARRAY_SIZE(vars); i++)
        if (strlen(vars[i].name) == n && !strncmp(vars[i].name, name, n))
            return &vars[i];
    return NULL;
}

/* An ACCELTRACE_* variable nobody reads is a mistake worth stopping for. */
static int check_unknown(char *err, size_t len)
{
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "ACCELTRACE_", 11) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
        if (var_find(*e, n))
            continue;
        if (err && len) {
            char shown[4 * 200 + 1];
            quote_printable(shown, sizeof(shown) - 1, *e, n > 200 ? 200 : n);
            int w = snprintf(err, len, "Unknown variable %s. Known:", shown);
            for (size_t i = 0; i < ACT_ARRAY_SIZE(vars) && w > 0 && (size_t)w < len; i++)
                w += snprintf(err + w, len - (size_t)w, " %s", vars[i].name);
        }
        return ACT_E_CONFIG;
    }
    return 0;
}

/* Cross-field rules that no single variable can check. */
static int check_consistent(const act_config *cfg, char *err, size_t len)
{
    uint64_t least = cfg->buffer_size ? cfg->buffer_size : ACT_SPOOL_AUTO_MIN;
    if (cfg->chunk_size > least / 4) {
        if (err && len)
            snprintf(err, len,
                     "Invalid value for ACCELTRACE_CHUNK_SIZE: '%u'. Allowed: at most a quarter of "
                     "ACCELTRACE_BUFFER_SIZE (%llu bytes)",
                     cfg->chunk_size, (unsigned long long)least);
        return ACT_E_CONFIG;
    }
    if (cfg->ring_size && cfg->ring_size < 2ull * cfg->chunk_size) {
        if (err && len)
            snprintf(err, len,
                     "Invalid value for ACCELTRACE_RING: '%llu'. Allowed: at least twice "
                     "ACCELTRACE_CHUNK_SIZE (%u bytes)",
                     (unsigned long long)cfg->ring_size, cfg->chunk_size);
        return ACT_E_CONFIG;
    }
    return 0;
}

int act_config_load(act_config *cfg, char *err, size_t errlen)
{
    act_config c;
    act_config_defaults(&c);
    if (err && errlen)
        err[0] = '\0';
    if (act_config_secure()) {
        *cfg = c; /* privileged program: the environment is not trusted */
        if (cfg == &act_cfg)
            atomic_store(&cfg_log_level, c.log_level);
        return 0;
    }
    int rc = check_unknown(err, errlen);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < ACT_ARRAY_SIZE(vars); i++) {
        const char *v = secure_getenv(vars[i].name);
        if (!v)
            continue;
        if (has_outer_space(v) || vars[i].parse(v, &c) < 0) {
            set_error(err, errlen, vars[i].name, v, vars[i].allowed);
            return ACT_E_CONFIG;
        }
    }
    rc = check_consistent(&c, err, errlen);
    if (rc < 0)
        return rc;
    *cfg = c;
    if (cfg == &act_cfg)
        atomic_store(&cfg_log_level, c.log_level);
    return 0;
}

unsigned act_config_gzip_threads(void)
{
    const char *v = getenv("ACCELTRACE_GZIP_THREADS");
    act_config c = {.gzip_threads = 0};
    return v && parse_gzip_threads(v, &c) == 0 ? c.gzip_threads : 0;
}

uint64_t act_config_direct_io(void)
{
    const char *v = getenv("ACCELTRACE_DIRECT_IO");
    act_config c = {.direct_io = ACT_DIRECT_IO_DEFAULT};
    return v && parse_direct_io(v, &c) == 0 ? c.direct_io : ACT_DIRECT_IO_DEFAULT;
}

int act_config_log_level(void)
{
    int l = atomic_load_explicit(&cfg_log_level, memory_order_relaxed);
    return l < 0 ? ACT_LOG_INFO : l;
}

ACT_EXPORT int act_config_check_env(char *err, size_t errlen)
{
    act_config c;
    return act_config_load(&c, err, errlen);
}

ACT_EXPORT int act_config_check_var(const char *name, const char *value, char *err, size_t errlen)
{
    if (!name || !value)
        return ACT_E_INVAL;
    const act_var *v = var_find(name, strlen(name));
    if (!v) {
        if (err && errlen) {
            char shown[4 * 200 + 1];
            quote_printable(shown, sizeof(shown) - 1, name, 200);
            snprintf(err, errlen, "Unknown variable %s", shown);
        }
        return ACT_E_NOTFOUND;
    }
    act_config c;
    act_config_defaults(&c);
    if (has_outer_space(value) || v->parse(value, &c) < 0) {
        set_error(err, errlen, v->name, value, v->allowed);
        return ACT_E_CONFIG;
    }
    return 0;
}

const char *act_config_allowed(const char *name)
{
    const act_var *v = name ? var_find(name, strlen(name)) : NULL;
    return v ? v->allowed : NULL;
}
