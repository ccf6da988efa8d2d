// SPDX-License-Identifier: MIT
/*
 * analyzer.c — task state machine, aggregates and detectors.
 *
 * Input: ring-buffer records (bpf/events.h) in ring order. The ring is one MPSC buffer and
 * every BPF program takes its timestamp after its reservation, so causally related events
 * (a wake, then the poll it enables on another CPU) arrive in causal order with increasing
 * timestamps; unrelated events of different CPUs may interleave a little, which no figure
 * depends on.
 *
 * Identity: a task is (pid, task_id) — or (pid, header_ptr) in the uprobe fallback, where no
 * task id exists (opts.key_by_header). A header is reused after its task is freed; the
 * terminate event retires the key first.
 *
 * Per task, a state machine on kernel timestamps:
 *
 *     spawn ──► SPAWNED ─┐             ┌──────── wake ◄────────┐
 *                        ▼             ▼                       │
 *                   (runnable: SPAWNED/SCHEDULED) ──poll_begin──► POLLING ──poll_end──►
 *                        ▲                                         │  Pending   → PENDING ┘
 *                        └────────── Notified (2) / woken in poll ◄┤  Ready/Cancelled/
 *                                                                  │  Panicked  → DONE
 *                                              terminate (any state) ──► TERMINATED (folded)
 *
 *   scheduling delay = poll_begin − the moment the task became runnable (spawn, wake of a
 *                      PENDING task, or the end of a poll that was notified);
 *   pending time     = wake − poll_end(Pending);
 *   busy time        = Σ (poll_end − poll_begin).
 *   A wake while POLLING marks the poll "woken"; issued by the polling thread itself it is a
 *   self-wake. A self-wake in a poll that also yielded (yield_now, coop budget) is explained;
 *   the others count towards the self_wake ratio. A wake whose thread never polled as a
 *   runtime worker (worker ≥ 0) nor parked one is "outside the runtime".
 *   Live wakers = clones − drops − wakes by value (wake() consumes its waker; wake_by_ref
 *   does not). Known only for tasks whose spawn we saw and when waker_clone/drop are attached.
 *
 * Tasks first met without their spawn (spawned before the trace) are created at their first
 * poll_begin under the pseudo site "unknown"; their first scheduling delay and waker count are
 * unknown. Wakes, clones, drops and terminations of tasks never polled are counted only.
 *
 * Memory: live tasks (bounded by opts.max_live_tasks) hold three histograms; at
 * terminate a task is folded into its spawn site — whose aggregates are kept up to date on
 * every event anyway — and reduced to a fixed-size summary for the report (at most
 * opts.max_task_records; beyond, counted as omitted). Sites are bounded by opts.max_sites
 * (beyond, new locations share the pseudo site "other").
 *
 * Detectors (each once per task and kind, so findings do not flicker; a finding keeps the
 * worst value seen and whether its condition still held at the end):
 *   long_poll     at poll_end: poll > long_poll_ns (spawn_blocking tasks are exempt)
 *   never_yields  at tick: a poll in progress for ≥ never_yields_ns (blocking exempt)
 *   lost_waker    at tick: PENDING for ≥ lost_waker_ns with zero live wakers (known)
 *   stalled       at tick, or at the late wake: PENDING for ≥ stall_ns without a wake,
 *                 unless the lost_waker condition holds (no waker alive → lost_waker)
 *   self_wake     at terminate and finish: unexplained self-wakes / wakes > r, at least min
 *                 self-wakes (the flight recorder is told at the poll_end it first holds)
 *   large_future  at task_meta: the future's size ≥ large_future_bytes (not spawn_blocking)
 *   With task_wait (opts.wait_events), stalled asks stall_verdict() what the task waits for.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "decode.h"
#include "vocab.h"
#include "htab.h"
#include "locks.h"
#include "starve.h"
#include "units.h"
#include "uring.h"

/* ---- state ---- */
/* A record of the kernel side (off-CPU period or CPU sample) waiting for its poll. */
enum { KQ_PREEMPTED, KQ_BLOCKED, KQ_SAMPLE, KQ_STOLEN }; /* stolen: preempted by the hypervisor */
struct kq_ent {
	uint64_t since, until, woken;  /* a sample: since = until = its time */
	struct an_stack_key k;
	uint8_t kind;
};
/* A poll open on the thread: polls nest (the multi-thread runtime's workers are blocking tasks
 * whose one poll encloses every poll they run), so what is charged to an inner poll, and what
 * falls between inner polls, is credited to each enclosing one too. */
struct kopen {
	uint64_t key;                   /* task_key() of its task */
	uint64_t begin;
	struct an_site *site;
	uint64_t preempted, blocked;    /* credited by what ended inside it */
	uint64_t stolen;                /* … of preempted, the hypervisor's */
	uint64_t own_samples;           /* samples between its nested polls */
};
#define KOPEN_MAX 8
struct kthread {
	struct kq_ent *v;
	size_t head, len, cap;          /* FIFO: v[head .. head + len) */
	struct kopen open[KOPEN_MAX];   /* bottom first */
	uint32_t nopen;
};
#define KQ_MAX 16384                   /* records kept per thread (older ones: unmatched) */
#define KQ_MAX_AGE_NS (5ull * 1000000000) /* … and for this long (batches come later) */
#define KQ_TOTAL_MAX 262144            /* … over all threads (~15 MiB) */
#define KTHREADS_MAX 16384             /* threads with kernel records or polls followed */
#define STACKS_MAX 65536                /* stack aggregates per kind */
#define AN_TASK_MEMO 4096               /* the task memo's slots (a power of two) */
#define WORKERS_MAX 4096                /* runtime workers followed (all processes) */
#define AN_GAP_PIDS 64                  /* processes with lost batches told apart */
#define FSTACKS_MAX 256                 /* … per finding */
struct fstacks {
	struct an_stack *v;
	size_t n, cap;
};

/* A task followed. What every event of the task reads or writes comes first and in one run
 * (these fields, the histograms, then the summary's leading fields): a tracer following
 * thousands of tasks meets each one's lines cold, and the misses are most of its cost. */
struct task {
	struct an_site *site;
	uint64_t ready_since;      /* 0 = unknown */
	uint64_t poll_begin, pending_since;
	uint64_t poll_run_delay;   /* the thread's run-queue wait at poll_begin (0 = unknown) */
	uint32_t poll_tid;
	uint32_t spawn_tid;        /* spawned inside a worker's poll on this thread (0: not) */
	int32_t poll_worker;
	bool woke_in_poll, self_woke_in_poll, yielded_in_poll;
	bool term_pending;         /* terminate seen inside the current poll */
	uint8_t npoll_waits;
	bool poll_waits_cut;       /* the poll in progress registered more waits than were kept */
	bool waits_cut;            /* … the last Pending poll did (its wait list is partial) */
	int32_t finding[AN_FINDING_KINDS]; /* index + 1 into findings, 0 = none */
	struct hist poll, sched, pending;
	struct an_task_summary s;  /* hist summaries filled on demand */
	uint64_t seq;
	int term_reason;
	uint64_t term_ts;
	struct an_wait poll_waits[AN_WAITS_MAX]; /* task_wait records of the poll in progress */
	uint8_t dl;                /* deadlock_check: 1 candidate, 2 in a deadlock, 4 leaving */
	uint32_t dl_idx;           /* … its index among the candidates */
	int32_t dl_part;           /* … its part: finding index + 1, -1 none, < -1 being walked */
	uint64_t detected[AN_FINDING_KINDS]; /* opts.on_detect: start of the last occurrence told */
};

struct analyzer {
	struct an_opts o;
	struct an_totals t;
	struct ur *ur;             /* io_uring requests (uring.h) */
	struct starve *sv;         /* starvation episodes (starve.h) */
	struct lk *lk;             /* lock holders (locks.h) */
	struct task **dl_v, **dl_e; /* deadlock_check: candidates, their targets (CSR: dl_off) */
	uint32_t *dl_off, *dl_roff, *dl_r, *dl_q; /* … reverse edges (CSR), the worklist */
	size_t dl_cap, dl_e_cap, dl_off_cap, dl_roff_cap, dl_r_cap, dl_q_cap;
	bool locks_unreliable;     /* lock or wait events were lost: no deadlock is judged */
	bool starve_listed;        /* an_finish made their findings */
	uint64_t now, seq;
	struct htab tasks, sites, workers, runtime_tids;
	struct an_site **sitev;
	size_t nsites, sites_cap;
	struct an_site *unknown_site, *other_site;
	char **type_names;         /* an_set_types(): fallback sites by future type, made lazily */
	struct an_site **type_sites;
	size_t ntypes;
	struct an_worker **workerv;
	size_t nworkers, workers_cap;
	struct an_task_summary *records;
	size_t nrecords, records_cap;
	struct an_finding *findings;
	size_t nfindings, findings_cap;
	struct an_top *top_polls, *top_sched;
	size_t ntop_polls, ntop_sched;
	struct an_tl_rec *tl;
	size_t tl_len, tl_head; /* ring: tl_head = next write */
	bool wakers_unreliable;  /* events that live waker counts rely on were dropped */
	/* a direct-mapped cache in front of the task table, slot by the key's low bits: Tokio's
	 * ids are sequential, so the tasks a runtime polls in turn sit in neighbouring slots,
	 * where the table's hash scatters them (an L1 miss per event at 1000 live tasks). Any
	 * key can take any slot: a process's ids choose only which lookups go on to the table */
	struct { uint64_t key; struct task *t; } memo[AN_TASK_MEMO];
	uint32_t last_runtime_pid, last_runtime_tid; /* the last thread runtime_tid_add saw */
	/* why a poll was slow (opts.sched): per thread, the kernel side's records not yet
	 * charged to a poll; stacks charged, per site and per finding */
	struct htab kthreads, cpu_idx, blk_idx;
	size_t nkq;                /* kernel records held over all threads (KQ_TOTAL_MAX) */
	struct an_stack *cpu_stacks, *blk_stacks;
	size_t ncpu, cpu_cap, nblk, blk_cap;
	struct fstacks *fst;
	size_t fst_cap;
	/* opts.stack_labels: the stacks by poll labels (an_labeled_stacks), the task names */
	struct htab lst_idx, lname_idx;
	struct an_lstack *lst;
	size_t nlst, lst_cap;
	struct lname { uint16_t len; char s[TET_NAME_MAX]; } *lnames;
	size_t nlnames, lnames_cap;
	struct kq_ent *ents;       /* the entries charged to the poll that just ended */
	size_t nents, ents_cap;
	/* events lost (an_lost_task, an_loss_window): findings they could explain go aside */
	struct htab lost;
	bool lost_by_task;
	struct { uint64_t from, to; } *loss;
	size_t nloss, loss_cap;
	struct an_finding *aside;
	size_t naside;
	/* sampling (TET_REC_RATE, TET_REC_GAP): the threshold in force, the strictest so far */
	struct an_sampling smp;
	uint64_t thr, thr_min;
	/* the processes a gap came from: a lost batch holds events of its own process's tasks
	 * only (more than AN_GAP_PIDS such processes: every process counts as one) */
	uint32_t gap_pids[AN_GAP_PIDS];
	size_t ngap_pids;
	bool gap_pids_full;
};

void an_opts_default(struct an_opts *o)
{
	memset(o, 0, sizeof(*o));
#define AN_THRESHOLD(kind, option, unit, field, def, min, max, help) o->field = def;
#include "thresholds.def"
	o->detect = AN_DETECT_ALL;
	o->waker_events = true;
	o->max_live_tasks = AN_MAX_LIVE_TASKS;
	o->max_task_records = 10000;
	o->max_live_listed = 10000;
	o->max_findings = 10000;
	o->max_sites = 65536;
	o->max_sites_listed = 10000;
	o->timeline_cap = 0;
	o->top_n = 10;
}

static const struct an_site *task_site_of(void *ctx, uint32_t pid, uint64_t key);
static void starve_told(void *ctx, const struct sv_episode *e, uint64_t now);

struct analyzer *an_new(const struct an_opts *o)
{
	struct analyzer *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->o = *o;
	if (!a->o.top_n)
		a->o.top_n = 1;
	/* histogram blocks (64 bytes each): 8 per task followed, 16 MiB more for sites, workers and
	 * io_uring ops (~65 MiB by default, the bytes the 256-byte blocks before them had) */
	hist_set_budget(a->o.hist_budget ? a->o.hist_budget :
			((size_t)16 << 20) + (size_t)512 * a->o.max_live_tasks);
	a->top_polls = calloc(a->o.top_n, sizeof(*a->top_polls));
	a->top_sched = calloc(a->o.top_n, sizeof(*a->top_sched));
	if (a->o.timeline_cap)
		a->tl = calloc(a->o.timeline_cap, sizeof(*a->tl));
	a->ur = ur_new(a->o.timeline_cap);
	a->sv = sv_new(starve_told, a);
	a->lk = lk_new();
	if (!a->top_polls || !a->top_sched || (a->o.timeline_cap && !a->tl) || !a->ur || !a->sv ||
	    !a->lk) {
		an_free(a);
		return NULL;
	}
	ur_set_site_fn(a->ur, task_site_of, a);
	a->thr = a->thr_min = UINT64_MAX;
	return a;
}

static void task_free(struct task *t)
{
	hist_free(&t->poll);
	hist_free(&t->sched);
	hist_free(&t->pending);
	free(t);
}

static void site_free(struct an_site *s)
{
	if (!s)
		return;
	free(s->file);
	free(s->type_name);
	free(s->location);
	hist_free(&s->poll_ns);
	hist_free(&s->sched_ns);
	hist_free(&s->pending_ns);
	hist_free(&s->lifetime_ns);
	free(s);
}

void an_free(struct analyzer *a)
{
	if (!a)
		return;
	ur_free(a->ur);
	sv_free(a->sv);
	lk_free(a->lk);
	free(a->dl_v);
	free(a->dl_e);
	free(a->dl_off);
	free(a->dl_roff);
	free(a->dl_r);
	free(a->dl_q);
	for (size_t i = 0; i < a->tasks.cap; i++)
		if (a->tasks.e[i].v)
			task_free(a->tasks.e[i].v);
	for (size_t i = 0; i < a->nsites; i++)
		site_free(a->sitev[i]);
	for (size_t i = 0; i < a->nworkers; i++) {
		hist_free(&a->workerv[i]->park_ns);
		free(a->workerv[i]);
	}
	free(a->tasks.e);
	free(a->sites.e);
	free(a->workers.e);
	free(a->runtime_tids.e);
	for (size_t i = 0; i < a->ntypes; i++)
		free(a->type_names[i]);
	free(a->type_names);
	free(a->type_sites);
	free(a->sitev);
	free(a->workerv);
	free(a->records);
	free(a->findings);
	free(a->top_polls);
	free(a->top_sched);
	free(a->tl);
	for (size_t i = 0; i < a->kthreads.cap; i++)
		if (a->kthreads.e[i].v) {
			free(((struct kthread *)a->kthreads.e[i].v)->v);
			free(a->kthreads.e[i].v);
		}
	free(a->kthreads.e);
	free(a->cpu_idx.e);
	free(a->blk_idx.e);
	free(a->cpu_stacks);
	free(a->blk_stacks);
	free(a->lst_idx.e);
	free(a->lname_idx.e);
	free(a->lst);
	free(a->lnames);
	for (size_t i = 0; i < a->fst_cap; i++)
		free(a->fst[i].v);
	free(a->fst);
	free(a->ents);
	free(a->lost.e);
	free(a->loss);
	free(a->aside);
	free(a);
}

/* ---- lost events ---- */
static int grow(void **v, size_t *cap, size_t need, size_t elem);

int an_lost_task(struct analyzer *a, uint32_t pid, uint64_t key, uint64_t types)
{
	uintptr_t had = (uintptr_t)htab_get(&a->lost, pid, key);

	a->lost_by_task = true;
	if (!types || (had & types) == types)
		return 0;
	return htab_put(&a->lost, pid, key, (void *)(had | (uintptr_t)types));
}

