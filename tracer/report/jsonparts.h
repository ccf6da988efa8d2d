/* SPDX-License-Identifier: MIT */
/*
 * jsonparts.h — JSON the JSON report (jsonreport.c), report.html's data (html.c) and io_uring's
 * section (uring_report.c) share, with the same names in the same order; each writes into the
 * object the caller has open (jsonparts.c).
 */
#ifndef TET_JSONPARTS_H
#define TET_JSONPARTS_H
#include "report.h"

struct jw;
struct hist_summary;
/* "flight_recorder": a dump's window and what fired it (m->flight; times from m->start_ns):
 * the JSON report's, and --mode sampling's dumps (sampling_report.c) */
void report_json_flight(struct jw *w, const struct report_meta *m);
/* A histogram as the report writes distributions: {count, min, p50, p90, p99, max, mean, sum}. */
void report_json_hist(struct jw *w, const char *key, const struct hist *h);
void report_json_hist_summary(struct jw *w, const char *key, const struct hist_summary *s);
/* "location" and "type_name" of a spawn site (null for the pseudo sites, and location null for
 * the fallback's typed sites). */
void report_json_site_ref(struct jw *w, const struct an_site *s);
/* One wait object. */
void report_wait_json(struct jw *w, const struct an_wait *x, uint32_t pid, uint64_t now,
		      const struct report_meta *m);
/* A starvation finding's holders and victims (findings[] keys). */
void report_starvation_json(struct jw *w, const struct report_meta *m, const struct an_finding *f);
/* deadlock: "cycle": every member (task, site, name, what it waits on, held by whom) */
void report_deadlock_json(struct jw *w, const struct report_meta *m, const struct an_finding *f);
/* A lock's holder as an object: primitive, mode, task_id, site, held_ns, other_holders, state */
void report_lock_holder_json(struct jw *w, const struct analyzer *a, uint32_t pid, unsigned prim,
			     uint64_t holder, const struct an_site *site, uint64_t held_ns,
			     uint32_t others);
/* A finding's wait-reason fields. */
void report_finding_wait_json(struct jw *w, const struct analyzer *a,
			      const struct report_meta *m, const struct an_finding *f);

/* "remote_write": what --remote-write sent (the JSON report and --mode sampling's) */
void report_json_remote_write(struct jw *w, const struct rw_stats *s);

/* Runs of keys the JSON report and the HTML page's data blob both write: */
/* "started_at" (ISO 8601 UTC), "duration_ns" */
void report_json_started(struct jw *w, const struct report_meta *m);
/* thresholds.def's rows, by their an_opts member ("long_poll_ns": 10000000, …): every one, or
 * (all false) the durations only */
void report_json_thresholds(struct jw *w, const struct an_opts *o, bool all);
/* "events", "drops", "polls", "wakes", "spawns" */
void report_json_totals_head(struct jw *w, const struct an_totals *t, const struct report_meta *m);
/* "sched", "why_no_sched", "profile_hz", "why_no_profile", "cpu_samples",
 * "cpu_samples_in_polls", "offcpu_periods_in_polls", "stack_errors", "notes" */
void report_json_why_head(struct jw *w, const struct why_report *r);
/* "pid", "worker", "tid", "polls", "busy_ns", "parks", "parked_ns" */
void report_json_worker_counts(struct jw *w, const struct an_worker *wk);

#endif
