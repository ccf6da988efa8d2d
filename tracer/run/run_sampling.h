/* SPDX-License-Identifier: MIT */
/*
 * run_sampling.h — one run of `trace --mode sampling` (issue 27): a stock Tokio process traced
 * with no uprobe (capture/sampler.h), its CPU samples and sleeps charged to tasks by Tokio's
 * thread-local task id and the future type of the innermost raw::poll frame of the stack; the
 * JSON report and the terminal summary. See run_sampling.c for the attribution rule.
 */
#ifndef TET_RUN_SAMPLING_H
#define TET_RUN_SAMPLING_H
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct flight_opts;
struct outputs;
struct rw_opts;
struct tet_msgs;

struct rs_opts {
	pid_t pid;
	unsigned profile_hz;
	uint64_t duration_ns;       /* 0: until stopped or the process ends */
	uint64_t long_poll_ns;      /* --long-poll-threshold */
	size_t ringbuf_bytes;
	const char *json_path;      /* NULL: none; "-": stdout */
	const char *metrics_addr;   /* --metrics-addr, or NULL */
	size_t metrics_sites;       /* --metrics-sites: future_type label values */
	uint64_t interval_ns;       /* --interval, 0: none */
	const struct rw_opts *rw;   /* --remote-write (checked by trace.c), or NULL */
	struct outputs *outs;       /* --stacks, --pprof, --trace (checked: outputs_open), or NULL */
	const struct tet_msgs *msgs;  /* where the outputs say they were written */
	const char *html_path;      /* report.html; NULL: none */
	bool quiet;
	volatile sig_atomic_t *stop;
	/* --flight-recorder (run/flight_rt.h; its SIGUSR1, exit, crash and long_poll triggers), or
	 * NULL: the records of the window kept as they come, a dump analyses and writes them
	 * (run_sampling.c) */
	const struct flight_opts *fl;
	volatile sig_atomic_t *usr1;    /* SIGUSR1 received: a dump */
};

/* Whether the executable at path can be traced this way: 0, or a negative errno and the
 * reason in err (no task id slot: tlsctx's reason; stripped; not x86-64; no Tokio), naming the
 * file as what. `check` asks this of a file, `trace` through rs_preflight of a process. */
int rs_sampling_file(const char *path, const char *what, char *err, size_t len);
/* The same for a process: one line in err, "--mode sampling: " and the reason. */
int rs_preflight(pid_t pid, char *err, size_t len);
/* Runs the capture, then writes the reports; the metrics (served and pushed) and --interval's
 * summaries while it runs (summary: the terminal's stream). 0 or -errno (err set). */
int rs_run(const struct rs_opts *o, FILE *summary, char *err, size_t len);

#endif
