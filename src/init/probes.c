/*
 * probes.c -- session probes (hooks.h): what an in-process session starts
 * of the sources, found in the `act_probes` linker section like the hooks,
 * run for the groups ACCELTRACE_HOOKS enables.
 */
#include "init/hooks.h"

/* Linker-made bounds of this object's section (NULL when it is empty). */
extern const act_session_probe __start_act_probes[] __attribute__((weak, visibility("hidden")));
extern const act_session_probe __stop_act_probes[] __attribute__((weak, visibility("hidden")));

int act_session_probes_run(void)
{
    int started = 0;
    for (const act_session_probe *p = __start_act_probes; p && p < __stop_act_probes; p++)
        if (p->group && p->probe && act_hooks_group_enabled(p->group) && p->probe() == 0)
            started++;
    return started;
}
