/* SPDX-License-Identifier: MIT */
/*
 * starve.h — starvation episodes: moments when every worker thread of a runtime is inside a
 * long poll, so nothing else of that runtime runs — not its queued tasks, not its timer wheel,
 * not its I/O driver. Pure computation on the analyzer's poll boundaries (analyzer.c feeds it);
 * the analyzer asks it how much of a wait an episode explains, and charges the victims to it.
 *
 * A runtime is not named by the probes: a worker index is per runtime (a current-thread
 * runtime's thread is worker 0 too) and a thread can change runtimes' hands (block_in_place).
 * So the threads of one runtime are found the way the scheduler shows them: threads that
 * polled the same task belong to the same runtime (union-find over task migrations), and the
 * threads of worker indexes 1 and up, and those on which a multi-thread worker's launcher (the
 * blocking task Tokio spawns from multi_thread/worker.rs) was seen polling, are one multi-thread
 * runtime's (a second multi-thread
 * runtime in the process is merged with the first: its starvation is then missed, never made
 * up); a group with such workers but no worker 0 yet is not complete. An
 * episode is the intersection, at least long_poll_ns long, of one poll per thread of such a
 * group — each thread's open poll, or its last poll over long_poll_ns — so it is found also when
 * the threads' records arrive out of order (batched capture).
 */
#ifndef TET_STARVE_H
#define TET_STARVE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct an_site;

/* starvation: a poll that held a worker thread during the episode */
#define AN_HOLDERS_MAX 8
struct an_holder {
	uint32_t tid;
	int32_t worker;
	uint64_t task_id, header_ptr;
	const struct an_site *site;
	uint64_t poll_begin, poll_end; /* poll_end 0: still in the poll at the episode's end */
};

#define SV_THREADS_MAX 1024   /* worker threads tracked (more: counted, no starvation for them) */
#define SV_EPISODES_MAX 256   /* episodes kept (more: counted, not charged) */

struct sv_episode {
	uint32_t pid;
	uint64_t start, end;          /* end: the first holder's poll end, or now while ongoing */
	bool ongoing;
	uint32_t threads;             /* worker threads of the runtime, all held */
	uint8_t nholders;             /* ≤ AN_HOLDERS_MAX of them */
	struct an_holder holders[AN_HOLDERS_MAX];
	uint64_t victim_timers, victim_timer_max_ns, victim_tasks, victim_sched_max_ns, charged_ns;
	bool told;                    /* the new-episode callback ran */
	int32_t finding;              /* the analyzer's: its finding's index + 1, -1 none */
	bool stale;                   /* sv_settle: its runtime turned out to have more threads */
	bool voided;                  /* it was none after all (a holder's end came in late) */
};

/* Called once per episode when it is first worth a finding: two threads or more held, and a
 * victim charged to it. */
typedef void (*sv_new_fn)(void *ctx, const struct sv_episode *e, uint64_t now);

struct starve;
struct starve *sv_new(sv_new_fn fn, void *ctx);
void sv_free(struct starve *s);

/* A poll began on worker thread (pid, tid) — a task's poll with worker ≥ 0, not a blocking
 * task's; prev_tid: the thread of the task's previous poll, or of the poll that spawned it
 * (0 = none). 0 or -ENOMEM. */
int sv_poll_begin(struct starve *s, uint32_t pid, uint32_t tid, int32_t worker, uint32_t prev_tid,
		  uint64_t task_id, uint64_t header_ptr, const struct an_site *site, uint64_t ts);
/* Worker thread (pid, tid) parked or unparked as worker `worker` at ts: a thread of the
 * runtime that is not held (an idle worker); a poll still open on it lost its end, which was
 * ts at the latest. */
void sv_park(struct starve *s, uint32_t pid, uint32_t tid, int32_t worker, uint64_t ts,
	     uint64_t long_ns);
/* It ended at ts (task identified as at its begin). */
void sv_poll_end(struct starve *s, uint32_t pid, uint32_t tid, uint64_t task_id,
		 uint64_t header_ptr, uint64_t ts, uint64_t long_ns);
/* Episodes still going on at now (every thread of a runtime in a poll for long_ns or more). */
void sv_tick(struct starve *s, uint64_t now, uint64_t long_ns);

/* How much of [from, to] the runtime of thread (pid, tid) spent starved. */
uint64_t sv_starved(const struct starve *s, uint32_t pid, uint32_t tid, uint64_t from, uint64_t to);
/* Charges a victim — a timer that fell due at `from` and fired at `to` (timer), or a task
 * runnable from `from` and polled at `to` — to every episode of its runtime in [from, to]. */
void sv_charge(struct starve *s, uint32_t pid, uint32_t tid, uint64_t from, uint64_t to, bool timer);

/* At the end: an episode whose runtime turned out to have more threads than it held (a worker
 * met later) is stale — no finding; its victims go to the episode of the whole runtime that
 * overlaps it most, if any. */
void sv_settle(struct starve *s);
size_t sv_episodes(const struct starve *s, struct sv_episode **e);
uint64_t sv_omitted(const struct starve *s);          /* episodes beyond the bound */
uint64_t sv_threads_untracked(const struct starve *s); /* threads beyond the bound */
bool sv_any(const struct starve *s);                  /* an episode was seen */
/* Thread (pid, tid) runs a multi-thread runtime's worker: the poll of its launcher (a blocking
 * task Tokio spawns from runtime/scheduler/multi_thread/worker.rs) began on it. It joins the
 * runtime of the other multi-thread workers at once, worker 0 too (which a task migrating
 * between them may never show in a short capture). */
void sv_mt_thread(struct starve *s, uint32_t pid, uint32_t tid);
/* Thread (pid, tid) is inside a worker's poll: a task it spawns now goes to the same runtime
 * (tokio::spawn uses the current one), so the thread that first polls that task is of its group. */
bool sv_in_poll(const struct starve *s, uint32_t pid, uint32_t tid);

#endif
