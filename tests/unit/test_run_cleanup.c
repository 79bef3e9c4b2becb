/*
 * test_run_cleanup.c -- what `run` leaves behind is freed by a detached
 * child (tools/run_cleanup.c), and only once `run` has exited: freeing a
 * spool's pages and a replaced trace's takes CPU, which on a small machine
 * the launcher's last steps and whoever waits for it would otherwise share
 * with the child (on this 2-core VM the launcher's last write to its
 * stderr pipe then took 2 ms, its exit to its parent's return 2.0 ms
 * median against 0.45 ms without the child at work).
 *
 * A forked "launcher" starts a "program" whose child process starts the
 * helper (act_run_cleaner_spawn) before it would exec, hands the helper a
 * spool directory and a held file (act_run_free_detached) and lives on
 * for a while: both must still be there until it exits, and gone soon
 * after. The helper is nobody's child (the program is the launcher's only
 * one, and has none of ours) and lets go of the launcher's stdout and
 * stderr pipes at once (their readers wait for the last writer), not when
 * it starts freeing. A launcher that hands it nothing (a kept spool, a
 * failure, SIGKILL) has nothing freed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run_cleanup.h"

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Whether process `pid` has a child. */
static int children_of(pid_t pid)
{
    char path[64], buf[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    return n > 0;
}

/* The launcher's side of `run`: the pair, the program's child starting
 * the helper where it would exec; the program (pid) checks it has no
 * child then and exits 0. The launcher keeps sv[0]. */
static pid_t start_program(int sv[2])
{
    if (act_run_cleaner_pair(sv) != 0)
        return -1;
    pid_t prog = fork();
    if (prog == 0) {
        act_run_cleaner_spawn(sv[1]);
        _exit(children_of(getpid()) ? 1 : 0);
    }
    close(sv[1]);
    return prog;
}

/* A "launcher" forked with its stdout on a pipe whose read end is *out
 * (in the parent; 0 returned in the child). */
static pid_t fork_launcher(int *out)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t launcher = fork();
    assert_true(launcher >= 0);
    if (launcher == 0) {
        close(p[0]);
        dup2(p[1], STDOUT_FILENO);
        close(p[1]);
        return 0;
    }
    close(p[1]);
    *out = p[0];
    return launcher;
}

/* Whether the launcher's stdout pipe is let go of by all (the helper at
 * once): its read end reaches the end of file. */
static void assert_stdout_released(int out)
{
    struct pollfd p = {.fd = out, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 2000), 1);
    char c;
    assert_int_equal(read(out, &c, 1), 0);
    close(out);
}

/* With `stdio_closed`, the launcher runs with stdin and stderr closed:
 * the channel's two ends get descriptors 0 and 2, which the helper points
 * at /dev/null (it moves the channel out of the way first). */
static void freed_after_exit(int stdio_closed)
{
    char dir[] = "/tmp/act-cleanup-XXXXXX", aside[64], file[64], kept[64];
    assert_non_null(mkdtemp(dir));
    snprintf(aside, sizeof(aside), "%s.removing", dir);
    snprintf(file, sizeof(file), "%s/1.acts", dir);
    snprintf(kept, sizeof(kept), "%s.replaced", dir);
    int fd = open(file, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    close(fd);
    fd = open(kept, O_WRONLY | O_CREAT, 0600); /* a replaced trace: held, unlinked */
    assert_true(fd >= 0);
    struct stat held;
    assert_int_equal(fstat(fd, &held), 0);
    assert_int_equal(unlink(kept), 0);

    int out;
    pid_t launcher = fork_launcher(&out);
    if (launcher == 0) {
        if (stdio_closed) {
            close(STDIN_FILENO);
            close(STDERR_FILENO);
        }
        int sv[2];
        pid_t prog = start_program(sv);
        if (prog < 0 || (stdio_closed && sv[0] != STDIN_FILENO))
            _exit(3);
        int st;
        if (waitpid(prog, &st, 0) != prog || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            _exit(4); /* the program had a child of ours */
        if (children_of(getpid()))
            _exit(5); /* the helper is the launcher's */
        int held[ACT_RUN_HELD] = {fd, -1};
        act_run_free_detached(sv[0], dir, held);
        nap_ms(400); /* `run`'s last steps */
        _exit(0);
    }
    close(fd);
    nap_ms(200);
    assert_false(exists(dir));  /* renamed aside at once */
    assert_true(exists(aside)); /* not freed while the launcher lives */
    int status;
    assert_int_equal(waitpid(launcher, &status, 0), launcher);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* Its stdout pipe: nobody holds it any more (the helper let go). */
    assert_stdout_released(out);
    for (int i = 0; i < 1000 && exists(aside); i++)
        nap_ms(10);
    assert_false(exists(aside));
}

static void test_freed_after_exit(void **state)
{
    (void)state;
    freed_after_exit(0);
}

static void test_freed_after_exit_stdio_closed(void **state)
{
    (void)state;
    freed_after_exit(1);
}

/* A launcher killed before it hands anything over: the helper ends with
 * it and frees nothing (the spool is the user's to export). */
static void test_no_job_frees_nothing(void **state)
{
    (void)state;
    char dir[] = "/tmp/act-cleanup-XXXXXX";
    assert_non_null(mkdtemp(dir));
    int out;
    pid_t launcher = fork_launcher(&out);
    if (launcher == 0) {
        int sv[2];
        if (start_program(sv) < 0)
            _exit(3);
        pause();
        _exit(0);
    }
    nap_ms(100);
    kill(launcher, SIGKILL);
    int status;
    assert_int_equal(waitpid(launcher, &status, 0), launcher);
    /* The helper let go of stdout at once and ended with the launcher. */
    assert_stdout_released(out);
    nap_ms(100);
    assert_true(exists(dir));
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_freed_after_exit),
        cmocka_unit_test(test_freed_after_exit_stdio_closed),
        cmocka_unit_test(test_no_job_frees_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
