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
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acceltrace.h"
#include "api/export.h"
#include "cmd.h"
#include "core/config.h"
#include "core/dist.h"
#include "core/internal.h"
#include "help.h"
#include "init/hooks.h"
#include "outname.h"
#include "run_args.h"
#include "run_cleanup.h"
#include "run_info.h"
#include "run_stream.h"
#include "self_dir.h"
#include "trigger.h"

/* Exit status of `run` when the trace was not written (EX_IOERR). */
#define ACT_RUN_NOT_WRITTEN 74

#ifndef ACT_LIBDIR_REL
#define ACT_LIBDIR_REL "../lib"
#endif

/* ACCELTRACE_LOG of this run: quiet silences the launcher's own lines
 * too, error keeps only failures (docs/configuration.md). */
static int run_log_level = ACT_LOG_INFO;

/* The write end of the pipe on which the child reports a failed execvp
 * (its errno); close-on-exec, so a started program closes it. */
static int exec_report_fd = -1;

/* Find libacceltrace (or the preload shim) as built beside this tool. */
static int find_library(const char *name, char *out, size_t len)
{
    const char *env = secure_getenv("ACCELTRACE_LIBRARY_DIR");
    char dir[PATH_MAX];
    const char *cands[3];
    int n = 0;
    if (env && *env)
        cands[n++] = env;
    if (act_self_dir(dir, sizeof(dir)) == 0)
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

/*
 * Signals. While the program runs, a signal that the launcher gets and the
 * program would not get anyway is passed on to it, once: the program must
 * behave as it does untraced. The program stays in the launcher's process
 * group, so what the terminal sends to the foreground group (Ctrl-C,
 * Ctrl-\, Ctrl-Z, hang-up: si_code SI_KERNEL) and what anyone sends to the
 * group reaches it directly; SIGINT and SIGQUIT are such group signals by
 * convention (shells and make do not pass them on either). SIGTERM, SIGHUP,
 * SIGUSR1 and SIGUSR2 sent to the launcher alone are passed on. A program
 * that moved to another process group gets everything passed on. The
 * program's pid is signalled only until it is reaped: the launcher waits
 * with WNOWAIT, stops passing signals on, then reaps.
 *
 * Once the program has ended, the first of these signals interrupts the
 * export cleanly (no trace, no temporary file, the spool kept); a further
 * one has its default effect. Signals the launcher was started with
 * ignored (nohup, a background job) stay ignored, for it and the program.
 */
/* SIGUSR2 is not among them: it is the trigger (cmd_trigger.c), for the
 * launcher only. */
static const int handled_signals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1};
#define N_HANDLED (sizeof(handled_signals) / sizeof(handled_signals[0]))
static struct sigaction saved_actions[N_HANDLED];
static volatile sig_atomic_t child_pid = -1; /* > 0 while it may be signalled */
static volatile sig_atomic_t exporting;
static volatile sig_atomic_t interrupted; /* the signal that stopped the export */

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int saved = errno;
    if (exporting) {
        if (!interrupted)
            interrupted = sig;
        signal(sig, SIG_DFL);
    } else if (child_pid > 0) {
        pid_t p = (pid_t)child_pid;
        int group_sent = si->si_code == SI_KERNEL || sig == SIGINT || sig == SIGQUIT;
        if (!(group_sent && getpgid(p) == getpgrp()))
            kill(p, sig);
    }
    errno = saved;
}

/* Called before fork, with the handled signals blocked (`old` gets the
 * mask to restore). */
static void signals_install(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < N_HANDLED; i++)
        sigaddset(&set, handled_signals[i]);
    sigprocmask(SIG_BLOCK, &set, old);
    struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_HANDLED; i++) {
        sigaction(handled_signals[i], NULL, &saved_actions[i]);
        if (saved_actions[i].sa_handler != SIG_IGN)
            sigaction(handled_signals[i], &sa, NULL);
    }
}

/* In the child before exec: the dispositions and mask it was started with. */
static void signals_restore(const sigset_t *old)
{
    for (size_t i = 0; i < N_HANDLED; i++)
        sigaction(handled_signals[i], &saved_actions[i], NULL);
    sigprocmask(SIG_SETMASK, old, NULL);
}

