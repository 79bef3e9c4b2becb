/*
 * nvtx_app.c -- an unmodified NVTX v3 program (it knows nothing of
 * acceltrace): ranges, marks, start/end, wide strings, a domain with a
 * named category and a registered string, payloads, a named thread, a
 * second thread. With "capture" it runs the capture-range scenario:
 * events before and after the range "capture-me" must be left out.
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *worker(void *arg)
{
    (void)arg;
    nvtxRangePushA("worker-range");
    nvtxRangePop();
    return NULL;
}

static void basic(void)
{
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-main");
    nvtxRangePushA("outer");
    nvtxMarkA("mark-a");
    nvtxRangePushA("inner");
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangeId_t id = nvtxRangeStartA("started");
    nvtxRangeEnd(id);
    nvtxRangePushW(L"wide-\u00e9\u4e2d");
    nvtxRangePop();

    nvtxDomainHandle_t d = nvtxDomainCreateA("mydomain");
    nvtxDomainNameCategoryA(d, 7, "io");
    nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "registered");
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof(a));
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = 7;
    a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    a.payload.dValue = 2.5;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s;
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);

    memset(&a, 0, sizeof(a));
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = -5;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "mark-payload";
    nvtxMarkEx(&a);
    nvtxDomainDestroy(d);

    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    nvtxRangePop(); /* unbalanced: counted, not fatal */
}

static void capture(void)
{
    nvtxRangePushA("before");
    nvtxMarkA("mark-before");
    nvtxRangePop();
    nvtxRangePushA("capture-me");
    nvtxRangePushA("inside");
    nvtxMarkA("mark-inside");
    nvtxRangePop();
    nvtxRangePop();
    nvtxMarkA("mark-after");
    nvtxRangePushA("capture-me"); /* a second window */
    nvtxMarkA("mark-inside-2");
    nvtxRangePop();
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "capture") == 0)
        capture();
    else
        basic();
    return 0;
}
