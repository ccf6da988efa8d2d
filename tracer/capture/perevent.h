/* SPDX-License-Identifier: MIT */
/*
 * perevent.h — per-event USDT capture: one BPF program per tokio probe, one record per event
 * in one ring buffer (bpf/tokio_usdt.bpf.c). A backend of capture.h (capture_ops.h).
 */
#ifndef TET_PEREVENT_H
#define TET_PEREVENT_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "capture_ops.h"
#include "ksched.h"

struct tet_targets;
typedef int (*tet_pe_event_fn)(void *ctx, void *data, size_t size);

struct tet_pe_opts {
	pid_t pid;               /* > 0: only this process; 0: every process (binary path) */
	unsigned probes;         /* to attach (bits of enum tet_event); some of them exist */
	size_t ringbuf_bytes;
	struct tet_sched_opts sched;
	bool no_uring;
	tet_pe_event_fn on_event;
	void *ctx;
};

struct tet_pe;
int tet_pe_open(struct tet_pe **out, const struct tet_pe_opts *o, const struct tet_targets *t,
		char *err, size_t len);
extern const struct tet_capture_ops tet_pe_ops;

#endif
