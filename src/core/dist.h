/*
 * dist.h -- which rank of a distributed job this process is, from the
 * variables the launchers set (torchrun, Open MPI, MPICH/PMI, Slurm), as
 * kineto's `distributedInfo` ({"rank", "local_rank", "world_size",
 * "backend" when known}); and the output name templates of `run -o`
 * (%p pid, %h host, %q{VAR} environment variable, %r rank, %% a '%').
 */
#ifndef ACT_DIST_H
#define ACT_DIST_H

#include <stddef.h>

typedef const char *(*act_env_fn)(const char *name);

typedef struct act_dist_info {
    int known;            /* a launcher's rank variable was found */
    long rank;            /* -1: unknown */
    long local_rank;      /* -1: unknown */
    long world_size;      /* -1: unknown */
    const char *launcher; /* "torchrun", "openmpi", "pmi", "slurm" */
} act_dist_info;

/* Fills *d from the environment (get = getenv in a process; a lookup in a
 * test). The first launcher whose rank variable parses wins. */
void act_dist_detect(act_dist_info *d, act_env_fn get);

/* d as a JSON object; returns the length (snprintf's rule). */
int act_dist_json(const act_dist_info *d, char *buf, size_t n);

/* Records the clocks' anchor, distributedInfo (auto-detected) and, when the launcher passed an
 * output template (ACCELTRACE_OUTPUT_TEMPLATE), this process's trace name
 * into the spool just opened. */
void act_dist_record(void);

/* Nonzero when `s` is an output name template (has a '%'). */
int act_outname_is_template(const char *s);

/* Expands a template; host NULL = gethostname(). Returns 0, or -1 with
 * `err` saying what is wrong with the template. A %r of a process with no
 * rank becomes "pid<PID>"; %q{VAR} of an unset VAR becomes "". */
int act_outname_expand(const char *tmpl, unsigned pid, const char *host, const act_dist_info *d,
                       act_env_fn get, char *out, size_t n, char *err, size_t errlen);

/* The metadata key under which a process records its expanded name. */
#define ACT_OUTNAME_META_KEY "acceltrace.output"
/* ... and its clocks' anchor ({"monotonic_ns", "realtime_ns", "error_ns"}). */
#define ACT_ANCHOR_META_KEY "acceltrace.anchor"

#endif
