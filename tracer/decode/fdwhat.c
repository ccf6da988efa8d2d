// SPDX-License-Identifier: MIT
/*
 * fdwhat.c — epoll tokens to fds, fds to what they are, from /proc/PID (fdwhat.h).
 *
 *   fdw_refresh:  fd/N  ─ readlink "anon_inode:[eventpoll]" ─►  fdinfo/EPFD "tfd: events: data:"
 *                 ─► regs[] sorted by (token, epoll fd), one per token
 *   fdw_describe: fd/N  ─ readlink ─► "socket:[INO]" ─ xattr system.sockprotoname ─► the one
 *                 table of that protocol (net/tcp, tcp6, udp, udp6, unix) ─► entry by inode
 *
 * Every file is read through one bounded line reader (struct lr): a line longer than the
 * buffer is cut, never grown. The tables keep addresses as the bytes the kernel printed them
 * from (a 32-bit word in host order per %08X, so memcpy of the parsed word restores network
 * order) and unix names raw; escaping happens when a description is written.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/xattr.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "fdwhat.h"

#define FDW_LINE_MAX 4096            /* longer lines are cut (kernel lines are < 300 bytes) */
#define FDW_NAME_MAX 256             /* raw bytes kept of a unix socket's name (sun_path: 108) */
#define FDW_STALE_NS 100000000ull    /* a table this old is read again on a miss */
#define FDW_MISS_READS 4             /* … and a younger one this many times per refresh */
#define UNIX_ACCEPTCON 0x10000u      /* __SO_ACCEPTCON in /proc/net/unix Flags: listening */

enum fdw_proto { P_TCP, P_TCP6, P_UDP, P_UDP6, P_UNIX, P_N };

static const char *const table_path[P_N] = {
	[P_TCP] = "net/tcp", [P_TCP6] = "net/tcp6", [P_UDP] = "net/udp", [P_UDP6] = "net/udp6",
	[P_UNIX] = "net/unix",
};

struct fdw_reg {
	uint64_t token;
	int32_t fd;
	uint32_t events;
	uint32_t order;                  /* registrations in ascending epoll fd order */
};

struct fdw_sock {
	uint64_t ino;
	uint32_t name_off;               /* unix: raw name in names[]; name_len 0: unnamed */
	uint16_t name_len;
	uint16_t lport, rport;
	uint8_t state;                   /* TCP/UDP: st; unix: 1 when listening */
	uint8_t dup;                     /* the inode is listed more than once */
	uint8_t laddr[16], raddr[16];    /* network order; IPv4 in the first 4 bytes */
};

struct fdw_table {
	struct fdw_sock *e;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	bool loaded;
	uint64_t loaded_ns;
	unsigned miss_reads;             /* read again for a missing inode since the refresh */
};

struct fdw {
	uint32_t pid;
	int procfd;                      /* /proc/PID */
	struct fdw_reg *regs;
	size_t nregs;
	struct fdw_table tab[P_N];
	char *io;                        /* the line reader's buffer, FDW_LINE_MAX + 1 */
};

/* ---- bounded line reader ---- */

struct lr {
	int fd;
	char *buf;                       /* FDW_LINE_MAX + 1: room for the NUL of a cut line */
	size_t start, end;
	bool eof, skip;                  /* skip: the rest of a cut line */
};

/* The next line, NUL-terminated without its '\n', in *line (len bytes; may hold NULs).
 * 1: a line, 0: end of file, -errno. */
static int lr_next(struct lr *r, char **line, size_t *len)
{
	for (;;) {
		char *p = r->buf + r->start;
		char *nl = memchr(p, '\n', r->end - r->start);
		ssize_t k;

		if (nl || (r->eof && r->end > r->start)) {
			size_t l = nl ? (size_t)(nl - p) : r->end - r->start;
			bool skip = r->skip;

			p[l] = 0;
			r->start += nl ? l + 1 : l;
			r->skip = false;
			if (skip)
				continue;
			*line = p;
			*len = l;
			return 1;
		}
		if (r->eof)
			return 0;
		memmove(r->buf, p, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
		if (r->end == FDW_LINE_MAX) {     /* too long: hand out its beginning, drop the rest */
			bool skip = r->skip;

			r->buf[FDW_LINE_MAX] = 0;
			r->start = r->end = 0;
			r->skip = true;
			if (skip)
				continue;
			*line = r->buf;
			*len = FDW_LINE_MAX;
			return 1;
		}
		k = read(r->fd, r->buf + r->end, FDW_LINE_MAX - r->end);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			r->eof = true;
		r->end += (size_t)k;
	}
}

/* ---- small parsers (strict: the whole field, nothing else) ---- */

static bool parse_hex(const char *s, size_t len, uint64_t *v)
{
	uint64_t x = 0;

	if (len == 0 || len > 16)
		return false;
	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)s[i];

		if (!isxdigit(c))
			return false;
		x = x << 4 | (uint64_t)(isdigit(c) ? c - '0' : (tolower(c) - 'a' + 10));
	}
	*v = x;
	return true;
}