/* The event types whose loss could make up a finding of kind k. */
static uint64_t rests_on(enum an_finding_kind k)
{
	switch (k) {
	case AN_STALLED:
		return 1ull << TET_EV_WAKE;
	case AN_DEADLOCK:
		return 1ull << TET_EV_WAKE | 1ull << TET_EV_LOCK;
	case AN_LOST_WAKER:
		return 1ull << TET_EV_WAKE | 1ull << TET_EV_WAKER_CLONE;
	case AN_NEVER_YIELDS:
		return 1ull << TET_EV_POLL_END;
	case AN_LONG_POLL:
	case AN_STARVATION: /* its first holder's poll */
		return 1ull << TET_EV_POLL_BEGIN | 1ull << TET_EV_POLL_END;
	case AN_SELF_WAKE:
		return 1ull << TET_EV_YIELD;
	default:
		return ~0ull;
	}
}

void an_loss_window(struct analyzer *a, uint64_t from, uint64_t to)
{
	if (a->nloss && from <= a->loss[a->nloss - 1].to) { /* overlaps the last: one window */
		if (to > a->loss[a->nloss - 1].to)
			a->loss[a->nloss - 1].to = to;
		return;
	}
	if (a->nloss == 4096 || grow((void **)&a->loss, &a->loss_cap, a->nloss + 1, sizeof(*a->loss))) {
		if (a->nloss) /* bounded: the last window stretches */
			a->loss[a->nloss - 1].to = to;
		return;
	}
	a->loss[a->nloss].from = from;
	a->loss[a->nloss].to = to;
	a->nloss++;
}

void an_lost_by_task(struct analyzer *a, bool by_task)
{
	a->lost_by_task = by_task;
}

/* Could lost events explain finding f? With the lost tasks known (an_lost_task): one of its
 * task's events was lost. Otherwise: events were lost while its evidence ran (from its first
 * occurrence to its end, or now when it is still going on). */
static bool finding_lossy(const struct analyzer *a, const struct an_finding *f)
{
	uint64_t end = f->ongoing ? a->now : f->last_ts + f->value_ns + f->cpu_wait_ns;
	uint64_t from = f->first_ts;

	if (a->lost_by_task) {
		bool lost = ((uintptr_t)htab_get(&a->lost, f->pid,
						 a->o.key_by_header ? f->header_ptr : f->task_id) &
			     rests_on(f->kind)) != 0;

		for (unsigned i = 0; f->kind == AN_DEADLOCK && i < f->nmembers && !lost; i++)
			lost = ((uintptr_t)htab_get(&a->lost, f->pid, f->members[i].task_id) &
				rests_on(f->kind)) != 0; /* every member's waits and holds count */
		return lost;
	}
	for (unsigned i = 0; f->kind == AN_DEADLOCK && i < f->nmembers; i++)
		if (f->members[i].held_since && f->members[i].held_since < from)
			from = f->members[i].held_since; /* from when its locks were taken */
	for (size_t i = 0; i < a->nloss; i++)
		if (a->loss[i].from <= end && a->loss[i].to >= from)
			return true;
	return false;
}

/* Moves the findings lost events could explain out of the list (an_findings), into the aside
 * list (an_findings_aside), and drops the superseded ones, keeping every index (tasks',
 * per-finding stacks) right. */
static void set_aside(struct analyzer *a)
{
	int32_t *map;
	size_t n = 0, na = 0;

	if ((!a->lost_by_task && !a->nloss && !a->t.stalled_in_deadlock) || !a->nfindings)
		return;
	map = calloc(a->nfindings, sizeof(*map));
	a->aside = realloc(a->aside, (a->naside + a->nfindings) * sizeof(*a->aside));
	if (!map || !a->aside) {
		free(map);
		return;
	}
	for (size_t i = 0; i < a->nfindings; i++) {
		struct an_finding *f = &a->findings[i];

		if (f->superseded || finding_lossy(a, f)) {
			if (!f->superseded)
				a->aside[a->naside + na++] = *f;
			if (f->site && f->site->findings[f->kind])
				((struct an_site *)f->site)->findings[f->kind]--;
			if (i < a->fst_cap) {
				free(a->fst[i].v);
				a->fst[i].v = NULL;
				a->fst[i].n = a->fst[i].cap = 0;
			}
			continue;
		}
		map[i] = (int32_t)(n + 1);
		if (n != i) {
			a->findings[n] = *f;
			if (i < a->fst_cap) {
				a->fst[n] = a->fst[i];
				memset(&a->fst[i], 0, sizeof(a->fst[i]));
			}
		}
		n++;
	}
	a->nfindings = n;
	a->naside += na;
	a->t.findings_set_aside = a->naside;
	for (size_t i = 0; i < a->tasks.cap; i++) {
		struct task *t = a->tasks.e[i].v;

		for (int k = 0; t && k < AN_FINDING_KINDS; k++)
			if (t->finding[k])
				t->finding[k] = map[t->finding[k] - 1];
	}
	free(map);
}

size_t an_findings_aside(const struct analyzer *a, const struct an_finding **f)
{
	*f = a->aside;
	return a->naside;
}

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t n;
	void *p;

	if (need <= *cap)
		return 0;
	n = *cap ? *cap * 2 : 16;
	while (n < need)
		n *= 2;
	p = realloc(*v, n * elem);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = n;
	return 0;
}

/* ---- sites ---- */
static uint64_t bytes_hash(const char *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
	return h;
}

static char *dup_bytes(const char *p, size_t n)
{
	char *d = malloc(n + 1);

	if (!d)
		return NULL;
	memcpy(d, p, n);
	d[n] = 0;
	return d;
}

static struct an_site *site_add(struct analyzer *a, bool unknown)
{
	struct an_site *s;

	if (grow((void **)&a->sitev, &a->sites_cap, a->nsites + 1, sizeof(*a->sitev)))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->index = (uint32_t)a->nsites;
	s->unknown = unknown;
	a->sitev[a->nsites++] = s;
	return s;
}

static struct an_site *site_unknown(struct analyzer *a)
{
	if (!a->unknown_site)
		a->unknown_site = site_add(a, true);
	return a->unknown_site;
}

int an_set_types(struct analyzer *a, const char *const *names, size_t n)
{
	a->type_names = calloc(n ? n : 1, sizeof(*a->type_names));
	a->type_sites = calloc(n ? n : 1, sizeof(*a->type_sites));
	if (!a->type_names || !a->type_sites)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		a->type_names[i] = strdup(names[i]);
		if (!a->type_names[i])
			return -ENOMEM;
		a->ntypes = i + 1;
	}
	return 0;
}

/* The site of future type `idx` (uprobe fallback), NULL when out of range. */
static struct an_site *site_typed(struct analyzer *a, uint64_t idx)
{
	struct an_site *s;

	if (idx >= a->ntypes)
		return NULL;
	if (a->type_sites[idx])
		return a->type_sites[idx];
	if (a->nsites >= a->o.max_sites)
		return NULL;
	s = site_add(a, false);
	if (!s)
		return NULL;
	s->typed = true;
	s->type_len = s->type_len_reported = strlen(a->type_names[idx]);
	s->type_name = dup_bytes(a->type_names[idx], s->type_len);
	if (!s->type_name)
		return NULL;
	/* spawn_blocking tasks are BlockingTask<F>: exempt from long_poll as with USDT */
	s->kind = !strncmp(s->type_name, "tokio::runtime::blocking::task::BlockingTask<", 45) ?
		  TET_KIND_BLOCKING : TET_KIND_SPAWN;
	s->runtime = an_type_in_tokio(s->type_name, s->type_len);
	a->type_sites[idx] = s;
	return s;
}

/*
 * Sites Tokio spawns itself (the multi-thread runtime's workers are blocking tasks launched from
 * tokio/src/runtime/scheduler/multi_thread/worker.rs; tokio::fs and stdio hand their calls to
 * spawn_blocking from tokio/src/fs, tokio/src/io): their location is in the tokio crate's sources,
 * wherever the crate was unpacked — a path component "tokio" (cargo vendor, a git checkout's
 * member, Tokio's own repository) or "tokio-VERSION" (the registry, Debian's packaged crates,
 * cargo vendor with several versions, the usdt kit's patched copy) followed by "/src/". A digit
 * after the dash tells a version from tokio-util, tokio-stream, tokio-uring: crates of their
 * own, whose spawns are the program's.
 */
bool an_file_in_tokio(const char *f, size_t n)
{
	for (size_t i = 0; i + 5 <= n; i++) {
		size_t j = i + 5;

		if ((i && f[i - 1] != '/') || memcmp(f + i, "tokio", 5))
			continue;
		if (j < n && f[j] == '-') {
			if (j + 1 >= n || f[j + 1] < '0' || f[j + 1] > '9')
				continue;
			while (j < n && f[j] != '/')
				j++;
		}
		if (n - j >= 5 && !memcmp(f + j, "/src/", 5))
			return true;
	}
	return false;
}

/* The uprobe fallback knows a site by its future type only: Tokio's own blocking tasks are
 * BlockingTask<F> of a closure in the tokio crate (the workers: BlockingTask<tokio::runtime::
 * scheduler::multi_thread::worker::{impl#0}::launch::{closure_env#0}>; tokio::fs's calls), where
 * the program's spawn_blocking is BlockingTask of its own closure. A future of Tokio's the program
 * spawned itself (tokio::spawn(tokio::time::sleep(…))) stays the program's. */
bool an_type_in_tokio(const char *t, size_t n)
{
	static const char bt[] = "tokio::runtime::blocking::task::BlockingTask<tokio::";

	return n >= sizeof(bt) - 1 && !memcmp(t, bt, sizeof(bt) - 1);
}

static bool site_matches(const struct an_site *s, const char *file, size_t flen, uint32_t line,
			 uint32_t col, const char *type, size_t tlen, uint8_t kind)
{
	return !s->unknown && !s->other && s->line == line && s->col == col && s->kind == kind &&
	       s->file_len == flen && s->type_len == tlen && !memcmp(s->file, file, flen) &&
	       !memcmp(s->type_name, type, tlen);
}

static struct an_site *site_get(struct analyzer *a, const struct tet_spawn_rec *r)
{
	const char *file = r->data, *type = r->data + TET_FILE_MAX;
	size_t flen = r->file_copied > TET_FILE_MAX ? TET_FILE_MAX : r->file_copied;
	size_t tlen = r->type_copied > TET_TYPE_MAX ? TET_TYPE_MAX : r->type_copied;
	uint8_t kind = (uint8_t)(r->kind < 256 ? r->kind : 255);
	uint64_t h = bytes_hash(type, tlen, bytes_hash(file, flen, 0xcbf29ce484222325ull) ^ kind);
	uint64_t k2 = (uint64_t)r->line << 32 | r->col;
	struct an_site *s;
	char buf[32];
	int n;

	for (;; h++) { /* a (64-bit) hash collision moves on to the next key */
		s = htab_get(&a->sites, h, k2);
		if (!s)
			break;
		if (site_matches(s, file, flen, r->line, r->col, type, tlen, kind))
			return s;
	}
	if (a->nsites >= a->o.max_sites) {
		if (!a->other_site) {
			a->other_site = site_add(a, false);
			if (a->other_site)
				a->other_site->other = true;
		}
		return a->other_site;
	}
	s = site_add(a, false);
	if (!s)
		return NULL;
	s->kind = kind;
	s->line = r->line;
	s->col = r->col;
	s->file = dup_bytes(file, flen);
	s->file_len = flen;
	s->file_len_reported = r->file_len;
	s->type_name = dup_bytes(type, tlen);
	s->type_len = tlen;
	s->type_len_reported = r->type_len;
	s->runtime = an_file_in_tokio(file, flen);
	n = snprintf(buf, sizeof(buf), ":%u:%u", r->line, r->col);
	s->location = malloc(flen + (size_t)n + 1);
	if (!s->file || !s->type_name || !s->location)
		return NULL; /* freed with the site list */
	memcpy(s->location, file, flen);
	memcpy(s->location + flen, buf, (size_t)n + 1);
	s->location_len = flen + (size_t)n;
	if (htab_put(&a->sites, h, k2, s))
		return NULL;
	return s;
}

/* ---- workers and runtime threads ---- */
static inline struct an_worker *worker_find(const struct analyzer *a, uint32_t pid,
					     int32_t index)
{
	for (size_t i = 0; i < a->nworkers && i < 4; i++) /* few workers: the common case */
		if (a->workerv[i]->pid == pid && a->workerv[i]->index == index)
			return a->workerv[i];
	return htab_get(&a->workers, pid, (uint32_t)index);
}

static struct an_worker *worker_get(struct analyzer *a, uint32_t pid, int32_t index, uint64_t ts)
{
	struct an_worker *w = worker_find(a, pid, index);

	if (w)
		return w;
	if (a->nworkers >= WORKERS_MAX) { /* indexes the process makes up: counted, O(1) */
		a->t.workers_untracked++;
		return NULL;
	}
	if (grow((void **)&a->workerv, &a->workers_cap, a->nworkers + 1, sizeof(*a->workerv)))
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->pid = pid;
	w->index = index;
	w->first_ts = ts;
	if (htab_put(&a->workers, pid, (uint32_t)index, w)) {
		free(w);
		return NULL;
	}
	a->workerv[a->nworkers++] = w;
	return w;
}

/* (pid, tid) is the runtime thread added or found last (the memo names a thread of the table
 * only: none while the table is empty) */
static bool runtime_tid_last(const struct analyzer *a, uint32_t pid, uint32_t tid)
{
	return a->runtime_tids.len && a->last_runtime_pid == pid && a->last_runtime_tid == tid;
}

/* A runtime's thread: one that polled a task on a worker (the last one added, most often) */
static bool runtime_tid_known(const struct analyzer *a, uint32_t pid, uint32_t tid)
{
	return runtime_tid_last(a, pid, tid) || htab_get(&a->runtime_tids, pid, tid);
}

static void runtime_tid_add(struct analyzer *a, uint32_t pid, uint32_t tid)
{
	if (runtime_tid_last(a, pid, tid))
		return;
	/* the memo names a thread of the table only (one the table could not take is tried
	 * again at its next poll) */
	if (!htab_get(&a->runtime_tids, pid, tid) &&
	    htab_put(&a->runtime_tids, pid, tid, (void *)1))
		return;
	a->last_runtime_pid = pid;
	a->last_runtime_tid = tid;
}

/* ---- findings, tops, timeline ---- */
static void detect_call(struct analyzer *a, const struct task *t, unsigned what, uint64_t start,
			uint64_t at, uint64_t value, uint64_t threshold)
{
	a->o.on_detect(a->o.detect_ctx, &(struct an_detect){
		.what = what, .pid = t->s.pid, .tid = t->poll_tid, .task_id = t->s.task_id,
		.header_ptr = t->s.header_ptr, .ts = start, .at = at, .value_ns = value,
		.threshold_ns = threshold, .site = t->site });
}

/* opts.on_detect: a new occurrence (start) of finding kind k of task t. */
static void detected(struct analyzer *a, struct task *t, enum an_finding_kind k, uint64_t start,
		     uint64_t at, uint64_t value, uint64_t threshold)
{
	if (!a->o.on_detect || !(a->o.detect & (1u << k)) || t->detected[k] == start)
		return;
	t->detected[k] = start;
	detect_call(a, t, k, start, at, value, threshold);
}

/* A new finding slot, zeroed (NULL: beyond max_findings, counted). */
static struct an_finding *finding_new(struct analyzer *a, enum an_finding_kind k)
{
	struct an_finding *f;

	if (a->nfindings >= a->o.max_findings ||
	    grow((void **)&a->findings, &a->findings_cap, a->nfindings + 1, sizeof(*a->findings))) {
		a->t.findings_omitted++;
		return NULL;
	}
	f = &a->findings[a->nfindings++];
	memset(f, 0, sizeof(*f));
	f->kind = k;
	f->live_wakers = -1;
	return f;
}

static struct an_finding *finding_get(struct analyzer *a, struct task *t,
				      enum an_finding_kind k, uint64_t ts, uint64_t threshold)
{
	struct an_finding *f;

	if (!(a->o.detect & (1u << k)))
		return NULL;
	if (t->finding[k])
		return &a->findings[t->finding[k] - 1];
	f = finding_new(a, k);
	if (!f)
		return NULL;
	f->pid = t->s.pid;
	f->task_id = t->s.task_id;
	f->header_ptr = t->s.header_ptr;
	f->site = t->site;
	f->first_ts = ts;
	f->threshold_ns = threshold;
	f->live_wakers = -1;
	f->name_len = t->s.name_len;
	memcpy(f->name, t->s.name, t->s.name_len);
	t->finding[k] = (int32_t)a->nfindings;
	t->site->findings[k]++;
	return f;
}

