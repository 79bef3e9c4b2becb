/*
 * run_cleanup.h -- what `acceltrace run` leaves behind, let go of: the
 * spool directory and a trace replaced with --force, freed by a detached
 * child once `run` has returned (BENCHMARKS.md item 24 for why).
 */
#ifndef ACT_RUN_CLEANUP_H
#define ACT_RUN_CLEANUP_H

/* Remove the flat spool directory `dir` now; one already gone is no
 * error, another failure is said on stderr. */
void act_run_spool_remove(const char *dir);
/* Rename `dir` aside and have a detached child remove it and close
 * `replaced_fd` (a replaced trace held open; -1: none), so that the
 * caller returns before either is freed. `dir` NULL: no spool to remove. */
void act_run_free_detached(const char *dir, int replaced_fd);

#endif