static bool parse_dec(const char *s, size_t len, uint64_t *v)
{
	uint64_t x = 0;

	if (len == 0 || len > 19)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	*v = x;
	return true;
}

/* The whitespace-separated field after *pos in line[0, len): start and length. */
static bool next_field(const char *line, size_t len, size_t *pos, const char **f, size_t *flen)
{
	size_t i = *pos, b;

	while (i < len && line[i] == ' ')
		i++;
	b = i;
	while (i < len && line[i] != ' ')
		i++;
	*pos = i;
	*f = line + b;
	*flen = i - b;
	return i > b;
}

/* The number after "key" (then spaces) in a NUL-terminated line. */
static bool key_num(const char *line, const char *key, bool hex, uint64_t *v)
{
	const char *p = strstr(line, key), *e;

	if (!p)
		return false;
	p += strlen(key);
	while (*p == ' ' || *p == '\t')
		p++;
	for (e = p; *e && *e != ' ' && *e != '\t'; e++)
		;
	return hex ? parse_hex(p, (size_t)(e - p), v) : parse_dec(p, (size_t)(e - p), v);
}

/* ---- the process ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether the process still runs: /proc/PID/stat readable through procfd and its state not
 * Z (zombie: its fds are closed) or X. */
static bool proc_alive(const struct fdw *w)
{
	char buf[512];
	const char *rp;
	ssize_t n;
	int fd = openat(w->procfd, "stat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	rp = strrchr(buf, ')');          /* comm may hold ')' and spaces: the last one ends it */
	return rp && rp[1] == ' ' && rp[2] && rp[2] != 'Z' && rp[2] != 'X';
}

/* A failed read of something that should exist: -ESRCH when the process is gone. */
static int gone_or(const struct fdw *w, int err)
{
	if (err == ESRCH || !proc_alive(w))
		return -ESRCH;
	return -err;
}

static int open_in(const struct fdw *w, const char *path)
{
	int fd = openat(w->procfd, path, O_RDONLY | O_CLOEXEC);

	return fd < 0 ? gone_or(w, errno) : fd;
}

int fdw_new(uint32_t pid, struct fdw **wp)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%u", pid);
	return fdw_new_dir(path, pid, wp);
}

int fdw_new_dir(const char *path, uint32_t pid, struct fdw **wp)
{
	struct fdw *w;
	int err;

	*wp = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->io = malloc(FDW_LINE_MAX + 1);
	if (!w->io) {
		free(w);
		return -ENOMEM;
	}
	w->pid = pid;
	w->procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->procfd < 0) {
		err = errno == ENOENT ? -ESRCH : -errno;
		free(w->io);
		free(w);
		return err;
	}
	if (!proc_alive(w)) {
		fdw_free(w);
		return -ESRCH;
	}
	*wp = w;
	return 0;
}

static void table_drop(struct fdw_table *t)
{
	t->n = 0;
	t->names_len = 0;
	t->loaded = false;
}

static void table_forget(struct fdw_table *t)
{
	table_drop(t);
	t->miss_reads = 0;
}

void fdw_free(struct fdw *w)
{
	if (!w)
		return;
	for (int p = 0; p < P_N; p++) {
		free(w->tab[p].e);
		free(w->tab[p].names);
	}
	if (w->procfd >= 0)
		close(w->procfd);
	free(w->regs);
	free(w->io);
	free(w);
}

/* ---- epoll registrations ---- */

struct regs {
	struct fdw_reg *r;
	size_t n, cap;
};

static int regs_push(struct regs *rs, const struct fdw_reg *r)
{
	if (rs->n == FDW_TOKENS_MAX)
		return 0;
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 64;
		struct fdw_reg *nr = realloc(rs->r, cap * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		rs->r = nr;
		rs->cap = cap;
	}
	rs->r[rs->n++] = *r;
	return 0;
}

