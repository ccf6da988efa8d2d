/* SPDX-License-Identifier: MIT */
/*
 * fdwhat.h — what a traced process's epoll token stands for: the fd it registered under that
 * token (epoll_event.data, Tokio's token) and what that fd is (TCP listener, connection, UDP,
 * unix socket, pipe, file), read from /proc/PID. User space only, no BPF.
 *
 * Sources: /proc/PID/fd/N links ("anon_inode:[eventpoll]", "socket:[INO]", "pipe:[INO]", a
 * path), /proc/PID/fdinfo/EPFD ("tfd: FD events: HEX data: HEX ..." per registration), the
 * socket's protocol name (xattr system.sockprotoname of /proc/PID/fd/N: "TCP", "TCPv6",
 * "UDP", "UDPv6", "UNIX…"), then that protocol's table in /proc/PID/net (the process's own
 * network namespace): tcp, tcp6, udp, udp6, unix, looked up by inode.
 *
 * Lifetime. fdw_new opens the directory /proc/PID and every later read goes through it, so
 * once the process exits (a zombie already) fdw_refresh and fdw_describe fail with -ESRCH,
 * even if its PID is reused; fdw_token answers from the last successful refresh.
 *
 * Trust. What the process names (file paths, unix socket paths, abstract names) comes out
 * escaped by fdw_escape. In /proc/net/unix a path holding a newline continues on the next
 * line: a line that is not an entry is taken as the continuation of the previous path, and a
 * path may forge a whole entry line — so an inode listed twice in the unix table is reported
 * without a name ("(name ambiguous)"). Every line is read through a bounded buffer; tables
 * stop at FDW_TABLE_MAX entries, the token map at FDW_TOKENS_MAX.
 *
 * Freshness. Tokens are as of the last fdw_refresh (the caller's pace: at most every 100 ms
 * is the intent; each refresh reads every fd link and every epoll fd's fdinfo). A socket
 * table is read on the first description that needs it after a refresh, and read again when
 * an inode is missing from it (a socket bound or connected since) and the copy is 100 ms old,
 * or younger up to 4 times per refresh; a socket's state is as of the copy.
 *
 * Errors: negative errno; nothing is printed.
 */
#ifndef TET_FDWHAT_H
#define TET_FDWHAT_H
#include <stddef.h>
#include <stdint.h>

#define FDW_TOKENS_MAX (1u << 20)   /* registrations kept over all epoll fds */
#define FDW_TABLE_MAX (1u << 20)    /* entries kept of one socket table */
#define FDW_DESC_MAX 512            /* a buffer for fdw_describe: every TCP/UDP description and
				     * any unix name or path of up to ~120 bytes fit whole */

struct fdw;

enum fdw_kind {
	FDW_UNKNOWN,    /* not described (error) */
	FDW_LISTENER,   /* TCP socket in LISTEN */
	FDW_CONNECTION, /* TCP socket with a peer, any state but LISTEN */
	FDW_UDP,        /* UDP socket, connected or not */
	FDW_UNIX,       /* unix socket (listening ones too: " (listening)" in the text) */
	FDW_PIPE,       /* pipe:[INO] (or a FIFO opened by path: FDW_FILE) */
	FDW_FILE,       /* a path: regular file, device, FIFO, directory */
	FDW_OTHER,      /* anon_inode:[…], a socket of another kind or not found, TCP without peer */
};

/* A cache for process `pid`: opens /proc/PID (-ESRCH: no such process; -EACCES…), reads
 * nothing else yet. *wp is NULL on error. */
int fdw_new(uint32_t pid, struct fdw **wp);
/* The same from a directory laid out as /proc/PID is (stat, fd/, fdinfo/, net/): the fuzz
 * target's made-up processes (tests/fuzz/fuzz_fdwhat.c). */
int fdw_new_dir(const char *dir, uint32_t pid, struct fdw **wp);
void fdw_free(struct fdw *w);

/* Reads the epoll registrations again (every epoll fd of the process) and forgets the socket
 * tables. 0, -ESRCH when the process is gone (the previous tokens stay), -ENOMEM. */
int fdw_refresh(struct fdw *w);

/* The fd registered under `token`, and its epoll events mask (events may be NULL). Of several
 * registrations under one token the one in the lowest-numbered epoll fd wins. 0 or -ENOENT
 * (never seen by a refresh). */
int fdw_token(const struct fdw *w, uint64_t token, int *fd, uint32_t *events);

/* What fd `fd` is: its kind, and into buf (n bytes, NUL-terminated whenever n > 0, cut at a
 * whole character) one of
 *   TCP listener 127.0.0.1:40123          TCP connection [::1]:80 <-> [::1]:51234 (ESTABLISHED)
 *   TCP socket 0.0.0.0:0 (CLOSE)          UDP 0.0.0.0:5353   UDP 10.0.0.1:4000 <-> 10.0.0.2:53
 *   unix socket /run/x.sock (listening)   unix socket @abstract   unix socket (unnamed)
 *   unix socket (name ambiguous)          pipe:[1234]   /path/as/readlink/gives (deleted)
 *   anon_inode:[eventfd]                  socket:[INO] (not in the tables: unbound, netlink,
 *                                         another network namespace's)
 * Returns the kind (an enum fdw_kind > 0), or -ENOENT (no such fd), -ESRCH (process gone),
 * -EACCES, -ENOMEM, -EINVAL (fd < 0); on error buf is "". */
int fdw_describe(struct fdw *w, int fd, char *buf, size_t n);

/* "listener", "connection", "udp", "unix", "pipe", "file", "other", "unknown". */
const char *fdw_kind_name(enum fdw_kind k);

/* Bytes [s, s+len) into buf (n bytes, NUL-terminated when n > 0) with every byte that is not
 * printable ASCII or part of well-formed UTF-8 written as \xNN; backslash too, and the C1
 * controls and bidirectional overrides (U+202A–U+202E, U+2066–U+2069) even when well formed.
 * Stops before a character that does not fit whole. Returns the bytes of s consumed. */
size_t fdw_escape(char *buf, size_t n, const void *s, size_t len);

#endif
