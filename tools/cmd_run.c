/*
 * cmd_run.c -- `acceltrace run [OPTIONS] -- PROGRAM [ARGS...]`.
 *
 * Starts PROGRAM with the injection set up (OpenCL layer or preload shim,
 * NVTX injection, and on request CUDA injection (--cuda) or the mspti
 * preload (--ascend); a private spool directory), waits for it, turns the spools into a trace
 * and prints the summary. The program's stdout/stderr are untouched, it is
 * started with execvp (no shell), and its exit status is passed through (a
 * death by signal N gives 128+N).
 *
 * Every option maps onto an ACCELTRACE_* variable (docs/configuration.md),
 * set in the child's environment only: the launcher itself never records.
 * The whole configuration is validated before the program starts; an
 * invalid value stops here with exit status 2.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acceltrace.h"
#include "api/export.h"
#include "cmd.h"
#include "core/config.h"
#include "core/internal.h"
#include "init/hooks.h"

#ifndef ACT_LIBDIR_REL
#define ACT_LIBDIR_REL "../lib"
#endif

typedef struct run_opts {
    const char *out;
    int force;
    int summary;
    int by_range;
    int preload;
    int keep_spool;
    int cuda;   /* --cuda: CUDA_INJECTION64_PATH (the driver starts the CUPTI source) */
    int ascend; /* --ascend: preload libmspti + libacceltrace, ACCELTRACE_SOURCES=ascend */
    const char *metadata[256];
    int n_metadata;
} run_opts;

/* Options that are nothing but a configuration variable. */
static const struct {
    const char *option;
    const char *variable;
    const char *help;
} env_options[] = {
    {"buffer-size", "ACCELTRACE_BUFFER_SIZE", "recorder capacity per process (e.g. 64M)"},
    {"chunk-size", "ACCELTRACE_CHUNK_SIZE", "bytes per thread chunk (e.g. 256K)"},
    {"hooks", "ACCELTRACE_HOOKS", "hook groups: all, or a comma list (e.g. all,-activity.cupti)"},
    {"capture-range", "ACCELTRACE_CAPTURE_RANGE", "none | api | nvtx:NAME"},
    {"delay", "ACCELTRACE_DELAY", "seconds to wait before recording"},
    {"duration", "ACCELTRACE_DURATION", "seconds to record (0 = until exit)"},
    {"drain-timeout", "ACCELTRACE_DRAIN_TIMEOUT", "ms to wait for device activity at exit"},
    {"log", "ACCELTRACE_LOG", "quiet | error | info | debug"},
    {"mode", "ACCELTRACE_TRACE_MODE", "trace file permissions, octal (default 0600)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: acceltrace run [OPTIONS] [--] PROGRAM [ARGS...]\n"
               "\n"
               "Run PROGRAM, trace its host calls and device activity, write a Chrome\n"
               "trace (opens in Perfetto) and print a summary. PROGRAM's output and exit\n"
               "status are passed through (death by signal N exits with 128+N).\n"
               "\n"
               "options:\n"
               "  -o, --output FILE       trace file (default: PROGRAM.PID.trace.json)\n"
               "  -f, --force             overwrite FILE if it exists\n"
               "      --no-summary        do not print the summary on stderr\n"
               "      --summary-by-range  attribute device time to annotated ranges\n"
               "      --metadata KEY=VALUE  add a top-level member to the trace (repeatable)\n"
               "      --preload           intercept OpenCL with LD_PRELOAD instead of the\n"
               "                          ICD-loader layer (for loaders without layer support;\n"
               "                          misses programs that dlopen libOpenCL)\n"
               "      --keep-spool        keep the raw spool directory (its path is printed)\n"
               "      --cuda              trace CUDA through CUPTI: the CUDA driver loads\n"
               "                          libacceltrace.so (CUDA_INJECTION64_PATH) at cuInit\n"
               "      --ascend            trace Ascend NPUs through mspti: preloads\n"
               "                          $ASCEND_HOME_PATH/lib64/libmspti.so (or\n"
               "                          $ACCELTRACE_MSPTI_LIB) and libacceltrace.so, which\n"
               "                          starts the mspti source when the program loads\n");
    for (size_t i = 0; i < sizeof(env_options) / sizeof(env_options[0]); i++)
        fprintf(f, "      --%s=VALUE%*s%s [%s]\n", env_options[i].option,
                (int)(16 - strlen(env_options[i].option)), "", env_options[i].help,
                env_options[i].variable);
    fprintf(f, "  -h, --help              show this help\n");
}

