// SPDX-License-Identifier: MIT
/*
 * fdwhat_test — unit tests of epoll tokens → fds → descriptions from /proc (tracer/decode/fdwhat.c),
 * on real fds this process (and a child) creates; the expected addresses come from
 * getsockname/getpeername/fstat, an observer independent of /proc:
 *   escape   fdw_escape: printable ASCII and well-formed UTF-8 as is; control bytes, backslash,
 *            ill-formed UTF-8 (a lone 0xff, an overlong, a surrogate, a cut sequence), C1
 *            controls and bidirectional overrides as \xNN; never a character split by the bound.
 *   tokens   every registration comes back by its token with its fd and events mask, a 64-bit
 *            token too; of a token registered in two epoll fds the lower-numbered one wins; a
 *            token only in the second epoll fd is found; an unknown token and the token of a
 *            socket closed since give -ENOENT.
 *   describe TCP listener (127.0.0.1 and [::1] when IPv6 is there), both ends of an accepted
 *            connection (ESTABLISHED, addresses in order), UDP bound and connected, an unbound
 *            TCP socket (in no table: socket:[INO]), a unix socket bound to a hostile
 *            path (newline, quote, 0xff: escaped, listening), an unnamed unix socket, a unix
 *            socket another socket's abstract name forges an entry for ("name ambiguous"), pipe,
 *            regular file (not registrable with epoll: described by fd), eventfd, the epoll fd;
 *            closed fd → -ENOENT, fd -1 → -EINVAL, "" in the buffer either way.
 *   bounds   a buffer of 10, 1 or 0 bytes: a NUL-terminated prefix, nothing written past it.
 *   many     600 registrations (dups of one socket): fdinfo read across many buffer refills,
 *            every token back with its own fd.
 *   child    another process's listener through its token; once it exits, as a zombie and
 *            reaped, fdw_refresh and fdw_describe give -ESRCH; a PID that cannot exist:
 *            fdw_new -ESRCH.
 * Prints "ok - …" / "not ok - …"; exits 1 on a failure. Run under valgrind by t_fdwhat_unit.sh.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdwhat.h"

#include "check.h"

#define EV (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)   /* what mio registers */
#define EV_SEEN (EV | EPOLLERR | EPOLLHUP)               /* epoll_ctl always adds these two */
#define HOSTILE "s\n\"\xff.sock"
#define HOSTILE_ESC "s\\x0a\"\\xff.sock"

enum tok {
	T_LIS = 0x1001, T_CLI, T_LIS6, T_UDP, T_UNIX, T_PAIR, T_FORGED, T_PIPE, T_EFD, T_GONE,
	T_EP2_ONLY,
};
#define T_SRV64 0xfedcba9876543210ull   /* the accepted end: all 64 bits of data used */

struct fx {
	int ep, ep2, lis, cli, srv, lis6, udp, ux, uabs, pair[2], pipe[2], file, efd, gone;
	char dir[64], uxpath[sizeof(((struct sockaddr_un *)0)->sun_path)], filepath[128];
	uint16_t lport, cport, lport6, uport;
};

static char got[FDW_DESC_MAX], want[FDW_DESC_MAX];

/* ---- escape ---- */

static bool esc_is(const char *in, size_t len, size_t n, const char *exp)
{
	char buf[80];

	memset(buf, 'Z', sizeof(buf));
	fdw_escape(buf, n, in, len);
	if (strcmp(buf, exp) || buf[n] != 'Z') {    /* n <= 64: nothing written past n */
		printf("#   got \"%s\", want \"%s\"\n", buf, exp);
		return false;
	}
	return true;
}

