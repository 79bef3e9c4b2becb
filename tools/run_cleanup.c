/*
 * run_cleanup.c -- `acceltrace run`'s spool directory and replaced trace
 * freed after it returns (run_cleanup.h).
 */
#include "run_cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/common.h"

/* The spool directory is ours (mkdtemp, 0700) and flat. One already gone
 * (a caller that cleans $TMPDIR as soon as `run` returns races the
 * detached removal below) is what was wanted: not an error. */
void act_run_spool_remove(const char *dir)
{
    int rc = act_dir_remove_flat(dir);
    if (rc < 0 && rc != -ENOENT)
        fprintf(stderr, "acceltrace: run: could not remove the spool directory %s: %s\n", dir,
                strerror(-rc));
}

/* Close every descriptor from 3 up but a and b (a < b). */
static void close_all_but(int a, int b)
{
    if (a > STDERR_FILENO + 1)
        (void)close_range(STDERR_FILENO + 1, (unsigned)a - 1, 0);
    if (b > a + 1)
        (void)close_range((unsigned)a + 1, (unsigned)b - 1, 0);
    closefrom(b + 1);
}

/* fd moved above the standard ones, which the child points at /dev/null
 * (`run` started with one of them closed gets its pipe or file there). */
static int above_std(int fd)
{
    int moved = fd >= 0 && fd <= STDERR_FILENO ? fcntl(fd, F_DUPFD, STDERR_FILENO + 1) : -1;
    return moved >= 0 ? moved : fd;
}

/* The freeing waits this long after `run` has exited. Freeing at once,
 * the helper, woken after a long sleep, was run ahead of `run`'s parent
 * on a 2-core machine: the parent returned 1.5-2.2 ms late in 6 of 10
 * runs, even with the helper at nice 19 (0.17-0.31 ms in 16 of 16 with
 * the wait; BENCHMARKS.md, issue 32). */
#define HELPER_DEFER_MS 10

/* The helper's standard descriptors on /dev/null, but a terminal or file
 * stderr (a removal that fails is still said); signals as a new program
 * has them; nothing else of `run`'s but `chan`, moved above the standard
 * ones first (returned). */
static int helper_detach(int chan)
{
    (void)setsid();
    chan = above_std(chan);
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        (void)signal(sig, SIG_DFL); /* SIGKILL and SIGSTOP refuse: no matter */
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    struct stat err;
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        if (fstat(STDERR_FILENO, &err) == 0 && (S_ISFIFO(err.st_mode) || S_ISSOCK(err.st_mode)))
            dup2(null, STDERR_FILENO); /* its reader would wait for us */
    }
    close_all_but(chan, chan);
    return chan;
}

/* One job from `run`: the spool directory renamed aside ("" for none)
 * and up to ACT_RUN_HELD descriptors to let go of (fds[], -1 for none).
 * 1, or 0 at the end of the channel without one. */
