/*
 * main.c -- entry point of the `acceltrace` command: dispatches to the
 * subcommands declared in cmd.h; the help of all of them is in help.c.
 */
#include <stdio.h>
#include <string.h>

#include "acceltrace.h"
#include "cmd.h"
#include "help.h"

#pragma weak act_cmd_rt

int main(int argc, char **argv)
{
    if (argc < 2)
        return act_help_no_command();
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
    if (!strcmp(cmd, "stats"))
        return act_cmd_stats(argc - 1, argv + 1);
    if (!strcmp(cmd, "recipe"))
        return act_cmd_recipe(argc - 1, argv + 1);
    if (!strcmp(cmd, "rt")) {
        if (!act_cmd_rt) {
            fprintf(stderr, "acceltrace: rt: not available in this build\n");
            return 2;
        }
        return act_cmd_rt(argc - 1, argv + 1);
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("acceltrace %s\n", act_version());
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
        return act_cmd_help(argc - 1, argv + 1);
    const char *s = cmd[0] == '-' ? NULL : act_help_suggest(cmd);
    if (s)
        return act_help_usage_error(NULL, "unknown command '%s'; did you mean '%s'?", cmd, s);
    return act_help_usage_error(NULL, "unknown command '%s'", cmd);
}
