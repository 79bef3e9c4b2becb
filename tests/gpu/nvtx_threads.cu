// nvtx_threads.cu -- a small CUDA program for scripts/gpu-check.sh: NVTX
// ranges around kernel launches, on the main thread and on a second host
// thread that launches on its own stream. Each range is named after the
// kernel launch it encloses ("main/scale k", "worker/scale k"), so a checker
// can tell that every kernel's "External id" is the range it was launched
// in. Prints what it did and a checksum; exits non-zero on a wrong result.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N        (1 << 18)
#define LAUNCHES 5

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "nvtx_threads: %s failed: %s\n", #call, cudaGetErrorString(e_));       \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

__global__ void scale(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * a + 1.0f;
}

struct job {
    const char *who;
    float *dev;
    double sum;
};

static void *work(void *arg)
{
    struct job *j = (struct job *)arg;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMemsetAsync(j->dev, 0, N * sizeof(float), s));
    nvtxRangePushA(j->who);
    for (int k = 0; k < LAUNCHES; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s/scale %d", j->who, k);
        nvtxRangePushA(name);
        scale<<<(N + 255) / 256, 256, 0, s>>>(j->dev, 0.5f, N);
        CHECK(cudaGetLastError());
        nvtxRangePop();
    }
    nvtxRangePop();
    static float host[2][N];
    float *h = host[j->who[0] == 'm' ? 0 : 1];
    CHECK(cudaMemcpyAsync(h, j->dev, N * sizeof(float), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    double sum = 0;
    for (int i = 0; i < N; i++)
        sum += h[i];
    j->sum = sum;
    return NULL;
}

int main(void)
{
    struct job jobs[2] = {{"main", NULL, 0}, {"worker", NULL, 0}};
    for (int t = 0; t < 2; t++)
        CHECK(cudaMalloc(&jobs[t].dev, N * sizeof(float)));
    pthread_t th;
    if (pthread_create(&th, NULL, work, &jobs[1]) != 0) {
        fprintf(stderr, "nvtx_threads: pthread_create failed\n");
        return 2;
    }
    work(&jobs[0]);
    pthread_join(th, NULL);
    CHECK(cudaDeviceSynchronize());
    /* x -> x/2 + 1 five times from 0: 1, 1.5, 1.75, 1.875, 1.9375 */
    double want = 1.9375 * N;
    int bad = jobs[0].sum != want || jobs[1].sum != want;
    printf("threads 2, kernels %d, nvtx ranges %d\n", 2 * LAUNCHES, 2 * (LAUNCHES + 1));
    printf("checksum %.0f %.0f, wrong %d\n", jobs[0].sum, jobs[1].sum, bad);
    for (int t = 0; t < 2; t++)
        CHECK(cudaFree(jobs[t].dev));
    return bad;
}
