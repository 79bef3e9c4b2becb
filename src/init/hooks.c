/*
 * hooks.c -- hook groups (torch_npu's PatchManager, in C).
 *
 * Hooks come from three places: the `act_hooks` linker section of the
 * object this file is linked into (the library, or a program linking the
 * static library), the same section of modules registered with
 * act_hooks_register_module(), and act_hooks_register() at run time. All
 * end up in one list, `entries`, in registration order. Each entry carries
 * its own state, so:
 *   - applying is idempotent (an applied entry never runs again);
 *   - an entry added after its group was applied runs on the next apply;
 *   - an entry added *during* an apply of its group runs in that apply (the
 *     loop re-reads the list length, it does not iterate over a copy);
 *   - a failing entry is reported, stays pending and is retried on the next
 *     apply, while the entries that succeeded are not run again.
 * Modules are scanned at every apply, so a module registered after
 * discovery is still found (torch_npu's register_patch_module is not).
 *
 * One recursive mutex guards everything; it is held while hooks run so a
 * hook may register further hooks (same thread) while other threads wait.
 */
#include "init/hooks.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "config.h"
#include "core/internal.h"
#include "core/vec.h"

/* The default base order: fixed here and nowhere else. Groups registered
 * but not listed follow in registration order. */
static const char *const default_order[] = {
    "opencl.queue", "opencl.kernel",  "opencl.transfer",
    "opencl.sync",  "activity.mspti", "activity.cupti",
    NULL,
};

#define GROUP_NAME_MAX 64

enum { ST_PENDING = 0, ST_RUNNING = 1, ST_APPLIED = 2, ST_FAILED = 3 };

typedef struct hook_entry {
    act_hook hook; /* copied: run-time descriptors need not outlive the call */
    int group;     /* index into groups */
    int state;
    int err;      /* last failure */
    int attempts; /* calls of hook.apply */
} hook_entry;

typedef struct hook_module {
    char *path;
    void *handle;
    const act_hook *begin, *end;
    int scanned;
} hook_module;

static struct {
    hook_entry *entries;
    int n_entries;
    size_t cap_entries;
    char **groups; /* each allocated on its own: names handed out stay put */
    int n_groups;
    size_t cap_groups;
    hook_module *modules;
    int n_modules;
    size_t cap_modules;
    char **order; /* custom base order (NULL-terminated) or NULL */
    int discovered;
    int applying; /* nesting depth of apply calls */
    char warned_spec[sizeof(act_cfg.hooks)];
} hook_registry;

static pthread_mutex_t hooks_lock;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void lock_init(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&hooks_lock, &a);
    pthread_mutexattr_destroy(&a);
}

static void hooks_lock_take(void)
{
    pthread_once(&hooks_once, lock_init);
    pthread_mutex_lock(&hooks_lock);
}

static void hooks_lock_drop(void)
{
    pthread_mutex_unlock(&hooks_lock);
}

/* Linker-made bounds of this object's section (NULL when it is empty). */
extern const act_hook __start_act_hooks[] __attribute__((weak, visibility("hidden")));
extern const act_hook __stop_act_hooks[] __attribute__((weak, visibility("hidden")));

/* ---- names ----------------------------------------------------------- */

/* Group names: components of [a-z0-9_] joined by single dots, < 64 bytes;
 * "all" is reserved for ACCELTRACE_HOOKS. */
static int group_name_valid(const char *s)
{
    if (!s || !*s || !strcmp(s, "all"))
        return 0;
    size_t n = strlen(s);
    if (n >= GROUP_NAME_MAX || s[0] == '.' || s[n - 1] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
              (c == '.' && s[i + 1] != '.')))
            return 0;
    }
    return 1;
}

static int group_find(const char *name)
{
    for (int i = 0; i < hook_registry.n_groups; i++)
        if (!strcmp(hook_registry.groups[i], name))
            return i;
    return -1;
}

static int group_intern(const char *name)
{
    int g = group_find(name);
    if (g >= 0)
        return g;
    if (act_vec_reserve(hook_registry.groups, hook_registry.cap_groups,
                        (size_t)hook_registry.n_groups + 1, 16))
        return ACT_E_NOMEM;
    if (!(hook_registry.groups[hook_registry.n_groups] = strdup(name)))
        return ACT_E_NOMEM;
    return hook_registry.n_groups++;
}

/* ---- registration ------------------------------------------------------ */

