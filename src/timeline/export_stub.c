/* TEMPORARY until the builder lands. */
#include "acceltrace.h"
#include "export.h"
int act_trace_export(const act_export_opts *opts) { (void)opts; return ACT_E_UNSUPPORTED; }
