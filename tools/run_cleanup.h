/*
 * run_cleanup.h -- what `acceltrace run` leaves behind, let go of: the
 * spool directory and a trace replaced with --force, freed by a detached
 * helper once `run` has returned (BENCHMARKS.md item 24 for why).
 */
#ifndef ACT_RUN_CLEANUP_H
#define ACT_RUN_CLEANUP_H

/* Remove the flat spool directory `dir` now; one already gone is no
 * error, another failure is said on stderr. */
void act_run_spool_remove(const char *dir);
/* The channel to the helper that frees them once `run` has exited: `run`
 * keeps sv[0] (close-on-exec) until its exit; sv[1] is the helper's,
 * closed by `run` once the program's child has it. -1s when none (then
 * act_run_free_detached frees in place). */
int act_run_cleaner_pair(int sv[2]);
/* In the program's child, before its exec, its signals at their
 * defaults: starts the helper (a grandchild in a session of its own,
 * orphaned at once) on `helper_end`, closed here. */
void act_run_cleaner_spawn(int helper_end);
/* Descriptors the helper lets go of for `run`: a replaced trace held open
 * (closing it frees the file), the spool directory's inotify watch
 * (closing one waits for a kernel grace period: 7-23 ms measured). */
#define ACT_RUN_HELD 2
/* Rename `dir` aside and hand the helper `cleaner` its removal and the
 * descriptors `held` (-1: none; closed here either way), so that the
 * caller returns before any is freed. `dir` NULL: no spool to remove. */
void act_run_free_detached(int cleaner, const char *dir, const int held[ACT_RUN_HELD]);

#endif
