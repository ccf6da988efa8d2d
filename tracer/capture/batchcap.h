/* SPDX-License-Identifier: MIT */
/*
 * batchcap.h — the batched capture session: tet_batch (bpf/tokio_usdt.bpf.c) on the
 * tokio:event_batch sites, tet_nop on the tokio:sample_rate sites that spell the sampling
 * rate, the ring buffer, and the decode stage (batch.h) that turns batches into the
 * analyzer's events. A backend of capture.h (capture_ops.h).
 */
#ifndef TET_BATCHCAP_H
#define TET_BATCHCAP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "batch.h"
#include "events.h"
#include "capture_ops.h"
#include "ksched.h"
#include "kuring.h"

struct tet_targets;

typedef int (*tet_bc_event_fn)(void *ctx, void *data, size_t size);
/* kind 1: a ring record of type TET_REC_BATCH, as the ring hands it; 2: a clock pair (u64 TSC,
 * u64 CLOCK_MONOTONIC ns), as the decoder gets it */
typedef int (*tet_bc_raw_fn)(void *ctx, unsigned kind, const void *data, size_t size);

struct tet_bc_opts {
	pid_t pid;               /* > 0: only this process; 0: every process running the file */
	size_t ringbuf_bytes;
	uint32_t sample_rate;    /* one task in N (1: every task); adaptive: the lowest */
	bool adaptive;           /* raise and lower the rate at run time (ratectl.h) */
	double max_cpu;          /* adaptive: the tracer's CPU budget, in CPUs */
	struct tet_sched_opts sched;
	bool no_uring;
	tet_bc_event_fn on_event;
	tet_bc_raw_fn on_raw;    /* the decoder's input too (NULL: not wanted) */
	bool no_decode;          /* on_raw only: batches are not decoded here (no sweeps) */
	void *raw_ctx;           /* on_raw's */
	void *ctx;
	const struct tet_msgs *msgs; /* what it says besides errors (seterr.h); NULL: silent */
};

struct tet_bc_info {
	bool multi;              /* attached with uprobe_multi links */
	const char *why_single;
	size_t sites;            /* event_batch sites attached */
	size_t rate_sites;       /* sample_rate sites attached (the rate's 1 bits) */
	bool adaptive;           /* the rate follows the load (ratectl.h) */
	const char *why_fixed;   /* adaptive was asked for and is not possible: why */
	uint32_t rate;           /* the rate now */
	uint64_t rate_changes;   /* rates set at run time */
	uint64_t rate_failures;  /* … that could not be set (the rate stayed) */
	size_t links;
	bool preemption;         /* sched_switch attached: preempted time left out of polls */
	const char *why_no_preemption;
	struct tet_sched_info sched;
	bool sweeps;             /* threads' buffers readable in place (process_vm_readv) */
	const char *why_no_sweeps;
	uint64_t start_ns;       /* capture start: every site attached from here on */
};

struct tet_bc;
struct tet_msgs;

int tet_bc_open(struct tet_bc **out, const struct tet_bc_opts *o, const struct tet_targets *t,
		char *err, size_t len);
/* Consumes the ring buffer, reads the buffers of quiet threads, delivers what is in order. */
/* io_uring: the tracepoints, and the poll hooks attached once a ring of the target is seen. */
/* Per probe: events delivered (seen), events of lost batches (drops), as tet_counters; the
 * BPF side's batch counters too. */
/* Ends the capture at this instant: later records are left out; reads what the threads still
 * hold, detaches (the kernel resets the semaphores), drains and delivers everything. */

extern const struct tet_capture_ops tet_bc_ops;

#endif