/* The registrations of epoll fd `epfd`. A vanished epfd (closed meanwhile) adds nothing. */
static int read_epoll(struct fdw *w, int epfd, struct regs *rs)
{
	struct lr r = { .buf = w->io };
	char path[32], *line;
	size_t len;
	int rc = 0, err = 0;

	snprintf(path, sizeof(path), "fdinfo/%d", epfd);
	r.fd = open_in(w, path);
	if (r.fd < 0)
		return r.fd == -ENOENT ? 0 : r.fd;
	while (!err && (rc = lr_next(&r, &line, &len)) > 0) {
		struct fdw_reg g = { .order = (uint32_t)rs->n };
		uint64_t tfd, ev, data;

		if (strncmp(line, "tfd:", 4))
			continue;
		if (!key_num(line, "tfd:", false, &tfd) || tfd > INT32_MAX ||
		    !key_num(line, "events:", true, &ev) || ev > UINT32_MAX ||
		    !key_num(line, "data:", true, &data))
			continue;
		g.token = data;
		g.fd = (int32_t)tfd;
		g.events = (uint32_t)ev;
		err = regs_push(rs, &g);
	}
	close(r.fd);
	if (!err && rc < 0)
		err = gone_or(w, -rc);
	return err;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static int cmp_reg(const void *a, const void *b)
{
	const struct fdw_reg *x = a, *y = b;

	if (x->token != y->token)
		return x->token < y->token ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

/* The epoll fds of the process, ascending, into *fds (*n of them). */
static int list_epoll_fds(struct fdw *w, int **fds, size_t *n)
{
	size_t cap = 0;
	struct dirent *de;
	DIR *d;
	int dfd = open_in(w, "fd"), err = 0;

	*fds = NULL;
	*n = 0;
	if (dfd < 0)
		return dfd == -ENOENT ? -ESRCH : dfd;
	d = fdopendir(dfd);
	if (!d) {
		err = -errno;
		close(dfd);
		return err;
	}
	while (!err && (de = readdir(d))) {
		char link[32], path[32];
		uint64_t fd;
		ssize_t l;

		if (!parse_dec(de->d_name, strlen(de->d_name), &fd) || fd > INT_MAX)
			continue;
		snprintf(path, sizeof(path), "fd/%d", (int)fd);
		l = readlinkat(w->procfd, path, link, sizeof(link));
		if (l != 22 || memcmp(link, "anon_inode:[eventpoll]", 22))
			continue;
		if (*n == cap) {
			int *nf = realloc(*fds, (cap = cap ? cap * 2 : 8) * sizeof(int));

			if (!nf) {
				err = -ENOMEM;
				break;
			}
			*fds = nf;
		}
		(*fds)[(*n)++] = (int)fd;
	}
	closedir(d);
	if (!err && *n > 1)
		qsort(*fds, *n, sizeof(int), cmp_int);
	return err;
}

int fdw_refresh(struct fdw *w)
{
	struct regs rs = { 0 };
	size_t nep, i, o;
	int *ep, err;

	err = list_epoll_fds(w, &ep, &nep);
	for (i = 0; !err && i < nep; i++)
		err = read_epoll(w, ep[i], &rs);
	free(ep);
	if (!err && !proc_alive(w))
		err = -ESRCH;            /* exited mid-way: what was read may be partial */
	if (err) {
		free(rs.r);
		return err;
	}
	if (rs.n > 1)
		qsort(rs.r, rs.n, sizeof(*rs.r), cmp_reg);
	for (i = o = 0; i < rs.n; i++)   /* the first registration of each token */
		if (o == 0 || rs.r[o - 1].token != rs.r[i].token)
			rs.r[o++] = rs.r[i];
	free(w->regs);
	w->regs = rs.r;
	w->nregs = o;
	for (int p = 0; p < P_N; p++)
		table_forget(&w->tab[p]);
	return 0;
}

int fdw_token(const struct fdw *w, uint64_t token, int *fd, uint32_t *events)
{
	size_t lo = 0, hi = w->nregs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->regs[mid].token < token)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == w->nregs || w->regs[lo].token != token)
		return -ENOENT;
	*fd = w->regs[lo].fd;
	if (events)
		*events = w->regs[lo].events;
	return 0;
}

