// SPDX-License-Identifier: MIT
/*
 * fuzz_fdwhat — libFuzzer target for what the tracer reads of a traced process's /proc to name
 * an epoll token's fd (tracer/decode/fdwhat.c): the fd links, the epoll fds' fdinfo and the
 * socket tables, all of which the process shapes (a unix socket's path is any bytes it likes,
 * newlines included; its fds and registrations are its own). The input lays out a made-up
 * /proc/PID (fdw_new_dir) in parts separated by a line "%%":
 *   0  fd links, one "N TARGET" a line (N < 4096, at most 64): fd/N → TARGET ("socket:[INO]",
 *      "pipe:[INO]", "anon_inode:[eventpoll]", a path, anything)
 *   1  the fdinfo of every fd whose link is anon_inode:[eventpoll] ("tfd: … events: … data: …")
 *   2–6  net/tcp, net/tcp6, net/udp, net/udp6, net/unix
 * Then fdw_refresh, fdw_token for every "data:" value of part 1 (and 0, ~0), fdw_describe of
 * every fd with buffers of 512, 7, 1 and 0 bytes. Checked beyond ASan/UBSan: a description is
 * NUL-terminated inside its buffer, its kind is one fdw_kind_name knows, and it holds no control
 * byte (what the process names is escaped). FUZZ_FDWHAT_VERBOSE=1: each fd's description printed
 * ("fd N KIND TEXT"; t_fdwhat_fuzz checks that the seeds reach every kind).
 * Seeds: tests/fuzz/fdwhat_seeds.py (this machine's own /proc, laid out so).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdwhat.h"

#define FDS_MAX 64
static char base[64];
static unsigned long round_no;

static void base_gone(void)
{
	rmdir(base);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* tmpfs when there is one: a round makes and removes ~20 files */
	snprintf(base, sizeof(base), "/dev/shm/fuzz_fdwhat.XXXXXX");
	if (!mkdtemp(base)) {
		snprintf(base, sizeof(base), "/tmp/fuzz_fdwhat.XXXXXX");
		if (!mkdtemp(base))
			abort();
	}
	atexit(base_gone);
	return 0;
}

static void put(int dfd, const char *name, const uint8_t *p, size_t n)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		abort();
	if (n && write(fd, p, n) != (ssize_t)n)
		abort();
	close(fd);
}

/* the next part of [*p, end): up to a line "%%" (or the end) */
static size_t part(const uint8_t **p, const uint8_t *end, const uint8_t **out)
{
	const uint8_t *s = *p, *q;

	*out = s;
	for (q = s; q + 3 <= end; q++)
		if ((q == s || q[-1] == '\n') && q[0] == '%' && q[1] == '%' && q[2] == '\n') {
			*p = q + 3;
			return (size_t)(q - s);
		}
	*p = end;
	return (size_t)(end - s);
}

static void check_desc(const char *buf, size_t n, int k)
{
	size_t len;

	if (!n)
		return;
	len = strnlen(buf, n);
	if (len == n) /* not terminated inside the buffer */
		abort();
	if (k > 0 && !strcmp(fdw_kind_name((enum fdw_kind)k), "unknown"))
		abort();
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] == 0x7f)
			abort(); /* a process-chosen byte not escaped */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const tables[] = { "net/tcp", "net/tcp6", "net/udp", "net/udp6", "net/unix" };
	const uint8_t *p = data, *end = data + size, *links, *fdinfo, *t;
	size_t nlinks, nfdinfo, n;
	int fds[FDS_MAX], nfds = 0, dfd, sub;
	char dir[128], name[32], target[512], buf[512];
	struct fdw *w = NULL;

	snprintf(dir, sizeof(dir), "%s/%lu", base, round_no++);
	if (mkdir(dir, 0700) || (dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		abort();
	if (mkdirat(dfd, "fd", 0700) || mkdirat(dfd, "fdinfo", 0700) || mkdirat(dfd, "net", 0700))
		abort();
	put(dfd, "stat", (const uint8_t *)"4242 (fuzz) R 1 1 1 0 -1", 24);
	nlinks = part(&p, end, &links);
	nfdinfo = part(&p, end, &fdinfo);
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		n = part(&p, end, &t);
		put(dfd, tables[i], t, n);
	}
	/* the links */
	for (const uint8_t *l = links, *le; l < links + nlinks && nfds < FDS_MAX; l = le + 1) {
		char *sp;
		long fd;

		le = memchr(l, '\n', (size_t)(links + nlinks - l));
		if (!le)
			le = links + nlinks;
		n = (size_t)(le - l);
		if (n >= sizeof(target))
			continue;
		memcpy(target, l, n);
		target[n] = 0;
		fd = strtol(target, &sp, 10);
		if (sp == target || *sp != ' ' || fd < 0 || fd >= 4096 || !sp[1])
			continue;
		snprintf(name, sizeof(name), "fd/%ld", fd);
		if (symlinkat(sp + 1, dfd, name))
			continue; /* a repeated fd */
		fds[nfds++] = (int)fd;
		if (!strcmp(sp + 1, "anon_inode:[eventpoll]")) {
			snprintf(name, sizeof(name), "fdinfo/%ld", fd);
			put(dfd, name, fdinfo, nfdinfo);
		}
	}
	if (!fdw_new_dir(dir, 4242, &w)) {
		int tfd;
		uint32_t ev;

		fdw_refresh(w);
		fdw_token(w, 0, &tfd, &ev);
		fdw_token(w, UINT64_MAX, &tfd, NULL);
		for (const uint8_t *d = fdinfo; d + 5 < fdinfo + nfdinfo; d++)
			if (!memcmp(d, "data:", 5)) {
				char hex[24];
				size_t m = 0;

				for (const uint8_t *h = d + 5; h < fdinfo + nfdinfo && m < sizeof(hex) - 1 &&
				     (*h == ' ' || (*h >= '0' && *h <= '9') || (*h >= 'a' && *h <= 'f')); h++)
					hex[m++] = (char)*h;
				hex[m] = 0;
				fdw_token(w, strtoull(hex, NULL, 16), &tfd, &ev);
			}
		for (int i = 0; i < nfds; i++) {
			static const size_t sizes[] = { sizeof(buf), 7, 1, 0 };

			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				int k = fdw_describe(w, fds[i], buf, sizes[s]);

				check_desc(buf, sizes[s], k);
				if (!s && getenv("FUZZ_FDWHAT_VERBOSE"))
					printf("fd %d %s %s\n", fds[i], k > 0 ? fdw_kind_name((enum fdw_kind)k) : "error", buf);
			}
		}
		fdw_free(w);
	}
	/* clean up: the links and fdinfo files, the tables, the directories */
	for (int i = 0; i < nfds; i++) {
		snprintf(name, sizeof(name), "fd/%d", fds[i]);
		unlinkat(dfd, name, 0);
		snprintf(name, sizeof(name), "fdinfo/%d", fds[i]);
		unlinkat(dfd, name, 0);
	}
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		unlinkat(dfd, tables[i], 0);
	unlinkat(dfd, "stat", 0);
	sub = unlinkat(dfd, "fd", AT_REMOVEDIR) | unlinkat(dfd, "fdinfo", AT_REMOVEDIR) |
	      unlinkat(dfd, "net", AT_REMOVEDIR);
	close(dfd);
	if (sub || rmdir(dir))
		abort(); /* something left behind: the next round would see it */
	return 0;
}
