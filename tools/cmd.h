/*
 * cmd.h -- the subcommands of the `acceltrace` command. main.c dispatches
 * on the first argument; each subcommand lives in its own cmd_<name>.c and
 * returns the process exit status (0 ok, 2 usage or input error).
 */
#ifndef ACT_CMD_H
#define ACT_CMD_H

#include <stdio.h>

/* Each receives argv with argv[0] = the subcommand name. */
int act_cmd_run(int argc, char **argv);     /* cmd_run.c */
int act_cmd_summary(int argc, char **argv); /* cmd_summary.c */
int act_cmd_rt(int argc, char **argv);      /* cmd_rt.c */
int act_cmd_trigger(int argc, char **argv); /* cmd_trigger.c */
int act_cmd_export(int argc, char **argv);  /* cmd_export.c */
int act_cmd_merge(int argc, char **argv);   /* cmd_merge.c */
int act_cmd_stats(int argc, char **argv);   /* cmd_stats.c */
int act_cmd_recipe(int argc, char **argv);  /* cmd_recipe.c: execs the Python recipes */

/* Weak fallbacks let a subcommand be missing from a build without
 * breaking the others (main.c says "not available in this build"). */

#endif
