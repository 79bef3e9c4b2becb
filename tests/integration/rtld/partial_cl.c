/*
 * partial_cl.c -- libit_partial_cl.so, a stand-in "libOpenCL" that
 * defines only clGetPlatformIDs and clFinish (an OpenCL wrapper library
 * or a stub some programs ship). The preload shim finds clFinish there
 * but none of the functions it needs to trace (clRetainEvent, ...): it
 * must pass every call through untouched, and the program must behave
 * exactly as untraced.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>

__attribute__((visibility("default"))) cl_int clGetPlatformIDs(cl_uint n, cl_platform_id *p,
                                                               cl_uint *count)
{
    (void)n;
    (void)p;
    if (count)
        *count = 0;
    return CL_SUCCESS;
}

__attribute__((visibility("default"))) cl_int clFinish(cl_command_queue q)
{
    printf("partial_cl: clFinish(%p)\n", (void *)q);
    return q ? CL_SUCCESS : CL_INVALID_COMMAND_QUEUE;
}