/* Wait for the program without reaping it (its pid cannot be reused while
 * it is a zombie), stop signalling it, then reap: returns its wait status. */
static int wait_program(pid_t pid, const sigset_t *old)
{
    siginfo_t si;
    while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) != 0 && errno == EINTR)
        ;
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < N_HANDLED; i++)
        sigaddset(&set, handled_signals[i]);
    sigprocmask(SIG_BLOCK, &set, NULL);
    child_pid = -1;
    exporting = 1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "acceltrace: waitpid: %s\n", strerror(errno));
            status = 0;
            break;
        }
    }
    sigprocmask(SIG_SETMASK, old, NULL);
    return status;
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

/* A Python program's torch ops (docs/torch.md): the start-up hook first on
 * PYTHONPATH, and the torch plugin it loads when the program imports
 * torch. Nothing when they were not built; a program that is not Python
 * never reads them. */
static void python_hook_env(void)
{
    char hook[PATH_MAX], plugin[PATH_MAX];
    if (find_library("acceltrace-pyhook/sitecustomize.py", hook, sizeof(hook)) != 0)
        return;
    *strrchr(hook, '/') = '\0';
    prepend_env("PYTHONPATH", hook, ":");
    const char *set = getenv("ACCELTRACE_TORCH_PLUGIN");
    if ((!set || !*set) && find_library("libacceltrace_torch.so", plugin, sizeof(plugin)) == 0)
        setenv("ACCELTRACE_TORCH_PLUGIN", plugin, 1);
}

/* Configure the child's environment, then exec the program. `lib` is what
 * intercepts OpenCL (the layer, or the preload shim); `core` is the
 * absolute path of libacceltrace.so (NULL when it was not found); `mspti`
 * the libmspti to preload (--ascend). */
