/*
 * export_progress.h -- "what is acceltrace doing" while a trace is
 * exported: a thread that, after a second, rewrites one status line on a
 * terminal (phase, events written, rate, elapsed) until the export ends,
 * then clears it. The caller decides whether the stream is a terminal.
 */
#ifndef ACT_EXPORT_PROGRESS_H
#define ACT_EXPORT_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct act_export_progress act_export_progress;

/* NULL when f is NULL or no thread could start (progress is optional). */
act_export_progress *act_export_progress_start(FILE *f);
/* A static string naming what is being done now ("reading spools"). */
void act_export_progress_phase(act_export_progress *p, const char *phase);
void act_export_progress_events(act_export_progress *p, uint64_t n);
/* Stop the thread and clear the line (NULL: nothing). */
void act_export_progress_stop(act_export_progress *p);

#endif
