/*
 * config.h -- every ACCELTRACE_* setting, parsed strictly in one place
 * (config.c). `acceltrace run` maps its options onto the same variables, so
 * a setting means the same thing in both places.
 *
 * Invalid values are never guessed at: empty strings, surrounding spaces,
 * wrong case and out-of-range numbers are errors that name the variable,
 * the value and what is allowed.
 */
#ifndef ACT_CONFIG_H
#define ACT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef struct act_config {
    char spool_dir[4096];      /* ACCELTRACE_SPOOL_DIR: set by `run`; empty = not attached */
    uint64_t buffer_size;      /* ACCELTRACE_BUFFER_SIZE: bytes, e.g. 64M; 0: auto (default) */
    uint32_t chunk_size;       /* ACCELTRACE_CHUNK_SIZE: bytes per thread chunk (default 128K) */
    uint64_t ring_size;        /* ACCELTRACE_RING: keep only the most recent bytes (0 = off) */
    uint64_t drain_timeout_ms; /* ACCELTRACE_DRAIN_TIMEOUT: ms to wait for device activity (default
                                  10000) */
    char hooks[1024];          /* ACCELTRACE_HOOKS: comma list of groups or "all" (default) */
    int capture_api;           /* ACCELTRACE_CAPTURE_RANGE=api */
    char capture_nvtx[256];    /* ACCELTRACE_CAPTURE_RANGE=nvtx:NAME */
    uint64_t delay_ns;         /* ACCELTRACE_DELAY: seconds */
    uint64_t duration_ns;      /* ACCELTRACE_DURATION: seconds (0 = unbounded) */
    int log_level;             /* ACCELTRACE_LOG: quiet|error|info|debug (0..3, default info) */
    char library_dir[4096];    /* ACCELTRACE_LIBRARY_DIR: where `run` finds the library ("" = beside
                                  it) */
    unsigned
        trace_mode;   /* ACCELTRACE_TRACE_MODE: permission bits of written traces (default 0600) */
    unsigned sources; /* ACCELTRACE_SOURCES: ACT_CFG_SOURCE_* bits, started at start-up */
    unsigned gzip_threads;    /* ACCELTRACE_GZIP_THREADS: 1..16 (0 = the writer's default) */
    uint64_t direct_io;       /* ACCELTRACE_DIRECT_IO: bytes of a trace written through the
                                 page cache before O_DIRECT (ACT_DIRECT_IO_OFF: never) */
    int opencl_clock;         /* ACCELTRACE_OPENCL_CLOCK: index in act_cl_clock_names (0 = auto) */
    int python_backtrace;     /* ACCELTRACE_PYTHON_BACKTRACE: Python frames per call (0 = off) */
    int python_backtrace_all; /* ... ":all": every intercepted call */
} act_config;

/* ACCELTRACE_OPENCL_CLOCK's values: "auto", then the OpenCL clock mapping
 * methods (sources/opencl/clock.c), best first. */
#define ACT_CL_CLOCK_METHODS 5
extern const char *const act_cl_clock_names[ACT_CL_CLOCK_METHODS];

/* Vendor sources a launcher asks start-up to start (ACCELTRACE_SOURCES). */
enum { ACT_CFG_SOURCE_ASCEND = 1u << 0, ACT_CFG_SOURCE_CUDA = 1u << 1 };

/* The process-wide configuration, valid after a successful act_config_load(). */
extern act_config act_cfg;

/* Parse the environment into `cfg`. On error returns ACT_E_CONFIG and
 * writes "Invalid value for ACCELTRACE_X: 'v'. Allowed: ..." into `err`. */
int act_config_load(act_config *cfg, char *err, size_t errlen);
/* Defaults only. */
void act_config_defaults(act_config *cfg);
/* Parse a size such as "64M", "4096", "1G" (strict). */
int act_config_parse_size(const char *s, uint64_t *out);

/* Validate the current environment without changing act_cfg: 0, or
 * ACT_E_CONFIG with the message in `err`. Exported so `acceltrace run`
 * can refuse to start a program (exit 2) with the same message the library
 * would print. */
int act_config_check_env(char *err, size_t errlen);
/* Validate one variable/value pair (e.g. one `run` option before it is
 * exported): 0, ACT_E_CONFIG with the message, ACT_E_NOTFOUND for a name
 * that is not an ACCELTRACE_* setting. Exported like act_config_check_env. */
int act_config_check_var(const char *name, const char *value, char *err, size_t errlen);
/* The "Allowed: ..." text of a variable (NULL when unknown). */
const char *act_config_allowed(const char *name);
/* ACCELTRACE_LOG levels; act_config_log_level() is ACT_LOG_INFO until the
 * configuration is loaded. quiet: nothing on stderr; error: failures only;
 * info: also one-time notices; debug: also start-up details. */
enum { ACT_LOG_QUIET = 0, ACT_LOG_ERROR = 1, ACT_LOG_INFO = 2, ACT_LOG_DEBUG = 3 };
int act_config_log_level(void);
/* ACCELTRACE_GZIP_THREADS as the table parses it, read now (a writer may
 * run where act_config_load never did: the CLI's export and merge); 0 when
 * unset or invalid (an invalid value is reported where the configuration
 * is checked, at start-up or by `run`). */
unsigned act_config_gzip_threads(void);
/* ACCELTRACE_DIRECT_IO the same way: the bytes a trace file gets through
 * the page cache before the rest is written with O_DIRECT (writers/obuf.c);
 * ACT_DIRECT_IO_DEFAULT when unset or invalid, ACT_DIRECT_IO_OFF for "off". */
#define ACT_DIRECT_IO_DEFAULT (64ull << 20)
#define ACT_DIRECT_IO_OFF     UINT64_MAX
uint64_t act_config_direct_io(void);
/* Nonzero when `v` is a valid ACCELTRACE_HOOKS value. */
int act_config_hooks_valid(const char *v);

#endif