/* ---- socket tables ---- */

static struct fdw_sock *table_add(struct fdw_table *t)
{
	if (t->n == FDW_TABLE_MAX)
		return NULL;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct fdw_sock *ne = realloc(t->e, cap * sizeof(*ne));

		if (!ne)
			return NULL;
		t->e = ne;
		t->cap = cap;
	}
	memset(&t->e[t->n], 0, sizeof(t->e[0]));
	return &t->e[t->n++];
}

static int names_add(struct fdw_table *t, const char *s, size_t len)
{
	if (t->names_len + len > t->names_cap) {
		size_t cap = t->names_cap ? t->names_cap : 4096;
		char *nn;

		while (cap < t->names_len + len)
			cap *= 2;
		nn = realloc(t->names, cap);
		if (!nn)
			return -ENOMEM;
		t->names = nn;
		t->names_cap = cap;
	}
	memcpy(t->names + t->names_len, s, len);
	t->names_len += len;
	return 0;
}

/* "0100007F:1F90" (IPv4) or 32 hex digits (IPv6) and a port: each 8 digits a word the kernel
 * printed in host order from the address's memory. */
static bool parse_inet(const char *f, size_t len, bool v6, uint8_t *addr, uint16_t *port)
{
	size_t alen = v6 ? 32 : 8;
	uint64_t v;

	if (len != alen + 5 || f[alen] != ':' || !parse_hex(f + alen + 1, 4, &v))
		return false;
	*port = (uint16_t)v;
	for (size_t i = 0; i < alen / 8; i++) {
		uint32_t word;

		if (!parse_hex(f + 8 * i, 8, &v))
			return false;
		word = (uint32_t)v;
		memcpy(addr + 4 * i, &word, 4);
	}
	return true;
}

/* "sl local rem st tx:rx tr:when retrnsmt uid timeout inode …" (tcp, tcp6, udp, udp6). */
static bool parse_inet_line(const char *line, size_t len, bool v6, struct fdw_sock *s)
{
	const char *f;
	size_t fl, pos = 0;
	uint64_t v;
	int i;

	if (!next_field(line, len, &pos, &f, &fl) || f[fl - 1] != ':' ||
	    !parse_dec(f, fl - 1, &v))
		return false;
	if (!next_field(line, len, &pos, &f, &fl) || !parse_inet(f, fl, v6, s->laddr, &s->lport))
		return false;
	if (!next_field(line, len, &pos, &f, &fl) || !parse_inet(f, fl, v6, s->raddr, &s->rport))
		return false;
	if (!next_field(line, len, &pos, &f, &fl) || !parse_hex(f, fl, &v) || v > 0xff)
		return false;
	s->state = (uint8_t)v;
	for (i = 0; i < 5; i++)          /* tx:rx tr:when retrnsmt uid timeout */
		if (!next_field(line, len, &pos, &f, &fl))
			return false;
	return next_field(line, len, &pos, &f, &fl) && parse_dec(f, fl, &s->ino);
}

static bool hex_field(const char *line, size_t len, size_t *pos, size_t width, uint64_t *v)
{
	if (*pos + width + 1 > len || line[*pos] != ' ')
		return false;
	*pos += width + 1;
	return parse_hex(line + *pos - width, width, v);
}

/* "%pK: %08X %08X %08X %04X %02X %5lu[ name]" of /proc/net/unix. Anything else (the header,
 * the rest of a name holding '\n') is not an entry. The name: line + *name, *nlen bytes. */
static bool parse_unix_line(const char *line, size_t len, struct fdw_sock *s, size_t *name,
			    size_t *nlen)
{
	const char *colon = memchr(line, ':', len < 17 ? len : 17);
	size_t pos, b;
	uint64_t v, flags;

	if (!colon || (colon - line != 8 && colon - line != 16) ||
	    !parse_hex(line, (size_t)(colon - line), &v))
		return false;
	pos = (size_t)(colon - line) + 1;
	if (!hex_field(line, len, &pos, 8, &v) || !hex_field(line, len, &pos, 8, &v) ||
	    !hex_field(line, len, &pos, 8, &flags) || !hex_field(line, len, &pos, 4, &v) ||
	    !hex_field(line, len, &pos, 2, &v) || pos >= len || line[pos] != ' ')
		return false;
	while (pos < len && line[pos] == ' ')
		pos++;
	for (b = pos; pos < len && isdigit((unsigned char)line[pos]); pos++)
		;
	if (!parse_dec(line + b, pos - b, &s->ino) || (pos < len && line[pos] != ' '))
		return false;
	s->state = (flags & UNIX_ACCEPTCON) != 0;
	*name = pos < len ? pos + 1 : len;
	*nlen = len - *name;
	return true;
}

