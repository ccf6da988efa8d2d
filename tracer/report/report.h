/* SPDX-License-Identifier: MIT */
/*
 * report.h — what a capture's reports are made from (report_meta: the run beside the analyzer)
 * and the text and figures they all share (model.c, uring_report.c's text). The writers
 * themselves (terminal, JSON, HTML, Perfetto, metrics, folded stacks, the output files) are in
 * reporters.h; JSON pieces they share in jsonparts.h.
 */
#ifndef TET_REPORT_H
#define TET_REPORT_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "analyzer.h"
#include "events.h"
#include "why.h"
#include "kuring.h"
#include "pmem.h"
#include "text.h"

#define REPORT_SCHEMA_VERSION 1

struct report_file {
	const char *path;
	unsigned probes;          /* present in the file (bits of enum tet_event) */
	unsigned sites;
};

/* The uprobe fallback (mode "uprobe-fallback"): what was found and attached, what it costs. */
struct report_fallback {
	const char *file;                 /* the binary whose symbols are probed */
	const char *const *fn_names;      /* functions looked for ("raw::poll", …) */
	const size_t *fn_counts;          /* how many of each were found (0 = inlined / absent) */
	size_t nfns;
	const char *const *unavailable;   /* figures this mode cannot give */
	size_t nunavailable;
	size_t poll_instances, types, types_exact, types_ambiguous;
	const char *type_source;          /* "dwarf", "v0-mangling", "symbols" */
	bool multi;                       /* uprobe_multi links */
	const char *why_single;
	size_t uprobes, links;
	uint64_t attach_ns;
	double uprobe_ns, uretprobe_ns;   /* measured per probed call; 0 = not measured */
};

/* Batched capture (capture "batched"): how it went. */
/* The sampling rule, in words (the JSON's capture.batch.sampling.rule, the terminal, the HTML). */
#define REPORT_SAMPLING_RULE_FIXED \
	"one task in `rate`, picked by its id, recorded whole; the totals count every task"
#define REPORT_SAMPLING_RULE_ADAPTIVE \
	"one task in `rate`, picked by its id; the rate rises when the tracer falls behind and " \
	"falls back once it keeps up; a task the rate leaves out while it runs, or alive when " \
	"batches were lost, is set aside whole; the totals count every task"
struct report_batch {
	const struct tb_stats *stats;     /* the decode stage's figures (batch_stats.h) */
	uint64_t exact[TET_EV_COUNT];     /* per probe: the traced threads' own counts (every task,
					   * sampled or not): the totals of a sampled capture */
	size_t sites, rate_sites;
	bool multi, sweeps, preemption;
	const char *why_single, *why_no_sweeps, *why_no_preemption;
	/* sampling (docs/sampling.md): the rule's history is the analyzer's (an_get_sampling) */
	bool adaptive;
	const char *why_fixed;            /* adaptive asked for, not possible: why */
	uint32_t rate;                    /* the rate at the end */
	uint32_t max_overhead_pct;        /* adaptive: the tracer's CPU budget */
	uint64_t rate_failures;           /* rates that could not be set */
	/* a flight recorder's live analysis reads the window: batches the window dropped before
	 * it read them (the analysis counts them as lost, the window itself lost nothing) */
	uint64_t skipped_by_analysis;
};

/* Flight recorder (--flight-recorder): what fired a dump. Times are CLOCK_MONOTONIC, the events'
 * clock. */
struct report_trigger {
	const char *kind;         /* "sigusr1", a finding kind ("long_poll", …), "poll" or
				   * "sched_delay" (a threshold), "process_exit", "process_crash" */
	const char *spec;         /* as given on the command line ("poll>100ms"), or the kind */
	uint64_t ts;              /* the triggering moment: the occurrence's start (a poll's
				   * begin, pending since), the signal's arrival, the exit */
	uint64_t at_ns;           /* when it was detected (>= ts) */
	uint32_t pid, tid;        /* 0: not tied to a process / thread */
	bool has_task;
	uint64_t task_id, header_ptr;
	uint64_t value_ns;        /* the figure that crossed its threshold (0: none) */
	uint64_t threshold_ns;
	int signal;               /* process_crash: the fatal signal */
	bool core_dumped;
	int exit_status;          /* process_exit: the exit status */
	char detail[256];         /* one sentence, printable */
};
struct report_flight {
	uint64_t window_ns;       /* --flight-recorder as a duration (0: as a size) */
	uint64_t window_bytes;    /* … as a size, or the memory bound of a time window */
	uint64_t from_ns, to_ns;  /* the dump holds the events with from_ns <= ts <= to_ns */
	uint64_t post_ns;         /* --post-trigger */
	uint64_t records, bytes;  /* records replayed into this dump, bytes they took in memory */
	bool cut_by_memory;       /* a time window the memory bound shortened: from_ns is later
				   * than trigger - window */
	uint64_t dump_index;      /* 1, 2, … since the recorder started */
	uint64_t triggers_suppressed; /* triggers that fired within the cooldown, until this one */
	const char *basename;     /* <executable>-<pid>-<UTC time>-<trigger> */
	struct report_trigger trigger;
	bool on_dump;             /* --on-dump given: the hooks of the dumps before this one */
	uint64_t hooks_run, hooks_failed, hooks_skipped;
};

