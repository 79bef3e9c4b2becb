/*
 * cupti_none.c -- the CUPTI entry points of a build made without the CUDA
 * toolkit's cupti.h (see build.cmake): starting says so once, in the log
 * and in the trace, and the CUDA lane stays empty.
 */
#include <string.h>

#include "acceltrace.h"
#include "core/rec_write.h"
#include "sources/activity/activity.h"

int act_source_cupti_start(const act_activity_opts *opts)
{
    (void)opts;
    act_log("cupti: this acceltrace was built without cupti.h; CUDA device lane left empty");
    act_rec_error_emit(
        "cupti: this acceltrace was built without cupti.h; CUDA device lane left empty");
    return ACT_E_UNSUPPORTED;
}

void act_source_cupti_stop(void)
{
}

void act_source_cupti_stats(act_activity_stats *out)
{
    memset(out, 0, sizeof(*out));
}
