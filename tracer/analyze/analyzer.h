/* SPDX-License-Identifier: MIT */
/*
 * analyzer.h — turns the tokio:* event stream into per-task, per-spawn-site and per-worker
 * figures and findings. Pure computation on kernel timestamps: no BPF, no I/O, so tests feed
 * it synthetic events. The design is described at the top of analyzer.c.
 */
#ifndef TET_ANALYZER_H
#define TET_ANALYZER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "hist.h"
#include "starve.h"
#include "uring.h"

enum an_finding_kind { /* findings.def */
#define AN_FINDING(e, name, title, one, many, rank, trigger, advice) AN_##e,
#include "findings.def"
#undef AN_FINDING
	AN_FINDING_KINDS,
};
#define AN_DETECT_ALL ((1u << AN_FINDING_KINDS) - 1)

enum an_task_state {
	AN_SPAWNED,    /* spawned, not polled yet (runnable) */
	AN_SCHEDULED,  /* woken (or notified during its poll), waiting for a worker */
	AN_POLLING,
	AN_PENDING,    /* returned Pending, waits for a wake */
	AN_DONE,       /* last poll returned Ready / was cancelled / panicked; terminate follows */
	AN_TERMINATED,
	AN_STATES,
};

/* The probes' codes (TET_POLL_PENDING …, TET_WAIT_TIMER …) are bpf/probes.def's, in events.h.
 * A pending task with no task_wait in its last poll waits for: */
enum { AN_WAIT_UNKNOWN = TET_WAIT_CODES };
/* A task_wait "kind" the decoder sends into a poll whose waits it could not all keep
 * (TET_WAIT_CUT, decode.h). */
#define AN_WAIT_CUT 0xff
#define AN_WAITS_MAX 4
struct an_wait {
	uint64_t object, arg;       /* as task_wait gave them */
	uint64_t ts;                /* registered at (inside the poll) */
	uint8_t kind;               /* TET_WAIT_*, AN_WAIT_UNKNOWN */
};
/* Why a stalled finding is one (an_finding.why). */
enum an_stall_why {
	AN_STALL_UNKNOWN,           /* pending without a wake, for no reason the probes name */
	AN_STALL_SYNC,              /* on a sync primitive or channel nobody signalled */
	AN_STALL_TIMER_LATE,        /* its timer is past due by stall_ns, and no wake came */
	AN_STALL_JOIN_POLL,         /* on a JoinHandle whose task is inside a long poll */
	AN_STALL_JOIN_STALLED,      /* … whose task is itself stalled */
	AN_STALL_LOCK_HELD,         /* on a Mutex/RwLock/Semaphore a known task holds */
	AN_STALL_WHYS,
};

/* A detection the flight recorder may trigger on (an_opts.on_detect). */
enum { AN_DETECT_POLL = AN_FINDING_KINDS, AN_DETECT_SCHED, AN_DETECTS };
struct an_detect {
	unsigned what;              /* enum an_finding_kind, AN_DETECT_POLL or AN_DETECT_SCHED */
	uint32_t pid, tid;
	uint64_t task_id, header_ptr;
	uint64_t ts;                /* the occurrence's start: poll begin, pending since, the
				     * moment it became runnable (scheduling delay) */
	uint64_t at;                /* the event (or tick) it was detected at */
	uint64_t value_ns, threshold_ns;
	const struct an_site *site;
};
typedef void (*an_detect_fn)(void *ctx, const struct an_detect *d);

