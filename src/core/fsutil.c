/*
 * fsutil.c -- small file-system helpers shared by the launcher and
 * in-process sessions, which both own a private, flat spool directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"

int act_dir_remove_flat(const char *dir)
{
    /* O_NOFOLLOW: never walk into a link someone put in our place. */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return -e;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlinkat(fd, e->d_name, 0);
    }
    closedir(d);
    return rmdir(dir) == 0 ? 0 : -errno;
}
