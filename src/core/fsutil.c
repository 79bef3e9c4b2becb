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
#include <pthread.h>
#include <stdio.h>
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

const char *act_temp_template(char *out, size_t cap, const char *prefix)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    snprintf(out, cap, "%s/%s-XXXXXX", tmp, prefix);
    return tmp;
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

/* ---- SIGXFSZ of ours -----------------------------------------------------
 *
 * A write or truncate past RLIMIT_FSIZE fails with EFBIG and raises SIGXFSZ
 * in the calling thread (thread-directed), whose default action kills the
 * process. The process is the program's, its limit and its signals too:
 * our calls that can grow a file run with SIGXFSZ blocked in the thread,
 * and a SIGXFSZ they raised is taken back with sigtimedwait (which takes
 * the thread's own pending signals first) before the mask is restored.
 * One the thread already had pending is left alone: ours merged with it. */

/* Whether SIGXFSZ is pending on this thread alone (not process-wide):
 * /proc/thread-self/status, SigPnd. 1 when it cannot be told (then the
 * caller leaves every pending SIGXFSZ alone). */
static int xfsz_thread_pending(void)
{
    FILE *f = fopen("/proc/thread-self/status", "re");
    if (!f)
        return 1;
    char line[256];
    unsigned long long mask = ~0ull;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "SigPnd: %llx", &mask) == 1)
            break;
    fclose(f);
    return (mask >> (SIGXFSZ - 1)) & 1;
}

void act_xfsz_block(act_xfsz_guard *g)
{
    sigset_t xfsz, pend;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &g->old);
    g->had = sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ) && xfsz_thread_pending();
}

void act_xfsz_restore(act_xfsz_guard *g, int err)
{
    int saved = errno;
    if (err == EFBIG && !g->had) {
        sigset_t xfsz;
        sigemptyset(&xfsz);
        sigaddset(&xfsz, SIGXFSZ);
        struct timespec zero = {0, 0};
        while (sigtimedwait(&xfsz, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
    errno = saved;
}