static int register_locked(const act_hook *h)
{
    if (!h || !group_name_valid(h->group) || !h->name || !*h->name || !h->apply)
        return ACT_E_INVAL;
    int g = group_find(h->group);
    for (int i = 0; g >= 0 && i < hook_registry.n_entries; i++) {
        const hook_entry *e = &hook_registry.entries[i];
        if (e->group == g && !strcmp(e->hook.name, h->name))
            return e->hook.apply == h->apply ? 0 : ACT_E_CONFLICT;
    }
    if (act_vec_reserve(hook_registry.entries, hook_registry.cap_entries,
                        (size_t)hook_registry.n_entries + 1, 16))
        return ACT_E_NOMEM;
    g = group_intern(h->group);
    if (g < 0)
        return g;
    hook_registry.entries[hook_registry.n_entries++] = (hook_entry){.hook = *h, .group = g};
    return 0;
}

int act_hooks_register(const act_hook *hook)
{
    hooks_lock_take();
    int rc = register_locked(hook);
    hooks_lock_drop();
    return rc;
}

/* Register every descriptor in [b, e); bad ones are reported and skipped. */
static void scan_section(const act_hook *b, const act_hook *e, const char *where)
{
    for (const act_hook *h = b; b && h < e; h++) {
        int rc = register_locked(h);
        if (rc < 0)
            act_log("hook %s/%s in %s not registered: %s", h->group ? h->group : "(null)",
                    h->name ? h->name : "(null)", where, act_strerror(rc));
    }
}

/* Nonzero when `sym` is defined by the object behind `handle` itself
 * (dlsym on a handle also searches that object's dependencies). */
static int sym_in_module(void *handle, const void *sym)
{
    struct link_map *mine = NULL, *owner = NULL;
    Dl_info info;
    if (!sym || dlinfo(handle, RTLD_DI_LINKMAP, &mine) != 0)
        return 0;
    if (!dladdr1(sym, &info, (void **)&owner, RTLD_DL_LINKMAP))
        return 0;
    return owner == mine;
}

/* Find a module's section: its act_hooks_module_bounds() or its exported
 * linker symbols. */
static int module_bounds(hook_module *m)
{
    void (*fn)(const act_hook **, const act_hook **);
    *(void **)&fn = dlsym(m->handle, "act_hooks_module_bounds");
    if (fn && sym_in_module(m->handle, *(void **)&fn)) {
        fn(&m->begin, &m->end);
        return 0;
    }
    const act_hook *b = dlsym(m->handle, "__start_act_hooks");
    const act_hook *e = dlsym(m->handle, "__stop_act_hooks");
    if (b && e && sym_in_module(m->handle, b)) {
        m->begin = b;
        m->end = e;
        return 0;
    }
    return ACT_E_NOTFOUND;
}

int act_hooks_register_module(const char *path)
{
    if (!path || !*path)
        return ACT_E_INVAL;
    hooks_lock_take();
    int rc = 0;
    for (int i = 0; i < hook_registry.n_modules; i++)
        if (!strcmp(hook_registry.modules[i].path, path))
            goto out; /* already registered */
    if ((rc = act_vec_reserve(hook_registry.modules, hook_registry.cap_modules,
                              (size_t)hook_registry.n_modules + 1, 16)) < 0)
        goto out;
    hook_module m = {.path = strdup(path)};
    if (!m.path) {
        rc = ACT_E_NOMEM;
        goto out;
    }
    m.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!m.handle) {
        act_log("hook module %s not loaded: %s", path, dlerror());
        free(m.path);
        rc = ACT_E_NOTFOUND;
        goto out;
    }
    if ((rc = module_bounds(&m)) < 0) {
        act_log("hook module %s has no act_hooks section", path);
        dlclose(m.handle);
        free(m.path);
        goto out;
    }
    hook_registry.modules[hook_registry.n_modules++] = m;
out:
    hooks_lock_drop();
    return rc;
}

/* ---- discovery --------------------------------------------------------- */

static void discover_locked(void)
{
    if (!hook_registry.discovered) {
        hook_registry.discovered = 1;
        scan_section(__start_act_hooks, __stop_act_hooks, "the library");
    }
    for (int i = 0; i < hook_registry.n_modules; i++) {
        hook_module *m = &hook_registry.modules[i];
        if (m->scanned)
            continue;
        m->scanned = 1; /* set first: a hook may register yet another module */
        scan_section(m->begin, m->end, m->path);
    }
}

int act_hooks_discover(void)
{
    hooks_lock_take();
    discover_locked();
    int n = hook_registry.n_entries;
    hooks_lock_drop();
    return n;
}

/* ---- order ------------------------------------------------------------- */