/* Counts a new occurrence when `start` (poll begin, pending since) differs from the last. */
static void occur(struct an_finding *f, uint64_t start)
{
	if (!f->occurrences || f->last_ts != start) {
		f->occurrences++;
		f->last_ts = start;
	}
}

static void top_add(struct an_top *v, size_t *n, size_t cap, const struct an_top *x)
{
	size_t i;

	if (*n == cap && x->value_ns <= v[cap - 1].value_ns)
		return;
	i = *n < cap ? (*n)++ : cap - 1;
	for (; i > 0 && v[i - 1].value_ns < x->value_ns; i--)
		v[i] = v[i - 1];
	v[i] = *x;
}

static void tl_push(struct analyzer *a, const struct an_tl_rec *r)
{
	if (!a->o.timeline_cap)
		return;
	a->t.timeline_events++;
	a->tl[a->tl_head] = *r;
	a->tl_head = (a->tl_head + 1) % a->o.timeline_cap;
	if (a->tl_len < a->o.timeline_cap)
		a->tl_len++;
}

/* ---- tasks ---- */
static uint64_t task_key(const struct analyzer *a, uint64_t task_id, uint64_t header_ptr)
{
	return a->o.key_by_header ? header_ptr : task_id;
}

/* the task memo's slot: an id's low bits, a header's above its alignment */
static size_t memo_slot(const struct analyzer *a, uint64_t key)
{
	return (size_t)(a->o.key_by_header ? key >> 6 : key) & (AN_TASK_MEMO - 1);
}

/* ---- sampling: tasks followed whole, or not at all ----
 * Batched capture's process records one task in N (PROBES.md "Sampling"), and the tracer may
 * raise N at run time (adaptive sampling): from then on the tasks the new rate leaves out stop
 * being recorded, also those already running. Such a task is set aside the moment the raise
 * takes effect (TET_REC_RATE, delivered in time order): it leaves the task table, so no
 * detector judges the silence that follows, its findings stop there, and it is counted; what
 * it did before stays in the site figures (polls recorded whole). A lost batch (TET_REC_GAP)
 * held events of tasks nobody can name, all of its own process: every task of that process
 * alive during the gap is set aside, also one that ended during it. A task met later is
 * followed only if it was recorded all along: met at its spawn, the rate in force then picks
 * it; met without its spawn (spawned before the capture), every rate so far picks it, and no
 * gap came from its process. */
#define RATE_GOLDEN 0x9e3779b97f4a7c15ull

static uint64_t rate_thr(uint32_t rate)
{
	return rate <= 1 ? UINT64_MAX : UINT64_MAX / rate;
}

static bool gap_in(const struct analyzer *a, uint32_t pid)
{
	if (a->gap_pids_full)
		return true;
	for (size_t i = 0; i < a->ngap_pids; i++)
		if (a->gap_pids[i] == pid)
			return true;
	return false;
}

static bool admit(const struct analyzer *a, uint32_t pid, uint64_t id, bool spawn)
{
	if (!a->smp.known || a->o.key_by_header)
		return true;
	if (spawn)
		return id * RATE_GOLDEN <= a->thr;
	return id * RATE_GOLDEN <= a->thr_min && !gap_in(a, pid);
}

/* An event of a task not in the table: one the rule does not follow, or an unknown one. */
static void not_followed(struct analyzer *a, uint32_t pid, uint64_t id, uint64_t *unknown)
{
	if (a->smp.known && !a->o.key_by_header && !admit(a, pid, id, false))
		a->t.events_set_aside++;
	else
		(*unknown)++;
}

const struct an_sampling *an_get_sampling(const struct analyzer *a)
{
	return &a->smp;
}

/* spawn: at its spawn (else at a poll of a task not seen before: spawned before the capture, or
 * not followed, so at every one of its polls while the live-task bound holds) */
static struct task *task_new(struct analyzer *a, uint32_t pid, uint64_t id, uint64_t hdr,
			     struct an_site *site, uint64_t ts, bool spawn)
{
	struct task *t;

	if (!id && !a->o.key_by_header) { /* PROBES.md: never 0; the process says otherwise */
		a->t.task_id_zero++;
		return NULL;
	}
	if (!admit(a, pid, id, spawn)) {
		a->t.events_set_aside++;
		return NULL;
	}
	if (a->t.tasks_live >= a->o.max_live_tasks) {
		if (spawn) {
			a->t.tasks_untracked++;
			site->tasks_untracked++;
		} else {
			a->t.polls_untracked++;
		}
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->s.pid = pid;
	t->s.task_id = id;
	t->s.header_ptr = hdr;
	t->s.site = site;
	t->s.term_reason = -1;
	t->s.first_ts = ts;
	t->s.last_ts = ts;
	t->site = site;
	t->seq = a->seq++;
	if (htab_put(&a->tasks, pid, task_key(a, id, hdr), t)) {
		free(t);
		return NULL;
	}
	a->t.tasks_seen++;
	a->t.tasks_live++;
	site->tasks++;
	return t;
}

static void summarize(const struct analyzer *a, const struct task *t, struct an_task_summary *s,
		      uint64_t now)
{
	*s = t->s;
	ur_task_stats(a->ur, t->s.pid, task_key(a, t->s.task_id, t->s.header_ptr), &s->uring);
	hist_summarize(&t->poll, &s->poll_ns);
	hist_summarize(&t->sched, &s->sched_ns);
	hist_summarize(&t->pending, &s->pending_ns);
	s->pending_now_ns = t->s.state == AN_PENDING && now > t->pending_since ?
			    now - t->pending_since : 0;
}

/* A multi-thread runtime's worker launcher: a blocking task Tokio spawns from its
 * runtime/scheduler/multi_thread/worker.rs (its one poll is the worker thread's life). */
static bool site_is_mt_launcher(const struct an_site *s)
{
	static const char tail[] = "runtime/scheduler/multi_thread/worker.rs";
	size_t n = sizeof(tail) - 1;

	return s && s->runtime && s->file && s->file_len >= n &&
	       !memcmp(s->file + s->file_len - n, tail, n);
}

static void check_self_wake(struct analyzer *a, struct task *t, uint64_t ts, bool final);

/* Task t leaves the table (retired, or set aside by the sampling rule) and is freed. */
static void task_drop(struct analyzer *a, struct task *t)
{
	uint64_t key = task_key(a, t->s.task_id, t->s.header_ptr);

	htab_del(&a->tasks, t->s.pid, key);
	if (!a->o.key_by_header)
		lk_task_gone(a->lk, t->s.pid, t->s.task_id);
	ur_task_gone(a->ur, t->s.pid, key);
	if (a->memo[memo_slot(a, key)].t == t)
		a->memo[memo_slot(a, key)].t = NULL;
	a->t.tasks_live--;
	task_free(t);
}

static void task_retire(struct analyzer *a, struct task *t, uint64_t ts, int reason)
{
	struct an_site *site = t->site;

	check_self_wake(a, t, ts, true);
	t->s.state = AN_TERMINATED;
	t->s.term_reason = (int8_t)reason;
	t->s.end_ts = ts;
	site->tasks_terminated++;
	if (reason >= 0 && reason < TET_TERM_CODES)
		site->terms[reason]++;
	if (t->s.spawn_seen && ts >= t->s.spawn_ts)
		hist_add(&site->lifetime_ns, ts - t->s.spawn_ts);
	for (int k = 0; k < AN_FINDING_KINDS; k++)
		if (t->finding[k])
			a->findings[t->finding[k] - 1].ongoing = false;
	bool has_finding = false;

	for (int k = 0; k < AN_FINDING_KINDS; k++)
		has_finding |= t->finding[k] != 0;
	/* tasks with a finding are always kept (findings are bounded themselves) */
	if ((a->nrecords < a->o.max_task_records || has_finding) &&
	    !grow((void **)&a->records, &a->records_cap, a->nrecords + 1, sizeof(*a->records)))
		summarize(a, t, &a->records[a->nrecords++], ts);
	else
		a->t.task_records_omitted++;
	task_drop(a, t);
}

static inline struct task *task_find(struct analyzer *a, uint32_t pid, uint64_t id, uint64_t hdr)
{
	uint64_t key = task_key(a, id, hdr);
	size_t m = memo_slot(a, key);
	struct task *t = a->memo[m].t;

	if (t && a->memo[m].key == key && t->s.pid == pid)
		return t;
	t = htab_get(&a->tasks, pid, key);
	if (t) {
		a->memo[m].key = key;
		a->memo[m].t = t;
	}
	return t;
}

/* ---- sampling: the rule's records (see "sampling" above) ---- */
/* Task t is no longer followed (at ts): out of the table, its findings end here. */
static void task_set_aside(struct analyzer *a, struct task *t, uint64_t ts, bool gap)
{
	for (int k = 0; k < AN_FINDING_KINDS; k++)
		if (t->finding[k])
			a->findings[t->finding[k] - 1].ongoing = false;
	if (t->s.state == AN_POLLING && t->poll_worker >= 0 && t->s.kind != TET_KIND_BLOCKING)
		sv_poll_end(a->sv, t->s.pid, t->poll_tid, t->s.task_id, t->s.header_ptr, ts,
			    a->o.long_poll_ns);
	if (gap)
		a->t.tasks_set_aside_gap++;
	else
		a->t.tasks_set_aside_rate++;
	a->t.polls_set_aside += t->s.polls;
	task_drop(a, t);
}

/* Sets aside every task followed that thr leaves out (UINT64_MAX… none), or with `all` (a gap)
 * every task of process pid. */
static void set_aside_live(struct analyzer *a, uint64_t thr, bool all, uint32_t pid, uint64_t ts)
{
	struct task **v;
	size_t n = 0;

	if (!a->tasks.len)
		return;
	v = malloc(a->tasks.len * sizeof(*v));
	if (!v) { /* cannot list them: no task met from now on is followed either */
		a->thr_min = 0;
		return;
	}
	for (size_t i = 0; i < a->tasks.cap; i++) {
		struct task *t = a->tasks.e[i].v;

		if (t && (all ? t->s.pid == pid : t->s.task_id * RATE_GOLDEN > thr))
			v[n++] = t;
	}
	for (size_t i = 0; i < n; i++)
		task_set_aside(a, v[i], ts, all);
	free(v);
}

static void on_rate(struct analyzer *a, const struct tet_rate_rec *r)
{
	struct an_sampling *m = &a->smp;
	uint64_t thr = rate_thr(r->rate);
	struct an_rate_change *c;

	if (a->o.key_by_header)
		return; /* no task ids: nothing samples */
	if (!m->known) {
		m->known = true;
		a->thr = a->thr_min = UINT64_MAX;
	}
	if (thr < a->thr)
		set_aside_live(a, thr, false, 0, r->h.ts);
	a->thr = thr;
	if (thr < a->thr_min)
		a->thr_min = thr;
	m->rate = r->rate ? r->rate : 1;
	if (m->rate > m->rate_max)
		m->rate_max = m->rate;
	if (m->nchanges == AN_RATE_CHANGES) {
		m->changes_omitted++;
		c = &m->changes[AN_RATE_CHANGES - 1];
	} else {
		c = &m->changes[m->nchanges++];
	}
	*c = (struct an_rate_change){ r->h.ts, m->rate, r->why < TET_RATE_WHYS ? r->why : 0 };
}

/* Batches of a thread of process h.pid were lost between from_ns and h.ts: every task of that
 * process alive then is set aside, those still followed and those that ended since from_ns
 * (their records go), and none of its tasks met later without its spawn is followed. The
 * batches held that process's events only: the other processes' tasks stay. */
static void on_gap(struct analyzer *a, const struct tet_gap_rec *r)
{
	size_t n = 0;

	if (a->o.key_by_header)
		return;
	a->smp.gaps++;
	if (!a->smp.known) {
		a->smp.known = true;
		a->smp.rate = a->smp.rate_max = 1;
		a->thr = a->thr_min = UINT64_MAX;
	}
	if (!gap_in(a, r->h.pid)) {
		if (a->ngap_pids < AN_GAP_PIDS)
			a->gap_pids[a->ngap_pids++] = r->h.pid;
		else
			a->gap_pids_full = true;
	}
	set_aside_live(a, 0, true, r->h.pid, r->h.ts);
	for (size_t i = 0; i < a->nrecords; i++) {
		const struct an_task_summary *s = &a->records[i];

		if (s->pid == r->h.pid && s->end_ts >= r->from_ns) {
			a->t.tasks_set_aside_gap++;
			a->t.polls_set_aside += s->polls;
			continue;
		}
		a->records[n++] = *s;
	}
	a->nrecords = n;
}

/* ---- event handlers ---- */
static int on_spawn(struct analyzer *a, const struct tet_spawn_rec *r)
{
	struct an_site *site;
	struct task *t;

	a->t.spawns++;
	t = task_find(a, r->h.pid, r->task_id, r->header_ptr);
	if (t) /* key reused (fallback) or a duplicate: the old task is gone */
		task_retire(a, t, r->h.ts, -1);
	site = site_get(a, r);
	if (!site)
		return -ENOMEM;
	t = task_new(a, r->h.pid, r->task_id, r->header_ptr, site, r->h.ts, true);
	if (!t)
		return 0;
	t->s.kind = (uint8_t)r->kind;
	t->s.state = AN_SPAWNED;
	t->s.spawn_seen = true;
	t->s.spawn_ts = r->h.ts;
	t->s.wakers_known = a->o.waker_events;
	t->ready_since = r->h.ts;
	if (sv_in_poll(a->sv, r->h.pid, r->h.tid))
		t->spawn_tid = r->h.tid;
	tl_push(a, &(struct an_tl_rec){ .ts = r->h.ts, .task_id = r->task_id,
				       .header_ptr = r->header_ptr, .pid = r->h.pid,
				       .tid = r->h.tid, .worker = -1, .type = AN_TL_SPAWN,
				       .code = (uint8_t)r->kind });
	return 0;
}

/* ---- why a poll was slow (opts.sched) ----
 *
 * Off-CPU periods (TET_REC_OFFCPU) and CPU samples (TET_REC_SAMPLE) of a thread wait in its
 * FIFO, in time order, until a poll of that thread ends: entries up to the poll's end are then
 * taken off, those overlapping the poll charged to it. In per-event capture the records of a
 * poll come before its poll_end (ring order); in batched capture the poll comes later, in its
 * thread's batch, and the entries wait (bounded: KQ_MAX, KQ_MAX_AGE_NS). */
static struct kthread *kthread_get(struct analyzer *a, uint32_t pid, uint32_t tid, bool create)
{
	struct kthread *kt = htab_get(&a->kthreads, pid, tid);

