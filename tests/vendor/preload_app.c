/*
 * preload_app.c -- an "unmodified Ascend program" for `acceltrace run
 * --ascend`: it never calls acceltrace and does not link libmspti. Its
 * "CANN runtime" is the fake libmspti's launch function, found in the
 * process as a preloaded library's symbol (the launcher preloads the fake
 * as $ACCELTRACE_MSPTI_LIB). Without the preload it has no runtime to call
 * and exits 0 having launched nothing, like a program run without a device.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

int main(void)
{
    uint64_t (*launch)(const char *, const char *, uint32_t, uint32_t, uint64_t) =
        (uint64_t(*)(const char *, const char *, uint32_t, uint32_t, uint64_t))dlsym(
            RTLD_DEFAULT, "fake_mspti_launch_kernel");
    if (!launch) {
        printf("preload_app: no Ascend runtime in the process; nothing launched\n");
        return 0;
    }
    for (int i = 0; i < 10; i++)
        launch("preloaded_kernel", "AI_CORE", 0, 3, 1000);
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    return 0; /* acceltrace drains mspti and seals the spool at exit */
}
