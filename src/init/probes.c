/*
 * probes.c -- session probes (hooks.h): what an in-process session starts
 * of the sources, found in the `act_probes` linker section like the hooks,
 * run for the groups ACCELTRACE_HOOKS enables.
 */
#include "init/hooks.h"

/* Linker-made bounds of this object's section (NULL when it is empty). */
extern const act_session_probe __start_act_probes[] __attribute__((weak, visibility("hidden")));
extern const act_session_probe __stop_act_probes[] __attribute__((weak, visibility("hidden")));

static int run_probes(const act_session_probe *b, const act_session_probe *e)
{
    int started = 0;
    for (const act_session_probe *p = b; b && p < e; p++)
        if (p->group && p->probe && act_hooks_group_enabled(p->group) && p->probe() == 0)
            started++;
    return started;
}

int act_session_probes_run(void)
{
    return run_probes(__start_act_probes, __stop_act_probes);
}
