/*
 * outpath.c -- may a trace be written at this path? Checked by `acceltrace
 * run` before the program starts (so that a trace that cannot be written is
 * known up front) and by the trace writer before it replaces anything:
 * --force replaces a regular file (or a symbolic link, never followed),
 * never a device node, FIFO, socket or directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acceltrace.h"
#include "internal.h"

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

/* A link whose text leads into /proc, or an entry in /proc itself. */
static int names_descriptor(const char *path)
{
    char text[PATH_MAX], dir[PATH_MAX], real[PATH_MAX];
    ssize_t n = readlink(path, text, sizeof(text) - 1);
    if (n > 0) {
        text[n] = '\0';
        if (!strncmp(text, "/proc/", 6))
            return 1;
    }
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
    return realpath(dir, real) && (!strcmp(real, "/proc") || !strncmp(real, "/proc/", 6));
}

int act_out_path_check(const char *path, int force, char *err, size_t len)
{
    struct stat st, target;
    if (!path || !path[0]) {
        snprintf(err, len, "the output file name is empty");
        return ACT_E_INVAL;
    }
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, len, "'%s': %s", path, strerror(errno));
        return ACT_E_IO;
    }
    if (!force) {
        snprintf(err, len, "'%s' exists; use --force to overwrite it", path);
        return ACT_E_IO;
    }
    if (S_ISREG(st.st_mode))
        return 0;
    if (S_ISLNK(st.st_mode)) {
        /* The link itself is replaced, never followed; but a link to an
         * open descriptor (/dev/stdout, /dev/fd/N: a link into /proc, or a
         * /proc entry) or to a device or pipe names no file to replace. */
        if (names_descriptor(path)) {
            snprintf(err, len,
                     "'%s' names an open file descriptor; --force replaces regular files only "
                     "(name a file)",
                     path);
            return ACT_E_IO;
        }
        if (stat(path, &target) != 0 || S_ISREG(target.st_mode))
            return 0;
        snprintf(err, len,
                 "'%s' is a link to %s; --force replaces regular files only (name a file)", path,
                 kind_of(target.st_mode));
        return ACT_E_IO;
    }
    snprintf(err, len, "'%s' is %s; --force replaces regular files only (name a file)", path,
             kind_of(st.st_mode));
    return ACT_E_IO;
}

int act_out_dir_probe(const char *path, char *err, size_t len)
{
    const char *slash = strrchr(path, '/');
    char probe[PATH_MAX];
    int n = !slash          ? snprintf(probe, sizeof(probe), ".acceltrace-probe-XXXXXX")
            : slash == path ? snprintf(probe, sizeof(probe), "/.acceltrace-probe-XXXXXX")
                            : snprintf(probe, sizeof(probe), "%.*s/.acceltrace-probe-XXXXXX",
                                       (int)(slash - path), path);
    if (n < 0 || (size_t)n >= sizeof(probe)) {
        snprintf(err, len, "'%s': %s", path, strerror(ENAMETOOLONG));
        return ACT_E_IO;
    }
    if (slash && !slash[1]) {
        snprintf(err, len, "'%s' names a directory; name a file", path);
        return ACT_E_INVAL;
    }
    int fd = mkostemp(probe, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (slash)
            snprintf(err, len, "cannot write the trace in '%.*s': %s", (int)(slash - path + 1),
                     path, strerror(e));
        else
            snprintf(err, len, "cannot write the trace in the current directory: %s", strerror(e));
        return ACT_E_IO;
    }
    close(fd);
    unlink(probe);
    return 0;
}