struct an_opts {
	/* the thresholds: meaning, option and default in thresholds.def */
	uint64_t long_poll_ns;
	uint64_t stall_ns;
	uint64_t lost_waker_ns;
	uint64_t never_yields_ns;
	double self_wake_ratio;
	uint64_t self_wake_min;
	uint64_t large_future_bytes;
	bool wait_events;           /* task_wait attached: pending tasks say what they wait for */
	unsigned detect;            /* bit mask of enum an_finding_kind */
	bool waker_events;          /* waker_clone/drop attached: live waker counts exist */
	bool no_wakes;              /* waker_wake not captured (--probes, oxide's dialect): a
				     * pending task is never judged stalled or lost */
	bool key_by_header;         /* uprobe fallback: task identity is header_ptr */
	size_t max_live_tasks;      /* tasks tracked in full at once (more: site figures only) */
#define AN_MAX_LIVE_TASKS 100000    /* … by default (~1.4 KiB each and their histograms) */
	size_t hist_budget;         /* bytes every histogram shares (hist.h); 0: 16 MiB + 512 B a
				     * live task followed */
	size_t max_task_records;    /* terminated tasks kept for the report */
	size_t max_live_listed;     /* live tasks listed (an_for_each_listed_task): those with a
				     * finding always, then the oldest up to this many in all */
	size_t max_findings;
	size_t max_sites;
	size_t max_sites_listed;    /* spawn sites a JSON report lists: with a finding first, then
				     * the busiest (report_listed_sites) */
	size_t timeline_cap;        /* bounded event log for timeline reporters, 0 = off */
	size_t top_n;               /* slowest polls / worst scheduling delays kept */
	bool sched;                 /* off-CPU periods and CPU samples come in (TET_REC_OFFCPU,
				     * TET_REC_SAMPLE): they split each poll into on-CPU, preempted
				     * and blocked time (the preempted figure then comes from them,
				     * not from the records' cpu_wait) */
	bool profile;               /* CPU samples come in (TET_REC_SAMPLE) */
	bool stack_labels;          /* the stacks charged kept by task too (--pprof):
				     * an_labeled_stacks */
	/* Flight recorder: on_detect is called at every new occurrence of a finding kind in
	 * `detect` (also for tasks beyond max_findings: it does not depend on the list), for every
	 * poll longer than trig_poll_ns and every scheduling delay longer than trig_sched_ns
	 * (0 = off; the same time the reports show: a poll's wall time, wake → poll begin). */
	an_detect_fn on_detect;
	void *detect_ctx;
	uint64_t trig_poll_ns, trig_sched_ns;
};
void an_opts_default(struct an_opts *o);

struct an_site {
	uint32_t index;             /* order of first appearance */
	bool unknown;               /* tasks whose spawn was not seen (spawned before attach) */
	bool other;                 /* beyond max_sites: every further location shares this */
	bool typed;                 /* uprobe fallback: named by the future type only, no spawn
	                             * location (an_set_types; kind: spawn or blocking by type) */
	bool runtime;               /* spawned by Tokio itself (an_site_in_tokio): its worker
	                             * threads, its blocking pool's own work */
	uint8_t kind;
	uint32_t line, col;
	char *file;                 /* untrusted bytes, not NUL-safe: use file_len */
	size_t file_len;
	uint64_t file_len_reported; /* as the probe said; > file_len when truncated */
	char *type_name;
	size_t type_len;
	uint64_t type_len_reported;
	char *location;             /* "file:line:col" (file bytes as read) */
	size_t location_len;

	uint64_t tasks, tasks_terminated, tasks_untracked;
	uint64_t polls, busy_ns, wakes, self_wakes, self_wake_polls, outside_wakes;
	/* pending periods ended (or still open at the end) by what the task waited for */
	uint64_t wait_n[TET_WAIT_CODES + 1], wait_ns[TET_WAIT_CODES + 1], wait_max_ns[TET_WAIT_CODES + 1];
	uint64_t cpu_wait_ns;       /* part of busy_ns the polling threads spent preempted */
	uint64_t stolen_ns;         /* … of it, by the hypervisor (opts.sched, a KVM guest) */
	uint64_t blocked_ns;        /* part of busy_ns they spent asleep (opts.sched) */
	uint64_t samples;           /* CPU samples taken inside its polls (opts.sched) */
	uint64_t yields[TET_YIELD_CODES], results[TET_POLL_CODES], terms[TET_TERM_CODES];
	struct hist poll_ns, sched_ns, pending_ns, lifetime_ns;
	uint64_t findings[AN_FINDING_KINDS];
};