/* Directory holding this executable, for finding the library beside it. */
static int self_dir(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return 0;
}

/* Find libacceltrace (or the preload shim) as built beside this tool. */
static int find_library(const char *name, char *out, size_t len)
{
    const char *env = secure_getenv("ACCELTRACE_LIBRARY_DIR");
    char dir[PATH_MAX];
    const char *cands[3];
    int n = 0;
    if (env && *env)
        cands[n++] = env;
    if (self_dir(dir, sizeof(dir)) == 0)
        cands[n++] = dir;
    for (int i = 0; i < n; i++) {
        const char *subs[] = {"/" ACT_LIBDIR_REL "/", "/../lib/", "/"};
        for (size_t j = 0; j < 3; j++) {
            if (i == 0 && env && *env && j != 2)
                continue;
            snprintf(out, len, "%s%s%s", cands[i], subs[j], name);
            char real[PATH_MAX];
            if (access(out, R_OK) == 0 && realpath(out, real)) {
                snprintf(out, len, "%s", real);
                return 0;
            }
        }
    }
    return -1;
}

static int prepend_env(const char *var, const char *value, const char *sep)
{
    const char *old = getenv(var);
    if (!old || !*old)
        return setenv(var, value, 1);
    size_t n = strlen(value) + strlen(sep) + strlen(old) + 1;
    char *buf = malloc(n);
    if (!buf)
        return -1;
    snprintf(buf, n, "%s%s%s", value, sep, old);
    int rc = setenv(var, buf, 1);
    free(buf);
    return rc;
}

static int parse_args(int argc, char **argv, run_opts *o, int *prog_index)
{
    enum {
        OPT_NO_SUMMARY = 256,
        OPT_BY_RANGE,
        OPT_METADATA,
        OPT_PRELOAD,
        OPT_KEEP,
        OPT_CUDA,
        OPT_ASCEND,
        OPT_ENV
    };
    struct option longs[32] = {
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {"no-summary", no_argument, NULL, OPT_NO_SUMMARY},
        {"summary-by-range", no_argument, NULL, OPT_BY_RANGE},
        {"metadata", required_argument, NULL, OPT_METADATA},
        {"preload", no_argument, NULL, OPT_PRELOAD},
        {"keep-spool", no_argument, NULL, OPT_KEEP},
        {"cuda", no_argument, NULL, OPT_CUDA},
        {"ascend", no_argument, NULL, OPT_ASCEND},
    };
    size_t nl = 10;
    for (size_t i = 0; i < sizeof(env_options) / sizeof(env_options[0]); i++)
        longs[nl++] =
            (struct option){env_options[i].option, required_argument, NULL, OPT_ENV + (int)i};
    optind = 1;
    opterr = 1;
    int c, li;
    /* '+': stop at the first non-option, which is the program. */
    while ((c = getopt_long(argc, argv, "+o:fh", longs, &li)) != -1) {
        switch (c) {
        case 'o': o->out = optarg; break;
        case 'f': o->force = 1; break;
        case 'h': usage(stdout); exit(0);
        case OPT_NO_SUMMARY: o->summary = 0; break;
        case OPT_BY_RANGE: o->by_range = 1; break;
        case OPT_PRELOAD: o->preload = 1; break;
        case OPT_KEEP: o->keep_spool = 1; break;
        case OPT_CUDA: o->cuda = 1; break;
        case OPT_ASCEND: o->ascend = 1; break;
        case OPT_METADATA:
            if (!strchr(optarg, '=') || optarg[0] == '=') {
                fprintf(stderr, "acceltrace: --metadata wants KEY=VALUE, got '%s'\n", optarg);
                return -1;
            }
            if (o->n_metadata >= 255) {
                fprintf(stderr, "acceltrace: too many --metadata options (255 at most)\n");
                return -1;
            }
            o->metadata[o->n_metadata++] = optarg;
            break;
        default:
            if (c >= OPT_ENV && c < OPT_ENV + (int)(sizeof(env_options) / sizeof(env_options[0]))) {
                setenv(env_options[c - OPT_ENV].variable, optarg, 1);
                break;
            }
            usage(stderr);
            return -1;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "acceltrace: run: no program given\n");
        usage(stderr);
        return -1;
    }
    *prog_index = optind;
    return 0;
}

static pid_t child_pid = -1;

static void forward_signal(int sig)
{
    if (child_pid > 0)
        kill(child_pid, sig);
}