static void test_escape(void)
{
	CHECK(esc_is("/run/a b.sock", 13, 64, "/run/a b.sock"), "escape: printable ASCII as is");
	CHECK(esc_is("a\nb\\c\x7f", 6, 64, "a\\x0ab\\x5cc\\x7f"), "escape: \\n, backslash, DEL");
	CHECK(esc_is("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, 64,
		     "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "escape: well-formed UTF-8 as is");
	CHECK(esc_is("\xff\xc0\xaf\xed\xa0\x80", 6, 64,
		     "\\xff\\xc0\\xaf\\xed\\xa0\\x80"), "escape: 0xff, overlong, surrogate escaped");
	CHECK(esc_is("x\xe2\x82", 3, 64, "x\\xe2\\x82"), "escape: a cut sequence escaped");
	CHECK(esc_is("\xc2\x85\xe2\x80\xae\xe2\x81\xa6", 8, 64,
		     "\\xc2\\x85\\xe2\\x80\\xae\\xe2\\x81\\xa6"), "escape: C1 NEL, RLO, LRI escaped");
	CHECK(esc_is("ab\n", 3, 6, "ab"), "escape: bound: \\x0a does not fit in 6 after ab");
	CHECK(esc_is("a\xe2\x82\xac", 4, 4, "a"), "escape: bound: a 3-byte character not split");
	CHECK(esc_is("abc", 3, 1, ""), "escape: bound: 1 byte holds the NUL only");
	CHECK(fdw_escape(got, 4, "abcdef", 6) == 3, "escape: returns the bytes consumed");
}

/* ---- fixture ---- */

static uint16_t port_of(int fd, bool peer)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if ((peer ? getpeername : getsockname)(fd, (struct sockaddr *)&ss, &sl))
		return 0;
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					      : ((struct sockaddr_in *)&ss)->sin_port);
}

static int tcp_listener(int family)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool v6 = family == AF_INET6;

	if (s < 0)
		return -errno;
	if (bind(s, v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
		 v6 ? sizeof(a6) : sizeof(a4)) || listen(s, 8)) {
		int err = -errno;

		close(s);
		return err;
	}
	return s;
}

static int tcp_pair(struct fx *f)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(f->lport) };

	f->cli = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->cli < 0 || connect(f->cli, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	f->srv = accept4(f->lis, NULL, NULL, SOCK_CLOEXEC);
	f->cport = port_of(f->cli, false);
	return f->srv < 0 ? -1 : 0;
}

/* unix socket bound to `name` of `len` bytes (abstract when it starts with NUL) */
static int unix_bound(const char *name, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0 || len > sizeof(a.sun_path))
		return -1;
	memcpy(a.sun_path, name, len);
	if (bind(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) ||
	    listen(s, 1)) {
		close(s);
		return -1;
	}
	return s;
}

static int udp_socket(struct fx *f)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	f->udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (f->udp < 0 || bind(f->udp, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	f->uport = port_of(f->udp, false);
	return 0;
}

/* An abstract name holding a newline and then a whole /proc/net/unix entry for inode `ino`. */
static int unix_forger(uint64_t ino)
{
	char name[108];
	int l = snprintf(name, sizeof(name),
			 "%cfw%d\n0000000000000000: 00000002 00000000 00010000 0001 01 %llu @evil",
			 0, (int)getpid() % 100000, (unsigned long long)ino);

	return l > 0 && (size_t)l < sizeof(name) ? unix_bound(name, (size_t)l) : -1;
}

static uint64_t ino_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : (uint64_t)st.st_ino;
}

static bool reg(int ep, int fd, uint64_t token)
{
	struct epoll_event e = { .events = EV, .data.u64 = token };

	return fd >= 0 && !epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

static int fx_sockets(struct fx *f)
{
	f->lis = tcp_listener(AF_INET);
	if (f->lis < 0)
		return -1;
	f->lport = port_of(f->lis, false);
	if (tcp_pair(f) || udp_socket(f))
		return -1;
	f->lis6 = tcp_listener(AF_INET6);
	if (f->lis6 < 0)
		printf("# IPv6: no listener on [::1] here (%s): its checks are skipped\n",
		       strerror(-f->lis6));
	else
		f->lport6 = port_of(f->lis6, false);
	snprintf(f->uxpath, sizeof(f->uxpath), "%s/" HOSTILE, f->dir);
	f->ux = unix_bound(f->uxpath, strlen(f->uxpath));
	if (f->ux < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->pair))
		return -1;
	f->uabs = unix_forger(ino_of(f->pair[0]));
	f->gone = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	return f->uabs < 0 || f->gone < 0 ? -1 : 0;
}

