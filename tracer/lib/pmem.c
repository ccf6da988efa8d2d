// SPDX-License-Identifier: MIT
/*
 * pmem.c — bounded reads of a traced process's memory (pmem.h).
 *
 * One reader thread at a time serves requests; a request and its reply pass through the
 * reader's own block (its buffer included), so an abandoned reader that wakes up much later
 * writes only into memory it owns, then frees it and ends.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "pmem.h"

enum { RD_IDLE, RD_REQ, RD_DONE };

struct reader {
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* CLOCK_MONOTONIC */
	int state;
	bool abandoned;         /* the caller gave up on it: it frees itself */
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

static void *reader_main(void *arg)
{
	struct reader *r = arg;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (r->state != RD_REQ && !r->abandoned)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->state != RD_REQ) /* abandoned while idle: only at a failed start */
			break;
		{
			struct iovec l = { r->buf, r->len }, rv = { (void *)(uintptr_t)r->addr, r->len };
			pid_t pid = (pid_t)r->pid;
			ssize_t n;

			pthread_mutex_unlock(&r->mu);
			n = process_vm_readv(pid, &l, 1, &rv, 1, 0);
			pthread_mutex_lock(&r->mu);
			r->res = n >= 0 ? n : -errno;
		}
		r->state = RD_DONE;
		pthread_cond_signal(&r->cv);
		if (r->abandoned)
			break;
	}
	pthread_mutex_unlock(&r->mu);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
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
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
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
		pthread_cond_destroy(&r->cv);
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
	pthread_mutex_lock(&r->mu);
	r->pid = pid;
	r->addr = addr;
	r->len = len;
	r->state = RD_REQ;
	pthread_cond_signal(&r->cv);
	while (r->state != RD_DONE)
		if (pthread_cond_timedwait(&r->cv, &r->mu, &dl) == ETIMEDOUT && r->state != RD_DONE)
			break;
	if (r->state != RD_DONE) {
		/* the reader is held by the target: leave it, it frees itself if it ever returns */
		r->abandoned = true;
		pthread_mutex_unlock(&r->mu);
		g_rd = NULL;
		g_stuck++;
		g_st.timed_out++;
		return -ETIMEDOUT;
	}
	res = r->res;
	if (res > 0)
		memcpy(buf, r->buf, (size_t)res);
	r->state = RD_IDLE;
	pthread_mutex_unlock(&r->mu);
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