static void child_exec(char **prog, const char *spool, const char *lib, const char *core,
                       const char *mspti, const run_opts *o, const sigset_t *sigmask,
                       const sigset_t *trigger_mask, int cleaner)
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
    if (!o->torch_off)
        python_hook_env();
    signals_restore(sigmask);
    act_trigger_child_reset(trigger_mask);
    act_run_cleaner_spawn(cleaner); /* nobody's child: the program is run's only one */
    execvp(prog[0], prog);
    int e = errno;
    if (exec_report_fd >= 0 && write(exec_report_fd, &e, sizeof(e)) != (ssize_t)sizeof(e))
        exec_report_fd = -1; /* unreported: the launcher takes it for a program that ran */
    fprintf(stderr, "acceltrace: run: cannot run '%s': %s\n", prog[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

/* Whether the program never started (the child said why): read once the
 * child is reaped, when the pipe's write end is closed (at the exec, or at
 * the child's exit), so the read never waits. */
static int exec_failed(int fd)
{
    if (fd < 0)
        return 0;
    int e = 0;
    ssize_t n;
    while ((n = read(fd, &e, sizeof(e))) < 0 && errno == EINTR)
        ;
    close(fd);
    return n == (ssize_t)sizeof(e);
}

/* One line instead of an empty summary (as nsys says "No CUDA events
 * collected"): what was traced, and what else could have been. */
static void say_nothing_recorded(const char *prog, const run_opts *o)
{
    fprintf(stderr,
            "acceltrace: run: nothing was recorded: '%s' made no traced call (OpenCL%s%s) and "
            "no annotation (NVTX, acceltrace API)%s\n",
            prog, o->cuda ? ", CUDA" : "", o->ascend ? ", Ascend" : "",
            o->cuda || o->ascend ? "" : "; CUDA is traced with --cuda, Ascend with --ascend");
}

/* What a trigger needs to write a trace of the spool as it is now. */
typedef struct trigger_ctx {
    const run_opts *o;
    const char *spool;
    char **prog;
    int argc;
    const act_config *cfg;
    uint64_t win_start, win_end; /* --capture-range=trigger: the last window */
} trigger_ctx;

/* Trigger n (trigger.c): the trace of the spool as it is now, its
 * path or why not in text, for the trigger that asked. */
static act_trigger_outcome on_trigger(void *arg, unsigned n, char *text, size_t len)
{
    trigger_ctx *t = arg;
    uint64_t now = act_clock_now();
    if (t->o->trigger_capture && n % 2) {
        t->win_start = now;
        t->win_end = 0;
        fprintf(stderr, "acceltrace: run: trigger %u: capture window opened\n", n);
        return ACT_TRIGGER_OPENED;
    }
    if (t->o->trigger_capture)
        t->win_end = now;
    char path[PATH_MAX];
    act_trigger_name(t->o->out, n, path, sizeof(path));
    act_export_opts eo = {
        .spool_dir = t->spool,
        .out_path = path,
        .force = t->o->force,
        .argv = (const char *const *)t->prog,
        .argc = t->argc,
        .child_status = -1,
        .extra_metadata = t->o->metadata,
        .trace_mode = t->cfg->trace_mode,
        .window_start_ns = t->o->trigger_capture ? t->win_start : 0,
        .window_end_ns = t->o->trigger_capture ? t->win_end : 0,
    };
    int rc = act_trace_export(&eo);
    if (rc < 0 && rc != ACT_E_FORMAT) {
        fprintf(stderr, "acceltrace: run: trigger %u: could not write the trace '%s': %s\n", n,
                path, act_strerror(rc));
        snprintf(text, len, "could not write the trace '%s': %s", path, act_strerror(rc));
        return ACT_TRIGGER_FAILED;
    }
    fprintf(stderr, "acceltrace: run: trigger %u: trace written to %s in %.0f ms\n", n, path,
            (double)(act_clock_now() - now) / 1e6);
    char abs[PATH_MAX];
    snprintf(text, len, "%s", realpath(path, abs) ? abs : path);
    return ACT_TRIGGER_WRITTEN;
}

/* Where the time from the program's exit to the launcher's return went
 * (--log=debug; bench/bench_workload.sh reads the line): the tail is what
 * the reading thread had not taken when the program exited. */
static void print_after_exit(const act_export_times *t, uint64_t stop_ns, uint64_t live_records,
                             uint64_t total_ns)
{
    uint64_t tail = t->records > live_records ? t->records - live_records : 0;
    uint64_t parts = stop_ns + t->read_ns + t->events_ns + t->close_ns + t->summary_ns;
    fprintf(stderr,
            "acceltrace: run: after the exit: %.1f ms in all; reader stopped %.1f ms, tail of "
            "%llu records (of %llu) read %.1f ms, events written %.1f ms, file closed %.1f ms, "
            "summary %.1f ms, spool handed off %.1f ms\n",
            (double)total_ns / 1e6, (double)stop_ns / 1e6, (unsigned long long)tail,
            (unsigned long long)t->records, (double)t->read_ns / 1e6, (double)t->events_ns / 1e6,
            (double)t->close_ns / 1e6, (double)t->summary_ns / 1e6,
            (double)(total_ns > parts ? total_ns - parts : 0) / 1e6);
    if (t->early_ns)
        fprintf(stderr,
                "acceltrace: run: at the seal, before the exit: the last %llu records read and "
                "every event written in %.1f ms\n",
                (unsigned long long)t->early_records, (double)t->early_ns / 1e6);
}

/* A spool kept for later: cut to what it used (up to 4 GiB apart by
 * default, sparse; said, not fatal, when it cannot be), with what
 * `acceltrace export` needs to write the trace again beside it (run.json).
 * Returns act_run_info_save's result. */
static int keep_spool(const char *spool, const act_export_opts *eo, const char *out)
{
    char err[512] = "";
    if (act_export_spools_shrink(spool, err, sizeof(err)) < 0)
        fprintf(stderr, "acceltrace: run: could not cut the kept spool to what it used: %s\n", err);
    return act_run_info_save(spool, eo->argv, eo->argc, eo->extra_metadata, eo->child_pid,
                             eo->child_status, eo->trace_mode, out);
}

/* The trace was not written: the spool stays, with what the later export
 * needs (run.json), and the command that writes the trace from it. */
static void keep_for_export(const char *spool, const act_export_opts *eo, const run_opts *o)
{
    int src = keep_spool(spool, eo, o->out);
    if (src < 0)
        fprintf(stderr,
                "acceltrace: could not save the command line and exit status beside the "
                "spool: %s\n",
                strerror(-src));
    fprintf(stderr, "acceltrace: the spool is kept in %s; to write the %s from it:\n", spool,
            act_outname_is_template(o->out) ? "missing traces" : "trace");
    fprintf(stderr, "acceltrace:   acceltrace export ");
    act_shell_word_print(stderr, spool);
    fprintf(stderr, " -o ");
    act_shell_word_print(stderr, o->out);
    fprintf(stderr, "%s\n", o->force ? " --force" : "");
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
                "acceltrace: run: Invalid value for ACCELTRACE_HOOKS: '%s'. Allowed: all, or a "
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

/* Bytes of memory an export takes per byte of a full ring of the smallest
 * records (range push/pop pairs): its peak RSS over the ring's size,
 * 3.65-3.8 measured for a process that has ended (BENCHMARKS.md, "Ring
 * export"), plus the consistent copy a trigger makes of a live ring
 * (one byte per byte), rounded up. */
#define RING_EXPORT_PER_BYTE 5

/* A number read from `path` (cgroup files: "max" reads as none), 0 if none. */
static uint64_t file_number(const char *path)
{
    FILE *f = fopen(path, "re");
    unsigned long long v = 0;
    if (f && fscanf(f, "%llu", &v) != 1)
        v = 0;
    if (f)
        fclose(f);
    return v;
}

/* The least memory limit of this process' cgroup, v2 (memory.max) or v1
 * (memory.limit_in_bytes), at its path from /proc/self/cgroup or at the
 * mount's root (a cgroup namespace): 0 if none. */
static uint64_t cgroup_memory_max(void)
{
    static const struct {
        const char *prefix, *dir, *file;
    } kinds[] = {{"0::", "/sys/fs/cgroup", "memory.max"},
                 {":memory:", "/sys/fs/cgroup/memory", "memory.limit_in_bytes"}};
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[PATH_MAX], path[2 * PATH_MAX];
    uint64_t least = 0;
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        for (size_t k = 0; k < ACT_ARRAY_SIZE(kinds); k++) {
            const char *at = strstr(line, kinds[k].prefix);
            if (!at || (k == 0 && at != line))
                continue;
            const char *cg = at + strlen(kinds[k].prefix);
            for (int root = 0; root < 2; root++) {
                snprintf(path, sizeof(path), "%s%s/%s", kinds[k].dir, root ? "" : cg,
                         kinds[k].file);
                uint64_t v = file_number(path);
                if (v && (!least || v < least))
                    least = v;
            }
        }
    }
    if (f)
        fclose(f);
    return least;
}

/* The memory an export in this launcher may use: the machine's, less if
 * its cgroup or its address space limit says so. */
static uint64_t export_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t mem = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
    uint64_t cg = cgroup_memory_max();
    struct rlimit rl;
    if (cg && cg < mem)
        mem = cg;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < mem)
        mem = rl.rlim_cur;
    return mem;
}

