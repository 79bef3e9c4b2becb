/*
 * cmd_trigger.c -- `acceltrace trigger PID|SPOOL_DIR`: ask a running
 * `acceltrace run` for a trace of what it has recorded so far.
 *
 * The launcher is reached only through the channel it owns, trigger.sock
 * in its private spool directory (trigger_chan.c), and only once it is
 * proven to be a launcher of ours: the directory and the socket belong to
 * us and are closed to others, and the process listening runs as us (and
 * is PID, when PID is the launcher). Nothing is ever signalled, so no pid,
 * wherever it was read, can make us harm another process. The target is
 * found from:
 *   - the launcher's pid: the spool directory it holds open, the one with
 *     a trigger.sock (the listener must be that very process);
 *   - the pid of a program it traces: ACCELTRACE_SPOOL_DIR in its
 *     environment;
 *   - the spool directory itself (a symbolic link is not followed).
 * A process of another user is refused before anything is read from it.
 * The answer names the trace written; it goes to stdout.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "help.h"
#include "trigger_chan.h"

/* What a trigger is aimed at: a directory open as `dir`, named `name`,
 * and the pid that must listen there (0: any launcher of ours). */
typedef struct trigger_target {
    int dir;
    pid_t expect;
    char name[PATH_MAX + 64];
} trigger_target;

/* The spool directory named in process pid's environment, opened; -1 if
 * it names none (run always names an absolute one: the library refuses
 * anything else), or -1 with its name in `name` and errno if it cannot be
 * opened. */