/* The libmspti that --ascend preloads (the source's own lookup order,
 * src/sources/activity/activity.h, minus the bare soname: preloading
 * needs a file we can name). */
static int mspti_library(char *out, size_t len)
{
    const char *lib = secure_getenv("ACCELTRACE_MSPTI_LIB");
    if (lib && *lib) {
        snprintf(out, len, "%s", lib);
        return 0;
    }
    const char *home = secure_getenv("ASCEND_HOME_PATH");
    if (!home || !*home)
        return -1;
    snprintf(out, len, "%s/lib64/libmspti.so", home);
    return 0;
}

/* Configure the child's environment, then exec the program. `lib` is what
 * intercepts OpenCL (the layer, or the preload shim); `core` is the
 * absolute path of libacceltrace.so (NULL when it was not found); `mspti`
 * the libmspti to preload (--ascend). */
static void child_exec(char **prog, const char *spool, const char *lib, const char *core,
                       const char *mspti, const run_opts *o)
{
    setenv("ACCELTRACE_SPOOL_DIR", spool, 1);
    if (o->preload)
        prepend_env("LD_PRELOAD", lib, ":");
    else
        prepend_env("OPENCL_LAYERS", lib, ":");
    /* NVTX (header-only in the program) and the CUDA driver dlopen these on
     * their first call: the same path as the layer, so one library
     * instance serves them all (a second copy would stand down, see
     * src/init/conflict.c). */
    if (core)
        setenv("NVTX_INJECTION64_PATH", core, 1);
    if (o->cuda && core)
        setenv("CUDA_INJECTION64_PATH", core, 1);
    /* mspti hooks the CANN runtime only when preloaded, and nothing in an
     * Ascend program calls acceltrace: preload libacceltrace.so too and
     * ask its load-time start-up (src/init/autostart.c) to start mspti. */
    if (o->ascend && core && mspti) {
        char pre[2 * PATH_MAX + 2];
        snprintf(pre, sizeof(pre), "%s:%s", mspti, core);
        prepend_env("LD_PRELOAD", pre, ":");
        prepend_env("ACCELTRACE_SOURCES", "ascend", ",");
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    execvp(prog[0], prog);
    fprintf(stderr, "acceltrace: cannot run '%s': %s\n", prog[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
}

/* The spool directory is ours (mkdtemp, 0700) and flat. */
static void remove_dir(const char *dir)
{
    int rc = act_dir_remove_flat(dir);
    if (rc < 0)
        fprintf(stderr, "acceltrace: could not remove the spool directory %s: %s\n", dir,
                strerror(-rc));
}

/* ACCELTRACE_HOOKS may only name groups of the library that will be
 * injected: it lists them (act_hooks_group_names; loading it runs nothing,
 * autostart.c needs a launcher's variables; it stays loaded in the
 * launcher, which is harmless), and an item that selects none
 * is refused like any invalid value, before the program starts. 0, or 2
 * after saying why. */
static int check_hook_groups(const char *lib, const char *spec)
{
    if (!spec[0] || !strcmp(spec, "all")) /* the default selects every group */
        return 0;
    void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
    int (*names)(const char **, int) =
        h ? (int (*)(const char **, int))dlsym(h, "act_hooks_group_names") : NULL;
    const char *groups[256];
    int n = names ? names(groups, (int)ACT_ARRAY_SIZE(groups)) : 0;
    if (n > (int)ACT_ARRAY_SIZE(groups))
        n = (int)ACT_ARRAY_SIZE(groups);
    size_t len;
    const char *bad = n > 0 ? act_hooks_spec_unmatched(spec, groups, n, &len) : NULL;
    if (bad) {
        fprintf(stderr,
                "acceltrace: Invalid value for ACCELTRACE_HOOKS: '%s'. Allowed: all, or a "
                "comma-separated list of these hook groups or their dotted prefixes, each "
                "optionally preceded by - to exclude it:",
                spec);
        for (int i = 0; i < n; i++)
            fprintf(stderr, "%s %s", i ? "," : "", groups[i]);
        fprintf(stderr, " ('%.*s' selects none)\n", (int)len, bad);
    }
    /* The handle stays open: the library's hook registry (what it listed)
     * lives in its data, and the process execs or exits soon anyway. */
    return bad ? 2 : 0;
}

int act_cmd_run(int argc, char **argv)
{
    run_opts o = {.summary = 1};
    int pi;
    if (parse_args(argc, argv, &o, &pi) != 0)
        return 2;
    char **prog = argv + pi;

    char err[512];
    act_config cfg;
    if (act_config_load(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "acceltrace: %s\n", err);
        return 2;
    }

    char outbuf[PATH_MAX];
    if (!o.out) {
        const char *base = strrchr(prog[0], '/') ? strrchr(prog[0], '/') + 1 : prog[0];
        snprintf(outbuf, sizeof(outbuf), "%s.%ld.trace.json", base, (long)getpid());
        o.out = outbuf;
    }
    struct stat st;
    if (!o.force && lstat(o.out, &st) == 0) {
        fprintf(stderr, "acceltrace: '%s' exists; use --force to overwrite it\n", o.out);
        return 2;
    }

    char lib[PATH_MAX];
    const char *libname = o.preload ? "libacceltrace_preload.so" : "libacceltrace.so";
    if (find_library(libname, lib, sizeof(lib)) != 0) {
        fprintf(stderr,
                "acceltrace: cannot find %s next to the acceltrace command "
                "(set ACCELTRACE_LIBRARY_DIR)\n",
                libname);
        return 2;
    }

    /* libacceltrace.so itself, for the injection variables. */
    char core[PATH_MAX];
    int have_core = 1;
    if (o.preload)
        have_core = find_library("libacceltrace.so", core, sizeof(core)) == 0;
    else
        snprintf(core, sizeof(core), "%s", lib);
    if (!have_core && (o.cuda || o.ascend)) {
        fprintf(stderr,
                "acceltrace: --%s: cannot find libacceltrace.so next to the acceltrace "
                "command (set ACCELTRACE_LIBRARY_DIR)\n",
                o.cuda ? "cuda" : "ascend");
        return 2;
    }
    if (have_core && check_hook_groups(core, cfg.hooks) != 0)
        return 2;
    char mspti[PATH_MAX];
    if (o.ascend && mspti_library(mspti, sizeof(mspti)) != 0) {
        fprintf(stderr, "acceltrace: --ascend: set ASCEND_HOME_PATH (the CANN installation) or "
                        "ACCELTRACE_MSPTI_LIB to find libmspti.so\n");
        return 2;
    }
    if (o.ascend && strchr(mspti, '/') && access(mspti, R_OK) != 0) {
        fprintf(stderr, "acceltrace: --ascend: cannot read %s: %s\n", mspti, strerror(errno));
        return 2;
    }

    const char *tmp = getenv("TMPDIR");
    char spool[PATH_MAX];
    snprintf(spool, sizeof(spool), "%s/acceltrace-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(spool)) {
        fprintf(stderr, "acceltrace: cannot create a spool directory in %s: %s\n",
                tmp && *tmp ? tmp : "/tmp", strerror(errno));
        return 2;
    }

    fflush(NULL);
    uint64_t t_start = act_clock_now();
    child_pid = fork();
    if (child_pid < 0) {
        fprintf(stderr, "acceltrace: fork: %s\n", strerror(errno));
        rmdir(spool);
        return 2;
    }
    if (child_pid == 0)
        child_exec(prog, spool, lib, have_core ? core : NULL, o.ascend ? mspti : NULL, &o);

    struct sigaction sa = {.sa_handler = forward_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    int status = 0;
    while (waitpid(child_pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "acceltrace: waitpid: %s\n", strerror(errno));
            status = 0;
            break;
        }
    }
    uint64_t t_exit = act_clock_now();
    int code = WIFEXITED(status)     ? WEXITSTATUS(status)
               : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                     : 1;

    o.metadata[o.n_metadata] = NULL;
    act_export_opts eo = {
        .spool_dir = spool,
        .out_path = o.out,
        .force = o.force,
        .argv = (const char *const *)prog,
        .argc = argc - pi,
        .summary = o.summary ? stderr : NULL,
        .summary_by_range = o.by_range,
        .child_status = status,
        .extra_metadata = o.metadata,
        .trace_mode = cfg.trace_mode,
    };
    int rc = act_trace_export(&eo);
    if (rc < 0 && rc != ACT_E_FORMAT)
        fprintf(stderr, "acceltrace: could not write the trace '%s': %s\n", o.out,
                act_strerror(rc));
    else /* The two times tell the program's run from what tracing adds after it. */
        fprintf(stderr, "acceltrace: trace written to %s in %.0f ms (program ran %.3f s)\n", o.out,
                (double)(act_clock_now() - t_exit) / 1e6, (double)(t_exit - t_start) / 1e9);

    if (o.keep_spool)
        fprintf(stderr, "acceltrace: spool kept in %s\n", spool);
    else
        remove_dir(spool);
    return code;
}
