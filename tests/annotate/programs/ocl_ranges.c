/*
 * ocl_ranges.c -- an OpenCL program (run on PoCL) whose kernels are
 * launched inside nested acceltrace ranges.
 *   nested: 3 x { outer: k_outer; inner: k_inner } and one k_free outside
 *           any range; device time must be attributed to the innermost range.
 *   window: (with --capture-range=api) k_before is launched before
 *           act_start(), k_late inside the window, act_stop() right after its
 *           launch (it completes after the window closed), k_after after.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <acceltrace.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096
#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cl_int e_ = (x);                                                                           \
        if (e_ != CL_SUCCESS) {                                                                    \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, (int)e_);                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static const char *src =
    "__kernel void k_outer(__global float *a) { a[get_global_id(0)] += 1.0f; }\n"
    "__kernel void k_inner(__global float *a) { a[get_global_id(0)] *= 2.0f; }\n"
    "__kernel void k_free(__global float *a) { a[get_global_id(0)] -= 1.0f; }\n"
    "__kernel void k_before(__global float *a) { a[get_global_id(0)] += 3.0f; }\n"
    "__kernel void k_after(__global float *a) { a[get_global_id(0)] += 4.0f; }\n"
    "__kernel void k_late(__global float *a) {\n"
    "  float x = a[get_global_id(0)];\n"
    "  for (int j = 0; j < 20000; j++) x = x * 0.9999f + 1.0f;\n"
    "  a[get_global_id(0)] = x; }\n";

static cl_command_queue q;
static cl_program prog;
static cl_mem buf;

static void launch(const char *name, size_t n)
{
    cl_int err;
    cl_kernel k = clCreateKernel(prog, name, &err);
    CHECK(err);
    CHECK(clSetKernelArg(k, 0, sizeof(buf), &buf));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
    CHECK(clReleaseKernel(k));
}

int main(int argc, char **argv)
{
    int window = argc > 1 && strcmp(argv[1], "window") == 0;
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err;
    CHECK(clGetPlatformIDs(1, &plat, NULL));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CHECK(err);
    prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
    CHECK(err);
    float zero = 0;
    CHECK(clEnqueueFillBuffer(q, buf, &zero, sizeof(zero), 0, N * sizeof(float), 0, NULL, NULL));
    CHECK(clFinish(q));

    if (!window) {
        for (int i = 0; i < 3; i++) {
            act_range_push("outer");
            launch("k_outer", N);
            act_range_push("inner");
            launch("k_inner", N);
            act_range_pop();
            act_range_pop();
        }
        launch("k_free", N);
    } else {
        launch("k_before", N);
        CHECK(clFinish(q));
        act_start();
        act_range_push("win");
        launch("k_late", N);
        act_stop();
        act_range_pop();
        CHECK(clFinish(q));
        launch("k_after", N);
    }
    CHECK(clFinish(q));
    clReleaseMemObject(buf);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
