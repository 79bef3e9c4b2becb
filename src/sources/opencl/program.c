/*
 * program.c -- program builds and kernel arguments.
 *
 * clBuildProgram, clCompileProgram and clLinkProgram are host slices with
 * args: "options" as given, "kernels" (CL_PROGRAM_KERNEL_NAMES) when the
 * build succeeded, and "build log" of the first device whose build failed.
 * A build the app made asynchronous (pfn_notify given) is only a slice:
 * its outcome is not known when the call returns.
 *
 * clSetKernelArg / clSetKernelArgSVMPointer record each argument's size
 * with the kernel (objects.c); a launch then carries "work dim", "global
 * work size", "local work size" (null when the runtime chooses), "global
 * work offset" (null when none) and "arg sizes" (written with the launch
 * by event.c).
 */
#include <stdlib.h>

#include "cl_source.h"

#define ACT_CL_LOG_MAX (60u * 1024u) /* a record holds one 64 KiB string */

/* A program info string (kernel names, build log) in a malloc'ed buffer. */
static char *act_cl_program_string(cl_program p, cl_device_id dev, cl_uint param)
{
    size_t len = 0;
    cl_int rc = dev ? act_cl_next.clGetProgramBuildInfo(p, dev, param, 0, NULL, &len)
                    : act_cl_next.clGetProgramInfo(p, param, 0, NULL, &len);
    char *s = rc == CL_SUCCESS && len ? malloc(len + 1) : NULL;
    if (!s)
        return NULL;
    rc = dev ? act_cl_next.clGetProgramBuildInfo(p, dev, param, len, s, NULL)
             : act_cl_next.clGetProgramInfo(p, param, len, s, NULL);
    if (rc != CL_SUCCESS) {
        free(s);
        return NULL;
    }
    s[len] = 0;
    if (len > ACT_CL_LOG_MAX)
        s[ACT_CL_LOG_MAX] = 0;
    return s;
}

static void act_cl_str_arg(const char *key, char *s)
{
    if (s)
        act_rec_arg_emit(key, ACT_RECARG_STR, 0, s);
    free(s);
}

/* The build log of the first device of `p` whose build failed. */
static void act_cl_build_log_arg(cl_program p, cl_uint ndev, const cl_device_id *devs)
{
    cl_device_id all[16];
    size_t len = 0;
    if (!devs || !ndev) {
        if (act_cl_next.clGetProgramInfo(p, CL_PROGRAM_DEVICES, sizeof all, all, &len) !=
            CL_SUCCESS)
            return;
        devs = all;
        ndev = (cl_uint)(len / sizeof all[0]);
    }
    for (cl_uint i = 0; i < ndev; i++) {
        cl_build_status st = CL_BUILD_NONE;
        if (act_cl_next.clGetProgramBuildInfo(p, devs[i], CL_PROGRAM_BUILD_STATUS, sizeof st, &st,
                                              NULL) == CL_SUCCESS &&
            st == CL_BUILD_ERROR) {
            act_cl_str_arg("build log", act_cl_program_string(p, devs[i], CL_PROGRAM_BUILD_LOG));
            return;
        }
    }
}

/* The args of a build slice just written. */
static void act_cl_build_args(cl_program p, cl_uint ndev, const cl_device_id *devs,
                              const char *opts, int async, cl_int rc)
{
    act_rec_arg_emit("options", ACT_RECARG_STR, 0, opts ? opts : "");
    if (async || !p)
        return;
    if (rc == CL_SUCCESS)
        act_cl_str_arg("kernels", act_cl_program_string(p, NULL, CL_PROGRAM_KERNEL_NAMES));
    else
        act_cl_build_log_arg(p, ndev, devs);
}

