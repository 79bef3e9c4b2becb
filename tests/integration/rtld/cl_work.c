/*
 * cl_work.c -- libit_cl_work.so, a library linked against libOpenCL the
 * way a Python extension module is (pyopencl's _cl, OpenCV's cv2): the
 * program that uses it dlopen()s it with RTLD_LOCAL (rtld_local.c), so
 * libOpenCL never enters the global symbol scope and dlsym(RTLD_NEXT)
 * from an LD_PRELOAD shim cannot find it. Runs `n` "inc" kernels and
 * returns the sum of the result (or -1 on any OpenCL error).
 */
#include "../programs/cl_common.h"

__attribute__((visibility("default"))) long it_cl_work(int n)
{
    tcl t;
    tcl_setup(&t, 0);
    enum { ITEMS = 64 };
    int host[ITEMS] = {0};
    cl_int rc;
    cl_mem buf =
        clCreateBuffer(t.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &rc);
    CHECK(rc);
    cl_kernel k = tcl_kernel(&t, "inc", buf);
    size_t gws = ITEMS;
    for (int i = 0; i < n; i++)
        CHECK(clEnqueueNDRangeKernel(t.q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(t.q, buf, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    CHECK(clFinish(t.q));
    long sum = 0;
    for (int i = 0; i < ITEMS; i++)
        sum += host[i];
    clReleaseKernel(k);
    clReleaseMemObject(buf);
    clReleaseCommandQueue(t.q);
    clReleaseProgram(t.prog);
    clReleaseContext(t.ctx);
    return sum;
}
