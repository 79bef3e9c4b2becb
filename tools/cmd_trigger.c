/*
 * cmd_trigger.c -- traces on demand from a running `acceltrace run`.
 *
 * The launcher's side: run writes its pid into the spool directory
 * ("launcher.pid") and waits for the program with SIGCHLD and SIGUSR2
 * blocked outside sigsuspend, so that a SIGUSR2 sent to the launcher (never
 * to the program: its own handlers are not touched) is seen exactly once
 * and at once. Each one calls back into run, which writes a trace of what
 * the spool holds at that moment while the program goes on (the reader
 * takes only published records, so a live spool is safe to read).
 *
 * The command's side: `acceltrace trigger PID|SPOOL` finds the launcher
 * from a spool directory, from the pid of any process it traces (their
 * environment names the spool directory) or from its own pid, and sends
 * it SIGUSR2.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "help.h"
#include "trigger.h"

#define PID_FILE "launcher.pid"

static volatile sig_atomic_t triggers; /* SIGUSR2s not yet served */

static void on_usr2(int sig)
{
    (void)sig;
    triggers++;
}

static void on_chld(int sig)
{
    (void)sig; /* only wakes sigsuspend */
}

int act_trigger_arm(const char *spool_dir, sigset_t *saved)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/" PID_FILE, spool_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        dprintf(fd, "%ld\n", (long)getpid());
        close(fd);
    }
    struct sigaction sa = {.sa_handler = on_usr2};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    sigaddset(&block, SIGCHLD);
    return sigprocmask(SIG_BLOCK, &block, saved) == 0 && fd >= 0 ? 0 : -1;
}

void act_trigger_child_reset(const sigset_t *saved)
{
    signal(SIGUSR2, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_SETMASK, saved, NULL);
}

int act_trigger_wait(pid_t child, const sigset_t *saved, void (*on_trigger)(void *ctx), void *ctx)
{
    sigset_t waitmask = *saved;
    sigdelset(&waitmask, SIGUSR2);
    sigdelset(&waitmask, SIGCHLD);
    for (;;) {
        /* WNOWAIT: the caller reaps (the pid stays ours until then). */
        siginfo_t si = {0};
        if (waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG | WNOWAIT) != 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (si.si_pid == child)
            return 0;
        if (triggers) {
            triggers--;
            on_trigger(ctx);
            continue;
        }
        sigsuspend(&waitmask); /* returns on SIGCHLD, SIGUSR2 or a forwarded signal */
    }
}

void act_trigger_name(const char *out, unsigned n, char *buf, size_t len)
{
    /* "t.json" -> "t.trigger-N.json", "t.json.gz" -> "t.trigger-N.json.gz" */
    const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
    const char *dot = strstr(base, ".json");
    size_t stem = dot ? (size_t)(dot - out) : strlen(out);
    snprintf(buf, len, "%.*s.trigger-%u%s", (int)stem, out, n, out + stem);
}

/* ---- acceltrace trigger --------------------------------------------------- */

static long read_pid_file(const char *dir)
{
    char path[PATH_MAX], line[32] = "";
    snprintf(path, sizeof(path), "%s/" PID_FILE, dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    long pid = fgets(line, sizeof(line), f) ? strtol(line, NULL, 10) : -1;
    fclose(f);
    return pid > 0 ? pid : -1;
}

/* The spool directory named in process pid's environment, or "" . */
static void spool_of(long pid, char *out, size_t len)
{
    out[0] = '\0';
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    static const char key[] = "ACCELTRACE_SPOOL_DIR=";
    char var[PATH_MAX + sizeof(key)];
    int c;
    size_t n = 0;
    while ((c = fgetc(f)) != EOF) {
        if (c) {
            if (n + 1 < sizeof(var))
                var[n++] = (char)c;
            continue;
        }
        var[n] = '\0';
        n = 0;
        if (!strncmp(var, key, sizeof(key) - 1)) {
            size_t vl = strlen(var + sizeof(key) - 1);
            if (vl < len)
                memcpy(out, var + sizeof(key) - 1, vl + 1);
            break;
        }
    }
    fclose(f);
}

/* Whether pid is an `acceltrace run`: its argv[1] is "run". */
static int is_launcher(long pid)
{
    char path[64], cmd[256];
    snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, cmd, sizeof(cmd) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    cmd[n] = '\0';
    size_t a0 = strlen(cmd);
    return (ssize_t)a0 + 1 < n && !strcmp(cmd + a0 + 1, "run");
}

static long find_launcher(const char *target, char *why, size_t len)
{
    struct stat st;
    char *end;
    long pid = strtol(target, &end, 10);
    if (*target && !*end && pid > 0) {
        char spool[PATH_MAX];
        spool_of(pid, spool, sizeof(spool));
        if (spool[0]) {
            long l = read_pid_file(spool);
            if (l < 0)
                snprintf(why, len, "process %ld is traced, but %s names no launcher", pid, spool);
            return l;
        }
        if (is_launcher(pid))
            return pid;
        snprintf(why, len, "process %ld is neither 'acceltrace run' nor a program it traces", pid);
        return -1;
    }
    if (stat(target, &st) == 0 && S_ISDIR(st.st_mode)) {
        long l = read_pid_file(target);
        if (l < 0)
            snprintf(why, len, "%s: not the spool directory of a running 'acceltrace run'", target);
        return l;
    }
    snprintf(why, len, "'%s' is neither a pid nor a spool directory", target);
    return -1;
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
    long pid = find_launcher(argv[1], why, sizeof(why));
    if (pid < 0) {
        fprintf(stderr, "acceltrace: trigger: %s\n", why);
        return 2;
    }
    if (kill((pid_t)pid, SIGUSR2) != 0) {
        fprintf(stderr, "acceltrace: trigger: cannot signal the launcher (pid %ld): %s\n", pid,
                strerror(errno));
        return 1;
    }
    return 0;
}
