/* SPDX-License-Identifier: MIT */
/*
 * sampling.h — the analysis of `trace --mode sampling` (issue 27), pure: CPU samples and sleeps
 * of a traced process's threads, their stacks already resolved (decode/sampstack.h), in; a model
 * out: the future types, tasks and threads charged, the long_poll findings, the attribution's
 * counts and what the tables refused. No file, process or BPF access: it can be run on any
 * window of records and on synthetic ones (tests: unit_trace's test_sampling). See sampling.c
 * for the attribution rule and the long_poll rule.
 */
#ifndef TET_SAMPLING_H
#define TET_SAMPLING_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "htab.h"

#define SA_TOP          10      /* hottest frames a report shows per future type */
/* What the analysis keeps, bounded against a huge or hostile target (as analyzer.h's AN_*_MAX):
 * past a cap (or when memory runs out) the entry is not kept and `refused` counts it. */
#define SA_MAX_TASKS    65536   /* task ids charged samples */
#define SA_MAX_THREADS  16384
#define SA_MAX_TYPES    4096    /* future types with samples */
#define SA_MAX_FRAMES   1024    /* hottest-frame names counted per future type (and per long poll) */
#define SA_MAX_FINDINGS 4096
#define SA_MAX_IDS      131072  /* blocking-task ids and (type, task) pairs remembered */
#define SA_KFRAME       128     /* bytes of a kernel frame's name (sampstack.h's SST_KFRAME) */

/* One CPU sample (TET_REC_TSAMPLE): the record, its poll function (set by the caller from the
 * stack, before sa_analyze), and what the analysis decides. 88 bytes: the run keeps up to 2^19
 * (run_sampling.c's memory bound). */
struct sa_sample {
	uint64_t ts;
	uint64_t task;   /* the thread-local slot's task id, 0: None or not read */
	uint32_t tid;
	int32_t ustack, kstack;
	uint32_t flags;
	uint32_t nvcsw;  /* the thread's voluntary switches, low 32 bits */
	int32_t ptype;   /* in: the future type of the poll function, -1 none */
	uint64_t polls[TET_SCAN_CANDS];  /* the stack scan's candidates (for the caller's decode) */
	/* set by sa_analyze */
	int type;        /* future type index; -1: not in an async poll, -2: an id but no poll frame,
			  * -3: a poll frame but the slot held no polled task (outside the body) */
	int poll;        /* in: the innermost poll function (equal index: same function), -1 none */
	uint64_t rtask;  /* the task charged (0: unknown) */
};

/* One sleep of a thread whose slot held a task (TET_REC_TOFFCPU): switched out at since,
 * woken at woken (0: not seen), back on CPU at ts. 96 bytes. */
struct sa_sleep {
	uint64_t since, ts, woken, task;
	int64_t syscall;
	uint32_t tid, flags;
	int32_t ustack, kstack;
	uint64_t polls[TET_SCAN_CANDS];
	int poll;        /* in: as sa_sample's */
	int32_t ptype;   /* in: as sa_sample's */
};

_Static_assert(sizeof(struct sa_sample) <= 88 && sizeof(struct sa_sleep) <= 96,
	       "run_sampling.c's memory bound (its comment, docs/sampling-mode.md)");

/* What the analysis asks of the stacks; a NULL function answers "unknown" (NULL, 0, false). */
struct sa_stacks {
	/* the frame a user stack is charged to in hottest-frame counts (sampstack.h sst_frame) */
	const char *(*frame)(void *ctx, int32_t ustack);
	/* up to max kernel frame names of a kernel stack into out: the count */
	size_t (*kframes)(void *ctx, int32_t kstack, char (*out)[SA_KFRAME], size_t max);
	/* the type is Tokio's BlockingTask (a worker loop or spawn_blocking): not an async poll */
	bool (*blocking)(void *ctx, int type);
	void *ctx;
};

/* The caps of the tables (what each refused is counted: struct sa_refused). */
struct sa_caps { size_t tasks, threads, types, frames, findings, ids; };
/* tasks, frames and ids count samples; the others entries */
struct sa_refused { uint64_t tasks, threads, types, frames, findings, ids; };

/* The SA_MAX_* caps, each lowered to n when n is not 0 (the tests' TET_TEST_SAMPLING_CAP). */
void sa_caps_init(struct sa_caps *c, size_t n);

struct sa_input {
	struct sa_sample *s;         /* sorted in place (by thread, then time); type, rtask set */
	size_t ns;
	struct sa_sleep *z;          /* sorted in place (by thread, then start) */
	size_t nz;
	const char *const *type_names;  /* future type names by index (kept by the model: they must
					 * outlive it) */
	size_t ntypes;
	unsigned profile_hz;         /* > 0 */
	uint64_t long_poll_ns;       /* the long_poll threshold */
	struct sa_caps caps;
	struct sa_stacks stacks;
	uint64_t window_from, window_to;  /* the capture's start and end (CLOCK_MONOTONIC, as the
					   * records' stamps; 0: the records' own), for the heat map */
};

struct sa_count { const char *key; uint64_t n; };   /* a frame name and its samples */

struct sa_type {           /* by type index */
	uint64_t samples;
	struct sa_count *hot;      /* frames, most samples first */
	size_t nhot;
	size_t ntasks;             /* tasks seen with this type */
	bool refused;
};
struct sa_task { uint64_t id; int type; uint64_t samples; };
struct sa_thread { uint32_t tid; uint64_t samples, in_poll; };

