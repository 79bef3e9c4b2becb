/*
 * prog_nocl.c -- a program linked with libOpenCL that uses OpenCL only
 * when asked. Modes (argv[1]):
 *   query  calls act_version / act_is_enabled (found with dlsym, so the
 *          program works with libacceltrace preloaded or not)
 *   annot  also calls act_range_push/pop, which runs start-up
 *   opencl calls clGetPlatformIDs (the control: the fake ICD must see it)
 * Prints nothing on success.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "query";
    if (!strcmp(mode, "opencl")) {
        cl_uint n = 0;
        clGetPlatformIDs(0, NULL, &n);
        return 0;
    }
    const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "act_version");
    int (*enabled)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "act_is_enabled");
    int (*push)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "act_range_push");
    int (*pop)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "act_range_pop");
    if (!version || !enabled || !push || !pop)
        return 3; /* libacceltrace is not loaded */
    if (!version()[0] || enabled())
        return 4;
    if (!strcmp(mode, "annot")) {
        push("step");
        pop();
    }
    return 0;
}
