/*
 * main.c -- entry point of the `acceltrace` command: dispatches to the
 * subcommands declared in cmd.h.
 */
#include <stdio.h>
#include <string.h>

#include "acceltrace.h"
#include "cmd.h"

#pragma weak act_cmd_rt

static void usage(FILE *f)
{
    fprintf(f, "usage: acceltrace COMMAND [OPTIONS]\n"
               "\n"
               "commands:\n"
               "  run [OPTIONS] -- PROGRAM [ARGS...]  trace PROGRAM and write a Chrome trace\n"
               "  summary [OPTIONS] TRACE.json         print the summary table of a trace\n"
               "  export SPOOL_DIR -o FILE             write the trace from a kept spool\n"
               "  merge -o OUT.json TRACE.json ...     merge traces (one per rank) into one\n"
               "  rt [--json]                          list runtime backends and devices\n"
               "  trigger PID|SPOOL_DIR                make a running 'run' write a trace now\n"
               "  version                              print the version\n"
               "\n"
               "'acceltrace COMMAND --help' describes each command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "run"))
        return act_cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "export"))
        return act_cmd_export(argc - 1, argv + 1);
    if (!strcmp(cmd, "summary"))
        return act_cmd_summary(argc - 1, argv + 1);
    if (!strcmp(cmd, "trigger"))
        return act_cmd_trigger(argc - 1, argv + 1);
    if (!strcmp(cmd, "merge"))
        return act_cmd_merge(argc - 1, argv + 1);
    if (!strcmp(cmd, "rt")) {
        if (!act_cmd_rt) {
            fprintf(stderr, "acceltrace: 'rt' is not available in this build\n");
            return 2;
        }
        return act_cmd_rt(argc - 1, argv + 1);
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("acceltrace %s\n", act_version());
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "acceltrace: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