/* Group indices in resolved order into `out` (capacity hook_registry.n_groups). */
static int resolve_order(int *out)
{
    int n = 0;
    const char *const *base =
        hook_registry.order ? (const char *const *)hook_registry.order : default_order;
    for (int i = 0; base[i]; i++) {
        int g = group_find(base[i]);
        if (g >= 0)
            out[n++] = g;
    }
    for (int g = 0; g < hook_registry.n_groups; g++) {
        int listed = 0;
        for (int i = 0; base[i] && !listed; i++)
            listed = !strcmp(base[i], hook_registry.groups[g]);
        if (!listed)
            out[n++] = g;
    }
    return n;
}

static void free_order(char **order)
{
    for (int i = 0; order && order[i]; i++)
        free(order[i]);
    free(order);
}

int act_hooks_set_order(const char *const *groups)
{
    char **copy = NULL;
    if (groups) {
        int n = 0;
        for (; groups[n]; n++) {
            if (!group_name_valid(groups[n]))
                return ACT_E_INVAL;
            for (int j = 0; j < n; j++)
                if (!strcmp(groups[j], groups[n]))
                    return ACT_E_INVAL; /* listed twice */
        }
        copy = calloc((size_t)n + 1, sizeof(*copy));
        if (!copy)
            return ACT_E_NOMEM;
        for (int i = 0; i < n; i++) {
            if (!(copy[i] = strdup(groups[i]))) {
                free_order(copy);
                return ACT_E_NOMEM;
            }
        }
    }
    hooks_lock_take();
    free_order(hook_registry.order);
    hook_registry.order = copy; /* NULL: back to the default order */
    hooks_lock_drop();
    return 0;
}

int act_hooks_order(const char **out, int max)
{
    hooks_lock_take();
    discover_locked();
    int *idx = malloc(sizeof(int) * (size_t)(hook_registry.n_groups ? hook_registry.n_groups : 1));
    int n = 0;
    if (idx) {
        n = resolve_order(idx);
        for (int i = 0; i < n && i < max; i++)
            out[i] = hook_registry.groups[idx[i]];
        free(idx);
    }
    hooks_lock_drop();
    return idx ? n : ACT_E_NOMEM;
}

/* Exported for `acceltrace run`, which checks ACCELTRACE_HOOKS against the
 * library it injects before the program starts (not public API). */
ACT_EXPORT int act_hooks_group_names(const char **out, int max)
{
    return act_hooks_order(out, max);
}

/* ---- selection (ACCELTRACE_HOOKS) ---------------------------------------- */

/* Does pattern p[0..n) select `group`? "all", the name itself, or a
 * dotted prefix of it ("opencl" selects "opencl.kernel"). */
static int pattern_matches(const char *p, size_t n, const char *group)
{
    if (n == 3 && !strncmp(p, "all", 3))
        return 1;
    return !strncmp(group, p, n) && (group[n] == '\0' || group[n] == '.');
}

int act_hooks_group_enabled(const char *group)
{
    if (!group || !*group)
        return 0;
    const char *spec = act_cfg.hooks[0] ? act_cfg.hooks : "all";
    int enabled = spec[0] == '-'; /* a list that starts by excluding starts from all */
    for (const char *p = spec;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        int exclude = n && p[0] == '-';
        if (pattern_matches(p + exclude, n - (size_t)exclude, group))
            enabled = !exclude; /* the last matching item wins */
        if (!end)
            return enabled;
        p = end + 1;
    }
}

const char *act_hooks_spec_unmatched(const char *spec, const char *const *groups, int n_groups,
                                     size_t *len)
{
    for (const char *p = spec;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        size_t skip = (n && p[0] == '-') ? 1 : 0;
        int hit = n - skip == 3 && !strncmp(p + skip, "all", 3);
        for (int g = 0; g < n_groups && !hit; g++)
            hit = pattern_matches(p + skip, n - skip, groups[g]);
        if (!hit) {
            *len = n - skip;
            return p + skip;
        }
        if (!end)
            return NULL;
        p = end + 1;
    }
}

/* Say once per setting when an item of ACCELTRACE_HOOKS selects nothing:
 * a misspelt group must not silently trace nothing (`acceltrace run`
 * refuses such a value before the program starts; this is for a program
 * started without it). */
static void warn_unmatched_locked(void)
{
    const char *spec = act_cfg.hooks;
    if (!spec[0] || !strcmp(spec, hook_registry.warned_spec))
        return;
    strcpy(hook_registry.warned_spec, spec);
    size_t n;
    const char *p = act_hooks_spec_unmatched(spec, (const char *const *)hook_registry.groups,
                                             hook_registry.n_groups, &n);
    if (p && act_config_log_level() >= ACT_LOG_INFO)
        act_log("ACCELTRACE_HOOKS: '%.*s' matches no hook group", (int)n, p);
}

