/*
 * bench_launch_wait.c -- what a launch-and-wait loop (clpeak's
 * --kernel-latency: enqueue one small kernel, clFinish, read two
 * profiling times, release the event) pays for work added on its
 * launching thread, the tracer's against the program's own.
 *
 * On a VM such a loop has a cliff: once the other vCPU is busy, a few
 * hundred nanoseconds more per iteration, whoever spends them, cost far
 * more than themselves in wall time (the hand-offs between the program's
 * thread and the runtime's worker stop being cheap). So a tracer's
 * overhead on this loop is only meaningful beside what the same loop
 * pays for the program's *own* work of known size. Arms, each a fresh
 * child, rotated repetition by repetition:
 *   base      untraced;
 *   own N ns  untraced, spinning N ns (N = 100, 200, 300, 600) on the
 *             launching thread after each clFinish;
 *   traced    under `acceltrace run` (streaming, as a user runs it).
 * Each child times its own loop (start-up, build and trace writing are
 * not in it); every arm is reported as the median of its paired ratios
 * to base, with p10..p90, and the traced arm also as the program's own
 * work it costs as much as (interpolated on the own-work medians).
 * --quick: one round of 2 000 iterations, no verdict (what CI runs).
 */
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#ifndef ACT_BENCH_TOOL
#error "ACT_BENCH_TOOL (path of the acceltrace tool) must be defined by the build"
#endif

#define BLW_ARMS 6
static const long blw_spin[BLW_ARMS] = {0, 100, 200, 300, 600, -1}; /* -1: traced */
static const char *blw_src = "__kernel void k(__global const float *a, __global float *b)"
                             " { size_t i = get_global_id(0); b[i] = a[i] + 1.0f; }";

/* ---- child: the loop ------------------------------------------------------ */

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cl_int e_ = (x);                                                                           \
        if (e_ != CL_SUCCESS) {                                                                    \
            fprintf(stderr, "bench_launch_wait: %s failed: %d\n", #x, e_);                         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void spin_ns(long ns)
{
    uint64_t until = bench_now_ns() + (uint64_t)ns;
    while (bench_now_ns() < until)
        ;
}

/* clpeak's sizes: work-groups of the device's largest size, two of them. */
static int child(long iters, long spin)
{
    cl_platform_id p;
    cl_device_id d;
    cl_int e;
    CHECK(clGetPlatformIDs(1, &p, NULL));
    CHECK(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL));
    size_t local = 0;
    CHECK(clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof local, &local, NULL));
    local = local > 4096 ? 4096 : local;
    size_t global = 2 * local;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
    CHECK(e);
    const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, props, &e);
    CHECK(e);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &blw_src, NULL, &e);
    CHECK(e);
    CHECK(clBuildProgram(prog, 1, &d, NULL, NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "k", &e);
    CHECK(e);
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, global * sizeof(float), NULL, &e);
    CHECK(e);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, global * sizeof(float), NULL, &e);
    CHECK(e);
    CHECK(clSetKernelArg(k, 0, sizeof a, &a));
    CHECK(clSetKernelArg(k, 1, sizeof b, &b));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL)); /* warm */
    CHECK(clFinish(q));
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        cl_event ev;
        cl_ulong queued, end;
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, &ev));
        CHECK(clFinish(q));
        CHECK(
            clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof queued, &queued, NULL));
        CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL));
        CHECK(clReleaseEvent(ev));
        if (spin > 0)
            spin_ns(spin);
    }
    uint64_t t1 = bench_now_ns();
    printf("loop_ns %llu\n", (unsigned long long)(t1 - t0));
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}

/* ---- parent ----------------------------------------------------------------- */

/* One arm's child; its loop time in ns, or NAN (said on stderr). */
static double run_arm(const char *self, long iters, long spin, const char *trace)
{
    char n[32], s[32], cmd[8192];
    snprintf(n, sizeof n, "%ld", iters);
    snprintf(s, sizeof s, "%ld", spin > 0 ? spin : 0);
    if (spin < 0)
        snprintf(cmd, sizeof cmd,
                 "'%s' run --no-summary -f -o '%s' -- '%s' --child %s 0 2>/dev/null",
                 ACT_BENCH_TOOL, trace, self, n);
    else
        snprintf(cmd, sizeof cmd, "'%s' --child %s %s", self, n, s);
    FILE *f = popen(cmd, "r");
    if (!f)
        return NAN;
    unsigned long long ns = 0;
    char line[256];
    int got = 0;
    while (fgets(line, sizeof line, f))
        got |= sscanf(line, "loop_ns %llu", &ns) == 1;
    int st = pclose(f);
    if (!got || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bench_launch_wait: %s: no loop time (status %d)\n", cmd, st);
        return NAN;
    }
    return (double)ns;
}