/* What the report shows of one task, live or terminated. The analyzer updates the fields
 * up to nwaits at every event of the task: they come first, on as few cache lines as they
 * fit (the consumer's cost is mostly cache misses on the tasks it follows). */
struct an_task_summary {
	uint32_t pid;
	uint64_t task_id, header_ptr;
	const struct an_site *site;
	uint8_t kind;
	uint8_t state;              /* enum an_task_state */
	int8_t term_reason;         /* -1 while alive */
	bool spawn_seen;
	uint64_t spawn_ts, first_ts, last_ts, end_ts;  /* end_ts 0 while alive */
	uint64_t polls, busy_ns, wakes, self_wakes, self_wake_polls, outside_wakes;
	uint64_t cpu_wait_ns;       /* part of busy_ns spent preempted (run-queue wait) */
	uint64_t blocked_ns;        /* part of busy_ns spent asleep (opts.sched) */
	uint64_t samples;           /* CPU samples inside its polls */
	uint64_t yields[TET_YIELD_CODES];
	int64_t live_wakers;        /* clones - drops - wakes by value; valid if wakers_known */
	bool wakers_known;
	uint8_t nwaits;             /* in waits[] */
	uint64_t waker_clones, waker_drops;
	/* filled when a summary is made (an_task_summary is also the report's record) */
	struct hist_summary poll_ns, sched_ns, pending_ns;
	uint64_t pending_now_ns;    /* at the end of capture, while pending */
	struct ur_task_stats uring; /* io_uring requests its polls filled (uring.h) */
	/* what its last Pending poll registered (task_wait): valid while PENDING */
	struct an_wait waits[AN_WAITS_MAX];
	/* task_meta */
	bool meta_seen, future_boxed;
	uint64_t future_size;
	uint16_t name_len;          /* bytes in name (untrusted, as read) */
	char name[TET_NAME_MAX];
};

/* A stack of the kernel side (ids in the BPF stack map, negative = not captured) and what it
 * was charged with. */
struct an_stack_key {
	uint32_t pid;
	int32_t ustack, kstack;
	int64_t syscall;            /* blocked stacks: the system call (-1 = none known) */
};
struct an_stack {
	struct an_stack_key k;
	const struct an_site *site;
	uint64_t count;             /* CPU samples, or blocked periods */
	uint64_t ns;                /* blocked time */
};

/* deadlock: one task of the cycle and the wait through which it waits for the next one */
#define AN_CYCLE_MAX 8
struct an_cycle_member {
	uint64_t task_id, header_ptr;
	const struct an_site *site;
	uint8_t wait_kind;          /* TET_WAIT_SEMAPHORE (a lock) or TET_WAIT_JOIN */
	uint8_t prim;               /* a lock's primitive (TET_LOCK_MUTEX …), as last acquired */
	uint64_t object;            /* the lock (batch semaphore address) or the awaited task's id */
	uint64_t permits;           /* a lock: the permits asked */
	uint64_t on_task;           /* the member it waits for: the lock's holder, the awaited task */
	uint64_t held_since;        /* a lock: since when that holder holds it */
	uint64_t pending_since;     /* this member's wait began */
	uint16_t name_len;
	char name[48];              /* the task's name (task_meta), untrusted bytes, cut */
};