/* A ring whose trace could never be written once it is full is refused
 * before the program runs: the export's memory grows with the records it
 * reads (2 when the ring is full). 0, or 2 after saying why. */
static int check_ring(const act_config *cfg)
{
    uint64_t mem = export_memory();
    if (!cfg->ring_size || cfg->ring_size <= mem / RING_EXPORT_PER_BYTE)
        return 0;
    fprintf(stderr,
            "acceltrace: run: --ring=%lluM: writing the trace of a full ring this size takes "
            "about %llu MiB of memory (%d bytes per ring byte) and this launcher has %llu MiB: "
            "use --ring=%lluM at most\n",
            (unsigned long long)(cfg->ring_size >> 20),
            (unsigned long long)((cfg->ring_size >> 20) * RING_EXPORT_PER_BYTE),
            RING_EXPORT_PER_BYTE, (unsigned long long)(mem >> 20),
            (unsigned long long)((mem / RING_EXPORT_PER_BYTE) >> 20));
    return 2;
}

/* What one `run` has found before the program starts, and its spool. */
typedef struct run_ctx {
    run_opts o;
    char **prog;
    int argc; /* of prog */
    int per_process;
    act_config cfg;
    char outbuf[PATH_MAX];
    char lib[PATH_MAX];  /* the library injected */
    char core[PATH_MAX]; /* libacceltrace.so itself, for the injection variables */
    int have_core;
    char mspti[PATH_MAX];
    char spool[PATH_MAX];
    int cleaner[2]; /* act_run_cleaner_pair: [0] ours, [1] the helper's */
    int watch;      /* the reading thread's inotify watch, the helper's to close (-1) */
} run_ctx;

