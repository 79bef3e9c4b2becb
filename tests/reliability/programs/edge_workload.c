/*
 * edge_workload.c -- the traced programs of the edge-case tests
 * (tests/reliability/check_edges.py, docs/reliability.md).
 *
 *   edge_workload ranges N STATUS
 *       N push/pop pairs named "r", then exit(STATUS); prints
 *       {"ok": n, "full": n, "other": n} (the calls' results).
 *   edge_workload reexec K
 *       Records the range "imgK", then execs itself with K-1 until K is 0.
 *   edge_workload tree
 *       Records "p", then starts descendants that each record one range
 *       named after how they started, none of them recording before it
 *       starts its own children: fork -> fork -> fork ("fork1".."fork3"),
 *       vfork + exec ("vfork"), posix_spawn -> posix_spawn ("spawn1",
 *       "spawn2"), fork + exec -> fork ("exec1", "exec2").
 *   edge_workload late FILE
 *       Forks a child that outlives the program: it waits until the spool
 *       directory is gone, records one range, then writes FILE.
 *   edge_workload bogus
 *       One real cross-thread range, then act_range_end() with 4 ids that
 *       act_range_start() never returned.
 *   edge_workload utf8
 *       A range whose name (3-byte characters) is longer than a chunk.
 *   edge_workload exitbusy
 *       Two threads enqueue OpenCL markers without end while main() calls
 *       exit() after 200 ms.
 */
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acceltrace.h"
#include "cl_common.h"

extern char **environ;

static void one(const char *name)
{
    if (act_range_push(name) != ACT_OK || act_range_pop() != ACT_OK) {
        fprintf(stderr, "edge_workload: range %s not recorded\n", name);
        _exit(3);
    }
}

static int ranges(long n, int status)
{
    long ok = 0, full = 0, other = 0;
    for (long i = 0; i < n; i++) {
        int a = act_range_push("r"), b = act_range_pop();
        if (a == ACT_OK && b == ACT_OK)
            ok++;
        else if (a == ACT_E_FULL && b == ACT_E_FULL)
            full++;
        else
            other++;
    }
    printf("{\"ok\": %ld, \"full\": %ld, \"other\": %ld}\n", ok, full, other);
    fflush(stdout);
    return status;
}

static int reexec(const char *self, int k)
{
    static const char *const names[] = {"img0", "img1", "img2", "img3", "img4",
                                        "img5", "img6", "img7", "img8", "img9"};
    if (k < 0 || k > 9)
        return 2;
    one(names[k]);
    if (k == 0)
        return 0;
    char arg[8];
    snprintf(arg, sizeof(arg), "%d", k - 1);
    execl(self, self, "reexec", arg, (char *)NULL);
    perror("execl");
    return 1;
}

static int wait_ok(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Fork `depth` levels; each child starts its own child before recording. */
static int fork_chain(int level, int depth)
{
    static const char *const names[] = {"fork1", "fork2", "fork3", "fork4"};
    pid_t pid = level < depth ? fork() : 0;
    if (pid < 0)
        return 0;
    if (pid > 0 && !wait_ok(pid))
        return 0;
    if (pid == 0 && level < depth)
        exit(fork_chain(level + 1, depth) ? 0 : 1);
    if (level > 0)
        one(names[level - 1]);
    return 1;
}

static int spawn_self(const char *self, const char *what)
{
    pid_t pid;
    char *args[] = {(char *)self, (char *)what, NULL};
    if (posix_spawn(&pid, self, NULL, NULL, args, environ))
        return 0;
    return wait_ok(pid);
}

static int tree(const char *self)
{
    one("p");
    if (!fork_chain(0, 3))
        return 1;
    pid_t pid = vfork();
    if (pid == 0) {
        execl(self, self, "leaf", "vfork", (char *)NULL);
        _exit(1);
    }
    if (pid < 0 || !wait_ok(pid))
        return 1;
    if (!spawn_self(self, "spawnchain"))
        return 1;
    pid = fork();
    if (pid == 0) {
        execl(self, self, "execchain", (char *)NULL);
        _exit(1);
    }
    if (pid < 0 || !wait_ok(pid))
        return 1;
    return 0;
}

static int spawnchain(const char *self)
{
    pid_t pid;
    char *args[] = {(char *)self, "leaf", "spawn2", NULL};
    if (posix_spawn(&pid, self, NULL, NULL, args, environ) || !wait_ok(pid))
        return 1;
    one("spawn1");
    return 0;
}

static int execchain(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        one("exec2");
        exit(0);
    }
    if (pid < 0 || !wait_ok(pid))
        return 1;
    one("exec1");
    return 0;
}

