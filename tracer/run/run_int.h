/* SPDX-License-Identifier: MIT */
/*
 * run_int.h — the run object's insides, shared by run.c (the live capture), run_dump.c (a
 * flight-recorder dump, written in a forked child) and run_meta.c (what both need). Nothing
 * outside tracer/run/ includes it.
 */
#ifndef TET_RUN_INT_H
#define TET_RUN_INT_H
#include <sys/types.h>

#include "batch.h"
#include "batchcap.h"
#include "fallback.h"
#include "report.h"
#include "run.h"
#include "run_dump.h"
#include "stacksym.h"
#include "symbols.h"
#include "units.h"
#include "why.h"

#define DETECT_TICK_NS (100 * NSEC_PER_MSEC)
#define RUN_PIDS_MAX 64

/* ---- I/O readiness waits: the fd behind a token (report_meta.io_fd, fdwhat.h) ---- */
#define IOFD_PIDS 16
struct iofd {
	struct {
		uint32_t pid;
		struct fdw *w;          /* NULL: /proc/PID could not be opened */
		uint64_t refreshed;
	} v[IOFD_PIDS];
	size_t n;
};

/* How a traced process ended (TET_REC_EXIT). */
struct proc_exit {
	uint32_t pid, code;
	bool group;
	uint64_t ts;
};

/* Drops are seen at each reading of the counters: a lost event happened since the previous
 * reading — or, with batched capture, up to 2 s before it (a thread hands its events over that
 * late at most). */
struct loss_track {
	uint64_t since, drops, margin;
};

struct fallback_meta_buf {
	struct report_fallback f;
	const char *names[TSYM_KINDS];
	size_t counts[TSYM_KINDS];
};

struct run {
	const struct run_opts *o;
	const struct tet_targets *t;
	const struct tet_msgs *msgs;
	FILE *summary;
	bool batched;
	struct tet_session *sess;
	struct analyzer *an;         /* NULL: a flight recorder with no live analysis */
	/* the first kernel-side record of a process has the symbolizer learn its mappings */
	struct ss *ss;
	uint32_t pids[RUN_PIDS_MAX];
	size_t npids;
	struct proc_exit exits[RUN_PIDS_MAX];
	size_t nexits;
	/* --flight-recorder (store: NULL without it) */
	struct fr_rt fl;
	struct fr_store *store;
	bool raw;                    /* it keeps batches raw (batched capture), decoded by a dump */
	unsigned char *sweep_buf;    /* raw: a quiet thread's records, read in place */
	bool sweep_off;              /* … not readable (no permission) */
	uint64_t next_sweep;         /* … looked for from a batch of this time on */
	/* raw with a live analysis: its decoder reads the window (fr_store_follow), not the
	 * ring; it runs in slices between the ring's drains */
	struct tb *s2;
	uint64_t s2_batches, s2_next;
	uint64_t drained_before;     /* the last drain began then (the ring was read empty) */
	struct fr_dumper dump;       /* the dump being written, --on-dump's command (run_dump.h) */
	/* the report */
	struct iofd iofd;
	struct loss_track lt;
	struct report_meta meta;
	struct report_batch rbatch;
	struct fallback_meta_buf fbm;
	struct report_file *rfiles;
	struct why_report why;
	struct prom_server *metrics;
	struct rw *rw;               /* --remote-write */
	struct rw_stats rw_stats;    /* its figures, as of the last push (meta.remote_write) */
	uint64_t start, now, next_tick, next_interval, next_metrics, next_rw;
	bool gone;
	int pidfd;                   /* --pid's process (-1: none, or the kernel has no pidfds) */
	FILE *rec_dump;              /* TET_RECORD_DUMP: the records analyzed (report_replay) */
};

/* run_meta.c */
uint64_t run_mono_ns(void);
int run_fd_target(void *ctx, uint32_t pid, int32_t fd, char *buf, size_t len);
uint64_t run_drops_total(const struct tet_counters *c);
void run_loss_track(struct loss_track *lt, struct analyzer *an, const struct tet_counters *c,
		    uint64_t now);
void run_lost_tasks_to(struct analyzer *an, struct tet_session *sess, const struct tet_counters *c);
void run_why_meta(struct run *r, struct why_report *w, const struct analyzer *an,
		  const struct tet_counters *c);
/* run_dump.c: starts the first queued dump when it is due and no other is being written
 * (now_anyway: any queued one, and waits for it). */
void run_dump_poll(struct run *r, bool now_anyway);
/* … its dumper (run_dump.h), set up once the run's targets are known */
void run_dump_init(struct run *r);

#endif