/* The trace's name, checked before the program runs: a trace that cannot
 * be written is known then. 0 or exit status 2 (said). */
static int run_check_output(run_ctx *r)
{
    char err[512];
    if (!r->o.out) {
        const char *base = strrchr(r->prog[0], '/') ? strrchr(r->prog[0], '/') + 1 : r->prog[0];
        snprintf(r->outbuf, sizeof(r->outbuf), "%s.%ld.trace.json", base, (long)getpid());
        r->o.out = r->outbuf;
    }
    r->per_process = act_outname_is_template(r->o.out);
    if (r->per_process && act_run_template_check(r->o.out, err, sizeof(err)) != 0) {
        fprintf(stderr, "acceltrace: run: -o '%s': %s\n", r->o.out, err);
        return 2;
    }
    if (!r->per_process && (act_out_path_check(r->o.out, r->o.force, err, sizeof(err)) != 0 ||
                            act_out_dir_probe(r->o.out, err, sizeof(err)) != 0)) {
        fprintf(stderr, "acceltrace: run: %s\n", err);
        return 2;
    }
    return 0;
}

/* The libraries the program is started with. 0 or exit status 2 (said). */
static int run_find_libraries(run_ctx *r)
{
    const run_opts *o = &r->o;
    const char *libname = o->preload ? "libacceltrace_preload.so" : "libacceltrace.so";
    if (find_library(libname, r->lib, sizeof(r->lib)) != 0) {
        fprintf(stderr,
                "acceltrace: run: cannot find %s next to the acceltrace command "
                "(set ACCELTRACE_LIBRARY_DIR)\n",
                libname);
        return 2;
    }
    r->have_core = 1;
    if (o->preload)
        r->have_core = find_library("libacceltrace.so", r->core, sizeof(r->core)) == 0;
    else
        snprintf(r->core, sizeof(r->core), "%s", r->lib);
    if (!r->have_core && (o->cuda || o->ascend)) {
        fprintf(stderr,
                "acceltrace: run: --%s: cannot find libacceltrace.so next to the acceltrace "
                "command (set ACCELTRACE_LIBRARY_DIR)\n",
                o->cuda ? "cuda" : "ascend");
        return 2;
    }
    if (r->have_core && check_hook_groups(r->core, r->cfg.hooks) != 0)
        return 2;
    if (o->ascend && mspti_library(r->mspti, sizeof(r->mspti)) != 0) {
        fprintf(stderr,
                "acceltrace: run: --ascend: set ASCEND_HOME_PATH (the CANN installation) or "
                "ACCELTRACE_MSPTI_LIB to find libmspti.so\n");
        return 2;
    }
    if (o->ascend && strchr(r->mspti, '/') && access(r->mspti, R_OK) != 0) {
        fprintf(stderr, "acceltrace: run: --ascend: cannot read %s: %s\n", r->mspti,
                strerror(errno));
        return 2;
    }
    return 0;
}

/* Everything checked before the program starts, and the spool directory
 * made. 0 or exit status 2 (said). */