/* A unix line that is not an entry: the rest of the previous entry's name after a '\n'. */
static int unix_continue(struct fdw_table *t, const char *line, size_t len)
{
	struct fdw_sock *s = t->n ? &t->e[t->n - 1] : NULL;
	size_t room;
	int err;

	if (!s || !s->name_len || s->name_len >= FDW_NAME_MAX)
		return 0;
	room = FDW_NAME_MAX - s->name_len - 1;
	len = len < room ? len : room;
	err = names_add(t, "\n", 1);
	if (!err)
		err = names_add(t, line, len);
	if (!err)
		s->name_len = (uint16_t)(s->name_len + 1 + len);
	return err;
}

static int table_line(struct fdw_table *t, enum fdw_proto p, const char *line, size_t len)
{
	struct fdw_sock tmp = { 0 }, *s;
	size_t name = 0, nlen = 0;
	bool ok;

	if (p == P_UNIX)
		ok = parse_unix_line(line, len, &tmp, &name, &nlen);
	else
		ok = parse_inet_line(line, len, p == P_TCP6 || p == P_UDP6, &tmp);
	if (!ok)
		return p == P_UNIX ? unix_continue(t, line, len) : 0;
	if (!tmp.ino)                    /* TIME_WAIT and other socket-less entries */
		return 0;
	s = table_add(t);
	if (!s)
		return t->n == FDW_TABLE_MAX ? 0 : -ENOMEM;
	*s = tmp;
	if (nlen) {
		nlen = nlen < FDW_NAME_MAX ? nlen : FDW_NAME_MAX;
		s->name_off = (uint32_t)t->names_len;
		s->name_len = (uint16_t)nlen;
		return names_add(t, line + name, nlen);
	}
	return 0;
}

static int cmp_sock(const void *a, const void *b)
{
	const struct fdw_sock *x = a, *y = b;

	return (x->ino > y->ino) - (x->ino < y->ino);
}

static int table_load(struct fdw *w, enum fdw_proto p)
{
	struct fdw_table *t = &w->tab[p];
	struct lr r = { .buf = w->io };
	char *line;
	size_t len;
	int rc = 0, err = 0;

	table_drop(t);
	r.fd = open_in(w, table_path[p]);
	if (r.fd == -ENOENT)            /* no IPv6 in this kernel: an empty table */
		r.fd = -1;
	else if (r.fd < 0)
		return r.fd;
	while (r.fd >= 0 && !err && (rc = lr_next(&r, &line, &len)) > 0)
		err = table_line(t, p, line, len);
	if (r.fd >= 0) {
		close(r.fd);
		if (!err && rc < 0)
			err = gone_or(w, -rc);
	}
	if (err) {
		table_drop(t);
		return err;
	}
	if (t->n > 1)
		qsort(t->e, t->n, sizeof(*t->e), cmp_sock);
	for (size_t i = 1; i < t->n; i++)
		if (t->e[i].ino == t->e[i - 1].ino)
			t->e[i].dup = t->e[i - 1].dup = 1;
	t->loaded = true;
	t->loaded_ns = now_ns();
	return 0;
}

static const struct fdw_sock *table_find(const struct fdw_table *t, uint64_t ino)
{
	struct fdw_sock key = { .ino = ino };

	return t->n ? bsearch(&key, t->e, t->n, sizeof(*t->e), cmp_sock) : NULL;
}

/* The entry of inode `ino` in table p, read now if not yet; on a miss read again (a socket
 * newer than the copy) when the copy is stale or, a few times per refresh, when it is not.
 * NULL and *err 0 when absent. */
static const struct fdw_sock *sock_lookup(struct fdw *w, enum fdw_proto p, uint64_t ino,
					  int *err)
{
	struct fdw_table *t = &w->tab[p];
	const struct fdw_sock *s;

	*err = 0;
	if (!t->loaded && (*err = table_load(w, p)))
		return NULL;
	s = table_find(t, ino);
	if (!s && (now_ns() - t->loaded_ns >= FDW_STALE_NS || t->miss_reads < FDW_MISS_READS)) {
		if (now_ns() - t->loaded_ns < FDW_STALE_NS)
			t->miss_reads++;
		if ((*err = table_load(w, p)))
			return NULL;
		s = table_find(t, ino);
	}
	return s;
}

