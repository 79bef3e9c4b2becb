/*
 * ticker.c -- a long-running program for the trigger tests: records one
 * range "tick" every 20 ms for the given number of seconds, then prints how
 * many it recorded and what it sees of SIGUSR2 and SIGCHLD (disposition
 * and mask), so that a test can tell that the launcher's trigger signal
 * never reaches the program or changes what it inherits. With "-" for the
 * number of seconds it ticks until its standard input ends (a test closes
 * it when it is done with the running program, whatever the machine's pace).
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acceltrace.h"

/* Whether standard input has ended (read nothing more: a test holds it). */
static int stdin_ended(void)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    char c;
    return poll(&p, 1, 0) > 0 && read(STDIN_FILENO, &c, 1) <= 0;
}

int main(int argc, char **argv)
{
    int until_eof = argc > 1 && !strcmp(argv[1], "-");
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
    } while (until_eof
                 ? !stdin_ended()
                 : (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 <
                       secs);
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
