/*
 * ring_app.c -- a program for the flight-recorder tests (--ring): it sets
 * metadata and opens an outer range "run" first (both far older than a
 * small ring keeps), marks "early", then records `steps` ranges "step"
 * (each with a nested "inner" and, every 1000 steps, a mark "m<k>"), marks
 * "last" and ends as asked:
 *   exit    returns 0 after popping "run"
 *   segv    dies of SIGSEGV with "run" still open
 *   wait S  keeps recording steps for S seconds (for triggers), then exits
 * It prints the index of the last 1000-step mark, so a test knows what the
 * end of the window must hold.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acceltrace.h"

static long steps_done;

static void steps(long n)
{
    char name[32];
    for (long i = 0; i < n; i++, steps_done++) {
        act_range_push("step");
        act_range_push("inner");
        act_range_pop();
        act_range_pop();
        if (steps_done % 1000 == 0) {
            snprintf(name, sizeof(name), "m%ld", steps_done / 1000);
            act_mark(name);
        }
    }
}

static double since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "exit";
    long n = argc > 2 ? atol(argv[2]) : 200000;
    act_metadata_set("dataset", "ring-test");
    act_range_push("run");
    act_mark("early");
    steps(n);
    if (!strcmp(mode, "wait")) {
        struct timespec t0, nap = {0, 2 * 1000 * 1000};
        double secs = argc > 3 ? atof(argv[3]) : 3.0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        printf("ready\n");
        fflush(stdout);
        while (since(&t0) < secs) {
            steps(200);
            nanosleep(&nap, NULL);
        }
    }
    printf("last mark m%ld\n", (steps_done - 1) / 1000);
    fflush(stdout);
    act_mark("last");
    if (!strcmp(mode, "segv")) {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
    act_range_pop();
    return 0;
}
