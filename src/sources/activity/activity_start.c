/*
 * activity_start.c -- who starts the vendor activity sources, and when.
 *
 * Three ways in, all selectable with ACCELTRACE_HOOKS through the hook
 * groups "activity.mspti" and "activity.cupti":
 *
 *   - a launcher (`acceltrace run --ascend`) sets ACCELTRACE_SOURCES: the
 *     groups' hooks, applied by start-up once the recorder is open, start
 *     the sources named there (src/init/autostart.c runs start-up at load
 *     for such a launched program, which may never call acceltrace);
 *   - the CUDA driver calls InitializeInjection (`run --cuda`): cupti.c
 *     starts CUPTI when its hook group is enabled;
 *   - an in-process session runs the groups' session probes (hooks.h,
 *     ACT_SESSION_PROBE): every source whose vendor runtime is already
 *     loaded in the process is started (optional start), so a plain OpenCL
 *     or CPU program never gets libcupti or libmspti loaded into it.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "acceltrace.h"
#include "core/config.h"
#include "core/internal.h"
#include "core/rec_write.h"
#include "init/hooks.h"
#include "sources/activity/activity.h"

typedef struct vendor_source {
    const char *group;
    unsigned cfg_bit;                /* ACCELTRACE_SOURCES */
    const char *override_var;        /* ACCELTRACE_*_LIB: the user points at the library */
    const char *const *runtime_libs; /* sonames whose presence means "this vendor is in use" */
    const char *rt_env;              /* act_rt's variable for the runtime it loads */
    int (*start)(const act_activity_opts *);
} vendor_source;

static const char *const ascend_libs[] = {"libascendcl.so", "libmspti.so", NULL};
static const char *const cuda_libs[] = {"libcudart.so",
                                        "libcudart.so.13",
                                        "libcudart.so.12",
                                        "libcudart.so.11.0",
                                        "libcuda.so.1",
                                        "libcuda.so",
                                        NULL};

static const vendor_source vendors[] = {
    {"activity.mspti", ACT_CFG_SOURCE_ASCEND, "ACCELTRACE_MSPTI_LIB", ascend_libs,
     "ACCELTRACE_ASCENDCL_LIB", act_source_mspti_start},
    {"activity.cupti", ACT_CFG_SOURCE_CUDA, "ACCELTRACE_CUPTI_LIB", cuda_libs,
     "ACCELTRACE_CUDART_LIB", act_source_cupti_start},
};

/* Start a source the launcher asked for. A source that cannot start has
 * already recorded why (one error line in the trace); the hook counts as
 * applied either way, so it is not retried on every later apply. */
static int start_requested(const vendor_source *v)
{
    if (!(act_cfg.sources & v->cfg_bit) || !act_recorder_header())
        return 0;
    int rc = v->start(NULL);
    if (rc < 0 && rc != ACT_E_STATE && act_config_log_level() >= ACT_LOG_DEBUG)
        act_log("%s: start requested by ACCELTRACE_SOURCES: %s", v->group, act_strerror(rc));
    return 0;
}

static int hook_mspti_start(void)
{
    return start_requested(&vendors[0]);
}

static int hook_cupti_start(void)
{
    return start_requested(&vendors[1]);
}

ACT_HOOK("activity.mspti", mspti_start, hook_mspti_start);
ACT_HOOK("activity.cupti", cupti_start, hook_cupti_start);

/* The vendor's runtime is already in the process (RTLD_NOLOAD loads
 * nothing), or the user named the vendor library explicitly. A runtime
 * that acceltrace's own runtime table loaded (acceltrace.rt() asking for
 * device counts) is not a sign of use: loading it to answer a question
 * must not make later sessions start CUPTI on a machine without a GPU. */
static int vendor_in_use(const vendor_source *v)
{
    const char *override = secure_getenv(v->override_var);
    if (override && *override)
        return 1;
    if (act_self_loaded(v->rt_env))
        return 0;
    for (const char *const *n = v->runtime_libs; *n; n++) {
        void *h = dlopen(*n, RTLD_NOLOAD | RTLD_LAZY);
        if (h) {
            dlclose(h); /* drops the reference NOLOAD took */
            return 1;
        }
    }
    return 0;
}

/* An in-process session starts each source whose vendor runtime is
 * already loaded (probed: a plain OpenCL or CPU program never gets libcupti
 * or libmspti loaded into it). */
static int probe_vendor(const vendor_source *v)
{
    act_activity_opts probe = {.optional = 1};
    if (!vendor_in_use(v))
        return ACT_E_NOTFOUND;
    return v->start(&probe);
}

static int probe_mspti(void)
{
    return probe_vendor(&vendors[0]);
}

static int probe_cupti(void)
{
    return probe_vendor(&vendors[1]);
}

ACT_SESSION_PROBE("activity.mspti", mspti_session, probe_mspti);
ACT_SESSION_PROBE("activity.cupti", cupti_session, probe_cupti);