struct sa_finding {        /* a long_poll */
	bool blocked;              /* seen as: a sleep inside a poll (else: on CPU samples) */
	int type;
	uint64_t task;             /* 0: unknown */
	uint32_t tid;
	uint64_t first, last, n;   /* on CPU: the first and last sample's time and the samples;
				    * blocked: switched out, back in (n unused) */
	const char *hot;           /* the hottest frame (the stacks' frame()), NULL unknown */
	const char *syscall;       /* blocked: the system call's name, NULL unknown */
	char kframes[3][SA_KFRAME];/* blocked: the innermost named kernel frames ("" after the last) */
	uint64_t blocked_ns;       /* blocked: switch out to wake-up (off CPU when no wake-up seen) */
};

/* The worker heat map (sampling_heat.c): per thread and time bucket, its CPU samples in async
 * polls and outside them, and the exact off-CPU time of its recorded sleeps. */
#define SA_HEAT_COLS     120   /* buckets at most (at least 30 when the run lasts 30 periods) */
#define SA_HEAT_ROWS     256   /* threads with a row (the lowest tids); the rest counted */
#define SA_COMM          16    /* bytes of a thread's name (the kernel's TASK_COMM_LEN) */

struct sa_heat_cell { uint32_t poll, other; uint64_t off_ns; };
struct sa_heat_row {
	uint32_t tid;
	char name[SA_COMM + 1];    /* set by the caller (/proc/PID/task/TID/comm): "" unknown */
	uint64_t samples, in_poll, off_ns;   /* the row's totals */
	struct sa_heat_cell *cells;          /* ncols */
};
struct sa_heat {
	uint64_t from, to, width;  /* the window [from, to) and a bucket's width, ns */
	size_t ncols;
	struct sa_heat_row *rows;  /* by tid */
	size_t nrows;
	uint64_t rows_refused;     /* threads past SA_HEAT_ROWS, or all of them out of memory */
};

struct sa_model {
	const char *const *type_names;
	size_t ntypes;             /* entries of types[] (every type; those with samples: nseen) */
	struct sa_type *types;
	size_t nseen;              /* types with samples kept */
	struct sa_task *tasks;     /* in the order first charged */
	size_t ntasks;
	struct sa_thread *threads; /* by tid */
	size_t nthreads;
	struct sa_finding *f;      /* on CPU ones by thread and time, then blocked ones */
	size_t nf;
	uint64_t in_poll;          /* samples in an async poll's body: a poll frame, the slot a task's */
	uint64_t outside_body;     /* samples with a poll frame whose slot held no polled task's id
				    * (None, or a worker loop's blocking-task id): charged to nothing */
	uint64_t no_poll_frame;    /* samples with an id and no poll frame */
	uint64_t conflicts;        /* task ids met with two future types */
	uint64_t parked_sleeps, poll_sleeps;  /* sleeps outside / inside an async poll */
	uint64_t outside_body_sleeps;  /* sleeps with a poll frame whose slot held no polled task */
	uint64_t period_ns, min_run;  /* the sample period; samples that make an on-CPU long_poll */
	struct sa_caps cap;
	struct sa_refused refused;
	/* the analysis's own */
	struct htab blk;           /* ids the worker loops' blocking tasks hold (→ (void *)1) */
	struct htab task_idx;      /* task id → its index in tasks + 1 */
	struct htab type_task;     /* (type, task id) seen (→ (void *)1) */
	size_t tasks_cap;
	struct sa_heat heat;       /* filled by sa_heat_build at sa_analyze's end */
};

/* Analyses in into m (zeroed by it): 0, or -ENOMEM (m then holds what was made: sa_free it).
 * Sorts in->s and in->z and sets each sample's type and rtask. The model points into in's type
 * names and into the strings the stacks' frame() returned. */
int sa_analyze(struct sa_model *m, const struct sa_input *in);
void sa_free(struct sa_model *m);
/* A type's name, "(unknown)" for -1 or out of range. */
const char *sa_type_name(const struct sa_model *m, int type);

/* The heat map of in's records (their type set by sa_analyze) into h (zeroed by it). The window
 * is in's, widened to every record; a bucket is the smallest 1, 2 or 5 x 10^k ns at least
 * 1/SA_HEAT_COLS of it and at least the sample period (so 48-120 buckets when the run lasts 120
 * periods). A sample is put whole in the bucket of its stamp; a sleep is cut at the buckets'
 * edges. Out of memory: no rows, every thread counted in rows_refused. */
void sa_heat_build(struct sa_heat *h, const struct sa_input *in, uint64_t period_ns);
void sa_heat_free(struct sa_heat *h);
/* The bucket width sa_heat_build picks for a window of span ns. */
uint64_t sa_heat_width(uint64_t span, uint64_t period_ns);
/* Bucket col of row r as shares of the bucket's width, in thousandths: on CPU in async polls,
 * on CPU outside them (samples x period: an estimate, off by up to a period or two per bucket,
 * cut so that with the exact off-CPU time it never exceeds the width), and off CPU in recorded
 * sleeps (exact). The rest of the bucket is not seen (a preemption, a sleep with no record). */
void sa_heat_share(const struct sa_heat *h, uint64_t period_ns, const struct sa_heat_row *r,
		   size_t col, unsigned *poll, unsigned *other, unsigned *off);

#endif
