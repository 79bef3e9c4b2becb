/*
 * outname.h -- `run -o` with an output name template (%p %h %r %q{VAR} %%,
 * src/core/dist.h): one trace per traced process, each named by the
 * template as that process expanded it (its own pid, host, rank and
 * environment).
 */
#ifndef ACT_TOOL_OUTNAME_H
#define ACT_TOOL_OUTNAME_H

#include <stddef.h>

#include "api/export.h"

/* Before the program starts: 0 when `tmpl` expands and the part of its
 * directory that does not depend on the process (%p, %r; %q{VAR} and %h
 * as the launcher sees them) can be written. Else -1 and why in err. */
int act_run_template_check(const char *tmpl, char *err, size_t errlen);

/* Writes one trace per spool in o->spool_dir, named by `tmpl` (o->out_path
 * is ignored): each as its process expanded the template when it started
 * (the name it recorded), or with ACT_EACH_RENAME as `tmpl` expands here
 * for it (its pid and recorded rank; %h and %q{VAR} of this process).
 * Each written path is reported on stderr, and each that is not, with
 * why. Returns 0, ACT_E_FORMAT (written, unreadable parts named in the
 * trace), or the first error of a trace not written (every process is
 * still tried); *n_missing counts those. ACT_EACH_KEEP_MISSING: when some
 * were not written, the spool files of those that were are removed, so
 * that the directory holds what an export must still write. o->times,
 * when set, gets the records of events of all of them (0: nothing was
 * recorded). */
#define ACT_EACH_KEEP_MISSING 1u
#define ACT_EACH_RENAME       2u
int act_run_export_each(const act_export_opts *o, const char *tmpl, unsigned flags, int *n_missing);

#endif
