/*
 * help.h -- the one source of the command's help: `--help` of every
 * command, `acceltrace help [COMMAND]`, the man page acceltrace.1
 * (`acceltrace help --man`, generated at build time) and the option lists
 * the shell completions ask for (`acceltrace help --options COMMAND`) are
 * all rendered from the tables in help.c, so they cannot drift apart.
 */
#ifndef ACT_HELP_H
#define ACT_HELP_H

#include <stdio.h>

/* `acceltrace COMMAND --help` (NULL or "" = the top-level help). Returns
 * 0, or -1 for an unknown command. */
int act_help_print(const char *command, FILE *f);
/* `acceltrace` alone: every command and what it does, on stderr; returns 2. */
int act_help_no_command(void);
/* A usage error: "acceltrace: CMD: MESSAGE (see 'acceltrace CMD --help')",
 * one line on stderr. Returns 2 (the exit status). */
int act_help_usage_error(const char *command, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The known command nearest to `typo` (for "did you mean"), or NULL. */
const char *act_help_suggest(const char *typo);
/* `acceltrace help ...`: COMMAND, --man, --options COMMAND, --commands. */
int act_cmd_help(int argc, char **argv);

#endif
