/*
 * limits_workload.c -- the traced programs of the resource-limit tests
 * (tests/reliability/check_limits.py, docs/reliability.md "Resource
 * limits"): what a program does with its own limits, signals and umask
 * must stay as it is untraced.
 *
 *   limits_workload ranges N STATUS
 *       N push/pop pairs named "r", then exit(STATUS); prints
 *       {"ok": n, "full": n} (the calls' results).
 *   limits_workload xfsz N handler|blocked FILE
 *       Installs a SIGXFSZ handler (or blocks SIGXFSZ), then forks a child
 *       that records N ranges (its spool is made at its first record,
 *       under the program's disposition) and then writes FILE past
 *       RLIMIT_FSIZE itself. The child prints {"before": n, "after": n}:
 *       the SIGXFSZ caught (or pending) before and after its own write.
 *   limits_workload children K N [GOFILE]
 *       K forked children, each records N ranges named "cI" (once GOFILE
 *       exists, when given); the parent records "p" and waits for them.
 *   limits_workload umask MASK N SELF
 *       umask(MASK), N ranges, then a forked child and an exec'd child
 *       (SELF ranges N 0) record N ranges each.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acceltrace.h"

static volatile sig_atomic_t caught;

static void on_xfsz(int sig)
{
    (void)sig;
    caught++;
}

static long record(const char *name, long n)
{
    long ok = 0;
    for (long i = 0; i < n; i++)
        ok += act_range_push(name) == ACT_OK && act_range_pop() == ACT_OK;
    return ok;
}

static int ranges(long n, int status)
{
    long ok = record("r", n);
    printf("{\"ok\": %ld, \"full\": %ld}\n", ok, n - ok);
    fflush(stdout);
    return status;
}

static int wait_ok(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* SIGXFSZ caught so far (handler) or pending (blocked). */
static int xfsz_seen(int blocked)
{
    if (!blocked)
        return (int)caught;
    sigset_t p;
    sigpending(&p);
    return sigismember(&p, SIGXFSZ);
}

/* Write `file` one byte past RLIMIT_FSIZE: the program's own SIGXFSZ. */
static void xfsz_own(const char *file)
{
    struct rlimit rl;
    getrlimit(RLIMIT_FSIZE, &rl);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || rl.rlim_cur == RLIM_INFINITY || ftruncate(fd, (off_t)rl.rlim_cur) != 0 ||
        lseek(fd, 0, SEEK_END) < 0) {
        perror("limits_workload: xfsz file");
        _exit(4);
    }
    if (write(fd, "x", 1) != -1 || errno != EFBIG) {
        fprintf(stderr, "limits_workload: a write past the limit did not fail with EFBIG\n");
        _exit(4);
    }
    close(fd);
}

static int xfsz(long n, const char *mode, const char *file)
{
    int blocked = !strcmp(mode, "blocked");
    if (blocked) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGXFSZ);
        sigprocmask(SIG_BLOCK, &s, NULL);
    } else {
        struct sigaction sa = {.sa_handler = on_xfsz};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGXFSZ, &sa, NULL);
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        long ok = record("child", n);
        int before = xfsz_seen(blocked);
        xfsz_own(file);
        int after = xfsz_seen(blocked);
        printf("{\"ok\": %ld, \"before\": %d, \"after\": %d}\n", ok, before, after);
        exit(0);
    }
    return pid > 0 && wait_ok(pid) ? 0 : 5;
}

static void wait_file(const char *go)
{
    struct timespec ms = {0, 1000000};
    while (go && access(go, F_OK) != 0)
        nanosleep(&ms, NULL);
}

static int children(int k, long n, const char *go)
{
    pid_t pids[256];
    if (k < 0 || k > 256)
        return 2;
    fflush(stdout);
    for (int i = 0; i < k; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            char name[16];
            snprintf(name, sizeof(name), "c%d", i);
            wait_file(go);
            exit(record(name, n) == n ? 0 : 3); /* exit: its spool is sealed */
        }
    }
    int ok = record("p", 1) == 1;
    for (int i = 0; i < k; i++)
        ok &= pids[i] > 0 && wait_ok(pids[i]);
    return ok ? 0 : 6;
}

static int with_umask(const char *mask, long n, const char *self)
{
    umask((mode_t)strtol(mask, NULL, 8));
    int ok = record("parent", n) == n;
    fflush(stdout);
    pid_t f = fork();
    if (f == 0)
        exit(record("forked", n) == n ? 0 : 3);
    char count[32];
    snprintf(count, sizeof(count), "%ld", n);
    pid_t e = fork();
    if (e == 0) {
        execl(self, self, "ranges", count, "0", (char *)NULL);
        _exit(127);
    }
    ok &= f > 0 && wait_ok(f);
    ok &= e > 0 && wait_ok(e);
    return ok ? 0 : 7;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "ranges"))
        return ranges(atol(argv[2]), atoi(argv[3]));
    if (argc == 5 && !strcmp(argv[1], "xfsz"))
        return xfsz(atol(argv[2]), argv[3], argv[4]);
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "children"))
        return children(atoi(argv[2]), atol(argv[3]), argc == 5 ? argv[4] : NULL);
    if (argc == 5 && !strcmp(argv[1], "umask"))
        return with_umask(argv[2], atol(argv[3]), argv[4]);
    fprintf(stderr, "usage: limits_workload ranges N STATUS | xfsz N handler|blocked FILE | "
                    "children K N [GOFILE] | umask MASK N SELF\n");
    return 2;
}
