/*
 * opencl_enqueue.c -- time added per intercepted clEnqueueNDRangeKernel on
 * PoCL, traced against untraced in the same run.
 *
 * The queue is held back by a user event, so every call measures pure
 * enqueue work (nothing runs until the batch is released). The untraced
 * baseline runs in this process; the traced subjects run in children this
 * program re-executes with the layer (OPENCL_LAYERS) or the preload shim
 * (LD_PRELOAD) and a private spool directory. Parent and children take
 * turns batch by batch over pipes, so a noisy neighbour slows both alike.
 * Reports the median per-enqueue time over repetitions, p10..p90, and the
 * added time against the baseline. Never fails on a missed target.
 *
 * usage: act_bench_opencl_enqueue [--quick] [--reps=N]
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 2000

typedef struct cl_state {
    cl_context ctx;
    cl_command_queue q;
    cl_kernel k;
} cl_state;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "opencl_enqueue: %s failed (%d)\n", what, rc);
    exit(1);
}

static void cl_setup(cl_state *s)
{
    static const char *src = "__kernel void nop(__global int *a) { }\n";
    cl_platform_id plat;
    cl_device_id dev;
    cl_int rc;
    if ((rc = clGetPlatformIDs(1, &plat, NULL)) != CL_SUCCESS)
        die("clGetPlatformIDs", rc);
    if ((rc = clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL)) != CL_SUCCESS)
        die("clGetDeviceIDs", rc);
    s->ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    if (rc != CL_SUCCESS)
        die("clCreateContext", rc);
    s->q = clCreateCommandQueueWithProperties(s->ctx, dev, NULL, &rc);
    if (rc != CL_SUCCESS)
        die("clCreateCommandQueueWithProperties", rc);
    cl_program p = clCreateProgramWithSource(s->ctx, 1, &src, NULL, &rc);
    if (rc != CL_SUCCESS || (rc = clBuildProgram(p, 1, &dev, "", NULL, NULL)) != CL_SUCCESS)
        die("building the kernel", rc);
    s->k = clCreateKernel(p, "nop", &rc);
    if (rc != CL_SUCCESS)
        die("clCreateKernel", rc);
    cl_mem m = clCreateBuffer(s->ctx, CL_MEM_READ_WRITE, 64 * sizeof(int), NULL, &rc);
    if (rc != CL_SUCCESS || (rc = clSetKernelArg(s->k, 0, sizeof m, &m)) != CL_SUCCESS)
        die("kernel argument", rc);
    clReleaseProgram(p);
}

/* One batch of held-back enqueues; returns ns per enqueue. */
static double cl_batch(cl_state *s, int n)
{
    cl_int rc;
    cl_event gate = clCreateUserEvent(s->ctx, &rc);
    if (rc != CL_SUCCESS)
        die("clCreateUserEvent", rc);
    size_t gws = 64;
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++)
        if ((rc = clEnqueueNDRangeKernel(s->q, s->k, 1, NULL, &gws, NULL, 1, &gate, NULL)) !=
            CL_SUCCESS)
            die("clEnqueueNDRangeKernel", rc);
    uint64_t t1 = now_ns();
    clSetUserEventStatus(gate, CL_COMPLETE);
    clFinish(s->q);
    clReleaseEvent(gate);
    return (double)(t1 - t0) / n;
}

/* Child: a batch per line read from stdin, its result written to stdout. */
static int child_main(int n)
{
    cl_state s;
    cl_setup(&s);
    cl_batch(&s, n); /* warm-up */
    char line[16];
    while (fgets(line, sizeof line, stdin)) {
        printf("%.3f\n", cl_batch(&s, n));
        fflush(stdout);
    }
    return 0;
}

typedef struct subject {
    const char *name;
    const char *var; /* OPENCL_LAYERS or LD_PRELOAD */
    const char *lib;
    pid_t pid;
    FILE *to, *from;
    double *v;
} subject;

static int lib_path(char *out, size_t len, const char *name)
{
    const char *env = getenv("ACCELTRACE_LIBRARY_DIR");
    char exe[PATH_MAX];
    if (env && *env) {
        if ((size_t)snprintf(out, len, "%s/%s", env, name) >= len)
            return -1;
        return access(out, R_OK);
    }
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    if ((size_t)snprintf(out, len, "%s/../lib/%s", exe, name) >= len)
        return -1;
    return access(out, R_OK);
}