static int run_prepare(run_ctx *r)
{
    char err[512];
    if (act_config_load(&r->cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "acceltrace: run: %s\n", err);
        return 2;
    }
    run_log_level = r->cfg.log_level;
    if (check_ring(&r->cfg) != 0 || run_check_output(r) != 0 || run_find_libraries(r) != 0)
        return 2;
    const char *tmp = act_temp_template(r->spool, sizeof(r->spool), "acceltrace");
    if (!act_dir_make_temp(r->spool)) {
        fprintf(stderr, "acceltrace: run: cannot create a spool directory in %s: %s\n", tmp,
                strerror(errno));
        return 2;
    }
    r->o.metadata[r->o.n_metadata] = NULL;
    return 0;
}

/* Arm the trigger channel and start the program: its pid, or -1 (said,
 * the spool removed). `sigmask` blocks what the launcher waits for;
 * report[0] reads a failed exec's report. */
static pid_t run_start(run_ctx *r, sigset_t *sigmask, int report[2])
{
    sigset_t saved_mask;
    int arm = act_trigger_arm(r->spool, &saved_mask);
    if (arm < 0)
        fprintf(stderr,
                "acceltrace: run: cannot open the trigger channel in %s (%s): 'acceltrace "
                "trigger' will refuse this run; SIGUSR2 to the launcher still works\n",
                r->spool, strerror(-arm));
    if (r->per_process) /* each process names its own trace (src/core/dist.c) */
        setenv("ACCELTRACE_OUTPUT_TEMPLATE", r->o.out, 1);
    fflush(NULL);
    signals_install(sigmask);
    if (pipe2(report, O_CLOEXEC) != 0)
        report[0] = report[1] = -1; /* a failed exec then looks like a program that ran */
    exec_report_fd = report[1];
    /* The helper that frees the spool once `run` has exited, started by
     * the program's child (run_cleanup.c). */
    act_run_cleaner_pair(r->cleaner);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "acceltrace: run: fork: %s\n", strerror(errno));
        for (int i = 0; i < 2; i++)
            if (r->cleaner[i] >= 0)
                close(r->cleaner[i]);
        act_trigger_disarm(NULL);
        rmdir(r->spool);
        return -1;
    }
    if (pid == 0)
        child_exec(r->prog, r->spool, r->lib, r->have_core ? r->core : NULL,
                   r->o.ascend ? r->mspti : NULL, &r->o, sigmask, &saved_mask, r->cleaner[1]);
    child_pid = pid;
    if (r->cleaner[1] >= 0)
        close(r->cleaner[1]);
    if (report[1] >= 0)
        close(report[1]);
    exec_report_fd = -1; /* the child's alone */
    /* Our writes past the launcher's RLIMIT_FSIZE fail with EFBIG, said
     * and handled as any write error (exit 74, the spool kept), instead of
     * killing the launcher; set after the fork, the program keeps its own
     * disposition. */
    struct sigaction no_xfsz = {.sa_handler = SIG_IGN};
    sigemptyset(&no_xfsz.sa_mask);
    sigaction(SIGXFSZ, &no_xfsz, NULL);
    return pid;
}

/* The export's options for this run's program `pid`. */
static act_export_opts run_export_opts(run_ctx *r, pid_t pid)
{
    const run_opts *o = &r->o;
    return (act_export_opts){
        .spool_dir = r->spool,
        .out_path = o->out,
        .force = o->force,
        .argv = (const char *const *)r->prog,
        .argc = r->argc,
        .summary = o->summary && run_log_level > ACT_LOG_QUIET ? stderr : NULL,
        .progress = isatty(2) && run_log_level >= ACT_LOG_INFO ? stderr : NULL,
        .summary_by_range = o->by_range,
        .child_status = -1,
        .extra_metadata = o->metadata,
        .trace_mode = r->cfg.trace_mode,
        .child_pid = pid,
        .cancel = &interrupted,
    };
}

/* The debug line of what was read while the program ran. */
static void say_streamed(const act_export_live *live)
{
    if (!live || run_log_level < ACT_LOG_DEBUG)
        return;
    fprintf(stderr,
            "acceltrace: run: %llu records were read while the program ran, %llu events "
            "written (%llu device ops), spool pages dropped %llu times\n",
            (unsigned long long)act_export_live_records(live),
            (unsigned long long)act_export_live_written(live),
            (unsigned long long)act_export_live_devops(live),
            (unsigned long long)act_export_live_drops(live));
}

