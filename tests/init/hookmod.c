/*
 * hookmod.c -- a separately loaded hook module for tests/init: two hooks
 * in group "t.mod" and one in "t.mod2", found through
 * act_hooks_module_bounds (ACT_HOOKS_MODULE). HOOKMOD_FALLBACK builds the
 * variant found through its exported __start/__stop_act_hooks symbols, and
 * HOOKMOD_BAD adds a descriptor with an invalid group name.
 */
#include "init/hooks.h"

static int runs_a, runs_b, runs_c;

static int mod_a(void)
{
    return ++runs_a, 0;
}
static int mod_b(void)
{
    return ++runs_b, 0;
}
static int mod_c(void)
{
    return ++runs_c, 0;
}

#ifndef HOOKMOD_FALLBACK
ACT_HOOK("t.mod", mod_a, mod_a);
ACT_HOOK("t.mod", mod_b, mod_b);
ACT_HOOK("t.mod2", mod_c, mod_c);
ACT_HOOKS_MODULE()
#else
ACT_HOOK("t.fallback", mod_a, mod_a);
ACT_HOOK("t.fallback", mod_b, mod_b);
ACT_HOOK("t.fallback", mod_c, mod_c);
/* Referencing both bounds makes the linker define and export them. */
extern const act_hook __start_act_hooks[];
extern const act_hook __stop_act_hooks[];
__attribute__((visibility("default")))
const void *hookmod_bounds_ref[2] = {__start_act_hooks, __stop_act_hooks};
#endif

#ifdef HOOKMOD_BAD
static int mod_bad(void)
{
    return 0;
}
ACT_HOOK("Bad Group", mod_bad, mod_bad);
#endif

/* Total runs of this module's hooks, for the test. */
__attribute__((visibility("default"))) int hookmod_runs(void)
{
    return runs_a * 100 + runs_b * 10 + runs_c;
}
