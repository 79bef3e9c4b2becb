/*
 * annotate_prog.c -- a small program for the trace checks: nested ranges
 * on two threads, marks, counters, metadata (including strings that need
 * escaping and invalid UTF-8), a cross-thread range, and a mode that dies
 * by SIGKILL inside an open range so the trace must show it truncated.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "acceltrace.h"

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 50; i++) {
        act_range_push("worker \"step\"\n");
        act_range_push("inner\\path\xff");
        act_counter("queue depth", i);
        act_range_pop();
        act_range_pop();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    act_metadata_set("run \"label\"", "value with \\ and \t and \xe2\x80\xa8");
    act_metadata_set_json("config", "{\"batch\": 8, \"tags\": [\"a\", \"b\"]}");
    act_range_push("main");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    uint64_t id = act_range_start("cross-thread");
    act_mark("started");
    pthread_join(t, NULL);
    act_range_end(id);
    if (!strcmp(mode, "crash")) {
        act_range_push("dies inside");
        raise(SIGKILL);
    }
    act_range_pop();
    puts("done");
    return 0;
}