/* A trace not written (rc), or written without processes it could not
 * read: said, the spool kept for `acceltrace export`. The exit status, or
 * -1 when the trace is complete. */
static int run_not_written(run_ctx *r, act_export_opts *eo, int rc, int missing,
                           const act_export_times *times, int replaced)
{
    const run_opts *o = &r->o;
    if (interrupted || (rc < 0 && rc != ACT_E_FORMAT)) {
        /* Failures are said whatever the log level. */
        if (interrupted)
            fprintf(stderr, "acceltrace: run: interrupted by SIG%s: the trace was not written\n",
                    sigabbrev_np(interrupted) ? sigabbrev_np(interrupted) : "?");
        else if (r->per_process) /* each was named with why */
            fprintf(stderr, "acceltrace: run: %d trace%s of '%s' %s not written\n", missing,
                    missing == 1 ? "" : "s", o->out, missing == 1 ? "was" : "were");
        else /* the line before says why, when it was a file error */
            fprintf(stderr, "acceltrace: run: the trace '%s' was not written%s%s\n", o->out,
                    rc == ACT_E_IO ? "" : ": ", rc == ACT_E_IO ? "" : act_strerror(rc));
        if (replaced >= 0)
            close(replaced);
        keep_for_export(r->spool, eo, o);
        return interrupted ? 128 + interrupted : ACT_RUN_NOT_WRITTEN;
    }
    if (!r->per_process && rc == ACT_E_FORMAT && times->unread) {
        /* Written without the processes it could not read: said, not exit
         * 0, and the spool kept for an export with more memory. */
        fprintf(stderr,
                "acceltrace: run: the trace '%s' lacks %llu process%s whose spool could not be "
                "read for want of memory (named in its errors)\n",
                o->out, (unsigned long long)times->unread, times->unread == 1 ? "" : "es");
        if (replaced >= 0)
            close(replaced);
        run_opts again = *o;
        again.force = 1; /* the incomplete trace is there */
        keep_for_export(r->spool, eo, &again);
        return ACT_RUN_NOT_WRITTEN;
    }
    return -1;
}

/* The trace written: what is said after it, the spool kept or let go. */
static void run_written(run_ctx *r, const act_export_opts *eo, const act_export_times *times,
                        int replaced)
{
    const run_opts *o = &r->o;
    /* A kept spool holds what `acceltrace export` needs to write this
     * trace again (run.json): the same file, streamed or not. */
    if (o->keep_spool)
        (void)keep_spool(r->spool, eo, o->out);
    if (o->keep_spool && run_log_level >= ACT_LOG_INFO)
        fprintf(stderr, "acceltrace: run: spool kept in %s\n", r->spool);
    int held[ACT_RUN_HELD] = {replaced, r->watch};
    r->watch = -1;
    act_run_free_detached(r->cleaner[0], o->keep_spool ? NULL : r->spool, held);
}

