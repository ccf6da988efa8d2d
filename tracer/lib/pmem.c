// SPDX-License-Identifier: MIT
/*
 * pmem.c — bounded reads of a traced process's memory (pmem.h).
 *
 * One reader thread at a time serves requests; a request and its reply pass through the
 * reader's own block (its buffer included), so an abandoned reader that wakes up much later
 * writes only into memory it owns, then frees it and ends. Each side polls the request's state
 * briefly before it sleeps on a condition variable (a thread woken from sleep costs ~10 µs a
 * side on these machines: a sweep of many threads' buffers would pay that per read).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "pmem.h"

enum { RD_IDLE, RD_REQ, RD_DONE };
#define SPIN_NS 50000 /* the caller polls this long for the reply before it sleeps (waking a
		       * sleeping thread costs ~10 µs on each side) */
#define READER_SPIN_NS 5000 /* the reader, for the next request: a sweep's reads come back to
			     * back, and a reader spinning longer would take CPU a saturated
			     * machine's consumer needs */

struct reader {
	pthread_mutex_t mu;
	pthread_cond_t cv_req, cv_done; /* CLOCK_MONOTONIC */
	_Atomic int state;
	_Atomic bool reader_waits, caller_waits; /* asleep on cv_req / cv_done (under mu) */
	bool abandoned;         /* the caller gave up on it (under mu): it frees itself */
	uint32_t pid;
	uint64_t addr;
	size_t len;
	ssize_t res;            /* bytes, or -errno */
	char buf[PMEM_CHUNK];
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* one request at a time */
static struct reader *g_rd;       /* the reader in service, NULL: none yet */
static unsigned g_stuck;          /* readers abandoned */
static unsigned g_timeout_ms = PMEM_TIMEOUT_MS;
static struct pmem_stats g_st;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Polls *state for want up to SPIN_NS; true when it came. */
static bool spin_for(_Atomic int *state, int want, uint64_t ns)
{
	uint64_t until = mono_ns() + ns;

	for (unsigned i = 0;; i++) {
		if (atomic_load(state) == want)
			return true;
		if ((i & 63) == 63 && mono_ns() > until)
			return false;
		__builtin_ia32_pause();
	}
}

/* A side that is about to sleep says so, then looks again (seq_cst: either it sees the other
 * side's store, or the other side sees its flag and signals under mu). */
static void *reader_main(void *arg)
{
	struct reader *r = arg;

	for (;;) {
		if (!spin_for(&r->state, RD_REQ, READER_SPIN_NS)) {
			pthread_mutex_lock(&r->mu);
			atomic_store(&r->reader_waits, true);
			while (atomic_load(&r->state) != RD_REQ)
				pthread_cond_wait(&r->cv_req, &r->mu);
			atomic_store(&r->reader_waits, false);
			pthread_mutex_unlock(&r->mu);
		}
		{
			struct iovec l = { r->buf, r->len }, rv = { (void *)(uintptr_t)r->addr, r->len };
			ssize_t n = process_vm_readv((pid_t)r->pid, &l, 1, &rv, 1, 0);

			r->res = n >= 0 ? n : -errno;
		}
		atomic_store(&r->state, RD_DONE);
		pthread_mutex_lock(&r->mu);
		if (r->abandoned)
			break;
		if (atomic_load(&r->caller_waits))
			pthread_cond_signal(&r->cv_done);
		pthread_mutex_unlock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv_req);
	pthread_cond_destroy(&r->cv_done);
	free(r);
	return NULL;
}

static struct reader *reader_new(void)
{
	struct reader *r = calloc(1, sizeof(*r));
	pthread_condattr_t ca;
	pthread_attr_t ta;
	sigset_t all, old;
	pthread_t th;
	int err;

