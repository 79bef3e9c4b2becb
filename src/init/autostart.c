/*
 * autostart.c -- start-up at load time, for launched programs that never
 * call acceltrace themselves (`acceltrace run --ascend`: the program is an
 * Ascend program, libacceltrace.so is only preloaded; mspti has no
 * driver-invoked entry point like CUDA's InitializeInjection).
 *
 * Loading the library stays inert (DESIGN.md: no device runtime touched,
 * nothing the program can see changes) unless BOTH hold:
 *   - a launcher attached: ACCELTRACE_SPOOL_DIR is set, and
 *   - the launcher asked for a vendor source at start-up: ACCELTRACE_SOURCES
 *     is set (validated, like every variable, by start-up's load-core stage).
 * Then the constructor runs act_init(); its "apply hook groups" stage
 * applies the "activity.*" groups, whose hooks start the sources named in
 * ACCELTRACE_SOURCES (src/sources/activity/activity_start.c).
 *
 * secure_getenv: a set-uid/set-gid program never starts anything here.
 */
#include <stdlib.h>

#include "init/init.h"

__attribute__((constructor)) static void act_autostart(void)
{
    const char *spool = secure_getenv("ACCELTRACE_SPOOL_DIR");
    const char *sources = secure_getenv("ACCELTRACE_SOURCES");
    if (!spool || !*spool || !sources || !*sources)
        return;
    act_init(); /* reports its own failures (one line naming the stage) */
}
