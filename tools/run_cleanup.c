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
#include <sys/stat.h>
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

/* The child of free_detached: lets go of everything of `run`'s but a
 * terminal or file stderr, the gate and the replaced trace at once, waits
 * for the gate to close (`run` has exited), then frees. */
static _Noreturn void free_detached_child(int gate, int replaced, const char *aside)
{
    (void)setsid();
    gate = above_std(gate);
    replaced = above_std(replaced);
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        (void)signal(sig, SIG_DFL); /* SIGKILL and SIGSTOP refuse: no matter */
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null = open("/dev/null", O_RDWR);
    struct stat err;
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        if (fstat(STDERR_FILENO, &err) == 0 && (S_ISFIFO(err.st_mode) || S_ISSOCK(err.st_mode)))
            dup2(null, STDERR_FILENO); /* its reader would wait for us */
    }
    if (replaced < 0)
        replaced = gate;
    close_all_but(gate < replaced ? gate : replaced, gate < replaced ? replaced : gate);
    char c;
    while (read(gate, &c, 1) < 0 && errno == EINTR)
        ;                         /* end of file: `run` has exited */
    closefrom(STDERR_FILENO + 1); /* the replaced trace's last reference: freed here */
    if (aside)
        act_run_spool_remove(aside);
    _exit(0);
}

/*
 * Freeing files is the largest part of what `run` did after the trace was
 * complete: unlinking the spool frees its page cache and extents
 * (milliseconds for a short run's, seconds for a long run's: BENCHMARKS.md
 * item 24), and a trace replaced with --force is freed by the rename.
 * Nobody needs to wait for either:
 * the spool directory is renamed aside at once (its path is gone when
 * `run` returns), the replaced trace is held open (replaced_fd), and a
 * child in a session of its own frees both. The parent closes its copy of
 * the replaced trace at once; the child goes on only when the gate (a
 * pipe whose write end only the parent holds, close-on-exec) reaches its
 * end: when `run` has exited. So the child's close is the last, the one
 * that frees, and the freeing takes no CPU from `run`'s last steps or its
 * exit (on 2 cores the launcher's exit took 2.0 ms to reach its parent,
 * median, with the child at work, 0.45 ms without). The child lets go at
 * once of stdin, stdout and a pipe stderr, keeping a terminal or file one
 * (a removal that fails is still said): whoever reads `run`'s output to its
 * end (`$(acceltrace run ...)`, subprocess pipes) does not wait for it.
 * Done in place if the rename, the pipe or the fork fails. `dir` NULL: no
 * spool to remove.
 */
void act_run_free_detached(const char *dir, int replaced_fd)
{
    char aside[PATH_MAX];
    if (dir && ((size_t)snprintf(aside, sizeof aside, "%s.removing", dir) >= sizeof aside ||
                rename(dir, aside) != 0)) {
        act_run_spool_remove(dir);
        dir = NULL;
    }
    if (!dir && replaced_fd < 0)
        return;
    int gate[2] = {-1, -1};
    pid_t pid = pipe2(gate, O_CLOEXEC) == 0 ? fork() : -1;
    if (pid == 0) {
        close(gate[1]);
        free_detached_child(gate[0], replaced_fd, dir ? aside : NULL);
    }
    /* The parent, or no child: the file goes now (not the last reference
     * with a child); the gate's write end stays open until `run` exits,
     * unless there is no child to wait on it. */
    if (gate[0] >= 0)
        close(gate[0]);
    if (replaced_fd >= 0)
        close(replaced_fd);
    if (pid < 0 && gate[1] >= 0)
        close(gate[1]);
    if (pid < 0 && dir)
        act_run_spool_remove(aside);
}