static int spool_of(long pid, char *name, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    static const char key[] = "ACCELTRACE_SPOOL_DIR=";
    char var[PATH_MAX + sizeof(key)];
    int c, found = 0;
    size_t n = 0;
    while (!found && (c = fgetc(f)) != EOF) {
        if (c) {
            if (n + 1 < sizeof(var))
                var[n++] = (char)c;
            continue;
        }
        var[n] = '\0';
        n = 0;
        found = !strncmp(var, key, sizeof(key) - 1) && var[sizeof(key) - 1];
    }
    fclose(f);
    size_t vl = found ? strlen(var + sizeof(key) - 1) : 0;
    if (!found || vl >= len || var[sizeof(key) - 1] != '/')
        return -1;
    memcpy(name, var + sizeof(key) - 1, vl + 1);
    return open(name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The spool directory the launcher pid holds open: the one of its open
 * directories that has a trigger.sock. -1 if none. */
static int launcher_dir(long pid, char *name, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent *e;
    int found = -1;
    while (found < 0 && (e = readdir(d)) != NULL) {
        char fdpath[sizeof(path) + sizeof(e->d_name)];
        struct stat st;
        snprintf(fdpath, sizeof(fdpath), "%s/%s", path, e->d_name);
        int fd = e->d_name[0] == '.' ? -1 : open(fdpath, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0 && fstatat(fd, ACT_TRIGGER_SOCK, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISSOCK(st.st_mode)) {
            ssize_t n = readlink(fdpath, name, len - 1);
            name[n > 0 ? n : 0] = '\0';
            found = fd;
        } else if (fd >= 0) {
            close(fd);
        }
    }
    closedir(d);
    return found;
}

/* A pid: refused unless the process is ours; then its launcher's channel,
 * or the one of the launcher that traces it. 0, or -1 with why. */
static int target_of_pid(long pid, trigger_target *t, char *why, size_t len)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%ld", pid);
    if (stat(path, &st) != 0) {
        snprintf(why, len, "there is no process %ld", pid);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, len, "process %ld belongs to uid %u, not to you (uid %u): refused", pid,
                 (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    char dir[PATH_MAX];
    t->dir = launcher_dir(pid, dir, sizeof(dir));
    t->expect = t->dir >= 0 ? (pid_t)pid : 0;
    if (t->dir < 0) {
        dir[0] = '\0';
        t->dir = spool_of(pid, dir, sizeof(dir));
    }
    if (t->dir >= 0) {
        snprintf(t->name, sizeof(t->name), "%s", dir);
        return 0;
    }
    if (dir[0]) {
        snprintf(why, len, "process %ld names the spool directory %s: %s", pid, dir,
                 errno == ELOOP ? "a symbolic link, not followed" : strerror(errno));
        return -1;
    }
    snprintf(why, len, "process %ld is neither 'acceltrace run' nor a program it traces", pid);
    return -1;
}

/* A directory given by name: itself, never through a symbolic link. */
static int target_of_dir(const char *arg, trigger_target *t, char *why, size_t len)
{
    t->expect = 0;
    t->dir = open(arg, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    snprintf(t->name, sizeof(t->name), "%s", arg);
    if (t->dir >= 0)
        return 0;
    if (errno == ELOOP || errno == ENOTDIR) {
        struct stat st;
        if (lstat(arg, &st) == 0 && S_ISLNK(st.st_mode)) {
            snprintf(why, len, "%s is a symbolic link: name the spool directory itself", arg);
            return -1;
        }
    }
    snprintf(why, len, "'%s' is neither a pid nor a spool directory (%s)", arg, strerror(errno));
    return -1;
}

static int target_find(const char *arg, trigger_target *t, char *why, size_t len)
{
    char *end;
    long pid = strtol(arg, &end, 10);
    if (*arg && !*end && pid > 0)
        return target_of_pid(pid, t, why, len);
    return target_of_dir(arg, t, why, len);
}

/* The launcher's answer, said: the trace's path on stdout. Exit status. */
static int answer_print(const char *a, const char *name)
{
    char *rest;
    unsigned long n = strtoul(strchr(a, ' ') ? strchr(a, ' ') + 1 : "", &rest, 10);
    rest += *rest == ' ';
    if (!strncmp(a, "written ", 8)) {
        printf("%s\n", rest);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    if (!strncmp(a, "opened ", 7)) {
        fprintf(stderr,
                "acceltrace: trigger: trigger %lu opened the capture window; the next one "
                "closes it and writes the trace\n",
                n);
        return 0;
    }
    if (!strncmp(a, "failed ", 7)) {
        fprintf(stderr, "acceltrace: trigger: trigger %lu: no trace written: %s\n", n, rest);
        return 1;
    }
    if (!strncmp(a, "refused ", 8)) {
        fprintf(stderr, "acceltrace: trigger: the launcher of %s refused: %s\n", name, a + 8);
        return 2;
    }
    fprintf(stderr, "acceltrace: trigger: %s answered something unknown: '%.200s'\n", name, a);
    return 1;
}

/* Ask the launcher at t for a trace and wait for its answer. */
static int trigger_ask(const trigger_target *t)
{
    char why[PATH_MAX + 256];
    int status;
    int fd = act_trigger_chan_connect(t->dir, t->name, t->expect, why, sizeof(why), &status);
    if (fd < 0) {
        fprintf(stderr, "acceltrace: trigger: %s\n", why);
        return status;
    }
    char answer[ACT_TRIGGER_ANSWER_MAX];
    int rc = act_trigger_chan_send(fd, ACT_TRIGGER_REQUEST);
    ssize_t n = rc < 0 ? rc : act_trigger_chan_recv(fd, answer, sizeof(answer));
    close(fd);
    if (n > 0)
        return answer_print(answer, t->name);
    fprintf(stderr,
            "acceltrace: trigger: the run of %s ended before this trigger was served: no "
            "trace written%s%s\n",
            t->name, n < 0 ? ": " : "", n < 0 ? strerror((int)-n) : "");
    return 1;
}

int act_cmd_trigger(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        act_help_print("trigger", stdout);
        return 0;
    }
    if (argc != 2)
        return act_help_usage_error("trigger", "expected one PID or spool directory");
    char why[PATH_MAX + 128] = "";
    trigger_target t;
    if (target_find(argv[1], &t, why, sizeof(why)) != 0) {
        fprintf(stderr, "acceltrace: trigger: %s\n", why);
        return 2;
    }
    int rc = trigger_ask(&t);
    close(t.dir);
    return rc;
}
