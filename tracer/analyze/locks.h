/* SPDX-License-Identifier: MIT */
/*
 * locks.h — who holds the permits of Tokio's batch semaphores (Mutex, RwLock, Semaphore), from
 * the task_lock probe: the primitive's acquires (after they succeeded, on the acquiring task)
 * and the semaphore's releases and forgets. Pure computation; the analyzer feeds it and asks it
 * for the holders of what a pending task waits on (task_wait kind 3 names the same object).
 *
 * Rules (docs/wait-reasons.md, "Lock holders"):
 *   - an acquire adds the task's permits to the object's holders; the object's primitive is
 *     the last acquire's (Mutex, RwLock read/write, Semaphore);
 *   - a release (or forget) is taken from the releasing task's own permits first; what is
 *     left (a guard moved to another task and dropped there) comes from the oldest holders;
 *     a release of an object nobody was seen acquiring (a bounded mpsc channel's, permits
 *     taken before the trace, Semaphore::add_permits) changes nothing;
 *   - a task that terminates holds nothing any more (its guards were dropped with its future;
 *     one it moved elsewhere is then unknown, never invented).
 * Bounds: LK_LOCKS_MAX objects with holders at once and LK_HOLDERS_MAX holders each are kept;
 * beyond, counted (lk_stats) and the object is marked incomplete (no deadlock is built on it).
 */
#ifndef TET_LOCKS_H
#define TET_LOCKS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LK_LOCKS_MAX 65536
#define LK_HOLDERS_MAX 8

struct lk_holder {
	uint64_t task_id;
	uint64_t permits;
	uint64_t since;             /* the first of its permits still held, taken at */
};
struct lk_lock {
	uint32_t pid;
	uint64_t object;            /* the batch semaphore's address */
	uint8_t prim;               /* TET_LOCK_MUTEX … TET_LOCK_SEMAPHORE */
	bool incomplete;            /* a holder was not kept (LK_HOLDERS_MAX): the list is partial */
	uint32_t nholders;
	struct lk_holder h[LK_HOLDERS_MAX];
};
struct lk_stats {
	uint64_t acquires, releases, forgets;
	uint64_t releases_unknown;  /* of objects nobody was seen acquiring */
	uint64_t locks_untracked;   /* acquires of objects beyond LK_LOCKS_MAX */
	uint64_t holders_untracked; /* acquires beyond LK_HOLDERS_MAX holders of one object */
	uint64_t bad;               /* unknown op codes */
};

struct lk;
struct lk *lk_new(void);
void lk_free(struct lk *l);
/* One task_lock event (op: TET_LOCK_*). */
void lk_event(struct lk *l, uint32_t pid, uint64_t task_id, unsigned op, uint64_t object,
	      uint64_t permits, uint64_t ts);
/* Task task_id of pid terminated: it holds nothing any more. */
void lk_task_gone(struct lk *l, uint32_t pid, uint64_t task_id);
/* The object's holders, or NULL when nobody is known to hold it. */
const struct lk_lock *lk_get(const struct lk *l, uint32_t pid, uint64_t object);
const struct lk_stats *lk_stats(const struct lk *l);
/* "tokio::sync::Mutex" … for a primitive code. */
const char *lk_prim_type(unsigned prim);

#endif