struct an_finding {
	enum an_finding_kind kind;
	uint32_t pid;
	uint64_t task_id, header_ptr;
	const struct an_site *site;
	uint64_t first_ts;          /* start of the first occurrence (poll begin, pending since) */
	uint64_t last_ts;           /* start of the latest occurrence */
	uint64_t occurrences;       /* polls over the threshold, pending periods, self-waking polls */
	uint64_t value_ns;          /* the worst: poll time (long_poll: without the time the thread
				     * sat preempted, cpu_wait_ns), pending time, … */
	uint64_t cpu_wait_ns;       /* long_poll: preempted time of that poll, not in value_ns */
	uint64_t stolen_ns;         /* … of it, the hypervisor's (split) */
	/* opts.sched: the worst occurrence's poll (long_poll; never_yields: the poll so far), split
	 * (on_cpu_ns + cpu_wait_ns + blocked_ns = its wall time), and where it slept longest */
	bool split;
	uint64_t on_cpu_ns, blocked_ns;
	struct an_stack_key blocked_at;   /* ustack/kstack < 0: none */
	uint64_t blocked_at_ns;
	uint64_t threshold_ns;
	double ratio;               /* self_wake: the ratio */
	uint64_t polls;             /* self_wake: over this many polls */
	int64_t live_wakers;        /* stalled: -1 unknown */
	/* stalled: why, and what the task waited for when last judged (nwaits 0: nothing named) */
	uint8_t why;                /* enum an_stall_why */
	uint8_t nwaits;
	struct an_wait waits[AN_WAITS_MAX];
	uint64_t other_task;        /* JOIN_*: the awaited task's id */
	uint64_t other_ns;          /* JOIN_POLL: how long it has been in its poll; JOIN_STALLED:
				     * pending; TIMER_LATE: how long past due */
	uint32_t sharers;           /* SYNC: other tasks waiting on the same object at the end */
	uint64_t size;              /* large_future: the future's size in bytes */
	bool boxed;                 /* large_future: Tokio boxed it */
	uint16_t name_len;          /* the task's name (task_meta), untrusted bytes */
	char name[TET_NAME_MAX];
	bool ongoing;               /* still true at the end (pending / in the poll) */
	bool contradicted;          /* lost_waker: a wake came after all (missed clone?) */
	bool superseded;            /* stalled: its task turned out to be in a deadlock (dropped) */
	/* starvation (first_ts .. first_ts + value_ns; task_id/site: the first holder's): the
	 * polls that held every worker thread of the runtime, and what waited meanwhile — timers
	 * that fell due in it and fired late, woken tasks that waited to be polled, and how much
	 * of their waits it took (charged here: no stall clock runs while the runtime starves) */
	uint8_t nholders;
	struct an_holder holders[AN_HOLDERS_MAX];
	uint64_t victim_timers, victim_timer_max_ns;
	uint64_t victim_tasks, victim_sched_max_ns;
	uint64_t charged_ns;
	/* stalled, why LOCK_HELD: the holder (other_task; other_ns: held for), its site, the
	 * lock's primitive and how many other tasks hold permits of it too */
	const struct an_site *other_site;
	uint8_t prim;
	uint32_t other_holders;
	uint64_t other_object;      /* … the lock (one of waits[]) */
	/* deadlock (first_ts: when the cycle closed, its last wait began; task_id/site: its first
	 * member's): every member in cycle order, each waiting for the next (more: counted) */
	uint8_t nmembers;
	uint32_t members_more;
	struct an_cycle_member members[AN_CYCLE_MAX];
};

struct an_worker {
	uint32_t pid;
	int32_t index;
	uint32_t tid;               /* last thread seen for it */
	uint64_t polls, busy_ns, parks, parked_ns, first_ts, last_ts;
	uint64_t park_since;        /* valid while parked */
	bool parked;
	struct hist park_ns;
};

/* One poll or scheduling delay worth listing (top-N lists). */
struct an_top {
	uint64_t value_ns, ts;
	uint32_t pid, tid;
	int32_t worker;
	uint64_t task_id;
	const struct an_site *site;
};

/* Timeline records for later reporters (HTML timeline, Perfetto): bounded ring, oldest
 * overwritten. Poll: [ts, end], worker/tid, result. Wake: ts, waker tid, task. Park: [ts, end]. */
enum an_tl_type { AN_TL_POLL, AN_TL_WAKE, AN_TL_PARK, AN_TL_SPAWN, AN_TL_TERMINATE };
struct an_tl_rec {
	uint64_t ts, end;
	uint64_t task_id;
	uint64_t header_ptr;        /* the task's identity in the uprobe fallback (task_id 0) */
	uint32_t pid, tid;
	int32_t worker;
	uint8_t type, code;         /* poll result / by_ref / kind / term reason */
};