/* --remote-write (remote_write.c): what the sender did, a snapshot taken on the main thread. */
struct rw_stats {
	const char *url;          /* as shown: scheme, host, port and path (no credentials, no query) */
	uint64_t interval_ns;
	uint64_t pushes;          /* requests the receiver accepted (2xx) */
	uint64_t samples;         /* samples in them */
	uint64_t retries;         /* requests sent again after a connection error or a 5xx */
	uint64_t fail_connection; /* requests that failed: connection, timeout, TLS, DNS */
	uint64_t fail_server;     /* … answered 5xx (retried) */
	uint64_t fail_client;     /* … answered 4xx or another non-2xx (not retried) */
	uint64_t dropped_queue;   /* samples dropped unsent: the queue was full (the oldest go) */
	uint64_t dropped_rejected; /* … the receiver refused them (4xx) */
	uint64_t dropped_exit;    /* … still unsent when the final push's wait ran out, or given up
				   * at the end (a failed attempt) for the final push */
	uint64_t queue_max;       /* the queue's bound, in pushes (intervals) */
	int last_status;          /* the last HTTP status (0: none, or a connection error) */
};

struct report_meta {
	const char *mode;         /* "usdt" / "uprobe-fallback" */
	const char *dialect;      /* usdt: the probes' dialect (tracer/discover/dialect.h) */
	const char *dialect_lacks; /* what that dialect cannot give, NULL or "" for nothing */
	const char *capture;      /* "batched" / "per-event" */
	uint32_t sample_rate;     /* one task in N (1: every task) */
	const struct report_batch *batch; /* NULL with per-event capture */
	int pid;                  /* 0 with --binary */
	const char *binary;       /* --binary, or NULL */
	const char *executable;
	const struct report_file *files;
	size_t nfiles;
	unsigned probes;          /* attached (bits of enum tet_event) */
	uint64_t start_ns, end_ns;        /* CLOCK_MONOTONIC, the events' clock */
	uint64_t requested_ns;            /* --duration, 0 = until stopped */
	struct timespec wall_start;
	const char *ended_by;     /* "duration" "signal" "process_exit" "process_crash" "running"
				   * "flight_recorder" (a dump) */
	int exit_signal;          /* process_crash: the signal that killed it */
	bool exit_core;
	int exit_status;          /* process_exit: its status, -1 unknown */
	struct tet_counters counters;
	bool counters_valid;
	struct pmem_stats pmem;   /* the tracer's reads of the process's memory (pmem.h) */
	size_t top;               /* rows per terminal table */
	size_t ringbuf;           /* the BPF ring's size (bytes) */
	const struct report_fallback *fallback; /* NULL in usdt mode */
	const struct why_report *why;     /* why polls were slow (why.h); NULL = not tracked */
	const struct report_flight *flight; /* a flight-recorder dump; NULL otherwise */
	const struct tet_uring_info *uring; /* io_uring tracing (kuring.h); NULL = not set up */
	const struct rw_stats *remote_write; /* --remote-write; NULL without it */
	/* I/O readiness waits: the fd behind an I/O driver token of process pid and what it is
	 * (printable text into what, its kind — "listener", "connection", "pipe", … — into
	 * *kind), from the process's epoll tables; returns the fd, or -1 when unknown. NULL:
	 * nothing known (tests, a process gone). */
	int (*io_fd)(void *ctx, uint32_t pid, uint64_t token, char *what, size_t len,
		     const char **kind);
	void *io_ctx;
};

/* A poll's result as the trace and the page name it: probes.def's label, capitalized
 * ("Pending"); "?" for a code it does not have. */
