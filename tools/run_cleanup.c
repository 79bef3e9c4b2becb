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

/* The child of free_detached: waits for the gate to close, lets go of
 * everything of `run`'s but a terminal or file stderr, frees. */
static _Noreturn void free_detached_child(int gate, const char *aside)
{
    char c;
    while (read(gate, &c, 1) < 0 && errno == EINTR)
        ; /* end of file: the parent closed its copy */
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        (void)signal(sig, SIG_DFL); /* SIGKILL and SIGSTOP refuse: no matter */
    sigprocmask(SIG_SETMASK, &none, NULL);
    (void)setsid();
    int null = open("/dev/null", O_RDWR);
    struct stat err;
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        if (fstat(STDERR_FILENO, &err) == 0 && (S_ISFIFO(err.st_mode) || S_ISSOCK(err.st_mode)))
            dup2(null, STDERR_FILENO); /* its reader would wait for us */
    }
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
 * the replaced trace first and only then lets the child go on (a pipe it
 * closes), so the child's close is the last, the one that frees. The child
 * keeps stderr when it is a terminal or a file (a removal that fails is
 * still said), never stdin, stdout or a pipe: whoever reads `run`'s output
 * to its end (`$(acceltrace run ...)`, subprocess pipes) does not wait for
 * it. Done in place if the rename, the pipe or the fork fails. `dir` NULL:
 * no spool to remove.
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
        free_detached_child(gate[0], dir ? aside : NULL);
    }
    /* The parent, or no child: the pipe (if any) and the file go now, the
     * file before the gate opens (not the last reference then). */
    if (gate[0] >= 0)
        close(gate[0]);
    if (replaced_fd >= 0)
        close(replaced_fd);
    if (gate[1] >= 0)
        close(gate[1]);
    if (pid < 0 && dir)
        act_run_spool_remove(aside);
}
