/*
 * fake_icd.c -- a fake OpenCL ICD (vendor driver) that counts what it
 * receives: being loaded and every call. Each event is appended as one
 * line to the file named by FAKE_ICD_LOG. It offers no platform, so a
 * program that does use OpenCL sees zero platforms. Used to prove that
 * loading libacceltrace performs no device-runtime call.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void note(const char *what)
{
    const char *path = getenv("FAKE_ICD_LOG");
    if (!path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0)
        return;
    ssize_t w = write(fd, what, strlen(what));
    w = write(fd, "\n", 1);
    (void)w;
    close(fd);
}

__attribute__((constructor)) static void loaded(void)
{
    note("loaded");
}

__attribute__((visibility("default"))) cl_int clIcdGetPlatformIDsKHR(cl_uint n, cl_platform_id *p,
                                                                     cl_uint *num)
{
    (void)n;
    (void)p;
    note("clIcdGetPlatformIDsKHR");
    if (num)
        *num = 0;
    return CL_SUCCESS;
}

__attribute__((visibility("default"))) void *clGetExtensionFunctionAddress(const char *name)
{
    note("clGetExtensionFunctionAddress");
    if (name && !strcmp(name, "clIcdGetPlatformIDsKHR"))
        return (void *)clIcdGetPlatformIDsKHR;
    return NULL;
}

__attribute__((visibility("default"))) cl_int
clGetPlatformInfo(cl_platform_id p, cl_platform_info i, size_t s, void *v, size_t *r)
{
    (void)p, (void)i, (void)s, (void)v, (void)r;
    note("clGetPlatformInfo");
    return CL_INVALID_PLATFORM;
}