const char *report_poll_result(unsigned code, char *buf, size_t len);
/* Plain-language sentence for a finding (naming its spawn site; printable text only). */
void report_finding_detail(const struct an_finding *f, char *buf, size_t len);
/* A time as an offset from the capture's start (0 before it): the reports' "_at_ns". */
static inline uint64_t report_rel(const struct report_meta *m, uint64_t ts)
{
	return ts > m->start_ns ? ts - m->start_ns : 0;
}
/* A spawn site as the terminal names it: its location (sanitized), "(spawned before the
 * trace)", "(other sites)", or "future TYPE" in the fallback. Returns buf. */
const char *report_site_loc(const struct an_site *s, char *buf, size_t len);
/* What a pending task waits for (task_wait), in words: "a timer due in 9m58s", "I/O: fd 7
 * readable (TCP listener 127.0.0.1:40123)", "tokio::sync::Notify 0x…", "the JoinHandle of task
 * 14" (printable text). now: the moment it is judged at. Returns buf. */
const char *report_wait_text(const struct an_wait *w, uint32_t pid, uint64_t now,
			     const struct report_meta *m, char *buf, size_t len);
/* A stalled finding's wait, appended to its sentence ("; waiting on …"). */
void report_wait_finding_text(const struct analyzer *a, const struct report_meta *m,
			      const struct an_finding *f, char *buf, size_t len);
/* "; waiting on tokio::sync::Mutex 0x… held by task 12, spawned at …, for 5.1s, itself …" */
void report_lock_held_text(const struct analyzer *a, const struct report_meta *m, uint32_t pid,
			   const struct an_wait *w, unsigned prim, uint64_t holder,
			   const struct an_site *site, uint64_t held_ns, uint32_t others,
			   char *buf, size_t len);
const struct an_wait *report_lock_wait(const struct an_wait *v, unsigned n, uint64_t object);
/* A task's name as the reports show it: sanitized, "" when it has none. Returns buf. */
const char *report_task_name(const char *name, size_t n, char *buf, size_t len);
/* A signal's name ("SIGSEGV"), or "signal N" when it has none. Returns buf. */
const char *report_signal_name(int sig, char *buf, size_t len);
/* A flight-recorder dump in one line, for the terminal and the HTML page (printable text):
 * "dump 2: trigger poll>100ms at +12.345s (DETAIL), window +0.000s..+14.345s" (offsets from
 * m->start_ns). Returns buf. */
const char *report_flight_line(const struct report_meta *m, char *buf, size_t len);
const char *report_sampling_line(const struct report_meta *m, const struct analyzer *a, char *buf,
				 size_t len);
/* The finding that fired this dump's trigger: same kind name, pid and task (task_id, or
 * header_ptr when task_id is 0). Threshold triggers ("poll", "sched_delay") match none. */
bool report_is_trigger(const struct report_meta *m, const struct an_finding *f);
/* What would lose less, when more than 2 % of the events were dropped (the summary and the
 * JSON's data_loss.advice); "" otherwise. Returns buf. */
const char *report_drop_advice(const struct report_meta *m, const struct an_totals *t, char *buf,
			       size_t len);
/* Which figures drops of this event type affect (for the summary and the JSON). */
const char *report_drop_impact(unsigned type);
/* Events dropped, all probes together. */
uint64_t report_total_drops(const struct report_meta *m);
/* Batched capture: gaps in threads' batch sequences that neither the full ring nor a flight
 * recorder's live analysis falling behind its window explain (0 without batched capture). */
uint64_t report_batches_lost_otherwise(const struct report_meta *m);
/* Totals for the report: the analyzer's counts, or, in a sampled batched capture, the exact
 * counts of the traced threads (spawns, polls, wakes, terminations, parks, unparks). */
uint64_t report_total(const struct report_meta *m, const struct an_totals *t, unsigned type);
/* The analyzer's workers in (pid, index) order (NULL and *n = 0 if out of memory); free() it. */
const struct an_worker **report_sorted_workers(const struct analyzer *a, size_t *n);
/* --remote-write in one line, for the terminal: "remote write to URL: N pushes delivered (M
 * samples), …". Returns buf. */
const char *report_remote_write_line(const struct rw_stats *w, char *buf, size_t len);
/* Estimated time the uprobe fallback's probes added to the traced process (ns). */
double report_fallback_overhead_ns(const struct report_fallback *f, const struct an_totals *t);
/* "on CPU 0.1ms · preempted 0 · blocked 49.9ms; blocked 49.9ms in clock_nanosleep ← f ← g;
 * hottest of 12 CPU samples: f (80 %), g (20 %)" — a finding's why in one line (printable
 * text; "" when nothing is known). Returns buf. */
const char *why_finding_line(const struct why_finding *wf, char *buf, size_t len);

#endif
