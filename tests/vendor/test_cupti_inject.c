/*
 * test_cupti_inject.c -- `acceltrace run` in miniature for CUDA: start an
 * unmodified program (inject_app) with CUDA_INJECTION64_PATH pointing at
 * libacceltrace.so and a private spool directory, wait for it, then read
 * its spool and check that the CUPTI source recorded its kernels and that
 * the spool was sealed at exit.
 * argv: inject_app libacceltrace.so fake-libcupti.so
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spool_scan.h"

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    char dir[] = "/tmp/act-inject-XXXXXX";
    if (!mkdtemp(dir))
        return 2;
    pid_t pid = fork();
    if (pid == 0) {
        setenv("ACCELTRACE_SPOOL_DIR", dir, 1);
        setenv("CUDA_INJECTION64_PATH", argv[2], 1);
        setenv("ACCELTRACE_CUPTI_LIB", argv[3], 1);
        setenv("FAKE_CUDA_LIB", argv[3], 1);
        execl(argv[1], argv[1], (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    int fails = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "FAIL: program status %d\n", status);
        fails++;
    }
    char path[512];
    snprintf(path, sizeof(path), "%s/%d.acts", dir, (int)pid);
    spool_scan s;
    if (spool_scan_read(path, &s) != 0)
        return 1;
    size_t kernels = 0;
    for (size_t i = 0; i < s.n_ops; i++)
        kernels += s.ops[i].r.op == ACT_OP_KERNEL && s.ops[i].name &&
                   !strcmp(s.ops[i].name, "injected_kernel") &&
                   s.ops[i].r.source == ACT_SOURCE_CUPTI;
    if (kernels != 10) {
        fprintf(stderr, "FAIL: %zu injected kernels recorded, expected 10\n", kernels);
        fails++;
    }
    if (!(s.hdr.flags & ACT_SPOOL_F_SEALED)) {
        fprintf(stderr, "FAIL: spool not sealed at exit\n");
        fails++;
    }
    if (s.n_errors) {
        fprintf(stderr, "FAIL: error recorded: %s\n", s.errors[0]);
        fails++;
    }
    spool_scan_free(&s);
    unlink(path);
    rmdir(dir);
    return fails ? 1 : 0;
}
