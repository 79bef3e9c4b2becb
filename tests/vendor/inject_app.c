/*
 * inject_app.c -- an "unmodified CUDA program" for the injection test: it
 * knows nothing of acceltrace. It loads the fake CUDA stack (the fake
 * libcupti doubles as the driver here), calls its cuInit -- which loads
 * CUDA_INJECTION64_PATH and calls InitializeInjection, as the real driver
 * does -- launches kernels and exits normally.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(void)
{
    const char *lib = getenv("FAKE_CUDA_LIB");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_GLOBAL) : NULL;
    if (!h) {
        fprintf(stderr, "inject_app: cannot load FAKE_CUDA_LIB\n");
        return 3;
    }
    int (*cu_init)(void) = (int (*)(void))dlsym(h, "fake_cu_init");
    void (*set)(const char *, long) = (void (*)(const char *, long))dlsym(h, "fake_cupti_set");
    uint32_t (*launch)(const char *, uint32_t, uint32_t, uint64_t, int32_t, int32_t) =
        (uint32_t(*)(const char *, uint32_t, uint32_t, uint64_t, int32_t, int32_t))dlsym(
            h, "fake_cuda_launch_kernel");
    if (!cu_init || !set || !launch)
        return 3;
    set("delay_ms", 10);
    if (cu_init() != 0)
        return 4;
    for (int i = 0; i < 10; i++)
        launch("injected_kernel", 0, 1, 1000, 4, 64);
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    return 0; /* acceltrace drains and seals at exit */
}
