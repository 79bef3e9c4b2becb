/*
 * ticker.c -- a long-running program for the trigger tests: records one
 * range "tick" every 20 ms for the given number of seconds, then prints how
 * many it recorded and what it sees of SIGUSR2 and SIGCHLD (disposition
 * and mask), so that a test can tell that the launcher's trigger signal
 * never reaches the program or changes what it inherits.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "acceltrace.h"

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 3.0;
    struct timespec t0, now, nap = {0, 20 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long ticks = 0;
    do {
        act_range_push("tick");
        nanosleep(&nap, NULL);
        act_range_pop();
        ticks++;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 < secs);
    sigset_t m;
    sigprocmask(SIG_BLOCK, NULL, &m);
    struct sigaction u, c;
    sigaction(SIGUSR2, NULL, &u);
    sigaction(SIGCHLD, NULL, &c);
    printf("ticks %ld\n", ticks);
    printf("SIGUSR2 blocked %d default %d; SIGCHLD blocked %d default %d\n",
           sigismember(&m, SIGUSR2), u.sa_handler == SIG_DFL, sigismember(&m, SIGCHLD),
           c.sa_handler == SIG_DFL);
    return 0;
}
