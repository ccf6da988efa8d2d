// SPDX-License-Identifier: MIT
/*
 * locks.c — lock holders from task_lock (locks.h has the rules).
 *
 * One table, (pid, object) → struct lk_lock, holding only objects with holders (an object
 * whose last permit went back leaves it), and per task the objects it holds (a short list in
 * a second table), so a termination drops its holdings without a walk of every lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "htab.h"
#include "locks.h"

#define TASK_LOCKS_MAX 16 /* objects one task is remembered to hold (more: found by a walk) */
struct task_locks {
	uint32_t n;
	uint32_t unlisted;          /* objects it holds beyond the list (a walk finds them) */
	uint64_t object[TASK_LOCKS_MAX];
};

struct lk {
	struct htab locks;          /* (pid, object) → struct lk_lock */
	struct htab tasks;          /* (pid, task id) → struct task_locks */
	struct lk_stats s;
};

struct lk *lk_new(void)
{
	return calloc(1, sizeof(struct lk));
}

static void free_all(struct htab *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->e[i].v);
	free(t->e);
	memset(t, 0, sizeof(*t));
}

void lk_free(struct lk *l)
{
	if (!l)
		return;
	free_all(&l->locks);
	free_all(&l->tasks);
	free(l);
}

const char *lk_prim_type(unsigned prim)
{
	switch (prim) {
	case TET_LOCK_MUTEX: return "tokio::sync::Mutex";
	case TET_LOCK_READ:
	case TET_LOCK_WRITE: return "tokio::sync::RwLock";
	case TET_LOCK_SEMAPHORE: return "tokio::sync::Semaphore";
	}
	return "a semaphore";
}

static void task_note(struct lk *l, uint32_t pid, uint64_t task, uint64_t object)
{
	struct task_locks *tl = htab_get(&l->tasks, pid, task);

	if (!tl) {
		if (!(tl = calloc(1, sizeof(*tl))))
			return;
		if (htab_put(&l->tasks, pid, task, tl)) {
			free(tl);
			return;
		}
	}
	for (uint32_t i = 0; i < tl->n; i++)
		if (tl->object[i] == object)
			return;
	if (tl->n < TASK_LOCKS_MAX)
		tl->object[tl->n++] = object;
	else
		tl->unlisted++;
}

/* task no longer holds object: off its list (the entry goes when it lists nothing) */
static void task_unnote(struct lk *l, uint32_t pid, uint64_t task, uint64_t object)
{
	struct task_locks *tl = htab_get(&l->tasks, pid, task);

	if (!tl)
		return;
	for (uint32_t i = 0; i < tl->n; i++)
		if (tl->object[i] == object) {
			tl->object[i] = tl->object[--tl->n];
			break;
		}
	if (!tl->n && !tl->unlisted) {
		htab_del(&l->tasks, pid, task);
		free(tl);
	}
}

static void lock_drop_if_free(struct lk *l, struct lk_lock *k)
{
	if (k->nholders || k->incomplete) /* an incomplete one stays: its holders are unknown */
		return;
	htab_del(&l->locks, k->pid, k->object);
	free(k);
}

/* Takes `permits` from holder i; returns what it did not hold. */
static uint64_t take(struct lk *l, struct lk_lock *k, uint32_t i, uint64_t permits)
{
	struct lk_holder *h = &k->h[i];

	if (h->permits > permits) {
		h->permits -= permits;
		return 0;
	}
	permits -= h->permits;
	task_unnote(l, k->pid, h->task_id, k->object);
	memmove(h, h + 1, (k->nholders - i - 1) * sizeof(*h));
	k->nholders--;
	return permits;
}

