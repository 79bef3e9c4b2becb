/*
 * vecops.c -- the bundled OpenCL example that README's main command traces
 * and the integration tests use. On the first device it finds: writes in
 * both directions, a fill, saxpy/scale/reduce kernels on an in-order queue,
 * independent "busy" kernels on an out-of-order queue (they overlap on the
 * device), and two host threads each with its own queue. Prints checksums
 * that do not depend on timing (stdout is compared with and without
 * tracing) and exits 0; any OpenCL error exits 1 with a message on stderr.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N             (1u << 16)
#define CHUNK         256u
#define BUSY_N        (1u << 13)
#define BUSY_ITERS    3000u
#define THREAD_ROUNDS 8

static const char *src =
    "__kernel void saxpy(float a, __global const float *x, __global float *y)\n"
    "{ size_t i = get_global_id(0); y[i] = a * x[i] + y[i]; }\n"
    "__kernel void scale(float s, __global float *y)\n"
    "{ size_t i = get_global_id(0); y[i] = y[i] * s; }\n"
    "__kernel void reduce(__global const float *y, __global float *out, uint chunk)\n"
    "{ size_t g = get_global_id(0); float acc = 0.0f;\n"
    "  for (uint i = 0; i < chunk; i++) acc += y[g * chunk + i];\n"
    "  out[g] = acc; }\n"
    "__kernel void busy(__global float *y, uint iters)\n"
    "{ size_t i = get_global_id(0); float v = y[i];\n"
    "  for (uint k = 0; k < iters; k++) v = v * 0.999f + 0.001f;\n"
    "  y[i] = v; }\n";

static cl_context ctx;
static cl_device_id dev;
static cl_program prog;

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cl_int rc_ = (call);                                                                       \
        if (rc_ != CL_SUCCESS) {                                                                   \
            fprintf(stderr, "vecops: %s failed: %d (line %d)\n", #call, rc_, __LINE__);            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static cl_mem buffer(size_t bytes)
{
    cl_int rc;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
    CHECK(rc);
    return m;
}

static cl_kernel kernel(const char *name)
{
    cl_int rc;
    cl_kernel k = clCreateKernel(prog, name, &rc);
    CHECK(rc);
    return k;
}

static cl_command_queue queue(cl_command_queue_properties props)
{
    cl_int rc;
    cl_queue_properties p[] = {CL_QUEUE_PROPERTIES, props, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, props ? p : NULL, &rc);
    CHECK(rc);
    return q;
}

/* saxpy then scale on y = 2, x = i % 97; returns the reduced sum. */
static double saxpy_scale_reduce(cl_command_queue q, float a, float s)
{
    const size_t bytes = N * sizeof(float);
    float *x = malloc(bytes);
    float part[N / CHUNK];
    if (!x) {
        fprintf(stderr, "vecops: out of memory\n");
        exit(1);
    }
    for (unsigned i = 0; i < N; i++)
        x[i] = (float)(i % 97);
    cl_mem bx = buffer(bytes), by = buffer(bytes), bo = buffer(sizeof part);
    float two = 2.0f;
    CHECK(clEnqueueWriteBuffer(q, bx, CL_FALSE, 0, bytes, x, 0, NULL, NULL));
    CHECK(clEnqueueFillBuffer(q, by, &two, sizeof two, 0, bytes, 0, NULL, NULL));
    cl_kernel ks = kernel("saxpy"), kc = kernel("scale"), kr = kernel("reduce");
    size_t gws = N, rgws = N / CHUNK;
    cl_uint chunk = CHUNK;
    CHECK(clSetKernelArg(ks, 0, sizeof a, &a));
    CHECK(clSetKernelArg(ks, 1, sizeof bx, &bx));
    CHECK(clSetKernelArg(ks, 2, sizeof by, &by));
    CHECK(clEnqueueNDRangeKernel(q, ks, 1, NULL, &gws, NULL, 0, NULL, NULL));
    CHECK(clSetKernelArg(kc, 0, sizeof s, &s));
    CHECK(clSetKernelArg(kc, 1, sizeof by, &by));
    CHECK(clEnqueueNDRangeKernel(q, kc, 1, NULL, &gws, NULL, 0, NULL, NULL));
    CHECK(clSetKernelArg(kr, 0, sizeof by, &by));
    CHECK(clSetKernelArg(kr, 1, sizeof bo, &bo));
    CHECK(clSetKernelArg(kr, 2, sizeof chunk, &chunk));
    CHECK(clEnqueueNDRangeKernel(q, kr, 1, NULL, &rgws, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, bo, CL_TRUE, 0, sizeof part, part, 0, NULL, NULL));
    CHECK(clFinish(q));
    double sum = 0;
    for (unsigned i = 0; i < N / CHUNK; i++)
        sum += part[i];
    free(x);
    clReleaseKernel(ks);
    clReleaseKernel(kc);
    clReleaseKernel(kr);
    clReleaseMemObject(bx);
    clReleaseMemObject(by);
    clReleaseMemObject(bo);
    return sum;
}

