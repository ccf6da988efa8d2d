/* SPDX-License-Identifier: MIT */
/*
 * run.h — one trace run: the object that owns a capture (capture/), its decoder, the
 * analyzer, the flight recorder and the live outputs (--metrics-addr, --interval), routes the
 * capture's records, tracks the traced processes' exits and the losses, keeps the /proc
 * caches the reports read, and builds the report's metadata.
 *
 *   run_plan    the capture the targets allow (batched or per-event) and what follows from it
 *   run_open    analyzer, flight recorder, metrics server; attach (nothing stays attached on
 *               any failure)
 *   run_step    one drain and what is due at `now` (ticks, triggers, dumps, metrics, intervals)
 *   run_finish  detach, drain what is left, the analysis's end and the metadata
 *   run_close   everything goes
 *
 * The command layer (tracer/cli/trace.c) parses and validates the options, discovers the
 * targets, sleeps between steps, handles signals and writes the outputs. Messages go through
 * a struct tet_msgs (seterr.h); errors that end the run come back as -errno and a line in err.
 */
#ifndef TET_RUN_H
#define TET_RUN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer.h"
#include "capture.h"
#include "flight_rt.h"
#include "reporters.h"

enum run_capture { CAPTURE_AUTO, CAPTURE_BATCHED, CAPTURE_PER_EVENT };

/* What `trace` was asked to do (docs/cli.md). */
struct run_opts {
	int pid;
	const char *binary;
	uint64_t duration_ns, interval_ns, drain_ns;
	const char *output;        /* the last --output */
	struct outputs outs;       /* --output (repeatable) and --trace */
	const char *metrics_addr;
	size_t metrics_sites, timeline_events;
	struct rw_opts rw;         /* --remote-write (url NULL: off) */
	unsigned probes;
	bool probes_given;
	enum tet_mode mode;
	enum run_capture capture;
	uint32_t sample_rate;      /* fixed: the rate; adaptive: the lowest (1) */
	bool sample_fixed;         /* --sample-rate N: no adaptive sampling */
	uint32_t max_overhead_pct; /* adaptive sampling's CPU budget, % of one CPU */
	bool max_overhead_given;
	struct tet_sched_opts sched;
	bool no_uring;
	int nice;
	size_t ringbuf;
	bool verbose, quiet;
	size_t top;
	struct an_opts an;
	struct flight_opts fl;
};

struct run;

/* The capture the targets allow: batched when the probes have tokio:event_batch, unless told
 * otherwise; fixes o->probes, o->ringbuf and the analyzer's options that follow. Returns 0,
 * or -EINVAL (err: why the options cannot be met). */
/* The flight recorder keeps batches raw (flight.h): the ring's consumer only copies them, a
 * live analysis reads them from the window. */
bool run_flight_raw(const struct run_opts *o, const struct tet_targets *t);
int run_plan(struct run_opts *o, const struct tet_targets *t, const struct tet_msgs *msgs,
	     char *err, size_t len);
/* Opens the run on the discovered targets (o and t must outlive it; the analyzer's options in
 * o follow what the targets give); summary is where the terminal reports go. Returns 0 or
 * -errno with err set; *out is set either way (run_close it). */
int run_open(struct run **out, struct run_opts *o, const struct tet_targets *t,
	     const struct tet_msgs *msgs, FILE *summary, char *err, size_t len);
/* The capture's start (CLOCK_MONOTONIC), once every probe is attached. */
uint64_t run_start_ns(const struct run *r);

enum run_state { RUN_GOING, RUN_STOPPED, RUN_DURATION, RUN_GONE };
/* Drains the capture, then (unless stop: a signal ends the run) does what is due now: ticks,
 * flight-recorder triggers and dumps, metrics, --interval. usr1: SIGUSR1 arrived (a
 * flight-recorder dump). Returns the run's state (RUN_GOING: go on), or -errno (err set). */
int run_step(struct run *r, bool stop, bool usr1, char *err, size_t len);
/* How long to sleep before the next step: --drain-interval, less at the end of --duration. */
uint64_t run_wait_ns(const struct run *r, uint64_t now);
/* Ends the capture (at `now`; stop_signal: the signal that stopped it, 0: none) and the
 * analysis; with --flight-recorder, writes what is queued and says what was kept. Then the
 * terminal summary (unless --quiet). */
void run_finish(struct run *r, int stop_signal);
/* Writes --output / --trace (and the last metrics). Returns 0 or -1 (said through msgs). */
int run_write(struct run *r, struct outputs *outs);
void run_close(struct run *r);

/* What the uprobe fallback does not give (the report's fallback.unavailable, and `check`'s) */
#define RUN_FALLBACK_UNAVAILABLE 7
extern const char *const run_fallback_unavailable[RUN_FALLBACK_UNAVAILABLE];

#endif
