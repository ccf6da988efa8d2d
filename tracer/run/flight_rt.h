/* SPDX-License-Identifier: MIT */
/*
 * flight_rt.h — the flight recorder's decisions, as pure units (no clock, no I/O, no fork):
 * which trigger fires and which one the cooldown suppresses, when a queued dump is due, how
 * far back the store must stay whole, which window a dump replays, and the counter snapshots
 * a dump subtracts to report the drops of its own window. The run layer (run.c) feeds them
 * the time and the events; the store itself is tracer/analyze/flight.h; writing a dump
 * (fork, replay, write) is run_dump.c.
 */
#ifndef TET_FLIGHT_RT_H
#define TET_FLIGHT_RT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "flight.h"
#include "report.h"

#define FR_TRIGGERS_MAX 16
#define FR_PENDING_MAX 8
#define FR_SNAPS_MAX 4096
#define FR_EXIT_POST_MAX_NS (100ull * 1000 * 1000) /* a gone process: its last flushes only */

/* --flight-recorder and its options */
struct flight_opts {
	bool on;
	uint64_t window_ns;        /* a time window, or */
	uint64_t window_bytes;     /* … a size window; for a time window, its memory bound */
	bool memory_given;
	struct fr_trigger trig[FR_TRIGGERS_MAX];
	size_t ntrig;
	uint64_t post_ns, cooldown_ns;
	const char *dir;
	uint64_t dump_max_bytes;
	const char *on_dump;       /* --on-dump CMD, or NULL */
	const char *needs;         /* a flight-recorder option given (for the usage error) */
};

/* A dump waiting for its --post-trigger. */
struct fr_pending {
	struct report_trigger t;
	uint64_t due;
	uint32_t pid_filter;       /* 0: every process */
	uint32_t name_pid;
	bool exit;                 /* process_exit / process_crash */
};

/* The counters now and then: a dump reports the drops of its window. */
struct fr_snap {
	uint64_t ts;
	struct tet_counters c;
	uint64_t exact[TET_EV_COUNT]; /* batched capture: the threads' own counts (tb_totals) */
};

struct fr_rt {
	const struct flight_opts *o;
	struct fr_pending q[FR_PENDING_MAX];
	size_t nq;
	uint64_t last_throttled;   /* the event time of the last detector / threshold trigger taken */
	bool throttled_once;
	uint64_t suppressed, dumps, failed;
	uint64_t hooks_run, hooks_failed, hooks_skipped; /* --on-dump (run_dump.c) */
	uint64_t dump_index;       /* of the last dump started */
	struct fr_snap *snaps;     /* FR_SNAPS_MAX, a ring */
	size_t nsnaps, snap_next;
	uint64_t next_snap, snap_every;
	uint32_t last_pid;         /* of the newest record */
	unsigned detectors;        /* --trigger detector kinds */
	bool any_exit;             /* --trigger exit (a crash always dumps) */
	uint64_t trig_poll_ns, trig_sched_ns; /* the lowest poll> / sched_delay> thresholds */
};

/* Sets up from the options: the detectors and thresholds the triggers need, the snapshot
 * period. Returns 0 or -ENOMEM. */
int fr_rt_init(struct fr_rt *fl, const struct flight_opts *o);
void fr_rt_free(struct fr_rt *fl);
/* Does any trigger need a live analyzer (detector or threshold)? */
bool fr_rt_needs_live(const struct fr_rt *fl);

enum fr_fire_result { FR_QUEUED, FR_SUPPRESSED };
/*
 * Queues a dump of trigger t, fired at `now`. Detector and threshold triggers (throttled) are
 * held to the cooldown, on the clock of the events that fired them (t->at_ns, the time a dump
 * is named after), not the time the analysis got to them: that lags by up to the batched
 * capture's ordering horizon, and by different amounts from one trigger to the next.
 * Detections can come out of event order, so the distance is taken either way. A full queue
 * suppresses too. The dump is due --post-trigger later (at most 100 ms for an exit: only what
 * the threads flushed on their way out can still come).
 */
enum fr_fire_result fr_rt_fire(struct fr_rt *fl, const struct report_trigger *t, uint64_t now,
			       uint32_t pid_filter, uint32_t name_pid, bool throttled, bool exit);
/* The trigger an analyzer detection fires (the matching one with the lowest threshold), or
 * false when none matches. t->detail is filled; loc names the task's spawn site. */
bool fr_rt_match_detect(const struct fr_rt *fl, const struct an_detect *d, const char *loc,
			struct report_trigger *t);
/* The trigger of a process's end (TET_REC_EXIT): a crash always, an exit with --trigger exit;
 * signame: the fatal signal's name for the detail. Returns false when it fires none. */
bool fr_rt_exit_trigger(const struct fr_rt *fl, const struct tet_exit_rec *r, const char *signame,
			struct report_trigger *t);
/* The oldest time the store must keep whole: a queued dump's window stays until written. */
uint64_t fr_rt_keep_from(const struct fr_rt *fl, uint64_t now);
/* Takes the first queued dump when it is due (or any time with `anyway`). */
bool fr_rt_take_due(struct fr_rt *fl, uint64_t now, bool anyway, struct fr_pending *p);

/* The window a dump replays: [from, to]; cut_by_memory when the store's size bound, not the
 * window, decided its start. */
struct fr_plan {
	uint64_t from, to;
	bool cut_by_memory;
};
void fr_rt_plan(const struct flight_opts *o, const struct fr_stats *st, const struct fr_pending *p,
		struct fr_plan *plan);

/* Is a counter snapshot due at `now`? Then the caller reads the counters and adds it. */
bool fr_rt_snap_due(struct fr_rt *fl, uint64_t now);
void fr_rt_snap_add(struct fr_rt *fl, uint64_t now, const struct tet_counters *c,
		    const uint64_t *exact /* TET_EV_COUNT, or NULL */);
/* The newest snapshot taken at or before `from` (NULL: none). */
const struct fr_snap *fr_rt_snap_base(const struct fr_rt *fl, uint64_t from);
/* The i-th snapshot, oldest first (i < nsnaps). */
const struct fr_snap *fr_rt_snap_at(const struct fr_rt *fl, size_t i);
/* now -= base, counter by counter (a counter lower than its base gives 0). */
void fr_counters_since(struct tet_counters *now, const struct tet_counters *base);

#endif