int act_cmd_run(int argc, char **argv)
{
    run_ctx *r = calloc(1, sizeof(*r)); /* ~20 KiB of paths: not on the stack */
    if (!r) {
        fprintf(stderr, "acceltrace: run: out of memory\n");
        return 2;
    }
    r->cleaner[0] = r->cleaner[1] = r->watch = -1;
    r->o = (run_opts){.summary = 1, .stream_ms = 0}; /* 0: run_stream.h's default */
    int pi, code = 2;
    if (act_run_args_parse(argc, argv, &r->o, &pi) != 0 ||
        (r->prog = argv + pi, r->argc = argc - pi, run_prepare(r) != 0))
        goto out;
    sigset_t sigmask;
    int report[2] = {-1, -1};
    uint64_t t_start = act_clock_now();
    pid_t pid = run_start(r, &sigmask, report);
    if (pid < 0)
        goto out;
    /* Streaming: the program's spool is read while it runs. Not with a
     * trace per process (each is written by its own export), with
     * trigger windows (known only at the end) nor with a ring (--ring: its
     * trace is the last moments, whatever was streamed is overwritten):
     * those read it at exit. A ring spool is refused by the live reader
     * (its header says so). */
    act_export_opts eo = run_export_opts(r, pid);
    act_run_stream *stream = r->per_process || r->o.trigger_capture || r->o.no_stream
                                 ? NULL
                                 : act_run_stream_start(r->spool, pid, r->o.stream_ms, &eo);
    /* sigmask still blocks SIGUSR2 and SIGCHLD (act_trigger_arm): they are
     * taken only inside act_trigger_wait's ppoll. */
    sigprocmask(SIG_SETMASK, &sigmask, NULL);
    trigger_ctx tc = {
        .o = &r->o, .spool = r->spool, .prog = r->prog, .argc = r->argc, .cfg = &r->cfg};
    if (act_trigger_wait(pid, &sigmask, on_trigger, &tc) != 0)
        fprintf(stderr, "acceltrace: run: waitid: %s\n", strerror(errno));
    act_trigger_disarm(run_log_level >= ACT_LOG_INFO ? stderr : NULL);
    int status = wait_program(pid, &sigmask);
    uint64_t t_exit = act_clock_now();
    act_export_live *live = act_run_stream_stop(stream, &r->watch);
    uint64_t stop_ns = act_clock_now() - t_exit;
    if (exec_failed(report[0])) { /* the child said why; nothing ran, nothing to write */
        act_export_live_free(live);
        act_run_spool_remove(r->spool);
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 127;
        goto out;
    }
    uint64_t live_records = act_export_live_records(live);
    act_export_times times = {0};
    eo.times = &times;
    code = WIFEXITED(status)     ? WEXITSTATUS(status)
           : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                 : 1;
    eo.child_status = status;
    eo.live = live;
    if (r->o.trigger_capture) {
        /* The last window, closed at exit if still open; never opened:
         * nothing is inside it (and everything is counted outside). */
        eo.window_start_ns = tc.win_start ? tc.win_start : t_exit;
        eo.window_end_ns = tc.win_end ? tc.win_end : t_exit;
    }
    say_streamed(live); /* with a template each trace is reported as it is written */
    int replaced = -1;  /* a trace replaced with --force, freed once `run` returns */
    if (!r->per_process)
        eo.replaced_fd = &replaced;
    int missing = 0; /* with a template: traces not written */
    int rc = r->per_process ? act_run_export_each(&eo, r->o.out, ACT_EACH_KEEP_MISSING, &missing)
                            : act_trace_export(&eo);
    if (act_export_live_voided(live) && run_log_level >= ACT_LOG_DEBUG)
        fprintf(stderr, "acceltrace: run: the events written early are void: the trace was "
                        "written anew at the exit\n");
    act_export_live_free(live);
    struct rusage ru;
    if (run_log_level >= ACT_LOG_DEBUG && getrusage(RUSAGE_SELF, &ru) == 0)
        fprintf(stderr, "acceltrace: run: launcher peak memory %ld KiB\n", ru.ru_maxrss);
    int failed = run_not_written(r, &eo, rc, missing, &times, replaced);
    if (failed >= 0) {
        code = failed;
        goto out;
    }
    if (!times.events && run_log_level >= ACT_LOG_INFO)
        say_nothing_recorded(r->prog[0], &r->o);
    /* The two times tell the program's run from what tracing adds after it. */
    if (!r->per_process && run_log_level >= ACT_LOG_INFO)
        fprintf(stderr, "acceltrace: run: trace written to %s in %.0f ms (program ran %.3f s)\n",
                r->o.out, (double)(act_clock_now() - t_exit) / 1e6,
                (double)(t_exit - t_start) / 1e9);
    run_written(r, &eo, &times, replaced);
    if (!r->per_process && run_log_level >= ACT_LOG_DEBUG)
        print_after_exit(&times, stop_ns, live_records, act_clock_now() - t_exit);
out:
    if (r->watch >= 0) { /* not written: the watch still goes to the helper */
        int held[ACT_RUN_HELD] = {-1, r->watch};
        act_run_free_detached(r->cleaner[0], NULL, held);
    }
    free(r);
    return code;
}
