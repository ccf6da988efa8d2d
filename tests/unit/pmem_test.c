// SPDX-License-Identifier: MIT
/*
 * pmem_test — the tracer's reads of a process's memory (tracer/lib/pmem.c) against a child
 * that holds a page with userfaultfd and never serves it: a read of the page is given up after
 * the timeout, at most PMEM_STUCK_MAX readers are left held and later reads are refused at
 * once; reads of the child's ordinary memory and of an unmapped address behave as
 * process_vm_readv(2) does; reads longer than a request are split; once the child dies the
 * held readers return and free themselves; a process forked from the reader's (a flight-recorder
 * dump) reads with a reader of its own.
 * Needs userfaultfd for the child (root, or vm.unprivileged_userfaultfd=1).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "pmem.h"

static const char known[] = "a string the child keeps in its memory";
static char big[3 * PMEM_CHUNK + 100];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The child: registers a page with userfaultfd, sends its address, waits to be killed. */
static void child(int wfd)
{
	long ps = sysconf(_SC_PAGESIZE);
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	uint64_t addr = 0;
	char *p;

	if (fd >= 0 && !ioctl(fd, UFFDIO_API, &api)) {
		p = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		reg.range.start = (uintptr_t)p;
		reg.range.len = (uint64_t)ps;
		reg.mode = UFFDIO_REGISTER_MODE_MISSING;
		if (p != MAP_FAILED && !ioctl(fd, UFFDIO_REGISTER, &reg))
			addr = (uintptr_t)p;
	}
	if (write(wfd, &addr, sizeof(addr)) != sizeof(addr))
		_exit(1);
	for (;;)
		pause();
}

int main(void)
{
	struct pmem_stats st;
	char buf[256];
	uint64_t held = 0;
	int pfd[2];
	pid_t pid;
	ssize_t n;
	double t0, t;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	if (pipe(pfd))
		return 2;
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		child(pfd[1]);
	}
	close(pfd[1]);
	if (read(pfd[0], &held, sizeof(held)) != sizeof(held) || !held) {
		printf("not ok - the child could not hold a page with userfaultfd (root or "
		       "vm.unprivileged_userfaultfd=1 needed)\n");
		kill(pid, SIGKILL);
		return 1;
	}

	/* the child's copy of our memory: fork keeps the addresses */
	n = pmem_read((uint32_t)pid, (uintptr_t)known, buf, sizeof(known));
	CHECK(n == (ssize_t)sizeof(known) && !memcmp(buf, known, sizeof(known)),
	      "an ordinary read returns the child's bytes (%zd)", n);
	{
		char *out = malloc(sizeof(big));

		n = out ? pmem_read((uint32_t)pid, (uintptr_t)big, out, sizeof(big)) : -1;
		CHECK(n == (ssize_t)sizeof(big) && !memcmp(out, big, sizeof(big)),
		      "a read of %zu bytes is split into requests and comes back whole (%zd)",
		      sizeof(big), n);
		free(out);
	}
	n = pmem_read((uint32_t)pid, 4096, buf, 8);
	CHECK(n == -EFAULT, "an unmapped address: -EFAULT (%zd)", n);
	/* a decoder's "is the thread there": the child's main thread is; a thread id of the
	 * child that is not (its pid + 4 million is past pid_max) is not */
	CHECK(pmem_thread_alive((uint32_t)pid, (uint32_t)pid) &&
	      !pmem_thread_alive((uint32_t)pid, (uint32_t)pid + 4194304u),
	      "a thread that exists is there, one that does not is not");
	{ /* a forked process (a flight-recorder dump) reads with a reader of its own */
		pid_t f = fork();
		int status = -1;

		if (f == 0) {
			double s0 = now_s();

			pmem_after_fork();
			n = pmem_read((uint32_t)pid, (uintptr_t)known, buf, sizeof(known));
			_exit(n == (ssize_t)sizeof(known) && now_s() - s0 < 0.1 ? 0 : 1);
		}
		waitpid(f, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "after fork, pmem_after_fork: the child's read is served at once (not by the parent's reader, which is not there)");
	}

	pmem_set_timeout_ms(100);
	for (int i = 0; i < PMEM_STUCK_MAX; i++) {
		t0 = now_s();
		n = pmem_read((uint32_t)pid, held, buf, 16);
		t = now_s() - t0;
		CHECK(n == -ETIMEDOUT && t >= 0.09 && t < 2.0,
		      "a read of the held page gives up after the timeout (%zd in %.3f s, reader %d)", n,
		      t, i + 1);
	}
	t0 = now_s();
	n = pmem_read((uint32_t)pid, (uintptr_t)known, buf, sizeof(known));
	t = now_s() - t0;
	CHECK(n == -ETIMEDOUT && t < 0.05,
	      "with %d readers held, the next read is refused at once, even of readable memory "
	      "(%zd in %.3f s)", PMEM_STUCK_MAX, n, t);
	pmem_get_stats(&st);
	CHECK(st.timed_out == PMEM_STUCK_MAX && st.refused == 1 && st.failed == 1 &&
	      st.reads == 1 + 4 + 1 + PMEM_STUCK_MAX + 1,
	      "counted: %llu reads, %llu timed out, %llu refused, %llu failed",
	      (unsigned long long)st.reads, (unsigned long long)st.timed_out,
	      (unsigned long long)st.refused, (unsigned long long)st.failed);

	/* the child dies: its userfaultfd goes, the held reads return, the readers end */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	{
		char path[64];
		int threads = -1;

		for (int i = 0; i < 100; i++) {
			FILE *f;
			char line[128];

			snprintf(path, sizeof(path), "/proc/%d/status", (int)getpid());
			f = fopen(path, "r");
			while (f && fgets(line, sizeof(line), f))
				if (sscanf(line, "Threads: %d", &threads) == 1)
					break;
			if (f)
				fclose(f);
			if (threads == 1)
				break;
			usleep(20000);
		}
		CHECK(threads == 1, "once the child is gone the held readers end (threads left: %d)",
		      threads);
	}
	printf("# %d checks, %d failed\n", run, failed);
	return failed != 0;
}