struct an_totals {
	uint64_t events;            /* records received */
	uint64_t by_type[TET_EV_COUNT];
	uint64_t polls, wakes, spawns, terminates, yields, waker_clones, waker_drops, parks, unparks;
	uint64_t outside_wakes, self_wakes;
	uint64_t tasks_seen, tasks_live, tasks_untracked, task_records_omitted;
	uint64_t polls_untracked;          /* polls of tasks not followed (the live-task bound) */
	uint64_t findings_omitted;
	uint64_t findings_set_aside;       /* lost events could explain them (an_findings_aside) */
	uint64_t stalled_in_deadlock;      /* stalled findings a deadlock found later took over */
	uint64_t unmatched_poll_ends;      /* poll_end with no poll_begin (lost, or pre-attach) */
	uint64_t waits_outside_polls;      /* task_wait of a task not in a poll (or block_on) */
	uint64_t waits_dropped;            /* beyond AN_WAITS_MAX in one poll */
	uint64_t unknown_task_events;      /* wake/clone/drop/terminate of a task never polled */
	uint64_t lost_waker_contradicted;
	uint64_t waker_count_inconsistent; /* tasks whose live waker count went below zero */
	uint64_t timeline_events;          /* records pushed to the timeline ring (kept: an_timeline) */
	uint64_t first_ts, last_ts;
	/* opts.sched */
	uint64_t offcpu, samples;          /* records received */
	uint64_t stolen, stolen_ns;        /* … of offcpu, time the hypervisor took (TET_OFFCPU_STOLEN) */
	uint64_t offcpu_in_polls, samples_in_polls; /* … charged to a poll */
	uint64_t kernel_unmatched;         /* … that fell in no poll seen (or came too late) */
	uint64_t kernel_refused;           /* … not held: 16 384 threads or 262 144 records held */
	uint64_t stacks_omitted;           /* stack aggregates beyond the bound (counted only) */
	uint64_t starvation_omitted;       /* episodes beyond the bound (not charged, not listed) */
	uint64_t worker_polls_untracked;   /* polls on worker threads beyond the bound (starve.h) */
	uint64_t workers_untracked;        /* events naming a worker index beyond the 4096 followed */
	uint64_t task_id_zero;             /* spawns and first polls of task id 0 (never a task's) */
	/* batched capture's sampling (TET_REC_RATE, TET_REC_GAP): tasks followed whole only */
	uint64_t tasks_set_aside_rate;     /* followed until a raised rate left them out */
	uint64_t tasks_set_aside_gap;      /* alive (or ended) during a gap: lost batches */
	uint64_t polls_set_aside;          /* polls those tasks had when set aside (in site figures) */
	uint64_t events_set_aside;         /* later events of tasks not followed by the rule */
	uint64_t hist_unbucketed;          /* values past the histograms' byte budget (hist.h) */
};

/* The sampling rate over the capture (TET_REC_RATE records): at most AN_RATE_CHANGES kept,
 * later changes counted and the last one kept in the last slot. */
#define AN_RATE_CHANGES 256
struct an_rate_change {
	uint64_t ts;
	uint32_t rate, why;         /* enum tet_rate_why */
};
struct an_sampling {
	bool known;                 /* a rate record came (batched capture) */
	uint32_t rate, rate_max;    /* now, the highest */
	uint64_t gaps;              /* TET_REC_GAP records */
	size_t nchanges;
	uint64_t changes_omitted;
	struct an_rate_change changes[AN_RATE_CHANGES];
};

struct analyzer;

struct analyzer *an_new(const struct an_opts *o);
void an_free(struct analyzer *a);
/* Uprobe fallback (opts.key_by_header): spawns are not seen, so a task first met at a poll goes
 * to the site of its future type — the poll_begin record's `b` indexes names[] — instead of
 * "spawned before the trace". Returns 0 or -ENOMEM. */
int an_set_types(struct analyzer *a, const char *const *names, size_t n);
/* Feeds one ring-buffer record (size bytes). Returns 0, -EINVAL for a malformed record
 * (counted, ignored), -ENOMEM. */
int an_event(struct analyzer *a, const void *rec, size_t size);
/* Runs the time-based detectors (stalled, lost_waker, never_yields) as of `now` (ns,
 * CLOCK_MONOTONIC, the clock of the events). Call on every drain tick and at the end. */