cl_int CL_API_CALL act_cl_w_clBuildProgram(cl_program p, cl_uint ndev, const cl_device_id *devs,
                                           const char *opts,
                                           void(CL_CALLBACK *pfn)(cl_program, void *), void *user)
{
    if (!act_cl_gate(&act_cl_armed_clBuildProgram, ACT_CL_HOST))
        return act_cl_next.clBuildProgram(p, ndev, devs, opts, pfn, user);
    uint64_t t0 = act_clock_now();
    cl_int rc = act_cl_next.clBuildProgram(p, ndev, devs, opts, pfn, user);
    if (act_cl_host_slice("clBuildProgram", t0, rc))
        act_cl_build_args(p, ndev, devs, opts, pfn != NULL, rc);
    return rc;
}

cl_int CL_API_CALL act_cl_w_clCompileProgram(cl_program p, cl_uint ndev, const cl_device_id *devs,
                                             const char *opts, cl_uint nhdr, const cl_program *hdrs,
                                             const char **hnames,
                                             void(CL_CALLBACK *pfn)(cl_program, void *), void *user)
{
    if (!act_cl_gate(&act_cl_armed_clCompileProgram, ACT_CL_HOST))
        return act_cl_next.clCompileProgram(p, ndev, devs, opts, nhdr, hdrs, hnames, pfn, user);
    uint64_t t0 = act_clock_now();
    cl_int rc = act_cl_next.clCompileProgram(p, ndev, devs, opts, nhdr, hdrs, hnames, pfn, user);
    if (act_cl_host_slice("clCompileProgram", t0, rc)) {
        act_rec_arg_emit("options", ACT_RECARG_STR, 0, opts ? opts : "");
        if (rc != CL_SUCCESS && !pfn)
            act_cl_build_log_arg(p, ndev, devs);
    }
    return rc;
}

cl_program CL_API_CALL act_cl_w_clLinkProgram(cl_context ctx, cl_uint ndev,
                                              const cl_device_id *devs, const char *opts,
                                              cl_uint nprog, const cl_program *progs,
                                              void(CL_CALLBACK *pfn)(cl_program, void *),
                                              void *user, cl_int *err)
{
    if (!act_cl_gate(&act_cl_armed_clLinkProgram, ACT_CL_SETUP))
        return act_cl_next.clLinkProgram(ctx, ndev, devs, opts, nprog, progs, pfn, user, err);
    uint64_t t0 = act_clock_now();
    cl_int rc = CL_SUCCESS;
    cl_program p = act_cl_next.clLinkProgram(ctx, ndev, devs, opts, nprog, progs, pfn, user, &rc);
    if (err)
        *err = rc;
    if (p)
        act_cl_obj_created(ACT_CL_OBJ_PROGRAM, p, ctx, NULL, 0);
    if (act_cl_host_slice("clLinkProgram", t0, rc))
        act_cl_build_args(p, ndev, devs, opts, pfn != NULL, rc);
    return p;
}

/* ---- kernel arguments ------------------------------------------------------- */

cl_int CL_API_CALL act_cl_w_clSetKernelArg(cl_kernel k, cl_uint idx, size_t size, const void *val)
{
    if (!act_cl_gate(&act_cl_armed_clSetKernelArg, ACT_CL_SETUP))
        return act_cl_next.clSetKernelArg(k, idx, size, val);
    uint64_t t0 = act_clock_now();
    cl_int rc = act_cl_next.clSetKernelArg(k, idx, size, val);
    if (rc == CL_SUCCESS)
        act_cl_obj_kernel_arg(k, idx, size);
    act_cl_host_slice("clSetKernelArg", t0, rc);
    return rc;
}

cl_int CL_API_CALL act_cl_w_clSetKernelArgSVMPointer(cl_kernel k, cl_uint idx, const void *ptr)
{
    if (!act_cl_gate(&act_cl_armed_clSetKernelArgSVMPointer, ACT_CL_SETUP))
        return act_cl_next.clSetKernelArgSVMPointer(k, idx, ptr);
    uint64_t t0 = act_clock_now();
    cl_int rc = act_cl_next.clSetKernelArgSVMPointer(k, idx, ptr);
    if (rc == CL_SUCCESS)
        act_cl_obj_kernel_arg(k, idx, sizeof ptr);
    act_cl_host_slice("clSetKernelArgSVMPointer", t0, rc);
    return rc;
}
