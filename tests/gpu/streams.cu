// streams.cu -- a small CUDA program for scripts/gpu-check.sh: a vector add
// split over several streams, with asynchronous copies both ways, a memset,
// events and a cudaDeviceSynchronize. It prints what it did and a checksum,
// so that the traced run can be compared with the untraced one, and exits
// non-zero when the result is wrong.
//
// Built with -DACT_IN_PROCESS it records itself with acceltrace's C session
// API (act_session_begin/act_session_end) and writes the trace named by its
// first argument: the in-process path of the same program.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef ACT_IN_PROCESS
#include <acceltrace.h>
#endif

#define NSTREAMS 4
#define CHUNK    (1 << 20) /* floats per stream */

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "streams: %s failed: %s\n", #call, cudaGetErrorString(e_));            \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

__global__ void vec_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static int run(void)
{
    const size_t n = (size_t)NSTREAMS * CHUNK, bytes = n * sizeof(float);
    float *ha, *hb, *hc, *da, *db, *dc;
    CHECK(cudaMallocHost(&ha, bytes));
    CHECK(cudaMallocHost(&hb, bytes));
    CHECK(cudaMallocHost(&hc, bytes));
    for (size_t i = 0; i < n; i++) {
        ha[i] = (float)(i % 1000);
        hb[i] = 2.0f * (float)(i % 7);
    }
    CHECK(cudaMalloc(&da, bytes));
    CHECK(cudaMalloc(&db, bytes));
    CHECK(cudaMalloc(&dc, bytes));
    CHECK(cudaMemset(dc, 0, bytes));

    cudaStream_t s[NSTREAMS];
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (int k = 0; k < NSTREAMS; k++)
        CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
    CHECK(cudaEventRecord(start, s[0]));
    for (int k = 0; k < NSTREAMS; k++) {
        size_t off = (size_t)k * CHUNK, cb = CHUNK * sizeof(float);
        CHECK(cudaMemcpyAsync(da + off, ha + off, cb, cudaMemcpyHostToDevice, s[k]));
        CHECK(cudaMemcpyAsync(db + off, hb + off, cb, cudaMemcpyHostToDevice, s[k]));
        vec_add<<<(CHUNK + 255) / 256, 256, 0, s[k]>>>(da + off, db + off, dc + off, CHUNK);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(hc + off, dc + off, cb, cudaMemcpyDeviceToHost, s[k]));
    }
    CHECK(cudaEventRecord(stop, s[0]));
    CHECK(cudaDeviceSynchronize());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));

    double sum = 0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (hc[i] != ha[i] + hb[i])
            bad++;
        sum += hc[i];
    }
    printf("streams %d, kernels %d, copies HtoD %d DtoH %d of %zu bytes, memsets 1 of %zu bytes\n",
           NSTREAMS, NSTREAMS, 2 * NSTREAMS, NSTREAMS, (size_t)CHUNK * sizeof(float), bytes);
    printf("checksum %.0f, wrong %d\n", sum, bad);
    (void)ms; /* timing differs between runs; not printed */
    for (int k = 0; k < NSTREAMS; k++)
        CHECK(cudaStreamDestroy(s[k]));
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    CHECK(cudaFreeHost(ha));
    CHECK(cudaFreeHost(hb));
    CHECK(cudaFreeHost(hc));
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
#ifdef ACT_IN_PROCESS
    /* The session starts the CUPTI source of a CUDA runtime already in the
       process: make the first CUDA call before it begins (docs/vendors.md). */
    CHECK(cudaFree(0));
    if (act_session_begin(NULL) != ACT_OK) {
        fprintf(stderr, "streams: act_session_begin failed\n");
        return 3;
    }
    int rc = run();
    int e = act_session_end(argc > 1 ? argv[1] : "streams-inprocess.json");
    if (e != ACT_OK) {
        fprintf(stderr, "streams: act_session_end: %s\n", act_strerror(e));
        return 3;
    }
    return rc;
#else
    (void)argc;
    (void)argv;
    return run();
#endif
}
