/*
 * hooks.h -- hook groups: named sets of interceptions (torch_npu's
 * PatchManager, in C, registered like Linux initcalls).
 *
 * A source declares each interception with ACT_HOOK(group, name, fn). The
 * macro places a descriptor in the `act_hooks` linker section; start-up
 * discovers every descriptor between __start_act_hooks/__stop_act_hooks
 * (no central list to edit), orders the groups (default order fixed in
 * hooks.c, replaceable with act_hooks_set_order) and applies them. Applying
 * a hook means "make this interception live" (for OpenCL: fill its entries
 * of the layer dispatch table / arm its preload wrapper). Applying is
 * idempotent; a failed hook is retried on the next apply.
 *
 * Which groups are active is chosen by ACCELTRACE_HOOKS.
 */
#ifndef ACT_HOOKS_H
#define ACT_HOOKS_H

#include <stddef.h>

typedef struct act_hook {
    const char *group;  /* e.g. "opencl.kernel" */
    const char *name;   /* unique within the group */
    int (*apply)(void); /* 0 on success, negative ACT_E_* on failure */
} act_hook;

#define ACT_HOOK__SECTION __attribute__((used, section("act_hooks"), aligned(sizeof(void *))))

/* Register `fn` as hook `name` of `group` (file scope). Group names are
 * lower-case [a-z0-9_] words joined by dots ("opencl.kernel"), < 64 bytes;
 * "all" is reserved. Hooks of one group run in registration order; for
 * ACT_HOOK entries that is the order the linker laid out the section,
 * which the compiler may not keep: a hook must not depend on another hook
 * of its group having run. */
#define ACT_HOOK(group_, name_, fn_)                                                               \
    static const act_hook act__hook_##name_ ACT_HOOK__SECTION = {group_, #name_, fn_}

/* Apply every hook of every active group (discovering first if needed). */
int act_hooks_apply_all(void);
/* Apply every hook of one group. ACT_E_INVAL for NULL/empty names,
 * ACT_E_NOTFOUND for a group nobody registered. */
int act_hooks_apply(const char *group);
/* Nonzero when `group` is selected by configuration (ACCELTRACE_HOOKS). */
int act_hooks_group_enabled(const char *group);
/* Register a hook at run time (e.g. from a separately loaded module). */
int act_hooks_register(const act_hook *hook);
/* dlopen a module whose act_hooks section is discovered on the next apply. */
int act_hooks_register_module(const char *path);
/* Replace the base order of groups; unlisted groups follow in
 * registration order. `groups` is NULL-terminated. */
int act_hooks_set_order(const char *const *groups);
/* Back to the state before discovery (tests): run-time registrations,
 * registered modules, the custom order and every "applied" mark are
 * forgotten; the next apply discovers the linker section again. */
void act_hooks_reset(void);

/* ---- additions (hooks.c) ------------------------------------------------ */

/* Discover now (main section and modules not yet scanned); idempotent.
 * Returns the number of hooks known. */
int act_hooks_discover(void);
/* State of one hook: 1 applied, 0 not yet applied, a negative ACT_E_* code
 * when its last apply failed, ACT_E_NOTFOUND when unknown. */
int act_hooks_state(const char *group, const char *name);
/* The resolved group order (base order, then the other registered groups
 * in registration order). Writes at most `max` names, returns the count
 * of groups (may exceed `max`). Names stay valid until act_hooks_reset. */
int act_hooks_order(const char **out, int max);
/* The first item of an ACCELTRACE_HOOKS value (already well formed) that
 * selects none of groups[0..n_groups) ("all" always selects), its length
 * in *len; NULL when every item selects a group. */
const char *act_hooks_spec_unmatched(const char *spec, const char *const *groups, int n_groups,
                                     size_t *len);

/*
 * A module loaded with act_hooks_register_module() is found through an
 * exported function `act_hooks_module_bounds` that it defines with this
 * macro (once per module), or else through exported __start_act_hooks /
 * __stop_act_hooks symbols.
 */
#define ACT_HOOKS_MODULE()                                                                         \
    extern const act_hook __start_act_hooks[] __attribute__((weak, visibility("hidden")));         \
    extern const act_hook __stop_act_hooks[] __attribute__((weak, visibility("hidden")));          \
    __attribute__((visibility("default"))) void act_hooks_module_bounds(const act_hook **b,        \
                                                                        const act_hook **e)        \
    {                                                                                              \
        *b = __start_act_hooks;                                                                    \
        *e = __stop_act_hooks;                                                                     \
    }

/* ---- session probes ------------------------------------------------------ */

/*
 * What an in-process session (act_session_begin) starts besides applying
 * the hook groups: the probes of every enabled group (ACCELTRACE_HOOKS) run
 * when a session begins, e.g. a vendor activity source that starts when
 * its runtime is already loaded in the process. A source registers them as
 * it registers hooks, in the `act_probes` linker section, so the session
 * (src/api/session.c) names no source.
 */
typedef struct act_session_probe {
    const char *group;  /* the hook group it belongs to */
    const char *name;   /* unique within the group */
    int (*probe)(void); /* 0: started something; negative ACT_E_*: did not */
} act_session_probe;

#define ACT_SESSION_PROBE(group_, name_, fn_)                                                      \
    static const act_session_probe act__probe_##name_                                              \
        __attribute__((used, section("act_probes"), aligned(sizeof(void *)))) = {group_, #name_,   \
                                                                                 fn_}

/* Run the probe of every enabled group (probes.c); how many returned 0. */
int act_session_probes_run(void);

#endif
