/*
 * dlopen_cl.c -- a program that does not link libOpenCL: it dlopen()s
 * libOpenCL.so.1 and takes every entry point with dlsym(handle, ...), so
 * an LD_PRELOAD shim never sees its calls (the layer does). Enqueues 5
 * "inc" kernels and reads the result back.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define KERNELS 5
#define ITEMS   64

static void *lib;

static void *sym(const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "dlopen_cl: missing %s\n", name);
        exit(1);
    }
    return p;
}

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cl_int rc_ = (x);                                                                          \
        if (rc_ != CL_SUCCESS) {                                                                   \
            fprintf(stderr, "dlopen_cl: %s failed: %d\n", #x, rc_);                                \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

int main(void)
{
    lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen_cl: %s\n", dlerror());
        return 1;
    }
    cl_int (*getPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *) = sym("clGetPlatformIDs");
    cl_int (*getDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *) =
        sym("clGetDeviceIDs");
    cl_context (*createContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                void (*)(const char *, const void *, size_t, void *), void *,
                                cl_int *) = sym("clCreateContext");
    cl_program (*createProgram)(cl_context, cl_uint, const char **, const size_t *, cl_int *) =
        sym("clCreateProgramWithSource");
    cl_int (*buildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
                           void (*)(cl_program, void *), void *) = sym("clBuildProgram");
    cl_command_queue (*createQueue)(cl_context, cl_device_id, const cl_queue_properties *,
                                    cl_int *) = sym("clCreateCommandQueueWithProperties");
    cl_mem (*createBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *) =
        sym("clCreateBuffer");
    cl_kernel (*createKernel)(cl_program, const char *, cl_int *) = sym("clCreateKernel");
    cl_int (*setArg)(cl_kernel, cl_uint, size_t, const void *) = sym("clSetKernelArg");
    cl_int (*ndrange)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *,
                      const size_t *, cl_uint, const cl_event *, cl_event *) =
        sym("clEnqueueNDRangeKernel");
    cl_int (*writeBuf)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, cl_uint,
                       const cl_event *, cl_event *) = sym("clEnqueueWriteBuffer");
    cl_int (*readBuf)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint,
                      const cl_event *, cl_event *) = sym("clEnqueueReadBuffer");
    cl_int (*finish)(cl_command_queue) = sym("clFinish");
    cl_int (*relKernel)(cl_kernel) = sym("clReleaseKernel");
    cl_int (*relMem)(cl_mem) = sym("clReleaseMemObject");
    cl_int (*relQueue)(cl_command_queue) = sym("clReleaseCommandQueue");
    cl_int (*relProgram)(cl_program) = sym("clReleaseProgram");
    cl_int (*relContext)(cl_context) = sym("clReleaseContext");

    const char *src = "__kernel void inc(__global int *a) { a[get_global_id(0)] += 1; }\n";
    cl_platform_id plat;
    cl_device_id dev;
    cl_int rc;
    CHECK(getPlatformIDs(1, &plat, NULL));
    CHECK(getDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_context ctx = createContext(NULL, 1, &dev, NULL, NULL, &rc);
    CHECK(rc);
    cl_program prog = createProgram(ctx, 1, &src, NULL, &rc);
    CHECK(rc);
    CHECK(buildProgram(prog, 1, &dev, "", NULL, NULL));
    cl_command_queue q = createQueue(ctx, dev, NULL, &rc);
    CHECK(rc);
    int host[ITEMS] = {0};
    cl_mem a = createBuffer(ctx, CL_MEM_READ_WRITE, sizeof host, NULL, &rc);
    CHECK(rc);
    CHECK(writeBuf(q, a, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    cl_kernel k = createKernel(prog, "inc", &rc);
    CHECK(rc);
    CHECK(setArg(k, 0, sizeof a, &a));
    size_t gws = ITEMS;
    for (int i = 0; i < KERNELS; i++)
        CHECK(ndrange(q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
    CHECK(readBuf(q, a, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    CHECK(finish(q));
    printf("dlopen_cl: %d kernels, a[0] = %d\n", KERNELS, host[0]);
    relKernel(k);
    relMem(a);
    relQueue(q);
    relProgram(prog);
    relContext(ctx);
    return host[0] == KERNELS ? 0 : 1;
}
