/*
 * capture_app.c -- a program using the acceltrace C API for the capture
 * tests. "api": 50 marks, act_start() before the 10th, act_stop() before
 * the 20th, then again around 30..35; a range opened inside the first
 * window is closed outside it (kept). "timed": 50 marks 10 ms apart, for
 * --delay/--duration.
 */
#include <acceltrace.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    int api = argc > 1 && strcmp(argv[1], "api") == 0;
    struct timespec ts = {0, 10 * 1000 * 1000};
    act_metadata_set("scenario", api ? "api" : "timed");
    for (int i = 0; i < 50; i++) {
        if (api && (i == 10 || i == 30))
            act_start();
        if (api && i == 12)
            act_range_push("straddling");
        if (api && (i == 20 || i == 35))
            act_stop();
        if (api && i == 25)
            act_range_pop();
        act_mark("tick");
        act_counter("i", i);
        if (!api)
            nanosleep(&ts, NULL);
    }
    return 0;
}
