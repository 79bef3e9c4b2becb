/*
 * cl_depth.c -- what CLIntercept users check, one mode per argument:
 *   fail   a failed enqueue (local size that does not divide the global
 *          one), a failed build with a log, a command failed through its
 *          wait list (user event set to an error), and a leaked buffer
 *          (4096 bytes) and kernel; everything else released.
 *   clean  an image pipeline (create, write, fill, copy, to/from buffer,
 *          map/unmap, read), a sub-buffer, migration, markers and
 *          barriers with and without wait lists, a sampler, a user event,
 *          kernels from clCreateKernelsInProgram and clCloneKernel,
 *          compile + link, SVM when the device has coarse-grain SVM
 *          ("svm: none" printed otherwise), retain/release pairs; every
 *          object released.
 *   cmdbuf   cl_khr_command_buffer (PoCL reports it): a kernel recorded
 *          into a command buffer, enqueued twice (its queue implied, then
 *          given) and once before it was finalized (fails); a retain/
 *          release pair; a second command buffer leaked. Prints
 *          "command buffer: none" when the platform lacks the extension.
 * Prints one line per step so an untraced run can be compared.
 */
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <string.h>

#include "cl_common.h"

#include <CL/cl_ext.h>

static const char *bad_src = "__kernel void broken(__global int *a) { a[0] = nope; }\n";

static void notify(const char *msg, const void *info, size_t cb, void *user)
{
    (void)msg;
    (void)info;
    (void)cb;
    (*(int *)user)++;
}

