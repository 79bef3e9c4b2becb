/*
 * trigger_chan.h -- the channel between `acceltrace run` and `acceltrace
 * trigger` (trigger_chan.c): a Unix socket in the launcher's private spool
 * directory, peer credentials checked on both ends. Nothing is ever
 * signalled: a request is a message to a process proven to be our
 * launcher, and its answer names the trace written.
 */
#ifndef ACT_TRIGGER_CHAN_H
#define ACT_TRIGGER_CHAN_H

#include <stddef.h>
#include <sys/types.h>

/* The socket's name inside the spool directory. */
#define ACT_TRIGGER_SOCK "trigger.sock"
/* What a trigger sends, once it has verified the launcher. */
#define ACT_TRIGGER_REQUEST "acceltrace-trigger 1"
/* Room for an answer: "written N PATH" and the like. */
#define ACT_TRIGGER_ANSWER_MAX 4352

/* Exit statuses of `acceltrace trigger` beyond 0 (a trace was written or
 * the capture window opened), 1 (the launcher could not write it) and 2
 * (a usage error or a refusal). */
#define ACT_TRIGGER_BUSY 75 /* EX_TEMPFAIL: the launcher's queue is full */

/* Launcher: a listening socket in the directory dirfd (non-blocking,
 * close-on-exec, mode 0600); the fd, or -errno. */
int act_trigger_chan_listen(int dirfd);
/* The uid and pid of the process at the other end of socket fd (for a
 * listening socket: the one that listened). 0, or -errno. */
int act_trigger_chan_peer(int fd, uid_t *uid, pid_t *pid);
/* Trigger: connect to the launcher whose spool directory is dirfd (named
 * `name` in messages). The directory must be ours and private, the socket
 * ours, the peer run as our effective uid and, when expect > 0, be process
 * `expect`. The connected socket, or -1 with one line in why and the exit
 * status in *status (2 refused, ACT_TRIGGER_BUSY, 1 otherwise). */
int act_trigger_chan_connect(int dirfd, const char *name, pid_t expect, char *why, size_t len,
                             int *status);
/* One message each way (SOCK_SEQPACKET keeps them whole). send: 0 or
 * -errno, never SIGPIPE. recv: its length (NUL-terminated in buf), 0 at
 * the end, or -errno. */
int act_trigger_chan_send(int fd, const char *msg);
ssize_t act_trigger_chan_recv(int fd, char *buf, size_t len);

#endif
