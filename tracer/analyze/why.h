/* SPDX-License-Identifier: MIT */
/*
 * why.h — why a poll was slow, after the capture: the kernel side's stacks (off-CPU periods
 * inside polls, CPU samples charged to the task being polled) symbolized and grouped for the
 * reporters (terminal, JSON, report.html, --stacks folded file). Built by why.c from the
 * analyzer's stack aggregates and the BPF stack map; read-only for the reporters.
 */
#ifndef TET_WHY_H
#define TET_WHY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer.h"

/* One aggregated stack, symbolized. */
struct why_stack {
	char **frames;            /* display strings, LEAF FIRST: "function (file:line)", or
				   * "function" without line info, "[kernel] name", "module+0xoff";
				   * sanitized printable UTF-8 (untrusted names went through
				   * text_sanitize), still to be escaped by each output format */
	uint32_t nframes;
	uint32_t user_addresses;  /* user return addresses walked (each expanded into frames with
				   * its inlined calls): 1 when cut to the leaf */
	uint32_t user_leaf;       /* index in frames of the innermost frame of the program's own
				   * code (not std/core/alloc, not a crate from a registry, not
				   * Tokio, not the kernel), UINT32_MAX when none */
	const char *syscall;      /* blocked stacks: "clock_nanosleep", "futex", "page fault", …;
				   * NULL for CPU samples or when unknown */
	uint64_t count;           /* CPU samples, or off-CPU periods (blocked) */
	uint64_t ns;              /* blocked stacks: time blocked, summed */
};

struct why_site {
	const struct an_site *site;
	uint64_t samples;         /* CPU samples charged to polls of this site */
	uint64_t on_cpu_ns, preempted_ns, blocked_ns; /* its polls' wall time, split */
	uint64_t stolen_ns;       /* … of preempted_ns, by the hypervisor */
	struct why_stack *cpu;    /* CPU samples by stack, most samples first */
	size_t ncpu;
	struct why_stack *blocked; /* blocked periods by stack, most time first */
	size_t nblocked;
};

/* A hot frame of a finding's polls: the innermost frame of the program's own code in each
 * sample, grouped by function. */
struct why_hot {
	const char *frame;        /* the function of its frames (why_stack.frames without " (file:line)") */
	uint64_t samples;
	double share;             /* of the finding's samples */
};

#define WHY_HOT_MAX 5
#define WHY_DOUBT_PERIODS 10      /* P(no sample | on CPU that long) = e^-10 */
#define WHY_DOUBT_WORDS " (doubtful: not one CPU sample in that time on CPU)" /* after the split */
struct why_finding {          /* parallel to an_findings(): index i describes finding i */
	bool known;               /* the breakdown below is from the kernel side */
	uint64_t on_cpu_ns, preempted_ns, blocked_ns; /* the worst occurrence (long_poll: its poll) */
	uint64_t stolen_ns;       /* … of preempted_ns, by the hypervisor */
	const struct why_stack *blocked_top; /* where it blocked longest (NULL: never blocked) */
	uint64_t samples;         /* CPU samples in the finding's polls */
	bool doubtful;            /* on CPU for WHY_DOUBT_PERIODS profile periods or more, and not
				   * one sample: time the tracer did not see (why_build) */
	struct why_hot hot[WHY_HOT_MAX];
	size_t nhot;
};

/* A stack as charged by polls of one kind (an_lstack's labels), for --pprof: every CPU sample
 * and blocked period of why_site.cpu / .blocked is in exactly one of these. */
struct why_labeled {
	const struct why_stack *stack;
	const struct an_site *site;
	bool blocked;             /* a blocked stack (ns), else CPU samples (count) */
	bool labeled;             /* the labels below are known; false: the site's only */
	bool long_poll;
	int32_t worker;           /* -1: none */
	uint32_t name;            /* an_label_name(), 0: none */
	uint64_t count, ns;
};

#define WHY_NOTES_MAX 16
struct why_report {
	bool sched;               /* sched_switch/sched_wakeup tracked the target's threads */
	const char *why_no_sched; /* when !sched */
	unsigned profile_hz;      /* 0: no CPU profile */
	const char *why_no_profile;
	bool steal;               /* time the hypervisor took is told apart from time on CPU */
	const char *why_no_steal; /* when !steal */
	uint64_t stolen_periods, stolen_ns; /* … seen (in polls or not) */
	uint64_t samples, samples_in_polls, offcpu_periods;
	uint64_t stack_errors;    /* stacks the BPF stack map could not hold (counted, not shown) */
	uint64_t splits_doubtful; /* findings with why_finding.doubtful */
	uint64_t offcpu_lost, samples_lost; /* off-CPU periods (sleeps, preemptions, steal) and CPU
				   * samples the ring had no room for: a poll whose sleep was lost
				   * looks on CPU */
	const char *notes[WHY_NOTES_MAX]; /* what could not be had honestly, one sentence each:
				   * "…/service: no frame pointers, user stacks cut to their leaf
				   * frame", "…: stripped, frames named by address" */
	size_t nnotes;
	struct why_site *sites;   /* sites with samples or blocked time, busiest first */
	size_t nsites;
	struct why_finding *findings;
	size_t nfindings;
	struct why_labeled *labeled; /* opts.stack_labels (--pprof) only: the stacks of sites, by labels */
	size_t nlabeled;
	struct why_stack *priv_stacks; /* why.c: the stacks the above point into */
	size_t priv_nstacks;
};

struct ss;
struct tet_counters;
/* Builds w (zeroed by the caller; sched, profile_hz and the why_no_* set by the caller) from
 * the analyzer's stacks, reading stack ids from the BPF stack map stack_fd (before the BPF
 * object is closed) and symbolizing with ss. 0 or -ENOMEM (w is then partly filled: free it). */
int why_build(struct why_report *w, const struct analyzer *a, int stack_fd, struct ss *ss,
	      const struct tet_counters *counters);
void why_free(struct why_report *w);

#endif
