/*
 * trigger.c -- the launcher's side of `acceltrace trigger`: traces on
 * demand from a running `acceltrace run`.
 *
 * Before the program starts, run opens its spool directory (made by
 * mkdtemp: 0700, its own) and listens on trigger.sock inside it
 * (trigger_chan.c). It then waits for the program with ppoll on that
 * socket, SIGCHLD and SIGUSR2 blocked everywhere else, so that each
 * request is seen exactly once and at once. A request is served only from
 * a process of the launcher's own uid (SO_PEERCRED) that sends the
 * expected message; run writes a trace of what the spool holds at that
 * moment while the program goes on (the reader takes only published
 * records, so a live spool is safe to read) and the answer names it, or
 * says why it was not written. Requests are served one at a time, in
 * order; the ones queued beyond the socket's backlog are told "busy" by
 * the kernel at once (trigger_chan.c).
 *
 * SIGUSR2 sent to the launcher by hand (kill -USR2) is a request too,
 * without an answer; the program's own handlers are not touched. When the
 * program has ended the socket is closed and removed, so a kept spool
 * holds neither a channel nor a pid.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trigger.h"
#include "trigger_chan.h"

/* How long a connected trigger has to send its request: a client of our
 * own uid that says nothing holds the launcher no longer than this. */
#define REQUEST_TIMEOUT_S 2

static volatile sig_atomic_t usr2_pending; /* SIGUSR2s not yet served */

static struct {
    int dir;  /* the spool directory (O_PATH), -1: not armed */
    int sock; /* listening, -1: none */
    unsigned served, written, failed;
} chan = {-1, -1, 0, 0, 0};

static void on_usr2(int sig)
{
    (void)sig;
    usr2_pending++;
}

static void on_chld(int sig)
{
    (void)sig; /* only wakes ppoll */
}

/* The directory run made, opened once; the socket in it. 0 or -errno. */
static int chan_open(const char *spool_dir)
{
    chan.dir = open(spool_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (chan.dir < 0)
        return -errno;
    int fd = act_trigger_chan_listen(chan.dir);
    if (fd < 0)
        return fd;
    chan.sock = fd;
    return 0;
}

int act_trigger_arm(const char *spool_dir, sigset_t *saved)
{
    int rc = chan_open(spool_dir);
    struct sigaction sa = {.sa_handler = on_usr2};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, saved);
    return rc;
}

void act_trigger_child_reset(const sigset_t *saved)
{
    signal(SIGUSR2, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_SETMASK, saved, NULL);
}

/* A connected client may ask: our uid, and the request within the time
 * limit. Anything else is closed unanswered, or told why. */
static int client_admit(int c)
{
    uid_t uid = (uid_t)-1;
    pid_t pid = 0;
    char msg[128];
    if (act_trigger_chan_peer(c, &uid, &pid) != 0)
        return 0;
    if (uid != geteuid()) {
        snprintf(msg, sizeof(msg), "refused this launcher runs as uid %u, you as uid %u",
                 (unsigned)geteuid(), (unsigned)uid);
        (void)act_trigger_chan_send(c, msg);
        return 0;
    }
    struct timeval tv = {.tv_sec = REQUEST_TIMEOUT_S};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    ssize_t n = act_trigger_chan_recv(c, msg, sizeof(msg));
    return n > 0 && !strcmp(msg, ACT_TRIGGER_REQUEST);
}

/* One request: from client c (its answer sent), or from SIGUSR2 (c < 0). */
static void trigger_serve(int c, act_trigger_fn fn, void *ctx)
{
    if (c >= 0 && !client_admit(c))
        return;
    unsigned n = ++chan.served;
    char text[ACT_TRIGGER_ANSWER_MAX - 32] = "";
    act_trigger_outcome r = fn(ctx, n, text, sizeof(text));
    chan.written += r == ACT_TRIGGER_WRITTEN;
    chan.failed += r == ACT_TRIGGER_FAILED;
    if (c < 0)
        return;
    char answer[ACT_TRIGGER_ANSWER_MAX];
    static const char *const verbs[] = {"written", "opened", "failed"};
    snprintf(answer, sizeof(answer), "%s %u %s", verbs[r], n, text);
    (void)act_trigger_chan_send(c, answer); /* a trigger gone meanwhile: no matter */
}

/* The next pending connection, or -1. A listening socket that fails for
 * another reason than "none pending" is closed: triggers are then refused
 * ("nobody listens"), never left spinning the launcher. */
static int chan_accept(void)
{
    if (chan.sock < 0)
        return -1;
    int c = accept4(chan.sock, NULL, NULL, SOCK_CLOEXEC);
    if (c >= 0 || errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
        return c;
    fprintf(stderr, "acceltrace: run: the trigger channel failed (%s): triggers are off\n",
            strerror(errno));
    close(chan.sock);
    chan.sock = -1;
    (void)unlinkat(chan.dir, ACT_TRIGGER_SOCK, 0);
    return -1;
}

int act_trigger_wait(pid_t child, const sigset_t *saved, act_trigger_fn fn, void *ctx)
{
    sigset_t waitmask = *saved;
    sigdelset(&waitmask, SIGUSR2);
    sigdelset(&waitmask, SIGCHLD);
    for (;;) {
        /* WNOWAIT: the caller reaps (the pid stays ours until then). One
         * request per turn: the program's end is seen between any two. */
        siginfo_t si = {0};
        if (waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG | WNOWAIT) != 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (si.si_pid == child)
            return 0;
        if (usr2_pending) {
            usr2_pending--;
            trigger_serve(-1, fn, ctx);
            continue;
        }
        int c = chan_accept();
        if (c >= 0) {
            trigger_serve(c, fn, ctx);
            close(c);
            continue;
        }
        struct pollfd p = {.fd = chan.sock, .events = POLLIN};
        /* Returns on a connection, SIGCHLD, SIGUSR2 or a forwarded signal. */
        if (ppoll(&p, 1, NULL, &waitmask) < 0 && errno != EINTR)
            return -1;
    }
}

void act_trigger_disarm(FILE *log)
{
    /* Closing the socket resets the connections still queued: their
     * triggers learn that the run ended before they were served. */
    if (chan.sock >= 0) {
        close(chan.sock);
        (void)unlinkat(chan.dir, ACT_TRIGGER_SOCK, 0);
    }
    if (chan.dir >= 0)
        close(chan.dir);
    chan.sock = chan.dir = -1;
    if (log && chan.served)
        fprintf(log, "acceltrace: run: %u trigger%s served: %u trace%s written, %u failed\n",
                chan.served, chan.served == 1 ? "" : "s", chan.written,
                chan.written == 1 ? "" : "s", chan.failed);
}

void act_trigger_name(const char *out, unsigned n, char *buf, size_t len)
{
    /* "t.json" -> "t.trigger-N.json", "t.json.gz" -> "t.trigger-N.json.gz" */
    const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
    const char *dot = strstr(base, ".json");
    size_t stem = dot ? (size_t)(dot - out) : strlen(out);
    snprintf(buf, len, "%.*s.trigger-%u%s", (int)stem, out, n, out + stem);
}