/* ---- descriptions ---- */

struct out {
	char *buf;
	size_t n, len;
	bool full;                       /* something did not fit: nothing more is added */
};

static void out_put(struct out *o, const void *s, size_t len, bool esc)
{
	size_t used;

	if (o->full || o->n == 0)
		return;
	if (esc) {
		used = fdw_escape(o->buf + o->len, o->n - o->len, s, len);
		o->len += strlen(o->buf + o->len);
	} else {
		used = len < o->n - o->len - 1 ? len : o->n - o->len - 1;
		memcpy(o->buf + o->len, s, used);
		o->len += used;
		o->buf[o->len] = 0;
	}
	o->full = used < len;
}

static void out_fmt(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_fmt(struct out *o, const char *fmt, ...)
{
	char tmp[FDW_DESC_MAX];
	va_list ap;
	int l;

	va_start(ap, fmt);
	l = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (l > 0)
		out_put(o, tmp, (size_t)l < sizeof(tmp) ? (size_t)l : sizeof(tmp) - 1, false);
}

static void out_addr(struct out *o, bool v6, const uint8_t *addr, uint16_t port)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(v6 ? AF_INET6 : AF_INET, addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	out_fmt(o, v6 ? "[%s]:%u" : "%s:%u", a, port);
}

static const char *tcp_state(uint8_t st)
{
	static const char *const names[] = {
		[1] = "ESTABLISHED", [2] = "SYN_SENT", [3] = "SYN_RECV", [4] = "FIN_WAIT1",
		[5] = "FIN_WAIT2", [6] = "TIME_WAIT", [7] = "CLOSE", [8] = "CLOSE_WAIT",
		[9] = "LAST_ACK", [10] = "LISTEN", [11] = "CLOSING", [12] = "NEW_SYN_RECV",
		[13] = "BOUND_INACTIVE",
	};

	return st < sizeof(names) / sizeof(names[0]) && names[st] ? names[st] : "?";
}

static enum fdw_kind describe_inet(struct out *o, enum fdw_proto p, const struct fdw_sock *s)
{
	bool v6 = p == P_TCP6 || p == P_UDP6, peer = s->rport != 0;
	enum fdw_kind k;

	if (p == P_UDP || p == P_UDP6) {
		out_fmt(o, "UDP ");
		k = FDW_UDP;
	} else if (s->state == 10) {
		out_fmt(o, "TCP listener ");
		k = FDW_LISTENER;
	} else {
		out_fmt(o, peer ? "TCP connection " : "TCP socket ");
		k = peer ? FDW_CONNECTION : FDW_OTHER;
	}
	out_addr(o, v6, s->laddr, s->lport);
	if (peer) {
		out_fmt(o, " <-> ");
		out_addr(o, v6, s->raddr, s->rport);
	}
	if (k == FDW_CONNECTION || k == FDW_OTHER)
		out_fmt(o, " (%s)", tcp_state(s->state));
	return k;
}

static enum fdw_kind describe_unix(struct out *o, const struct fdw_table *t,
				   const struct fdw_sock *s)
{
	out_fmt(o, "unix socket ");
	if (s->dup) {                    /* which line is the kernel's is unknown: say nothing */
		out_fmt(o, "(name ambiguous)");
		return FDW_UNIX;
	}
	if (s->name_len)
		out_put(o, t->names + s->name_off, s->name_len, true);
	else
		out_fmt(o, "(unnamed)");
	if (s->state)
		out_fmt(o, " (listening)");
	return FDW_UNIX;
}

/* The tables to look in for a socket, from its protocol name (sockfs xattr); all of them, inet
 * first (a unix name cannot forge an inet line), when the name cannot be read. */
static size_t socket_tables(const struct fdw *w, int fd, enum fdw_proto *ps)
{
	static const struct { const char *name; enum fdw_proto p; } map[] = {
		{ "TCP", P_TCP }, { "TCPv6", P_TCP6 }, { "UDP", P_UDP }, { "UDPv6", P_UDP6 },
	};
	char path[64], proto[32];
	ssize_t l;

	snprintf(path, sizeof(path), "/proc/self/fd/%d/fd/%d", w->procfd, fd);
	l = getxattr(path, "system.sockprotoname", proto, sizeof(proto) - 1);
	if (l <= 0) {
		for (int p = 0; p < P_N; p++)
			ps[p] = (enum fdw_proto)p;
		return P_N;
	}
	proto[l] = 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(proto, map[i].name)) {
			ps[0] = map[i].p;
			return 1;
		}
	if (!strncmp(proto, "UNIX", 4)) {    /* UNIX, UNIX-STREAM */
		ps[0] = P_UNIX;
		return 1;
	}
	return 0;
}

