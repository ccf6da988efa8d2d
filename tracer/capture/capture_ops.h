/* SPDX-License-Identifier: MIT */
/*
 * capture_ops.h — the one interface every capture backend fills: per-event USDT (perevent.c),
 * batched USDT (batchcap.c), the uprobe fallback (fallback.c) and --mode sampling's sampler
 * (sampler.c). The session (capture.c)
 * opens one backend and calls it through this table only. A backend's own open function
 * takes its own options; everything after the open goes through here. Optional entries are
 * NULL where a backend has nothing to give.
 */
#ifndef TET_CAPTURE_OPS_H
#define TET_CAPTURE_OPS_H
#include <stddef.h>
#include <stdint.h>

struct tet_counters;
struct tet_sched_info;
struct tet_uring_info;
struct tet_bc_info;
struct tet_fb_info;
struct tb_stats;
struct tb;

struct tet_capture_ops {
	const char *name;
	/* attachments: USDT links, uprobes, event_batch sites */
	size_t (*links)(const void *b);
	size_t (*prog_ids)(const void *b, uint32_t *ids, const char **names, size_t max);
	const struct tet_sched_info *(*sched)(const void *b);
	const struct tet_uring_info *(*uring)(const void *b);
	int (*stacks_fd)(const void *b);
	/* the BPF map of tasks that lost an event, -1: the capture cannot tell them */
	int (*lost_fd)(const void *b);
	/* consumes what is ready: the count or a negative errno */
	int (*drain)(void *b);
	int (*counters)(void *b, struct tet_counters *sum);
	/* the capture ends at cutoff_ns (CLOCK_MONOTONIC; 0: now) for every probe at once, then
	 * the links go; what was recorded stays readable */
	void (*end)(void *b, uint64_t cutoff_ns);
	void (*close)(void *b);
	/* optional */
	const struct tet_bc_info *(*batch_info)(const void *b);
	const struct tb_stats *(*batch_stats)(const void *b);
	struct tb *(*decoder)(void *b);
	const struct tet_fb_info *(*fallback)(const void *b);
	/* the share of the ring written and not read yet (0–1), negative: unknown */
	double (*backlog)(const void *b);
	/* the sampler: task id `id` is a BlockingTask's (its sleeps go without stacks) */
	int (*blocking_id)(void *b, uint64_t id);
};

#endif