#define FX_FDS(f) { &(f)->ep, &(f)->ep2, &(f)->lis, &(f)->cli, &(f)->srv, &(f)->lis6, &(f)->udp, \
		     &(f)->ux, &(f)->uabs, &(f)->pair[0], &(f)->pair[1], &(f)->pipe[0], &(f)->pipe[1], \
		     &(f)->file, &(f)->efd, &(f)->gone }

static int fx_setup(struct fx *f)
{
	int *fds[] = FX_FDS(f);

	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		*fds[i] = -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/fdwhat.XXXXXX");
	if (!mkdtemp(f->dir)) {
		f->dir[0] = 0;
		return -1;
	}
	snprintf(f->filepath, sizeof(f->filepath), "%s/plain file", f->dir);
	f->file = open(f->filepath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	f->efd = eventfd(0, EFD_CLOEXEC);
	f->ep = epoll_create1(EPOLL_CLOEXEC);
	f->ep2 = epoll_create1(EPOLL_CLOEXEC);
	if (f->file < 0 || f->efd < 0 || f->ep < 0 || f->ep2 < 0 || pipe2(f->pipe, O_CLOEXEC) ||
	    fx_sockets(f))
		return -1;
	if (!reg(f->ep, f->lis, T_LIS) || !reg(f->ep, f->srv, T_SRV64) || !reg(f->ep, f->cli, T_CLI) ||
	    !reg(f->ep, f->udp, T_UDP) || !reg(f->ep, f->ux, T_UNIX) ||
	    !reg(f->ep, f->pair[1], T_PAIR) || !reg(f->ep, f->pair[0], T_FORGED) ||
	    !reg(f->ep, f->pipe[0], T_PIPE) || !reg(f->ep, f->efd, T_EFD) ||
	    !reg(f->ep, f->gone, T_GONE))
		return -1;
	if (f->lis6 >= 0 && !reg(f->ep, f->lis6, T_LIS6))
		return -1;
	/* the second epoll fd: T_LIS again (for another fd), and a token of its own */
	if (!reg(f->ep2, f->pipe[1], T_LIS) || !reg(f->ep2, f->efd, T_EP2_ONLY))
		return -1;
	return 0;
}

static void fx_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void fx_teardown(struct fx *f)
{
	int *fds[] = FX_FDS(f);

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		fx_close(fds[i]);
	if (f->uxpath[0])
		unlink(f->uxpath);
	if (f->filepath[0])
		unlink(f->filepath);
	if (f->dir[0])
		rmdir(f->dir);
}

/* ---- tokens ---- */

static void check_token(struct fdw *w, uint64_t token, int fd, const char *what)
{
	uint32_t ev = 0;
	int got_fd = -1, rc = fdw_token(w, token, &got_fd, &ev);

	CHECK(rc == 0 && got_fd == fd && ev == (uint32_t)EV_SEEN,
	      "tokens: %s: token %#llx gives fd %d, events %#x (got rc %d, fd %d, events %#x)",
	      what, (unsigned long long)token, fd, (unsigned)EV_SEEN, rc, got_fd, ev);
}

static void test_tokens(struct fdw *w, struct fx *f)
{
	int fd = -1;

	check_token(w, T_LIS, f->lis, "TCP listener (also in the 2nd epoll fd: the 1st wins)");
	check_token(w, T_SRV64, f->srv, "accepted connection, 64-bit token");
	check_token(w, T_CLI, f->cli, "connecting end");
	check_token(w, T_UDP, f->udp, "UDP");
	check_token(w, T_UNIX, f->ux, "unix, hostile path");
	check_token(w, T_PAIR, f->pair[1], "unnamed unix");
	check_token(w, T_PIPE, f->pipe[0], "pipe");
	check_token(w, T_EFD, f->efd, "eventfd");
	check_token(w, T_EP2_ONLY, f->efd, "token only in the 2nd epoll fd");
	if (f->lis6 >= 0)
		check_token(w, T_LIS6, f->lis6, "IPv6 listener");
	CHECK(fdw_token(w, 0xdeadbeefcafeull, &fd, NULL) == -ENOENT, "tokens: unknown token: -ENOENT");
	fx_close(&f->gone);
	CHECK(fdw_token(w, T_GONE, &fd, NULL) == 0, "tokens: a closed socket's token stays until a refresh");
	CHECK(fdw_refresh(w) == 0, "tokens: refresh");
	CHECK(fdw_token(w, T_GONE, &fd, NULL) == -ENOENT, "tokens: … and is gone after it (-ENOENT)");
}

/* ---- describe ---- */

/* fdw_describe(fd) gives `kind` (or -errno) and the text in want[] */
static void check_desc(struct fdw *w, int fd, int kind, const char *what)
{
	int k = fdw_describe(w, fd, got, sizeof(got));

	if (!CHECK(k == kind && !strcmp(got, want), "describe: %s: %s \"%s\"", what,
		   kind >= 0 ? fdw_kind_name(kind) : strerror(-kind), want))
		printf("#   got %d (%s) \"%s\"\n", k, k >= 0 ? fdw_kind_name(k) : strerror(-k), got);
}

/* a connected UDP socket, and an unbound TCP socket (in no table: its inode) */
static void test_describe_extra(struct fdw *w, struct fx *f)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(f->uport) };
	int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (CHECK(u >= 0 && !connect(u, (struct sockaddr *)&a, sizeof(a)), "describe: UDP connected")) {
		snprintf(want, sizeof(want), "UDP 127.0.0.1:%u <-> 127.0.0.1:%u", port_of(u, false),
			 f->uport);
		check_desc(w, u, FDW_UDP, "connected UDP");
	}
	if (CHECK(t >= 0, "describe: unbound TCP socket created")) {
		snprintf(want, sizeof(want), "socket:[%llu]", (unsigned long long)ino_of(t));
		check_desc(w, t, FDW_OTHER, "unbound TCP socket (in no table)");
	}
	if (u >= 0)
		close(u);
	if (t >= 0)
		close(t);
}