/* Three independent busy kernels on an out-of-order queue. */
static double ooo_busy(void)
{
    cl_command_queue q = queue(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    enum { K = 3 };
    cl_mem b[K];
    cl_kernel k[K];
    cl_event done[K];
    static float init[BUSY_N], out[BUSY_N];
    for (unsigned i = 0; i < BUSY_N; i++)
        init[i] = (float)(i % 13);
    size_t gws = BUSY_N;
    cl_uint iters = BUSY_ITERS;
    for (int j = 0; j < K; j++) {
        b[j] = buffer(sizeof init);
        CHECK(clEnqueueWriteBuffer(q, b[j], CL_TRUE, 0, sizeof init, init, 0, NULL, NULL));
    }
    for (int j = 0; j < K; j++) {
        k[j] = kernel("busy");
        CHECK(clSetKernelArg(k[j], 0, sizeof b[j], &b[j]));
        CHECK(clSetKernelArg(k[j], 1, sizeof iters, &iters));
        CHECK(clEnqueueNDRangeKernel(q, k[j], 1, NULL, &gws, NULL, 0, NULL, &done[j]));
    }
    CHECK(clWaitForEvents(K, done));
    double sum = 0;
    for (int j = 0; j < K; j++) {
        CHECK(clEnqueueReadBuffer(q, b[j], CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
        for (unsigned i = 0; i < BUSY_N; i++)
            sum += out[i];
        clReleaseEvent(done[j]);
        clReleaseKernel(k[j]);
        clReleaseMemObject(b[j]);
    }
    clReleaseCommandQueue(q);
    return sum;
}

typedef struct {
    int id;
    double sum;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *w = p;
    cl_command_queue q = queue(0);
    w->sum = 0;
    for (int r = 0; r < THREAD_ROUNDS; r++)
        w->sum += saxpy_scale_reduce(q, (float)(w->id + 1), 0.5f + (float)r);
    clReleaseCommandQueue(q);
    return NULL;
}

int main(void)
{
    cl_platform_id plat;
    cl_int rc;
    CHECK(clGetPlatformIDs(1, &plat, NULL));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    CHECK(rc);
    prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &rc);
    CHECK(rc);
    CHECK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));

    cl_command_queue q = queue(0);
    printf("vecops: saxpy+scale+reduce checksum %.3f\n", saxpy_scale_reduce(q, 3.0f, 0.25f));
    printf("vecops: out-of-order busy checksum %.3f\n", ooo_busy());

    pthread_t t[2];
    worker_arg w[2] = {{0, 0}, {1, 0}};
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, &w[i]) != 0) {
            fprintf(stderr, "vecops: pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        printf("vecops: thread %d checksum %.3f\n", i, w[i].sum);
    }
    clReleaseCommandQueue(q);
    clReleaseProgram(prog);
    clReleaseContext(ctx);
    printf("vecops: ok\n");
    return 0;
}