	if (kt || !create)
		return kt;
	if (a->kthreads.len >= KTHREADS_MAX) /* the process made them: idle ones go at a tick */
		return NULL;
	kt = calloc(1, sizeof(*kt));
	if (kt && htab_put(&a->kthreads, pid, tid, kt)) {
		free(kt);
		kt = NULL;
	}
	return kt;
}

static uint64_t overlap(uint64_t lo, uint64_t hi, uint64_t begin, uint64_t end)
{
	if (lo < begin)
		lo = begin;
	if (hi > end)
		hi = end;
	return hi > lo ? hi - lo : 0;
}

/* Credits entry e to the open polls below `below` (enclosing the poll that takes it, or all of
 * them when below = nopen), each over [its begin, end]. */
static void kq_credit(struct kthread *kt, uint32_t below, const struct kq_ent *e, uint64_t end)
{
	for (uint32_t j = 0; j < below && j < kt->nopen; j++) {
		struct kopen *o = &kt->open[j];
		uint64_t asleep = e->woken ? e->woken : e->until, b, p;

		if (e->kind == KQ_SAMPLE)
			continue; /* a sample belongs to one poll only: the innermost (kq_own) */
		b = e->kind == KQ_BLOCKED ? overlap(e->since, asleep, o->begin, end) : 0;
		p = overlap(e->since, e->until, o->begin, end) - b;
		o->blocked += b;
		o->preempted += p;
		if (e->kind == KQ_STOLEN)
			o->stolen += p;
	}
}

static struct an_stack *stack_add(struct analyzer *a, struct htab *idx, struct an_stack **v,
				  size_t *n, size_t *cap, const struct an_site *site,
				  const struct an_stack_key *k);

/* Entry e fell in the innermost open poll o but in none of its nested polls: o's own. */
static void kq_own(struct analyzer *a, struct kopen *o, const struct kq_ent *e)
{
	struct an_stack *st = NULL;
	uint64_t asleep = e->woken ? e->woken : e->until;

	if (e->kind == KQ_SAMPLE) {
		o->own_samples++;
		o->site->samples++;
		a->t.samples_in_polls++;
		st = stack_add(a, &a->cpu_idx, &a->cpu_stacks, &a->ncpu, &a->cpu_cap, o->site, &e->k);
	} else {
		a->t.offcpu_in_polls++;
		if (e->kind == KQ_BLOCKED && asleep > e->since)
			st = stack_add(a, &a->blk_idx, &a->blk_stacks, &a->nblk, &a->blk_cap, o->site,
				       &e->k);
	}
	if (st) {
		st->count++;
		st->ns += e->kind == KQ_BLOCKED ? asleep - e->since : 0;
	}
}

/* Takes the oldest entry off: charged to a poll already, or credited to the polls open around
 * it (the innermost one's own when it began inside it), or unmatched. */
static void kq_pop(struct analyzer *a, struct kthread *kt, bool charged)
{
	const struct kq_ent *e = &kt->v[kt->head];

	if (!charged) {
		struct kopen *top = kt->nopen ? &kt->open[kt->nopen - 1] : NULL;

		kq_credit(kt, kt->nopen, e, UINT64_MAX);
		if (top && e->since >= top->begin && top->site)
			kq_own(a, top, e);
		else
			a->t.kernel_unmatched++;
	}
	kt->head++;
	a->nkq--;
	if (--kt->len == 0)
		kt->head = 0;
}

/* A poll begins on the thread (opts.sched / .profile). */
static void kq_open(struct analyzer *a, uint32_t pid, uint32_t tid, uint64_t key, uint64_t begin,
		    struct an_site *site)
{
	struct kthread *kt = kthread_get(a, pid, tid, true);

