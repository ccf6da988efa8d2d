/* SPDX-License-Identifier: MIT */
/*
 * sampling_report.h — the outputs of `trace --mode sampling` (docs/sampling-mode.md), drawn from
 * the analysis's model (analyze/sampling.h) and the run's facts (struct sampling_meta): the JSON
 * report and the terminal summary.
 */
#ifndef TET_SAMPLING_REPORT_H
#define TET_SAMPLING_REPORT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sampling.h"

struct report_flight;

#define SR_NAME_MAX 256   /* bytes of a name from the traced binary shown (report-schema.md) */
#define SR_NOT_SEEN 6

/* What the mode cannot see: { JSON key, why } (the JSON's not_seen, the summary, the page) */
extern const char *const sr_not_seen[SR_NOT_SEEN][2];

struct rw_stats;

/* What the run knows besides the model: the target, the slot, the capture's figures. */
struct sampling_meta {
	int pid;
	const char *exe;             /* the executable's path (untrusted: escaped) */
	const char *slot_method;     /* tlsctx_method_name: "dwarf", "code" */
	const char *slot_layout;     /* tlsctx_layout_name: "niche", "tagged" */
	int64_t id_off, tag_off;     /* tag_off: shown for the tagged layout only */
	bool tagged;
	unsigned profile_hz;
	uint64_t duration_ns;
	bool stack_scan;             /* the BPF side scanned the stacks (no frame pointers) */
	uint64_t perf_events;
	bool sched_tracepoints;
	uint64_t samples, sleeps;    /* kept */
	uint64_t slot_read_failures, sample_drops, sleep_drops, stack_errors;
	uint64_t over_memory_bound, malformed;
	uint64_t scan_hits;          /* samples whose poll frame came from the stack scan */
	/* BlockingTask ids told to the BPF side (and refused by it), and the sleeps recorded with
	 * one in the slot, without stack scan or stacks (bpf/sched.bpf.h blocking_ids) */
	uint64_t blocking_ids_told, blocking_ids_by_sleeps, blocking_id_errors, blocking_sleeps;
	const struct rw_stats *remote_write; /* --remote-write (as of its last push); NULL without */
	const struct report_flight *flight; /* a flight-recorder dump (report.h); NULL otherwise */
};

/* The JSON report (docs/sampling-mode.md "JSON"): 0, or nonzero when a write failed. */
int report_sampling_json(FILE *out, const struct sa_model *m, const struct sampling_meta *mt);
/* -o PATH ("-": stdout): written to PATH.tmp.PID and renamed into place when complete. 0 or
 * -errno with one line in err; a failed write leaves nothing behind. */
int report_sampling_write_json(const char *path, const struct sa_model *m,
			       const struct sampling_meta *mt, char *err, size_t len);
/* PATH written by write to PATH.tmp.PID and renamed into place when complete: 0, or -errno with
 * one line in err; a failed write leaves nothing behind. */
int report_sampling_write_file(const char *path, int (*write)(FILE *, const struct sa_model *,
							      const struct sampling_meta *),
			       const struct sa_model *m, const struct sampling_meta *mt, char *err, size_t len);
/* report.html (docs/sampling-mode.md "report.html"): one static page, no script; 0, or nonzero
 * when a write failed. */
int report_sampling_html(FILE *out, const struct sa_model *m, const struct sampling_meta *mt);
/* -o PATH.html: written to PATH.tmp.PID and renamed into place when complete; as _write_json. */
int report_sampling_write_html(const char *path, const struct sa_model *m,
			       const struct sampling_meta *mt, char *err, size_t len);
/* The terminal summary. */
void report_sampling_terminal(FILE *out, const struct sa_model *m, const struct sampling_meta *mt);
/* --interval's short summary of the records so far (mt->duration_ns: the span so far). */
void report_sampling_interval(FILE *out, const struct sa_model *m, const struct sampling_meta *mt);

#endif