/* The program's own ns per iteration that cost as much as ratio `r`, by
 * linear interpolation on the own-work arms' medians (NAN past 600 ns or
 * where the curve does not rise). */
static double own_equivalent(double r, const double med[BLW_ARMS])
{
    for (int i = 0; i + 1 < BLW_ARMS - 1; i++) {
        double lo = med[i], hi = med[i + 1];
        if (r >= lo && r <= hi && hi > lo)
            return (double)blw_spin[i] +
                   (r - lo) / (hi - lo) * (double)(blw_spin[i + 1] - blw_spin[i]);
    }
    return r < med[0] ? 0 : NAN;
}

static void report(double *ratio[BLW_ARMS], int reps, double base_ms, int quick)
{
    double med[BLW_ARMS];
    med[0] = 1.0;
    for (int a = 1; a < BLW_ARMS; a++) {
        bench_stat st = bench_stat_of(ratio[a], (size_t)reps);
        med[a] = st.median;
        char metric[128];
        if (blw_spin[a] > 0)
            snprintf(metric, sizeof metric, "loop with the program's own %ld ns per iteration",
                     blw_spin[a]);
        else
            snprintf(metric, sizeof metric, "loop traced (acceltrace run)");
        bench_result("launch_wait", metric, (st.median - 1) * 100, "%", base_ms, st.median, st, "-",
                     "info");
    }
    double eq = own_equivalent(med[BLW_ARMS - 1], med);
    char v[64];
    if (quick)
        snprintf(v, sizeof v, "(quick: no figure)");
    else if (isnan(eq))
        snprintf(v, sizeof v, "more than 600 ns");
    else
        snprintf(v, sizeof v, "%.0f ns", eq);
    printf("RESULT\tlaunch_wait\ttracing costs the loop as much as the program's own work of\t%s\t"
           "per iteration\t-\t-\t-\t-\tinfo\n",
           v);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--child") == 0)
        return child(atol(argv[2]), atol(argv[3]));
    bench_opts o;
    if (bench_parse_args(argc, argv, &o, "usage: act_bench_launch_wait [--quick] [--reps=N]") != 0)
        return 2;
    int reps = o.quick ? 1 : o.reps > 0 ? o.reps : 21;
    long iters = o.quick ? 2000 : 20000;
    char dir[4096], trace[4200];
    if (bench_tmpdir(dir, sizeof dir, "launch-wait") != 0)
        return 1;
    snprintf(trace, sizeof trace, "%s/trace.json", dir);
    double *ratio[BLW_ARMS], *base = calloc((size_t)reps, sizeof(double));
    for (int a = 0; a < BLW_ARMS; a++)
        ratio[a] = calloc((size_t)reps, sizeof(double));
    double t[BLW_ARMS];
    int ok = 1;
    for (int r = 0; r < reps && ok; r++) {
        /* Rotate the order, so no arm always runs on a warmer machine. */
        for (int i = 0; i < BLW_ARMS && ok; i++) {
            int a = (i + r) % BLW_ARMS;
            t[a] = run_arm(argv[0], iters, blw_spin[a], trace);
            ok = !isnan(t[a]);
        }
        for (int a = 0; ok && a < BLW_ARMS; a++)
            ratio[a][r] = t[a] / t[0];
        base[r] = t[0] / 1e6;
    }
    if (ok) {
        bench_stat b = bench_stat_of(base, (size_t)reps);
        report(ratio, reps, b.median, o.quick);
        printf("# launch_wait: %d rounds of %ld iterations, %d arms rotated; base loop %.1f ms "
               "(%.2f us an iteration)\n",
               reps, iters, BLW_ARMS, b.median, b.median * 1e3 / (double)iters);
    } else {
        bench_skip("launch_wait", "launch-and-wait loop", "a child failed (see stderr)");
    }
    bench_rmdir_flat(dir);
    for (int a = 0; a < BLW_ARMS; a++)
        free(ratio[a]);
    free(base);
    return 0;
}