/* ---- apply ------------------------------------------------------------- */

/* Run every not-yet-applied hook of group `g`. Returns 0 or the first
 * failure; later hooks still run after a failure. */
static int apply_group_locked(int g)
{
    int first_err = 0;
    hook_registry.applying++;
    for (int i = 0; i < hook_registry.n_entries; i++) { /* n_entries re-read: see file comment */
        if (hook_registry.entries[i].group != g || hook_registry.entries[i].state == ST_APPLIED ||
            hook_registry.entries[i].state == ST_RUNNING)
            continue;
        act_hook h = hook_registry.entries[i].hook;
        hook_registry.entries[i].state = ST_RUNNING;
        hook_registry.entries[i].attempts++;
        int rc = h.apply();
        hook_entry *e = &hook_registry.entries[i]; /* the array may have moved */
        if (rc == 0) {
            e->state = ST_APPLIED;
            continue;
        }
        e->state = ST_FAILED;
        e->err = rc < 0 ? rc : ACT_E_STATE;
        act_log("hook %s/%s failed (attempt %d): %s; it is retried on the next apply", h.group,
                h.name, e->attempts, act_strerror(e->err));
        if (!first_err)
            first_err = e->err;
    }
    hook_registry.applying--;
    return first_err;
}

int act_hooks_apply(const char *group)
{
    if (!group || !*group)
        return ACT_E_INVAL;
    if (!group_name_valid(group))
        return ACT_E_INVAL;
    hooks_lock_take();
    discover_locked();
    int g = group_find(group);
    int rc;
    if (g < 0)
        rc = ACT_E_NOTFOUND;
    else if (!act_hooks_group_enabled(group))
        rc = ACT_E_DISABLED;
    else
        rc = apply_group_locked(g);
    hooks_lock_drop();
    return rc;
}

int act_hooks_apply_all(void)
{
    hooks_lock_take();
    discover_locked();
    warn_unmatched_locked();
    int first_err = 0;
    /* Groups first registered during this apply join it: the order is
     * resolved again after each group. */
    char *done = NULL;
    int done_cap = 0;
    for (;;) {
        int *order =
            malloc(sizeof(int) * (size_t)(hook_registry.n_groups ? hook_registry.n_groups : 1));
        if (!done || hook_registry.n_groups > done_cap) {
            int want = hook_registry.n_groups > 0 ? hook_registry.n_groups : 1;
            char *d = realloc(done, (size_t)want);
            if (d)
                memset(d + done_cap, 0, (size_t)(want - done_cap));
            else
                free(done);
            done = d;
            done_cap = d ? want : 0;
        }
        if (!order || !done) {
            free(order);
            first_err = first_err ? first_err : ACT_E_NOMEM;
            break;
        }
        int n = resolve_order(order), next = -1;
        for (int i = 0; i < n && next < 0; i++)
            if (!done[order[i]])
                next = order[i];
        free(order);
        if (next < 0)
            break;
        done[next] = 1;
        if (!act_hooks_group_enabled(hook_registry.groups[next]))
            continue;
        int rc = apply_group_locked(next);
        if (rc < 0 && !first_err)
            first_err = rc;
        discover_locked(); /* a hook may have registered a module */
    }
    free(done);
    hooks_lock_drop();
    return first_err;
}

int act_hooks_state(const char *group, const char *name)
{
    if (!group || !name)
        return ACT_E_INVAL;
    hooks_lock_take();
    int rc = ACT_E_NOTFOUND, g = group_find(group);
    for (int i = 0; g >= 0 && i < hook_registry.n_entries; i++) {
        const hook_entry *e = &hook_registry.entries[i];
        if (e->group == g && !strcmp(e->hook.name, name)) {
            rc = e->state == ST_APPLIED ? 1 : e->state == ST_FAILED ? e->err : 0;
            break;
        }
    }
    hooks_lock_drop();
    return rc;
}

void act_hooks_reset(void)
{
    hooks_lock_take();
    if (hook_registry.applying) { /* a hook resetting its own manager: refuse */
        act_log("act_hooks_reset called during an apply; ignored");
        hooks_lock_drop();
        return;
    }
    /* Modules stay mapped (a live interception may point into them); only
     * their registration is forgotten. */
    for (int i = 0; i < hook_registry.n_modules; i++)
        free(hook_registry.modules[i].path);
    free(hook_registry.modules);
    free(hook_registry.entries);
    for (int i = 0; i < hook_registry.n_groups; i++)
        free(hook_registry.groups[i]);
    free(hook_registry.groups);
    free_order(hook_registry.order);
    memset(&hook_registry, 0, sizeof(hook_registry));
    hooks_lock_drop();
}