static int mode_fail(void)
{
    tcl t;
    tcl_setup(&t, 0);
    cl_int rc;
    cl_mem buf = clCreateBuffer(t.ctx, CL_MEM_READ_WRITE, 4096, NULL, &rc);
    CHECK(rc);
    cl_kernel k = tcl_kernel(&t, "inc", buf);
    size_t gws = 10, lws = 3;
    rc = clEnqueueNDRangeKernel(t.q, k, 1, NULL, &gws, &lws, 0, NULL, NULL);
    printf("bad launch: %s\n", rc == CL_INVALID_WORK_GROUP_SIZE ? "CL_INVALID_WORK_GROUP_SIZE"
                               : rc != CL_SUCCESS               ? "other error"
                                                                : "accepted");
    /* A good launch, with a NULL local size and an offset. */
    size_t off = 0, g = 16;
    CHECK(clEnqueueNDRangeKernel(t.q, k, 1, &off, &g, NULL, 0, NULL, NULL));

    /* A command that fails through its wait list. */
    cl_event ue = clCreateUserEvent(t.ctx, &rc), kev;
    CHECK(rc);
    CHECK(clEnqueueNDRangeKernel(t.q, k, 1, NULL, &g, NULL, 1, &ue, &kev));
    CHECK(clSetUserEventStatus(ue, -1));
    clWaitForEvents(1, &kev);
    cl_int st = 0;
    CHECK(clGetEventInfo(kev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
    printf("dependent kernel status negative: %s\n", st < 0 ? "yes" : "no");
    CHECK(clReleaseEvent(kev));
    CHECK(clReleaseEvent(ue));

    /* The failed build happens in a context with an error callback. */
    int notes = 0;
    cl_context nctx = clCreateContext(NULL, 1, &t.dev, notify, &notes, &rc);
    CHECK(rc);
    cl_program bad = clCreateProgramWithSource(nctx, 1, &bad_src, NULL, &rc);
    CHECK(rc);
    rc = clBuildProgram(bad, 1, &t.dev, "-DACT_BAD=1", NULL, NULL);
    printf("bad build: %s\n", rc == CL_BUILD_PROGRAM_FAILURE ? "CL_BUILD_PROGRAM_FAILURE" : "?");
    CHECK(clReleaseProgram(bad));
    /* An invalid buffer size: runtimes may tell the context's callback. */
    cl_mem none = clCreateBuffer(nctx, CL_MEM_READ_WRITE, 0, NULL, &rc);
    printf("zero-size buffer: %s\n", none ? "made" : "refused");
    if (none)
        clReleaseMemObject(none);
    printf("context callback called: %s\n", notes ? "yes" : "no");
    CHECK(clReleaseContext(nctx));
    CHECK(clFinish(t.q));
    /* buf and k are leaked on purpose. */
    tcl_teardown(&t);
    return 0;
}

static void image_pipeline(tcl *t)
{
    cl_int rc;
    enum { W = 16, H = 8 };
    static unsigned char host[W * H * 4], back[W * H * 4];
    for (int i = 0; i < W * H * 4; i++)
        host[i] = (unsigned char)i;
    cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_image_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = W;
    desc.image_height = H;
    cl_mem a = clCreateImage(t->ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &rc);
    CHECK(rc);
    cl_mem b = clCreateImage(t->ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &rc);
    CHECK(rc);
    cl_mem lin = clCreateBuffer(t->ctx, CL_MEM_READ_WRITE, sizeof host, NULL, &rc);
    CHECK(rc);
    size_t org[3] = {0, 0, 0}, region[3] = {W, H, 1}, row = 0;
    cl_uint4 color = {{9, 8, 7, 6}};
    CHECK(clEnqueueWriteImage(t->q, a, CL_FALSE, org, region, 0, 0, host, 0, NULL, NULL));
    CHECK(clEnqueueCopyImage(t->q, a, b, org, org, region, 0, NULL, NULL));
    CHECK(clEnqueueCopyImageToBuffer(t->q, b, lin, org, region, 0, 0, NULL, NULL));
    CHECK(clEnqueueFillImage(t->q, b, &color, org, region, 0, NULL, NULL));
    CHECK(clEnqueueCopyBufferToImage(t->q, lin, a, 0, org, region, 0, NULL, NULL));
    unsigned char *m = clEnqueueMapImage(t->q, a, CL_TRUE, CL_MAP_READ, org, region, &row, NULL, 0,
                                         NULL, NULL, &rc);
    CHECK(rc);
    int ok = m[5] == 5;
    CHECK(clEnqueueUnmapMemObject(t->q, a, m, 0, NULL, NULL));
    CHECK(clEnqueueReadImage(t->q, b, CL_TRUE, org, region, 0, 0, back, 0, NULL, NULL));
    printf("image pipeline: %s, fill %u\n", ok ? "ok" : "bad", back[0]);
    cl_sampler_properties sp[] = {CL_SAMPLER_NORMALIZED_COORDS, CL_FALSE, 0};
    cl_sampler s = clCreateSamplerWithProperties(t->ctx, sp, &rc);
    CHECK(rc);
    CHECK(clReleaseSampler(s));
    CHECK(clReleaseMemObject(a));
    CHECK(clReleaseMemObject(b));
    CHECK(clReleaseMemObject(lin));
}

static void sync_and_buffers(tcl *t)
{
    cl_int rc;
    cl_mem buf = clCreateBuffer(t->ctx, CL_MEM_READ_WRITE, 1024, NULL, &rc);
    CHECK(rc);
    cl_buffer_region r = {256, 256};
    cl_mem sub = clCreateSubBuffer(buf, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &rc);
    CHECK(rc);
    int pat = 7;
    CHECK(clEnqueueFillBuffer(t->q, sub, &pat, sizeof pat, 0, 256, 0, NULL, NULL));
    CHECK(clEnqueueMigrateMemObjects(t->q, 1, &buf, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, NULL));
    cl_event e1, e2;
    CHECK(clEnqueueMarkerWithWaitList(t->q, 0, NULL, &e1));
    CHECK(clEnqueueBarrierWithWaitList(t->q, 1, &e1, &e2));
    CHECK(clEnqueueMarkerWithWaitList(t->q, 1, &e2, NULL));
    CHECK(clEnqueueBarrierWithWaitList(t->q, 0, NULL, NULL));
    CHECK(clRetainEvent(e1));
    CHECK(clReleaseEvent(e1));
    CHECK(clReleaseEvent(e1));
    CHECK(clReleaseEvent(e2));
    cl_kernel ks[4];
    cl_uint nk = 0;
    CHECK(clCreateKernelsInProgram(t->prog, 4, ks, &nk));
    CHECK(clSetKernelArg(ks[0], 0, sizeof buf, &buf));
    cl_kernel c = clCloneKernel(ks[0], &rc);
    CHECK(rc);
    CHECK(clEnqueueTask(t->q, c, 0, NULL, NULL));
    CHECK(clFinish(t->q));
    CHECK(clReleaseKernel(c));
    for (cl_uint i = 0; i < nk; i++)
        CHECK(clReleaseKernel(ks[i]));
    CHECK(clRetainMemObject(buf));
    CHECK(clReleaseMemObject(buf));
    CHECK(clReleaseMemObject(buf)); /* the sub-buffer still holds it */
    CHECK(clReleaseMemObject(sub));
    printf("sync and buffers: %u kernels\n", nk);
}

static void compile_link(tcl *t)
{
    cl_int rc;
    cl_program p = clCreateProgramWithSource(t->ctx, 1, &tcl_src, NULL, &rc);
    CHECK(rc);
    CHECK(clCompileProgram(p, 1, &t->dev, "-DACT_COMPILE=1", 0, NULL, NULL, NULL, NULL));
    cl_program l = clLinkProgram(t->ctx, 1, &t->dev, "", 1, &p, NULL, NULL, &rc);
    CHECK(rc);
    CHECK(clReleaseProgram(l));
    CHECK(clReleaseProgram(p));
    printf("compile and link: ok\n");
}

static void svm(tcl *t)
{
    cl_device_svm_capabilities caps = 0;
    if (clGetDeviceInfo(t->dev, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, NULL) !=
            CL_SUCCESS ||
        !(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) {
        printf("svm: none\n");
        return;
    }
    int *a = clSVMAlloc(t->ctx, CL_MEM_READ_WRITE, 4096, 0);
    int *b = clSVMAlloc(t->ctx, CL_MEM_READ_WRITE, 8192, 0);
    if (!a || !b) {
        printf("svm: none\n");
        return;
    }
    int pat = 3;
    CHECK(clEnqueueSVMMemFill(t->q, a, &pat, sizeof pat, 4096, 0, NULL, NULL));
    CHECK(clEnqueueSVMMemcpy(t->q, CL_TRUE, b, a, 4096, 0, NULL, NULL));
    CHECK(clEnqueueSVMMap(t->q, CL_TRUE, CL_MAP_READ, b, 4096, 0, NULL, NULL));
    int ok = b[1023] == 3;
    CHECK(clEnqueueSVMUnmap(t->q, b, 0, NULL, NULL));
    cl_int rc;
    cl_kernel k = clCreateKernel(t->prog, "inc", &rc);
    CHECK(rc);
    CHECK(clSetKernelArgSVMPointer(k, 0, a));
    size_t g = 1024;
    CHECK(clEnqueueNDRangeKernel(t->q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    CHECK(clReleaseKernel(k));
    void *ptrs[1] = {b};
    CHECK(clEnqueueSVMFree(t->q, 1, ptrs, NULL, NULL, 0, NULL, NULL));
    CHECK(clFinish(t->q));
    clSVMFree(t->ctx, a);
    printf("svm: %s\n", ok ? "ok" : "bad");
}

static int mode_clean(void)
{
    tcl t;
    tcl_setup(&t, 0);
    int notes = 0;
    cl_int rc;
    cl_context c2 = clCreateContext(NULL, 1, &t.dev, notify, &notes, &rc);
    CHECK(rc);
    CHECK(clRetainContext(c2));
    CHECK(clReleaseContext(c2));
    CHECK(clReleaseContext(c2));
    image_pipeline(&t);
    sync_and_buffers(&t);
    compile_link(&t);
    svm(&t);
    tcl_teardown(&t);
    return 0;
}

static cl_command_buffer_khr volatile leaked_cb;

#define CB_FN(name)                                                                                \
    name##_fn name = (name##_fn)clGetExtensionFunctionAddressForPlatform(t.plat, #name)

static int mode_cmdbuf(void)
{
    tcl t;
    tcl_setup(&t, 0);
    char ext[4096] = "";
    CHECK(clGetDeviceInfo(t.dev, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL));
    CB_FN(clCreateCommandBufferKHR);
    CB_FN(clCommandNDRangeKernelKHR);
    CB_FN(clFinalizeCommandBufferKHR);
    CB_FN(clEnqueueCommandBufferKHR);
    CB_FN(clRetainCommandBufferKHR);
    CB_FN(clReleaseCommandBufferKHR);
    if (!strstr(ext, "cl_khr_command_buffer") || !clCreateCommandBufferKHR ||
        !clCommandNDRangeKernelKHR || !clFinalizeCommandBufferKHR || !clEnqueueCommandBufferKHR ||
        !clRetainCommandBufferKHR || !clReleaseCommandBufferKHR) {
        printf("command buffer: none\n");
        tcl_teardown(&t);
        return 0;
    }
    cl_int rc;
    cl_mem buf = tcl_buffer(&t, 64 * sizeof(int));
    int zero = 0, a[64];
    CHECK(clEnqueueFillBuffer(t.q, buf, &zero, sizeof zero, 0, sizeof a, 0, NULL, NULL));
    cl_kernel k = tcl_kernel(&t, "inc", buf);
    cl_command_buffer_khr cb = clCreateCommandBufferKHR(1, &t.q, NULL, &rc);
    CHECK(rc);
    size_t g = 64;
    CHECK(clCommandNDRangeKernelKHR(cb, NULL, NULL, k, 1, NULL, &g, NULL, 0, NULL, NULL, NULL));
    rc = clEnqueueCommandBufferKHR(0, NULL, cb, 0, NULL, NULL);
    printf("before finalize: %s\n", rc == CL_SUCCESS ? "accepted" : "refused");
    CHECK(clFinalizeCommandBufferKHR(cb));
    cl_event ev;
    CHECK(clEnqueueCommandBufferKHR(0, NULL, cb, 0, NULL, &ev));
    CHECK(clWaitForEvents(1, &ev));
    CHECK(clReleaseEvent(ev));
    CHECK(clEnqueueCommandBufferKHR(1, &t.q, cb, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(t.q, buf, CL_TRUE, 0, sizeof a, a, 0, NULL, NULL));
    printf("command buffer: ran twice, a[0] = %d, a[63] = %d\n", a[0], a[63]);
    CHECK(clRetainCommandBufferKHR(cb));
    CHECK(clReleaseCommandBufferKHR(cb));
    CHECK(clReleaseCommandBufferKHR(cb));
    /* Never released: the leak report counts it (kept reachable, so that
     * LeakSanitizer does not fail the ASan build's untraced run). */
    leaked_cb = clCreateCommandBufferKHR(1, &t.q, NULL, &rc);
    CHECK(rc);
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseMemObject(buf));
    tcl_teardown(&t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "fail"))
        return mode_fail();
    if (argc > 1 && !strcmp(argv[1], "cmdbuf"))
        return mode_cmdbuf();
    return mode_clean();
}
