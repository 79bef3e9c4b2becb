/*
 * partial_user.c -- a program linked against libit_partial_cl.so (a
 * partial OpenCL library, see partial_cl.c). Under --preload the shim
 * cannot trace it and must stay out of the way: same output, exit 3.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>

int main(void)
{
    cl_uint n = 7;
    cl_int rc = clGetPlatformIDs(0, NULL, &n);
    printf("partial_user: %d platforms (rc %d)\n", (int)n, (int)rc);
    printf("partial_user: clFinish(NULL) = %d\n", (int)clFinish(NULL));
    printf("partial_user: clFinish(q) = %d\n", (int)clFinish((cl_command_queue)0x1234));
    return 3;
}
