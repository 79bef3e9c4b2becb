/*
 * run_info.c -- run.json in a kept spool directory (run_info.h): written
 * by `acceltrace run` when it could not write the trace, read by
 * `acceltrace export`. Read as untrusted input: a member of the wrong type
 * is an error, the file is at most 1 MiB.
 */
#include "run_info.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"

static json_t *str_array(const char *const *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && v && (n < 0 ? v[i] != NULL : i < n); i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

int act_run_info_save(const char *dir, const char *const *argv, int argc,
                      const char *const *metadata, int pid, int wait_status, unsigned mode,
                      const char *output)
{
    json_t *o = json_object();
    if (!o)
        return -ENOMEM;
    json_object_set_new(o, "command", str_array(argv, argc));
    json_object_set_new(o, "metadata", str_array(metadata, -1));
    json_object_set_new(o, "pid", json_integer(pid));
    json_object_set_new(o, "wait_status", json_integer(wait_status));
    json_object_set_new(o, "mode", json_integer(mode));
    if (output)
        json_object_set_new(o, "output", json_string(output));
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, ACT_RUN_INFO_FILE);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = fd < 0 ? -errno : act_file_mode_set(fd, 0600); /* not the umask's */
    if (!rc && json_dumpfd(o, fd, JSON_COMPACT) != 0)
        rc = errno ? -errno : -EIO;
    if (fd >= 0 && close(fd) != 0 && !rc)
        rc = -errno;
    if (rc && fd >= 0)
        unlink(path);
    json_decref(o);
    return rc;
}

/* A JSON array of strings as a NULL-terminated copy; -1 if not one. */
static int copy_strings(json_t *a, char ***out, int *n)
{
    *out = NULL;
    if (!a)
        return 0;
    if (!json_is_array(a))
        return -1;
    size_t cnt = json_array_size(a);
    char **v = calloc(cnt + 1, sizeof(*v));
    if (!v)
        return -1;
    for (size_t i = 0; i < cnt; i++) {
        json_t *s = json_array_get(a, i);
        if (!json_is_string(s) || !(v[i] = strdup(json_string_value(s)))) {
            for (size_t j = 0; j < i; j++)
                free(v[j]);
            free(v);
            return -1;
        }
    }
    *out = v;
    if (n)
        *n = (int)cnt;
    return 0;
}

static int int_member(json_t *o, const char *key, long long lo, long long hi, long long *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return -1;
    *out = json_integer_value(v);
    return 0;
}

int act_run_info_load(const char *dir, act_run_info *ri, char *err, size_t len)
{
    memset(ri, 0, sizeof(*ri));
    ri->wait_status = -1;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, ACT_RUN_INFO_FILE);
    /* O_NONBLOCK: a FIFO in its place is refused below, never waited on. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
        snprintf(err, len, "%s: %s", path,
                 fd < 0 ? strerror(errno) : "not a regular file of at most 1 MiB");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    json_error_t je;
    json_t *o = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
    close(fd);
    long long pid = 0, ws = -1, mode = 0;
    int bad = !json_is_object(o) ||
              copy_strings(json_object_get(o, "command"), &ri->argv, &ri->argc) != 0;
    bad = bad || copy_strings(json_object_get(o, "metadata"), &ri->metadata, NULL) != 0;
    json_t *out = json_object_get(o, "output");
    bad = bad || (out && (!json_is_string(out) || !(ri->output = strdup(json_string_value(out)))));
    bad = bad || int_member(o, "pid", 0, INT_MAX, &pid) ||
          int_member(o, "wait_status", -1, 0xffff, &ws) || int_member(o, "mode", 0, 0777, &mode);
    json_decref(o);
    if (bad) {
        snprintf(err, len, "%s: not a run description written by acceltrace run", path);
        act_run_info_free(ri);
        return -1;
    }
    ri->pid = (int)pid;
    ri->wait_status = (int)ws;
    ri->mode = (unsigned)mode;
    return 1;
}

void act_run_info_free(act_run_info *ri)
{
    for (int i = 0; ri->argv && ri->argv[i]; i++)
        free(ri->argv[i]);
    for (int i = 0; ri->metadata && ri->metadata[i]; i++)
        free(ri->metadata[i]);
    free(ri->argv);
    free(ri->metadata);
    free(ri->output);
    ri->argv = ri->metadata = NULL;
    ri->output = NULL;
}

void act_shell_word_print(FILE *f, const char *s)
{
    int plain = *s != '\0';
    for (const char *p = s; *p && plain; p++)
        plain = strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+,=:@%",
                       *p) != NULL;
    if (plain) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            fputs("'\\''", f);
        else if ((unsigned char)*p < 0x20 || *p == 0x7f)
            fputc('?', f); /* never a control byte on the terminal */
        else
            fputc(*p, f);
    }
    fputc('\'', f);
}
