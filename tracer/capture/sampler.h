/* SPDX-License-Identifier: MIT */
/*
 * sampler.h — the capture of --mode sampling: a stock Tokio process traced with no uprobe at
 * all. The uprobe fallback's BPF object (bpf/tokio_uprobe.bpf.c) is loaded with every uprobe
 * and io_uring program's autoload off; only the sched side runs (bpf/sched.bpf.h with tls_slot
 * set): a cpu-clock perf event per CPU whose samples of the target carry Tokio's thread-local
 * current task id (TET_REC_TSAMPLE), and sched_switch/sched_wakeup sending the sleeps of a target
 * thread whose slot held a task (TET_REC_TOFFCPU). The slot's place comes from tlsctx.h.
 */
#ifndef TET_SAMPLER_H
#define TET_SAMPLER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ksched.h"

struct tet_sp;

typedef int (*tet_sp_event_fn)(void *ctx, void *data, size_t size);

struct tet_sp_opts {
	pid_t pid;               /* the process (> 0: the mode traces one process) */
	size_t ringbuf_bytes;
	unsigned profile_hz;     /* > 0 */
	int64_t id_off;          /* the slot: its id word from the thread pointer */
	bool tagged;             /* Tokio 1.24-1.39: a tag word (0 = None) before the id */
	uint64_t poll_lo, poll_hi;  /* the raw::poll instances' runtime address range (stack scan) */
	tet_sp_event_fn on_event;
	void *ctx;
};

/* Loads and attaches; 0 or -errno with one line in err. */
int tet_sp_open(struct tet_sp **out, const struct tet_sp_opts *o, char *err, size_t len);
/* Counts of the programs' attachments: perf events (one per CPU) and tracepoints. */
size_t tet_sp_uprobes(const struct tet_sp *s);   /* always 0: the point of the mode */

extern const struct tet_capture_ops tet_sp_ops;

#endif
