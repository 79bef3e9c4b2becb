/*
 * outfile.c -- an output file's life (see outfile.h): the temporary file
 * beside the path, its mode, putting it in place by link or rename, the
 * replaced file held open, and the removal on failure.
 */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/internal.h"

struct act_outfile {
    int fd;
    int force;
    int *replaced; /* act_outfile_keep_replaced: where the replaced file goes */
    char *path;
    char tmp[4200]; /* "" while the file is unnamed */
};

static void split_path(const char *path, char *dir, size_t dlen, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dlen, ".");
        *base = path;
    } else if (slash == path) {
        snprintf(dir, dlen, "/");
        *base = slash + 1;
    } else {
        snprintf(dir, dlen, "%.*s", (int)(slash - path), path);
        *base = slash + 1;
    }
}

/* A name ".BASE.XXXXXXXX.tmp" beside path, not taken yet: `make` creates
 * it (returns >= 0, or -1 with errno; EEXIST: try another name). */
static int named_temp(const char *path, char *tmp, size_t tlen, int (*make)(const char *, int),
                      int arg)
{
    char dir[4096];
    const char *base;
    split_path(path, dir, sizeof(dir), &base);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    unsigned long r = (unsigned long)ts.tv_nsec ^ ((unsigned long)getpid() << 16);
    for (int attempt = 0; attempt < 100; attempt++) {
        r = r * 6364136223846793005UL + 1442695040888963407UL;
        int n = snprintf(tmp, tlen, "%s/.%s.%08lx.tmp", dir, base, (r >> 32) & 0xfffffffful);
        if (n < 0 || (size_t)n >= tlen) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = make(tmp, arg);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

static int make_file(const char *tmp, int unused)
{
    (void)unused;
    return open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* Give the unnamed file fd a name (linkat through /proc: no privilege). */
static int make_link(const char *tmp, int fd)
{
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW);
}

/* The file written until it is complete. Unnamed where the file system
 * allows (O_TMPFILE) and no name is wanted: a launcher killed while it
 * streams leaves nothing beside path; it gets its name at the close
 * (name_temp). *tmp is "" until then. */
static int open_temp(const char *path, char *tmp, size_t tlen, int flags)
{
    char dir[4096];
    const char *base;
    split_path(path, dir, sizeof(dir), &base);
    tmp[0] = 0;
    if (!(flags & ACT_OUTFILE_NAMED) && access("/proc/self/fd", X_OK) == 0) {
        int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
    }
    return named_temp(path, tmp, tlen, make_file, 0);
}

static int name_temp(const char *path, char *tmp, size_t tlen, int fd)
{
    return tmp[0] ? 0 : named_temp(path, tmp, tlen, make_link, fd);
}

static void remove_temp(const char *tmp)
{
    if (tmp[0])
        unlink(tmp);
}

/* --force: the file at tmp replaces what is at path, which names a whole
 * file throughout. An exchange (RENAME_EXCHANGE) and an unlink of what is
 * then at tmp, not rename(2): on ext4, a rename over an existing file
 * makes the kernel allocate the new file's blocks and start writing it
 * back first (auto_da_alloc: 0.3-0.5 ms for an 11 MB trace, on the tail
 * after the program's exit); an exchange does not. A file written to a new
 * name never had that either. The file replaced is freed by the unlink,
 * or later when held (act_outfile_keep_replaced). */
static int replace(const char *tmp, const char *path)
{
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) != 0)
        return rename(tmp, path); /* nothing there, or no exchange on this file system */
    if (unlink(tmp) == 0)
        return 0;
    /* A directory appeared at path meanwhile: put it back and refuse, as
     * rename(2) does (EISDIR); the caller removes tmp. */
    int e = errno;
    (void)renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE);
    errno = e;
    return -1;
}

/* Put the finished temporary file in place; never replaces `path` unless
 * force. link() fails with EEXIST atomically; filesystems without hard
 * links fall back to renameat2(RENAME_NOREPLACE). */