void an_tick(struct analyzer *a, uint64_t now);
/* Tells the analyzer which events were dropped so far (counters from BPF): when events that
 * live waker counts depend on were lost, lost_waker stops being reported (stalled instead). */
void an_note_drops(struct analyzer *a, const __u64 drops[TET_EV_COUNT]);
bool an_wakers_unreliable(const struct analyzer *a);
/* The sampling rule's state (an_sampling above). */
const struct an_sampling *an_get_sampling(const struct analyzer *a);
/* Lock or wait records were lost (batched capture: a thread could not keep them all): lock
 * holders and wait lists may be partial, so no deadlock is judged from now on. */
void an_note_lock_loss(struct analyzer *a);
/* Events were lost (a full ring). Before an_finish, say which tasks lost one (an_lost_task:
 * (pid, task id or, with key_by_header, header pointer), the types lost as bits 1 << enum
 * tet_event; from the BPF side's lost_tasks), or
 * when events whose tasks are not known were lost (an_loss_window: some moment in [from, to]).
 * An_finish then sets aside every finding such a loss could explain: with the tasks known, a
 * finding of a task that lost an event its kind rests on — stalled: a wake; lost_waker: a wake
 * or a waker clone; never_yields: a poll end; long_poll: a poll begin or end; self_wake: a
 * yield; else the findings whose evidence (first occurrence to end, or now) overlaps a window.
 * an_lost_by_task(a, false) makes the windows decide even when tasks were given (the task
 * list is incomplete). Returns 0 or -ENOMEM. */
int an_lost_task(struct analyzer *a, uint32_t pid, uint64_t key, uint64_t types);
void an_loss_window(struct analyzer *a, uint64_t from, uint64_t to);
void an_lost_by_task(struct analyzer *a, bool by_task);
/* Ends the capture: evaluates the ratio detectors, marks what is still ongoing, sets aside the
 * findings lost events could explain. */
void an_finish(struct analyzer *a, uint64_t now);

const struct an_opts *an_get_opts(const struct analyzer *a);
const struct an_totals *an_totals(const struct analyzer *a);
uint64_t an_now(const struct analyzer *a); /* the `now` of the last tick/finish */

size_t an_sites(const struct analyzer *a, const struct an_site *const **sites);
size_t an_findings(const struct analyzer *a, const struct an_finding **f);
/* The findings an_finish set aside: lost events could explain them. */
size_t an_findings_aside(const struct analyzer *a, const struct an_finding **f);
size_t an_workers(const struct analyzer *a, const struct an_worker *const **w);
/* Slowest polls / worst scheduling delays, worst first. */
size_t an_top_polls(const struct analyzer *a, const struct an_top **t);
size_t an_top_sched(const struct analyzer *a, const struct an_top **t);
/* Calls cb for every task (terminated ones kept, then live ones, in first-seen order). */
typedef void (*an_task_cb)(const struct an_task_summary *t, void *ctx);
void an_for_each_task(const struct analyzer *a, an_task_cb cb, void *ctx);
/* The same, but of the live tasks only those a report lists (opts.max_live_listed: every one
 * with a finding, then the oldest); an_live_tasks_omitted: how many it leaves out. */
void an_for_each_listed_task(const struct analyzer *a, an_task_cb cb, void *ctx);
uint64_t an_live_tasks_omitted(const struct analyzer *a);
/* Timeline records, oldest first: two spans (ring buffer). */
size_t an_timeline(const struct analyzer *a, const struct an_tl_rec **first, size_t *nfirst,
		   const struct an_tl_rec **second, size_t *nsecond);

