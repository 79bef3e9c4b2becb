/*
 * trace_import.h -- a trace file written again in another format:
 * `acceltrace export -o OUT TRACE.json` (trace_import.c).
 */
#ifndef ACT_TRACE_IMPORT_H
#define ACT_TRACE_IMPORT_H

#include <signal.h>
#include <stdint.h>

typedef struct act_import_opts {
    const char *in_path;  /* a Chrome trace (.json or .json.gz; ours or torch.profiler's) */
    const char *out_path; /* its format picked by its name (writers.c) */
    int force;            /* replace an existing regular file at out_path */
    unsigned mode;        /* permission bits of the output; 0 = 0600 */
    volatile const sig_atomic_t *cancel; /* stop, nothing written, once *cancel != 0 */
    const char *who;                     /* the command, in messages ("export") */
} act_import_opts;

/* Returns 0 (*events: the events written), ACT_E_FORMAT (the input is not
 * a trace: said on stderr), ACT_E_STATE (cancelled) or another ACT_E_*
 * code (the output could not be written: said on stderr). */
int act_trace_import(const act_import_opts *o, uint64_t *events);

#endif
