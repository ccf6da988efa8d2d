/* SPDX-License-Identifier: MIT */
/*
 * sampprof.h — the profile of `trace --mode sampling` (docs/sampling-mode.md "Folded stacks,
 * pprof, Perfetto"), pure: the CPU samples in async polls and the sleeps inside them, grouped by
 * what the profile outputs tell apart (stack, future type, thread, long_poll, system call), and
 * the sleeps for the trace's tracks; drawn from the analysis's records and model (sampling.h)
 * after sa_analyze. --stacks, --pprof and --trace (report/folded.c, pprof.c, perfetto.c) write
 * it; the names they show come from the run through struct sp_names.
 */
#ifndef TET_SAMPPROF_H
#define TET_SAMPPROF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampling.h"

#define SP_FRAME      512   /* bytes of a user frame's display name (sampstack.h SST_FRAME_MAX) */
#define SP_FRAMES_MAX 256   /* frames shown per stack (kernel + user), as why.c's */
#define SP_NO_FP "[no frame pointers: the frames between the poll and the leaf are not known]"

struct sp_entry {            /* one distinct (stack, future type, thread, long_poll[, syscall]) */
	bool blocked;        /* sleeps inside a poll (count: sleeps, ns: off CPU), else CPU samples */
	int type;            /* future type (sa_type_name) */
	int32_t ustack, kstack;  /* kstack: sleeps only (-1 for samples) */
	uint32_t tid;
	bool long_poll;      /* samples: inside an on-CPU long_poll finding's run (its thread, between
			      * its first and last sample); sleeps: one long enough to be a blocked
			      * long_poll (off CPU >= the threshold) */
	int64_t syscall;     /* sleeps: the system call's number (-1 unknown); samples: -1 */
	const char *sysname; /* its name, NULL unknown */
	uint64_t count, ns;
};

struct sp_sleep {            /* a sleep inside an async poll (the trace's blocked slices) */
	const struct sa_sleep *z;
	uint64_t task;       /* 0: unknown (the slot held a worker loop's blocking-task id) */
	const char *sysname; /* the system call's name, NULL unknown */
	bool long_poll;
};

/* What the writers ask the run for: names. A NULL function answers "unknown" (0, NULL). */
struct sp_names {
	/* up to max user frames of a stack, leaf first (printable UTF-8): the count; *cut: the
	 * program has no frame pointers, only the leaf's frames are known (sampstack.h) */
	size_t (*user)(void *ctx, int32_t ustack, char (*out)[SP_FRAME], size_t max, bool *cut);
	/* up to max kernel frame names, leaf first: the count */
	size_t (*kernel)(void *ctx, int32_t kstack, char (*out)[SA_KFRAME], size_t max);
	/* a thread's name (its comm: untrusted bytes, NUL-terminated), NULL unknown */
	const char *(*thread)(void *ctx, uint32_t tid);
	void *ctx;
};

struct sp_profile {
	const struct sa_model *m;
	struct sp_entry *v;          /* CPU samples' entries, then sleeps' */
	size_t n;
	struct sp_sleep *sl;         /* by thread, then start */
	size_t nsl;
	uint64_t samples;            /* CPU samples in the entries: the model's in_poll */
	uint64_t sleeps, off_cpu_ns; /* sleeps inside polls (the model's poll_sleeps), off CPU */
	/* set by the caller */
	int pid;
	const char *exe;
	uint64_t start_ns, end_ns;   /* the capture, on the records' clock (CLOCK_MONOTONIC) */
	int64_t wall_start_ns;       /* its start, CLOCK_REALTIME */
	struct sp_names names;
};

/* Builds p from in (its records sorted and charged by sa_analyze) and m, sa_analyze's model:
 * 0 or -ENOMEM. p points into in's records and m: they must outlive it. */
int sp_build(struct sp_profile *p, const struct sa_model *m, const struct sa_input *in);
void sp_free(struct sp_profile *p);

#endif