/* What the kernel side delivers, known once the capture is attached (opts.sched, .profile). */
void an_set_kernel(struct analyzer *a, bool sched, bool profile);
/* Stacks charged, per site: CPU samples and blocked periods (opts.sched). */
size_t an_cpu_stacks(const struct analyzer *a, const struct an_stack **v);
size_t an_blocked_stacks(const struct analyzer *a, const struct an_stack **v);
/* The CPU samples of finding i's polls, by stack (site = the finding's). */
size_t an_finding_stacks(const struct analyzer *a, size_t i, const struct an_stack **v);
/* opts.stack_labels: what each stack of an_cpu_stacks / an_blocked_stacks was charged, split by
 * the poll that took it: its task's name, its worker, whether it was a long poll. Samples
 * taken between the nested polls of an enclosing one (kq_own), or beyond the bound
 * (AN_LSTACKS_MAX entries, AN_LNAMES_MAX names: then the name is left out), are in the stack's
 * count and in no entry here: a reader gives the remainder the site's labels only. */
#define AN_LSTACKS_MAX (4 * 65536)
#define AN_LNAMES_MAX 4096
struct an_lstack {
	bool blocked;               /* an index into an_blocked_stacks, else an_cpu_stacks */
	bool long_poll;             /* the poll was over long_poll_ns (spawn_blocking: never) */
	uint32_t stack;
	int32_t worker;             /* -1: not on a worker (or unknown) */
	uint32_t name;              /* 0: no name (task_meta), else an_label_name(name) */
	uint64_t count, ns;         /* as an_stack's */
};
size_t an_labeled_stacks(const struct analyzer *a, const struct an_lstack **v);
/* A task name of an_lstack.name: untrusted bytes as read (len of them), NULL for 0. */
const char *an_label_name(const struct analyzer *a, uint32_t name, size_t *len);

/* io_uring requests of the traced tasks (uring.h): records TET_REC_URING_* go there, and the
 * tasks' wakes and polls once a ring was seen. Never NULL. */
struct ur;
struct ur *an_uring(const struct analyzer *a);

/* A task's summary (live, or kept as a record), or false when it is not known. */
bool an_task_get(const struct analyzer *a, uint32_t pid, uint64_t task_id,
		 struct an_task_summary *out);
/* The known holders of a lock (the object of a semaphore wait), or NULL (locks.h). */
struct lk_lock;
struct lk_stats;
const struct lk_lock *an_lock(const struct analyzer *a, uint32_t pid, uint64_t object);
const struct lk_stats *an_lock_stats(const struct analyzer *a);

const char *an_finding_name(enum an_finding_kind k); /* "long_poll", … */
/* Whether the flight recorder can dump on a kind (findings.def's trigger: an incident). */
bool an_finding_triggers(enum an_finding_kind k);
/* "long_poll, stalled, …, deadlock, all, none": what --detect accepts */
extern const char an_finding_list[];
const char *an_state_name(enum an_task_state s);
const char *an_kind_name(unsigned kind);              /* "spawn", "spawn_local", "blocking" */
/* Whether a spawn location's file lies in the tokio crate's own sources (any install: registry,
 * vendored, git checkout, Debian's packaged crates, a patched copy), and whether a fallback
 * site's future type is one Tokio spawns itself. Sets an_site.runtime. */
bool an_file_in_tokio(const char *file, size_t len);
bool an_type_in_tokio(const char *type, size_t len);
const char *an_event_name(unsigned type);             /* probe name: "task_poll_begin" … */
const char *an_wait_name(unsigned kind);              /* "timer", "io", …, "unknown" */
const char *an_stall_why_name(unsigned why);          /* "unknown", "sync", … */
/* How a pending task's wait is judged (docs/wait-reasons.md): a subscription (I/O readiness, an
 * mpsc/broadcast receive, a Notify — watch, CancellationToken — or a select! over one) is idle by
 * design and never a finding; a timer not yet late is asleep; a request (oneshot, JoinHandle, a
 * semaphore acquire: Mutex, RwLock, Semaphore, bounded send), a late timer or nothing named may
 * become stalled. */
enum an_wait_class { AN_WAIT_NONE, AN_WAIT_IDLE, AN_WAIT_ASLEEP, AN_WAIT_REQUEST };
enum an_wait_class an_wait_class(const struct an_task_summary *s, uint64_t now);
const char *an_wait_class_name(enum an_wait_class c); /* "idle", "asleep", "request", NULL */
bool an_wait_is_subscription(unsigned kind);

#endif
