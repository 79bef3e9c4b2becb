/*
 * summary_cl.h -- the summary's OpenCL section (summary_cl.c): failed
 * calls and commands by name and error, build time, leaked objects.
 */
#ifndef ACT_SUMMARY_CL_H
#define ACT_SUMMARY_CL_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "timeline/timeline.h"

/* Count one failure of `name` with error `err` into *failed (made on
 * first use). */
void act_summary_cl_failure(json_t **failed, const char *name, size_t len, const char *err,
                            size_t errlen);
/* The same for an event flagged ACT_EVF_ERROR of a built timeline. */
void act_summary_cl_failure_event(json_t **failed, const act_timeline *tl, const act_tl_event *e);
/* Print the section (nothing when there is nothing OpenCL to say). */
void act_summary_cl_print(FILE *f, json_t *failed, json_t *leaks, json_t *undrawn, uint64_t builds,
                          double build_us);

#endif
