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
    const char *group; /* e.g. "opencl.kernel" */
    const char *name;  /* unique within the group */
    int (*apply)(void); /* 0 on success, negative ACT_E_* on failure */
} act_hook;

#define ACT_HOOK__SECTION __attribute__((used, section("act_hooks"), aligned(sizeof(void *))))

/* Register `fn` as hook `name` of `group` (file scope). */
#define ACT_HOOK(group_, name_, fn_)                                                   \
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
/* Back to the state before discovery (tests). */
void act_hooks_reset(void);

#endif