static int late(const char *file)
{
    const char *dir = getenv("ACCELTRACE_SPOOL_DIR");
    pid_t pid = fork();
    if (pid != 0)
        return pid < 0;
    setsid();
    struct stat st;
    for (int i = 0; i < 3000 && dir && stat(dir, &st) == 0; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    int a = act_range_push("late"), b = act_range_pop();
    FILE *f = fopen(file, "w");
    if (f) {
        fprintf(f, "%d %d\n", a, b);
        fclose(f);
    }
    _exit(0);
}

static int bogus(void)
{
    uint64_t id = act_range_start("real");
    act_range_end(id);
    act_range_end(id + 1000000);                  /* never returned */
    act_range_end(UINT64_MAX);                    /* both marks set */
    act_range_end((1ull << 63) | (id + 1000000)); /* "outside", never returned */
    act_range_end((1ull << 62) | (id + 1000000)); /* "dropped", never returned */
    printf("{\"id\": %llu}\n", (unsigned long long)id);
    return 0;
}

static int utf8(void)
{
    /* U+20AC (3 bytes) repeated past any chunk's string limit: the cut
     * cannot fall on a character boundary by chance for every size. */
    size_t n = 200000;
    char *s = malloc(n * 3 + 1);
    if (!s)
        return 1;
    for (size_t i = 0; i < n; i++)
        memcpy(s + 3 * i, "\xe2\x82\xac", 3);
    s[n * 3] = '\0';
    int rc = act_range_push(s) == ACT_OK && act_range_pop() == ACT_OK ? 0 : 1;
    free(s);
    return rc;
}

static tcl cl;

/* Kernels that take a while, at most 4 outstanding per thread: there is
 * always work outstanding, and more arrives while exit() drains. */
static void *enqueue_forever(void *arg)
{
    (void)arg;
    cl_int rc;
    cl_command_queue q = clCreateCommandQueueWithProperties(cl.ctx, cl.dev, NULL, &rc);
    CHECK(rc);
    size_t n = 1 << 22;
    cl_mem buf = clCreateBuffer(cl.ctx, CL_MEM_READ_WRITE, n * sizeof(int), NULL, &rc);
    CHECK(rc);
    cl_kernel k = tcl_kernel(&cl, "inc", buf);
    cl_event ring[4] = {0};
    for (unsigned i = 0;; i = (i + 1) % 4) {
        if (ring[i]) {
            CHECK(clWaitForEvents(1, &ring[i]));
            CHECK(clReleaseEvent(ring[i]));
        }
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, &ring[i]));
        clFlush(q);
    }
    return NULL;
}

static int exitbusy(void)
{
    tcl_setup(&cl, 0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, enqueue_forever, NULL);
    struct timespec ts = {0, 200000000};
    nanosleep(&ts, NULL);
    exit(0);
}

int main(int argc, char **argv)
{
    const char *self = "/proc/self/exe";
    if (argc == 4 && !strcmp(argv[1], "ranges"))
        return ranges(atol(argv[2]), atoi(argv[3]));
    if (argc == 3 && !strcmp(argv[1], "reexec"))
        return reexec(self, atoi(argv[2]));
    if (argc == 2 && !strcmp(argv[1], "tree"))
        return tree(self);
    if (argc == 2 && !strcmp(argv[1], "spawnchain"))
        return spawnchain(self);
    if (argc == 2 && !strcmp(argv[1], "execchain"))
        return execchain();
    if (argc == 3 && !strcmp(argv[1], "leaf")) {
        one(argv[2]);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "late"))
        return late(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "bogus"))
        return bogus();
    if (argc == 2 && !strcmp(argv[1], "utf8"))
        return utf8();
    if (argc == 2 && !strcmp(argv[1], "exitbusy"))
        return exitbusy();
    fprintf(stderr, "usage: edge_workload ranges N STATUS | reexec K | tree | late FILE | bogus "
                    "| utf8 | exitbusy\n");
    return 2;
}