static int helper_job(int chan, char *aside, size_t size, int fds[ACT_RUN_HELD])
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(ACT_RUN_HELD * sizeof(int))];
    } ctl;
    struct iovec iov = {aside, size - 1};
    struct msghdr m = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl.buf,
                       .msg_controllen = sizeof(ctl.buf)};
    ssize_t n;
    while ((n = recvmsg(chan, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (n <= 0)
        return 0;
    aside[n] = '\0';
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len >= CMSG_LEN(0)) {
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        memcpy(fds, CMSG_DATA(c), (k < ACT_RUN_HELD ? k : ACT_RUN_HELD) * sizeof(int));
    }
    return 1;
}

/* The helper: waits for its job, then for the end of the channel (`run`
 * has exited: its end is close-on-exec, held by nobody else), then for
 * whoever waited for `run` to take its turn (HELPER_DEFER_MS), then
 * frees. No job (`run` kept its spool, failed before, or was killed):
 * nothing to do. */
static _Noreturn void helper_main(int chan)
{
    chan = helper_detach(chan);
    char aside[PATH_MAX];
    int fds[ACT_RUN_HELD] = {-1, -1};
    if (helper_job(chan, aside, sizeof(aside), fds)) {
        char c;
        while (read(chan, &c, 1) < 0 && errno == EINTR)
            ; /* end of file (or any other error): `run` is gone */
        struct timespec defer = {0, HELPER_DEFER_MS * 1000000L};
        while (nanosleep(&defer, &defer) < 0 && errno == EINTR)
            ;
        if (aside[0])
            act_run_spool_remove(aside);
        /* Last: closing the watch waits for a grace period (run_cleanup.h). */
        for (int i = 0; i < ACT_RUN_HELD; i++)
            if (fds[i] >= 0)
                close(fds[i]); /* the last reference: a replaced trace is freed here */
    }
    _exit(0);
}

/*
 * Freeing files is the largest part of what `run` did after the trace was
 * complete: unlinking the spool frees its page cache and extents
 * (milliseconds for a short run's, seconds for a long run's: BENCHMARKS.md
 * item 24), and a trace replaced with --force is freed by the rename.
 * Nobody needs to wait for either: the spool directory is renamed aside at
 * once (its path is gone when `run` returns), the replaced trace is held
 * open (replaced_fd), and a helper in a session of its own frees both once
 * `run` has exited, so that the freeing takes no CPU from `run`'s last
 * steps or its exit (on 2 cores the launcher's exit took 2.0 ms to reach
 * its parent, median, with the helper at work, 0.45 ms without).
 *
 * The helper is started with the program, while the launcher is small:
 * forking it at the end, from a launcher holding the trace's buffers and
 * the timeline, took 0.35-0.45 ms of the tail (BENCHMARKS.md, issue 32);
 * handing it the job is one message. The program's child starts it,
 * before its exec (act_run_cleaner_spawn): so the helper is nobody's
 * child, and the program is the launcher's only child from the start
 * (what `pgrep -P`, /proc/PID/task/PID/children and our tests read; a
 * helper forked by the launcher showed there for a moment first). It lets
 * go at once of stdin, stdout and a pipe stderr, keeping a terminal or
 * file one: whoever reads `run`'s output to its end
 * (`$(acceltrace run ...)`, subprocess pipes) does not wait for it.
 */
int act_run_cleaner_pair(int sv[2])
{
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0)
        return 0;
    sv[0] = sv[1] = -1;
    return -1;
}

void act_run_cleaner_spawn(int helper_end)
{
    if (helper_end < 0)
        return;
    /* The middle child's SIGCHLD is taken here, not left pending for the
     * program (a fresh fork has none of its own). */
    sigset_t chld, saved;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &saved);
    pid_t mid = fork();
    if (mid == 0) {
        if (fork() == 0)
            helper_main(helper_end);
        _exit(0); /* the helper, orphaned, is nobody's child of ours */
    }
    close(helper_end);
    if (mid > 0) {
        while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
            ;
        struct timespec none = {0, 0};
        (void)sigtimedwait(&chld, NULL, &none);
    }
    sigprocmask(SIG_SETMASK, &saved, NULL);
}

/* The job to the helper; 0, or -1 when it is not there to take it. */
static int send_job(int cleaner, const char *aside, const int held[ACT_RUN_HELD])
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(ACT_RUN_HELD * sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof(ctl));
    int fds[ACT_RUN_HELD], n_fds = 0;
    for (int i = 0; i < ACT_RUN_HELD; i++)
        if (held[i] >= 0)
            fds[n_fds++] = held[i];
    /* Never an empty message: that would read as the end of the channel. */
    struct iovec iov = {(void *)(aside[0] ? aside : "\0"), aside[0] ? strlen(aside) : 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n_fds) {
        m.msg_control = ctl.buf;
        m.msg_controllen = CMSG_SPACE((size_t)n_fds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t)n_fds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t)n_fds * sizeof(int));
    }
    ssize_t n;
    while ((n = sendmsg(cleaner, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    return n < 0 ? -1 : 0;
}

void act_run_free_detached(int cleaner, const char *dir, const int held[ACT_RUN_HELD])
{
    char aside[PATH_MAX];
    if (dir && ((size_t)snprintf(aside, sizeof aside, "%s.removing", dir) >= sizeof aside ||
                rename(dir, aside) != 0)) {
        act_run_spool_remove(dir);
        dir = NULL;
    }
    int any = dir != NULL;
    for (int i = 0; i < ACT_RUN_HELD; i++)
        any |= held[i] >= 0;
    if (!any)
        return;
    /* No helper: freed now, in place. Else the helper's copies are the
     * last references once ours are closed. */
    int handed = cleaner >= 0 && send_job(cleaner, dir ? aside : "", held) == 0;
    for (int i = 0; i < ACT_RUN_HELD; i++)
        if (held[i] >= 0)
            close(held[i]);
    if (!handed && dir)
        act_run_spool_remove(aside);
}