static int describe_socket(struct fdw *w, int fd, const char *link, struct out *o)
{
	enum fdw_proto ps[P_N];
	size_t np, i;
	uint64_t ino;
	const char *e = strchr(link + 8, ']');
	int err;

	if (!e || e[1] || !parse_dec(link + 8, (size_t)(e - link - 8), &ino)) {
		out_put(o, link, strlen(link), true);
		return FDW_OTHER;
	}
	np = socket_tables(w, fd, ps);
	for (i = 0; i < np; i++) {
		const struct fdw_sock *s = sock_lookup(w, ps[i], ino, &err);

		if (err)
			return err;
		if (s && ps[i] == P_UNIX)
			return describe_unix(o, &w->tab[P_UNIX], s);
		if (s)
			return describe_inet(o, ps[i], s);
	}
	out_fmt(o, "socket:[%llu]", (unsigned long long)ino);
	return FDW_OTHER;
}

int fdw_describe(struct fdw *w, int fd, char *buf, size_t n)
{
	struct out o = { .buf = buf, .n = n };
	char path[32], link[PATH_MAX + 1];
	ssize_t l;
	int k;

	if (n)
		buf[0] = 0;
	if (fd < 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "fd/%d", fd);
	l = readlinkat(w->procfd, path, link, sizeof(link) - 1);
	if (l < 0)
		return gone_or(w, errno);
	link[l] = 0;
	if (!strncmp(link, "socket:[", 8))
		k = describe_socket(w, fd, link, &o);
	else if (!strncmp(link, "pipe:[", 6))
		k = FDW_PIPE;
	else if (link[0] == '/')
		k = FDW_FILE;
	else
		k = FDW_OTHER;
	if (k < 0) {
		if (n)
			buf[0] = 0;
		return k;
	}
	if (o.len == 0 && !o.full)       /* pipe, path, anon inode: the link itself */
		out_put(&o, link, (size_t)l, true);
	return k;
}

const char *fdw_kind_name(enum fdw_kind k)
{
	static const char *const names[] = {
		[FDW_UNKNOWN] = "unknown", [FDW_LISTENER] = "listener",
		[FDW_CONNECTION] = "connection", [FDW_UDP] = "udp", [FDW_UNIX] = "unix",
		[FDW_PIPE] = "pipe", [FDW_FILE] = "file", [FDW_OTHER] = "other",
	};

	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "unknown";
}

/* ---- escaping ---- */

/* Length of the well-formed UTF-8 sequence of 2–4 bytes at s (Unicode table 3-7) that may be
 * shown as is, else 0 (ill-formed, C1 control, bidirectional override, line separators). */
static size_t utf8_ok(const unsigned char *s, size_t len)
{
	unsigned c = s[0], lo = 0x80, hi = 0xbf, cp;
	size_t n, i;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (len < n || s[1] < lo || s[1] > hi)
		return 0;
	cp = c & (0xff >> (n + 1));
	for (i = 1; i < n; i++) {
		if (i > 1 && (s[i] < 0x80 || s[i] > 0xbf))
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < 0xa0 || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
		return 0;
	return n;
}

size_t fdw_escape(char *buf, size_t n, const void *s, size_t len)
{
	const unsigned char *p = s;
	size_t i = 0, o = 0;

	if (n == 0)
		return 0;
	while (i < len) {
		size_t u = p[i] >= 0x80 ? utf8_ok(p + i, len - i) : 0;
		bool plain = p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\';
		size_t need = u ? u : plain ? 1 : 4;

		if (o + need >= n)
			break;
		if (u || plain)
			memcpy(buf + o, p + i, need);
		else
			snprintf(buf + o, 5, "\\x%02x", p[i]);
		o += need;
		i += u ? u : 1;
	}
	buf[o] = 0;
	return i;
}