	if (!kt)
		return;
	if (kt->nopen == KOPEN_MAX) { /* ends were lost: forget the oldest */
		memmove(kt->open, kt->open + 1, (KOPEN_MAX - 1) * sizeof(*kt->open));
		kt->nopen--;
	}
	kt->open[kt->nopen++] = (struct kopen){ .key = key, .begin = begin, .site = site };
}

static int kq_push(struct analyzer *a, uint32_t pid, uint32_t tid, const struct kq_ent *e)
{
	struct kthread *kt = kthread_get(a, pid, tid, true);

	if (!kt) { /* KTHREADS_MAX threads followed */
		a->t.kernel_refused++;
		return 0;
	}
	if (kt->len == KQ_MAX || (a->nkq >= KQ_TOTAL_MAX && kt->len)) {
		kq_pop(a, kt, false);
	} else if (a->nkq >= KQ_TOTAL_MAX) { /* other threads hold the budget until they expire */
		a->t.kernel_refused++;
		return 0;
	}
	if (kt->head + kt->len == kt->cap) {
		if (kt->head) { /* compact */
			memmove(kt->v, kt->v + kt->head, kt->len * sizeof(*kt->v));
			kt->head = 0;
		} else if (grow((void **)&kt->v, &kt->cap, kt->cap + 1, sizeof(*kt->v))) {
			return -ENOMEM;
		}
	}
	kt->v[kt->head + kt->len++] = *e;
	a->nkq++;
	return 0;
}

static int on_kernel(struct analyzer *a, const void *rec, size_t size)
{
	const struct tet_hdr *h = rec;
	struct kq_ent e = { 0 };

	if (h->type == TET_REC_SAMPLE) {
		const struct tet_sample_rec *r = rec;

		if (size < sizeof(*r))
			return -EINVAL;
		a->t.samples++;
		e.since = e.until = h->ts;
		e.kind = KQ_SAMPLE;
		e.k = (struct an_stack_key){ h->pid, r->ustack, r->kstack, -1 };
	} else {
		const struct tet_offcpu_rec *r = rec;

		if (size < sizeof(*r) || r->since > h->ts)
			return -EINVAL;
		a->t.offcpu++;
		e.since = r->since;
		e.until = h->ts;
		e.woken = r->woken >= r->since && r->woken <= h->ts ? r->woken : 0;
		e.kind = r->flags & TET_OFFCPU_PREEMPTED ? KQ_PREEMPTED : KQ_BLOCKED;
		if ((r->flags & TET_OFFCPU_STOLEN) && e.kind == KQ_PREEMPTED) {
			e.kind = KQ_STOLEN;
			a->t.stolen++;
			a->t.stolen_ns += h->ts - r->since;
		}
		e.k = (struct an_stack_key){ h->pid, r->ustack, r->kstack, r->syscall };
	}
	return a->o.sched || a->o.profile ? kq_push(a, h->pid, h->tid, &e) : 0;
}

struct charge {
	uint64_t preempted, blocked;
	uint64_t stolen;               /* … of preempted, the hypervisor's */
	uint64_t own_samples;          /* samples taken in this poll and not in a nested one */
	uint64_t between_samples;      /* … of them, between its nested polls (the site has them) */
	const struct kq_ent *longest;  /* the longest blocked period */
};

/* Takes the thread's entries up to `end` off its FIFO and charges those in [begin, end] to the
 * poll of task `key` (kept in a->ents for the poll's stacks), plus what its nested polls and
 * the gaps between them were credited; everything also goes to the polls enclosing it. */
static void charge_poll(struct analyzer *a, uint32_t pid, uint32_t tid, uint64_t key,
			uint64_t begin, uint64_t end, struct charge *c)
{
	struct kthread *kt = kthread_get(a, pid, tid, false);
	uint32_t at = UINT32_MAX;

	memset(c, 0, sizeof(*c));
	a->nents = 0;
	for (uint32_t j = kt ? kt->nopen : 0; j-- > 0;)
		if (kt->open[j].key == key) {
			at = j;
			break;
		}
	if (at != UINT32_MAX) { /* its nested polls' share; then it is no longer open */
		c->preempted = kt->open[at].preempted;
		c->blocked = kt->open[at].blocked;
		c->stolen = kt->open[at].stolen;
		c->own_samples = c->between_samples = kt->open[at].own_samples;
		kt->nopen = at;
	}
	while (kt && kt->len && kt->v[kt->head].since <= end) {
		const struct kq_ent *e = &kt->v[kt->head];
		uint64_t asleep_until = e->woken ? e->woken : e->until, b = 0, p;
		bool in = e->kind == KQ_SAMPLE ? e->since >= begin : e->until > begin;

		if (!in || grow((void **)&a->ents, &a->ents_cap, a->nents + 1, sizeof(*a->ents))) {
			kq_pop(a, kt, false);
			continue;
		}
		if (e->kind == KQ_SAMPLE) {
			c->own_samples++;
			a->t.samples_in_polls++;
		} else {
			if (e->kind == KQ_BLOCKED)
				b = overlap(e->since, asleep_until, begin, end);
			p = overlap(e->since, e->until, begin, end) - b;
			c->blocked += b;
			c->preempted += p;
			if (e->kind == KQ_STOLEN)
				c->stolen += p;
			a->t.offcpu_in_polls++;
		}
		a->ents[a->nents++] = *e;
		a->ents[a->nents - 1].until = b; /* from here on: its blocked time in this poll */
		kq_pop(a, kt, true);
	}
	if (kt) /* what this poll holds, its enclosing polls hold too */
		for (uint32_t j = 0; j < kt->nopen; j++) {
			kt->open[j].preempted += c->preempted;
			kt->open[j].blocked += c->blocked;
			kt->open[j].stolen += c->stolen;
		}
	for (size_t i = 0; i < a->nents; i++)
		if (a->ents[i].kind == KQ_BLOCKED && a->ents[i].until &&
		    (!c->longest || a->ents[i].until > c->longest->until))
			c->longest = &a->ents[i];
}

/* Drops entries no poll will claim: older than KQ_MAX_AGE_NS; gives back the room of a burst a
 * thread no longer holds (at a tick, not at every poll that empties its FIFO); with half of
 * KTHREADS_MAX threads followed, forgets the idle ones (nothing held, no poll open). */
static void kq_expire(struct analyzer *a, uint64_t now)
{
	size_t nidle = 0;

	for (size_t i = 0; i < a->kthreads.cap; i++) {
		struct kthread *kt = a->kthreads.e[i].v;

		if (!kt)
			continue;
		while (kt->len && kt->v[kt->head].until + KQ_MAX_AGE_NS < now)
			kq_pop(a, kt, false);
		if (!kt->len && kt->cap > 256) { /* the budget counts records held, not room */
			free(kt->v);
			kt->v = NULL;
			kt->cap = 0;
		}
		if (!kt->len && !kt->nopen)
			nidle++;
	}
	if (a->kthreads.len < KTHREADS_MAX / 2 || !nidle)
		return;
	{
		struct hent *idle = malloc(nidle * sizeof(*idle));
		size_t n = 0;

		if (!idle)
			return;
		for (size_t i = 0; i < a->kthreads.cap && n < nidle; i++) {
			struct kthread *kt = a->kthreads.e[i].v;

			if (kt && !kt->len && !kt->nopen)
				idle[n++] = a->kthreads.e[i];
		}
		for (size_t i = 0; i < n; i++) {
			htab_del(&a->kthreads, idle[i].k1, idle[i].k2);
			free(((struct kthread *)idle[i].v)->v);
			free(idle[i].v);
		}
		free(idle);
	}
}

static struct an_stack *stack_add(struct analyzer *a, struct htab *idx, struct an_stack **v,
				  size_t *n, size_t *cap, const struct an_site *site,
				  const struct an_stack_key *k)
{
	uint64_t k1 = (uint64_t)site->index << 32 | k->pid;
	uint64_t k2 = (uint64_t)(uint32_t)k->ustack << 32 | (uint32_t)k->kstack;
	uintptr_t i = (uintptr_t)htab_get(idx, k1, k2);

	if (i)
		return &(*v)[i - 1];
	if (*n >= STACKS_MAX || grow((void **)v, cap, *n + 1, sizeof(**v)) ||
	    htab_put(idx, k1, k2, (void *)(uintptr_t)(*n + 1))) {
		a->t.stacks_omitted++;
		return NULL;
	}
	(*v)[*n] = (struct an_stack){ .k = *k, .site = site };
	return &(*v)[(*n)++];
}

/* A task name as an_lstack.name: interned (AN_LNAMES_MAX; beyond, or on a hash collision with
 * another name, 0: none). */
static uint32_t lname_of(struct analyzer *a, const struct task *t)
{
	uint64_t h;
	uintptr_t i;

	if (!t->s.name_len)
		return 0;
	h = fnv1a(t->s.name, t->s.name_len);
	i = (uintptr_t)htab_get(&a->lname_idx, h, t->s.name_len);
	if (i)
		return a->lnames[i - 1].len == t->s.name_len &&
		       !memcmp(a->lnames[i - 1].s, t->s.name, t->s.name_len) ? (uint32_t)i : 0;
	if (a->nlnames >= AN_LNAMES_MAX ||
	    grow((void **)&a->lnames, &a->lnames_cap, a->nlnames + 1, sizeof(*a->lnames)) ||
	    htab_put(&a->lname_idx, h, t->s.name_len, (void *)(uintptr_t)(a->nlnames + 1)))
		return 0;
	a->lnames[a->nlnames].len = t->s.name_len;
	memcpy(a->lnames[a->nlnames].s, t->s.name, t->s.name_len);
	return (uint32_t)++a->nlnames;
}

/* Stack st (of the cpu or blocked aggregate) charged once more by a poll of t. */
static void lstack_add(struct analyzer *a, const struct an_stack *st, bool blocked,
		       const struct task *t, bool long_poll, uint64_t ns)
{
	uint32_t idx = (uint32_t)(st - (blocked ? a->blk_stacks : a->cpu_stacks));
	uint32_t name = lname_of(a, t);
	uint64_t k1 = (uint64_t)blocked << 32 | idx;
	uint64_t k2 = (uint64_t)(uint32_t)(t->poll_worker + 1) << 32 | (uint64_t)long_poll << 31 | name;
	uintptr_t i = (uintptr_t)htab_get(&a->lst_idx, k1, k2);
	struct an_lstack *l;

	if (!i) {
		if (a->nlst >= AN_LSTACKS_MAX ||
		    grow((void **)&a->lst, &a->lst_cap, a->nlst + 1, sizeof(*a->lst)) ||
		    htab_put(&a->lst_idx, k1, k2, (void *)(uintptr_t)(a->nlst + 1)))
			return; /* the stack's count has it: a reader gives it the site's labels */
		a->lst[a->nlst] = (struct an_lstack){ .blocked = blocked, .long_poll = long_poll,
						      .stack = idx, .worker = t->poll_worker,
						      .name = name };
		i = ++a->nlst;
	}
	l = &a->lst[i - 1];
	l->count++;
	l->ns += ns;
}

/* The poll's entries (a->ents) into its site's stacks (and by label: opts.stack_labels). */
static void stacks_of_poll(struct analyzer *a, const struct task *t, bool long_poll)
{
	for (size_t i = 0; i < a->nents; i++) {
		const struct kq_ent *e = &a->ents[i];
		struct an_stack *st;
		bool blocked = e->kind != KQ_SAMPLE;
		uint64_t ns;

		if (e->kind == KQ_SAMPLE)
			st = stack_add(a, &a->cpu_idx, &a->cpu_stacks, &a->ncpu, &a->cpu_cap, t->site, &e->k);
		else if (e->kind == KQ_BLOCKED && e->until)
			st = stack_add(a, &a->blk_idx, &a->blk_stacks, &a->nblk, &a->blk_cap, t->site, &e->k);
		else
			continue;
		if (!st)
			continue;
		ns = blocked ? e->until : 0;
		st->count++;
		st->ns += ns;
		if (a->o.stack_labels)
			lstack_add(a, st, blocked, t, long_poll, ns);
	}
}

/* The poll's CPU samples into finding f's stacks. */
static void stacks_of_finding(struct analyzer *a, const struct an_finding *f)
{
	size_t fi = (size_t)(f - a->findings), old = a->fst_cap;
	struct fstacks *fs;

	if (grow((void **)&a->fst, &a->fst_cap, fi + 1, sizeof(*a->fst)))
		return;
	memset(a->fst + old, 0, (a->fst_cap - old) * sizeof(*a->fst));
	fs = &a->fst[fi];
	for (size_t i = 0; i < a->nents; i++) {
		const struct kq_ent *e = &a->ents[i];
		size_t j;

		if (e->kind != KQ_SAMPLE)
			continue;
		for (j = 0; j < fs->n; j++)
			if (!memcmp(&fs->v[j].k, &e->k, sizeof(e->k)))
				break;
		if (j == fs->n) {
			if (fs->n >= FSTACKS_MAX ||
			    grow((void **)&fs->v, &fs->cap, fs->n + 1, sizeof(*fs->v))) {
				a->t.stacks_omitted++;
				continue;
			}
			fs->v[fs->n++] = (struct an_stack){ .k = e->k, .site = f->site };
		}
		fs->v[j].count++;
	}
}

/* Finding f's worst occurrence is this poll (d ns, split by c). */
static void finding_split(struct an_finding *f, uint64_t d, uint64_t wait, uint64_t blocked,
			  const struct charge *c)
{
	f->split = true;
	f->cpu_wait_ns = wait;
	f->stolen_ns = c->stolen < wait ? c->stolen : wait;
	f->blocked_ns = blocked;
	f->on_cpu_ns = d - wait - blocked;
	f->blocked_at = (struct an_stack_key){ 0, -1, -1, -1 };
	f->blocked_at_ns = 0;
	if (c->longest) {
		f->blocked_at = c->longest->k;
		f->blocked_at_ns = c->longest->until;
	}
}

/* The poll of t that is still running at the end (never_yields): charged as of now. */
static void charge_open_poll(struct analyzer *a, struct task *t, uint64_t now)
{
	struct an_finding *f;
	struct charge c;
	uint64_t d, wait, blocked;

	if (!(a->o.sched || a->o.profile) || !t->finding[AN_NEVER_YIELDS] || now <= t->poll_begin)
		return;
	f = &a->findings[t->finding[AN_NEVER_YIELDS] - 1];
	charge_poll(a, t->s.pid, t->poll_tid, task_key(a, t->s.task_id, t->s.header_ptr),
		    t->poll_begin, now, &c);
	d = now - t->poll_begin;
	t->s.samples += c.own_samples;
	t->site->samples += c.own_samples - c.between_samples;
	wait = a->o.sched ? (c.preempted < d ? c.preempted : d) : 0;
	stacks_of_poll(a, t, d - wait > a->o.long_poll_ns && t->s.kind != TET_KIND_BLOCKING);
	stacks_of_finding(a, f);
	if (!a->o.sched)
		return;
	blocked = c.blocked < d - wait ? c.blocked : d - wait;
	finding_split(f, d, wait, blocked, &c);
}

void an_set_kernel(struct analyzer *a, bool sched, bool profile)
{
	a->o.sched = sched;
	a->o.profile = profile;
}

static void on_poll_begin(struct analyzer *a, const struct tet_event_rec *r)
{
	int32_t worker = (int32_t)(uint32_t)r->a;
	struct task *t;

	a->t.polls++;
	if (worker >= 0) {
		struct an_worker *w = worker_get(a, r->h.pid, worker, r->h.ts);

		runtime_tid_add(a, r->h.pid, r->h.tid);
		if (w) {
			w->polls++;
			w->tid = r->h.tid;
			w->last_ts = r->h.ts;
		}
	}
again:
	t = task_find(a, r->h.pid, r->task_id, r->header_ptr);
	if (!t && !admit(a, r->h.pid, r->task_id, false)) {
		a->t.events_set_aside++;
		return;
	}
	if (!t) {
		struct an_site *u = a->ntypes ? site_typed(a, r->b) : NULL;

		if (!u)
			u = site_unknown(a);
		t = u ? task_new(a, r->h.pid, r->task_id, r->header_ptr, u, r->h.ts, false) : NULL;
		if (!t) {
			if (u)
				u->polls++;
			return;
		}
		t->s.state = AN_SCHEDULED;
		if (u->typed)
			t->s.kind = u->kind;
	}
	if (t->s.state == AN_POLLING) /* its poll_end was lost */
		a->t.unmatched_poll_ends++;
	if (t->term_pending) { /* …and it had terminated: a new task reuses the key */
		task_retire(a, t, t->term_ts, t->term_reason);
		goto again;
	}
	if (worker >= 0 && t->s.kind != TET_KIND_BLOCKING)
		sv_poll_begin(a->sv, r->h.pid, r->h.tid, worker, t->s.polls ? t->poll_tid : t->spawn_tid,
			      t->s.task_id, t->s.header_ptr, t->site, r->h.ts);
	else if (t->s.kind == TET_KIND_BLOCKING && site_is_mt_launcher(t->site))
		sv_mt_thread(a->sv, r->h.pid, r->h.tid);
	if ((t->s.state == AN_SPAWNED || t->s.state == AN_SCHEDULED) && t->ready_since &&
	    r->h.ts >= t->ready_since) {
		uint64_t d = r->h.ts - t->ready_since;

		/* runnable while its runtime starved: a victim of the episode */
		if (d >= a->o.long_poll_ns && sv_any(a->sv) &&
		    sv_starved(a->sv, r->h.pid, r->h.tid, t->ready_since, r->h.ts) * 2 >= d)
			sv_charge(a->sv, r->h.pid, r->h.tid, t->ready_since, r->h.ts, false);
		hist_add(&t->sched, d);
		hist_add(&t->site->sched_ns, d);
		if (a->o.on_detect && a->o.trig_sched_ns && d > a->o.trig_sched_ns) {
			t->poll_tid = r->h.tid;
			detect_call(a, t, AN_DETECT_SCHED, t->ready_since, r->h.ts, d,
				    a->o.trig_sched_ns);
		}
		top_add(a->top_sched, &a->ntop_sched, a->o.top_n,
			&(struct an_top){ d, r->h.ts, r->h.pid, r->h.tid, worker, r->task_id,
					  t->site });
	}
	if (ur_active(a->ur))
		ur_task_poll(a->ur, r->h.pid, task_key(a, r->task_id, r->header_ptr), r->h.ts,
			     r->h.tid, t->site);
	t->s.state = AN_POLLING;
	t->s.polls++;
	t->site->polls++;
	t->s.last_ts = r->h.ts;
	t->poll_begin = r->h.ts;
	t->poll_run_delay = r->cpu_wait;
	t->poll_tid = r->h.tid;
	t->poll_worker = worker;
	if (a->o.sched || a->o.profile)
		kq_open(a, r->h.pid, r->h.tid, task_key(a, t->s.task_id, t->s.header_ptr), r->h.ts,
			t->site);
	t->woke_in_poll = t->self_woke_in_poll = t->yielded_in_poll = false;
	t->ready_since = 0;
	t->npoll_waits = 0;
	t->poll_waits_cut = false;
	t->s.nwaits = 0;
}

/* self_wake: judged on the task's whole life (its end, or the capture's): a ratio passed early
 * and left later is no finding. `final` false (a poll's end): only the flight recorder is told,
 * the first time the condition holds. */
static void check_self_wake(struct analyzer *a, struct task *t, uint64_t ts, bool final)
{
	struct an_finding *f;
	double ratio;

	if (t->s.self_wake_polls < a->o.self_wake_min || !t->s.self_wake_polls || !t->s.wakes)
		return;
	ratio = (double)t->s.self_wake_polls / (double)t->s.wakes;
	if (ratio <= a->o.self_wake_ratio)
		return;
	if (!t->detected[AN_SELF_WAKE]) /* once per task */
		detected(a, t, AN_SELF_WAKE, ts ? ts : 1, ts, t->s.self_wake_polls, 0);
	if (!final)
		return;
	f = finding_get(a, t, AN_SELF_WAKE, ts, 0);
	if (!f)
		return;
	f->last_ts = ts;
	f->ongoing = t->s.state != AN_TERMINATED;
	f->ratio = ratio;
	f->polls = t->s.polls;
	f->occurrences = t->s.self_wake_polls;
}

static void on_poll_end(struct analyzer *a, const struct tet_event_rec *r)
{
	unsigned result = r->a < 256 ? (unsigned)r->a : 255;
	struct task *t = task_find(a, r->h.pid, r->task_id, r->header_ptr);
	uint64_t d, wait = 0, blocked = 0;
	struct charge c = { 0 };

	if (!t || t->s.state != AN_POLLING) {
		if (!t)
			not_followed(a, r->h.pid, r->task_id, &a->t.unmatched_poll_ends);
		else
			a->t.unmatched_poll_ends++;
		return;
	}
	d = r->h.ts >= t->poll_begin ? r->h.ts - t->poll_begin : 0;
	if (t->poll_worker >= 0 && t->s.kind != TET_KIND_BLOCKING)
		sv_poll_end(a->sv, r->h.pid, t->poll_tid, t->s.task_id, t->s.header_ptr, r->h.ts,
			    a->o.long_poll_ns);
	if (a->o.sched || a->o.profile) {
		charge_poll(a, r->h.pid, t->poll_tid, task_key(a, t->s.task_id, t->s.header_ptr),
			    t->poll_begin, r->h.ts, &c);
		t->s.samples += c.own_samples;
		t->site->samples += c.own_samples - c.between_samples;
	}
	if (a->o.sched) {
		/* the kernel side says how the poll's time went: on CPU, preempted, asleep */
		wait = c.preempted < d ? c.preempted : d;
		blocked = c.blocked < d - wait ? c.blocked : d - wait;
		t->s.cpu_wait_ns += wait;
		t->site->cpu_wait_ns += wait;
		t->site->stolen_ns += c.stolen < wait ? c.stolen : wait;
		t->s.blocked_ns += blocked;
		t->site->blocked_ns += blocked;
	} else if (t->poll_run_delay && r->cpu_wait > t->poll_run_delay && r->h.tid == t->poll_tid) {
		/* time this poll's thread sat preempted on a run queue: the poll lasted longer, but
		 * not because the task blocked its worker (long_poll judges the rest) */
		wait = r->cpu_wait - t->poll_run_delay;
		if (wait > d)
			wait = d;
		t->s.cpu_wait_ns += wait;
		t->site->cpu_wait_ns += wait;
	}
	if (a->o.sched || a->o.profile) /* long_poll: as judged below */
		stacks_of_poll(a, t, d - wait > a->o.long_poll_ns && t->s.kind != TET_KIND_BLOCKING);
	t->s.busy_ns += d;
	t->site->busy_ns += d;
	hist_add(&t->poll, d);
	hist_add(&t->site->poll_ns, d);
	if (result < TET_POLL_CODES)
		t->site->results[result]++;
	if (t->poll_worker >= 0) {
		struct an_worker *w = worker_find(a, r->h.pid, t->poll_worker);

		if (w) {
			w->busy_ns += d;
			w->last_ts = r->h.ts;
		}
	}
	top_add(a->top_polls, &a->ntop_polls, a->o.top_n,
		&(struct an_top){ d, t->poll_begin, r->h.pid, t->poll_tid, t->poll_worker,
				  r->task_id, t->site });
	tl_push(a, &(struct an_tl_rec){ .ts = t->poll_begin, .end = r->h.ts, .task_id = t->s.task_id,
				       .header_ptr = t->s.header_ptr, .pid = r->h.pid, .tid = t->poll_tid, .worker = t->poll_worker,
				       .type = AN_TL_POLL, .code = (uint8_t)result });
	if (r->b) { /* batched capture: the poll's yields ride on its end */
		uint64_t now = r->b & 0xffff, coop = (r->b >> 16) & 0xffff;

		t->s.yields[TET_YIELD_NOW] += now;
		t->site->yields[TET_YIELD_NOW] += now;
		t->s.yields[TET_YIELD_COOP] += coop;
		t->site->yields[TET_YIELD_COOP] += coop;
		a->t.yields += now + coop;
		a->t.by_type[TET_EV_YIELD] += now + coop;
		if (now + coop)
			t->yielded_in_poll = true;
	}
	if (t->self_woke_in_poll && !t->yielded_in_poll) {
		t->s.self_wake_polls++;
		t->site->self_wake_polls++;
	}
	if (a->o.on_detect && a->o.trig_poll_ns && d > a->o.trig_poll_ns)
		detect_call(a, t, AN_DETECT_POLL, t->poll_begin, r->h.ts, d, a->o.trig_poll_ns);
	if (d - wait > a->o.long_poll_ns && t->s.kind != TET_KIND_BLOCKING) {
		struct an_finding *f;

		detected(a, t, AN_LONG_POLL, t->poll_begin, r->h.ts, d - wait, a->o.long_poll_ns);
		f = finding_get(a, t, AN_LONG_POLL, t->poll_begin,
						   a->o.long_poll_ns);
		if (f) {
			occur(f, t->poll_begin);
			if (d - wait > f->value_ns) {
				f->value_ns = d - wait;
				f->cpu_wait_ns = wait;
				if (a->o.sched)
					finding_split(f, d, wait, blocked, &c);
			}
			f->polls = t->s.polls;
			if (a->o.profile)
				stacks_of_finding(a, f);
		}
	}
	if (t->finding[AN_NEVER_YIELDS]) {
		struct an_finding *f = &a->findings[t->finding[AN_NEVER_YIELDS] - 1];

		if (f->ongoing) {
			f->ongoing = false;
			if (d > f->value_ns)
				f->value_ns = d;
			if (a->o.profile)
				stacks_of_finding(a, f);
			if (a->o.sched)
				finding_split(f, d, wait, blocked, &c);
		}
	}
	t->s.last_ts = r->h.ts;
	switch (result) {
	case TET_POLL_PENDING:
		if (!t->woke_in_poll) {
			t->s.state = AN_PENDING;
			t->pending_since = r->h.ts;
			memcpy(t->s.waits, t->poll_waits, t->npoll_waits * sizeof(t->s.waits[0]));
			t->s.nwaits = t->npoll_waits;
			t->waits_cut = t->poll_waits_cut;
			break;
		}
		/* woken while polling: runnable again at once */
		__attribute__((fallthrough));
	case TET_POLL_NOTIFIED:
		t->s.state = AN_SCHEDULED;
		t->ready_since = r->h.ts;
		break;
	case TET_POLL_READY:
	case TET_POLL_CANCELLED:
	case TET_POLL_PANICKED:
		t->s.state = AN_DONE;
		break;
	default: /* unknown code: treat as Pending */
		t->s.state = AN_PENDING;
		t->pending_since = r->h.ts;
		memcpy(t->s.waits, t->poll_waits, t->npoll_waits * sizeof(t->s.waits[0]));
		t->s.nwaits = t->npoll_waits;
		t->waits_cut = t->poll_waits_cut;
	}
	check_self_wake(a, t, r->h.ts, false);
	if (t->term_pending)
		task_retire(a, t, t->term_ts, t->term_reason);
}

static void on_yield(struct analyzer *a, const struct tet_event_rec *r)
{
	struct task *t = task_find(a, r->h.pid, r->task_id, 0);

	a->t.yields++;
	if (!t && a->o.key_by_header) /* yield has no header: fallback cannot key it */
		return;
	if (!t) {
		not_followed(a, r->h.pid, r->task_id, &a->t.unknown_task_events);
		return;
	}
	if (r->a < TET_YIELD_CODES) {
		t->s.yields[r->a]++;
		t->site->yields[r->a]++;
	}
	if (t->s.state == AN_POLLING && (r->a == TET_YIELD_NOW || r->a == TET_YIELD_COOP))
		t->yielded_in_poll = true;
}

/* A waker was dropped or consumed by wake(). Below zero, the accounting missed a clone (made
 * before the trace, or lost): the count is unknown from then on, so no lost_waker for it. */
static void waker_gone(struct analyzer *a, struct task *t)
{
	if (--t->s.live_wakers < 0 && t->s.wakers_known) {
		t->s.wakers_known = false;
		a->t.waker_count_inconsistent++;
	}
}

/* ---- what a pending task waits for (task_wait) ---- */

/* The wait a pending period is labelled by: the first that is not a timer (a timer next to
 * another wait is most often its timeout), else the timer; AN_WAIT_UNKNOWN when none. */
static unsigned wait_primary(const struct an_task_summary *s)
{
	for (unsigned i = 0; i < s->nwaits; i++)
		if (s->waits[i].kind != TET_WAIT_TIMER)
			return s->waits[i].kind < TET_WAIT_CODES ? s->waits[i].kind : AN_WAIT_UNKNOWN;
	return s->nwaits ? TET_WAIT_TIMER : AN_WAIT_UNKNOWN;
}

/* A pending period of d ns ended (or is still open at the end): per site, by its wait. */
static void wait_account(struct analyzer *a, struct task *t, uint64_t d)
{
	unsigned k;

	if (!a->o.wait_events)
		return;
	k = wait_primary(&t->s);
	t->site->wait_n[k]++;
	t->site->wait_ns[k] += d;
	if (d > t->site->wait_max_ns[k])
		t->site->wait_max_ns[k] = d;
}

struct stall {
	uint8_t why;
	uint64_t other_task, other_ns;
	const struct an_site *other_site;
	uint8_t prim;
	uint32_t other_holders;
	uint64_t object;           /* LOCK_HELD: the lock */
};

bool an_wait_is_subscription(unsigned kind)
{
	return kind == TET_WAIT_IO || kind == TET_WAIT_NOTIFY || kind == TET_WAIT_MPSC ||
	       kind == TET_WAIT_BROADCAST;
}

enum an_wait_class an_wait_class(const struct an_task_summary *s, uint64_t now)
{
	bool sub = false;