static void test_describe_inet(struct fdw *w, struct fx *f)
{
	snprintf(want, sizeof(want), "TCP listener 127.0.0.1:%u", f->lport);
	check_desc(w, f->lis, FDW_LISTENER, "TCP listener");
	snprintf(want, sizeof(want), "TCP connection 127.0.0.1:%u <-> 127.0.0.1:%u (ESTABLISHED)",
		 f->lport, f->cport);
	check_desc(w, f->srv, FDW_CONNECTION, "accepted end");
	snprintf(want, sizeof(want), "TCP connection 127.0.0.1:%u <-> 127.0.0.1:%u (ESTABLISHED)",
		 f->cport, port_of(f->cli, true));
	check_desc(w, f->cli, FDW_CONNECTION, "connecting end");
	snprintf(want, sizeof(want), "UDP 127.0.0.1:%u", f->uport);
	check_desc(w, f->udp, FDW_UDP, "UDP");
	test_describe_extra(w, f);
	if (f->lis6 >= 0) {
		snprintf(want, sizeof(want), "TCP listener [::1]:%u", f->lport6);
		check_desc(w, f->lis6, FDW_LISTENER, "IPv6 listener");
	}
}

static void test_describe_other(struct fdw *w, struct fx *f)
{
	snprintf(want, sizeof(want), "unix socket %s/" HOSTILE_ESC " (listening)", f->dir);
	check_desc(w, f->ux, FDW_UNIX, "unix socket, hostile path escaped");
	snprintf(want, sizeof(want), "unix socket (unnamed)");
	check_desc(w, f->pair[1], FDW_UNIX, "socketpair end");
	snprintf(want, sizeof(want), "unix socket (name ambiguous)");
	check_desc(w, f->pair[0], FDW_UNIX, "socketpair end another name forges a line for");
	snprintf(want, sizeof(want), "unix socket @fw%d (listening)", (int)getpid() % 100000);
	check_desc(w, f->uabs, FDW_UNIX, "the forging abstract socket, cut at its newline");
	snprintf(want, sizeof(want), "pipe:[%llu]", (unsigned long long)ino_of(f->pipe[0]));
	check_desc(w, f->pipe[0], FDW_PIPE, "pipe");
	snprintf(want, sizeof(want), "%s/plain file", f->dir);
	check_desc(w, f->file, FDW_FILE, "regular file");
	snprintf(want, sizeof(want), "anon_inode:[eventfd]");
	check_desc(w, f->efd, FDW_OTHER, "eventfd");
	snprintf(want, sizeof(want), "anon_inode:[eventpoll]");
	check_desc(w, f->ep, FDW_OTHER, "epoll fd");
	want[0] = 0;
	check_desc(w, -1, -EINVAL, "fd -1: -EINVAL");
	got[0] = 'x';
	check_desc(w, 1000000, -ENOENT, "fd not open: -ENOENT");
}

