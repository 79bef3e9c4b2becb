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

/* 0 when `tmpl` expands; else -1 and why in err. */
int act_run_template_check(const char *tmpl, char *err, size_t errlen);

/* Writes one trace per spool in o->spool_dir, named by `tmpl` (o->out_path
 * is ignored). Each written path is reported on stderr. Returns 0, or the
 * first error (every process is still tried). */
int act_run_export_each(const act_export_opts *o, const char *tmpl);

#endif