	if (s->state != AN_PENDING || !s->nwaits)
		return AN_WAIT_NONE;
	for (unsigned i = 0; i < s->nwaits && i < AN_WAITS_MAX; i++) {
		const struct an_wait *w = &s->waits[i];

		if (w->kind == TET_WAIT_TIMER && w->arg <= UINT64_MAX - w->ts && now < w->ts + w->arg)
			return AN_WAIT_ASLEEP;
		sub |= an_wait_is_subscription(w->kind);
	}
	return sub ? AN_WAIT_IDLE : AN_WAIT_REQUEST;
}

const char *an_wait_class_name(enum an_wait_class c)
{
	return c == AN_WAIT_IDLE ? "idle" : c == AN_WAIT_ASLEEP ? "asleep" :
	       c == AN_WAIT_REQUEST ? "request" : NULL;
}

/* The part of [from, to] task t's runtime spent starved (every worker in a long poll). */
static uint64_t starved(const struct analyzer *a, const struct task *t, uint64_t from, uint64_t to)
{
	return sv_any(a->sv) ? sv_starved(a->sv, t->s.pid, t->poll_tid, from, to) : 0;
}

/* Whether t, pending since t->pending_since, is stuck at `now`, and why (docs/wait-reasons.md).
 * The stall clock does not run while t's runtime starves (starve.h): that time is charged to the
 * episode. Without wait records the old rule: pending for stall_ns without a wake. With them,
 * a task is not stalled while it waits for a timer not yet past due by stall_ns (asleep), on a
 * subscription — I/O readiness, an mpsc or broadcast receive, a Notify (watch,
 * CancellationToken), or a select! with one of those — (idle by design: a listener, a worker
 * loop, a shutdown waiter), or for a JoinHandle of a task that is making progress (in a short
 * poll, runnable, waiting itself for something that is not stuck, or a blocking task at work).
 * It is stalled on a request nobody answered (a oneshot, a semaphore acquire: Mutex, RwLock,
 * Semaphore, a bounded send), on a timer past due, on the JoinHandle of a task in a long poll
 * or itself stalled (depth bounds such chains), or on nothing the probes name. */
static bool stall_waits(struct analyzer *a, struct task *t, uint64_t now, struct stall *st,
			int depth);

static bool stall_verdict(struct analyzer *a, struct task *t, uint64_t now, struct stall *st,
			  int depth)
{
	uint64_t d = now > t->pending_since ? now - t->pending_since : 0;

	memset(st, 0, sizeof(*st));
	st->why = AN_STALL_UNKNOWN;
	if (d < a->o.stall_ns || !stall_waits(a, t, now, st, depth))
		return false;
	/* last: the episodes are walked only for a task stuck by its waits */
	if (d - starved(a, t, t->pending_since, now) < a->o.stall_ns) {
		memset(st, 0, sizeof(*st));
		st->why = AN_STALL_UNKNOWN;
		return false;
	}
	return true;
}

static bool stall_waits(struct analyzer *a, struct task *t, uint64_t now, struct stall *st,
			int depth)
{
	int best = -1;

	if (!a->o.wait_events || !t->s.nwaits)
		return true;
	for (unsigned i = 0; i < t->s.nwaits; i++) {
		const struct an_wait *w = &t->s.waits[i];
		struct stall c = { 0 };
		struct task *o;
		int rank;

		switch (w->kind) {
		case TET_WAIT_TIMER: {
			uint64_t due = w->ts + w->arg;

			if (w->arg > UINT64_MAX - w->ts || now < due || now - due < a->o.stall_ns ||
			    now - due - starved(a, t, due, now) < a->o.stall_ns)
				return false;
			c = (struct stall){ .why = AN_STALL_TIMER_LATE, .other_ns = now - due };
			rank = 0;
			break;
		}
		case TET_WAIT_IO:
		case TET_WAIT_NOTIFY:
		case TET_WAIT_MPSC:
		case TET_WAIT_BROADCAST:
			return false; /* a subscription: idle by design */
		case TET_WAIT_JOIN: {
			struct stall sub;

			o = task_find(a, t->s.pid, w->object, 0);
			if (!o || o == t)
				return false; /* not seen running during the trace: nothing to blame */
			if (o->s.state == AN_POLLING) {
				uint64_t pd = now > o->poll_begin ? now - o->poll_begin : 0;

				if (o->s.kind == TET_KIND_BLOCKING || pd < a->o.long_poll_ns)
					return false;
				c = (struct stall){ .why = AN_STALL_JOIN_POLL, .other_task = o->s.task_id, .other_ns = pd };
			} else if (o->s.state == AN_PENDING && depth < 4 &&
				   stall_verdict(a, o, now, &sub, depth + 1)) {
				c = (struct stall){ .why = AN_STALL_JOIN_STALLED,
						    .other_task = o->s.task_id,
						    .other_ns = now - o->pending_since };
			} else {
				return false;
			}
			rank = 2;
			break;
		}
		case TET_WAIT_SEMAPHORE: {
			const struct lk_lock *k = lk_get(a->lk, t->s.pid, w->object);

			rank = 1;
			c = (struct stall){ .why = AN_STALL_SYNC };
			if (!k || !k->nholders)
				break;
			o = task_find(a, t->s.pid, k->h[0].task_id, 0);
			c = (struct stall){ AN_STALL_LOCK_HELD, k->h[0].task_id,
					    now > k->h[0].since ? now - k->h[0].since : 0,
					    o ? o->site : NULL, k->prim, k->nholders - 1, w->object };
			rank = 2;
			break;
		}
		default:
			c = (struct stall){ .why = AN_STALL_SYNC };
			rank = 1;
		}
		if (rank > best) {
			best = rank;
			*st = c;
		}
	}
	return true;
}

/* t was woken at `at` (or is still pending then) after a timer it waited on fell due: when its
 * runtime starved for at least half of the lateness, the timer is a victim of the episode. */
static void timer_victim(struct analyzer *a, const struct task *t, uint64_t at)
{
	if (!sv_any(a->sv))
		return;
	for (unsigned i = 0; i < t->s.nwaits && i < AN_WAITS_MAX; i++) {
		const struct an_wait *w = &t->s.waits[i];
		uint64_t due;

		if (w->kind != TET_WAIT_TIMER || w->arg > UINT64_MAX - w->ts)
			continue;
		due = w->ts + w->arg;
		if (at > due && at - due >= a->o.long_poll_ns && starved(a, t, due, at) * 2 >= at - due)
			sv_charge(a->sv, t->s.pid, t->poll_tid, due, at, true);
		return;
	}
}

static void starve_told(void *ctx, const struct sv_episode *e, uint64_t now)
{
	struct analyzer *a = ctx;
	const struct an_holder *h = &e->holders[0];

	if (!a->o.on_detect || !(a->o.detect & (1u << AN_STARVATION)))
		return;
	a->o.on_detect(a->o.detect_ctx, &(struct an_detect){
		.what = AN_STARVATION, .pid = e->pid, .tid = h->tid, .task_id = h->task_id,
		.header_ptr = h->header_ptr, .ts = e->start, .at = now, .value_ns = e->end - e->start,
		.threshold_ns = a->o.long_poll_ns, .site = h->site });
}

/* One starvation finding per episode worth one (starve.h), made at the end (of the capture, or
 * of a flight-recorder window): only then are its holders' ends all in (batched capture delivers
 * them late, and a late one may show it shorter) and its runtime's threads all known (sv_settle
 * hands the victims of an episode whose runtime turned out larger to the whole runtime's). The
 * stall clock and the detect callback use the episodes as they come. */
static void starvation_findings(struct analyzer *a, bool final)
{
	struct sv_episode *e;
	size_t n;

	a->t.starvation_omitted = sv_omitted(a->sv);
	a->t.worker_polls_untracked = sv_threads_untracked(a->sv);
	if (!final || a->starve_listed || !(a->o.detect & (1u << AN_STARVATION)))
		return;
	sv_settle(a->sv);
	n = sv_episodes(a->sv, &e);
	for (size_t i = 0; i < n; i++) {
		struct an_finding *f;

		if (!e[i].told || e[i].finding < 0 ||
		    (!e[i].finding && (e[i].stale || e[i].voided)))
			continue;
		if (!e[i].finding) {
			if (!(f = finding_new(a, AN_STARVATION))) {
				e[i].finding = -1; /* beyond max_findings: counted once */
				continue;
			}
			e[i].finding = (int32_t)a->nfindings;
			if (e[i].holders[0].site)
				((struct an_site *)e[i].holders[0].site)->findings[AN_STARVATION]++;
		}
		f = &a->findings[e[i].finding - 1];
		f->pid = e[i].pid;
		f->task_id = e[i].holders[0].task_id;
		f->header_ptr = e[i].holders[0].header_ptr;
		f->site = e[i].holders[0].site;
		f->first_ts = f->last_ts = e[i].start;
		f->occurrences = 1;
		f->value_ns = e[i].end - e[i].start;
		f->threshold_ns = a->o.long_poll_ns;
		f->ongoing = e[i].ongoing;
		f->polls = e[i].threads;
		f->nholders = e[i].nholders;
		memcpy(f->holders, e[i].holders, sizeof(f->holders));
		f->victim_timers = e[i].victim_timers;
		f->victim_timer_max_ns = e[i].victim_timer_max_ns;
		f->victim_tasks = e[i].victim_tasks;
		f->victim_sched_max_ns = e[i].victim_sched_max_ns;
		f->charged_ns = e[i].charged_ns;
	}
}

static void stall_fill(struct an_finding *f, const struct task *t, const struct stall *st)
{
	f->why = st->why;
	f->other_task = st->other_task;
	f->other_ns = st->other_ns;
	f->other_site = st->other_site;
	f->prim = st->prim;
	f->other_holders = st->other_holders;
	f->other_object = st->object;
	f->nwaits = t->s.nwaits;
	memcpy(f->waits, t->s.waits, sizeof(f->waits));
}

static void on_wait(struct analyzer *a, const struct tet_event_rec *r)
{
	struct task *t = r->task_id ? task_find(a, r->h.pid, r->task_id, 0) : NULL;
	struct an_wait w = { .object = r->header_ptr, .arg = r->b, .ts = r->h.ts,
			     .kind = (uint8_t)(r->a < TET_WAIT_CODES ? r->a : TET_WAIT_CODES) };

	if (t && t->s.state == AN_POLLING && r->a == AN_WAIT_CUT) {
		t->poll_waits_cut = true; /* the decoder kept fewer of this poll's waits */
		return;
	}
	if (!t || t->s.state != AN_POLLING || w.kind >= TET_WAIT_CODES) {
		a->t.waits_outside_polls++;
		return;
	}
	for (unsigned i = 0; i < t->npoll_waits; i++)
		if (t->poll_waits[i].kind == w.kind && t->poll_waits[i].object == w.object) {
			t->poll_waits[i] = w; /* registered again in the same poll */
			return;
		}
	if (t->npoll_waits >= AN_WAITS_MAX) {
		a->t.waits_dropped++;
		t->poll_waits_cut = true;
		return;
	}
	t->poll_waits[t->npoll_waits++] = w;
}

static void on_lock(struct analyzer *a, const struct tet_event_rec *r)
{
	if (a->o.key_by_header)
		return; /* the fallback has no task ids */
	if (r->a >= TET_LOCK_CODES) {
		lk_event(a->lk, r->h.pid, r->task_id, TET_LOCK_CODES, r->header_ptr, r->b, r->h.ts);
		return; /* counted as a bad op */
	}
	/* a release outside any task (block_on, a plain thread: task 0) gives back a holder's
	 * permits (the oldest's); an acquire there holds for no task */
	if (!r->task_id && r->a != TET_LOCK_RELEASE && r->a != TET_LOCK_FORGET)
		return;
	lk_event(a->lk, r->h.pid, r->task_id, (unsigned)r->a, r->header_ptr, r->b, r->h.ts);
}

static void on_meta(struct analyzer *a, const struct tet_meta_rec *r)
{
	struct task *t = task_find(a, r->h.pid, r->task_id, 0);
	struct an_finding *f;

	if (!t) {
		not_followed(a, r->h.pid, r->task_id, &a->t.unknown_task_events);
		return;
	}
	t->s.meta_seen = true;
	t->s.future_size = r->size;
	t->s.future_boxed = r->flags & 1;
	t->s.name_len = r->name_copied <= TET_NAME_MAX ? r->name_copied : TET_NAME_MAX;
	memcpy(t->s.name, r->name, t->s.name_len);
	/* large_future: a property of the spawn, not an incident: no flight-recorder trigger */
	if (!a->o.large_future_bytes || r->size < a->o.large_future_bytes ||
	    t->s.kind == TET_KIND_BLOCKING)
		return;
	f = finding_get(a, t, AN_LARGE_FUTURE, r->h.ts, a->o.large_future_bytes);
	if (f) {
		occur(f, r->h.ts);
		f->size = r->size;
		f->boxed = t->s.future_boxed;
		f->ongoing = false;
	}
}

static void on_wake(struct analyzer *a, const struct tet_event_rec *r)
{
	bool outside = !runtime_tid_known(a, r->h.pid, r->h.tid);
	struct task *t;

	a->t.wakes++;
	if (outside)
		a->t.outside_wakes++;
	tl_push(a, &(struct an_tl_rec){ .ts = r->h.ts, .task_id = r->task_id,
				       .header_ptr = r->header_ptr, .pid = r->h.pid,
				       .tid = r->h.tid, .worker = -1, .type = AN_TL_WAKE,
				       .code = (uint8_t)r->a });
	if (ur_active(a->ur))
		ur_task_wake(a->ur, r->h.pid, task_key(a, r->task_id, r->header_ptr), r->h.ts);
	t = task_find(a, r->h.pid, r->task_id, r->header_ptr);
	if (!t) {
		not_followed(a, r->h.pid, r->task_id, &a->t.unknown_task_events);
		return;
	}
	t->s.wakes++;
	t->site->wakes++;
	t->s.last_ts = r->h.ts;
	if (!r->a) {
		waker_gone(a, t);
	} else if (t->s.state != AN_POLLING && t->s.wakers_known && t->s.live_wakers <= 0) {
		/* woken by reference through a waker we did not see cloned (the poll's own borrowed
		 * waker only exists during the poll): the count is unknown from here on */
		t->s.wakers_known = false;
		a->t.waker_count_inconsistent++;
	}
	if (outside) {
		t->s.outside_wakes++;
		t->site->outside_wakes++;
	}
	switch (t->s.state) {
	case AN_POLLING:
		t->woke_in_poll = true;
		if (r->h.tid == t->poll_tid) {
			t->self_woke_in_poll = true;
			t->s.self_wakes++;
			t->site->self_wakes++;
			a->t.self_wakes++;
		}
		break;
	case AN_PENDING: {
		uint64_t d = r->h.ts >= t->pending_since ? r->h.ts - t->pending_since : 0;
		struct stall st;

		hist_add(&t->pending, d);
		hist_add(&t->site->pending_ns, d);
		wait_account(a, t, d);
		timer_victim(a, t, r->h.ts);
		if (t->finding[AN_LOST_WAKER]) {
			struct an_finding *f = &a->findings[t->finding[AN_LOST_WAKER] - 1];

			if (f->ongoing) {
				f->ongoing = false;
				f->contradicted = true;
				a->t.lost_waker_contradicted++;
				if (d > f->value_ns) /* the worst value: the whole wait, not the last check's */
					f->value_ns = d;
			}
		}
		if (d >= a->o.stall_ns && !t->finding[AN_LOST_WAKER] &&
		    !(a->o.on_detect && t->detected[AN_LOST_WAKER] == t->pending_since) &&
		    !(t->finding[AN_DEADLOCK] && a->findings[t->finding[AN_DEADLOCK] - 1].ongoing) &&
		    stall_verdict(a, t, r->h.ts, &st, 0)) {
			struct an_finding *f;

			detected(a, t, AN_STALLED, t->pending_since, r->h.ts, d, a->o.stall_ns);
			f = finding_get(a, t, AN_STALLED, t->pending_since, a->o.stall_ns);
			if (f) {
				/* the lock's release woke it: its holder, judged at a tick of this
				 * stall, is gone by now but was what it waited for */
				bool held = f->occurrences && f->last_ts == t->pending_since &&
					    f->why == AN_STALL_LOCK_HELD && st.why == AN_STALL_SYNC;

				occur(f, t->pending_since);
				if (d > f->value_ns)
					f->value_ns = d;
				f->ongoing = false;
				f->live_wakers = t->s.wakers_known ? t->s.live_wakers + (r->a ? 0 : 1) : -1;
				if (!held)
					stall_fill(f, t, &st);
			}
		} else if (t->finding[AN_STALLED]) {
			a->findings[t->finding[AN_STALLED] - 1].ongoing = false;
		}
		t->s.state = AN_SCHEDULED;
		t->ready_since = r->h.ts;
		t->s.nwaits = 0;
		break;
	}
	default: /* already runnable (a redundant wake) or done */
		break;
	}
}

static void on_waker(struct analyzer *a, const struct tet_event_rec *r, bool clone)
{
	struct task *t = task_find(a, r->h.pid, r->task_id, r->header_ptr);

	if (clone)
		a->t.waker_clones++;
	else
		a->t.waker_drops++;
	if (!t) {
		not_followed(a, r->h.pid, r->task_id, &a->t.unknown_task_events);
		return;
	}
	if (clone) {
		t->s.waker_clones++;
		t->s.live_wakers++;
	} else {
		t->s.waker_drops++;
		waker_gone(a, t);
	}
}

static void on_terminate(struct analyzer *a, const struct tet_event_rec *r)
{
	struct task *t = task_find(a, r->h.pid, r->task_id, r->header_ptr);

	a->t.terminates++;
	tl_push(a, &(struct an_tl_rec){ .ts = r->h.ts, .task_id = r->task_id,
				       .header_ptr = r->header_ptr, .pid = r->h.pid,
				       .tid = r->h.tid, .worker = -1, .type = AN_TL_TERMINATE,
				       .code = (uint8_t)r->a });
	if (!t) {
		not_followed(a, r->h.pid, r->task_id, &a->t.unknown_task_events);
		if (!a->o.key_by_header)
			lk_task_gone(a->lk, r->h.pid, r->task_id);
		return;
	}
	if (t->s.state == AN_POLLING && r->h.tid == t->poll_tid) {
		/* terminated from inside its last poll (before that poll's end probe): retire
		 * it at poll_end, so the poll counts */
		t->term_pending = true;
		t->term_ts = r->h.ts;
		t->term_reason = r->a < TET_TERM_CODES ? (int)r->a : -1;
		return;
	}
	task_retire(a, t, r->h.ts, r->a < TET_TERM_CODES ? (int)r->a : -1);
}

static void on_park(struct analyzer *a, const struct tet_event_rec *r, bool park)
{
	int32_t index = (int32_t)(uint32_t)r->a;
	struct an_worker *w;

	if (park)
		a->t.parks++;
	else
		a->t.unparks++;
	runtime_tid_add(a, r->h.pid, r->h.tid);
	if (index < 0) /* a dialect without worker indexes */
		return;
	sv_park(a->sv, r->h.pid, r->h.tid, index, r->h.ts, a->o.long_poll_ns);
	w = worker_get(a, r->h.pid, index, r->h.ts);
	if (!w)
		return;
	w->tid = r->h.tid;
	w->last_ts = r->h.ts;
	if (park) {
		w->parks++;
		w->park_since = r->h.ts;
		w->parked = true;
		return;
	}
	if (w->parked && r->h.ts >= w->park_since) {
		uint64_t d = r->h.ts - w->park_since;

		w->parked_ns += d;
		hist_add(&w->park_ns, d);
		tl_push(a, &(struct an_tl_rec){ .ts = w->park_since, .end = r->h.ts, .pid = r->h.pid,
					       .tid = r->h.tid, .worker = index,
					       .type = AN_TL_PARK });
	}
	w->parked = false;
}

int an_event(struct analyzer *a, const void *rec, size_t size)
{
	const struct tet_hdr *h = rec;
	const struct tet_event_rec *r = rec;

	if (!tet_decode_valid(rec, size))
		return -EINVAL;
	if (h->type == TET_REC_OFFCPU || h->type == TET_REC_SAMPLE)
		return on_kernel(a, rec, size);
	if (h->type >= TET_REC_URING_RING && h->type <= TET_REC_URING_PUSH)
		return ur_event(a->ur, rec, size);
	if (h->type == TET_REC_RATE) {
		on_rate(a, rec);
		return 0;
	}
	if (h->type == TET_REC_GAP) {
		on_gap(a, rec);
		return 0;
	}
	if (h->type >= TET_EV_COUNT)
		return -EINVAL;
	a->t.events++;
	a->t.by_type[h->type]++;
	if (!a->t.first_ts || h->ts < a->t.first_ts)
		a->t.first_ts = h->ts;
	if (h->ts > a->t.last_ts)
		a->t.last_ts = h->ts;
	switch (h->type) {
	case TET_EV_SPAWN:
		return on_spawn(a, rec);
	case TET_EV_POLL_BEGIN:
		on_poll_begin(a, r);
		break;
	case TET_EV_POLL_END:
		on_poll_end(a, r);
		break;
	case TET_EV_YIELD:
		on_yield(a, r);
		break;
	case TET_EV_WAKE:
		on_wake(a, r);
		break;
	case TET_EV_WAKER_CLONE:
		on_waker(a, r, true);
		break;
	case TET_EV_WAKER_DROP:
		on_waker(a, r, false);
		break;
	case TET_EV_TERMINATE:
		on_terminate(a, r);
		break;
	case TET_EV_PARK:
		on_park(a, r, true);
		break;
	case TET_EV_UNPARK:
		on_park(a, r, false);
		break;
	case TET_EV_WAIT:
		on_wait(a, r);
		break;
	case TET_EV_META:
		on_meta(a, rec);
		break;
	case TET_EV_LOCK:
		on_lock(a, r);
		break;
	}
	return 0;
}

/* ---- deadlocks ----
 *
 * A pending task waits for other tasks when each of its waits (a select! registers several,
 * and any of them may end the wait) is on a Mutex or RwLock whose holders are known tasks or
 * on the JoinHandle of a live task; any other wait — a timer, I/O, a channel, a Semaphore
 * (add_permits from anyone can end it), a lock held by nobody known — can end without them. A
 * deadlock is a set of such tasks whose every wait is on members of the set: none of them can
 * go on before another does. It is a finding once its cycle's last member has waited stall_ns;
 * until then its tasks are in it all the same (none is judged stalled: the waits reach the
 * analyzer one by one, and a member judged before its partner was seen waiting would be told
 * twice). deadlock_check finds the largest such
 * set by elimination over a reverse-edge worklist (a candidate with a wait on a task outside
 * the set leaves it, and so may the candidates waiting on it: O(tasks + edges) per tick), then
 * splits it into parts by following each member's first wait inside the set: a walk ends on a
 * task seen in the same walk (a new cycle, listed from there in cycle order) or on a task
 * already placed (the walk's tasks wait on that part: counted as its more_tasks). One finding
 * per part; a part that holds a task of an earlier finding keeps that finding. A task in a
 * deadlock is not also judged stalled. Off once lock or wait events were lost (their holders
 * or waits may be wrong, and a missing wait can make a task that can wake look stuck). */
#define DL_EDGES_MAX (AN_WAITS_MAX * LK_HOLDERS_MAX)

static int dl_targets(struct analyzer *a, struct task *t, const struct an_wait *w,
		      struct task **out, int max)
{
	struct task *o;
	int n = 0;

