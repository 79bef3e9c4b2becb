/*
 * init.c -- TEMPORARY minimal start-up (the staged version replaces it):
 * when ACCELTRACE_SPOOL_DIR is set, open the recorder and seal it at exit.
 */
#include <pthread.h>
#include <stdlib.h>

#include "acceltrace.h"
#include "init.h"
#include "internal.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_rc = ACT_E_DISABLED;
static void (*stop_fns[32])(void);
static int n_stop;

static void at_exit(void)
{
    act_lifecycle_stop();
}

static void init_once(void)
{
    const char *dir = getenv("ACCELTRACE_SPOOL_DIR");
    if (!dir || !*dir)
        return;
    init_rc = act_recorder_open(dir, 256ull << 20, 256u << 10);
    if (init_rc == 0)
        atexit(at_exit);
}

int act_init(void)
{
    pthread_once(&once, init_once);
    return init_rc;
}

int act_lifecycle_on_stop(const char *name, void (*fn)(void))
{
    (void)name;
    if (n_stop >= 32)
        return ACT_E_FULL;
    stop_fns[n_stop++] = fn;
    return 0;
}

void act_lifecycle_stop(void)
{
    while (n_stop > 0)
        stop_fns[--n_stop]();
    act_recorder_close();
}
