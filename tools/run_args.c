/*
 * run_args.c -- `acceltrace run`'s options (run_args.h); their help is in
 * help.c, with every command's.
 */
#include "run_args.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "help.h"

/* Options that are nothing but a configuration variable. */
/* Their help is in help.c (run_opts), with the rest of run's. */
static const struct {
    const char *option;
    const char *variable;
} env_options[] = {
    {"buffer-size", "ACCELTRACE_BUFFER_SIZE"},
    {"chunk-size", "ACCELTRACE_CHUNK_SIZE"},
    {"ring", "ACCELTRACE_RING"},
    {"hooks", "ACCELTRACE_HOOKS"},
    {"capture-range", "ACCELTRACE_CAPTURE_RANGE"},
    {"delay", "ACCELTRACE_DELAY"},
    {"duration", "ACCELTRACE_DURATION"},
    {"drain-timeout", "ACCELTRACE_DRAIN_TIMEOUT"},
    {"log", "ACCELTRACE_LOG"},
    {"mode", "ACCELTRACE_TRACE_MODE"},
};

/* ACCELTRACE_CAPTURE_RANGE=trigger is the launcher's business: the
 * program records from the start and the launcher's triggers set the
 * window of the traces it writes (cmd_trigger.c). */
static void take_trigger_capture(run_opts *o)
{
    const char *v = getenv("ACCELTRACE_CAPTURE_RANGE");
    if (v && !strcmp(v, "trigger")) {
        o->trigger_capture = 1;
        unsetenv("ACCELTRACE_CAPTURE_RANGE");
    }
}

/* Whether `arg` ("--name") is a long option that takes a value. */
static int is_valued_long(const struct option *longs, const char *arg)
{
    for (; arg[0] == '-' && arg[1] == '-' && longs->name; longs++)
        if (!strcmp(arg + 2, longs->name))
            return longs->has_arg == required_argument;
    return 0;
}

int act_run_args_parse(int argc, char **argv, run_opts *o, int *prog_index)
{
    take_trigger_capture(o);
    enum {
        OPT_NO_SUMMARY = 256,
        OPT_BY_RANGE,
        OPT_METADATA,
        OPT_PRELOAD,
        OPT_KEEP,
        OPT_CUDA,
        OPT_ASCEND,
        OPT_NO_STREAM,
        OPT_STREAM_MS,
        OPT_PYTHON_BACKTRACE,
        OPT_TORCH,
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
        {"no-stream", no_argument, NULL, OPT_NO_STREAM},
        {"stream-interval", required_argument, NULL, OPT_STREAM_MS},
        {"python-backtrace", optional_argument, NULL, OPT_PYTHON_BACKTRACE},
        {"torch", required_argument, NULL, OPT_TORCH},
    };
    size_t nl = 14;
    for (size_t i = 0; i < sizeof(env_options) / sizeof(env_options[0]); i++)
        longs[nl++] =
            (struct option){env_options[i].option, required_argument, NULL, OPT_ENV + (int)i};
    optind = 1;
    opterr = 0; /* one line of our own instead of getopt's "run: ..." */
    int c, li;
    /* '+': stop at the first non-option, which is the program. */
    while ((c = getopt_long(argc, argv, "+o:fh", longs, &li)) != -1) {
        switch (c) {
        case 'o': o->out = optarg; break;
        case 'f': o->force = 1; break;
        case 'h': act_help_print("run", stdout); exit(0);
        case OPT_NO_SUMMARY: o->summary = 0; break;
        case OPT_BY_RANGE: o->by_range = 1; break;
        case OPT_PRELOAD: o->preload = 1; break;
        case OPT_KEEP: o->keep_spool = 1; break;
        case OPT_CUDA: o->cuda = 1; break;
        case OPT_ASCEND: o->ascend = 1; break;
        case OPT_NO_STREAM: o->no_stream = 1; break;
        case OPT_TORCH:
            if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
                act_help_usage_error("run", "--torch wants on or off, got '%s'", optarg);
                return -1;
            }
            o->torch_off = !strcmp(optarg, "off");
            break;
        case OPT_PYTHON_BACKTRACE:
            /* --python-backtrace alone: 16 frames (ACCELTRACE_PYTHON_BACKTRACE) */
            setenv("ACCELTRACE_PYTHON_BACKTRACE", optarg ? optarg : "16", 1);
            break;
        case OPT_STREAM_MS: {
            char *end;
            unsigned long v = strtoul(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || v > 10000) {
                act_help_usage_error("run",
                                     "--stream-interval wants milliseconds from 1 to 10000, "
                                     "got '%s'",
                                     optarg);
                return -1;
            }
            o->stream_ms = (unsigned)v;
            break;
        }
        case OPT_METADATA:
            if (!strchr(optarg, '=') || optarg[0] == '=') {
                act_help_usage_error("run", "--metadata wants KEY=VALUE, got '%s'", optarg);
                return -1;
            }
            if (o->n_metadata >= 255) {
                act_help_usage_error("run", "too many --metadata options (255 at most)");
                return -1;
            }
            o->metadata[o->n_metadata++] = optarg;
            break;
        default:
            if (c >= OPT_ENV && c < OPT_ENV + (int)(sizeof(env_options) / sizeof(env_options[0]))) {
                setenv(env_options[c - OPT_ENV].variable, optarg, 1);
                take_trigger_capture(o);
                break;
            }
            if (optopt == 'o')
                act_help_usage_error("run", "option '-o' needs a value");
            else if (is_valued_long(longs, argv[optind - 1]))
                act_help_usage_error("run", "option '%s' needs a value", argv[optind - 1]);
            else
                act_help_usage_error("run", "unknown option '%s'", argv[optind - 1]);
            return -1;
        }
    }
    if (optind >= argc) {
        act_help_usage_error("run", "no program given");
        return -1;
    }
    *prog_index = optind;
    return 0;
}
