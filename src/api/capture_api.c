/*
 * capture_api.c -- act_start() / act_stop(): the public control of the
 * capture window (the window itself is core/capture.c). Each runs start-up
 * first (once), as every public entry point does.
 */
#include "acceltrace.h"
#include "init/init.h"
#include "internal.h"

ACT_EXPORT int act_start(void)
{
    act_init();
    return act_capture_api_set(1);
}

ACT_EXPORT int act_stop(void)
{
    act_init();
    return act_capture_api_set(0);
}
