/*
 * self_dir.c -- the folder holding this `acceltrace` command, from which
 * it finds what was installed beside it (the library, the start-up hook,
 * the reports of `stats`).
 */
#include "self_dir.h"

#include <string.h>
#include <unistd.h>

int act_self_dir(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return 0;
}