static int install(const char *tmp, const char *path, int force)
{
    if (force)
        return replace(tmp, path);
    if (link(tmp, path) == 0) {
        unlink(tmp);
        return 0;
    }
    if (errno == EEXIST)
        return -1;
    return renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE);
}

static void outfile_free(act_outfile *f)
{
    free(f->path);
    free(f);
}

int act_outfile_open(act_outfile **out, const char *path, int force, unsigned mode, int flags,
                     char *err, size_t errlen)
{
    *out = NULL;
    struct stat st;
    if (!force && lstat(path, &st) == 0) {
        snprintf(err, errlen, "%s: already exists (use --force to overwrite)", path);
        return ACT_E_IO;
    }
    if (force && act_out_path_check(path, force, err, errlen) != 0)
        return ACT_E_IO; /* --force replaces regular files only */
    act_outfile *f = calloc(1, sizeof(*f));
    if (f)
        f->path = strdup(path);
    if (!f || !f->path) {
        free(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return ACT_E_NOMEM;
    }
    f->fd = open_temp(path, f->tmp, sizeof(f->tmp), flags);
    if (f->fd < 0) {
        snprintf(err, errlen, "%s: cannot create a temporary file beside it: %s", path,
                 strerror(errno));
        outfile_free(f);
        return ACT_E_IO;
    }
    /* Created 0600; another mode only when the user asked for it (set on
     * the descriptor: exact, whatever the umask, never through a path). */
    if (mode && mode != 0600 && fchmod(f->fd, mode) != 0) {
        snprintf(err, errlen, "%s: cannot set mode %04o: %s", path, mode, strerror(errno));
        close(f->fd);
        remove_temp(f->tmp);
        outfile_free(f);
        return ACT_E_IO;
    }
    f->force = force;
    *out = f;
    return 0;
}

int act_outfile_fd(const act_outfile *f)
{
    return f->fd;
}

const char *act_outfile_path(const act_outfile *f)
{
    return f->path;
}

const char *act_outfile_temp(const act_outfile *f)
{
    return f->tmp;
}

void act_outfile_keep_replaced(act_outfile *f, int *fd)
{
    if (fd)
        *fd = -1;
    if (f)
        f->replaced = fd;
}

/* The temporary file goes; f is freed. */
static int outfile_drop(act_outfile *f, int rc)
{
    remove_temp(f->tmp);
    outfile_free(f);
    return rc;
}

int act_outfile_close(act_outfile *f, int ok, int rc, int sys_errno, char *err, size_t errlen)
{
    if (!f)
        return ok ? rc : ACT_E_INVAL;
    int saved = sys_errno;
    if (!ok)
        rc = ACT_E_INVAL;
    if (!rc && name_temp(f->path, f->tmp, sizeof(f->tmp), f->fd) != 0) {
        saved = errno;
        rc = ACT_E_IO;
    }
    if (close(f->fd) && !rc) {
        saved = errno;
        rc = ACT_E_IO;
    }
    /* What appeared at the path while the file was made is checked
     * again: --force still replaces regular files only. */
    if (!rc && f->force && act_out_path_check(f->path, 1, err, errlen) != 0)
        return outfile_drop(f, ACT_E_IO);
    /* A file replaced is held open, so that the rename does not free it
     * (O_PATH pins the inode; a symlink named as output is itself held). */
    int held = !rc && f->force && f->replaced ? open(f->path, O_PATH | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (!rc && install(f->tmp, f->path, f->force)) {
        saved = errno;
        rc = ACT_E_IO;
        if (saved == EEXIST) {
            snprintf(err, errlen, "%s: already exists (use --force to overwrite)", f->path);
            return outfile_drop(f, rc);
        }
    }
    if (rc) {
        remove_temp(f->tmp);
        if (ok || sys_errno) /* a writer that failed says why (ENOSPC, EFBIG) */
            snprintf(err, errlen, "%s: %s", f->path,
                     rc == ACT_E_NOMEM ? "out of memory" : strerror(saved));
    }
    if (rc && held >= 0) { /* nothing was replaced: closing it frees nothing */
        close(held);
        held = -1;
    }
    if (f->replaced)
        *f->replaced = held;
    outfile_free(f);
    return rc;
}