static void test_bounds(struct fdw *w, struct fx *f)
{
	char full[FDW_DESC_MAX], small[16];
	int k;

	fdw_describe(w, f->srv, full, sizeof(full));
	memset(small, 'Z', sizeof(small));
	k = fdw_describe(w, f->srv, small, 10);
	CHECK(k == FDW_CONNECTION && strlen(small) == 9 && !strncmp(small, full, 9) &&
	      small[10] == 'Z', "bounds: 10 bytes: the first 9 and a NUL (\"%s\")", small);
	memset(small, 'Z', sizeof(small));
	k = fdw_describe(w, f->ux, small, 16);
	CHECK(k == FDW_UNIX && strlen(small) <= 15 && small[15] == 0,
	      "bounds: 16 bytes for the hostile path: cut, NUL-terminated");
	memset(small, 'Z', sizeof(small));
	k = fdw_describe(w, f->lis, small, 1);
	CHECK(k == FDW_LISTENER && small[0] == 0 && small[1] == 'Z', "bounds: 1 byte: \"\"");
	k = fdw_describe(w, f->lis, small + 2, 0);
	CHECK(k == FDW_LISTENER && small[2] == 'Z', "bounds: 0 bytes: nothing written");
}

static void test_many(struct fdw *w, struct fx *f)
{
	enum { N = 600 };
	int fds[N], n, i, bad = 0, fd;

	for (n = 0; n < N; n++) {
		fds[n] = fcntl(f->udp, F_DUPFD_CLOEXEC, 0);
		if (!reg(f->ep, fds[n], 0x100000ull + (uint64_t)n))
			break;
	}
	if (n < N && fds[n] >= 0)
		close(fds[n]);
	CHECK(n == N, "many: %d dups registered", n);
	CHECK(fdw_refresh(w) == 0, "many: refresh");
	for (i = 0; i < n; i++)
		if (fdw_token(w, 0x100000ull + (uint64_t)i, &fd, NULL) || fd != fds[i])
			bad++;
	CHECK(bad == 0, "many: every token gives its own fd (%d wrong)", bad);
	check_token(w, T_SRV64, f->srv, "after many: accepted connection");
	for (i = 0; i < n; i++)
		close(fds[i]);
}

/* ---- another process ---- */

struct child {
	pid_t pid;
	int ctl;                         /* closing it tells the child to exit */
	uint16_t port;
};