static void acquire(struct lk *l, uint32_t pid, uint64_t task, unsigned prim, uint64_t object,
		    uint64_t permits, uint64_t ts)
{
	struct lk_lock *k = htab_get(&l->locks, pid, object);
	uint32_t i;

	if (!k) {
		if (l->locks.len >= LK_LOCKS_MAX || !(k = calloc(1, sizeof(*k)))) {
			l->s.locks_untracked++;
			return;
		}
		k->pid = pid;
		k->object = object;
		if (htab_put(&l->locks, pid, object, k)) {
			free(k);
			l->s.locks_untracked++;
			return;
		}
	}
	/* an exclusive acquire (a Mutex, an RwLock's write, a read after a write) means nobody
	 * else holds it any more: a release not seen (a guard dropped where nothing records it)
	 * is made up here */
	if (prim == TET_LOCK_MUTEX || prim == TET_LOCK_WRITE ||
	    (prim == TET_LOCK_READ && k->prim == TET_LOCK_WRITE))
		for (i = k->nholders; i-- > 0;)
			if (k->h[i].task_id != task)
				take(l, k, i, k->h[i].permits);
	k->prim = (uint8_t)prim;
	for (i = 0; i < k->nholders; i++)
		if (k->h[i].task_id == task) {
			k->h[i].permits = k->h[i].permits > UINT64_MAX - permits ? UINT64_MAX :
					  k->h[i].permits + permits;
			return;
		}
	if (k->nholders >= LK_HOLDERS_MAX) {
		k->incomplete = true;
		l->s.holders_untracked++;
		return;
	}
	k->h[k->nholders++] = (struct lk_holder){ task, permits, ts };
	task_note(l, pid, task, object);
}

static void release(struct lk *l, uint32_t pid, uint64_t task, uint64_t object, uint64_t permits)
{
	struct lk_lock *k = htab_get(&l->locks, pid, object);

	if (!k) {
		l->s.releases_unknown++;
		return;
	}
	for (uint32_t i = 0; i < k->nholders; i++)
		if (k->h[i].task_id == task) {
			permits = take(l, k, i, permits);
			break;
		}
	while (permits && k->nholders)
		permits = take(l, k, 0, permits); /* a guard handed on: the oldest holder's */
	lock_drop_if_free(l, k);
}

void lk_event(struct lk *l, uint32_t pid, uint64_t task_id, unsigned op, uint64_t object,
	      uint64_t permits, uint64_t ts)
{
	if (!l)
		return;
	switch (op) {
	case TET_LOCK_MUTEX:
	case TET_LOCK_READ:
	case TET_LOCK_WRITE:
	case TET_LOCK_SEMAPHORE:
		l->s.acquires++;
		if (permits)
			acquire(l, pid, task_id, op, object, permits, ts);
		break;
	case TET_LOCK_RELEASE:
	case TET_LOCK_FORGET:
		if (op == TET_LOCK_RELEASE)
			l->s.releases++;
		else
			l->s.forgets++;
		release(l, pid, task_id, object, permits);
		break;
	default:
		l->s.bad++;
	}
}

static void drop_holder(struct lk *l, struct lk_lock *k, uint64_t task)
{
	for (uint32_t i = 0; i < k->nholders; i++)
		if (k->h[i].task_id == task) {
			take(l, k, i, k->h[i].permits);
			break;
		}
	lock_drop_if_free(l, k);
}

void lk_task_gone(struct lk *l, uint32_t pid, uint64_t task_id)
{
	struct task_locks *tl;

	uint64_t objects[TASK_LOCKS_MAX];
	uint32_t n;
	bool walk;

	if (!l || !(tl = htab_get(&l->tasks, pid, task_id)))
		return;
	/* drop_holder takes objects off the list (and frees it with the last): work on a copy */
	n = tl->n;
	memcpy(objects, tl->object, n * sizeof(*objects));
	walk = tl->unlisted != 0;
	for (uint32_t i = 0; i < n; i++) {
		struct lk_lock *k = htab_get(&l->locks, pid, objects[i]);

		if (k)
			drop_holder(l, k, task_id);
	}
	if (walk) /* held more than it remembers: walk every lock of its process */
		for (size_t i = 0; i < l->locks.cap;) {
			struct lk_lock *k = l->locks.e[i].v;
			size_t len = l->locks.len;

			if (k && k->pid == pid)
				drop_holder(l, k, task_id);
			if (l->locks.len == len) /* a deletion shifts the next entry into slot i */
				i++;
		}
	if ((tl = htab_get(&l->tasks, pid, task_id))) { /* what is left of its list */
		htab_del(&l->tasks, pid, task_id);
		free(tl);
	}
}

const struct lk_lock *lk_get(const struct lk *l, uint32_t pid, uint64_t object)
{
	return l ? htab_get(&l->locks, pid, object) : NULL;
}

const struct lk_stats *lk_stats(const struct lk *l)
{
	static const struct lk_stats none;

	return l ? &l->s : &none;
}