	if (w->kind == TET_WAIT_JOIN) {
		o = task_find(a, t->s.pid, w->object, 0);
		if (!o || o == t)
			return -1;
		out[0] = o;
		return 1;
	}
	if (w->kind == TET_WAIT_SEMAPHORE) {
		const struct lk_lock *k = lk_get(a->lk, t->s.pid, w->object);

		if (!k || !k->nholders || k->incomplete || k->prim == TET_LOCK_SEMAPHORE)
			return -1;
		for (uint32_t i = 0; i < k->nholders && n < max; i++) {
			if (!(o = task_find(a, t->s.pid, k->h[i].task_id, 0)))
				return -1; /* held by a task not tracked: it may go on */
			out[n++] = o;
		}
		return n;
	}
	return -1;
}

/* All of t's targets (its waits' holders / awaited tasks), or -1 when a wait can end without
 * another task. */
static int dl_all_targets(struct analyzer *a, struct task *t, struct task **out)
{
	int n = 0;

	if (t->s.state != AN_PENDING || !t->s.nwaits || t->waits_cut)
		return -1;
	for (unsigned i = 0; i < t->s.nwaits && i < AN_WAITS_MAX; i++) {
		int k = dl_targets(a, t, &t->s.waits[i], out + n, LK_HOLDERS_MAX);

		if (k < 0)
			return -1;
		n += k;
	}
	return n;
}

/* The member record of t, through its first wait on a task of the set (dl ≥ 2); returns it. */
static struct task *dl_member(struct analyzer *a, struct task *t, struct an_cycle_member *m)
{
	struct task *o[LK_HOLDERS_MAX];

