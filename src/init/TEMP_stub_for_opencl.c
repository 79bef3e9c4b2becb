/*
 * TEMP_stub_for_opencl.c -- TEMPORARY, delete when the hooks branch lands
 * on main (src/init/hooks.c and src/core/config.c replace all of this).
 *
 * Minimal hook-group machinery so the OpenCL source can be built and
 * tested before the real one exists: discovery from the act_hooks linker
 * section, every group enabled, apply = call every hook once. Also gives
 * the stub configuration (all zeros) the documented drain default.
 */
#include <string.h>

#include "acceltrace.h"
#include "config.h"
#include "hooks.h"

extern const act_hook __start_act_hooks[] __attribute__((weak, visibility("hidden")));
extern const act_hook __stop_act_hooks[] __attribute__((weak, visibility("hidden")));

static char act_tmp_applied[1024];

int act_hooks_apply_all(void)
{
    const act_hook *h = __start_act_hooks;
    for (size_t i = 0; h && h + i < __stop_act_hooks && i < sizeof act_tmp_applied; i++)
        if (!act_tmp_applied[i] && h[i].apply() == 0)
            act_tmp_applied[i] = 1;
    return 0;
}

int act_hooks_apply(const char *group)
{
    if (!group || !*group)
        return ACT_E_INVAL;
    return act_hooks_apply_all();
}

int act_hooks_group_enabled(const char *group)
{
    (void)group;
    return 1;
}

__attribute__((constructor)) static void act_tmp_cfg_defaults(void)
{
    if (!act_cfg.drain_timeout_ms)
        act_cfg.drain_timeout_ms = 10000;
}
