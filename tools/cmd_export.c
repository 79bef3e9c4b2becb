/*
 * cmd_export.c -- `acceltrace export [OPTIONS] SPOOL_DIR -o FILE`.
 *
 * Writes the trace (and prints the summary) from a spool directory that
 * `acceltrace run` kept: because the trace could not be written at the end
 * (a full disk, a file that appeared at the output path), because the
 * export was interrupted, or because of --keep-spool. The command line,
 * exit status and --metadata of the run come from run.json beside the
 * spools when run saved one. The spool directory is left as it is.
 * FILE may be an output name template, as for run (one trace per process).
 *
 * Nothing it opens can block it (a FIFO where a spool or run.json should
 * be is named and skipped), and the first SIGINT, SIGTERM or SIGHUP ends
 * it (interrupting any call that waits).
 *
 * Exit status: 0 written, 2 usage or unreadable input, 74 (EX_IOERR) the
 * trace could not be written, or was written without a process whose
 * spool could not be read for want of memory, 128+N interrupted by
 * signal N.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acceltrace.h"
#include "api/export.h"
#include "cmd.h"
#include "core/config.h"
#include "core/dist.h"
#include "core/internal.h"
#include "help.h"
#include "outname.h"
#include "run_info.h"
#include "trace_import.h"

static volatile sig_atomic_t export_interrupted;

static void on_interrupt(int sig)
{
    if (!export_interrupted)
        export_interrupted = sig;
}

/* The first of these signals stops the export (no trace written); a
 * second has its default effect (SA_RESETHAND). Without SA_RESTART: a
 * call that waits returns (EINTR) instead of swallowing the signal.
 * SIGXFSZ is ignored: a write past RLIMIT_FSIZE fails with EFBIG, said. */