	memset(m, 0, sizeof(*m));
	m->task_id = t->s.task_id;
	m->header_ptr = t->s.header_ptr;
	m->site = t->site;
	m->pending_since = t->pending_since;
	m->name_len = t->s.name_len < sizeof(m->name) ? t->s.name_len : sizeof(m->name);
	memcpy(m->name, t->s.name, m->name_len);
	for (unsigned i = 0; i < t->s.nwaits && i < AN_WAITS_MAX; i++) {
		const struct an_wait *w = &t->s.waits[i];
		int n = dl_targets(a, t, w, o, LK_HOLDERS_MAX);

		for (int j = 0; j < n; j++) {
			if (o[j]->dl < 2)
				continue;
			m->wait_kind = w->kind;
			m->object = w->object;
			m->permits = w->kind == TET_WAIT_SEMAPHORE ? w->arg : 0;
			m->on_task = o[j]->s.task_id;
			if (w->kind == TET_WAIT_SEMAPHORE) {
				const struct lk_lock *k = lk_get(a->lk, t->s.pid, w->object);

				m->prim = k->prim;
				for (uint32_t h = 0; h < k->nholders; h++)
					if (k->h[h].task_id == o[j]->s.task_id)
						m->held_since = k->h[h].since;
			}
			return o[j];
		}
	}
	return NULL;
}

/* The finding of a cycle that starts at `head` (dl 3 … marked by the caller), `more` tasks of
 * its part waiting on it; `known` an earlier finding of one of the part's tasks (0: none). */
static int32_t dl_finding(struct analyzer *a, struct task *head, uint32_t more, int32_t known,
			  uint64_t now)
{
	struct an_cycle_member m[AN_CYCLE_MAX];
	struct task *t = head;
	uint64_t closed = 0;
	uint32_t n = 0;
	struct an_finding *f;

	do {
		struct an_cycle_member x;
		struct task *next = dl_member(a, t, &x);

		if (x.pending_since > closed)
			closed = x.pending_since;
		if (n < AN_CYCLE_MAX)
			m[n++] = x;
		else
			more++;
		t = next;
	} while (t && t != head && n + more < 1u << 20);
	if (known) {
		f = &a->findings[known - 1];
	} else if (now - closed < a->o.stall_ns) {
		return 0; /* not a finding yet: its last member has not waited stall_ns */
	} else {
		detected(a, head, AN_DEADLOCK, closed, now, now - closed, a->o.stall_ns);
		if (!(f = finding_get(a, head, AN_DEADLOCK, closed, a->o.stall_ns)))
			return 0;
		occur(f, closed);
		known = head->finding[AN_DEADLOCK];
	}
	f->ongoing = true;
	if (now - f->first_ts > f->value_ns)
		f->value_ns = now - f->first_ts;
	f->nmembers = (uint8_t)n; /* as the cycle is now */
	f->members_more = more;
	memcpy(f->members, m, n * sizeof(*m));
	return known;
}

static void dl_reset(struct analyzer *a)
{
	for (size_t i = 0; i < a->tasks.cap; i++)
		if (a->tasks.e[i].v)
			((struct task *)a->tasks.e[i].v)->dl = 0;
}

static void deadlock_check(struct analyzer *a, uint64_t now)
{
	struct task *o[DL_EDGES_MAX];
	size_t n = 0, ne = 0, qh = 0, qt = 0;

	if (!a->o.wait_events || a->o.key_by_header || a->o.no_wakes ||
	    !(a->o.detect & (1u << AN_DEADLOCK)) || a->starve_listed)
		return;
	for (size_t i = 0; i < a->nfindings; i++) /* still there? found again below */
		if (a->findings[i].kind == AN_DEADLOCK)
			a->findings[i].ongoing = false;
	dl_reset(a);
	if (a->locks_unreliable || lk_stats(a->lk)->locks_untracked)
		return;
	/* candidates and their edges: dl_v[0..n) the tasks, dl_e the targets of each (CSR over
	 * dl_off), then the reverse edges (dl_roff / dl_r) */
	for (size_t i = 0; i < a->tasks.cap; i++) {
		struct task *t = a->tasks.e[i].v;
		int k;

		if (!t || t->s.state != AN_PENDING || now < t->pending_since ||
		    (k = dl_all_targets(a, t, o)) < 0)
			continue;
		if (grow((void **)&a->dl_v, &a->dl_cap, n + 1, sizeof(*a->dl_v)) ||
		    grow((void **)&a->dl_off, &a->dl_off_cap, n + 2, sizeof(*a->dl_off)) ||
		    grow((void **)&a->dl_e, &a->dl_e_cap, ne + (size_t)k, sizeof(*a->dl_e)))
			goto oom;
		a->dl_off[n] = (uint32_t)ne;
		t->dl_idx = (uint32_t)n;
		a->dl_v[n++] = t;
		for (int j = 0; j < k; j++)
			a->dl_e[ne++] = o[j];
		t->dl = 1;
	}
	if (!n)
		return;
	a->dl_off[n] = (uint32_t)ne;
	if (grow((void **)&a->dl_roff, &a->dl_roff_cap, n + 1, sizeof(*a->dl_roff)) ||
	    grow((void **)&a->dl_r, &a->dl_r_cap, ne + 1, sizeof(*a->dl_r)) ||
	    grow((void **)&a->dl_q, &a->dl_q_cap, n + 1, sizeof(*a->dl_q)))
		goto oom;
	memset(a->dl_roff, 0, (n + 1) * sizeof(*a->dl_roff));
	for (size_t e = 0; e < ne; e++)
		if (a->dl_e[e]->dl)
			a->dl_roff[a->dl_e[e]->dl_idx + 1]++;
	for (size_t i = 0; i < n; i++)
		a->dl_roff[i + 1] += a->dl_roff[i];
	for (size_t i = 0; i < n; i++) { /* fill: dl_q as the per-target cursor for a moment */
		a->dl_q[i] = a->dl_roff[i];
	}
	for (size_t i = 0; i < n; i++)
		for (uint32_t e = a->dl_off[i]; e < a->dl_off[i + 1]; e++)
			if (a->dl_e[e]->dl)
				a->dl_r[a->dl_q[a->dl_e[e]->dl_idx]++] = (uint32_t)i;
	/* elimination: a candidate with a target outside the set leaves, then its waiters are
	 * looked at again */
	for (size_t i = 0; i < n; i++)
		for (uint32_t e = a->dl_off[i]; e < a->dl_off[i + 1]; e++)
			if (!a->dl_e[e]->dl) {
				a->dl_v[i]->dl = 4; /* leaving, queued */
				a->dl_q[qt++] = (uint32_t)i;
				break;
			}
	while (qh < qt) {
		uint32_t v = a->dl_q[qh++];

		a->dl_v[v]->dl = 0;
		for (uint32_t r = a->dl_roff[v]; r < a->dl_roff[v + 1]; r++) {
			struct task *u = a->dl_v[a->dl_r[r]];

			if (u->dl == 1) {
				u->dl = 4;
				a->dl_q[qt++] = a->dl_r[r];
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		if (a->dl_v[i]->dl)
			a->dl_v[i]->dl = 2; /* in a deadlock; dl_part 0: not placed yet */
	for (size_t i = 0; i < n; i++)
		a->dl_v[i]->dl_part = 0;
	/* parts: walk from each unplaced member along its first wait inside the set */
	for (size_t i = 0; i < n; i++) {
		struct task *t = a->dl_v[i], *x, *c;
		int32_t walk = -(int32_t)(i + 2), part = -1, known = 0; /* -1: placed, no finding */
		uint32_t len = 0, cyc = 0;
		struct an_cycle_member m;

		if (t->dl != 2 || t->dl_part)
			continue;
		for (x = t; x && !x->dl_part && len <= n; len++) {
			x->dl_part = walk;
			x = dl_member(a, x, &m);
		}
		if (x && x->dl_part == walk) { /* a new cycle, from x back to x */
			c = x;
			do {
				cyc++;
				if (!known)
					known = c->finding[AN_DEADLOCK];
				c = dl_member(a, c, &m);
			} while (c && c != x && cyc <= n);
			for (c = t; c != x && c; c = dl_member(a, c, &m))
				if (!known)
					known = c->finding[AN_DEADLOCK];
			part = dl_finding(a, x, len - cyc, known, now);
			if (!part)
				part = -1;
			c = x;
			do {
				c->dl_part = part;
				c = dl_member(a, c, &m);
			} while (c && c != x);
		} else if (x) { /* the walk ends on a placed part: its tasks wait on that one */
			part = x->dl_part;
			if (part > 0)
				a->findings[part - 1].members_more += len;
		}
		for (c = t; c && c->dl_part == walk; c = dl_member(a, c, &m))
			c->dl_part = part;
	}
	for (size_t i = 0; i < n; i++) {
		struct task *t = a->dl_v[i];

		if (t->dl != 2)
			continue;
		if (t->dl_part > 0 && !t->finding[AN_DEADLOCK])
			t->finding[AN_DEADLOCK] = t->dl_part;
		if (t->finding[AN_STALLED]) /* the deadlock tells it now */
			a->findings[t->finding[AN_STALLED] - 1].ongoing = false;
	}
	return;
oom:
	dl_reset(a);
}

/* A task found in a deadlock may have been judged stalled at an earlier tick of the same wait,
 * before every member was known to wait (their waits reach the analyzer one by one; batched
 * capture delivers them behind the clock). The deadlock tells that wait: the stalled finding
 * goes, unless it holds other, earlier stalls of the task too. */
static void stalled_superseded(struct analyzer *a)
{
	for (size_t i = 0; i < a->tasks.cap; i++) {
		struct task *t = a->tasks.e[i].v;
		struct an_finding *f;

		if (!t || t->dl != 2 || !t->finding[AN_DEADLOCK] || !t->finding[AN_STALLED] ||
		    t->s.state != AN_PENDING)
			continue;
		f = &a->findings[t->finding[AN_STALLED] - 1];
		if (f->occurrences == 1 && f->first_ts == t->pending_since && !f->superseded) {
			f->superseded = true;
			a->t.stalled_in_deadlock++;
		}
	}
}

void an_tick(struct analyzer *a, uint64_t now)
{
	a->t.hist_unbucketed = hist_unbucketed();
	if (now > a->now)
		a->now = now;
	now = a->now;
	kq_expire(a, now);
	ur_tick(a->ur, now);
	sv_tick(a->sv, now, a->o.long_poll_ns);
	starvation_findings(a, false);
	deadlock_check(a, now);
	for (size_t i = 0; i < a->tasks.cap; i++) {
		struct task *t = a->tasks.e[i].v;
		struct an_finding *f = NULL;
		uint64_t d;

		if (!t)
			continue;
		if (t->s.state == AN_POLLING && t->s.kind != TET_KIND_BLOCKING &&
		    now > t->poll_begin && now - t->poll_begin >= a->o.never_yields_ns) {
			d = now - t->poll_begin;
			detected(a, t, AN_NEVER_YIELDS, t->poll_begin, now, d, a->o.never_yields_ns);
			f = finding_get(a, t, AN_NEVER_YIELDS, t->poll_begin, a->o.never_yields_ns);
			if (f) {
				occur(f, t->poll_begin);
				f->ongoing = true;
				f->polls = t->s.polls;
				if (d > f->value_ns)
					f->value_ns = d;
			}
		} else if (t->s.state == AN_PENDING && now > t->pending_since && !a->o.no_wakes) {
			bool no_waker = t->s.wakers_known && !a->wakers_unreliable &&
					t->s.live_wakers <= 0 &&
					(a->o.detect & (1u << AN_LOST_WAKER));
			struct stall st;

			d = now - t->pending_since;
			if (no_waker && d >= a->o.lost_waker_ns) {
				detected(a, t, AN_LOST_WAKER, t->pending_since, now, d,
					 a->o.lost_waker_ns);
				f = finding_get(a, t, AN_LOST_WAKER, t->pending_since,
						a->o.lost_waker_ns);
				if (f) {
					occur(f, t->pending_since);
					f->live_wakers = 0;
				}
			} else if (!no_waker && d >= a->o.stall_ns && t->dl != 2 &&
				   stall_verdict(a, t, now, &st, 0)) {
				detected(a, t, AN_STALLED, t->pending_since, now, d, a->o.stall_ns);
				f = finding_get(a, t, AN_STALLED, t->pending_since, a->o.stall_ns);
				if (f) {
					occur(f, t->pending_since);
					f->live_wakers = t->s.wakers_known ? t->s.live_wakers : -1;
					stall_fill(f, t, &st);
				}
			}
			if (f) {
				f->ongoing = true;
				if (d > f->value_ns)
					f->value_ns = d;
			}
		}
	}
}

const struct lk_lock *an_lock(const struct analyzer *a, uint32_t pid, uint64_t object)
{
	return lk_get(a->lk, pid, object);
}

const struct lk_stats *an_lock_stats(const struct analyzer *a)
{
	return lk_stats(a->lk);
}

bool an_task_get(const struct analyzer *a, uint32_t pid, uint64_t task_id,
		 struct an_task_summary *out)
{
	const struct task *t = a->o.key_by_header ? NULL : htab_get(&a->tasks, pid, task_id);

	if (t) {
		summarize(a, t, out, a->now);
		return true;
	}
	for (size_t i = a->nrecords; i-- > 0;)
		if (a->records[i].pid == pid && a->records[i].task_id == task_id) {
			*out = a->records[i];
			return true;
		}
	return false;
}

void an_note_lock_loss(struct analyzer *a)
{
	a->locks_unreliable = true;
}

void an_note_drops(struct analyzer *a, const __u64 drops[TET_EV_COUNT])
{
	if (drops[TET_EV_LOCK] || drops[TET_EV_WAIT])
		a->locks_unreliable = true;
	if (drops[TET_EV_SPAWN] || drops[TET_EV_WAKE] || drops[TET_EV_WAKER_CLONE] ||
	    drops[TET_EV_WAKER_DROP] || drops[TET_EV_POLL_END])
		a->wakers_unreliable = true;
}

bool an_wakers_unreliable(const struct analyzer *a)
{
	return a->wakers_unreliable;
}

/* Stalled on a sync primitive: how many other tasks wait on the same one at the end. */
static void count_sharers(struct analyzer *a)
{
	for (size_t i = 0; i < a->nfindings; i++) {
		struct an_finding *f = &a->findings[i];

		if (f->kind != AN_STALLED || (f->why != AN_STALL_SYNC && f->why != AN_STALL_LOCK_HELD) ||
		    !f->ongoing)
			continue;
		for (size_t j = 0; j < a->tasks.cap; j++) {
			const struct task *t = a->tasks.e[j].v;

			if (!t || t->s.state != AN_PENDING || t->s.pid != f->pid ||
			    t->s.task_id == f->task_id)
				continue;
			for (unsigned k = 0; k < t->s.nwaits && k < f->nwaits; k++)
				if (t->s.waits[k].kind == f->waits[0].kind &&
				    t->s.waits[k].object == f->waits[0].object) {
					f->sharers++;
					break;
				}
		}
	}
}

void an_finish(struct analyzer *a, uint64_t now)
{
	an_tick(a, now);
	for (size_t i = 0; i < a->tasks.cap; i++) {
		struct task *t = a->tasks.e[i].v;

		if (!t)
			continue;
		check_self_wake(a, t, a->now, true);
		if (t->s.state == AN_POLLING)
			charge_open_poll(a, t, a->now);
		if (t->s.state == AN_PENDING) {
			wait_account(a, t, a->now > t->pending_since ? a->now - t->pending_since : 0);
			timer_victim(a, t, a->now);
		}
	}
	starvation_findings(a, true);
	stalled_superseded(a);
	a->starve_listed = true; /* set_aside renumbers the findings: no more updates */
	count_sharers(a);
	/* what no poll claimed: in a poll still open (its own), or unmatched */
	for (size_t i = 0; i < a->kthreads.cap; i++) {
		struct kthread *kt = a->kthreads.e[i].v;

		while (kt && kt->len)
			kq_pop(a, kt, false);
	}
	ur_finish(a->ur, a->now);
	set_aside(a);
	a->t.hist_unbucketed = hist_unbucketed();
}

/* The spawn site of a task, live or kept as a record (io_uring requests are charged to it). */
static const struct an_site *task_site_of(void *ctx, uint32_t pid, uint64_t key)
{
	struct analyzer *a = ctx;
	struct task *t = htab_get(&a->tasks, pid, key);

	if (t)
		return t->site;
	for (size_t i = a->nrecords; i-- > 0;) {
		const struct an_task_summary *s = &a->records[i];

		if (s->pid == pid && task_key(a, s->task_id, s->header_ptr) == key)
			return s->site;
	}
	return NULL;
}

struct ur *an_uring(const struct analyzer *a)
{
	return a->ur;
}

size_t an_cpu_stacks(const struct analyzer *a, const struct an_stack **v)
{
	*v = a->cpu_stacks;
	return a->ncpu;
}

size_t an_labeled_stacks(const struct analyzer *a, const struct an_lstack **v)
{
	*v = a->lst;
	return a->nlst;
}

const char *an_label_name(const struct analyzer *a, uint32_t name, size_t *len)
{
	if (!name || name > a->nlnames) {
		*len = 0;
		return NULL;
	}
	*len = a->lnames[name - 1].len;
	return a->lnames[name - 1].s;
}

size_t an_blocked_stacks(const struct analyzer *a, const struct an_stack **v)
{
	*v = a->blk_stacks;
	return a->nblk;
}

size_t an_finding_stacks(const struct analyzer *a, size_t i, const struct an_stack **v)
{
	*v = i < a->fst_cap ? a->fst[i].v : NULL;
	return i < a->fst_cap ? a->fst[i].n : 0;
}

const struct an_opts *an_get_opts(const struct analyzer *a)
{
	return &a->o;
}

const struct an_totals *an_totals(const struct analyzer *a)
{
	return &a->t;
}

uint64_t an_now(const struct analyzer *a)
{
	return a->now;
}

size_t an_sites(const struct analyzer *a, const struct an_site *const **sites)
{
	*sites = (const struct an_site *const *)a->sitev;
	return a->nsites;
}

size_t an_findings(const struct analyzer *a, const struct an_finding **f)
{
	*f = a->findings;
	return a->nfindings;
}

size_t an_workers(const struct analyzer *a, const struct an_worker *const **w)
{
	*w = (const struct an_worker *const *)a->workerv;
	return a->nworkers;
}

size_t an_top_polls(const struct analyzer *a, const struct an_top **t)
{
	*t = a->top_polls;
	return a->ntop_polls;
}

size_t an_top_sched(const struct analyzer *a, const struct an_top **t)
{
	*t = a->top_sched;
	return a->ntop_sched;
}

static int cmp_seq(const void *x, const void *y)
{
	const struct task *a = *(const struct task *const *)x, *b = *(const struct task *const *)y;

	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static bool task_has_finding(const struct task *t)
{
	for (int k = 0; k < AN_FINDING_KINDS; k++)
		if (t->finding[k])
			return true;
	return false;
}

/* Of the live tasks without a finding, how many are listed: what max_live_listed leaves after
 * those with one. */
static size_t live_quota(const struct analyzer *a, size_t *without)
{
	size_t with = 0;

	*without = 0;
	for (size_t i = 0; i < a->tasks.cap; i++)
		if (a->tasks.e[i].v) {
			if (task_has_finding(a->tasks.e[i].v))
				with++;
			else
				(*without)++;
		}
	return a->o.max_live_listed > with ? a->o.max_live_listed - with : 0;
}

uint64_t an_live_tasks_omitted(const struct analyzer *a)
{
	size_t without, quota = live_quota(a, &without);

	return without > quota ? without - quota : 0;
}

static void for_each_task(const struct analyzer *a, an_task_cb cb, void *ctx, bool capped)
{
	struct task **live;
	size_t n = 0, without, quota = capped ? live_quota(a, &without) : SIZE_MAX;

	for (size_t i = 0; i < a->nrecords; i++)
		cb(&a->records[i], ctx);
	live = malloc((a->tasks.len ? a->tasks.len : 1) * sizeof(*live));
	if (!live)
		return;
	for (size_t i = 0; i < a->tasks.cap; i++)
		if (a->tasks.e[i].v)
			live[n++] = a->tasks.e[i].v;
	qsort(live, n, sizeof(*live), cmp_seq);
	for (size_t i = 0; i < n; i++) {
		struct an_task_summary s;

		if (!task_has_finding(live[i])) {
			if (!quota)
				continue; /* counted: an_live_tasks_omitted */
			quota--;
		}
		summarize(a, live[i], &s, a->now);
		cb(&s, ctx);
	}
	free(live);
}

void an_for_each_task(const struct analyzer *a, an_task_cb cb, void *ctx)
{
	for_each_task(a, cb, ctx, false);
}

void an_for_each_listed_task(const struct analyzer *a, an_task_cb cb, void *ctx)
{
	for_each_task(a, cb, ctx, true);
}

size_t an_timeline(const struct analyzer *a, const struct an_tl_rec **first, size_t *nfirst,
		   const struct an_tl_rec **second, size_t *nsecond)
{
	if (a->tl_len < a->o.timeline_cap) {
		*first = a->tl;
		*nfirst = a->tl_len;
		*second = a->tl;
		*nsecond = 0;
	} else {
		*first = a->tl + a->tl_head;
		*nfirst = a->tl_len - a->tl_head;
		*second = a->tl;
		*nsecond = a->tl_head;
	}
	return a->tl_len;
}

const char an_finding_list[] =
#define AN_FINDING(e, name, title, one, many, rank, trigger, advice) name ", "
#include "findings.def"
#undef AN_FINDING
	"all, none";

const char *an_finding_name(enum an_finding_kind k)
{
	static const char *const names[] = {
#define AN_FINDING(e, name, title, one, many, rank, trigger, advice) [AN_##e] = name,
#include "findings.def"
#undef AN_FINDING
	};

	return (unsigned)k < AN_FINDING_KINDS ? names[k] : "?";
}

bool an_finding_triggers(enum an_finding_kind k)
{
	static const bool trig[] = {
#define AN_FINDING(e, name, title, one, many, rank, trigger, advice) [AN_##e] = trigger,
#include "findings.def"
#undef AN_FINDING
	};

	return (unsigned)k < AN_FINDING_KINDS && trig[k];
}

const char *an_state_name(enum an_task_state s)
{
	static const char *const names[] = {
		[AN_SPAWNED] = "spawned", [AN_SCHEDULED] = "scheduled", [AN_POLLING] = "polling",
		[AN_PENDING] = "pending", [AN_DONE] = "done", [AN_TERMINATED] = "terminated",
	};

	return (unsigned)s < AN_STATES ? names[s] : "?";
}

const char *an_kind_name(unsigned kind)
{
	const char *l = tet_code_label(TET_SET_KIND, kind);

	return l ? l : "unknown";
}

const char *an_event_name(unsigned type)
{
	return tet_probe_name(type);
}

const char *an_wait_name(unsigned kind)
{
	const char *l = kind == AN_WAIT_UNKNOWN ? "unknown" : tet_code_label(TET_SET_WAIT, kind);

	return l ? l : "?";
}

const char *an_stall_why_name(unsigned why)
{
	static const char *const names[] = {
		[AN_STALL_UNKNOWN] = "unknown", [AN_STALL_SYNC] = "sync",
		[AN_STALL_TIMER_LATE] = "timer_late", [AN_STALL_JOIN_POLL] = "join_long_poll",
		[AN_STALL_JOIN_STALLED] = "join_stalled", [AN_STALL_LOCK_HELD] = "lock_held",
	};

	return why < AN_STALL_WHYS && names[why] ? names[why] : "?";
}
