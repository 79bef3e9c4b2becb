/*
 * cl_common.h -- set-up shared by the purpose-written integration test
 * programs: first device, a context, a program with a few tiny kernels,
 * and CHECK() that exits 1 with a message on any OpenCL error. Header-only
 * so each program stays one file.
 */
#ifndef ACT_TEST_CL_COMMON_H
#define ACT_TEST_CL_COMMON_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cl_int rc_ = (call);                                                                       \
        if (rc_ != CL_SUCCESS) {                                                                   \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, rc_);             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static const char *tcl_src = "__kernel void inc(__global int *a) { a[get_global_id(0)] += 1; }\n"
                             "__kernel void twice(__global int *a) { a[get_global_id(0)] *= 2; }\n";

typedef struct tcl {
    cl_platform_id plat;
    cl_device_id dev;
    cl_context ctx;
    cl_program prog;
    cl_command_queue q;
} tcl;

static inline void tcl_setup(tcl *t, cl_command_queue_properties props)
{
    cl_int rc;
    CHECK(clGetPlatformIDs(1, &t->plat, NULL));
    CHECK(clGetDeviceIDs(t->plat, CL_DEVICE_TYPE_ALL, 1, &t->dev, NULL));
    t->ctx = clCreateContext(NULL, 1, &t->dev, NULL, NULL, &rc);
    CHECK(rc);
    t->prog = clCreateProgramWithSource(t->ctx, 1, &tcl_src, NULL, &rc);
    CHECK(rc);
    CHECK(clBuildProgram(t->prog, 1, &t->dev, "", NULL, NULL));
    cl_queue_properties p[] = {CL_QUEUE_PROPERTIES, props, 0};
    t->q = clCreateCommandQueueWithProperties(t->ctx, t->dev, props ? p : NULL, &rc);
    CHECK(rc);
}

static inline cl_kernel tcl_kernel(tcl *t, const char *name, cl_mem arg)
{
    cl_int rc;
    cl_kernel k = clCreateKernel(t->prog, name, &rc);
    CHECK(rc);
    CHECK(clSetKernelArg(k, 0, sizeof arg, &arg));
    return k;
}

static inline cl_mem tcl_buffer(tcl *t, size_t bytes)
{
    cl_int rc;
    cl_mem m = clCreateBuffer(t->ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
    CHECK(rc);
    return m;
}

static inline void tcl_teardown(tcl *t)
{
    clReleaseCommandQueue(t->q);
    clReleaseProgram(t->prog);
    clReleaseContext(t->ctx);
}

#endif
