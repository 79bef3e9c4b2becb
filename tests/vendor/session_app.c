/*
 * session_app.c -- an in-process session (act_session_begin, as Python and
 * the torch plugin use it) in a program that uses a vendor runtime: the
 * session must start that vendor's activity source by itself, and only
 * when the runtime is in the process.
 *
 * usage: session_app MODE TRACE [FAKE_LIB]
 *   mspti_override  ACCELTRACE_MSPTI_LIB names the fake libmspti
 *   mspti_loaded    the program dlopens FAKE_LIB (libmspti.so) itself first
 *   cupti_override  ACCELTRACE_CUPTI_LIB names the fake libcupti
 *   none            no vendor runtime: afterwards no libcupti/libmspti may
 *                   be loaded in the process (the toolkit's real libcupti
 *                   is on this machine's default search path)
 *   rt_then_session as none, after act_rt_for("cuda") asked for a device
 *                   count (loading libcudart when there is one): a runtime
 *                   acceltrace loaded to answer a question is not the
 *                   program's, so the session starts no CUPTI
 *   cudart_loaded   the program dlopens the CUDA runtime (libcudart.so)
 *                   itself: the session probes CUPTI; without a GPU that
 *                   fails, and the reason goes into the trace, not onto
 *                   stderr (exit 3 when there is no libcudart at all)
 * Kernels named "session_kernel" are launched inside the range
 * "session_range"; the trace is checked by check_session_sources.py.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "acceltrace_rt.h"

#define KERNELS 5

static void *loaded(const char *path)
{
    return path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
}

static int launch_mspti(void *h)
{
    uint64_t (*launch)(const char *, const char *, uint32_t, uint32_t, uint64_t) =
        (uint64_t(*)(const char *, const char *, uint32_t, uint32_t, uint64_t))dlsym(
            h, "fake_mspti_launch_kernel");
    if (!launch)
        return -1;
    for (int i = 0; i < KERNELS; i++)
        launch("session_kernel", "AI_CORE", 0, 2, 1000);
    return 0;
}

static int launch_cuda(void *h)
{
    uint32_t (*launch)(const char *, uint32_t, uint32_t, uint64_t, int32_t, int32_t) =
        (uint32_t(*)(const char *, uint32_t, uint32_t, uint64_t, int32_t, int32_t))dlsym(
            h, "fake_cuda_launch_kernel");
    void (*set)(const char *, long) = (void (*)(const char *, long))dlsym(h, "fake_cupti_set");
    if (!launch || !set)
        return -1;
    set("delay_ms", 10); /* as FAKE_MSPTI_DELAY_MS does for the mspti fake */
    for (int i = 0; i < KERNELS; i++)
        launch("session_kernel", 0, 2, 1000, 4, 64);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *mode = argv[1];
    if (!strcmp(mode, "mspti_loaded") && (argc < 4 || !dlopen(argv[3], RTLD_NOW | RTLD_GLOBAL))) {
        fprintf(stderr, "session_app: cannot load %s\n", argc > 3 ? argv[3] : "(none)");
        return 2;
    }
    if (!strcmp(mode, "cudart_loaded") && !dlopen("libcudart.so", RTLD_NOW | RTLD_GLOBAL))
        return 3;
    if (!strcmp(mode, "rt_then_session")) {
        int n = 0;
        const struct act_rt *rt = act_rt_for("cuda");
        if (rt)
            rt->device_count(&n); /* fails without a GPU; the library stays loaded */
    }
    if (act_session_begin(NULL) != ACT_OK) {
        fprintf(stderr, "session_app: act_session_begin failed\n");
        return 1;
    }
    int rc = 0;
    act_range_push("session_range");
    if (!strcmp(mode, "mspti_override") || !strcmp(mode, "mspti_loaded")) {
        /* The session's source must have the library loaded by now. */
        void *h = loaded(!strcmp(mode, "mspti_loaded") ? argv[3] : getenv("ACCELTRACE_MSPTI_LIB"));
        rc = h ? launch_mspti(h) : -1;
    } else if (!strcmp(mode, "cupti_override")) {
        void *h = loaded(getenv("ACCELTRACE_CUPTI_LIB"));
        rc = h ? launch_cuda(h) : -1;
    } else if (!strcmp(mode, "cudart_loaded")) {
        rc = 0; /* what matters is what the session printed and recorded */
    } else if (!strcmp(mode, "none") || !strcmp(mode, "rt_then_session")) {
        const char *names[] = {"libcupti.so", "libcupti.so.13", "libmspti.so"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (dlopen(names[i], RTLD_NOW | RTLD_NOLOAD)) {
                fprintf(stderr,
                        "session_app: %s was loaded into a program without a vendor "
                        "runtime\n",
                        names[i]);
                rc = -1;
            }
    } else {
        rc = -1;
    }
    if (rc != 0)
        fprintf(stderr, "session_app: %s: the vendor library is not in the process\n", mode);
    act_range_pop();
    if (act_session_end(argv[2]) != ACT_OK) {
        fprintf(stderr, "session_app: act_session_end failed\n");
        return 1;
    }
    return rc == 0 ? 0 : 1;
}