static int subject_start(subject *s, const char *spool, int n)
{
    int in[2], out[2];
    /* Close-on-exec: a later child must not hold this child's stdin open
     * (it would never see EOF at the end). */
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
        return -1;
    s->pid = fork();
    if (s->pid < 0)
        return -1;
    if (s->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        setenv("ACCELTRACE_SPOOL_DIR", spool, 1);
        setenv(s->var, s->lib, 1);
        char nbuf[32];
        snprintf(nbuf, sizeof nbuf, "%d", n);
        execl("/proc/self/exe", "act_bench_opencl_enqueue", "--child", nbuf, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    s->to = fdopen(in[1], "w");
    s->from = fdopen(out[0], "r");
    return s->to && s->from ? 0 : -1;
}

static double subject_batch(subject *s)
{
    char line[64];
    fputs("go\n", s->to);
    fflush(s->to);
    if (!fgets(line, sizeof line, s->from))
        return NAN;
    return atof(line);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[(int)(p * (n - 1) + 0.5)];
}

static void rmdir_flat(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "opencl_enqueue: could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    int quick = 0, reps = 15;
    if (argc == 3 && !strcmp(argv[1], "--child"))
        return child_main(atoi(argv[2]));
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strncmp(argv[i], "--reps=", 7) && atoi(argv[i] + 7) > 0)
            reps = atoi(argv[i] + 7);
        else {
            fprintf(stderr, "usage: %s [--quick] [--reps=N]\n", argv[0]);
            return 2;
        }
    }
    int n = quick ? 50 : BATCH;
    if (quick)
        reps = 2;

    char layer[PATH_MAX], preload[PATH_MAX];
    if (lib_path(layer, sizeof layer, "libacceltrace.so") ||
        lib_path(preload, sizeof preload, "libacceltrace_preload.so")) {
        fprintf(stderr, "opencl_enqueue: libacceltrace not found beside the benchmark "
                        "(set ACCELTRACE_LIBRARY_DIR)\n");
        return 1;
    }
    char spool[] = "/tmp/act-bench-ocl-XXXXXX";
    if (!mkdtemp(spool)) {
        fprintf(stderr, "opencl_enqueue: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    subject subj[2] = {{"layer", "OPENCL_LAYERS", layer, 0, NULL, NULL, NULL},
                       {"preload", "LD_PRELOAD", preload, 0, NULL, NULL, NULL}};
    double *base = calloc((size_t)reps, sizeof *base);
    for (int j = 0; j < 2; j++) {
        subj[j].v = calloc((size_t)reps, sizeof(double));
        if (subject_start(&subj[j], spool, n) != 0) {
            fprintf(stderr, "opencl_enqueue: cannot start the %s child\n", subj[j].name);
            return 1;
        }
    }
    cl_state s;
    cl_setup(&s);
    cl_batch(&s, n);
    for (int r = 0; r < reps; r++) {
        base[r] = cl_batch(&s, n);
        for (int j = 0; j < 2; j++)
            subj[j].v[r] = subject_batch(&subj[j]);
    }
    for (int j = 0; j < 2; j++) {
        fclose(subj[j].to);
        fclose(subj[j].from);
        waitpid(subj[j].pid, NULL, 0);
    }
    rmdir_flat(spool);

    /* Added time: the median of per-repetition differences (subject minus
     * the baseline batch run just before it), which cancels slow phases of
     * the machine better than a difference of medians. */
    double *diff = calloc((size_t)reps, sizeof *diff);
    double bmed;
    {
        double *b = calloc((size_t)reps, sizeof *b);
        memcpy(b, base, (size_t)reps * sizeof *b);
        bmed = pct(b, reps, 0.5);
        printf("RESULT\topencl_enqueue\tuntraced_enqueue\t%.1f\tns\t-\t-\t%.1f..%.1f\t-\tinfo\n",
               bmed, pct(b, reps, 0.1), pct(b, reps, 0.9));
        free(b);
    }
    for (int j = 0; j < 2; j++) {
        double *v = subj[j].v;
        if (isnan(v[0])) {
            printf("RESULT\topencl_enqueue\t%s_enqueue\t-\tns\t-\t-\t-\t-\tskip\n", subj[j].name);
            continue;
        }
        for (int r = 0; r < reps; r++)
            diff[r] = v[r] - base[r];
        double added = pct(diff, reps, 0.5), d10 = pct(diff, reps, 0.1), d90 = pct(diff, reps, 0.9);
        double med = pct(v, reps, 0.5);
        printf("RESULT\topencl_enqueue\t%s_enqueue\t%.1f\tns\t%.1f\t%.2f\t%.1f..%.1f\t-\tinfo\n",
               subj[j].name, med, bmed, med / bmed, pct(v, reps, 0.1), pct(v, reps, 0.9));
        printf("RESULT\topencl_enqueue\t%s_added\t%.1f\tns\t%.1f\t-\t%.1f..%.1f\t< 1000 ns\t%s\n",
               subj[j].name, added, bmed, d10, d90,
               quick ? "info" : (added < 1000 ? "pass" : "SHORT"));
    }
    free(diff);
    return 0;
}