	if (!r)
		return NULL;
	atomic_init(&r->state, RD_IDLE);
	atomic_init(&r->reader_waits, false);
	atomic_init(&r->caller_waits, false);
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv_req, &ca);
	pthread_cond_init(&r->cv_done, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&ta, 64 << 10);
	/* signals (SIGINT, the flight recorder's SIGUSR1, SIGCHLD) stay with the other threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&th, &ta, reader_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&ta);
	if (err) {
		pthread_mutex_destroy(&r->mu);
		pthread_cond_destroy(&r->cv_req);
		pthread_cond_destroy(&r->cv_done);
		free(r);
		return NULL;
	}
	return r;
}

/* One request of at most PMEM_CHUNK bytes; g_mu held. */
static ssize_t read_chunk(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct reader *r;
	struct timespec dl;
	ssize_t res;

	if (g_stuck >= PMEM_STUCK_MAX) {
		g_st.refused++;
		return -ETIMEDOUT;
	}
	if (!g_rd && !(g_rd = reader_new()))
		return -ENOMEM;
	r = g_rd;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += g_timeout_ms / 1000;
	dl.tv_nsec += (long)(g_timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	r->pid = pid;
	r->addr = addr;
	r->len = len;
	atomic_store(&r->state, RD_REQ);
	if (atomic_load(&r->reader_waits)) {
		pthread_mutex_lock(&r->mu);
		pthread_cond_signal(&r->cv_req);
		pthread_mutex_unlock(&r->mu);
	}
	if (!spin_for(&r->state, RD_DONE, SPIN_NS)) {
		pthread_mutex_lock(&r->mu);
		atomic_store(&r->caller_waits, true);
		while (atomic_load(&r->state) != RD_DONE)
			if (pthread_cond_timedwait(&r->cv_done, &r->mu, &dl) == ETIMEDOUT &&
			    atomic_load(&r->state) != RD_DONE)
				break;
		atomic_store(&r->caller_waits, false);
		if (atomic_load(&r->state) != RD_DONE) {
			/* the reader is held by the target: leave it, it frees itself if it returns */
			r->abandoned = true;
			pthread_mutex_unlock(&r->mu);
			g_rd = NULL;
			g_stuck++;
			g_st.timed_out++;
			return -ETIMEDOUT;
		}
		pthread_mutex_unlock(&r->mu);
	}
	res = r->res;
	if (res > 0)
		memcpy(buf, r->buf, (size_t)res);
	atomic_store(&r->state, RD_IDLE);
	return res;
}

ssize_t pmem_read(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	size_t done = 0;
	ssize_t n = 0;

	pthread_mutex_lock(&g_mu);
	while (done < len) {
		size_t want = len - done < PMEM_CHUNK ? len - done : PMEM_CHUNK;

		if (addr + done < addr) { /* wraps: no such address */
			n = -EFAULT;
			break;
		}
		g_st.reads++;
		n = read_chunk(pid, addr + done, (char *)buf + done, want);
		if (n <= 0) {
			if (n < 0 && n != -ETIMEDOUT)
				g_st.failed++;
			break;
		}
		done += (size_t)n;
		if ((size_t)n < want)
			break;
	}
	pthread_mutex_unlock(&g_mu);
	return done ? (ssize_t)done : n;
}

void pmem_after_fork(void)
{
	pthread_mutex_init(&g_mu, NULL);
	g_rd = NULL; /* the copy of the parent's block is left as it is: its thread is not here */
}

bool pmem_thread_alive(uint32_t pid, uint32_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/task/%u", pid, tid);
	return !access(path, F_OK);
}

void pmem_get_stats(struct pmem_stats *st)
{
	pthread_mutex_lock(&g_mu);
	*st = g_st;
	pthread_mutex_unlock(&g_mu);
}

void pmem_set_timeout_ms(unsigned ms)
{
	pthread_mutex_lock(&g_mu);
	g_timeout_ms = ms ? ms : PMEM_TIMEOUT_MS;
	pthread_mutex_unlock(&g_mu);
}
