/*
 * spool_dir.c -- the spools of a run's directory (spool.h): which names
 * are spools, their order (pid, then exec image), the link from one
 * image of a pid to the next, and the cut of a kept spool to what it used.
 */
#include "spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acceltrace.h"

static void set_err(char *err, size_t errlen, const char *path, const char *what)
{
    if (err && errlen)
        snprintf(err, errlen, "%s: %s", path, what);
}

/* Every name the recorder gives a spool (core/recorder/spool_file.c, spool_map):
 * <pid>.acts, and <pid>-<n>.acts for a later image of the same pid (a
 * process that records, then calls exec and records again). */
static int is_spool_name(const char *n, unsigned long *pid, unsigned long *image)
{
    const char *p = n;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p == n || p - n > 10)
        return 0;
    *pid = strtoul(n, NULL, 10);
    *image = 0;
    if (*p == '-') {
        const char *q = ++p;
        while (*p >= '0' && *p <= '9')
            p++;
        if (p == q || p - q > 4 || *q == '0')
            return 0;
        *image = strtoul(q, NULL, 10);
    }
    return strcmp(p, ".acts") == 0;
}

typedef struct named {
    unsigned long pid, image;
    char *path;
} named;

static int named_cmp(const void *a, const void *b)
{
    const named *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->image < y->image ? -1 : x->image > y->image;
}

static unsigned long spool_image(const act_spool *sp, unsigned long *pid)
{
    const char *base = strrchr(sp->path, '/');
    unsigned long image = 0;
    if (!is_spool_name(base ? base + 1 : sp->path, pid, &image))
        *pid = 0;
    return image;
}

void act_spool_link_execs(act_spool **sps, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        act_spool *a = sps[i], *b = sps[i + 1];
        unsigned long pa, pb;
        unsigned long ia = spool_image(a, &pa), ib = spool_image(b, &pb);
        /* The same pid, a later image that started after the earlier one's
         * last record: the earlier image ended in exec, not in a crash. */
        if (!a->sealed && pa && pa == pb && ib > ia && a->hdr.pid == b->hdr.pid &&
            b->hdr.start_ns >= a->last_ts) {
            a->sealed = 1;
            a->ended_by_exec = 1;
        }
    }
}

int act_spool_dir_list(const char *dir, char ***paths, size_t *n, char *err, size_t errlen)
{
    *paths = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        set_err(err, errlen, dir, strerror(errno));
        return ACT_E_IO;
    }
    named *v = NULL;
    size_t nv = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        unsigned long pid, image;
        if (!is_spool_name(e->d_name, &pid, &image))
            continue;
        named *nn = realloc(v, (nv + 1) * sizeof(*nn));
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *p = malloc(len);
        if (!nn || !p) {
            free(p);
            if (nn)
                v = nn;
            rc = ACT_E_NOMEM;
            break;
        }
        v = nn;
        snprintf(p, len, "%s/%s", dir, e->d_name);
        v[nv++] = (named){pid, image, p};
    }
    closedir(d);
    if (nv)
        qsort(v, nv, sizeof(*v), named_cmp);
    char **out = rc ? NULL : malloc((nv ? nv : 1) * sizeof(*out));
    for (size_t i = 0; i < nv; i++) {
        if (out)
            out[i] = v[i].path;
        else
            free(v[i].path);
    }
    free(v);
    if (!out) {
        set_err(err, errlen, dir, "out of memory");
        return ACT_E_NOMEM;
    }
    *paths = out;
    *n = nv;
    return 0;
}

void act_spool_dir_free(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

/* Cut the sealed spool at `path` to its used chunks: 1 cut, 0 left as it
 * is (not sealed, a ring, not a spool, already that size), or -1 (errno). */
static int spool_shrink(const char *path)
{
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    act_spool_header h;
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) == 0 && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
        h.magic == ACT_SPOOL_MAGIC && h.chunk_size && (h.flags & ACT_SPOOL_F_SEALED) &&
        !(h.flags & ACT_SPOOL_F_RING)) {
        uint64_t len = act_spool_used_bytes(&h);
        if (len < (uint64_t)st.st_size)
            rc = ftruncate(fd, (off_t)len) == 0 ? 1 : -1;
    }
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int act_spool_dir_shrink(const char *dir, char *err, size_t errlen)
{
    char **paths;
    size_t n;
    int rc = act_spool_dir_list(dir, &paths, &n, err, errlen);
    int cut = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int r = spool_shrink(paths[i]);
        if (r < 0) {
            set_err(err, errlen, paths[i], strerror(errno));
            rc = ACT_E_IO;
        }
        cut += r > 0;
    }
    act_spool_dir_free(paths, n);
    return rc ? rc : cut;
}