static int child_start(struct child *c)
{
	int up[2], down[2];

	if (pipe2(up, O_CLOEXEC) || pipe2(down, O_CLOEXEC))
		return -1;
	c->pid = fork();
	if (c->pid == 0) {
		int ep = epoll_create1(0), lis = tcp_listener(AF_INET);
		uint16_t port = lis >= 0 ? port_of(lis, false) : 0;
		char b;

		close(up[0]);
		close(down[1]);
		if (!reg(ep, lis, 0x77))
			port = 0;
		if (write(up[1], &port, sizeof(port)) != sizeof(port) || read(down[0], &b, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	c->ctl = down[1];
	if (c->pid < 0 || read(up[0], &c->port, sizeof(c->port)) != sizeof(c->port)) {
		close(up[0]);
		return -1;
	}
	close(up[0]);
	return c->port ? 0 : -1;
}

static bool is_zombie(pid_t pid)
{
	char path[32], buf[256], *rp;
	FILE *f;
	bool z = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f && fgets(buf, sizeof(buf), f) && (rp = strrchr(buf, ')')))
		z = rp[2] == 'Z';
	if (f)
		fclose(f);
	return z;
}

static void test_child(void)
{
	struct timespec ms = { 0, 10000000 };
	struct child c;
	struct fdw *w = NULL;
	int fd = -1, st, i, rc;

	CHECK(fdw_new(0x7ffffff0, &w) == -ESRCH && !w, "child: a PID that cannot exist: -ESRCH");
	if (!CHECK(child_start(&c) == 0, "child: started with a listener registered"))
		return;
	CHECK(fdw_new((uint32_t)c.pid, &w) == 0 && fdw_refresh(w) == 0, "child: new + refresh");
	rc = w ? fdw_token(w, 0x77, &fd, NULL) : -1;
	CHECK(rc == 0, "child: its token found (fd %d)", fd);
	snprintf(want, sizeof(want), "TCP listener 127.0.0.1:%u", c.port);
	if (w)
		check_desc(w, fd, FDW_LISTENER, "the child's listener");
	close(c.ctl);
	for (i = 0; i < 500 && !is_zombie(c.pid); i++)
		nanosleep(&ms, NULL);
	CHECK(i < 500, "child: exited, a zombie now");
	if (w) {
		rc = fdw_refresh(w);
		CHECK(rc == -ESRCH, "child: zombie: refresh -ESRCH (got %d)", rc);
		rc = fdw_describe(w, fd, got, sizeof(got));
		CHECK(rc == -ESRCH && got[0] == 0, "child: zombie: describe -ESRCH (got %d)", rc);
		CHECK(fdw_token(w, 0x77, &fd, NULL) == 0, "child: the last tokens stay");
	}
	waitpid(c.pid, &st, 0);
	if (w) {
		CHECK(fdw_refresh(w) == -ESRCH, "child: reaped: refresh -ESRCH");
		CHECK(fdw_describe(w, fd, got, sizeof(got)) == -ESRCH, "child: reaped: describe -ESRCH");
	}
	fdw_free(w);
	CHECK(fdw_new((uint32_t)c.pid, &w) == -ESRCH && !w, "child: fdw_new after: -ESRCH");
}

int main(void)
{
	struct fdw *w = NULL;
	struct fx f;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	test_escape();
	if (!CHECK(fx_setup(&f) == 0, "setup: sockets, pipe, file, epoll fds (%s)", strerror(errno)))
		goto out;
	rc = fdw_new((uint32_t)getpid(), &w);
	CHECK(rc == 0, "new: own process (%d)", rc);
	rc = w ? fdw_refresh(w) : -1;
	if (!CHECK(rc == 0, "refresh: own process (%d)", rc))
		goto out;
	test_tokens(w, &f);
	test_describe_inet(w, &f);
	test_describe_other(w, &f);
	test_bounds(w, &f);
	test_many(w, &f);
out:
	fdw_free(w);
	fx_teardown(&f);
	test_child();
	printf("# %d checks, %d failed\n", run, failed);
	return failed ? 1 : 0;
}
