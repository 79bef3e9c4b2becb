/*
 * coverage.c -- one of each command kind the OpenCL source wraps: rect
 * reads/writes/copies, map/unmap, markers and barriers (with and without
 * wait lists, and the 1.1 clEnqueueMarker), a task, an image write/read/
 * fill/copy, and clFlush/clWaitForEvents. The tests check that every one
 * has its host slice and, where it is a command, its device op.
 */
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <string.h>

#include "cl_common.h"

int main(void)
{
    tcl t;
    tcl_setup(&t, 0);
    cl_int rc;
    enum { W = 16, H = 8 };
    static int host[W * H], back[W * H];
    for (int i = 0; i < W * H; i++)
        host[i] = i;
    cl_mem a = tcl_buffer(&t, sizeof host), b = tcl_buffer(&t, sizeof host);
    size_t org[3] = {0, 0, 0}, region[3] = {W * sizeof(int), H, 1};
    CHECK(clEnqueueWriteBufferRect(t.q, a, CL_FALSE, org, org, region, 0, 0, 0, 0, host, 0, NULL,
                                   NULL));
    CHECK(clEnqueueCopyBufferRect(t.q, a, b, org, org, region, 0, 0, 0, 0, 0, NULL, NULL));
    CHECK(clEnqueueReadBufferRect(t.q, b, CL_TRUE, org, org, region, 0, 0, 0, 0, back, 0, NULL,
                                  NULL));
    int rect_ok = !memcmp(host, back, sizeof host);
    int *m = clEnqueueMapBuffer(t.q, b, CL_TRUE, CL_MAP_READ, 0, sizeof host, 0, NULL, NULL, &rc);
    CHECK(rc);
    int mapped_ok = m[W * H - 1] == W * H - 1;
    CHECK(clEnqueueUnmapMemObject(t.q, b, m, 0, NULL, NULL));
    cl_event mk;
    CHECK(clEnqueueMarkerWithWaitList(t.q, 0, NULL, &mk));
    CHECK(clEnqueueBarrierWithWaitList(t.q, 1, &mk, NULL));
    CHECK(clReleaseEvent(mk));
    CHECK(clEnqueueMarker(t.q, &mk));
    cl_kernel k = tcl_kernel(&t, "inc", a);
    CHECK(clEnqueueTask(t.q, k, 0, NULL, NULL));
    CHECK(clFlush(t.q));
    CHECK(clWaitForEvents(1, &mk));
    CHECK(clReleaseEvent(mk));

    cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_image_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = W;
    desc.image_height = H;
    cl_mem img = clCreateImage(t.ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &rc);
    CHECK(rc);
    cl_mem img2 = clCreateImage(t.ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &rc);
    CHECK(rc);
    size_t iregion[3] = {W, H, 1};
    cl_uint4 color = {{1, 2, 3, 4}};
    CHECK(clEnqueueWriteImage(t.q, img, CL_FALSE, org, iregion, 0, 0, host, 0, NULL, NULL));
    CHECK(clEnqueueFillImage(t.q, img, &color, org, iregion, 0, NULL, NULL));
    CHECK(clEnqueueCopyImage(t.q, img, img2, org, org, iregion, 0, NULL, NULL));
    CHECK(clEnqueueReadImage(t.q, img2, CL_TRUE, org, iregion, 0, 0, back, 0, NULL, NULL));
    CHECK(clFinish(t.q));
    unsigned char *px = (unsigned char *)back;
    printf("coverage: rect %s, map %s, image pixel %u,%u,%u,%u\n", rect_ok ? "ok" : "bad",
           mapped_ok ? "ok" : "bad", px[0], px[1], px[2], px[3]);
    clReleaseMemObject(img);
    clReleaseMemObject(img2);
    clReleaseKernel(k);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    tcl_teardown(&t);
    return mapped_ok && rect_ok ? 0 : 1;
}
