/* SPDX-License-Identifier: MIT */
/*
 * capture.h — a capture session on discovered targets (discover.h): one backend (per-event
 * USDT, batched USDT, the uprobe fallback, or --mode sampling's sampler, capture_ops.h) opened, attached, drained, counted
 * and ended. A failing function returns a negative errno and writes one line into err.
 */
#ifndef TET_CAPTURE_H
#define TET_CAPTURE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "discover.h"
#include "events.h"
#include "vocab.h"
#include "ksched.h"
#include "kuring.h"

#include "usdtobj.h"

struct tet_session;
typedef int (*tet_event_fn)(void *ctx, void *data, size_t size);

struct tet_msgs;
struct tet_session_opts {
	pid_t pid;               /* > 0: only this process; 0: every process (binary path) */
	unsigned probes;         /* to attach (bits of enum tet_event), limited to those present */
	size_t ringbuf_bytes;    /* power of two ≥ page size */
	bool batched;            /* batched capture (tokio:event_batch) instead of per-event */
	uint32_t sample_rate;    /* batched: one task in N (adaptive: the lowest) */
	bool adaptive;           /* batched: the rate follows the load (ratectl.h) */
	double max_cpu;          /* … under this CPU budget of the tracer, in CPUs */
	struct tet_sched_opts sched; /* why a poll was slow: sched tracepoints, CPU profile */
	bool no_uring;           /* --no-io-uring: io_uring requests not followed */
	bool verbose;
	tet_event_fn on_event;
	/* batched: the decode stage's input as well (kind 1 a TET_REC_BATCH ring record, 2 a clock
	 * pair: u64 TSC, u64 CLOCK_MONOTONIC ns) — the flight recorder keeps it raw */
	int (*on_raw)(void *ctx, unsigned kind, const void *data, size_t size);
	bool no_decode;          /* batched, on_raw given: nothing decoded live (no events) */
	void *ctx;
	const struct tet_msgs *msgs; /* what it says besides errors (seterr.h); NULL: silent */
	/* --mode sampling: the sampler (sampler.h: no uprobe) instead of a probe backend; pid,
	 * ringbuf_bytes, on_event and ctx as above, the targets unused (NULL) */
	bool sampling;
	struct {
		unsigned profile_hz;     /* > 0 */
		int64_t id_off;          /* Tokio's task id slot from the thread pointer (tlsctx.h) */
		bool tagged;
		uint64_t poll_lo, poll_hi;  /* the poll functions' range for the stack scan (0, 0: none) */
	} sampler;
};

int tet_session_open(struct tet_session **s, const struct tet_session_opts *o,
		     const struct tet_targets *t, char *err, size_t len);
/* Probes actually attached (bits of enum tet_event) and the number of attachments. */
unsigned tet_session_probes(const struct tet_session *s);
size_t tet_session_links(const struct tet_session *s);
/* The uprobe fallback's attach figures, NULL for a USDT session. */
const struct tet_fb_info *tet_session_fallback(const struct tet_session *s);
/* The batched capture's attach figures and decode statistics, NULL for a per-event session. */
const struct tet_bc_info *tet_session_batch_info(const struct tet_session *s);
const struct tb_stats *tet_session_batch_stats(const struct tet_session *s);
struct tb *tet_session_decoder(struct tet_session *s);
/* The share of the ring written and not read yet (0–1; batched capture), negative: unknown. */
double tet_session_backlog(const struct tet_session *s);
/* IDs of the loaded BPF programs, for `bpftool prog show id N` (verbose output, tests). */
size_t tet_session_prog_ids(const struct tet_session *s, uint32_t *ids, const char **names,
			    size_t max);
/* What the kernel side of "why a poll was slow" runs with, and the BPF stack map's fd (stack
 * ids of TET_REC_OFFCPU / TET_REC_SAMPLE records; readable until tet_session_close). */
const struct tet_sched_info *tet_session_sched(const struct tet_session *s);
/* What io_uring tracing runs with (kuring.h). */
const struct tet_uring_info *tet_session_uring(const struct tet_session *s);
int tet_session_stacks_fd(const struct tet_session *s);
/* The BPF map of tasks that lost an event (bpf/common.bpf.h lost_tasks: struct lost_key →
 * count), -1 when the capture cannot tell them (batched). */
int tet_session_lost_fd(const struct tet_session *s);
/* Consumes every record in the ring buffer; returns the count or a negative errno. */
int tet_session_drain(struct tet_session *s);
/* --mode sampling: task id `id` is a BlockingTask's (a worker loop, a spawn_blocking closure):
 * a thread that sleeps with it in its slot is recorded without the stack scan and the stacks
 * (TET_TS_BLOCKING). 0, -EOPNOTSUPP for another capture, or -errno. */
int tet_session_blocking_id(struct tet_session *s, uint64_t id);
/* Sums the per-CPU counters. */
int tet_session_counters(struct tet_session *s, struct tet_counters *sum);
/* Detaches every probe (the kernel resets the semaphores); the ring buffer stays readable.
 * The capture ends at cutoff_ns (CLOCK_MONOTONIC; 0: now) for every probe at once: the BPF
 * programs stop recording at that instant, before the links go one by one; events stamped
 * later are not analyzed and not counted as hits. */
void tet_session_end(struct tet_session *s, uint64_t cutoff_ns);
void tet_session_close(struct tet_session *s);


#endif
