/*
 * ocl_helper.c -- a small OpenCL program as a shared library, called from
 * the Python tests through ctypes: it enqueues real kernels and copies on
 * PoCL so that acceltrace's in-process OpenCL interception (the layer named
 * by OPENCL_LAYERS) has device work to record while torch.profiler runs.
 * Built by the tests with the system C compiler (python/tests/oclhelper.py).
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>

static cl_context ctx;
static cl_command_queue queue;
static cl_kernel k_saxpy, k_scale;
static cl_mem buf_x, buf_y;
static size_t n_elems;
static char last_error[256];

static const char *src = "__kernel void saxpy(float a, __global const float *x, __global float *y)"
                         "{ size_t i = get_global_id(0); y[i] = a * x[i] + y[i]; }\n"
                         "__kernel void scale(float a, __global float *y)"
                         "{ size_t i = get_global_id(0); y[i] = a * y[i]; }\n";

const char *ocl_error(void)
{
    return last_error;
}

static int fail(const char *what, cl_int err)
{
    snprintf(last_error, sizeof(last_error), "%s failed: %d", what, (int)err);
    return (int)(err ? err : -1);
}

/* Set up a queue (with profiling) and two buffers of n floats. */
int ocl_init(size_t n)
{
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err = clGetPlatformIDs(1, &plat, NULL);
    if (err)
        return fail("clGetPlatformIDs", err);
    if ((err = clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL)))
        return fail("clGetDeviceIDs", err);
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (err)
        return fail("clCreateContext", err);
    /* No profiling, as most programs make their queue, at start-up before
     * any profiler runs: the layer makes it profiling-capable (issue 13.1). */
    queue = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    if (err)
        return fail("clCreateCommandQueueWithProperties", err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (err)
        return fail("clCreateProgramWithSource", err);
    if ((err = clBuildProgram(prog, 1, &dev, "", NULL, NULL)))
        return fail("clBuildProgram", err);
    k_saxpy = clCreateKernel(prog, "saxpy", &err);
    if (err)
        return fail("clCreateKernel(saxpy)", err);
    k_scale = clCreateKernel(prog, "scale", &err);
    if (err)
        return fail("clCreateKernel(scale)", err);
    clReleaseProgram(prog);
    n_elems = n;
    buf_x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * sizeof(float), NULL, &err);
    if (err)
        return fail("clCreateBuffer", err);
    buf_y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * sizeof(float), NULL, &err);
    if (err)
        return fail("clCreateBuffer", err);
    return 0;
}

/* Upload x and y, y = a*x + y, read y back: a copy, a kernel, a copy. */
int ocl_saxpy(float a, const float *x, float *y)
{
    size_t bytes = n_elems * sizeof(float), g = n_elems;
    cl_int err = clEnqueueWriteBuffer(queue, buf_x, CL_FALSE, 0, bytes, x, 0, NULL, NULL);
    err |= clEnqueueWriteBuffer(queue, buf_y, CL_FALSE, 0, bytes, y, 0, NULL, NULL);
    err |= clSetKernelArg(k_saxpy, 0, sizeof(a), &a);
    err |= clSetKernelArg(k_saxpy, 1, sizeof(buf_x), &buf_x);
    err |= clSetKernelArg(k_saxpy, 2, sizeof(buf_y), &buf_y);
    if (err)
        return fail("saxpy set-up", err);
    if ((err = clEnqueueNDRangeKernel(queue, k_saxpy, 1, NULL, &g, NULL, 0, NULL, NULL)))
        return fail("clEnqueueNDRangeKernel(saxpy)", err);
    if ((err = clEnqueueReadBuffer(queue, buf_y, CL_TRUE, 0, bytes, y, 0, NULL, NULL)))
        return fail("clEnqueueReadBuffer", err);
    return 0;
}

/* y = a*y on the device (no transfer), then wait. */
int ocl_scale(float a)
{
    size_t g = n_elems;
    cl_int err = clSetKernelArg(k_scale, 0, sizeof(a), &a);
    err |= clSetKernelArg(k_scale, 1, sizeof(buf_y), &buf_y);
    if (err)
        return fail("scale set-up", err);
    if ((err = clEnqueueNDRangeKernel(queue, k_scale, 1, NULL, &g, NULL, 0, NULL, NULL)))
        return fail("clEnqueueNDRangeKernel(scale)", err);
    return clFinish(queue) ? fail("clFinish", -1) : 0;
}

void ocl_shutdown(void)
{
    if (queue)
        clFinish(queue);
    if (buf_x)
        clReleaseMemObject(buf_x);
    if (buf_y)
        clReleaseMemObject(buf_y);
    if (k_saxpy)
        clReleaseKernel(k_saxpy);
    if (k_scale)
        clReleaseKernel(k_scale);
    if (queue)
        clReleaseCommandQueue(queue);
    if (ctx)
        clReleaseContext(ctx);
    queue = NULL;
    ctx = NULL;
}
