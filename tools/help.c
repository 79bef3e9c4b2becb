/*
 * help.c -- the help of every command as data, and its renderings (see
 * help.h): plain text within 80 columns with one description column, a
 * roff man page, and bare option lists for the shell completions.
 */
#include "help.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct hopt {
    const char *flags; /* "-o, --output" */
    const char *arg;   /* metavar ("FILE"), or NULL */
    const char *text;
} hopt;

typedef struct hcmd {
    const char *name, *synopsis, *brief, *text, *footer;
    const hopt *opts;
} hcmd;

static const hopt run_opts[] = {
    {"-o, --output", "FILE",
     "trace file (default: PROGRAM.PID.trace.json in the current directory, PID being "
     "acceltrace's own); a name ending in .gz is written gzip-compressed, .sqlite a "
     "SQLite database, .pftrace Perfetto's protobuf trace; %p, %h, %r, "
     "%q{VAR} make it a template: one trace per traced process (docs/cli.md)"},
    {"-f, --force", NULL, "overwrite FILE if it is a regular file"},
    {"--no-summary", NULL, "do not print the summary on stderr"},
    {"--summary-by-range", NULL,
     "also attribute device time to the annotated range that launched it"},
    {"--metadata", "KEY=VALUE",
     "add a top-level member to the trace (repeatable); a JSON object or array VALUE is "
     "stored as JSON"},
    {"--preload", NULL,
     "intercept OpenCL with LD_PRELOAD instead of the ICD-loader layer (for loaders "
     "without layer support; misses programs that dlopen libOpenCL)"},
    {"--keep-spool", NULL, "keep the raw spool directory (its path is printed)"},
    {"--no-stream", NULL,
     "read the spool only after the program exits (default: the program's spool is read "
     "while it runs, so that writing the trace at exit has only the tail left; the trace is "
     "the same)"},
    {"--stream-interval", "MS",
     "milliseconds between two reads of the spool while the program runs (1 to 10000; "
     "default 20, 10 for the first 50 reads and 5 after a read of 4096 records or more)"},
    {"--cuda", NULL,
     "trace CUDA through CUPTI: the CUDA driver loads libacceltrace.so "
     "(CUDA_INJECTION64_PATH) at cuInit"},
    {"--ascend", NULL,
     "trace Ascend NPUs through mspti: preloads $ASCEND_HOME_PATH/lib64/libmspti.so "
     "(or $ACCELTRACE_MSPTI_LIB) and libacceltrace.so"},
    {"--buffer-size", "SIZE",
     "recorder capacity per process, e.g. 64M (default auto: a quarter of the free disk, "
     "256M to 4G) [ACCELTRACE_BUFFER_SIZE]"},
    {"--chunk-size", "SIZE", "bytes per thread chunk (default 128K) [ACCELTRACE_CHUNK_SIZE]"},
    {"--ring", "SIZE",
     "flight recorder: keep only the most recent ~SIZE of records per process (e.g. 64M), "
     "oldest chunks overwritten; the trace at exit, crash or trigger holds the last moments; "
     "at most a fifth of the memory [ACCELTRACE_RING]"},
    {"--torch", "on|off",
     "on (default): a Python program that imports torch has its aten ops and "
     "record_function ranges recorded, kernels linked to them; off: not"},
    {"--python-backtrace[=N]", NULL,
     "attach the Python stack (innermost N frames, default 16) to every kernel launch, copy "
     "and synchronisation made from Python; =all or =N:all: to every intercepted call "
     "[ACCELTRACE_PYTHON_BACKTRACE]"},
    {"--hooks", "LIST",
     "hook groups: all, or a comma list such as all,-activity.cupti [ACCELTRACE_HOOKS]"},
    {"--capture-range", "RANGE",
     "none, api, nvtx:NAME or trigger (see 'acceltrace trigger') [ACCELTRACE_CAPTURE_RANGE]"},
    {"--delay", "SECONDS", "wait before recording [ACCELTRACE_DELAY]"},
    {"--duration", "SECONDS", "record this long, 0 = until exit [ACCELTRACE_DURATION]"},
    {"--drain-timeout", "MS", "wait for device activity at exit [ACCELTRACE_DRAIN_TIMEOUT]"},
    {"--log", "LEVEL",
     "quiet, error, info (default) or debug; quiet also silences acceltrace's own lines "
     "[ACCELTRACE_LOG]"},
    {"--mode", "MODE", "trace file permissions, octal (default 0600) [ACCELTRACE_TRACE_MODE]"},
    {"-h, --help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static const hopt summary_opts[] = {
    {"--by-range", NULL, "also attribute device time to the range (External id) that launched it"},
    {"--by-python-line", NULL,
     "instead attribute device time to the Python line that launched it (a trace recorded "
     "with --python-backtrace)"},
    {"--format", "FORMAT", "table (default), csv or json"},
    {"--names", "MODE",
     "base (default: demangled C++ names without template and argument lists, distinct "
     "names kept distinct), full (demangled) or mangled (as in the trace)"},
    {"--timeunit", "UNIT", "ns, us (default), ms or s"},
    {"--rows", "N",
     "rows per section, the top N by total (default 1000); the other names are one "
     "counted row. 'all' for every name"},
    {"-h, --help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static const hopt rt_opts[] = {
    {"--json", NULL, "print one JSON object (see docs/rt.md)"},
    {"-h, --help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static const hopt export_opts[] = {
    {"-o, --output", "FILE",
     "trace file (required); a name template (%p %h %r %q{VAR}) writes one trace per "
     "process, as run does"},
    {"-f, --force", NULL, "overwrite FILE if it is a regular file"},
    {"--no-summary", NULL, "do not print the summary on stderr"},
    {"--summary-by-range", NULL,
     "also attribute device time to the annotated range that launched it"},
    {"-h, --help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static const hopt merge_opts[] = {
    {"-o, --output", "FILE", "the merged trace (required)"},
    {"-f, --force", NULL, "overwrite FILE"},
    {"-h, --help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static const hopt stats_opts[] = {
    {"--report", "NAME[,NAME...]",
     "the reports to run (default kern_sum,api_sum,mem_time_sum,mem_sum,range_sum); --list "
     "lists them"},
    {"--format", "FORMAT", "table (default), csv or json"},
    {"--timeunit", "UNIT", "ns (default), us, ms or s for the time columns"},
    {"--list", NULL, "list the reports and what each shows"},
    {"-h, --help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static const hopt recipe_opts[] = {
    {"--engine", "ENGINE", "duckdb (default, embedded) or dask"},
    {"--scheduler", "ADDR", "the Dask scheduler (tcp://host:8786); default: a local cluster"},
    {"--format", "FORMAT", "table (default), csv or json"},
    {"--timeunit", "UNIT", "ns (default), us, ms or s for the time columns"},
    {"-o, --output", "DIR", "write the recipe's picture there (NAME.png, NAME.svg)"},
    {"-h, --help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static const hopt help_only_opts[] = {
    {"-h, --help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static const hopt no_opts[] = {{NULL, NULL, NULL}};

static const hcmd cmds[] = {
    {"run", "acceltrace run [OPTIONS] [--] PROGRAM [ARGS...]",
     "trace PROGRAM and write a Chrome trace",
     "Run PROGRAM, trace its host calls and device activity, write a Chrome trace (opens "
     "in Perfetto) and print a summary on stderr. PROGRAM's output and exit status are "
     "passed through (death by signal N exits with 128+N). Options given as VALUE map onto "
     "the ACCELTRACE_* variable in brackets.",
     "Exit status: PROGRAM's, or 2 for a usage error or an invalid configuration value "
     "(nothing is started then), 127 (126) when PROGRAM cannot be started, 74 when a trace "
     "could not be written (the spool is kept and the export command printed).",
     run_opts},
    {"summary", "acceltrace summary [OPTIONS] TRACE...", "print the summary of traces",
     "Print, per name, for device ops and for host calls: count, total, self, mean, min "
     "and max time and share of busy time, sorted by total; then the trace's drop, skew "
     "and outstanding-callback counters and its error lines. TRACE is a Chrome trace "
     "(.json or .json.gz, acceltrace's or torch.profiler's), or - for standard input; "
     "several traces (one per rank) add a row per rank and the spread between them. The "
     "table fits COLUMNS or the terminal (80 columns otherwise).",
     "Exit status: 0, or 2 when a file is missing or not a trace.", summary_opts},
    {"stats", "acceltrace stats [OPTIONS] TRACE...", "named reports over traces",
     "Run named reports, as nsys users know them, over SQLite traces ('acceltrace run -o "
     "t.sqlite') or JSON traces (ours or torch.profiler's, plain or gzip; made a SQLite "
     "trace in a temporary folder first): kern_sum, api_sum, mem_sum, mem_time_sum, range_sum, "
     "kern_trace, api_trace, "
     "rank_sum, cl_errors, cl_leaks, cl_builds. Summaries give Time (%), Total Time, "
     "Instances, Avg, Med, Min, Max and StdDev per name. Each report is a SQL file (--list "
     "says where) over the views of docs/sqlite.md: read it, copy it, change it; "
     "ACCELTRACE_REPORTS_DIR names another folder.",
     "Exit status: 0, or 2 for a usage error, an unknown report, or a file that is neither "
     "an acceltrace SQLite trace nor a JSON trace.",
     stats_opts},
    {"recipe", "acceltrace recipe NAME [OPTIONS] INPUT...", "multi-rank recipes (DuckDB, Dask)",
     "Run a recipe over every rank of a run: kernel_sum, rank_imbalance, idle, launch_delay, "
     "comm_overlap. INPUT is a trace file (.json, .json.gz, .sqlite; acceltrace's or "
     "torch.profiler's) or a folder of per-rank traces; each is converted once to Parquet "
     "(kept in .acceltrace-cache beside it). DuckDB runs the recipe embedded; --engine dask "
     "on a Dask cluster, with the same result. Python: needs the acceltrace package with "
     "its analysis extra (pip install acceltrace[analysis]); ACCELTRACE_PYTHON names the "
     "Python to run.",
     "Exit status: 0, or 2 for a usage error, an unreadable trace, traces of two runs, a "
     "missing rank, or missing Python packages.",
     recipe_opts},
    {"export", "acceltrace export [OPTIONS] SPOOL_DIR|TRACE -o FILE",
     "write a trace from a kept spool, or a trace in another format",
     "Write the trace, and print the summary, from a spool directory that 'acceltrace run' "
     "kept (when the trace could not be written, after an interrupted export, or with "
     "--keep-spool). The command line, exit status and --metadata come from the run.json "
     "that run saved there. Given a trace file instead (a JSON trace, ours or "
     "torch.profiler's, plain or gzip), write it again in the format FILE's name picks: "
     "'export -o t.sqlite t.json', '-o t.pftrace', '-o t.json.gz'; its events, args, flows "
     "and top-level members are kept, and what cannot be is counted on stderr.",
     "Exit status: 0 written, 2 usage error, no spool in SPOOL_DIR or a TRACE that is not "
     "a JSON trace, 74 the trace could "
     "not be written (or lacks a process whose spool could not be read for want of memory), "
     "128+N interrupted by signal N.",
     export_opts},
    {"merge", "acceltrace merge [-f] -o OUT.json TRACE...", "merge traces (one per rank)",
     "Merge traces (one per rank or process; acceltrace's or torch.profiler's) into one: "
     "each input becomes a process group named by its rank (distributedInfo.rank, else its "
     "position), on one time axis. Traces of one boot align exactly on their shared clock; "
     "others through their wall-clock anchors; the merged trace states the alignment and "
     "its error bound under acceltrace.merge. Inputs are plain or gzip-compressed JSON "
     "(.json.gz); an OUT ending in .gz is written gzip-compressed, one ending in .pftrace "
     "as a Perfetto protobuf trace (docs/pftrace.md).",
     "Exit status: 0, or 2 for a usage error or an unreadable input.", merge_opts},
    {"trigger", "acceltrace trigger PID|SPOOL_DIR", "make a running 'run' write a trace now",
     "Make a running 'acceltrace run' write a trace of what it has recorded so far, "
     "without stopping the program, and print its path once written; the trace is named "
     "after -o with .trigger-N inserted (t.json -> t.trigger-1.json). PID is the "
     "launcher's pid or that of any process it traces; SPOOL_DIR its spool directory. The "
     "request goes over a socket in the launcher's private spool directory, only to a "
     "launcher of your own user; nothing is signalled, so a process that is not such a "
     "launcher (another program, another user's, a kept or forged spool) is refused "
     "unharmed. Requests are served one at a time. SIGUSR2 sent to the launcher by hand "
     "also writes a trace (without an answer). With --capture-range=trigger, triggers open "
     "and close the capture window instead.",
     "Exit status: 0 written (or the capture window opened), 1 the launcher could not "
     "write it or its run ended first, 2 refused: the target is not a running 'acceltrace "
     "run' of yours or a program it traces, 75 busy: too many triggers waiting, try again.",
     help_only_opts},
    {"rt", "acceltrace rt [--json]", "list runtime backends and devices",
     "List the runtime backends (cuda, ascend, opencl), whether each is available, their "
     "device counts and device memory ('free' is unknown for OpenCL).",
     "Exit status: 0, or 2 for a usage error or an invalid configuration value.", rt_opts},
    {"version", "acceltrace version", "print the version", "Print the version.", NULL, no_opts},
    {"help", "acceltrace help [COMMAND]", "show the help of a command",
     "Show the help of COMMAND (the same as 'acceltrace COMMAND --help'), or this "
     "overview.",
     NULL, no_opts},
};

#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static const hcmd *find(const char *name)
{
    for (size_t i = 0; i < N_CMDS; i++)
        if (!strcmp(cmds[i].name, name))
            return &cmds[i];
    return NULL;
}

/* ---- text ------------------------------------------------------------- */

#define WIDTH 80
#define DESC  26 /* the description column */

/* Word-wrap `t` from column `col` (already written) at indent `ind`. */
static void wrap(FILE *f, const char *t, int col, int ind)
{
    while (*t) {
        while (*t == ' ')
            t++;
        size_t w = strcspn(t, " ");
        if (col > ind && col + 1 + (int)w > WIDTH) {
            fprintf(f, "\n%*s", ind, "");
            col = ind;
        } else if (col > ind) {
            fputc(' ', f);
            col++;
        }
        fwrite(t, 1, w, f);
        col += (int)w;
        t += w;
    }
    fputc('\n', f);
}

static void print_cmd(const hcmd *c, FILE *f)
{
    fprintf(f, "usage: %s\n\n", c->synopsis);
    wrap(f, c->text, 0, 0);
    if (c->opts[0].flags) {
        fprintf(f, "\noptions:\n");
        for (const hopt *o = c->opts; o->flags; o++) {
            int n = fprintf(f, "  %s%s%s", strncmp(o->flags, "--", 2) ? "" : "    ", o->flags,
                            o->arg ? "=" : "");
            if (o->arg)
                n += fprintf(f, "%s", o->arg);
            if (n + 1 > DESC) {
                fprintf(f, "\n%*s", DESC, "");
                n = DESC;
            } else {
                fprintf(f, "%*s", DESC - n, "");
                n = DESC;
            }
            wrap(f, o->text, n, DESC);
        }
    }
    if (c->footer) {
        fputc('\n', f);
        wrap(f, c->footer, 0, 0);
    }
}

static void print_commands(FILE *f)
{
    for (size_t i = 0; i < N_CMDS; i++)
        fprintf(f, "  %-10s%s\n", cmds[i].name, cmds[i].brief);
}

static void print_top(FILE *f)
{
    fprintf(f, "usage:\n");
    for (size_t i = 0; i < N_CMDS; i++)
        fprintf(f, "  %s\n", cmds[i].synopsis);
    fprintf(f, "\ncommands:\n");
    print_commands(f);
    fprintf(f, "\n'acceltrace help COMMAND' or 'acceltrace COMMAND --help' describes each "
               "command;\n'man acceltrace' has them all.\n");
}

int act_help_no_command(void)
{
    fprintf(stderr, "acceltrace: a command is needed:\n");
    print_commands(stderr);
    fprintf(stderr, "(see 'acceltrace --help')\n");
    return 2;
}

int act_help_print(const char *command, FILE *f)
{
    if (!command || !*command) {
        print_top(f);
        return 0;
    }
    const hcmd *c = find(command);
    if (!c)
        return -1;
    print_cmd(c, f);
    return 0;
}

int act_help_usage_error(const char *command, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++) /* one line, whatever an argument holds */
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    if (command)
        fprintf(stderr, "acceltrace: %s: %s (see 'acceltrace %s --help')\n", command, msg, command);
    else
        fprintf(stderr, "acceltrace: %s (see 'acceltrace --help')\n", msg);
    return 2;
}

/* ---- did you mean ----------------------------------------------------- */

static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 32 || lb > 32)
        return 99;
    size_t d[33][33];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < d[i][j])
                d[i][j] = d[i - 2][j - 2] + 1; /* a transposition */
        }
    return d[la][lb];
}

const char *act_help_suggest(const char *typo)
{
    const char *best = NULL;
    size_t bd = 3;
    for (size_t i = 0; i < N_CMDS; i++) {
        size_t d = distance(typo, cmds[i].name);
        if (!strncmp(typo, cmds[i].name, strlen(typo)) && strlen(typo) >= 2)
            d = 0; /* a prefix: "sum" */
        if (d < bd && d < strlen(cmds[i].name)) {
            bd = d;
            best = cmds[i].name;
        }
    }
    return best;
}

/* ---- man page --------------------------------------------------------- */

static void roff(FILE *f, const char *t)
{
    if (*t == '.' || *t == '\'')
        fputs("\\&", f);
    for (; *t; t++) {
        if (*t == '-' || *t == '\\')
            fputc('\\', f);
        fputc(*t, f);
    }
}

static void print_man(FILE *f)
{
    fprintf(f, ".\\\" Generated by 'acceltrace help --man' from tools/help.c; do not edit.\n"
               ".TH ACCELTRACE 1 \"\" \"acceltrace\" \"User Commands\"\n"
               ".SH NAME\nacceltrace \\- vendor\\-neutral accelerator profiler\n"
               ".SH SYNOPSIS\n");
    for (size_t i = 0; i < N_CMDS; i++) {
        fputs(".B ", f);
        roff(f, cmds[i].synopsis);
        fputs("\n.br\n", f);
    }
    fputs(".SH DESCRIPTION\nacceltrace traces a program's host calls and device activity "
          "(OpenCL, CUDA, Ascend) into a Chrome trace and summarises traces.\n.SH COMMANDS\n",
          f);
    for (size_t i = 0; i < N_CMDS; i++) {
        const hcmd *c = &cmds[i];
        fputs(".SS ", f);
        roff(f, c->synopsis);
        fputs("\n", f);
        roff(f, c->text);
        fputs("\n", f);
        for (const hopt *o = c->opts; o->flags; o++) {
            fputs(".TP\n.B ", f);
            roff(f, o->flags);
            if (o->arg) {
                fputs("\\fR=\\fI", f);
                roff(f, o->arg);
                fputs("\\fR", f);
            }
            fputs("\n", f);
            roff(f, o->text);
            fputs("\n", f);
        }
        if (c->footer) {
            fputs(".PP\n", f);
            roff(f, c->footer);
            fputs("\n", f);
        }
    }
    fputs(".SH ENVIRONMENT\nEvery ACCELTRACE_* variable is described in "
          "docs/configuration.md; an invalid value makes run, summary and rt exit with "
          "status 2.\n.SH SEE ALSO\nThe documentation in docs/ of the acceltrace sources.\n",
          f);
}

/* Long and short option names of a command, one a line (completions). */
static void print_options(const hcmd *c, FILE *f)
{
    for (const hopt *o = c->opts; o->flags; o++) {
        char buf[64];
        snprintf(buf, sizeof(buf), "%s", o->flags);
        for (char *tok = strtok(buf, ", "); tok; tok = strtok(NULL, ", "))
            fprintf(f, "%s%s\n", tok, o->arg && tok[1] == '-' ? "=" : "");
    }
}

int act_cmd_help(int argc, char **argv)
{
    if (argc < 2)
        return act_help_print(NULL, stdout);
    if (!strcmp(argv[1], "--man")) {
        print_man(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--commands")) {
        for (size_t i = 0; i < N_CMDS; i++)
            printf("%s\n", cmds[i].name);
        return 0;
    }
    if (!strcmp(argv[1], "--options") && argc == 3 && find(argv[2])) {
        print_options(find(argv[2]), stdout);
        return 0;
    }
    if (act_help_print(argv[1], stdout) == 0)
        return 0;
    const char *s = act_help_suggest(argv[1]);
    if (s)
        return act_help_usage_error("help", "unknown command '%s'; did you mean '%s'?", argv[1], s);
    return act_help_usage_error("help", "unknown command '%s'", argv[1]);
}