static void signals_install(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa = {.sa_handler = on_interrupt, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigemptyset(&ign.sa_mask);
    sigaction(SIGXFSZ, &ign, NULL);
}

/* With a template: one trace per process, named as the run named them
 * when it is the run's own template (run.json), else as it expands now. */
static int export_each(const act_export_opts *eo, const char *tmpl, const act_run_info *ri)
{
    int missing = 0;
    unsigned flags = ri->output && !strcmp(ri->output, tmpl) ? 0 : ACT_EACH_RENAME;
    int rc = act_run_export_each(eo, tmpl, flags, &missing);
    if (rc < 0 && rc != ACT_E_FORMAT && !export_interrupted)
        fprintf(stderr, "acceltrace: export: %d trace%s of '%s' %s not written\n", missing,
                missing == 1 ? "" : "s", tmpl, missing == 1 ? "was" : "were");
    return rc;
}

/* Whether the trace can be written, said when not. A template: names the
 * run's processes recorded are checked as they are written; a template
 * expanded now is checked as run checks it. */
static int check_output(const char *out, int force, int each, const act_run_info *ri)
{
    char err[512];
    int named = each && ri->output && !strcmp(ri->output, out);
    if (each ? named || act_run_template_check(out, err, sizeof(err)) == 0
             : act_out_path_check(out, force, err, sizeof(err)) == 0 &&
                   act_out_dir_probe(out, err, sizeof(err)) == 0)
        return 0;
    if (each)
        fprintf(stderr, "acceltrace: export: -o '%s': %s\n", out, err);
    else
        fprintf(stderr, "acceltrace: %s\n", err);
    return -1;
}

/* A directory holding at least one spool file (*.acts). */
static int check_spool_dir(const char *dir)
{
    struct stat st;
    int bad = stat(dir, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
    if (bad) {
        fprintf(stderr, "acceltrace: export: '%s': %s\n", dir, strerror(bad));
        return -1;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "acceltrace: export: '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        found = n > 5 && !strcmp(e->d_name + n - 5, ".acts");
    }
    closedir(d);
    if (!found)
        fprintf(stderr, "acceltrace: export: '%s' holds no spool files (*.acts)\n", dir);
    return found ? 0 : -1;
}

/* The first signal stopped the export: said, and the exit status 128+N. */
static int said_interrupted(void)
{
    fprintf(stderr, "acceltrace: interrupted by SIG%s: the trace was not written\n",
            sigabbrev_np(export_interrupted) ? sigabbrev_np(export_interrupted) : "?");
    return 128 + export_interrupted;
}

/* A trace file given instead of a spool directory: written again in the
 * format -o's name picks (trace_import.c). */
static int export_trace_file(const char *in, const char *out, int force, unsigned mode)
{
    char err[512];
    if (act_outname_is_template(out)) {
        fprintf(stderr,
                "acceltrace: export: -o '%s': a trace file is written to one file, not a "
                "name template\n",
                out);
        return 2;
    }
    if (act_out_path_check(out, force, err, sizeof(err)) != 0 ||
        act_out_dir_probe(out, err, sizeof(err)) != 0) {
        fprintf(stderr, "acceltrace: %s\n", err);
        return 2;
    }
    act_import_opts io = {.in_path = in,
                          .out_path = out,
                          .force = force,
                          .mode = mode,
                          .cancel = &export_interrupted,
                          .who = "export"};
    uint64_t events = 0;
    int rc = act_trace_import(&io, &events);
    if (export_interrupted)
        return said_interrupted();
    if (rc == ACT_E_FORMAT)
        return 2;
    if (rc) {
        fprintf(stderr, "acceltrace: could not write the trace '%s': %s\n", out, act_strerror(rc));
        return 74;
    }
    fprintf(stderr, "acceltrace: %llu events written to %s\n", (unsigned long long)events, out);
    return 0;
}

int act_cmd_export(int argc, char **argv)
{
    static const struct option longs[] = {
        {"output", required_argument, NULL, 'o'},   {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},           {"no-summary", no_argument, NULL, 1},
        {"summary-by-range", no_argument, NULL, 2}, {NULL, 0, NULL, 0},
    };
    const char *out = NULL;
    int force = 0, summary = 1, by_range = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:fh", longs, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'f': force = 1; break;
        case 'h': act_help_print("export", stdout); return 0;
        case 1: summary = 0; break;
        case 2: by_range = 1; break;
        default: return act_help_usage_error("export", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1 || !out)
        return act_help_usage_error("export", "%s",
                                    !out ? "-o FILE is required"
                                         : "give exactly one spool directory or trace file");
    const char *dir = argv[optind];
    char err[512];
    act_config cfg;
    if (act_config_load(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "acceltrace: %s\n", err);
        return 2;
    }
    signals_install();
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISREG(st.st_mode))
        return export_trace_file(dir, out, force, cfg.trace_mode);
    if (check_spool_dir(dir) != 0)
        return 2;
    act_run_info ri;
    if (act_run_info_load(dir, &ri, err, sizeof(err)) < 0) {
        fprintf(stderr, "acceltrace: export: %s\n", err);
        return 2;
    }
    int each = act_outname_is_template(out);
    if (check_output(out, force, each, &ri) != 0) {
        act_run_info_free(&ri);
        return 2;
    }
    act_export_times times = {0};
    act_export_opts eo = {
        .spool_dir = dir,
        .out_path = out,
        .force = force,
        .argv = (const char *const *)ri.argv,
        .argc = ri.argc,
        .summary = summary ? stderr : NULL,
        .summary_by_range = by_range,
        .child_status = ri.wait_status,
        .extra_metadata = (const char *const *)ri.metadata,
        /* ACCELTRACE_TRACE_MODE when set, else the mode the run asked for */
        .trace_mode = getenv("ACCELTRACE_TRACE_MODE") || !ri.mode ? cfg.trace_mode : ri.mode,
        .child_pid = ri.pid,
        .cancel = &export_interrupted,
        .times = &times,
    };
    int rc = each ? export_each(&eo, out, &ri) : act_trace_export(&eo);
    act_run_info_free(&ri);
    if (export_interrupted)
        return said_interrupted();
    if (rc < 0 && rc != ACT_E_FORMAT) {
        if (!each)
            fprintf(stderr, "acceltrace: could not write the trace '%s': %s\n", out,
                    act_strerror(rc));
        return 74;
    }
    if (!times.events) /* instead of an empty summary */
        fprintf(stderr, "acceltrace: export: nothing was recorded in %s\n", dir);
    if (rc == ACT_E_FORMAT && times.unread) {
        fprintf(stderr,
                "acceltrace: the trace '%s' lacks %llu process%s whose spool could not be read "
                "for want of memory (named in its errors)\n",
                out, (unsigned long long)times.unread, times.unread == 1 ? "" : "es");
        return 74;
    }
    if (!each)
        fprintf(stderr, "acceltrace: trace written to %s\n", out);
    return 0;
}
