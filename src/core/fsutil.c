/*
 * fsutil.c -- small file-system helpers shared by the launcher and
 * in-process sessions, which both own a private, flat spool directory.
 *
 * The umask is the program's: a program that sets 0277 or 0777 must not
 * make our directories unwritable or our files unreadable to the
 * launcher. Every directory and file of a spool gets its mode explicitly
 * (chmod/fchmod after creation), never from the umask.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* chmod, keeping errno as it was when it fails (the caller reports the
 * creation's own error, not ours). Used right after we made `dir`: it is
 * ours, in a directory where nobody else may rename it (the caller checks
 * owner and mode afterwards, spool_file.c). */
static int dir_mode_set(const char *dir, mode_t mode)
{
    if (chmod(dir, mode) == 0)
        return 0;
    int e = errno;
    rmdir(dir);
    errno = e;
    return -1;
}

char *act_dir_make_temp(char *tmpl)
{
    if (!mkdtemp(tmpl))
        return NULL;
    return dir_mode_set(tmpl, 0700) == 0 ? tmpl : NULL;
}

int act_dir_make_private(const char *dir)
{
    if (mkdir(dir, 0700) != 0)
        return -1;
    return dir_mode_set(dir, 0700);
}

int act_file_mode_set(int fd, mode_t mode)
{
    return fchmod(fd, mode) == 0 ? 0 : -errno;
}
