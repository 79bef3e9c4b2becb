/*
 * trigger_chan.c -- the channel between `acceltrace run` and `acceltrace
 * trigger`: a SOCK_SEQPACKET Unix socket named trigger.sock in the
 * launcher's spool directory (mkdtemp: 0700, its own).
 *
 * Why a socket and not a signal: a pid proves nothing (it can belong to
 * anyone's `python3 run`, be written in a forged directory, or be reused
 * once a kept spool outlives its launcher), while a socket that only the
 * launcher listens on, in a directory only its user can enter, answers
 * only while that launcher lives, and both ends learn who the other is
 * from the kernel (SO_PEERCRED). A kept or stale spool holds no pid: its
 * socket file, if a killed launcher left one, refuses every connection.
 *
 * Both ends reach the socket through /proc/self/fd/DIRFD/trigger.sock: the
 * directory was opened once (O_NOFOLLOW) and checked on that descriptor,
 * so renaming or replacing a path component afterwards changes nothing,
 * and sockaddr_un's 108 bytes never limit how deep the spool may be.
 */
#include "trigger_chan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Pending connections the launcher holds while it writes a trace; a
 * trigger beyond them is told "busy" at once rather than left waiting. */
#define CHAN_BACKLOG 16

/* The address of trigger.sock in the directory open as dirfd. */
static void chan_addr(int dirfd, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/" ACT_TRIGGER_SOCK, dirfd);
}

int act_trigger_chan_listen(int dirfd)
{
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_un sa;
    chan_addr(dirfd, &sa);
    /* The mode is set on the name right after bind: the directory (0700)
     * already keeps everyone else out of the window between. */
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        fchmodat(dirfd, ACT_TRIGGER_SOCK, 0600, 0) != 0 || listen(fd, CHAN_BACKLOG) != 0) {
        int e = errno;
        close(fd);
        (void)unlinkat(dirfd, ACT_TRIGGER_SOCK, 0);
        return -e;
    }
    return fd;
}

int act_trigger_chan_peer(int fd, uid_t *uid, pid_t *pid)
{
    struct ucred cr;
    socklen_t n = sizeof(cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &n) != 0)
        return -errno;
    *uid = cr.uid;
    *pid = cr.pid;
    return 0;
}

/* The directory must be ours and closed to others, and its socket ours:
 * what `run` makes. 0, or -1 with the reason. */
static int chan_dir_check(int dirfd, const char *name, char *why, size_t len)
{
    struct stat st;
    uid_t me = geteuid();
    if (fstat(dirfd, &st) != 0) {
        snprintf(why, len, "%s: %s", name, strerror(errno));
        return -1;
    }
    if (st.st_uid != me) {
        snprintf(why, len, "%s belongs to uid %u, not to you (uid %u): refused", name,
                 (unsigned)st.st_uid, (unsigned)me);
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(why, len,
                 "%s is open to other users (mode %04o): not a spool directory of "
                 "'acceltrace run'",
                 name, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    if (fstatat(dirfd, ACT_TRIGGER_SOCK, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        snprintf(why, len,
                 errno == ENOENT ? "%s has no trigger channel: its run has ended (a kept spool) "
                                   "or it is not a spool directory of 'acceltrace run'"
                                 : "%s: " ACT_TRIGGER_SOCK ": %s",
                 name, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(st.st_mode) || st.st_uid != me) {
        snprintf(why, len, "%s/" ACT_TRIGGER_SOCK " is not a socket of yours: refused", name);
        return -1;
    }
    return 0;
}

/* The launcher at the other end of fd must run as us (and be `expect`). */
static int chan_peer_check(int fd, const char *name, pid_t expect, char *why, size_t len)
{
    uid_t uid = (uid_t)-1;
    pid_t pid = 0;
    int rc = act_trigger_chan_peer(fd, &uid, &pid);
    if (rc < 0)
        snprintf(why, len, "%s: cannot tell who listens: %s", name, strerror(-rc));
    else if (uid != geteuid())
        snprintf(why, len, "the launcher of %s runs as uid %u, not as you (uid %u): refused", name,
                 (unsigned)uid, (unsigned)geteuid());
    else if (expect > 0 && pid != expect)
        snprintf(why, len, "the channel in %s belongs to process %ld, not to %ld: refused", name,
                 (long)pid, (long)expect);
    else
        return 0;
    return -1;
}

/* Why connect failed, and the exit status that goes with it. */
static int chan_connect_error(int err, const char *name, char *why, size_t len)
{
    if (err == EAGAIN) {
        snprintf(why, len,
                 "busy: the launcher of %s already has %d triggers waiting while it writes a "
                 "trace; try again",
                 name, CHAN_BACKLOG);
        return ACT_TRIGGER_BUSY;
    }
    if (err == ECONNREFUSED) {
        snprintf(why, len, "nobody listens in %s: its launcher has ended (a stale spool)", name);
        return 2;
    }
    snprintf(why, len, "%s: cannot reach the launcher: %s", name, strerror(err));
    return 1;
}

int act_trigger_chan_connect(int dirfd, const char *name, pid_t expect, char *why, size_t len,
                             int *status)
{
    *status = 2;
    if (chan_dir_check(dirfd, name, why, len) != 0)
        return -1;
    /* Non-blocking: a full queue is "busy" at once (EAGAIN), not a wait. */
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *status = 1;
        snprintf(why, len, "socket: %s", strerror(errno));
        return -1;
    }
    struct sockaddr_un sa;
    chan_addr(dirfd, &sa);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        *status = chan_connect_error(errno, name, why, len);
        close(fd);
        return -1;
    }
    if (chan_peer_check(fd, name, expect, why, len) != 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int act_trigger_chan_send(int fd, const char *msg)
{
    ssize_t n;
    while ((n = send(fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_EOR)) < 0 && errno == EINTR)
        ;
    return n < 0 ? -errno : 0;
}

ssize_t act_trigger_chan_recv(int fd, char *buf, size_t len)
{
    ssize_t n;
    while ((n = recv(fd, buf, len - 1, 0)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return n;
}
